/* Sang, Knop & Rego, Figure 16: "measuring the context switching cost in
 * Xthreads": xmain and foo yield to each other by name until the shared
 * count i runs out.  As the paper wrote it, plus checks: every directed
 * yield switched (the decrements alternate exactly, so foo made
 * (COUNT-1)/2 of the COUNT-1 and xmain the rest), and both ran on one
 * kernel thread.  It prints the paper's line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* gettid */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <weft/xthreads.h>

#define CPU_PER_US (CLOCKS_PER_SEC / 1000000.0)
clock_t cputime;   /* the type of clock_t is long long */
xthread_t xidfoo, xidmain;
int i;
static long nfoo, nmain, fails, last = -1;
static pid_t main_tid;

void foo()
{
	if (gettid() != main_tid)
		fails++;
	while (--i > 0) {
		nfoo++;
		if (last == 1)
			fails++;              /* foo twice in a row: a yield did not switch */
		last = 1;
		xthread_yield(xidmain);
	}
}

void xmain()
{
	int COUNT;
	if (scanf("%d", &i) != 1 || i < 2)
		exit(2);
	COUNT = i;
	main_tid = gettid();
	xthread_self(&xidmain);
	xthread_create(&xidfoo, NULL, foo, 0);
	clock();
	while (--i > 0) {
		nmain++;
		if (last == 0)
			fails++;
		last = 0;
		xthread_yield(xidfoo);
	}
	cputime = clock();
	printf("CTXSW Time = %f us\n", (float)cputime / (float)COUNT / (float)CPU_PER_US);
	if (fails || nfoo != (COUNT - 1) / 2 || nmain + nfoo != COUNT - 1) {
		fprintf(stderr, "fails %ld nfoo %ld nmain %ld COUNT %d\n", fails, nfoo, nmain, COUNT);
		exit(1);
	}
}
