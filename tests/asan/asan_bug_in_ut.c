/*
 * asan_bug_in_ut — deliberate bugs for AddressSanitizer to find on a UT's
 * stack (asan_reports_bugs.sh), in a UT named "parser":
 *   overflow:          fill_record writes one byte past a 16-byte malloc
 *                      block; the report's access trace must be the UT's
 *                      own frames (fill_record called by parser_main), not
 *                      main's;
 *   use_after_return:  make_record keeps the address of its own local
 *                      array past its return, the UT yields to another UT (which calls
 *                      functions with locals of its own, on its own fake
 *                      stack) and comes back, and read_record reads through
 *                      the pointer: with detect_stack_use_after_return=1 the
 *                      frame is on the UT's fake stack, which the switches
 *                      kept, and the read is a stack-use-after-return in
 *                      make_record's frame.
 * ASan ends the program at the report; reaching the end is the failure.
 */
#include "check.h"

static volatile int sink;
static char *volatile escaped;        /* a local's address, kept past its frame */

static __attribute__((noinline)) void fill_record(char *rec, size_t n)
{
	for (size_t i = 0; i <= n; i++)   /* one byte too many */
		rec[i] = 'a';
}

static __attribute__((noinline)) void make_record(void)
{
	char rec[32];
	memset(rec, 'r', sizeof rec);
	escaped = rec;                    /* its frame is gone once we return */
}

static __attribute__((noinline)) int read_record(const char *rec)
{
	return rec[5];
}

static __attribute__((noinline)) void busy_frames(int depth)
{
	char scratch[64];
	memset(scratch, depth, sizeof scratch);
	sink = scratch[depth % 64];
	if (depth)
		busy_frames(depth - 1);
}

static void *other_main(void *arg)
{
	for (int i = 0; i < 3; i++) {
		busy_frames(8);
		sched_yield();
	}
	return arg;
}

static void *parser_main(void *arg)
{
	if (strcmp(arg, "overflow") == 0) {
		size_t n = 16;
		char *rec = malloc(n);
		CHECK(rec != NULL);
		fill_record(rec, n);
		free(rec);
	} else {
		make_record();
		for (int i = 0; i < 3; i++) {
			sched_yield();                /* other runs meanwhile */
			busy_frames(8);
		}
		sink = read_record(escaped);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "overflow") && strcmp(argv[1], "use_after_return"))) {
		fprintf(stderr, "usage: %s overflow|use_after_return\n", argv[0]);
		return 2;
	}
	pthread_t t, o;
	CHECK_OK(pthread_create(&o, NULL, other_main, NULL));
	CHECK_OK(pthread_create(&t, NULL, parser_main, argv[1]));
	CHECK_OK(pthread_setname_np(t, "parser"));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_join(o, NULL));
	fprintf(stderr, "asan_bug_in_ut %s: not reported\n", argv[1]);
	return 1;
}
