/*
 * peer.h — the contract between the peers' main (peer.c) and each C or C++
 * peer program (st.c: State Threads; boost_context.cpp: Boost.Context).
 * The Go peer (goroutines.go) keeps the same command line and output in Go.
 *
 * A peer program answers `bench-peer-X [--quick] --tag TAG KEY...` with one
 * CSV line per key, exactly as bench-weft and bench-nptl do (measure.h):
 * TAG picks the variant (Boost has two: fcontext and fiber), KEY a row of
 * the benchmark flagged F_PEERS (harness.h).  Invariant: every such key
 * gets a line — a number measured by measure.c's method on the peer's own
 * API, doing what the row's pthread code does, or "na" and the reason the
 * peer has no equivalent operation; a key missing from a peer's table
 * prints n/a saying so, never nothing.
 */
#ifndef WEFT_BENCH_PEER_H
#define WEFT_BENCH_PEER_H

#include "../measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row of a peer: timed (n operations, nanoseconds returned), oneshot
 * (fills the result itself), or neither with `na` saying why. */
struct peer_row {
	const char *key;
	int64_t (*timed)(uint64_t n);
	void (*oneshot)(struct result *r);
	const char *na;
};

struct peer {
	const struct peer_row *rows;
	size_t n;
};

/* Each program defines it: the rows of variant `tag`, or NULL if it has no
 * such variant.  Called once, before any row runs (a runtime to start, as
 * State Threads' st_init, is started here). */
const struct peer *peer_select(const char *tag);

/* Print "bench-peer: what" and exit with status 2 (a call that failed). */
void peer_die(const char *what) __attribute__((noreturn));

/* The memory rows (mem_10k, mem_100k): resident bytes per blocked thread.
 * park(want) makes `want` threads of the peer's that each run once and
 * then stay blocked for good, and returns how many it made; the row is
 * the resident memory that grew, divided by that count.  Rows of more
 * than 10,000 threads say "skipped" with QUICK=1, as the harness's do. */
void peer_mem_row(struct result *r, long want, long (*park)(long want));

#ifdef __cplusplus
}
#endif

#endif
