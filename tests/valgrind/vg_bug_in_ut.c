/*
 * vg_bug_in_ut — a deliberate bug for memcheck to find on a UT's stack
 * (valgrind_memcheck.sh): a UT named "parser" decides on a byte of a
 * malloc block it never wrote (`uninit`), or writes one byte past the end
 * of one (`overrun`).  memcheck must report it with the UT's own frames
 * (parse_record called by parser_main), not main's.  Exits 0 either way:
 * the report is memcheck's.
 */
#include "check.h"

static volatile int sink;

static __attribute__((noinline)) void parse_record(const char *rec)
{
	if (rec[3] == 'x')        /* rec[3] was never written */
		sink = 1;
}

static __attribute__((noinline)) void fill_record(char *rec, size_t n)
{
	for (size_t i = 0; i <= n; i++)   /* one byte too many */
		rec[i] = 'a';
}

static void *parser_main(void *arg)
{
	size_t n = 16;
	char *rec = malloc(n);
	CHECK(rec != NULL);
	if (strcmp(arg, "overrun") == 0) {
		fill_record(rec, n);
	} else {
		rec[0] = 'w';
		parse_record(rec);
	}
	free(rec);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "uninit") && strcmp(argv[1], "overrun"))) {
		fprintf(stderr, "usage: %s uninit|overrun\n", argv[0]);
		return 2;
	}
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, parser_main, argv[1]));
	CHECK_OK(pthread_setname_np(t, "parser"));
	CHECK_OK(pthread_join(t, NULL));
	return 0;
}
