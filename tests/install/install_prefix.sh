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
for f in bin/weftrun include/weft.h lib/libweft.a lib/libweft.so lib/libweft.so.0 lib/pkgconfig/weft.pc \
	include/weft/xthreads.h include/weft/myth.h \
	lib/libweft-xthreads.so lib/libweft-xthreads.so.0 lib/libweft-xthreads.a lib/pkgconfig/weft-xthreads.pc \
	lib/libweft-myth.so lib/libweft-myth.so.0 lib/libweft-myth.a lib/pkgconfig/weft-myth.pc; do
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
# The seed interfaces, as their programs are built: an Xthreads program
# with xmain and no main, and a Myth program, each naming no Weft symbol, with
# only their include line and pkg-config (under the compiler's default
# --as-needed), C and C++; their threads must be Weft's (one kernel thread),
# with -lweft in either place, and with the static libraries; without
# -lweft they must not link.
cat >"$p/xt.c" <<'C'
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <unistd.h>
#include <weft/xthreads.h>
static xthread_t me;
static pid_t tid;
static int ok;
static void child(int a, const char *b) { ok = a == -3 && b[0] == 'b' && gettid() == tid; xthread_send(me, 9); }
int xmain(int argc, char **argv)
{
	xthread_t t;
	tid = gettid();
	xthread_self(&me);
	if (xthread_create(&t, NULL, child, 2, -3, "b") != XTOK || xthread_receive() != 9 || !ok)
		return printf("xthreads: wrong\n"), 0;
	printf("xthreads ok\n");
	return 0;
}
C
cat >"$p/myth.c" <<'C'
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>
#include <weft/myth.h>
static mutex m;
static void *child(void *arg) { th_mutex_lock(&m); th_mutex_unlock(&m); return (void *)(long)gettid(); }
int main(void)
{
	th_init(2);
	long t = (long)th_join(th_fork(child, NULL));
	th_yield();
	printf(t == gettid() ? "myth ok\n" : "myth: kernel threads\n");
	return 0;
}
C
cp "$p/xt.c" "$p/xt.cpp"
for lib in weft-xthreads weft-myth; do
	src=$p/xt.c want="xthreads ok"
	[ $lib = weft-myth ] && src=$p/myth.c want="myth ok"
	flags=$(PKG_CONFIG_PATH=$p/lib/pkgconfig pkg-config --cflags --libs $lib) || fail "pkg-config $lib"
	cc -O2 "$src" -o "$p/seed" $flags || fail "build with pkg-config $lib"
	out=$("$p/seed") || fail "$lib program exited $?"
	[ "$out" = "$want" ] || fail "$lib program: $out"
	# -lweft first works as well (the header names libweft), and without it no link
	cc -O2 -I"$p/include" "$src" -o "$p/seed" -L"$p/lib" -Wl,-rpath,"$p/lib" -lweft -l$lib ||
		fail "build with -lweft -l$lib"
	out=$("$p/seed") && [ "$out" = "$want" ] || fail "$lib program linked -lweft first: $out"
	cc -O2 -I"$p/include" "$src" -o "$p/seed" -L"$p/lib" -l$lib 2>/dev/null &&
		fail "$lib linked without -lweft (it would run on glibc's threads)"
	cc -O2 -I"$p/include" "$src" -o "$p/seed-static" "$p/lib/lib$lib.a" "$p/lib/libweft.a" ||
		fail "build with lib$lib.a"
	out=$("$p/seed-static") || fail "$lib program on the static libraries exited $?"
	[ "$out" = "$want" ] || fail "$lib program on the static libraries: $out"
done
flags=$(PKG_CONFIG_PATH=$p/lib/pkgconfig pkg-config --cflags --libs weft-xthreads)
c++ -O2 "$p/xt.cpp" -o "$p/seed" $flags || fail "build C++ with pkg-config weft-xthreads"
out=$("$p/seed") || fail "C++ xthreads program exited $?"
[ "$out" = "xthreads ok" ] || fail "C++ xthreads program: $out"

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
