#!/bin/sh
# headers_self_contained.sh CC CXX INCLUDE_DIR: each seed header compiles
# alone, first in a translation unit, as C99, C11 and C17 and as C++11 and
# C++20, pedantic and with every warning an error -Wcast-function-type
# included, so that a program needs nothing but its include line; the
# calls that are macros (they convert functions and words) are used with
# functions of other signatures, ints, longs, pointers and string
# literals.
cc=$1 cxx=$2 inc=$3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat >"$t/xthreads.c" <<'C'
#include <weft/xthreads.h>
static int f3(int a, const char *b, long c) { return a + (b != 0) + (int)c; }
static void f0(void) {}
void probe(void);
void probe(void)
{
	xthread_t t;
	xthread_attr_t a = XTHREAD_ATTR_INITIALIZER;
	(void)xthread_create(&t, &a, f3, 3, -1, "x", 2L);
	(void)xthread_create(&t, 0, f0, 0);
	(void)xthread_create(&t, 0, f0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
	(void)xthread_send(t, "a pointer");
	(void)xthread_send(t, 42);
	Xevent e = xthread_event();
	(void)xthread_wait(e);
}
C
cat >"$t/myth.c" <<'C'
#include <weft/myth.h>
static long twice(long v) { return 2 * v; }
static void *same(void *v) { return v; }
static void nothing(void *v) { (void)v; }
void probe(void);
void probe(void)
{
	th_mutex_t m = TH_MUTEX_INITIALIZER;
	(void)th_join(th_fork(twice, (void *)21));
	(void)th_join(th_fork(same, 0));
	(void)th_join(th_fork(nothing, &m));
	(void)th_mutex_lock(&m);
}
C
for h in xthreads myth; do
	cp "$t/$h.c" "$t/$h.cpp"
	for std in c99 c11 c17; do
		"$cc" -std=$std -pedantic -Wall -Wextra -Wcast-function-type -Werror -I"$inc" \
			-c "$t/$h.c" -o "$t/probe.o" || { echo "FAIL: weft/$h.h as $std"; exit 1; }
	done
	for std in c++11 c++20; do
		"$cxx" -std=$std -pedantic -Wall -Wextra -Wcast-function-type -Werror -I"$inc" \
			-c "$t/$h.cpp" -o "$t/probe.o" || { echo "FAIL: weft/$h.h as $std"; exit 1; }
	done
done
exit 0
