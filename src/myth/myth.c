/*
 * myth.c — libweft-myth: Myth's calls (Small & Seltzer 1995, section 3.2
 * and Figure 1) as a thin layer over Weft's public pthread API.
 *
 * A Myth thread is a joinable UT, and Myth threads are cooperative: Myth
 * "selects waiting threads round-robin; no thread priority scheme is
 * implemented", and nothing preempts a thread.  So every Myth thread runs
 * at one level, SCHED_FIFO priority 1, which Weft never time-slices and
 * where th_yield sends the caller to the back of the level: th_init and
 * th_fork move a SCHED_OTHER caller there, and children inherit their
 * parent's scheduling (a FIFO or RR caller keeps its own).  A thread's
 * handle is its pthread_t seen as a pointer, so every handle is checked by
 * Weft (generations) and a stale or made-up one is refused with ESRCH,
 * never followed.  A lock is a Weft mutex of the default type: uncontended
 * it costs a load and a store, contended it parks only the caller and is
 * handed to the first waiter, and like Figure 1's word any thread may
 * release it.  Invariants: a thread that has called th_init or th_fork, and
 * every thread it forks, is at SCHED_FIFO 1 unless the program chose FIFO
 * or RR itself; every call returns 0 or -1 with errno set (th_fork: NULL;
 * th_join: TH_JOIN_FAILED), never a POSIX code as its value, and never
 * crashes on a bad thread handle.
 */
#define WEFT_MYTH_NO_INLINE 1      /* define the functions themselves */
#include <weft/myth.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <weft.h>

#define TH_API __attribute__((visibility("default")))

TH_API char th_join_failed__;

/* The virtual processors asked for; Weft has one until M:N (docs/myth.md). */
static int th_mp = 1;
/* The virtual processors in force. */
static int th_vps = 1;

static inline th_thread_t handle_of(pthread_t t) { return (th_thread_t)(uintptr_t)t; }
static inline pthread_t thread_of(th_thread_t h) { return (pthread_t)(uintptr_t)h; }

#define TH_LEVEL 1                 /* Myth's one level: SCHED_FIFO 1 */

/* The caller becomes a Myth thread: a time-sliced caller (SCHED_OTHER)
 * moves to Myth's level; a FIFO or RR one keeps its scheduling, and its
 * children share it. */
static void join_level(void)
{
	int policy;
	struct sched_param sp;
	pthread_t self = pthread_self();
	if (pthread_getschedparam(self, &policy, &sp) == 0 && policy != SCHED_FIFO &&
	    policy != SCHED_RR) {
		sp.sched_priority = TH_LEVEL;
		pthread_setschedparam(self, SCHED_FIFO, &sp);
	}
}

TH_API int th_init(int mp)
{
	if (mp < 1 || mp > 1024)
		return th_call_result__(EINVAL);
	th_mp = mp;
	join_level();
	/* Weft runs the VPs it was started with (WEFT_VPS; one until M:N);
	 * this is also the library's one reference to a name only libweft
	 * defines, so a link without -lweft after -lweft-myth fails rather
	 * than giving the program glibc's kernel threads. */
	struct weft_stats st;
	if (weft_stats_get(&st, sizeof st) == 0 && st.vps > 0)
		th_vps = st.vps < (uint64_t)th_mp ? (int)st.vps : th_mp;
	return 0;
}

TH_API th_thread_t (th_fork)(th_func_t func, void *arg)
{
	if (!func) {
		errno = EINVAL;
		return NULL;
	}
	join_level();                  /* the child inherits the level */
	pthread_t t;
	int e = pthread_create(&t, NULL, func, arg);
	if (e) {
		errno = e == EINVAL ? EINVAL : EAGAIN;
		return NULL;
	}
	return handle_of(t);
}

TH_API void *th_join(th_thread_t thread)
{
	void *value;
	int e = thread ? pthread_join(thread_of(thread), &value) : ESRCH;
	if (e) {
		errno = e == EINVAL ? ESRCH : e;
		return TH_JOIN_FAILED;
	}
	return value;
}

TH_API int th_yield(void)
{
	sched_yield();
	return 0;
}

TH_API th_thread_t th_self(void)
{
	return th_self_inline__();
}

TH_API void th_exit(void *value)
{
	pthread_exit(value);
}

TH_API int th_mutex_init(th_mutex_t *m)
{
	return th_call_result__(m ? pthread_mutex_init(&m->lock__, NULL) : EINVAL);
}

TH_API int th_mutex_lock(th_mutex_t *m) { return th_mutex_lock_inline__(m); }
TH_API int th_mutex_unlock(th_mutex_t *m) { return th_mutex_unlock_inline__(m); }
TH_API int th_mutex_trylock(th_mutex_t *m) { return th_mutex_trylock_inline__(m); }

TH_API int th_mutex_destroy(th_mutex_t *m)
{
	return th_call_result__(m ? pthread_mutex_destroy(&m->lock__) : EINVAL);
}
