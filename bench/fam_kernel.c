/*
 * fam_kernel.c — the kernel and process reference rows of "Kernel and
 * processes": the thread runtime's critical section (n/a on both, the
 * table says why), a getpid system call, setjmp + longjmp, and a process
 * context switch (Marovich, Appendix C).
 *
 * What a user-level switch is compared with.  Invariant: the process
 * switch row subtracts what a direct switch would not pay (the same pipe
 * I/O done by one process, half a kernel entry), as Marovich did, so that
 * what is left is the switch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Kernel and processes"

static BENCH_ALIGNED int64_t m_getpid(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		long p = syscall(SYS_getpid);
		KEEP(p);
	}
	return now_ns() - t0;
}

static jmp_buf jb BENCH_ALIGNED;

static BENCH_ALIGNED int64_t m_setjmp(uint64_t n)
{
	int64_t t0 = now_ns();
	for (volatile uint64_t i = 0; i < n; i++) {
		if (!setjmp(jb))
			longjmp(jb, 1);
	}
	return now_ns() - t0;
}

static void xwrite(int fd) { char c = 1; if (write(fd, &c, 1) != 1) _exit(3); }
static void xread(int fd) { char c; if (read(fd, &c, 1) != 1) _exit(3); }

/*
 * Marovich, Appendix C: two forked processes exchange one byte through a
 * pair of pipes (2n switches); subtract the same I/O done by one process
 * (write then read on one pipe) and half a getpid, the cost of entering
 * and leaving the kernel once that a direct switch would not pay.
 */
static BENCH_ALIGNED int64_t m_process_switch(uint64_t n)
{
	int ab[2], ba[2], self[2];
	if (pipe(ab) || pipe(ba) || pipe(self))
		die("pipe", errno);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		for (uint64_t i = 0; i < n; i++) {
			xread(ab[0]);
			xwrite(ba[1]);
		}
		_exit(0);
	}
	xwrite(ab[1]);   /* let the child start before timing */
	xread(ba[0]);
	int64_t t0 = now_ns();
	for (uint64_t i = 1; i < n; i++) {
		xwrite(ab[1]);
		xread(ba[0]);
	}
	int64_t both = now_ns() - t0;
	waitpid(pid, NULL, 0);

	t0 = now_ns();
	for (uint64_t i = 1; i < n; i++) {
		xwrite(self[1]);
		xread(self[0]);
	}
	int64_t io = now_ns() - t0;
	int64_t gp = m_getpid(n - 1);
	for (int i = 0; i < 2; i++) {
		close(ab[i]);
		close(ba[i]);
		close(self[i]);
	}
	/* per switch: both/2(n-1) - io/(n-1) - gp/2(n-1), scaled to n ops */
	double per = ((double)both / 2 - (double)io - (double)gp / 2) / (double)(n - 1);
	return (int64_t)(per * (double)n);
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "rt_critical", GROUP, U_NS, 0, "enter+exit the thread runtime's critical section",
	  "0.4 µs (Mueller; SPARC IPX); LynxOS 7.5 µs", NULL, NULL, NULL,
	  "nothing to enter: Weft's text is the critical section (the tick tests the PC); "
	  "leaving is one load and a branch inside every Weft call (see pthread_self)",
	  "no user-level runtime: the kernel is the runtime (see getpid)" },
	{ "getpid", GROUP, U_NS, 0, "enter+exit the kernel (getpid system call)",
	  "18 µs (Mueller; SPARC IPX); 4.8 µs (Marovich; HP 835); 6.9 µs null syscall (Small & Seltzer; 486)",
	  NULL, m_getpid },
	{ "setjmp", GROUP, U_NS, 0, "setjmp + longjmp pair",
	  "29 µs (Mueller; SPARC IPX); SunOS 59 µs (SPARC 1+)", NULL, m_setjmp },
	{ "process_switch", GROUP, U_NS, 0, "process context switch (Marovich App. C)",
	  "135.7 µs (Marovich; HP 835); 123 µs (Mueller; SPARC IPX); 105.7 µs (Small & Seltzer; 486); "
	  "37 µs (Xthreads; RS6000)",
	  NULL, m_process_switch },
};

BENCH_FAMILY(fam_kernel, rows);
