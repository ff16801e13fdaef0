/*
 * stats.c — weft_version and weft_stats_get: the runtime's counters, copied
 * out.  The caller passes the size of its struct so that a program built
 * against an older weft.h keeps working when the struct grows.
 */
#include "rt.h"
#include "weft.h"

#include <string.h>

EXPORT const char *weft_version(void)
{
	return WEFT_VERSION_STRING;
}

EXPORT int weft_stats_get(struct weft_stats *out, size_t size)
{
	if (!out)
		return EINVAL;
	__weft_ensure();
	/* M:N: other VPs' counters and what they run, under the runtime lock:
	 * without it a UT another VP is switching to is neither ready nor
	 * running, and a program waiting for the others to settle stops too
	 * soon (api_fuzz's second joiner) */
	struct vp *self_vp = __weft_vp();
	bool locked = __weft_rtl_lock_outside();
	const struct weft_proc *proc = &__weft_proc;
	struct weft_stats s;
	memset(&s, 0, sizeof s);
	/* every VP's counters, summed (M:N) */
	struct weft_counters c;
	memset(&c, 0, sizeof c);
	uint64_t ticks = 0, deferrals = 0, retries = 0, ras = 0, offvp = 0;
	for (unsigned i = 0; i < proc->nvps; i++) {
		const struct vp *v = &__weft_vps[i];
		const uint64_t *from = (const uint64_t *)&v->stat;
		uint64_t *to = (uint64_t *)&c;
		for (size_t k = 0; k < sizeof c / sizeof(uint64_t); k++)
			to[k] += from[k];
		ticks += v->async.ticks;
		deferrals += v->async.deferrals;
		retries += v->async.retries;
		ras += v->async.ras_rollbacks;
		offvp += v->offvp;
	}
	s.threads_created = c.created;
	s.threads_exited = c.exited;
	s.threads_live = proc->live;
	s.context_switches = c.switches;
	s.parks = c.parks;
	s.unparks = c.unparks;
	s.timer_wakeups = c.timer_wakeups;
	s.idle_sleeps = c.idle_sleeps;
	s.stacks_mapped = c.stacks_mapped;
	s.stacks_reused = c.stacks_reused;
	s.thread_slots = __weft_ut_slots();
	s.vps = proc->nvps;
	s.ticks = ticks;
	s.preemptions = c.preemptions;
	s.deferrals = deferrals;
	s.retries = retries;
	s.ras_rollbacks = ras;
	s.switch_points = c.switch_points;
	s.signals_deferred = c.signals_deferred;
	/* Ready to run: queued, and under M:N also running on another VP
	 * (a program that waits for the others to settle waits for those
	 * too). */
	s.threads_ready = __weft_rq.nready + __weft_cs_deferred;
	if (__weft_mn)
		s.threads_ready += __weft_mn_running_elsewhere(self_vp);
	s.handoffs = c.handoffs;
	s.rejoins = c.rejoins;
	s.threads_off_vp = offvp;
	__weft_kt_counts(&s.kthreads_made, &s.kthreads_spare);
	s.takeovers = c.takeovers;
	s.stack_saves = c.cs_saves;
	s.stack_restores = c.cs_restores;
	s.stack_bytes_copied = c.cs_bytes;
	s.steals = c.steals;
	__weft_rtl_unlock_outside(locked);
	memcpy(out, &s, size < sizeof s ? size : sizeof s);
	return 0;
}

EXPORT int weft_thread_stats_get(pthread_t thread, struct weft_thread_stats *out, size_t size)
{
	if (!out)
		return EINVAL;
	__weft_ensure();
	const struct ut *t = __weft_ut_lookup(thread);
	if (!t)
		return ESRCH;
	struct weft_thread_stats s;
	memset(&s, 0, sizeof s);
	s.switch_points = t->switch_points;
	memcpy(out, &s, size < sizeof s ? size : sizeof s);
	return 0;
}
