/*
 * dump.c — the thread dump: every UT, what it waits on, and where it stands.
 *
 * One printer serves the deadlock report (debug_sched.c) and the dump signal
 * (WEFT_DUMP_SIGNAL).  Each UT is one line,
 *     weft:   thread 2 "alpha" waits for mutex 0x55d0c2a3a0a0 held by thread 3 "beta"
 * and, when asked, its backtrace below it, one frame a line:
 *     weft:       #0 0x00007f3a1c2b7b3b pthread_mutex_lock+0x4b (libweft.so.0)
 *     weft:       #1 0x000055d0c2a381c9 ab+0x19 (debug_abba)
 *
 * Signal safety.  The printer may run in a signal handler, so it allocates
 * nothing, takes no lock and uses no stdio: lines are built in a buffer on
 * the stack and written with the raw write system call (write() itself may
 * one day be Weft's, and park).  It reads the UT table and each UT's own
 * fields, and follows a mutex or rwlock to its holder through the hook that
 * the deadlock report always used (a pure read); it never walks a queue.  So
 * it needs the runtime's state consistent, which it is everywhere but inside
 * Weft's own text: the runtime calls it on the mainline, or from a handler
 * whose interrupted PC is outside Weft's text, or defers it (the signal
 * contract's rule for program handlers).
 *
 * Backtraces.  Weft is built without frame pointers, so frames are found
 * from the unwind tables (.eh_frame), by libgcc's unwinder through glibc's
 * backtrace().  The running UT is unwound where it stands.  A parked UT is
 * unwound without touching its stack: unwind_on() (below) calls the
 * collector through a frame whose unwind rules say "my caller is the
 * suspended UT": its canonical frame address is the UT's saved stack pointer
 * plus the switch frame (switch.S), and its callee-saved registers and
 * return address are the ones the switch pushed there.  The unwinder then
 * walks on into the UT's own frames (a preempted UT's through the
 * trampoline, which is marked a signal frame) and stops at __weft_entry,
 * whose return address is marked undefined.  backtrace() loads libgcc_s
 * with malloc on its first call: __weft_dump_prepare makes that call from a
 * normal context before a handler may need it.
 *
 * The frames shown start at the outermost of the UT's leading frames in
 * Weft's text (its call into Weft: pthread_mutex_lock, pthread_join, the
 * trampoline of a preemption), then its callers down to its start routine
 * (Weft's frames below that, which start every UT, are left out).  Symbols come from
 * dladdr(), which knows only dynamic symbols: a program's own functions are
 * named if it was linked with -rdynamic, else shown as file+offset, which
 * `addr2line -f -e FILE OFFSET` turns into a name and line.
 */
#include "rt.h"
#include "dump.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DUMP_MAX_FRAMES 48        /* unwound per UT */
#define DUMP_SHOW_FRAMES 24       /* printed per UT */

extern const char __weft_text_begin[] HIDDEN, __weft_text_end[] HIDDEN;

/* ---- output: a line at a time, by the raw write system call ---- */

struct out {
	int fd;
	size_t len;
	char buf[600];
};

static void out_flush(struct out *o)
{
	size_t off = 0;
	while (off < o->len) {
		long w = __weft_raw_syscall6(SYS_write, o->fd, (long)(o->buf + off),
					     (long)(o->len - off), 0, 0, 0);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	o->len = 0;
}

static void put_mem(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o->len == sizeof o->buf)
			out_flush(o);
		o->buf[o->len++] = s[i];
	}
}

static void put(struct out *o, const char *s) { put_mem(o, s, strlen(s)); }

static void put_dec(struct out *o, uint64_t v)
{
	char d[20];
	size_t n = 0;
	do {
		d[sizeof d - ++n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_mem(o, d + sizeof d - n, n);
}

/* 0x and at least `width` hex digits. */
static void put_hex(struct out *o, uint64_t v, unsigned width)
{
	char d[16];
	size_t n = 0;
	do {
		d[sizeof d - ++n] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v || n < width);
	put(o, "0x");
	put_mem(o, d + sizeof d - n, n);
}

/* Nanoseconds as seconds with three decimals. */
static void put_secs(struct out *o, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	char frac[4] = { (char)('0' + ms / 100 % 10), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 0 };
	put_dec(o, ms / 1000);
	put(o, ".");
	put(o, frac);
	put(o, " s");
}

/* A name from a UT's 16-byte field, never past its end. */
static void put_name(struct out *o, const char name[16])
{
	put_mem(o, name, strnlen(name, 16));
}

static void put_thread(struct out *o, const struct ut *t)
{
	put(o, "thread ");
	put_dec(o, t->id);
	put(o, " \"");
	put_name(o, t->name);
	put(o, "\"");
}

/* ---- what a UT is doing ---- */

static const char *wait_name(int k)
{
	static const char *const names[] = {
		[WAIT_NONE] = "nothing", [WAIT_SLEEP] = "a sleep", [WAIT_JOIN] = "a join",
		[WAIT_MUTEX] = "mutex", [WAIT_COND] = "condition", [WAIT_RWLOCK] = "rwlock",
		[WAIT_BARRIER] = "barrier", [WAIT_SEM] = "semaphore", [WAIT_ONCE] = "pthread_once",
		[WAIT_EVENT] = "event", [WAIT_MAILBOX] = "its mailbox", [WAIT_SPIN] = "spinlock",
		[WAIT_FUTEX] = "futex", [WAIT_FUTEX_SHARED] = "shared futex",
		[WAIT_PAUSE] = "a signal in pause()", [WAIT_OTHER] = "something",
	};
	return k >= 0 && k <= WAIT_OTHER && names[k] ? names[k] : "something";
}

static void put_wait(struct out *o, const struct ut *t, int64_t now)
{
	const struct ut *holder = __weft_hooks.wait_holder(t);
	switch (t->wait_kind) {
	case WAIT_JOIN:
		if (t->wait_obj) {
			put(o, "joins ");
			put_thread(o, t->wait_obj);
		} else {
			put(o, "joins a thread");
		}
		break;
	case WAIT_SLEEP:
		put(o, "sleeps");
		break;
	case WAIT_MAILBOX:
		put(o, "waits for a message in its mailbox");
		break;
	case WAIT_PAUSE:
		put(o, "waits for a signal in pause()");
		break;
	default:
		put(o, "waits for ");
		put(o, wait_name(t->wait_kind));
		if (t->wait_obj) {
			put(o, " ");
			put_hex(o, (uintptr_t)t->wait_obj, 1);
		}
		if (holder) {
			put(o, " held by ");
			put_thread(o, holder);
		}
		break;
	}
	if (t->tindex) {
		if (t->deadline >= now && t->wait_kind == WAIT_FUTEX_SHARED) {
			put(o, " (re-reads its word in ");
			put_secs(o, (uint64_t)(t->deadline - now));
			put(o, ")");
		} else if (t->deadline >= now) {
			put(o, t->wait_kind == WAIT_SLEEP ? ", " : " (times out in ");
			put_secs(o, (uint64_t)(t->deadline - now));
			put(o, t->wait_kind == WAIT_SLEEP ? " left" : ")");
		} else {
			put(o, " (deadline passed ");
			put_secs(o, (uint64_t)(now - t->deadline));
			put(o, " ago)");
		}
	}
}

static void put_state(struct out *o, const struct ut *t, int64_t now)
{
	switch (t->state) {
	case UT_RUNNING:
		put(o, "is running");
		break;
	case UT_READY:
		put(o, "is ready to run");
		break;
	case UT_BLOCKED:
		put_wait(o, t, now);
		break;
	case UT_ZOMBIE:
		put(o, "has exited and waits to be joined");
		break;
	case UT_EXITING:
		put(o, "is exiting");
		break;
	case UT_DEFERRED:
		put(o, "is ready to run, waiting for its run stack (copy-stack)");
		break;
	default:
		put(o, "is in state ");
		put_dec(o, t->state);
		break;
	}
	if (t->policy != SCHED_OTHER || t->prio != 0) {
		put(o, t->policy == SCHED_FIFO ? " (SCHED_FIFO " : t->policy == SCHED_RR ? " (SCHED_RR " : " (priority ");
		put_dec(o, t->prio);
		put(o, ")");
	}
}

/* ---- backtraces ---- */

#if defined(__x86_64__)
/*
 * unwind_on(sp, fn, arg) calls fn(arg) through a frame whose CFI describes
 * its caller as the UT suspended with its switch frame at sp (switch.S:
 * [fp control][r15][r14][r13][r12][rbx][rbp][return address], low to high):
 * the CFA is sp + 64, the return address is at CFA-8, rbp at CFA-16, rbx at
 * CFA-24, r12..r15 below.  %rbx holds sp across the call (callee-saved, so
 * every unwinder finds it).  The switch frame is only read, never changed.
 */
_Static_assert(WEFT_ARCH_FRAME_WORDS == 8, "dump.c's unwind rules mirror switch.S's frame");
void __weft_dump_unwind_on(void *sp, void (*fn)(void *), void *arg) HIDDEN;
extern const char __weft_dump_unwind_ret[] HIDDEN;
__asm__(
	"	.text\n"
	"	.globl	__weft_dump_unwind_on\n"
	"	.hidden	__weft_dump_unwind_on\n"
	"	.type	__weft_dump_unwind_on, @function\n"
	"	.p2align 4\n"
	"__weft_dump_unwind_on:\n"
	"	.cfi_startproc\n"
	"	pushq	%rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	"	movq	%rdi, %rbx\n"
	"	.cfi_remember_state\n"
	"	.cfi_def_cfa %rbx, 64\n"
	"	.cfi_offset %rip, -8\n"
	"	.cfi_offset %rbp, -16\n"
	"	.cfi_offset %rbx, -24\n"
	"	.cfi_offset %r12, -32\n"
	"	.cfi_offset %r13, -40\n"
	"	.cfi_offset %r14, -48\n"
	"	.cfi_offset %r15, -56\n"
	"	movq	%rdx, %rdi\n"
	"	call	*%rsi\n"
	"	.globl	__weft_dump_unwind_ret\n"
	"	.hidden	__weft_dump_unwind_ret\n"
	"__weft_dump_unwind_ret:\n"
	"	.cfi_restore_state\n"
	"	popq	%rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	__weft_dump_unwind_on, .-__weft_dump_unwind_on\n");
#define HAVE_UNWIND_ON 1
#endif

struct frames {
	void *pc[DUMP_MAX_FRAMES];
	int n;
};

static void collect(void *p)
{
	struct frames *f = p;
	f->n = backtrace(f->pc, DUMP_MAX_FRAMES);
}

/* Drop the frames before `mark` (the dump's own), and mark itself unless
 * `keep`; none if mark is not among them. */
static void drop_until(struct frames *f, const void *mark, bool keep)
{
	for (int i = 0; i < f->n; i++) {
		if (f->pc[i] == mark) {
			int skip = keep ? i : i + 1;
			memmove(f->pc, f->pc + skip, (size_t)(f->n - skip) * sizeof f->pc[0]);
			f->n -= skip;
			return;
		}
	}
}

static bool in_weft(const void *pc)
{
	return (const char *)pc >= __weft_text_begin && (const char *)pc < __weft_text_end;
}

#ifdef HAVE_UNWIND_ON
struct unwind_job {
	const struct ut *t;
	struct frames *f;
};

static void unwind_parked(void *p)
{
	struct unwind_job *j = p;
	__weft_dump_unwind_on(j->t->sp, collect, j->f);
	drop_until(j->f, __weft_dump_unwind_ret, false);
}
#endif

/* Can t's stack be unwound from its saved stack pointer? */
static bool parked_frame_ok(const struct ut *t)
{
	uintptr_t sp = (uintptr_t)t->sp;
	if (t == __weft_self() || (t->state != UT_READY && t->state != UT_BLOCKED && t->state != UT_DEFERRED) ||
	    !sp)
		return false;
	if (t->stack.kind == STACK_NONE)
		return false;
	return sp >= (uintptr_t)t->stack.lo && sp + 8 * 8 <= (uintptr_t)t->stack.hi;
}

static void put_frame(struct out *o, const char *prefix, int i, const void *pc)
{
	Dl_info di;
	put(o, prefix);
	put(o, "      #");
	put_dec(o, (uint64_t)i);
	put(o, " ");
	put_hex(o, (uintptr_t)pc, 12);
	/* A return address may be one past a call that ends its function:
	 * name the byte before it. */
	if (dladdr((const char *)pc - 1, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');
		const char *file = slash ? slash + 1 : di.dli_fname;
		if (di.dli_sname && di.dli_saddr) {
			put(o, " ");
			put(o, di.dli_sname);
			put(o, "+");
			put_hex(o, (uintptr_t)pc - (uintptr_t)di.dli_saddr, 1);
			put(o, " (");
			put(o, file);
			put(o, ")");
		} else {
			put(o, " (");
			put(o, file);
			put(o, "+");
			put_hex(o, (uintptr_t)pc - (uintptr_t)di.dli_fbase, 1);
			put(o, ")");
		}
	}
	put(o, "\n");
	out_flush(o);
}

static void put_frames(struct out *o, const char *prefix, const struct frames *f)
{
	/* From the UT's call into Weft outwards. */
	int lead = 0;
	while (lead < f->n && in_weft(f->pc[lead]))
		lead++;
	int first = lead > 0 ? lead - 1 : 0;
	/* ...down to its start routine: not the frames of Weft's below it */
	int end = f->n;
	while (end > lead && in_weft(f->pc[end - 1]))
		end--;
	for (int i = first; i < end && i - first < DUMP_SHOW_FRAMES; i++)
		put_frame(o, prefix, i - first, f->pc[i]);
	if (end - first > DUMP_SHOW_FRAMES) {
		put(o, prefix);
		put(o, "      ...\n");
		out_flush(o);
	}
}

/* ---- the printer ---- */

struct dump_ctx {
	struct out *o;
	const char *prefix;
	unsigned flags;
	int64_t now;
	const void *caller;               /* return address into the dump's caller */
};

static void dump_one(struct ut *t, void *p)
{
	struct dump_ctx *c = p;
	struct out *o = c->o;
	if ((c->flags & DUMP_BLOCKED_ONLY) && t->state != UT_BLOCKED)
		return;
	put(o, c->prefix);
	put(o, "  ");
	put_thread(o, t);
	put(o, " ");
	put_state(o, t, c->now);
	put(o, "\n");
	out_flush(o);
	if (!(c->flags & DUMP_BACKTRACE))
		return;
	struct frames f = { .n = 0 };
	if (t == __weft_self()) {
		/* from the dump's caller: where the running UT asked for it */
		collect(&f);
		drop_until(&f, c->caller, true);
	} else if (parked_frame_ok(t)) {
#ifdef HAVE_UNWIND_ON
		struct unwind_job j = { t, &f };
		/* a copy-stack UT's frames may be in its save area: they are
		 * put back where they belong for the walk (copystack.c) */
		if (__weft_is_copy(t)) {
			if (!__weft_cs_inspect(t, unwind_parked, &j)) {
				put(o, c->prefix);
				put(o, "      (its frames are in its save area: its run stack is in use)\n");
				out_flush(o);
			}
		} else {
			unwind_parked(&j);
		}
#endif
	}
	put_frames(o, c->prefix, &f);
}

__attribute__((noinline)) void __weft_dump_threads(int fd, const char *prefix, unsigned flags)
{
	struct out o = { .fd = fd, .len = 0 };
	struct dump_ctx c = { .o = &o, .prefix = prefix ? prefix : "", .flags = flags,
			      .now = __weft_now(), .caller = __builtin_return_address(0) };
	__weft_ut_foreach(dump_one, &c);
	out_flush(&o);
}

void __weft_dump_prepare(void)
{
	static bool done;
	if (done)
		return;
	void *pc[2];
	backtrace(pc, 2);
	done = true;
}

/* ---- the dump signal ---- */

static bool parse_uint(const char *s, const char **end, unsigned long *out)
{
	unsigned long v = 0;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > 1000)
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	*end = s;
	*out = v;
	return true;
}

int __weft_dump_signal_parse(const char *v, bool *then_exit)
{
	static const struct { const char *name; int sig; } names[] = {
		{ "QUIT", SIGQUIT }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		{ "INT", SIGINT }, { "TERM", SIGTERM }, { "PWR", SIGPWR }, { "WINCH", SIGWINCH },
		{ "URG", SIGURG }, { "PROF", SIGPROF }, { "VTALRM", SIGVTALRM }, { "ALRM", SIGALRM },
		{ "IO", SIGIO }, { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU }, { "XCPU", SIGXCPU },
	};
	const char *colon = strchr(v, ':');
	size_t len = colon ? (size_t)(colon - v) : strlen(v);
	*then_exit = false;
	if (colon) {
		if (strcmp(colon + 1, "exit") == 0)
			*then_exit = true;
		else if (strcmp(colon + 1, "continue") != 0)
			return -1;
	}
	char s[32];
	if (len == 0 || len >= sizeof s)
		return -1;
	memcpy(s, v, len);
	s[len] = 0;
	const char *n = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
	const char *end;
	unsigned long u;
	int sig = -1;
	if (parse_uint(n, &end, &u) && !*end && n == s) {
		sig = u <= (unsigned long)SIGRTMAX ? (int)u : -1;
	} else if (strncmp(n, "RTMIN+", 6) == 0 && parse_uint(n + 6, &end, &u) && !*end) {
		sig = u <= (unsigned long)(SIGRTMAX - SIGRTMIN) ? SIGRTMIN + (int)u : -1;
	} else if (strcmp(n, "RTMIN") == 0) {
		sig = SIGRTMIN;
	} else {
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			if (strcmp(n, names[i].name) == 0)
				sig = names[i].sig;
	}
	if (sig < 1 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
	    sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS || sig == SIGABRT ||
	    (sig >= __SIGRTMIN && sig < SIGRTMIN))
		return -1;
	return sig;
}

static void count_one(struct ut *t, void *p)
{
	(void)t;
	(*(uint64_t *)p)++;
}

void __weft_dump_on_signal(int sig, bool then_exit)
{
	struct out o = { .fd = 2, .len = 0 };
	uint64_t n = 0;
	const char *abbrev = sigabbrev_np(sig);
	__weft_ut_foreach(count_one, &n);
	put(&o, "weft: thread dump on SIG");
	put(&o, abbrev ? abbrev : "?");
	put(&o, ": ");
	put_dec(&o, n);
	put(&o, n == 1 ? " thread\n" : " threads\n");
	out_flush(&o);
	__weft_dump_threads(2, "weft: ", DUMP_BACKTRACE);
	put(&o, then_exit ? "weft: end of thread dump; exiting\n" : "weft: end of thread dump\n");
	out_flush(&o);
	if (!then_exit)
		return;
	/* End as the signal's default action would: unhandled, unblocked. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	__weft_kernel_sigaction(sig, &dfl, NULL);
	uint64_t mask = 1ull << (sig - 1);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&mask, 0, 8, 0, 0);
	__weft_raw_syscall6(SYS_tgkill, getpid(), __weft_vp()->tid, sig, 0, 0, 0);
	__weft_raw_syscall6(SYS_exit_group, 128 + sig, 0, 0, 0, 0, 0);
	__builtin_unreachable();
}
