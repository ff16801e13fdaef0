/*
 * fault.c — turning a stack overflow into one clear line, and fatal errors.
 *
 * A UT that runs off its stack touches the guard below it.  The SIGSEGV
 * handler runs on an alternate stack (the faulting stack is full), checks
 * whether the fault address lies in a guard Weft put below the running UT's
 * stack, and if so names the thread and the address on stderr.  Either way
 * it then puts back the disposition that was there before Weft and returns,
 * so the fault repeats and the process dies of it (or the program's own
 * handler sees it) exactly as without Weft.
 *
 * Only Weft's own guards are reported.  A fault anywhere in [lo, hi) is the
 * program's (guard zones it protected inside its stack itself, as the JVM
 * does), and so is one below a stack that has no guard of Weft's: a stack
 * the program supplied, or one created with guardsize 0, whose low end the
 * program manages itself.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ALTSTACK_SIZE (64 * 1024)

static struct sigaction prev_segv, prev_bus;

static void write_all(const char *s, size_t n)
{
	while (n) {
		long w = __weft_kwrite(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* a lies in the guard Weft protected below t's stack. */
static bool in_guard(const struct ut *t, uintptr_t a)
{
	const struct ut_stack *s = &t->stack;
	if (s->kind != STACK_POOLED && s->kind != STACK_MAPPED && s->kind != STACK_COPY)
		return false;       /* main's (the kernel reports it) or the program's;
			     * a copy-stack UT's is its run stack's guard */
	if (!s->guard || s->canary)
		return false;       /* no guard, or one that could not be protected */
	uintptr_t lo = (uintptr_t)s->lo;
	return a < lo && a >= lo - s->guard;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	struct ut *t = __weft_vp()->cur;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (t && in_guard(t, a)) {
		char buf[256];
		int n = snprintf(buf, sizeof buf,
				 "weft: thread %llu (%s) overflowed its stack: fault at %p, stack [%p, %p)\n",
				 (unsigned long long)t->id, t->name[0] ? t->name : "unnamed",
				 (void *)a, (void *)t->stack.lo, (void *)t->stack.hi);
		if (n > 0)
			write_all(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	}
	__weft_kernel_sigaction(sig, sig == SIGSEGV ? &prev_segv : &prev_bus, NULL);
	/* A fault repeats when we return; a signal someone sent does not: it
	 * goes again to this kernel thread, by the kernel (the exported raise
	 * is Weft's, a UT's delivery) */
	if (si->si_code <= 0)
		__weft_tgkill_self(sig);
}

/* An alternate stack for this kernel thread, where the fault handler (and
 * the tick, SA_ONSTACK) run: without one, an overflow's SIGSEGV cannot be
 * delivered on the full stack and the kernel kills the process silently.
 * Keeps a program's own, set on the first kernel thread before Weft
 * started.  The kernel's, by raw system calls: the program's sigaltstack is
 * per UT (sigdeliver.c) and never reaches the kernel. */
static bool altstack_here(void)
{
	stack_t old;
	if (__weft_raw_syscall6(SYS_sigaltstack, 0, (long)&old, 0, 0, 0, 0) == 0 &&
	    !(old.ss_flags & SS_DISABLE))
		return true;
	void *alt = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt == MAP_FAILED)
		return false;
	stack_t ss = { .ss_sp = alt, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 };
	if (__weft_raw_syscall6(SYS_sigaltstack, (long)&ss, 0, 0, 0, 0, 0) != 0) {
		munmap(alt, ALTSTACK_SIZE);
		return false;
	}
	return true;
}

/* Every kernel thread Weft makes to carry VPs (kthread.c's spares) calls
 * this once: a UT overflows on whichever carrier runs it.  Its stack is
 * never unmapped, as spares are never freed. */
void __weft_fault_thread_init(void)
{
	(void)altstack_here();
}

void __weft_fault_init(void)
{
	if (!altstack_here())
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	__weft_kernel_sigaction(SIGSEGV, &sa, &prev_segv);
	__weft_kernel_sigaction(SIGBUS, &sa, &prev_bus);
}

void __weft_die(const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "weft: fatal: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	write_all(buf, (size_t)n);
	abort();
}
