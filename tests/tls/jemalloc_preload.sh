#!/bin/sh
# jemalloc_preload — run a test program with Debian's jemalloc preloaded
# (its per-thread caches live in TLS and are cleaned by a pthread key
# destructor, so each UT must have its own).  .ci/run installs libjemalloc2.
#   jemalloc_preload.sh PROGRAM
set -u
lib=
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
	[ -e "$d/libjemalloc.so.2" ] && { lib=$d/libjemalloc.so.2; break; }
done
[ -n "$lib" ] || { echo "skipped: libjemalloc.so.2 is not installed (apt-get install libjemalloc2)"; exit 77; }
LD_PRELOAD=$lib "$@"
rc=$?
[ $rc -eq 0 ] || echo "FAIL: $* under LD_PRELOAD=$lib: status $rc"
exit $rc
