/*
 * weft.h — what Weft offers beyond POSIX.
 *
 * Programs use <pthread.h>, <semaphore.h> and <sched.h> as usual; this header
 * adds Weft's own calls: version, runtime statistics, and (as they land) the
 * Xinu/Xthreads primitives.  Every call returns 0 or a POSIX error code.
 */
#ifndef WEFT_H
#define WEFT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"

/* The library's version string, e.g. "0.1.0" (may differ from the header's). */
const char *weft_version(void);

/* Counters since the process started. */
struct weft_stats {
	uint64_t threads_created;   /* pthread_create successes */
	uint64_t threads_exited;
	uint64_t threads_live;      /* UTs not yet exited, main included */
	uint64_t context_switches;  /* UT-to-UT switches */
	uint64_t parks;             /* times a UT blocked */
	uint64_t unparks;
	uint64_t timer_wakeups;     /* parks ended by a deadline */
	uint64_t idle_sleeps;       /* times the VP slept in the kernel */
	uint64_t stacks_mapped;     /* stacks obtained from the kernel */
	uint64_t stacks_reused;     /* stacks taken from the pool */
	uint64_t thread_slots;      /* size of the UT table */
	uint64_t vps;               /* virtual processors */
};

/* Copy the counters into *stats; pass sizeof *stats. */
int weft_stats_get(struct weft_stats *stats, size_t size);

#ifdef __cplusplus
}
#endif
#endif
