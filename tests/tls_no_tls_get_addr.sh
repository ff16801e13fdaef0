#!/bin/sh
# tls_no_tls_get_addr.sh LIBWEFT
#
# libweft.so reads its thread-locals at fixed offsets from the thread
# pointer (initial-exec), never through __tls_get_addr: AddressSanitizer
# intercepts __tls_get_addr and answers it with its record of the thread,
# found by pthread_getspecific, which is Weft's, whose slow path read
# Weft's thread-local (runtime/monitor.c, on_monitor) through
# __tls_get_addr again: a program built with -fsanitize=address on
# libweft.so recursed until its stack ran out at its first call.  Checked
# on the library's relocations: no module-id relocation (DTPMOD64, the
# general- and local-dynamic models' mark) and no import of __tls_get_addr.
set -u
lib=$1
command -v readelf >/dev/null || { echo "skipped: readelf missing (binutils)" >&2; exit 77; }
relocs=$(readelf -rW "$lib") || { echo "FAIL: readelf -r $lib"; exit 1; }
bad=0
if printf '%s\n' "$relocs" | grep -q 'R_X86_64_DTPMOD64'; then
	echo "FAIL: $lib has a dynamic-model thread-local (R_X86_64_DTPMOD64):"
	printf '%s\n' "$relocs" | grep 'R_X86_64_DTPMOD64'
	bad=1
fi
if printf '%s\n' "$relocs" | grep -q '__tls_get_addr'; then
	echo "FAIL: $lib imports __tls_get_addr"
	bad=1
fi
[ $bad -eq 0 ] && echo "ok: $lib reads its thread-locals without __tls_get_addr"
exit $bad
