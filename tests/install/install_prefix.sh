#!/bin/bash
# `make install PREFIX=dir` lays out what the README promises, and a program
# built with pkg-config against that prefix runs on Weft; the installed
# weftrun finds the installed library.  usage: install_prefix.sh BUILD_DIR SRC_DIR
set -u
build=$1
src=$2
p=$(mktemp -d)
trap 'rm -rf "$p"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$p" >/dev/null || fail "cmake --install"
for f in bin/weftrun include/weft.h lib/libweft.a lib/libweft.so lib/libweft.so.0 lib/pkgconfig/weft.pc; do
	[ -e "$p/$f" ] || fail "missing $f"
done
# gdb's auto-load path for the library's real file: $datadir/gdb/auto-load/<libdir>/
real=$(basename "$(readlink -f "$p/lib/libweft.so.0")")
cmp -s "$p/share/gdb/auto-load$(readlink -f "$p")/lib/$real-gdb.py" "$src/tools/gdb/weft-gdb.py" ||
	fail "no gdb auto-load script share/gdb/auto-load$(readlink -f "$p")/lib/$real-gdb.py"
cat >"$p/prog.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <weft.h>
static void *run(void *arg) { return arg; }
int main(void)
{
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, run, (void *)7) || pthread_join(t, &r) || r != (void *)7)
		return 1;
	struct weft_stats s;
	if (weft_stats_get(&s, sizeof s) || s.threads_created != 1)
		return 2;
	printf("%s\n", weft_version());
	return 0;
}
C
flags=$(PKG_CONFIG_PATH=$p/lib/pkgconfig pkg-config --cflags --libs weft) || fail "pkg-config"
cc -O2 "$p/prog.c" -o "$p/prog" $flags || fail "build with pkg-config"
out=$("$p/prog") || fail "program on the installed library exited $?"
[ "$out" = "$("$p/bin/weftrun" --version | awk '{print $3}')" ] || fail "version mismatch: $out"
cat >"$p/plain.c" <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <dlfcn.h>
static void *run(void *arg) { return arg; }
int main(void)
{
	pthread_t t;
	Dl_info di;
	pthread_create(&t, NULL, run, NULL);
	pthread_join(t, NULL);
	if (!dladdr((void *)pthread_create, &di))
		return 1;
	puts(di.dli_fname);
	return 0;
}
C
cc -O2 "$p/plain.c" -o "$p/plain" -pthread -ldl || fail "build plain"
where=$("$p/bin/weftrun" -- "$p/plain") || fail "weftrun of an unmodified program"
real=$(readlink -f "$where")
case "$real" in "$(readlink -f "$p")"/lib/libweft.so*) ;; *) fail "pthread_create came from $where, not the installed libweft" ;; esac
exit 0
