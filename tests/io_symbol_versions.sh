#!/bin/sh
# io_symbol_versions.sh LIBWEFT EPILOGUE_TEST_SOURCE
#
# Every wrapped call the io layer exports (the "io layer" block of
# tests/epilogue_once_per_call.c's list, up to the next comment), and
# system (the list's "system" block: posix/system.c), is defined in
# libweft.so under the version glibc gives the same name here, as the
# default version: so a program's versioned reference (read@GLIBC_2.2.5,
# epoll_pwait2@GLIBC_2.35) binds to Weft's when Weft is preloaded, a
# program linked with -lweft records Weft's, and dlvsym finds it.  Also
# checks that no io name is left unversioned (Base), which dlvsym would
# not answer.
set -u
lib=$1 src=$2
libc=$(ldd "$lib" | awk '/libc\.so\.6/ { print $3 }')
[ -n "$libc" ] && [ -r "$libc" ] || { echo "no libc.so.6 found for $lib" >&2; exit 77; }
command -v objdump >/dev/null || { echo "objdump missing" >&2; exit 77; }
names=$(awk '/the io layer \(src\/io\)/ || /system \(posix\/system\.c\)/ { on = 1; next }
	on && (/\/\*/ || /NULL,/) { on = 0 } on' "$src" |
	grep -o '"[A-Za-z0-9_]*"' | tr -d '"')
[ -n "$names" ] || { echo "no io names found in $src" >&2; exit 1; }
objdump -T "$libc" >/tmp/iosv.libc.$$
objdump -T "$lib" >/tmp/iosv.weft.$$
trap 'rm -f /tmp/iosv.libc.$$ /tmp/iosv.weft.$$' EXIT
bad=0 n=0
for s in $names; do
	n=$((n + 1))
	want=$(awk -v s="$s" '$NF == s && $(NF-1) !~ /^\(/ { print $(NF-1) }' /tmp/iosv.libc.$$ | head -n 1)
	have=$(awk -v s="$s" '$NF == s && $(NF-1) !~ /^\(/ { print $(NF-1) }' /tmp/iosv.weft.$$ | head -n 1)
	if [ -z "$want" ]; then
		echo "$s: glibc here does not export it" >&2
		bad=1
	elif [ "$have" != "$want" ]; then
		echo "$s: libweft has '${have:-nothing}', glibc '$want'" >&2
		bad=1
	fi
done
[ $n -ge 70 ] || { echo "only $n io names listed" >&2; exit 1; }
exit $bad
