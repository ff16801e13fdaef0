/*
 * seeds.h — the seed runner behind `weftrun --seeds A-B` (seeds.c).
 */
#ifndef WEFT_TOOLS_SEEDS_H
#define WEFT_TOOLS_SEEDS_H

#include <stdbool.h>
#include <stdint.h>

/* Is `base` a debug policy that takes a seed: "random" or "pct:DEPTH"? */
bool seeds_policy_ok(const char *base);

/*
 * Run argv once per seed in [first, last] under WEFT_SCHED=<base with the
 * seed>, `jobs` at a time, each for at most `timeout` seconds.  Prints the
 * lowest failing seed, its output and the command that reproduces it (with
 * `self` as the launcher's path) and returns 1; 0 when every run passed;
 * 2 when it cannot run at all.
 */
int seeds_run(const char *self, const char *base, uint64_t first, uint64_t last, double timeout,
	      unsigned jobs, char **argv);

#endif
