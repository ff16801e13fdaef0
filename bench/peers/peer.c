/*
 * peer.c — the main of the C and C++ peer programs (peer.h): the command
 * line, the dispatch of each key to the peer's row, and the memory rows'
 * measurement, which is fam_memory.c's (resident memory before and after,
 * divided by the threads made).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

void peer_die(const char *what)
{
	fprintf(stderr, "bench-peer: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	exit(2);
}

void peer_mem_row(struct result *r, long want, long (*park)(long want))
{
	if (quick && want > 10000) {
		na(r, "skipped with QUICK=1");
		return;
	}
	double rss0 = rss_bytes();
	long made = park(want);
	double rss1 = rss_bytes();
	if (made < want) {
		na(r, "only %ld of %ld threads could be made", made, want);
		return;
	}
	r->ok = true;
	r->median = r->min = r->max = (rss1 - rss0) / (double)made;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
}

static const struct peer_row *find_row(const struct peer *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->rows[i].key, key))
			return &p->rows[i];
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-peer-X [--quick] --tag VARIANT KEY...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tag = NULL;
	quick_from_env();
	int first = 1;
	for (; first < argc && argv[first][0] == '-'; first++)
		if (!measure_option(argc, argv, &first, &tag))
			usage();
	if (!tag || first >= argc)
		usage();
	const struct peer *p = peer_select(tag);
	if (!p) {
		fprintf(stderr, "bench-peer: no variant '%s' in this program\n", tag);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = first; i < argc; i++) {
		struct result r;
		memset(&r, 0, sizeof r);
		r.sw_per_op = -1;
		const struct peer_row *row = find_row(p, argv[i]);
		if (!row)
			na(&r, "not in the %s peer's program (bench/peers/): add the row there", tag);
		else if (row->na)
			na(&r, "%s", row->na);
		else if (row->oneshot)
			row->oneshot(&r);
		else
			run_timed_fn(row->timed, &r);
		print_result(argv[i], tag, &r);
	}
	/* Threads of the memory rows stay blocked: leave without ending them. */
	fflush(stdout);
	_exit(0);
}
