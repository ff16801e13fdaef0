/*
 * check.c — the runtime's invariants, checked at every switch in WEFT_DEBUG
 * builds (cmake -DWEFT_DEBUG=ON; `make test` runs one such build).
 *
 * Owns: nothing; reads everything.  It checks what rt.h, sched.c, park.c,
 * timer.c and lifecycle.c promise:
 *   - the UT state machine (every state change goes through WEFT_STATE);
 *   - queue membership: bit p of ready_bits iff rq[p] non-empty; every UT on
 *     rq[p] READY with prio p, its links consistent; nready the count; the
 *     running UT on no ready queue; the UT switched to was READY; M:N, level
 *     0 per VP: rq[0] empty, bit 0 iff nlocal != 0, each VP's list as long as
 *     its lq_n and holding only UTs that name it (rq_vp);
 *   - heap order: v[i]->tindex == i + 1, a parent's deadline no later than
 *     its children's, every UT in the heap BLOCKED;
 *   - counters: proc.live equals the UTs that are READY, RUNNING or BLOCKED;
 *   - the lock order of lockorder.h at every acquisition.
 * The O(1) checks run at every switch; the walks over every queue, the heap
 * and the UT table run at every switch while they are small and every k-th
 * switch once they are large (k grows with their size), so that a test
 * with 100,000 UTs still runs in seconds.  A broken invariant dies with one
 * line naming it.
 */
#include "rt.h"

#ifdef WEFT_DEBUG

#define BUDGET 512u

#define REQUIRE(cond, ...)                           \
	do {                                         \
		if (unlikely(!(cond)))               \
			__weft_die(__VA_ARGS__);     \
	} while (0)

void __weft_check_state(struct ut *t, enum ut_state from, enum ut_state to)
{
	bool ok;
	switch (to) {
	case UT_READY:   ok = from == UT_FREE || from == UT_RUNNING || from == UT_BLOCKED || from == UT_READY ||
			      from == UT_DEFERRED; break;
	case UT_DEFERRED: ok = from == UT_READY; break;
	case UT_RUNNING: ok = from == UT_READY || from == UT_FREE; break;
	case UT_BLOCKED: ok = from == UT_RUNNING; break;
	case UT_EXITING: ok = from == UT_RUNNING; break;
	case UT_ZOMBIE:  ok = from == UT_EXITING; break;
	default:         ok = false; break;
	}
	REQUIRE(ok, "invariant: thread %llu went from state %d to %d", (unsigned long long)t->id, from, to);
}

/* The UTs on one ready list: all READY at level p (on VP `owner`'s list
 * when owner >= 0), linked both ways, not the one switched to. */
static uint32_t check_list(const struct ut *h, int p, int owner, const struct ut *next, uint32_t n)
{
	if (!h)
		return n;
	const struct ut *t = h;
	do {
		REQUIRE(t->state == UT_READY && t->prio == p,
			"invariant: thread %llu on ready queue %d is in state %d at priority %d",
			(unsigned long long)t->id, p, t->state, t->prio);
		REQUIRE(owner < 0 || t->rq_vp == owner,
			"invariant: thread %llu on VP %d's level-0 list says VP %d", (unsigned long long)t->id,
			owner, t->rq_vp);
		REQUIRE(t->q_next->q_prev == t, "invariant: broken ready-queue links at thread %llu",
			(unsigned long long)t->id);
		REQUIRE(t != next, "invariant: the thread switched to is still on a ready queue");
		n++;
		t = t->q_next;
	} while (t != h && n <= __weft_rq.nready);
	return n;
}

static void check_queues(const struct vp *vp, const struct ut *next)
{
	uint32_t n = 0;
	for (int p = 0; p < WEFT_NPRIO; p++) {
		const struct ut *h = __weft_rq.rq[p];
		bool bit = (__weft_rq.ready_bits[p >> 6] >> (p & 63)) & 1;
		if (p == 0 && vp->mn_local) {
			/* level 0 per VP (sched.c): bit 0 says some list holds one */
			REQUIRE(!h, "invariant: level 0 is kept per VP but the shared queue holds a thread");
			REQUIRE(bit == (__weft_rq.nlocal != 0), "invariant: ready bit 0 is %d with %u on the VPs' lists",
				bit, __weft_rq.nlocal);
			uint32_t before = n;
			for (unsigned i = 0; i < __weft_proc.nvps; i++) {
				const struct vp *v = &__weft_vps[i];
				uint32_t m = n;
				n = check_list(v->lq, 0, (int)i, next, n);
				REQUIRE(n - m == v->lq_n, "invariant: VP %u's level-0 list holds %u, lq_n says %u", i,
					n - m, v->lq_n);
			}
			REQUIRE(n - before == __weft_rq.nlocal, "invariant: %u on the VPs' level-0 lists, nlocal says %u",
				n - before, __weft_rq.nlocal);
			continue;
		}
		REQUIRE(bit == (h != NULL), "invariant: ready bit %d is %d but the queue is %s", p, bit,
			h ? "not empty" : "empty");
		n = check_list(h, p, -1, next, n);
	}
	REQUIRE(n == __weft_rq.nready, "invariant: %u threads on ready queues, nready says %u", n, __weft_rq.nready);
}

static void check_heap(const struct vp *vp)
{
	const struct timer_heap *h = &__weft_rq.timers;
	for (uint32_t i = 0; i < h->n; i++) {
		const struct ut *t = h->v[i];
		REQUIRE(t->tindex == i + 1, "invariant: timer heap slot %u holds index %u", i, t->tindex);
		REQUIRE(t->state == UT_BLOCKED, "invariant: thread %llu in the timer heap is in state %d",
			(unsigned long long)t->id, t->state);
		REQUIRE(i == 0 || h->v[(i - 1) / 2]->deadline <= t->deadline,
			"invariant: timer heap out of order at slot %u", i);
	}
}

static void count_live(struct ut *t, void *ctx)
{
	if (t->state == UT_READY || t->state == UT_RUNNING || t->state == UT_BLOCKED || t->state == UT_DEFERRED)
		++*(uint32_t *)ctx;
}

void *volatile __weft_rtl_owner = (void *)-1;
void *volatile __weft_rtl_where;

void __weft_rtl_check_held(const char *where)
{
	void *me = __weft_arch_gs_get();
	void *owner = __weft_rtl_owner;
	REQUIRE(owner == me, "invariant: %s on VP %d with in_weft set, the runtime lock held by %p (rtl %u; last taken or let go at check_held+%p)",
		where, (int)(__weft_vp() - __weft_vps), owner, (unsigned)__weft_rtl.word,
		(void *)((char *)__weft_rtl_where - (char *)__weft_rtl_check_held));
}

void __weft_rtl_check_outcall(const struct vp *vp)
{
	/* vp read before something that can switch is stale when the UT went
	 * on on another VP; its in_weft cleared would leave the runtime lock
	 * held for good (sched.c, __weft_ut_main) */
	REQUIRE(vp == __weft_vp(), "invariant: outcall from VP %d on VP %d's kernel thread",
		(int)(vp - __weft_vps), (int)(__weft_vp() - __weft_vps));
	if (vp->in_weft)
		__weft_rtl_check_held("outcall");
}

void __weft_check_switch(struct vp *vp, struct ut *prev, struct ut *next)
{
	if (__weft_mn)
		__weft_rtl_check_held("switch");
	REQUIRE(next->state == UT_READY, "invariant: switching to thread %llu in state %d",
		(unsigned long long)next->id, next->state);
	REQUIRE(prev->state != UT_RUNNING, "invariant: thread %llu switched out while RUNNING",
		(unsigned long long)prev->id);
	REQUIRE(!vp->noswitch.sp || vp->noswitch.ut != prev || !__weft_noswitch_slow(vp),
		"invariant: a switch inside a signal handler that runs over protected code");
	uint64_t cost = __weft_rq.nready + __weft_rq.timers.n + __weft_ut_slots();
	uint64_t every = cost / BUDGET + 1;
	if (vp->stat.switches % every)
		return;
	/* the walks see the queues as they are now: next is unlinked, prev is
	 * wherever it went */
	check_queues(vp, next);
	check_heap(vp);
	uint32_t live = 0;
	__weft_ut_foreach(count_live, &live);
	REQUIRE(live == __weft_proc.live, "invariant: %u threads alive, live says %u", live,
		__weft_proc.live);
}

void __weft_lock(struct weft_lock *l)
{
	struct vp *vp = __weft_vp();
	if (vp->nheld) {
		uint8_t top = vp->held[vp->nheld - 1];
		REQUIRE(l->cls > top || (l->cls == top && WEFT_LOCK_CLASS_MAY_NEST(top)),
			"lock order: class %u taken while holding class %u", l->cls, top);
	}
	REQUIRE(vp->nheld < sizeof vp->held, "lock order: more than %zu locks held", sizeof vp->held);
	vp->held[vp->nheld++] = l->cls;
}

void __weft_unlock(struct weft_lock *l)
{
	struct vp *vp = __weft_vp();
	REQUIRE(vp->nheld && vp->held[vp->nheld - 1] == l->cls, "lock order: class %u released out of order",
		l->cls);
	vp->nheld--;
}

#endif
