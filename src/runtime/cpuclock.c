/*
 * cpuclock.c — per-UT CPU-time clocks: CLOCK_THREAD_CPUTIME_ID and the
 * clocks pthread_getcpuclockid names, paid for only by programs that read
 * CPU time.
 *
 * Owns: each UT's CPU time (ut->cpu_ns), the VP's mark (the carrier's own
 * CPU clock when the running UT was switched in), the switch to turn the
 * accounting on, and the program's clock_gettime/clock_getres (exported
 * here, beside the state they read; glibc's own serve every other clock).
 *
 * The kernel sees one thread per VP, so its thread clock is the sum over
 * every UT the carrier ran.  Once on, every switch reads the carrier's
 * clock (one system call) and charges the outgoing UT; a read adds the
 * running UT's time since its switch-in.  It is turned on by the first read
 * of any CPU-time clock (a thread's or the process's: a program that reads
 * one measures, and its threads' times from then on are exact); before
 * that, switches cost nothing, and a UT's time counts from the moment the
 * accounting began.  Time a UT spends in a blocking call off the VP is its
 * own kernel thread's, not counted (documented).
 *
 * A UT's clock id encodes its slot and generation the way glibc encodes a
 * kernel thread's (MAKE_THREAD_CPUCLOCK: ~tid << 3 | CPUCLOCK_SCHED), with
 * "tids" above the kernel's PID_MAX_LIMIT (2^22), so a kernel thread's id
 * passes through to the kernel unchanged and a UT's is never one.
 *
 * Mainline only (the VP's UTs): a handler on another kernel thread reading
 * a UT's clock reads a value the mainline may be updating (a torn read is
 * at worst stale; documented).  M:N: accounting, once on, is on for every
 * VP; a read takes the runtime lock and adds, for a UT running on another
 * VP, that VP's carrier's clock (read by tid) since its mark.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <sys/syscall.h>

#define UT_CLOCK_BASE (1u << 23)          /* above PID_MAX_LIMIT (4,194,304) */
#define UT_CLOCK_SLOTS (1u << 24)

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn libc_gettime, libc_getres;

static int sys_clock(long nr, clockid_t clk, struct timespec *ts)
{
	long r = __weft_raw_syscall6(nr, clk, (long)ts, 0, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

static int sys_gettime(clockid_t clk, struct timespec *ts) { return sys_clock(SYS_clock_gettime, clk, ts); }
static int sys_getres(clockid_t clk, struct timespec *ts) { return sys_clock(SYS_clock_getres, clk, ts); }

/* glibc's own (its vDSO path), found once; the system call where there is
 * no dynamic linker to ask (a static program).
 * The ThreadSanitizer build asks libc itself: there Weft is linked into
 * the program, the next definition is TSan's interceptor, and that records
 * its write of *ts for whichever fiber TSan thinks runs.  The runtime reads
 * the clock on stacks several fibers use in turn (a kernel thread's home,
 * the signal stack), so TSan reported races between UTs on a local of
 * __weft_now that no UT touches. */
__attribute__((constructor(101))) static void find_libc(void)
{
	void *next = RTLD_NEXT;
#if WEFT_TSAN
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (libc)
		next = libc;
#endif
	libc_gettime = (clock_fn)dlsym(next, "clock_gettime");
	libc_getres = (clock_fn)dlsym(next, "clock_getres");
	if (!libc_gettime)
		libc_gettime = sys_gettime;
	if (!libc_getres)
		libc_getres = sys_getres;
}

int __weft_libc_clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (unlikely(!libc_gettime))
		find_libc();
	return libc_gettime(clk, ts);
}

/* A CPU clock's reading in ns; 0 if it cannot be read. */
static int64_t cpu_clock_ns(clockid_t clk)
{
	struct timespec ts;
	if (sys_gettime(clk, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* glibc's MAKE_THREAD_CPUCLOCK(id, CPUCLOCK_SCHED): a kernel thread's by
 * its tid, a UT's by its pseudo-tid (__weft_ut_clock). */
static clockid_t thread_cpuclock(unsigned id)
{
	return (clockid_t)((~id << 3) | 6);       /* CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED */
}

static int64_t carrier_ns(void)
{
	return cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Another VP's carrier's CPU clock, read by its tid (M:N). */
static int64_t kernel_thread_ns(pid_t tid)
{
	return tid > 0 ? cpu_clock_ns(thread_cpuclock((unsigned)tid)) : 0;
}

/* Turn the accounting on, on every VP (M:N: the others' carriers are
 * read by tid; they charge their own UTs at their switches from here). */
static void acct_on(void)
{
	struct vp *me = __weft_vp();
	if (me->cpu_acct || !__weft_on_vp_thread(me))
		return;
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (v->cpu_acct)
			continue;
		v->cpu_mark = v == me ? carrier_ns() : kernel_thread_ns(v->tid);
		v->cpu_acct = 1;
	}
}

void __weft_cpu_switch(struct vp *vp, struct ut *prev)
{
	int64_t now = carrier_ns();
	prev->cpu_ns += now - vp->cpu_mark;
	vp->cpu_mark = now;
}

void __weft_cpu_carry(struct vp *vp)
{
	if (vp->cpu_acct)
		vp->cpu_mark = carrier_ns();
}

/* t's CPU time: what its switches charged, and, if it runs now, its
 * carrier's time since its switch-in (M:N: on whichever VP runs it). */
static int64_t ut_ns(struct ut *t)
{
	struct vp *me = __weft_vp();
	int64_t ns = t->cpu_ns;
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (t != v->cur || !v->cpu_acct)
			continue;
		if (v == me)
			ns += __weft_on_vp_thread(me) ? carrier_ns() - me->cpu_mark : 0;
		else
			ns += kernel_thread_ns(v->tid) - v->cpu_mark;
	}
	return ns;
}

clockid_t __weft_ut_clock(const struct ut *t)
{
	return thread_cpuclock(UT_CLOCK_BASE + (t->slot & (UT_CLOCK_SLOTS - 1)));
}

/* The UT a clock id names, or NULL (a clock that is not a UT's). */
static struct ut *clock_ut(clockid_t clk, bool *is_ut)
{
	*is_ut = false;
	if (clk >= 0 || (clk & 7) != 6)
		return NULL;
	unsigned pseudo = ~(unsigned)(clk >> 3);
	if (pseudo < UT_CLOCK_BASE || pseudo >= UT_CLOCK_BASE + UT_CLOCK_SLOTS)
		return NULL;
	*is_ut = true;
	return __weft_ut_by_slot(pseudo - UT_CLOCK_BASE);
}

EXPORT int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (likely(clk >= 0 && clk != CLOCK_THREAD_CPUTIME_ID && clk != CLOCK_PROCESS_CPUTIME_ID))
		return __weft_libc_clock_gettime(clk, ts);
	if (!__weft_started || !__weft_on_vp_thread(__weft_vp()))
		return __weft_libc_clock_gettime(clk, ts);
	if (clk == CLOCK_PROCESS_CPUTIME_ID) {
		acct_on();
		return __weft_libc_clock_gettime(clk, ts);
	}
	struct ut *t = NULL;
	if (clk == CLOCK_THREAD_CPUTIME_ID) {
		t = __weft_vp()->cur;
	} else {
		bool is_ut;
		t = clock_ut(clk, &is_ut);
		if (!is_ut)
			return __weft_libc_clock_gettime(clk, ts);   /* a kernel thread's */
		if (!t) {
			errno = EINVAL;
			return -1;
		}
	}
	if (!t || t->guest_kt)
		return __weft_libc_clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts);
	if (!ts) {
		errno = EFAULT;
		return -1;
	}
	/* M:N: the other VPs' cur and marks are theirs under the runtime
	 * lock (this is Weft's text: no tick moves the caller meanwhile) */
	bool locked = __weft_rtl_lock_outside();
	acct_on();
	int64_t ns = ut_ns(t);
	__weft_rtl_unlock_outside(locked);
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

EXPORT int clock_getres(clockid_t clk, struct timespec *ts)
{
	bool is_ut;
	if (clock_ut(clk, &is_ut) || is_ut)
		clk = CLOCK_THREAD_CPUTIME_ID;
	if (unlikely(!libc_getres))
		find_libc();
	return libc_getres(clk, ts);
}
