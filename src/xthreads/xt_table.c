/*
 * xt_table.c — the Xthreads thread table (the paper's xtab): slots,
 * handles, the calling thread's slot and adoption, the lock, and the rule
 * that ends the program when every thread waits for ever.
 *
 * The table is chunks of XT_CHUNK slots, made as they are first needed and
 * never moved or freed, reached through a fixed array of chunk pointers; a
 * chunk is published (release store) only once it is zeroed, so a lookup
 * needs no lock.  Freed slots go to the tail of a FIFO free list, and new
 * slots are made until XT_REUSE_DELAY slots wait there: as the paper's
 * round-robin new_xthread(), a slot is reused as late as possible.
 * Invariants: see xt.h.
 */
#include "xt.h"

#include <errno.h>
#include <stdlib.h>
#include <weft.h>

#define XT_CHUNK_SHIFT 10
#define XT_CHUNK (1u << XT_CHUNK_SHIFT)
#define XT_MAX_CHUNKS 1024u             /* 1,048,576 threads alive at once */
#define XT_REUSE_DELAY 1024u

static struct xt_slot *chunks[XT_MAX_CHUNKS];
static uint32_t nslots;                 /* slots made so far */
static uint32_t free_head, free_tail;   /* index + 1; 0: empty */
static uint32_t nfree;
static unsigned long xt_waiting;        /* slots marked in_wait */

static pthread_mutex_t xt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t xt_once = PTHREAD_ONCE_INIT;
static pthread_key_t xt_key;
static pthread_attr_t xt_attr;
static bool xt_ready;                   /* init_once has succeeded */

int xt_lock(void)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&xt_mu);
	return old;
}

void xt_unlock(int cancel_state)
{
	pthread_mutex_unlock(&xt_mu);
	pthread_setcancelstate(cancel_state, NULL);
}

struct xt_slot *xt_lookup(xthread_t h)
{
	uint64_t v = (uint64_t)(uintptr_t)h;
	uint32_t low = (uint32_t)v;
	if (low == 0)
		return NULL;
	uint32_t i = low - 1;
	if ((i >> XT_CHUNK_SHIFT) >= XT_MAX_CHUNKS)
		return NULL;
	struct xt_slot *c = __atomic_load_n(&chunks[i >> XT_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	if (!c)
		return NULL;
	struct xt_slot *s = &c[i & (XT_CHUNK - 1)];
	if (s->gen != (uint32_t)(v >> 32) || s->state != XT_ALIVE)
		return NULL;
	return s;
}

static struct xt_slot *slot_at(uint32_t i)
{
	return &chunks[i >> XT_CHUNK_SHIFT][i & (XT_CHUNK - 1)];
}

static struct xt_slot *pop_free(void)
{
	struct xt_slot *s = slot_at(free_head - 1);
	free_head = s->next_free;
	if (!free_head)
		free_tail = 0;
	nfree--;
	s->next_free = 0;
	return s;
}

static struct xt_slot *make_slot(void)
{
	uint32_t i = nslots;
	uint32_t c = i >> XT_CHUNK_SHIFT;
	if (c >= XT_MAX_CHUNKS)
		return NULL;
	if (!chunks[c]) {
		struct xt_slot *chunk = calloc(XT_CHUNK, sizeof *chunk);
		if (!chunk)
			return NULL;
		for (uint32_t k = 0; k < XT_CHUNK; k++)
			chunk[k].index = (c << XT_CHUNK_SHIFT) + k;
		__atomic_store_n(&chunks[c], chunk, __ATOMIC_RELEASE);
	}
	nslots++;
	return slot_at(i);
}

struct xt_slot *xt_slot_alloc(void)
{
	struct xt_slot *s = NULL;
	if (nfree < XT_REUSE_DELAY)
		s = make_slot();
	if (!s && nfree)
		s = pop_free();
	if (s) {
		s->state = XT_STARTING;
		s->in_wait = 0;
		s->keyed = 0;
		s->name[0] = 0;
	}
	return s;
}

void xt_slot_free(struct xt_slot *s)
{
	s->state = XT_FREE;
	s->gen++;
	s->next_free = 0;
	if (free_tail)
		slot_at(free_tail - 1)->next_free = s->index + 1;
	else
		free_head = s->index + 1;
	free_tail = s->index + 1;
	nfree++;
}

/* ---- "every thread waits": the program ends -------------------------- */

enum xt_verdict xt_verdict(unsigned long unmarked_self)
{
	unsigned long marked = __atomic_load_n(&xt_waiting, __ATOMIC_RELAXED) + unmarked_self;
	struct weft_stats st;
	if (weft_stats_get(&st, sizeof st) != 0 || marked != st.threads_live)
		return XT_NOT_ALL;
	return st.threads_ready == 0 ? XT_ALL_WAIT : XT_UNSETTLED;
}

long xt_poll_step(long *poll_ns)
{
	long step = *poll_ns;
	if (step < 128000000L)
		*poll_ns = step * 2;
	return step;
}

void xt_wait_begin(struct xt_slot *me)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	me->in_wait = 1;
	__atomic_add_fetch(&xt_waiting, 1, __ATOMIC_RELAXED);
	pthread_setcancelstate(old, NULL);
}

void xt_wait_end(struct xt_slot *me)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (me->in_wait) {
		me->in_wait = 0;
		__atomic_sub_fetch(&xt_waiting, 1, __ATOMIC_RELAXED);
	}
	pthread_setcancelstate(old, NULL);
}

/* ---- the calling thread's slot ---------------------------------------
 *
 * Found through a map from Weft's thread slot number to our slot: a Weft
 * pthread_t is (generation << 32 | slot) for the thread's life (docs/
 * dropin.md), slot numbers are dense and reused, so the map stays as small
 * as the number of threads alive at once.  A hit is checked against the
 * whole pthread_t, so an entry left by an ended thread never counts; a
 * thread whose number is past the map (or any other pthread_t) falls back
 * to its key.  Not using the key for every thread matters: Weft sweeps the
 * values of a thread that ever set one when it exits, which tripled the
 * cost of a short-lived xthread.
 */

#define MAP_SHIFT 10
#define MAP_CHUNK (1u << MAP_SHIFT)
#define MAP_MAX_CHUNKS 1024u

static struct xt_slot **map[MAP_MAX_CHUNKS];

static struct xt_slot **map_entry(pthread_t pt, bool make)
{
	uint64_t k = (uint64_t)pt & 0xffffffffu;
	if ((k >> MAP_SHIFT) >= MAP_MAX_CHUNKS)
		return NULL;
	struct xt_slot **c = __atomic_load_n(&map[k >> MAP_SHIFT], __ATOMIC_ACQUIRE);
	if (!c && make) {
		int old = xt_lock();
		c = map[k >> MAP_SHIFT];
		if (!c && (c = calloc(MAP_CHUNK, sizeof *c)))
			__atomic_store_n(&map[k >> MAP_SHIFT], c, __ATOMIC_RELEASE);
		xt_unlock(old);
	}
	return c ? &c[k & (MAP_CHUNK - 1)] : NULL;
}

/* A thread ends (returns, xthread_exit, destroyed): free its slot, and if
 * it was the last thread not waiting, end the program.  The thread runs
 * this itself, from its start frame's cleanup or its key's destructor. */
void xt_thread_ends(struct xt_slot *s)
{
	if (s->keyed && pthread_getspecific(xt_key) == s)
		pthread_setspecific(xt_key, NULL);  /* ended by its frame: no destructor */
	struct xt_slot **e = map_entry(s->pt, false);
	int old = xt_lock();
	if (e && *e == s)
		*e = NULL;
	if (s->in_wait) {
		s->in_wait = 0;
		__atomic_sub_fetch(&xt_waiting, 1, __ATOMIC_RELAXED);
	}
	xt_slot_free(s);
	unsigned long waiting = __atomic_load_n(&xt_waiting, __ATOMIC_RELAXED);
	xt_unlock(old);
	/* The ending thread is still live, and not marked: it counts itself.
	 * It cannot look again later, so while the others are unsettled
	 * (one on its way to park, or woken and about to unmark) it waits
	 * for them here, for a second at most; a thread that checked before
	 * this one unmarked itself may have parked untimed, counting on it. */
	if (!waiting)
		return;
	long poll_ns = XT_POLL_FIRST_NS / 8;
	for (int i = 0; i < 16; i++) {          /* 125 us doubling to 128 ms: 0.9 s */
		switch (xt_verdict(1)) {
		case XT_ALL_WAIT:
			exit(0);
		case XT_NOT_ALL:
			return;
		case XT_UNSETTLED:
			break;
		}
		struct timespec d = { 0, xt_poll_step(&poll_ns) };
		nanosleep(&d, NULL);
	}
}

static void key_destructor(void *p)
{
	xt_thread_ends(p);
}

static void init_once(void)
{
	struct sched_param sp = { .sched_priority = XTHREAD_DEFAULT_PRIO };
	if (pthread_key_create(&xt_key, key_destructor) != 0 || pthread_attr_init(&xt_attr) != 0 ||
	    pthread_attr_setdetachstate(&xt_attr, PTHREAD_CREATE_DETACHED) != 0 ||
	    pthread_attr_setinheritsched(&xt_attr, PTHREAD_EXPLICIT_SCHED) != 0 ||
	    pthread_attr_setschedpolicy(&xt_attr, SCHED_FIFO) != 0 ||
	    pthread_attr_setschedparam(&xt_attr, &sp) != 0)
		return;
	__atomic_store_n(&xt_ready, true, __ATOMIC_RELEASE);
}

static bool ready(void)
{
	if (__atomic_load_n(&xt_ready, __ATOMIC_ACQUIRE))
		return true;
	pthread_once(&xt_once, init_once);
	return __atomic_load_n(&xt_ready, __ATOMIC_ACQUIRE);
}

const pthread_attr_t *xt_default_attr(void)
{
	return ready() ? &xt_attr : NULL;
}

bool xt_slot_bind(struct xt_slot *s, bool ends_by_key)
{
	struct xt_slot **e = map_entry(s->pt, true);
	if (e)
		*e = s;
	if (!ends_by_key && e)
		return true;
	/* the key finds it (no map entry) or ends it, or both */
	if (pthread_setspecific(xt_key, s) != 0) {
		if (e)
			*e = NULL;
		return false;
	}
	s->keyed = 1;
	return true;
}

/* Make the caller an xthread: a slot, an Xinu priority (a SCHED_OTHER
 * thread gets XTHREAD_DEFAULT_PRIO; a FIFO or RR one keeps its own) and
 * asynchronous cancellation, as xthread_create gives its threads.  Unless
 * the caller frees its slot itself when it ends (`ends_by_key` false: the
 * initial thread under xmain), its key's destructor will. */
struct xt_slot *xt_adopt(bool ends_by_key)
{
	if (!ready())
		return NULL;
	int old = xt_lock();
	struct xt_slot *s = xt_slot_alloc();
	if (s) {
		s->pt = pthread_self();
		s->state = XT_ALIVE;
	}
	xt_unlock(old);
	if (!s)
		return NULL;
	if (!xt_slot_bind(s, ends_by_key)) {
		old = xt_lock();
		xt_slot_free(s);
		xt_unlock(old);
		return NULL;
	}
	int policy;
	struct sched_param sp;
	if (pthread_getschedparam(s->pt, &policy, &sp) == 0 && policy != SCHED_FIFO &&
	    policy != SCHED_RR) {
		sp.sched_priority = XTHREAD_DEFAULT_PRIO;
		pthread_setschedparam(s->pt, SCHED_FIFO, &sp);
	}
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	return s;
}

struct xt_slot *xt_current(void)
{
	pthread_t me = pthread_self();
	struct xt_slot **e = map_entry(me, false);
	struct xt_slot *s = e ? *e : NULL;
	if (s && s->pt == me && s->state != XT_FREE)
		return s;
	if (!ready())
		return NULL;
	s = pthread_getspecific(xt_key);
	return s ? s : xt_adopt(true);
}
