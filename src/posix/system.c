/*
 * system.c — system(): run a shell command, blocking only the calling UT,
 * as a cancellation point.
 *
 * glibc's system waits for its shell with an internal waitpid that no
 * wrapper reaches: the whole VP blocked until the monitor handed it on,
 * and a pthread_cancel waited for the command to end.  This is glibc's
 * system (sysdeps/posix/system.c, 2.36 with Debian's fixes) made of Weft's
 * own parts:
 *  - while any UT is inside system(), SIGINT and SIGQUIT are ignored in the
 *    process; the first one in saves the program's actions, the last one
 *    out restores them;
 *  - the caller's SIGCHLD is blocked for the call's duration;
 *  - the shell is posix_spawn of "/bin/sh -c line" with the environment,
 *    the caller's mask from before the call, and SIGINT and SIGQUIT at
 *    their defaults (unless the program itself ignores them);
 *  - the wait is the io layer's waitpid (io/child.c), which parks only the
 *    caller on a pidfd of the shell; EINTR is retried;
 *  - the result: the shell's wait status; 127 << 8 and errno when the shell
 *    could not be started (posix_spawn's error); -1 and errno when the
 *    wait failed (ECHILD, if the program ignores SIGCHLD).  system(NULL):
 *    1 if "exit 0" runs, else 0.
 * A pending cancel request acts at entry, before any child exists; one
 * that comes during the wait kills the shell with SIGKILL, reaps it (the
 * UT is exiting then, so that wait cannot be cancelled), gives back
 * SIGINT, SIGQUIT and the mask, and the unwind goes on to the program's
 * cleanup handlers: the thread ends with PTHREAD_CANCELED.
 *
 * Owns: the count of UTs inside system() and the program's SIGINT and
 * SIGQUIT actions saved meanwhile.  Invariant: `inside` counts the UTs
 * between hold_signals and release_signals; while it is non-zero SIGINT
 * and SIGQUIT are SIG_IGN and saved_int / saved_quit hold what the
 * program had set, written only as the count leaves 0.  glibc guards the
 * count and the two sigaction calls with a lock because its threads run
 * at once; here they change only inside this call's WEFT_CALL, with no
 * park and no call out in between, and Weft's text runs on one VP at a
 * time (M:1: the tick never switches inside it; M:N: the runtime lock),
 * so each change is whole without one.
 *
 * One epilogue per call (docs/architecture.md): everything inside is
 * internal — the runtime's sigaction and mask, the io layer's wait — but
 * posix_spawn, which is libc's code and runs as the program's would, out
 * of Weft (its clone waits for the shell's exec).  Layering: this file
 * and timer_thread.c are the posix files that call the io layer;
 * tests/layering_no_upward_calls.sh allows __weft_io_waitpid, for this
 * object only.
 *
 * A kernel thread that is not on a VP (one Weft did not make) gets glibc's
 * system, as io's wrapped calls are the plain calls there.
 */
#include "posix.h"
#include "../arch/arch.h"
#include "../io/io.h"

#include <dlfcn.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

static unsigned inside;
static struct sigaction saved_int, saved_quit;

/* The first UT in ignores SIGINT and SIGQUIT, keeping the program's
 * actions.  *reset: those the shell sets back to their defaults, which are
 * the ones the program did not ignore itself. */
static void hold_signals(sigset_t *reset)
{
	if (inside++ == 0) {
		struct sigaction ign;
		memset(&ign, 0, sizeof ign);
		ign.sa_handler = SIG_IGN;
		sigemptyset(&ign.sa_mask);
		__weft_sigaction(SIGINT, &ign, &saved_int);
		__weft_sigaction(SIGQUIT, &ign, &saved_quit);
	}
	sigemptyset(reset);
	if (saved_int.sa_handler != SIG_IGN)
		sigaddset(reset, SIGINT);
	if (saved_quit.sa_handler != SIG_IGN)
		sigaddset(reset, SIGQUIT);
}

/* The last UT out gives the program its actions back. */
static void release_signals(void)
{
	if (--inside == 0) {
		__weft_sigaction(SIGINT, &saved_int, NULL);
		__weft_sigaction(SIGQUIT, &saved_quit, NULL);
	}
}

/* One call's shell: what the wait and its cancellation handler share. */
struct shell {
	pid_t pid;
	int status;
	int err;               /* the wait's errno, 0 if it returned the pid */
	sigset_t omask;        /* the caller's mask before the call */
};

/* A cancel request acted on in the wait: undo what the call's end would
 * have undone, and leave no shell behind.  The UT is exiting, so the reap
 * parks only it and no request interrupts it.  The unwind comes here as it
 * comes to the program's handlers, out of Weft: libgcc's unwinder calls
 * pthread_once, an exported call whose end leaves Weft (under M:N, lets
 * the runtime lock go).  So the handler enters as an exported call does,
 * and leaves again for the handlers further out. */
static void shell_cancelled(void *arg)
{
	WEFT_CALL();
	struct shell *sh = arg;
	__weft_raw_syscall6(SYS_kill, sh->pid, SIGKILL, 0, 0, 0, 0);
	while (__weft_io_waitpid(sh->pid, NULL) == -EINTR)
		;
	release_signals();
	__weft_sig_setmask(SIG_SETMASK, &sh->omask, NULL);
}

/* The wait, with shell_cancelled as its cleanup handler.  A function of
 * its own so that only *sh (in memory) lives across the handler's setjmp. */
static void await_shell(struct shell *sh)
{
	pthread_cleanup_push(shell_cancelled, sh);
	long r;
	do
		r = __weft_io_waitpid(sh->pid, &sh->status);
	while (r == -EINTR);
	if (r < 0) {
		sh->status = -1;
		sh->err = (int)-r;
	}
	pthread_cleanup_pop(0);
}

static int run_shell(const char *line)
{
	struct shell sh;
	memset(&sh, 0, sizeof sh);
	sigset_t reset, chld;
	hold_signals(&reset);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	__weft_sig_setmask(SIG_BLOCK, &chld, &sh.omask);

	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &sh.omask);
	posix_spawnattr_setsigdefault(&attr, &reset);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	char *const argv[] = { "sh", "-c", (char *)line, NULL };
	__weft_outcall_begin(__weft_vp());
	int e = posix_spawn(&sh.pid, "/bin/sh", NULL, &attr, argv, environ);
	__weft_outcall_end();
	posix_spawnattr_destroy(&attr);

	if (e == 0)
		await_shell(&sh);
	else
		sh.status = W_EXITCODE(127, 0);   /* POSIX: as if the shell had _exit(127) */
	release_signals();
	__weft_sig_setmask(SIG_SETMASK, &sh.omask, NULL);
	if (e != 0 || sh.err != 0)
		errno = e != 0 ? e : sh.err;
	return sh.status;
}

typedef int (*system_fn)(const char *);

static int libc_system(const char *line)
{
	system_fn real = (system_fn)dlsym(RTLD_NEXT, "system");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(line);
}

/* glibc's name and version (system@@GLIBC_2.2.5): a program's versioned
 * reference binds here, preloaded or linked with -lweft, and so does
 * dlvsym; `remove` leaves no unversioned name.  A static link takes the
 * default version. */
EXPORT int __weft_system(const char *line);
__asm__(".symver __weft_system, system@@GLIBC_2.2.5, remove");

int __weft_system(const char *line)
{
	if (!__weft_io_on_vp())
		return libc_system(line);
	WEFT_CALL();
	__weft_testcancel();
	if (!line)
		return run_shell("exit 0") == 0;
	return run_shell(line);
}
