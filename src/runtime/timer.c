/*
 * timer.c — deadlines: a binary min-heap of parked UTs.
 *
 * Every deadline is CLOCK_MONOTONIC nanoseconds; absolute times on
 * CLOCK_REALTIME (and BOOTTIME, TAI) are converted when a UT parks, so a
 * clock step after that point does not move the wake-up (documented limit).
 * Invariant: heap.v[i]->tindex == i + 1 for every i < heap.n, and a UT's
 * deadline is no earlier than its parent's.  The heap only grows, so parking
 * with a deadline allocates only until the heap reaches its high-water mark.
 * VP-local: no signal handler reads the heap (the tick decides nothing
 * itself: preempt.c), so __weft_timer_reserve may move it with realloc.
 */
#include "rt.h"

#include <limits.h>
#include <stdlib.h>

#define NSEC 1000000000LL

int64_t __weft_now(void)
{
	struct timespec ts;
	__weft_libc_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

/*
 * The switch path's gate (__weft_timers_due_now).  The scheduler looks at
 * the heap on every switch while a timer is pending, and a precise clock
 * read costs about 45 ns here (the vDSO: a fenced counter read and its
 * conversion), twice the switch.  The gate keeps a mark — the cycle counter
 * and the precise time, read together at the last precise read — and a
 * lower bound on the counter's rate, and answers "nothing due" without a
 * clock read while the cycles since the mark, at that rate, cannot have
 * reached the earliest deadline.  Never late: the counter is read before
 * the clock, so the mark's time is no earlier than the counter's moment,
 * and a rate too low only brings the next precise read sooner.  The bound
 * is 97% of the rate measured from start-up (__weft_timer_gate_begin) to
 * the first look 20 ms or more later (CLOCK_MONOTONIC's NTP slew is at
 * most 0.05%).  Off — every look
 * reads the clock, as before — until then, and for good where the counter
 * is not invariant or the kernel does not keep time with it
 * (__weft_arch_cycles_invariant: the counters of two CPUs may then
 * disagree).
 * State: process-wide, beside the heap: read and written by the scheduler
 * only, on one VP at a time (M:N: under the runtime lock, as the heap);
 * no signal handler and no other kernel thread reads it.
 */
#define GATE_CALIBRATE_NS 20000000LL
static struct {
	uint64_t mark_cycles;
	int64_t mark_ns;
	uint64_t rate_q16;        /* cycles per ns, 16.16 fixed point, a lower bound; 0: off */
	uint64_t cal_cycles;
	int64_t cal_ns;           /* 0: calibration not begun */
	bool never;               /* no usable counter here */
} gate;

void __weft_timer_gate_begin(void)
{
	gate.cal_cycles = __weft_arch_cycles();
	gate.cal_ns = __weft_now();
}

static void gate_calibrate(uint64_t c, int64_t now)
{
	if (!gate.cal_ns) {
		__weft_timer_gate_begin();
		return;
	}
	int64_t dt = now - gate.cal_ns;
	if (dt < GATE_CALIBRATE_NS)
		return;
	gate.never = true;                    /* one attempt; the rate below ends it too */
	if (!__weft_arch_cycles_invariant() || c <= gate.cal_cycles)
		return;
	uint64_t dc = c - gate.cal_cycles;
	if (dc >= (UINT64_C(1) << 47))        /* keep dc << 16 in 64 bits */
		return;
	uint64_t rate = (dc << 16) / (uint64_t)dt * 97 / 100;
	/* 1 MHz .. 256 GHz: outside, the counter is not what we think */
	if (rate < (UINT64_C(1) << 16) / 1000 || rate >= (UINT64_C(1) << 24))
		return;
	gate.rate_q16 = rate;
}

/* rt.h: the gate's "not yet" as a count of the cycle counter, for the
 * switch path's inline test: mark_cycles plus the cycles the earliest
 * deadline is away at the lower-bound rate, set when the gate answers "not
 * yet" and cleared (0: ask the gate) when a deadline nearer than every
 * other comes (__weft_timer_add).  A later deadline at the heap's top
 * leaves it early, which is only a look too soon.  Written and read as
 * the heap is (M:N: under the runtime lock). */
uint64_t __weft_timer_due_cycles;

int64_t __weft_timers_due_now(void)
{
	uint64_t c = __weft_arch_cycles();
	if (gate.rate_q16) {
		int64_t left = __weft_timers_next() - gate.mark_ns;
		if (left > 0) {
			if (left > (INT64_C(1) << 31))
				left = INT64_C(1) << 31;   /* with rate < 2^24: the product fits */
			uint64_t budget = (uint64_t)left * gate.rate_q16 >> 16;
			if (c - gate.mark_cycles < budget) {
				__weft_timer_due_cycles = gate.mark_cycles + budget;
				return -1;
			}
		}
	}
	__weft_timer_due_cycles = 0;
	int64_t now = __weft_now();
	gate.mark_cycles = c;
	gate.mark_ns = now;
	if (unlikely(!gate.rate_q16) && !gate.never)
		gate_calibrate(c, now);
	return now;
}

static bool valid_ts(const struct timespec *ts)
{
	return ts && ts->tv_nsec >= 0 && ts->tv_nsec < NSEC;
}

/*
 * Deadlines saturate at ±FOREVER instead of overflowing, so that any time a
 * caller can pass — tv_sec near LLONG_MIN or LLONG_MAX on any clock — turns
 * into "already past" or "never", and every sum below stays representable.
 * Every deadline conversion goes through these two helpers.
 */
#define FOREVER (INT64_MAX / 2)

static int64_t clamp_ns(int64_t v)
{
	return v > FOREVER ? FOREVER : v < -FOREVER ? -FOREVER : v;
}

/* sec * 1e9 + nsec (0 <= nsec < 1e9), saturated. */
static int64_t ts_ns_sat(time_t sec, long nsec)
{
	if (sec >= FOREVER / NSEC)
		return FOREVER;
	if (sec <= -(FOREVER / NSEC))
		return -FOREVER;
	return (int64_t)sec * NSEC + nsec;
}

/* a + b for a, b in [-FOREVER, FOREVER]: cannot overflow, then clamped. */
static int64_t add_sat(int64_t a, int64_t b)
{
	return clamp_ns(a + b);
}

int __weft_abs_deadline(clockid_t clk, const struct timespec *abs, int64_t *out)
{
	if (!valid_ts(abs))
		return EINVAL;
	int64_t at = ts_ns_sat(abs->tv_sec, abs->tv_nsec);
	if (clk == CLOCK_MONOTONIC) {
		*out = at < 0 ? 0 : at;
		return 0;
	}
	if (clk != CLOCK_REALTIME && clk != CLOCK_BOOTTIME && clk != CLOCK_TAI)
		return EINVAL;
	struct timespec now;
	if (__weft_libc_clock_gettime(clk, &now) != 0)
		return EINVAL;
	int64_t mono = __weft_now();
	/* time left on clk, then the same span on the monotonic clock; a time
	 * already past gives `mono`, which a park treats as expired */
	int64_t left = add_sat(at, -ts_ns_sat(now.tv_sec, now.tv_nsec));
	*out = left <= 0 ? mono : add_sat(mono, left);
	return 0;
}

int __weft_rel_deadline(const struct timespec *rel, int64_t *out)
{
	if (!valid_ts(rel) || rel->tv_sec < 0)
		return EINVAL;
	*out = add_sat(__weft_now(), ts_ns_sat(rel->tv_sec, rel->tv_nsec));
	return 0;
}

static inline void put(struct ut **v, uint32_t i, struct ut *t)
{
	v[i] = t;
	t->tindex = i + 1;
}

static void sift_up(struct ut **v, uint32_t i)
{
	struct ut *t = v[i];
	while (i) {
		uint32_t p = (i - 1) / 2;
		if (v[p]->deadline <= t->deadline)
			break;
		put(v, i, v[p]);
		i = p;
	}
	put(v, i, t);
}

static void sift_down(struct ut **v, uint32_t n, uint32_t i)
{
	struct ut *t = v[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && v[c + 1]->deadline < v[c]->deadline)
			c++;
		if (t->deadline <= v[c]->deadline)
			break;
		put(v, i, v[c]);
		i = c;
	}
	put(v, i, t);
}

/* Room for n UTs: called when a UT is created, so that parking with a
 * deadline never needs memory and so never fails. */
int __weft_timer_grow(uint32_t n)
{
	struct timer_heap *h = &__weft_rq.timers;
	if (n <= h->cap)
		return 0;
	uint32_t cap = h->cap ? h->cap : 64;
	while (cap < n)
		cap *= 2;
	struct ut **v = realloc(h->v, cap * sizeof *v);
	if (!v)
		return EAGAIN;
	h->v = v;
	h->cap = cap;
	return 0;
}

void __weft_timer_add(struct ut *t, int64_t deadline)
{
	struct timer_heap *h = &__weft_rq.timers;
	t->deadline = deadline;
	h->v[h->n] = t;
	sift_up(h->v, h->n++);
	if (t->tindex == 1) {
		/* the nearest deadline moved closer: the switch path's inline
		 * "not yet" was for the old one, and an idle VP sleeping to it
		 * (or for ever) must look again (M:N) */
		__weft_timer_due_cycles = 0;
		if (unlikely(__weft_mn))
			__weft_mn_wake_idle();
	}
}

void __weft_timer_del(struct ut *t)
{
	struct timer_heap *h = &__weft_rq.timers;
	uint32_t i = t->tindex - 1;
	t->tindex = 0;
	struct ut *last = h->v[--h->n];
	if (i == h->n)
		return;
	h->v[i] = last;
	last->tindex = i + 1;
	if (i && h->v[(i - 1) / 2]->deadline > last->deadline)
		sift_up(h->v, i);
	else
		sift_down(h->v, h->n, i);
}

int __weft_timers_run(int64_t now)
{
	struct timer_heap *h = &__weft_rq.timers;
	int n = 0;
	while (h->n && h->v[0]->deadline <= now) {
		struct ut *t = h->v[0];
		int result = ETIMEDOUT;
		/* a wait that polls (a shared futex's) re-reads here and may
		 * stay parked, on its queue, to a later deadline */
		if (unlikely(t->wait_kind == WAIT_FUTEX_SHARED && t->state == UT_BLOCKED)) {
			int64_t next = __weft_hooks.wait_poll(t, now, &result);
			if (next > now) {
				__weft_timer_del(t);
				__weft_timer_add(t, next);
				continue;
			}
		}
		__weft_unpark_nopreempt(t, result);
		n++;
	}
	__weft_vp()->stat.timer_wakeups += (uint64_t)n;
	return n;
}
