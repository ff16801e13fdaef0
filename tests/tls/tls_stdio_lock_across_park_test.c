/*
 * tls_stdio_lock_across_park_test — with per-UT TLS, glibc's idea of "the
 * current thread" (the owner of stdio and loader locks) stays the kernel
 * thread: a UT that holds flockfile(f) while it waits on a Weft mutex does
 * not make another UT's fprintf(f) block the process (the owner cannot run
 * until that fprintf returns).  And lines written by many UTs under
 * preemption stay whole.
 */
#include "check.h"
#include "preempt_test.h"

#include <string.h>

__thread volatile int own_tls;      /* gives the program TLS of its own */

static FILE *f;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int holder_waiting, printed;

static void *holder(void *arg)
{
	own_tls = 1;
	flockfile(f);
	holder_waiting = 1;
	CHECK_OK(pthread_mutex_lock(&m));        /* parks: main holds m */
	fputs("holder\n", f);
	funlockfile(f);
	CHECK_OK(pthread_mutex_unlock(&m));
	return arg;
}

static void *printer(void *arg)
{
	own_tls = 2;
	while (!holder_waiting)
		sched_yield();
	fprintf(f, "printer\n");                /* would block on the FILE lock */
	printed = 1;
	return arg;
}

enum { WRITERS = 8 };
static volatile int stop;

static void *writer(void *arg)
{
	long id = (long)arg;
	char line[200];
	for (long seq = 0; !stop; seq++) {
		int n = snprintf(line, sizeof line, "w %ld seq %ld %0*d end\n", id, seq, (int)(id * 13 % 90),
				 0);
		fwrite(line, 1, (size_t)n, f);
	}
	return NULL;
}

int main(void)
{
	f = tmpfile();
	CHECK(f != NULL);
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t h, p;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	CHECK_OK(pthread_create(&p, NULL, printer, NULL));
	CHECK_OK(pthread_join(p, NULL));         /* returns: the printer was not stuck */
	CHECK(printed);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(h, NULL));

	/* many writers, preempted: every line whole */
	preempt_test_slice(100000);
	rewind(f);
	pthread_t w[WRITERS];
	for (long i = 0; i < WRITERS; i++)
		CHECK_OK(pthread_create(&w[i], NULL, writer, (void *)i));
	struct timespec d = { 0, 300000000 / TEST_SCALE };
	CHECK_OK(nanosleep(&d, NULL));
	stop = 1;
	for (int i = 0; i < WRITERS; i++)
		CHECK_OK(pthread_join(w[i], NULL));
	CHECK_OK(fflush(f));
	rewind(f);
	char line[256];
	long next[WRITERS] = { 0 }, lines = 0;
	while (fgets(line, sizeof line, f)) {
		long id, seq;
		if (strcmp(line, "printer\n") == 0 || strcmp(line, "holder\n") == 0)
			continue;
		CHECK_EQ(sscanf(line, "w %ld seq %ld", &id, &seq), 2);
		CHECK(id >= 0 && id < WRITERS);
		CHECK_EQ(seq, next[id]);
		CHECK(strstr(line, " end\n") != NULL);
		next[id]++;
		lines++;
	}
	CHECK(lines > 100);
	return 0;
}
