/*
 * preempt.c — time slicing: the tick, safe points and fake calls.
 *
 * A per-VP POSIX timer (timer_create, SIGEV_THREAD_ID) sends the preemption
 * signal to the VP's kernel thread every time slice, but only while
 * preemption can matter: it is armed when a UT becomes ready behind the
 * running one (sched.c calls __weft_preempt_arm), turned into a one-shot at
 * the next deadline when only sleepers are left, and stopped when the VP goes
 * idle or nothing but the running UT exists.
 *
 * The handler runs on the VP's alternate stack and never switches itself.
 * It looks at the interrupted PC (Marovich's address-range test, Bershad's
 * user-level detection):
 *   - inside a registered restartable sequence: the PC goes back to the
 *     sequence's start (Bershad's rollback), whatever happens next;
 *   - inside Weft's own text, libc, the dynamic loader, the vDSO, libgcc or a
 *     library named in WEFT_NOPREEMPT: nothing is touched; "dispatch pending"
 *     is set, acted on when control leaves Weft (__weft_exit_point) or at
 *     a short retry tick.  Never switching inside libc is what lets UTs share
 *     one kernel thread's stdio and malloc locks;
 *   - anywhere else: a fake call (Mueller) into the arch trampoline, which
 *     saves every register and the xsave state on the UT's stack and calls
 *     __weft_preempted, which switches.
 *
 * Because Weft's text is one region that is never interrupted midway, the
 * runtime and the sync fast paths need no lock prefix and no flag in M:1.
 * Invariant: the handler changes runtime state only by setting
 * dispatch_pending, counting, and re-arming the timer; everything else
 * happens in __weft_preempted, at a point where the UT could have called it.
 */
#include "rt.h"
#include "../arch/arch.h"
#include "weft.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_RANGES 64
#define MAX_RAS 32
#define DEFAULT_SLICE_NS 10000000ull
#define MIN_SLICE_NS 10000ull

struct range {
	uintptr_t lo, hi;
};

uint64_t __weft_xsave_size HIDDEN = 4096;

/* Two tables, so the handler always reads a complete one while the other
 * is rebuilt; `ranges` is switched in one store. */
struct range_table {
	unsigned n;
	struct range r[MAX_RANGES];
};
static struct range_table tables[2];
static struct range_table *volatile ranges;
static unsigned long long ranges_adds = ~0ull;    /* dl_iterate_phdr generation seen */

static struct range ras[MAX_RAS];
static volatile unsigned nras;

static timer_t tick_timer;
static bool timer_made;
static int tick_signal;
static uint64_t slice_ns = DEFAULT_SLICE_NS;
static bool slicing_possible;    /* CPU, library placement and settings allow it */
static uintptr_t altstack_lo, altstack_hi;
static int64_t tick_due = INT64_MAX;    /* when the timer fires next (CLOCK_MONOTONIC ns) */

/* ---- where the PC may not be interrupted ---------------------------------- */

static const char *default_nopreempt[] = {
	"libc.so", "ld-linux", "linux-vdso", "libgcc_s", "libpthread.so", "libdl.so",
	"libasan", "libubsan", "libtsan", "liblsan", NULL,
};

static bool name_matches(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, prefix, strlen(prefix)) == 0;
}

static bool in_list(const char *path, const char *list)
{
	if (!list)
		return false;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	while (*list) {
		size_t n = strcspn(list, ":,");
		if (n && strncmp(base, list, n) == 0)
			return true;
		list += n;
		if (*list)
			list++;
	}
	return false;
}

struct scan {
	uintptr_t self_base;
	const char *extra;
	struct range_table *table;
};

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *sc = arg;
	struct range_table *t = sc->table;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	bool protect = info->dlpi_addr == sc->self_base && name[0];
	for (const char **p = default_nopreempt; !protect && *p; p++)
		protect = name[0] && name_matches(name, *p);
	if (!protect)
		protect = name[0] && in_list(name, sc->extra);
	/* The vDSO has an empty name in some glibc versions: recognise it by
	 * its address, which getauxval knows. */
	if (!protect && !name[0] && info->dlpi_addr && info->dlpi_addr != sc->self_base)
		protect = (uintptr_t)info->dlpi_addr == (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (!protect)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && t->n < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		t->r[t->n].lo = info->dlpi_addr + ph->p_vaddr;
		t->r[t->n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		t->n++;
	}
	return 0;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* (Re)build the table when objects were loaded since the last scan; runs
 * outside signal context (dl_iterate_phdr takes the loader's lock). */
static void refresh_ranges(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(count_adds, &adds);
	if (adds == ranges_adds)
		return;
	Dl_info di;
	struct range_table *next = ranges == &tables[0] ? &tables[1] : &tables[0];
	struct scan sc = { 0, getenv("WEFT_NOPREEMPT"), next };
	if (dladdr((void *)refresh_ranges, &di) && di.dli_fbase)
		sc.self_base = (uintptr_t)di.dli_fbase;
	next->n = 0;
	dl_iterate_phdr(add_object, &sc);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ranges = next;
	ranges_adds = adds;
}

static bool pc_protected(uintptr_t pc)
{
	const struct range_table *t = ranges;
	if (!t)
		return true;          /* not scanned yet: be safe */
	for (unsigned i = 0; i < t->n; i++)
		if (pc >= t->r[i].lo && pc < t->r[i].hi)
			return true;
	return false;
}

/* ---- the timer ----------------------------------------------------------- */

static void timer_set(uint64_t first_ns, uint64_t interval_ns, bool absolute)
{
	struct itimerspec its = {
		.it_value = { (time_t)(first_ns / 1000000000u), (long)(first_ns % 1000000000u) },
		.it_interval = { (time_t)(interval_ns / 1000000000u), (long)(interval_ns % 1000000000u) },
	};
	timer_settime(tick_timer, absolute ? TIMER_ABSTIME : 0, &its, NULL);
	if (first_ns == 0)
		tick_due = INT64_MAX;
	else
		tick_due = absolute ? (int64_t)first_ns : __weft_now() + (int64_t)first_ns;
}

static void tick_off(struct vp *vp)
{
	if (vp->tick_mode == TICK_OFF)
		return;
	timer_set(0, 0, false);
	vp->tick_mode = TICK_OFF;
}

static bool make_timer(void)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = tick_signal;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &tick_timer) != 0)
		return false;
	timer_made = true;
	return true;
}

void __weft_preempt_arm_slow(void)
{
	struct vp *vp = &__weft_vp0;
	if (!timer_made) {
		if (!make_timer()) {
			vp->preempt_on = false;
			return;
		}
	}
	refresh_ranges();
	timer_set(slice_ns, slice_ns, false);
	vp->tick_mode = TICK_PERIODIC;
}

void __weft_preempt_idle(void)
{
	tick_off(&__weft_vp0);
}

/*
 * The running UT parks until `deadline` and a lower-priority UT will run
 * meanwhile: bring the tick forward to the deadline if it would come later,
 * so that the sleeper takes the processor when its time comes rather than at
 * the next slice boundary (up to a whole slice late).  Equal and lower
 * priorities are left alone: their wake-up would not preempt anyway.
 */
void __weft_preempt_deadline(int64_t deadline)
{
	struct vp *vp = &__weft_vp0;
	if (vp->tick_mode == TICK_OFF || deadline >= tick_due)
		return;
	int hp = __weft_highest_ready();
	if (hp < 0 || hp >= (int)vp->cur->prio)
		return;
	timer_set((uint64_t)deadline, vp->tick_mode == TICK_PERIODIC ? slice_ns : 0, true);
}

/* ---- the handler --------------------------------------------------------- */

static bool ras_rollback(ucontext_t *uc)
{
	uintptr_t pc = __weft_arch_pc(uc);
	unsigned n = nras;
	for (unsigned i = 0; i < n; i++) {
		if (pc > ras[i].lo && pc < ras[i].hi) {
			__weft_arch_set_pc(uc, ras[i].lo);
			return true;
		}
	}
	return false;
}

/* Does the running UT have to give way now? */
static bool switch_wanted(struct vp *vp, int64_t now)
{
	const struct ut *cur = vp->cur;
	int hp = __weft_highest_ready();
	if (__weft_timers_pending() && __weft_timers_next() <= now)
		return true;
	if (hp > (int)cur->prio)
		return true;
	return hp == (int)cur->prio && cur->policy != SCHED_FIFO && vp->ticks != vp->cur_since;
}

/* Only the running UT and sleepers: tick at the next deadline, or not at all. */
static void retune_tick(struct vp *vp)
{
	if (vp->nready)
		return;
	if (__weft_timers_pending()) {
		timer_set((uint64_t)__weft_timers_next(), 0, true);
		vp->tick_mode = TICK_ONESHOT;
	} else {
		tick_off(vp);
	}
}

static bool stack_has_room(const struct ut *t, uintptr_t sp)
{
	if (sp >= altstack_lo && sp < altstack_hi)
		return false;                 /* inside a handler on our alt stack */
	if (sp > (uintptr_t)t->stack.lo && sp <= (uintptr_t)t->stack.hi)
		return sp - (uintptr_t)t->stack.lo > __weft_arch_fake_call_depth();
	return true;                          /* a stack the program manages itself */
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	struct vp *vp = &__weft_vp0;
	int saved_errno = errno;
	vp->ticks++;
	vp->stat.ticks++;
	tick_due = vp->tick_mode == TICK_PERIODIC ? __weft_now() + (int64_t)slice_ns : INT64_MAX;
	if (vp->dispatch_pending)
		vp->stat.retries++;
	if (nras && ras_rollback(uc))
		vp->stat.ras_rollbacks++;
	struct ut *cur = vp->cur;
	if (!cur || cur->state != UT_RUNNING)
		goto out;
	int64_t now = __weft_now();
	if (!switch_wanted(vp, now)) {
		vp->dispatch_pending = 0;
		retune_tick(vp);
		goto out;
	}
	uintptr_t pc = __weft_arch_pc(uc);
	if (pc_protected(pc) || !stack_has_room(cur, __weft_arch_sp(uc))) {
		vp->dispatch_pending = 1;
		vp->stat.deferrals++;
		/* retry soon rather than a whole slice later */
		uint64_t retry = slice_ns / 8 > MIN_SLICE_NS ? slice_ns / 8 : MIN_SLICE_NS;
		timer_set(retry, slice_ns, false);
		vp->tick_mode = TICK_PERIODIC;
		goto out;
	}
	vp->stat.preemptions++;
	__weft_arch_fake_call(uc);
out:
	errno = saved_errno;
}

/* Called by the trampoline (a fake call) or at a dispatch point: the UT is
 * at a place where it could have called sched_yield itself. */
void __weft_preempted(void)
{
	struct vp *vp = &__weft_vp0;
	vp->dispatch_pending = 0;
	if (__weft_timers_pending())
		__weft_timers_run(__weft_now());
	struct ut *cur = vp->cur;
	int hp = __weft_highest_ready();
	if (hp > (int)cur->prio)
		__weft_preempt_check();
	else if (hp == (int)cur->prio && cur->policy != SCHED_FIFO)
		__weft_rotate();
	/* Asynchronously cancelled while switched out: act on return. */
	if (unlikely(vp->async_cancel))
		__weft_cancel_async_point();
}

/* ---- set-up -------------------------------------------------------------- */

static bool cpu_has_xsave(void)
{
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	return (c >> 27) & 1;             /* OSXSAVE: xsave usable by user code */
}

/* Weft must be a shared object of its own for the address-range test: when
 * it is linked statically into the program, its text cannot be told from
 * the program's, so slicing stays off. */
static bool weft_is_own_object(void)
{
	Dl_info self, prog;
	if (!dladdr((void *)weft_is_own_object, &self) || !self.dli_fbase)
		return false;
	void *main_sym = dlsym(RTLD_DEFAULT, "main");
	if (main_sym && dladdr(main_sym, &prog) && prog.dli_fbase == self.dli_fbase)
		return false;
	return self.dli_fname && strstr(self.dli_fname, ".so") != NULL;
}

void __weft_preempt_init(void)
{
	struct vp *vp = &__weft_vp0;
	tick_signal = __weft_env_preempt_signal();
	if (!cpu_has_xsave() || !weft_is_own_object())
		return;
	__weft_xsave_size = __weft_arch_xsave_size();
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
		altstack_lo = (uintptr_t)ss.ss_sp;
		altstack_hi = altstack_lo + ss.ss_size;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(tick_signal, &sa, NULL) != 0)
		return;
	slicing_possible = true;
	slice_ns = __weft_env_timeslice_ns();
	vp->preempt_on = slice_ns != 0;
}

/* ---- public -------------------------------------------------------------- */

EXPORT int weft_timeslice_set(uint64_t ns)
{
	__weft_ensure();
	struct vp *vp = &__weft_vp0;
	if (ns && ns < MIN_SLICE_NS)
		return EINVAL;
	if (ns && !slicing_possible)
		return ENOTSUP;
	slice_ns = ns;
	vp->preempt_on = ns != 0;
	if (!vp->preempt_on)
		tick_off(vp);
	else if (vp->tick_mode == TICK_PERIODIC)
		timer_set(slice_ns, slice_ns, false);
	else if (vp->nready)
		__weft_preempt_arm_slow();
	return 0;
}

EXPORT uint64_t weft_timeslice_get(void)
{
	__weft_ensure();
	return __weft_vp0.preempt_on ? slice_ns : 0;
}

EXPORT int weft_ras_register(const void *begin, const void *end)
{
	if (!begin || !end || (uintptr_t)end <= (uintptr_t)begin)
		return EINVAL;
	__weft_ensure();
	unsigned n = nras;
	for (unsigned i = 0; i < n; i++)
		if (ras[i].lo == (uintptr_t)begin && ras[i].hi == (uintptr_t)end)
			return 0;
	if (n == MAX_RAS)
		return EAGAIN;
	ras[n].lo = (uintptr_t)begin;
	ras[n].hi = (uintptr_t)end;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	nras = n + 1;
	return 0;
}
