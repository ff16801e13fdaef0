/*
 * preempt.c — time slicing: the tick, safe points and fake calls.
 *
 * A per-VP POSIX timer (timer_create, SIGEV_THREAD_ID) sends the preemption
 * signal to the VP's kernel thread every time slice, but only while
 * preemption can matter: it is armed when a UT becomes ready behind the
 * running one (sched.c calls __weft_preempt_arm), turned into a one-shot at
 * the next deadline when only sleepers are left, and stopped when the VP
 * stays idle past its idle loop's first pass (__weft_preempt_idle says why
 * not at once) or nothing but the running UT exists.
 *
 * The signal contract for the tick handler (docs/architecture.md):
 *   1. Before it reads anything of the scheduler, it decides from the
 *      interrupted PC and stack pointer alone whether the UT may be
 *      interrupted: not inside a restartable sequence (rolled back first),
 *      not in Weft's text, libc, the dynamic loader, the vDSO, libgcc or a
 *      WEFT_NOPREEMPT library (Marovich's address-range test, Bershad's
 *      user-level detection), not inside a program signal handler that runs
 *      over such code (signal.c's noswitch mark), and with room on the UT's
 *      stack for the trampoline.  What it reads for that is published:
 *      the range table and the RAS table are built off to the side and made
 *      visible by one store, and never changed or freed afterwards; the
 *      noswitch mark is written only by handlers on this kernel thread.
 *   2. Protected: it sets dispatch_pending (acted on by the next epilogue)
 *      and arms the retry timer, which only handlers touch.  A retry that
 *      finds dispatch_pending clear is dropped (acted on already): it
 *      reads that one byte, written by the tick and cleared by the
 *      mainline on this kernel thread.
 *   3. Not protected: the runtime's state is whole (the mainline is in the
 *      program's code), and the handler makes a fake call (Mueller) into the
 *      arch trampoline, which saves every register and calls
 *      __weft_preempted on the UT's stack.  Everything else — running
 *      timers, choosing whether to switch, retuning the tick — happens
 *      there, on the mainline, at a point where the UT could have called
 *      sched_yield itself.
 * The handler writes only vp->async (its counters, retry_armed and
 * unknown_pc), dispatch_pending and the interrupted context.  (A fake call
 * from code no object of the table held sets dispatch_pending on the
 * mainline too, when a rebuilt table protects that code: see
 * late_code_protected.)  The tick timer is
 * programmed only by the mainline, the retry timer only by the handler, so
 * neither is ever raced.  Because Weft's text is one region that is never
 * interrupted midway, the runtime and the sync fast paths need no lock
 * prefix and no flag in M:1.
 *
 * The tick's cost: a timer signal costs ~20-30 µs of CPU on this VM (timer
 * virtualisation), ~2 µs on bare metal.  Slicing faster than a few times that
 * spends the processor on ticks, so the first time slicing starts, the
 * tick's latency is measured and the slice in force is never below
 * SLICE_COST_FACTOR times it (capped at SLICE_FLOOR_CAP_NS).
 */
#include "rt.h"
#include "../arch/arch.h"
#include "weft.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>

#define MAX_RANGES 64
#define MAX_KNOWN 256
#define MAX_RAS 32
#define MIN_SLICE_NS 10000ull
#define SLICE_COST_FACTOR 4
#define SLICE_FLOOR_CAP_NS 100000ull
#define CALIBRATION_SAMPLES 3

enum { TIMER_TICK = 1, TIMER_RETRY = 2, TIMER_KICK = 3, TIMER_CANCEL = 4 };   /* sigev_value of each timer; a kick's */

struct range {
	uintptr_t lo, hi;
};

/* A published table: filled completely, then made current by one release
 * store; never modified or freed afterwards (about 5 KiB per scan that
 * found new libraries: a signal handler may be reading the old one). */
struct range_table {
	unsigned n, nweft;            /* r[0..nweft) is Weft's own text */
	struct range r[MAX_RANGES];
	/* The executable segments of every object loaded at the scan,
	 * protected or not (the program's own included): a PC in none of
	 * them is in code loaded since (glibc loads libgcc_s itself for
	 * backtrace and for unwinding, NSS and iconv modules, past Weft's
	 * dlopen wrapper) or in code no object holds (a JIT's).  Only
	 * complete when all fitted (known_all); a table without it never
	 * calls a PC unknown. */
	unsigned nknown;
	bool known_all;
	struct range known[MAX_KNOWN];
};
static struct range_table *volatile ranges;
/*
 * Readers inside a table now (__weft_pc_unknown, __weft_pc_protected,
 * __weft_pc_in_weft: signal handlers on any kernel thread, the monitor).
 * A reader counts itself in, then loads `ranges`; it reads nothing of the
 * table after it counts itself out.  The rebuilder publishes the new
 * table, then waits until it sees no reader at all, and frees the old one:
 * both sides sequentially consistent, so a reader whose count the
 * rebuilder did not see loads the new table (its load follows the store in
 * the one order), and one it did see is gone once the count reads 0.  A
 * reader is a bounded loop over at most MAX_KNOWN entries that neither
 * blocks nor calls out; one on the rebuilder's own kernel thread (a
 * handler that interrupts the wait) ends before the wait goes on.  Before,
 * no table was ever freed: ~5 KiB per load a program made (a plugin
 * loaded and unloaded in a loop grew without bound).
 */
static uint32_t range_readers;

static inline const struct range_table *ranges_enter(void)
{
	__atomic_add_fetch(&range_readers, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&ranges, __ATOMIC_SEQ_CST);
}

static inline void ranges_leave(void)
{
	__atomic_sub_fetch(&range_readers, 1, __ATOMIC_RELEASE);
}
static unsigned long long ranges_adds = ~0ull;    /* dl_iterate_phdr generation seen */

/* Restartable sequences: entries are written before nras counts them. */
static struct range ras[MAX_RAS];
static volatile unsigned nras;

/* Mainline-owned (set up once). */
static int tick_signal;
static uint64_t slice_req_ns;         /* what the program asked for */
static uint64_t slice_ns;             /* in force: never below slice_floor_ns */
static uint64_t slice_floor_ns;       /* 0 until measured; then the retry delay's floor too */
static bool slice_from_env;           /* the request came from WEFT_TIMESLICE */
static bool slicing_possible;         /* CPU, library placement and settings allow it */

/* The carrier's timers: each kernel thread has its own pair, targeted at
 * it, programmed only by its mainline while it carries the VP (rt.h). */
static inline struct kt_timers *timers(void) { return &__weft_vp()->carrier->timers; }

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
	uintptr_t self_base;          /* libweft.so's base; 0 when linked into the program */
	bool weft_pass;               /* first pass: Weft's own object only */
	struct range_table *table;
};

/* Weft's text when libweft.a is linked into the program (text_begin.S). */
extern const char __weft_text_begin[] HIDDEN, __weft_text_end[] HIDDEN;

static void add_range(struct range_table *t, uintptr_t lo, uintptr_t hi)
{
	if (t->n < MAX_RANGES && lo < hi) {
		t->r[t->n].lo = lo;
		t->r[t->n].hi = hi;
		t->n++;
	}
}

/* The program's PLT stubs: a statically linked Weft calls libc through
 * them, in the middle of its own work.  Read from the program's section
 * headers (mainline, once per table), into the heap: a rebuild may run on
 * a UT's stack (a fake call's, late_code_protected), which may be 16 KiB,
 * and the headers and their names were 36 KiB of frame. */
static void add_program_plt(struct range_table *t)
{
	struct plt_scratch {
		ElfW(Shdr) sh[512];
		char names[4096];
	} *x = malloc(sizeof *x);
	if (!x)
		return;
	int fd = (int)__weft_kopen("/proc/self/exe", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		free(x);
		return;
	}
	ElfW(Ehdr) eh;
	uintptr_t base = 0;
	for (struct link_map *m = _r_debug.r_map; m; m = m->l_next)
		if (!m->l_name || !m->l_name[0]) {
			base = m->l_addr;
			break;
		}
	if (__weft_kpread(fd, &eh, sizeof eh, 0) == (long)sizeof eh && eh.e_shentsize == sizeof(ElfW(Shdr)) &&
	    eh.e_shnum < 512) {
		ElfW(Shdr) *sh = x->sh;
		size_t len = (size_t)eh.e_shnum * sizeof sh[0];
		ElfW(Shdr) strsec;
		if (__weft_kpread(fd, sh, len, (long)eh.e_shoff) == (long)len && eh.e_shstrndx < eh.e_shnum) {
			strsec = sh[eh.e_shstrndx];
			char *names = x->names;
			size_t nlen = strsec.sh_size < sizeof x->names - 1 ? strsec.sh_size : sizeof x->names - 1;
			if (__weft_kpread(fd, names, nlen, (long)strsec.sh_offset) == (long)nlen) {
				names[nlen] = 0;
				for (int i = 0; i < eh.e_shnum; i++) {
					if (sh[i].sh_name >= nlen)
						continue;
					const char *nm = names + sh[i].sh_name;
					if (strcmp(nm, ".plt") == 0 || strcmp(nm, ".plt.sec") == 0 ||
					    strcmp(nm, ".plt.got") == 0)
						add_range(t, base + sh[i].sh_addr, base + sh[i].sh_addr + sh[i].sh_size);
				}
			}
		}
	}
	__weft_kclose(fd);
	free(x);
}

static void add_known(struct range_table *t, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (t->nknown == MAX_KNOWN) {
			t->known_all = false;
			return;
		}
		t->known[t->nknown].lo = info->dlpi_addr + ph->p_vaddr;
		t->known[t->nknown].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		t->nknown++;
	}
}

static void add_text(struct range_table *t, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum && t->n < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		t->r[t->n].lo = info->dlpi_addr + ph->p_vaddr;
		t->r[t->n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		t->n++;
	}
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *sc = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	bool weft = info->dlpi_addr == sc->self_base && name[0];
	if (sc->weft_pass) {
		if (weft && sc->self_base)
			add_text(sc->table, info);
		return 0;
	}
	add_known(sc->table, info);
	if (weft)
		return 0;
	bool protect = false;
	for (const char **p = default_nopreempt; !protect && *p; p++)
		protect = name[0] && name_matches(name, *p);
	if (!protect)
		protect = name[0] && in_list(name, __weft_cfg()->nopreempt);
	/* The vDSO has an empty name in some glibc versions: recognise it by
	 * its address, which getauxval knows. */
	if (!protect && !name[0] && info->dlpi_addr)
		protect = (uintptr_t)info->dlpi_addr == (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (protect)
		add_text(sc->table, info);
	return 0;
}

static bool weft_is_own_object(void);

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* (Re)build the table when objects were loaded since the last scan; runs
 * on the mainline (dl_iterate_phdr takes the loader's lock).  A table that
 * cannot be allocated leaves the old one in force.
 * Lock order: never under the runtime lock (M:N).  Code that runs inside a
 * dl_iterate_phdr callback, holding the loader's lock, may make a wrapped
 * call, which takes the runtime lock (ThreadSanitizer's symboliser closes
 * and reads files there; so may a crash handler's unwinder): a VP that
 * waited for the loader's lock while holding the runtime lock deadlocked
 * the process with it.  So under M:N the table is rebuilt by the dlopen
 * wrappers (__weft_preempt_modules_changed, outside every Weft lock) and
 * not when the tick is armed.  refresh_lock serialises rebuilders (two
 * UTs' dlopens on two VPs); the table itself is published by the store
 * below and read by signal handlers (__weft_pc_protected), and the old one
 * freed once no reader is inside a table (range_readers, above). */
static uint32_t refresh_lock;

static void refresh_ranges(void)
{
	while (__atomic_exchange_n(&refresh_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	unsigned long long adds = 0;
	dl_iterate_phdr(count_adds, &adds);
	struct range_table *next = adds == ranges_adds ? NULL : calloc(1, sizeof *next);
	if (!next) {
		__atomic_store_n(&refresh_lock, 0, __ATOMIC_RELEASE);
		return;
	}
	struct scan sc = { 0, true, next };
	if (weft_is_own_object()) {
		Dl_info di;
		if (dladdr((void *)refresh_ranges, &di) && di.dli_fbase)
			sc.self_base = (uintptr_t)di.dli_fbase;
		dl_iterate_phdr(add_object, &sc);
	} else {
		add_range(next, (uintptr_t)__weft_text_begin, (uintptr_t)__weft_text_end);
		add_program_plt(next);
	}
	next->nweft = next->n;
	sc.weft_pass = false;
	next->known_all = true;
	dl_iterate_phdr(add_object, &sc);
	struct range_table *old = ranges;
	__atomic_store_n(&ranges, next, __ATOMIC_SEQ_CST);
	ranges_adds = adds;
	if (old) {
		while (__atomic_load_n(&range_readers, __ATOMIC_SEQ_CST))
			__builtin_ia32_pause();
		free(old);
	}
	__atomic_store_n(&refresh_lock, 0, __ATOMIC_RELEASE);
}

void __weft_preempt_modules_changed(void)
{
	refresh_ranges();
}

/* pc lies in code the table has no object for (above): loaded since the
 * scan, or a JIT's.  The tick handler asks, after the protected test;
 * signal delivery too (signal.c: a handler there may not switch).
 * Published like __weft_pc_protected: safe from any handler. */
bool __weft_pc_unknown(uintptr_t pc)
{
	const struct range_table *t = ranges_enter();
	bool unknown = t && t->known_all;
	for (unsigned i = 0; unknown && i < t->nknown; i++)
		if (pc >= t->known[i].lo && pc < t->known[i].hi)
			unknown = false;
	ranges_leave();
	return unknown;
}

bool __weft_pc_protected(uintptr_t pc)
{
	const struct range_table *t = ranges_enter();
	bool protected = !t;          /* not scanned yet: be safe */
	for (unsigned i = 0; !protected && i < t->n; i++)
		if (pc >= t->r[i].lo && pc < t->r[i].hi)
			protected = true;
	ranges_leave();
	return protected;
}

/* Before the first table exists (start-up), "no": signal.c then runs
 * handlers at once with switching off, as for libc. */
bool __weft_pc_in_weft(uintptr_t pc)
{
	const struct range_table *t = ranges_enter();
	bool in = false;
	for (unsigned i = 0; t && !in && i < t->nweft; i++)
		if (pc >= t->r[i].lo && pc < t->r[i].hi)
			in = true;
	ranges_leave();
	return in;
}

int __weft_tick_signal(void) { return slicing_possible ? tick_signal : 0; }

/* ---- the timers ---------------------------------------------------------- */

static void itimer(struct itimerspec *its, uint64_t first_ns, uint64_t interval_ns)
{
	its->it_value.tv_sec = (time_t)(first_ns / 1000000000u);
	its->it_value.tv_nsec = (long)(first_ns % 1000000000u);
	its->it_interval.tv_sec = (time_t)(interval_ns / 1000000000u);
	its->it_interval.tv_nsec = (long)(interval_ns % 1000000000u);
}

/* The kernel's POSIX timers, by system call: Weft exports timer_create
 * and its family for the program (posix/timer_thread.c); the tick's are
 * the kernel's own, made and armed from any kernel thread or handler. */
static int ktimer_settime(timer_t t, int flags, const struct itimerspec *its, struct itimerspec *old)
{
	long r = __weft_raw_syscall6(SYS_timer_settime, (long)(intptr_t)t, flags, (long)its, (long)old, 0, 0);
	return r < 0 ? -1 : 0;
}

static void ktimer_delete(timer_t t)
{
	__weft_raw_syscall6(SYS_timer_delete, (long)(intptr_t)t, 0, 0, 0, 0, 0);
}

/* Program the tick timer (mainline only). */
static void tick_set(uint64_t first_ns, uint64_t interval_ns, bool absolute)
{
	struct kt_timers *tt = timers();
	struct itimerspec its;
	itimer(&its, first_ns, interval_ns);
	ktimer_settime(tt->tick, absolute ? TIMER_ABSTIME : 0, &its, NULL);
	tt->first = first_ns == 0 ? INT64_MAX
				  : absolute ? (int64_t)first_ns : __weft_now() + (int64_t)first_ns;
	tt->interval = interval_ns;
}

/* When the tick timer fires next, as the mainline programmed it. */
static int64_t tick_due(int64_t now)
{
	const struct kt_timers *tt = timers();
	if (tt->first == INT64_MAX || tt->first > now || !tt->interval)
		return tt->first > now ? tt->first : INT64_MAX;
	uint64_t k = (uint64_t)(now - tt->first) / tt->interval + 1;
	return tt->first + (int64_t)(k * tt->interval);
}

static void tick_off(struct vp *vp)
{
	if (vp->tick_mode == TICK_OFF)
		return;
	tick_set(0, 0, false);
	vp->tick_mode = TICK_OFF;
}

static bool make_timer(timer_t *t, int which, pid_t tid)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = tick_signal;
	sev.sigev_value.sival_int = which;
	sev._sigev_un._tid = tid;
	int kid;
	if (__weft_raw_syscall6(SYS_timer_create, CLOCK_MONOTONIC, (long)&sev, (long)&kid, 0, 0, 0) != 0)
		return false;
	*t = (timer_t)(intptr_t)kid;
	return true;
}

/* ---- the handler --------------------------------------------------------- */

static volatile int calibrating;      /* the tick's cost is being measured */
static volatile int64_t calib_seen;

static bool is_tick(const siginfo_t *si)
{
	if (si->si_code == SI_QUEUE)     /* a kick (handoff.c, cancel.c), from this process */
		return (si->si_value.sival_int == TIMER_KICK || si->si_value.sival_int == TIMER_CANCEL) &&
		       si->si_pid == getpid();
	return si->si_code == SI_TIMER &&
	       (si->si_value.sival_int == TIMER_TICK || si->si_value.sival_int == TIMER_RETRY);
}

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

/* Room below sp for the trampoline's frame and the scheduler.  Read only
 * once the PC is known to be outside Weft: cur and its stack are stable.
 * Off the UT's stack, sp is on a stack the program manages itself (its own
 * coroutines: fine) or on the kernel thread's alternate signal stack, where
 * a program handler runs: switching there would let the next UT's signals
 * overwrite its frames, so not there (one sigaltstack query, off the usual
 * path). */
static bool stack_has_room(const struct ut *t, uintptr_t sp)
{
	if (sp > (uintptr_t)t->stack.lo && sp <= (uintptr_t)t->stack.hi)
		return sp - (uintptr_t)t->stack.lo > __weft_arch_fake_call_depth();
	stack_t ss;
	if (__weft_raw_syscall6(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) != 0)
		return false;
	if (ss.ss_flags & SS_DISABLE)
		return true;
	return sp <= (uintptr_t)ss.ss_sp || sp > (uintptr_t)ss.ss_sp + ss.ss_size;
}

/* for_signals: a retry for deferred signals alone uses the floor, not an
 * eighth of the slice: a handler is owed now, and the UT is most likely
 * back in its own code within a few µs (a 10 ms slice's 1.25 ms retries,
 * each meeting the PC in libc's clock_gettime, kept one 93 ms late) */
static void arm_retry_for(struct vp *vp, bool for_signals)
{
	(void)vp;
	struct kt_timers *tt = timers();
	if (tt->retry_armed || !tt->made)
		return;
	/* soon, but never so soon that retries cost more than the work: a
	 * long stay in libc would otherwise draw a tick every few µs */
	uint64_t retry = !for_signals && slice_ns / 8 > slice_floor_ns ? slice_ns / 8 : slice_floor_ns;
	if (retry < MIN_SLICE_NS)
		retry = MIN_SLICE_NS;
	struct itimerspec its;
	itimer(&its, retry, 0);
	if (ktimer_settime(tt->retry, 0, &its, NULL) == 0)
		tt->retry_armed = 1;
}

static void arm_retry(struct vp *vp)
{
	arm_retry_for(vp, false);
}

/* Arm k's retry timer (k's own handler, or k going home: no carrier's). */
static void arm_retry_kt(struct kt_timers *tt, uint64_t ns)
{
	if (tt->retry_armed || !tt->made)
		return;
	struct itimerspec its;
	itimer(&its, ns, 0);
	if (ktimer_settime(tt->retry, 0, &its, NULL) == 0)
		tt->retry_armed = 1;
}

/*
 * A tick or kick on a kernel thread whose UT the monitor took off the VP
 * (monitor.c): it runs the UT's code beside the VP.  At a safe point, a
 * fake call sends it home (the trampoline's entry finds it away); in
 * protected code, its own retry timer tries again soon.  Reads only its
 * own kt (found by tid in a list that never shrinks) and the UT's stack.
 */
static void away_tick(pid_t me, ucontext_t *uc, const siginfo_t *si)
{
	struct kt *k = __weft_kt_by_tid(me);
	struct ut *x = k ? __atomic_load_n(&k->away, __ATOMIC_ACQUIRE) : NULL;
	if (!x)
		return;
	if (si->si_value.sival_int == TIMER_RETRY)
		k->timers.retry_armed = 0;
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	if (__weft_pc_protected(pc) || !stack_has_room(x, sp)) {
		/* On a syscall instruction: the kernel restarts the call this
		 * signal interrupted (or k is about to make one), and k sleeps
		 * in it again.  A retry would only wake it again, soon and
		 * forever; the monitor kicks k once it runs (monitor.c). */
		if (!__weft_arch_at_syscall(uc))
			arm_retry_kt(&k->timers, slice_floor_ns ? slice_floor_ns : MIN_SLICE_NS);
		return;
	}
	/* code in no object the table knew: the fake call asks again once
	 * the table is rebuilt (away_late_code_protected) */
	k->timers.unknown_pc = __weft_pc_unknown(pc) ? pc : 0;
	__weft_arch_fake_call(uc);
}

/*
 * A cancel kick on a kernel thread away from the VP whose UT waits in one
 * of libc's own cancellable system calls (stdio's read and write, ...),
 * which glibc marks by setting CANCELTYPE in THREAD_SELF's cancelhandling
 * around the call (LIBC_CANCEL_ASYNC).  The call, one the kernel is about
 * to restart, is not made again — it returns EINTR — and a fake call sends the
 * UT home, where the trampoline acts on the request
 * (__weft_preempt_trampoline_body); the unwind goes through libc's frames
 * as NPTL's does from its cancel signal's handler.  The mark is taken off
 * here: the word is the VP's (its UTs share THREAD_SELF) and libc's reset
 * after the call will not run.  Reads its own kt, the UT's cancel bits and
 * the word; writes the UT's libc_cancel (the UT is away: nobody else
 * does).
 */
/* The system calls glibc 2.36 makes as cancellation points (SYSCALL_CANCEL)
 * among those the kernel restarts after a handler (ERESTARTSYS): the rest
 * end with EINTR and show no number. */
static bool libc_cancellable_call(long nr, long a2)
{
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_readv: case SYS_writev:
	case SYS_pread64: case SYS_pwrite64: case SYS_preadv: case SYS_pwritev:
	case SYS_preadv2: case SYS_pwritev2: case SYS_open: case SYS_openat: case SYS_creat:
	case SYS_close: case SYS_wait4: case SYS_waitid: case SYS_accept: case SYS_accept4:
	case SYS_connect: case SYS_recvfrom: case SYS_sendto: case SYS_recvmsg: case SYS_sendmsg:
	case SYS_recvmmsg: case SYS_sendmmsg: case SYS_msgrcv: case SYS_msgsnd: case SYS_fsync:
	case SYS_fdatasync: case SYS_msync: case SYS_mq_timedsend: case SYS_mq_timedreceive:
		return true;
	case SYS_fcntl:
		return a2 == F_SETLKW || a2 == F_OFD_SETLKW;
	case SYS_ioctl:
		return a2 == TCSBRK;              /* tcdrain */
	default:
		return false;
	}
}

static void away_cancel(ucontext_t *uc)
{
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct kt *k = __weft_kt_by_tid(me);
	struct ut *x = k ? __atomic_load_n(&k->away, __ATOMIC_ACQUIRE) : NULL;
	/* a call Weft made cancellable ends on its own (csys_stop, or the
	 * EINTR that aio.c's slices look at) */
	if (!x || !__weft_cancel_due(x) || __atomic_load_n(&x->csys_tid, __ATOMIC_ACQUIRE))
		return;
	volatile int *ch = __weft_tls_glibc_cancelhandling();
	if (!ch || !(__atomic_load_n(ch, __ATOMIC_RELAXED) & GLIBC_CANCELTYPE))
		return;
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	if (__weft_pc_in_weft(pc) || !stack_has_room(x, sp))
		return;
	/* The mark is the VP's: another UT of it may have set it, and libc
	 * marks its cancellable futex waits too (aio_suspend's), whose unwind
	 * from inside would leave its wait lists and locks half done.  So only
	 * a call the kernel restarts, whose number shows, and one of the I/O
	 * calls libc makes cancellable; one that ended with EINTR (its number
	 * gone) goes back to libc, which returns it (EINTR is a cancellation
	 * point's to give), and the monitor's next kick tries again. */
	long nr, a2;
	if (!__weft_arch_restarting(uc, &nr, &a2) || !libc_cancellable_call(nr, a2))
		return;
	__weft_arch_skip_restart(uc);
	__atomic_and_fetch(ch, ~GLIBC_CANCELTYPE, __ATOMIC_RELAXED);
	x->libc_cancel = 1;
	__weft_arch_fake_call(uc);
}

void __weft_preempt_kick_away(struct kt *k)
{
	if (slicing_possible)
		__weft_sigqueue_tid(k->tid, tick_signal, (union sigval){ .sival_int = TIMER_KICK });
}

void __weft_preempt_cancel_kick(pid_t tid)
{
	if (slicing_possible)
		__weft_sigqueue_tid(tid, tick_signal, (union sigval){ .sival_int = TIMER_CANCEL });
}

void __weft_preempt_away_done(struct kt *k)
{
	struct kt_timers *tt = &k->timers;
	if (tt->made && tt->retry_armed) {
		struct itimerspec zero;
		memset(&zero, 0, sizeof zero);
		ktimer_settime(tt->retry, 0, &zero, NULL);
	}
	tt->retry_armed = 0;
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno;
	if (!is_tick(si)) {
		/* the program's own signal of the same number */
		__weft_signal_forward(sig, si, ucv);
		goto out;
	}
	/* pthread_cancel's kick: it ends this kernel thread's cancellable
	 * call (handoff.c: the context and the bits %rbx names there), or
	 * libc's own one while away (away_cancel), or finds nothing to do;
	 * it never preempts */
	if (si->si_value.sival_int == TIMER_CANCEL) {
		if (!__weft_arch_csys_stop(uc))
			away_cancel(uc);
		goto out;
	}
	if (calibrating) {
		calib_seen = __weft_now();
		goto out;
	}
	struct vp *vp = __weft_vp();
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	/* The monitor may be deciding to take the VP from this very kernel
	 * thread, which the signal woke: wait for the decision (monitor.c).
	 * The decision waits for nothing this thread may hold (a lock of
	 * libc's, taken once it woke): its spare is in hand before, and the
	 * runtime lock is only tried. */
	while (__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE) & TAKE_BUSY)
		__builtin_ia32_pause();
	/* Only the carrier acts: a tick or kick that reaches a kernel thread
	 * which has handed the VP on (or one in transit, tid 0) is stale,
	 * unless that kernel thread's UT was taken away from the VP. */
	if (__atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE) != me) {
		away_tick(me, uc, si);
		goto out;
	}
	/* A signal made due for the running UT while it makes a kept
	 * blocking call (M:N: sent from another VP, whose kick this is): the
	 * call ends with EINTR, as the dispatcher ends it for a signal from
	 * the kernel (signal.c), and counts as the program's (handoff.c,
	 * eintr_is_weft): its wrapper runs the handler and makes the call
	 * again if the kernel would have. */
	if (vp->kept_call && vp->cur && vp->cur->sig_ready && __weft_arch_csys_interrupt(uc)) {
		vp->async.caught++;
		goto out;
	}
	bool retry = si->si_value.sival_int == TIMER_RETRY;
	/* a retry for deferred signals alone (signal.c, defer): it looks for
	 * a safe point to deliver them at, and is no tick (it rotates nothing:
	 * __weft_preempted rotates only when ticks moved) */
	bool signals_only = false;
	if (retry) {
		timers()->retry_armed = 0;
		/* a retry is only for a deferred tick not yet acted on; once
		 * an epilogue has acted (and maybe switched), it would cut
		 * the next UT's slice to a retry's length */
		if (!vp->dispatch_pending) {
			if (!vp->deferred.pending)
				goto out;
			signals_only = true;
		}
	}
	if (!signals_only)
		vp->async.ticks++;
	if (vp->idle)
		goto out;              /* asleep in the idle loop: nothing runs */
	if (vp->dispatch_pending)
		vp->async.retries++;
	if (nras && ras_rollback(uc))
		vp->async.ras_rollbacks++;
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	/* deferred signals, outside Weft: back to the kernel, which hands
	 * them to dispatch as sigreturn restores this context (signal.c) */
	if (signals_only && !vp->in_weft && !__weft_pc_in_weft(pc) && __weft_sig_redispatch(vp, uc))
		goto out;
	/* in_weft: Weft's code is under way further up this stack, in a call
	 * out to code that is neither Weft's nor libc's (its malloc reaching
	 * jemalloc): a switch there would end the call's hold on the VP (and
	 * under M:N the runtime lock) in its middle, as at any PC of Weft's */
	if (__weft_pc_protected(pc) || vp->in_weft || __weft_noswitch_at(vp, sp) ||
	    !stack_has_room(vp->cur, sp)) {
		if (signals_only) {
			/* not yet: look again soon (a Weft call's epilogue
			 * may deliver them first; the retry then finds none) */
			arm_retry_for(vp, true);
			goto out;
		}
		vp->dispatch_pending = 1;
		vp->async.deferrals++;
		/* retry soon rather than a whole slice later.  While the tick is
		 * periodic, one retry per tick is enough (the next tick is at
		 * most a slice away), so a UT that lives in libc draws at most
		 * two ticks per slice; a one-shot tick has no successor, so its
		 * retries go on until one finds the PC free. */
		if (!retry || vp->tick_mode != TICK_PERIODIC)
			arm_retry(vp);
		goto out;
	}
	vp->async.fake_calls++;
	/* code loaded since the scan may be a protected library's: the
	 * trampoline looks again with a new table before it switches, and
	 * defers if it is (late_code_protected); the retry such a deferral
	 * needs is armed here, where the retry timer is programmed (one that
	 * finds the deferral did not happen is dropped, above) */
	vp->async.unknown_pc = __weft_pc_unknown(pc) ? pc : 0;
	if (unlikely(vp->async.unknown_pc))
		arm_retry(vp);
	__weft_arch_fake_call(uc);
out:
	errno = saved_errno;
}

/* ---- the mainline's side ------------------------------------------------- */

/* The tick's latency on this machine: a timer armed 1 µs ahead, from arming
 * to the handler, best of a few.  Runs once, when slicing first starts. */
static void calibrate(void)
{
	int64_t best = INT64_MAX;
	calibrating = 1;
	for (int i = 0; i < CALIBRATION_SAMPLES; i++) {
		calib_seen = 0;
		int64_t t0 = __weft_now();
		struct itimerspec its;
		itimer(&its, 1000, 0);
		if (ktimer_settime(timers()->retry, 0, &its, NULL) != 0)
			break;
		while (!calib_seen && __weft_now() - t0 < 10000000)
			__asm__ volatile("" ::: "memory");
		if (calib_seen && calib_seen - t0 < best)
			best = calib_seen - t0;
	}
	calibrating = 0;
	uint64_t floor = best == INT64_MAX ? SLICE_FLOOR_CAP_NS : (uint64_t)best * SLICE_COST_FACTOR;
	if (floor < MIN_SLICE_NS)
		floor = MIN_SLICE_NS;
	if (floor > SLICE_FLOOR_CAP_NS)
		floor = SLICE_FLOOR_CAP_NS;
	slice_floor_ns = floor;
}

static void set_slice(uint64_t req)
{
	slice_req_ns = req;
	slice_ns = req && req < slice_floor_ns ? slice_floor_ns : req;
}

/* k's tick and retry timers, both or neither (errno says why not); `made`
 * published last, for k's handler may run on another kernel thread than
 * the maker (__weft_preempt_signals_installed). */
static bool make_kt_timers(struct kt *k)
{
	struct kt_timers *tt = &k->timers;
	if (!make_timer(&tt->tick, TIMER_TICK, k->tid))
		return false;
	if (!make_timer(&tt->retry, TIMER_RETRY, k->tid)) {
		int e = errno;
		ktimer_delete(tt->tick);
		errno = e;
		return false;
	}
	tt->first = INT64_MAX;
	__atomic_store_n(&tt->made, true, __ATOMIC_RELEASE);
	return true;
}

static bool timers_ready(struct vp *vp)
{
	struct kt_timers *tt = timers();
	if (tt->made)
		return true;
	/* A timer holds one of the user's queued-signal slots
	 * (RLIMIT_SIGPENDING): while another process of the same user has
	 * them all (a signal storm), timer_create says EAGAIN.  Slicing then
	 * waits for the next chance (the next UT made ready) instead of
	 * being given up for good; anything else turns it off. */
	if (!make_kt_timers(vp->carrier)) {
		if (errno != EAGAIN)
			vp->preempt_on = false;
		return false;
	}
	if (slice_floor_ns)
		return true;          /* measured once, on the first carrier */
	calibrate();
	uint64_t req = slice_req_ns;
	set_slice(req);
	if (slice_ns != req && slice_from_env)
		__weft_warn("weft: a %llu us time slice is below %d times this machine's tick cost; "
			    "slicing every %llu us instead",
			    (unsigned long long)req / 1000, SLICE_COST_FACTOR,
			    (unsigned long long)slice_ns / 1000);
	return true;
}

void __weft_preempt_arm_slow(void)
{
	struct vp *vp = __weft_vp();
	if (!timers_ready(vp))
		return;
	/* M:1 takes no runtime lock, so the loader's may be waited for here;
	 * under M:N the dlopen wrappers rebuild the table (refresh_ranges) */
	if (!__weft_mn)
		refresh_ranges();
	tick_set(slice_ns, slice_ns, false);
	vp->tick_mode = TICK_PERIODIC;
}

/* A handler of the program's is installed: its deferrals want the retry
 * timer (the comment above __weft_preempt_signal_deferred).  Set once,
 * never cleared, by sigaction on any VP's mainline; read by mainlines: a
 * new carrier's (__weft_preempt_carry, under the runtime lock under M:N,
 * which sigaction's loop over the carriers takes after setting it: a
 * carrier that read it unset is in that loop) and a fork's child's. */
static bool signal_retry_wanted;

void __weft_preempt_after_fork(void)
{
	struct vp *vp = __weft_vp();
	struct kt_timers *tt = timers();
	tt->made = false;
	tt->retry_armed = 0;
	tt->first = INT64_MAX;
	vp->tick_mode = TICK_OFF;
	/* readers and a rebuilder on the parent's other kernel threads are
	 * gone (the forking thread is neither: fork is no call of theirs);
	 * their counts would make the child's next rebuild wait for good */
	range_readers = 0;
	refresh_lock = 0;
	/* The child inherits the handlers but no timer: without its own, a
	 * signal deferred at a call's end waited there for the next Weft call
	 * (signal_deferred_at_call_end fork).  Two system calls a fork, and
	 * only in a program that installed a handler. */
	if (slicing_possible && signal_retry_wanted)
		timers_ready(vp);
}

/*
 * Deferred signals need a retry too.  A signal that arrives while the PC is
 * in Weft's text is deferred to the call's epilogue, and in the few
 * instructions after the call's last look at exit_hook, before its return
 * (in_weft still set, or cleared already; an M:1 fast path's end), that
 * epilogue has been and will not come again: the UT
 * goes on in its own code, the signal stays blocked in the kernel (signal.c,
 * context_mask), and with slicing off (WEFT_TIMESLICE=0, one UT ready) no
 * tick comes either.  A program that waited in a loop for its handler to
 * set a flag then waited for good (signal_over_late_loaded_library, debug
 * build, loaded: 36 runs in 40; signal_deferred_at_call_end).  So every
 * deferral arms this kernel thread's retry timer; the retry, finding the
 * PC outside Weft's text and no call under way, hands the signals back to
 * the kernel, which delivers them to dispatch there (signal.c,
 * __weft_sig_redispatch); else it tries again, or fakes a call at a safe
 * point whose epilogue delivers (on_tick, signals_only).  The
 * timers exist where slicing made them, and else once the program has
 * installed a handler (signal_retry_wanted): by sigaction itself for the
 * carrier of the caller's VP (under M:N every VP's carrier of the moment),
 * by each new carrier (__weft_preempt_carry) and by a fork's child
 * (__weft_preempt_after_fork).  A handler is never installed before the
 * runtime starts: sigaction and its kin start it (posix/sigaction.c;
 * signal_deferred_at_call_end preinit).  Without timers (timer_create
 * refused: EAGAIN) a deferred signal waits for the next epilogue.  No
 * timer for a signal let in by Weft's own change of the kernel mask
 * (signal.c, defer: in_kset).
 * Async: called from defer() in a handler on the carrier; reads the
 * carrier's timers (published by `made`) and arms the retry.
 */
void __weft_preempt_signal_deferred(struct vp *vp)
{
	if (slicing_possible)
		arm_retry_for(vp, true);
}

void __weft_preempt_signals_installed(void)
{
	signal_retry_wanted = true;
	if (!slicing_possible || !__weft_started)
		return;
	/* a Weft call of its own (sigaction is none): on the VP, under M:N
	 * with the runtime lock, as slicing makes them (arm_slow) */
	WEFT_CALL();
	if (__weft_call.on_vp != 1)
		return;
	timers_ready(__weft_vp());
	if (!__weft_mn)
		return;
	/* M:N: the other VPs' carriers of the moment (a UT migrates; the
	 * VPs that start later, or change hands, make theirs when they carry:
	 * __weft_preempt_carry).  Under the runtime lock, which a carrier's
	 * own timers_ready and every change of carrier hold too; a carrier's
	 * handler reads `made` (release: the timers are written before). */
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct kt *k = __weft_vps[i].carrier;
		if (k && !__atomic_load_n(&k->timers.made, __ATOMIC_ACQUIRE))
			make_kt_timers(k);
	}
}

/* This kernel thread has just been handed the VP (kthread.c): make its
 * timers now, on the mainline, so that its handler can arm a retry. */
void __weft_preempt_carry(void)
{
	struct vp *vp = __weft_vp();
	if (slicing_possible && (vp->preempt_on || signal_retry_wanted))
		timers_ready(vp);
}

/* k hands the VP on (handoff.c): neither of its timers may fire on a
 * kernel thread that no longer carries the VP, and the next carrier
 * starts with the tick off.  k's mainline, while it still carries. */
void __weft_preempt_release(struct kt *k)
{
	struct vp *vp = __weft_vp();
	struct kt_timers *tt = &k->timers;
	if (tt->made) {
		struct itimerspec zero;
		memset(&zero, 0, sizeof zero);
		if (vp->tick_mode != TICK_OFF)
			ktimer_settime(tt->tick, 0, &zero, NULL);
		if (tt->retry_armed)
			ktimer_settime(tt->retry, 0, &zero, NULL);
		tt->retry_armed = 0;
		tt->first = INT64_MAX;
	}
	vp->tick_mode = TICK_OFF;
	vp->dispatch_pending = 0;
}

/* k is about to end (a guest's kernel thread, guest.c), after it let the
 * VP go: its timers name its tid, which the kernel may give to another
 * thread, so they go too (a recycled kt makes new ones when it carries). */
void __weft_preempt_forget(struct kt *k)
{
	struct kt_timers *tt = &k->timers;
	if (!tt->made)
		return;
	ktimer_delete(tt->tick);
	ktimer_delete(tt->retry);
	tt->made = false;
	tt->retry_armed = 0;
	tt->first = INT64_MAX;
}

/*
 * A kernel thread queued a UT on the inbox (kthread.c's home loop, any
 * kernel thread, no runtime state touched): make the carrier look.  If it
 * sleeps in the idle loop, bump the futex word it sleeps on; if it runs a
 * UT, send it the tick's signal as a kick, which acts as a tick does (a
 * fake call, or a dispatch at the next epilogue) and so drains the inbox
 * (__weft_preempted).  Without time slicing there is no handler for a
 * kick, and the UT waits for the carrier's next Weft call.
 */
void __weft_preempt_kick(struct vp *vp)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&vp->idle, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&vp->wake, 1, __ATOMIC_SEQ_CST);
		__weft_raw_syscall6(SYS_futex, (long)&vp->wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
		/* the idle VP may sleep in the io layer's poller rather than on
		 * the futex word (sched.c's idle loop) */
		const struct weft_poller *poller = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
		if (poller)
			poller->wake(vp);
		return;
	}
	pid_t tid = __atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE);
	if (!slicing_possible || tid == 0)
		return;
	__weft_sigqueue_tid(tid, tick_signal, (union sigval){ .sival_int = TIMER_KICK });
}

/*
 * The VP has nothing to run: sched.c's idle loop calls this on each pass.
 * The tick stays armed through the loop's first pass, and goes off from
 * the second.  Most idle spells of a program that does I/O (a server's
 * VP between two requests, UTs passing bytes over sockets) are shorter
 * than a slice; turning the tick off as each began, and on again at the
 * next switch, cost two timer_settime calls a spell, under M:N with the
 * runtime lock held (four pairs passing a byte 2,000 times over sockets:
 * 8,002 of 70,034 system calls on one VP, 10,247 of 109,094 on two; now
 * 2,031 and 3,109, under strace).  A tick that comes while the VP sleeps
 * finds it idle and does nothing (on_tick) but end the sleep; the loop's
 * next pass turns the tick off for the rest of the spell.  So a spell longer
 * than the slice's remainder costs one wake-up more, a shorter one two
 * system calls fewer, and a UT run after a short spell may have the rest
 * of the slice that was under way rather than a whole one.
 */
void __weft_preempt_idle(bool first_pass)
{
	struct vp *vp = __weft_vp();
	if (!first_pass)
		tick_off(vp);
	/* A retry armed by a deferral would cut the VP's sleep short for
	 * nothing: there is nothing to preempt while it sleeps.  (The handler
	 * that arms it runs on this kernel thread; if it fires first, the
	 * retry is simply gone already.) */
	struct kt_timers *tt = timers();
	if (tt->retry_armed) {
		struct itimerspec zero;
		memset(&zero, 0, sizeof zero);
		ktimer_settime(tt->retry, 0, &zero, NULL);
		tt->retry_armed = 0;
	}
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
	struct vp *vp = __weft_vp();
	if (vp->tick_mode == TICK_OFF)
		return;
	int hp = __weft_highest_ready();
	if (hp < 0 || hp >= (int)vp->cur->prio || deadline >= tick_due(__weft_now()))
		return;
	tick_set((uint64_t)deadline, vp->tick_mode == TICK_PERIODIC ? slice_ns : 0, true);
}

/* Only the running UT and sleepers: tick at the next deadline, or not at all. */
static void retune_tick(struct vp *vp)
{
	/* M:N: a running VP keeps ticking: its tick is how it sees deadlines
	 * and work that other VPs made while it runs (mn.c) */
	if (__weft_rq.nready || vp->tick_mode == TICK_OFF || __weft_mn)
		return;
	if (__weft_timers_pending()) {
		tick_set((uint64_t)__weft_timers_next(), 0, true);
		vp->tick_mode = TICK_ONESHOT;
	} else {
		tick_off(vp);
	}
}

/*
 * A tick wants acting on: called by the trampoline (a fake call) or by the
 * epilogue when a tick was deferred.  The UT is at a place where it could
 * have called sched_yield itself.  dispatch_pending is cleared before
 * anything is decided, so a tick that comes meanwhile is kept for later.
 */
void __weft_preempted(void)
{
	struct vp *vp = __weft_vp();
	vp->dispatch_pending = 0;
	vp->kicked = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__weft_inbox_drain(vp);
	if (unlikely(__weft_mn))
		__weft_mn_inboxes_take(vp);
	if (__weft_timers_pending())
		__weft_timers_run(__weft_now());
	struct ut *cur = vp->cur;
	/* M:N: another VP chose a copy-stack UT whose run stack this one's
	 * UT stands on (copystack.c): those waiting for it are ready, and a
	 * UT of theirs level takes its turn now, as a tick would give it */
	bool release = false;
	if (unlikely(vp->cs_release)) {
		vp->cs_release = 0;
		release = __weft_is_copy(cur) && __weft_cs_left(cur);
	}
	int hp = __weft_highest_ready();
	/* a SCHED_OTHER UT back from the kernel was put first (handoff.c):
	 * the running SCHED_OTHER UT yields to it now, like a tick */
	bool rejoined = vp->rejoined_first && cur->policy == SCHED_OTHER;
	vp->rejoined_first = 0;
	if (hp > (int)cur->prio)
		__weft_preempt_check();
	else if (hp == (int)cur->prio && cur->policy != SCHED_FIFO &&
		 (vp->async.ticks != vp->cur_since || rejoined || release))
		__weft_rotate();
	/* the UT may go on on another VP (M:N): that VP's tick */
	retune_tick(__weft_vp());
}

/*
 * The tick interrupted code outside every object the table knew (__weft_pc_unknown):
 * a library loaded since the scan without Weft's dlopen wrapper — glibc
 * loads libgcc_s itself for backtrace and for the unwinder, and NSS and
 * iconv modules — or code no object holds (a JIT's).  Before it switches,
 * the fake call has the table rebuilt (refresh_ranges: only if objects
 * were loaded; on the mainline, outside Weft's calls, so under M:N without
 * the runtime lock, as its lock order asks) and asks again: a PC in a
 * protected library now is a deferral like the handler's — dispatch_pending,
 * and a retry — and the UT resumes where it was; otherwise it is the
 * program's code and the preemption goes on.  Before, such a library was
 * only protected from the next rebuild (M:1: when slicing next started),
 * and the tick could switch a UT out inside it.
 * unknown_pc: written by the tick handler on the carrier just before its
 * fake call; read and cleared here by that kernel thread's fake call, on
 * the VP (the caller tests WHERE_VP: a kernel thread sent home by
 * away_tick reads another carrier's word and leaves it).  The retry timer
 * stays the handler's: it armed one with the fake call.  dispatch_pending
 * is set here as the handler sets it (a tick meanwhile may set it too;
 * the mainline clears it as it acts).
 */
static __attribute__((noinline)) bool late_code_protected(struct vp *vp)
{
	uintptr_t pc = vp->async.unknown_pc;
	vp->async.unknown_pc = 0;
	refresh_ranges();
	if (!__weft_pc_protected(pc))
		return false;
	vp->dispatch_pending = 1;         /* as the handler defers (its retry is armed) */
	return true;
}

/* The same for a kernel thread away from the VP (away_tick): a library
 * loaded since the scan, protected once the table knows it, is no place to
 * go home from (home, the UT may be switched out inside it).  Its own retry
 * timer tries again, as away_tick's over protected code.  Finds its kt by
 * tid: a system call, on a path (going home) that makes several. */
static __attribute__((noinline)) bool away_late_code_protected(void)
{
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct kt *k = __weft_kt_by_tid(me);
	if (!k || !k->timers.unknown_pc)
		return false;
	uintptr_t pc = k->timers.unknown_pc;
	k->timers.unknown_pc = 0;
	refresh_ranges();
	if (!__weft_pc_protected(pc))
		return false;
	arm_retry_kt(&k->timers, slice_floor_ns ? slice_floor_ns : MIN_SLICE_NS);
	return true;
}

/* The trampoline's return into the interrupted UT: the same work as the
 * epilogue of a Weft call (deferred signals, asynchronous cancel). */
void __weft_preempt_trampoline_body(void) HIDDEN;
void __weft_preempt_trampoline_body(void)
{
	struct vp *vp0 = __weft_vp();
	enum weft_where w = __weft_where(vp0);
	if (unlikely(vp0->async.unknown_pc) && w == WHERE_VP && late_code_protected(vp0))
		return;
	if (unlikely(w == WHERE_AWAY) && away_late_code_protected())
		return;
	/* an entry like any other: a kernel thread away from the VP (sent by
	 * away_tick) goes home here and comes back on the VP */
	if (!__weft_enter())
		return;
	struct ut *self = __weft_self();
	if (unlikely(self->libc_cancel)) {
		/* sent home by away_cancel from one of libc's cancellable calls */
		self->libc_cancel = 0;
		__weft_testcancel();
	}
	struct vp *vp = __weft_vp();
	uint64_t before = vp->stat.switches;
	__weft_preempted();
	if (vp->stat.switches != before)
		vp->stat.preemptions++;
	__weft_epilogue(EXIT_OTHER);
	__weft_outcall_begin(__weft_vp());   /* back to the program's code, maybe on another VP */
}

/* ---- set-up -------------------------------------------------------------- */

/* Is Weft a shared object of its own?  Then its whole executable segment
 * (its PLT stubs included) is the range never interrupted; linked into the
 * program (libweft.a), its text is the range between two labels the build
 * puts around it, plus the program's PLT stubs. */
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
	struct vp *vp = __weft_vp();
	tick_signal = __weft_cfg()->preempt_signal;
	set_slice(__weft_cfg()->timeslice_ns);
	slice_from_env = true;
	/* The ranges serve signal delivery (signal.c) even where fake calls
	 * cannot be made. */
	refresh_ranges();
	if (!__weft_arch_fake_calls_possible())
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	__weft_signal_block_all(&sa.sa_mask);     /* no program handler nests in it */
	if (__weft_kernel_sigaction(tick_signal, &sa, NULL) != 0)
		return;
	slicing_possible = true;
	vp->preempt_on = slice_ns != 0;
}

/* ---- public -------------------------------------------------------------- */

int __weft_timeslice_set(uint64_t ns)
{
	struct vp *vp = __weft_vp();
	if (ns && ns < MIN_SLICE_NS)
		return EINVAL;
	if (ns && !slicing_possible)
		return ENOTSUP;
	slice_from_env = false;
	set_slice(ns);
	vp->preempt_on = ns != 0;
	if (!vp->preempt_on)
		tick_off(vp);
	else if (vp->tick_mode == TICK_PERIODIC)
		tick_set(slice_ns, slice_ns, false);
	else if (__weft_rq.nready)
		__weft_preempt_arm_slow();
	return 0;
}

EXPORT int weft_timeslice_set(uint64_t ns)
{
	__weft_ensure();
	return __weft_timeslice_set(ns);
}

EXPORT uint64_t weft_timeslice_get(void)
{
	__weft_ensure();
	return __weft_vp()->preempt_on ? slice_ns : 0;
}

bool __weft_ras_registered(void)
{
	return nras != 0;
}

EXPORT int weft_ras_register(const void *begin, const void *end)
{
	if (!begin || !end || (uintptr_t)end <= (uintptr_t)begin)
		return EINVAL;
	__weft_ensure();
	/* A sequence is restarted only by its own VP's tick: under M:N a UT
	 * on another VP runs beside it, and the sequence would not be
	 * atomic.  Refused rather than accepted and broken (the program's
	 * counters would lose updates); __weft_mn_set_vps refuses more VPs
	 * once one is registered. */
	if (__weft_mn)
		return ENOTSUP;
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
