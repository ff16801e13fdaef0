/* Sang, Knop & Rego, Figure 15: "measuring the creation and destruction
 * cost in Xthreads", as the paper wrote it (COUNT read from stdin, clock()
 * CPU time, xmain as the entry point) against <weft/xthreads.h>, plus the
 * checks that make it a test: every one of the COUNT+1 threads ran, each
 * ran when the loop yielded to it (not later), each ended before the next
 * was created (so a slot is recycled, not one per thread), and all ran on
 * xmain's kernel thread (the program's pthread calls are Weft's, although
 * it names no Weft symbol itself).  It prints the paper's line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* gettid */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <weft/xthreads.h>

#define CPU_PER_US (CLOCKS_PER_SEC / 1000000.0)   /* the paper's 20, for clock() */
clock_t cputime;
xthread_t xidfoo;
static long ran, alive, bad_tid;
static pid_t main_tid;

void foo(void)
{
	ran++;
	alive++;
	if (gettid() != main_tid)
		bad_tid++;
	alive--;
}

int xmain(void)
{
	int i, COUNT;
	if (scanf("%d", &i) != 1 || i < 1) {
		fprintf(stderr, "usage: echo COUNT | xt_fig15_create_destroy\n");
		exit(2);
	}
	COUNT = i;
	main_tid = gettid();
	xthread_t first = NULL;
	clock();
	for (; i >= 0; i--) {
		if (xthread_create(&xidfoo, NULL, foo, 0) != XTOK)
			exit(3);
		if (!first)
			first = xidfoo;
		long before = ran;
		xthread_yield(xidfoo);
		if (ran != before + 1 || alive != 0)
			exit(4);              /* it ran, to the end, when yielded to */
		if (xthread_ping(xidfoo) != XTERR)
			exit(5);              /* and it is gone */
	}
	cputime = clock();
	printf("Creation Time = %f us\n", (float)cputime / (float)COUNT / (float)CPU_PER_US);
	if (ran != COUNT + 1 || bad_tid)
		exit(6);
	if (xthread_destroy(first) != XTERR)
		exit(7);                      /* long gone: "a non-existent thread" */
	return 0;
}
