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
	const struct vp *vp = __weft_vp();
	const struct weft_proc *proc = &__weft_proc;
	struct weft_stats s;
	memset(&s, 0, sizeof s);
	s.threads_created = vp->stat.created;
	s.threads_exited = vp->stat.exited;
	s.threads_live = proc->live;
	s.context_switches = vp->stat.switches;
	s.parks = vp->stat.parks;
	s.unparks = vp->stat.unparks;
	s.timer_wakeups = vp->stat.timer_wakeups;
	s.idle_sleeps = vp->stat.idle_sleeps;
	s.stacks_mapped = vp->stat.stacks_mapped;
	s.stacks_reused = vp->stat.stacks_reused;
	s.thread_slots = __weft_ut_slots();
	s.vps = proc->nvps;
	s.ticks = vp->async.ticks;
	s.preemptions = vp->stat.preemptions;
	s.deferrals = vp->async.deferrals;
	s.retries = vp->async.retries;
	s.ras_rollbacks = vp->async.ras_rollbacks;
	s.switch_points = vp->stat.switch_points;
	s.signals_deferred = vp->stat.signals_deferred;
	s.threads_ready = __weft_rq.nready;
	s.handoffs = vp->stat.handoffs;
	s.rejoins = vp->stat.rejoins;
	s.threads_off_vp = vp->offvp;
	__weft_kt_counts(&s.kthreads_made, &s.kthreads_spare);
	s.takeovers = vp->stat.takeovers;
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
