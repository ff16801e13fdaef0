/*
 * exec.c — the exec family: the new image starts with the calling thread's
 * signal mask.
 *
 * Under NPTL the mask a program image starts with is the kernel thread's
 * that called exec, which is that thread's own.  Under Weft the kernel
 * thread's mask is the carrier's (what no UT takes stays blocked there) and
 * a UT's mask is Weft's record: glibc's exec calls went to the kernel with
 * the carrier's, so a signal the caller had blocked started unblocked in
 * the new image (glibc's tst-exec4).  Each call here puts the caller's mask
 * on its kernel thread (runtime/sigdeliver.c), makes glibc's call, and if
 * that returns (the exec failed) puts the carrier's mask back.  glibc's
 * execl, execle, execlp, execv and execvp reach the kernel by internal
 * calls that no wrapper sees, so each is here, the variadic ones as their
 * vector forms.
 *
 * Owns glibc's four entries, found at first use (by any kernel thread:
 * each stores what dlsym answers, the same for all).  One epilogue per
 * call (WEFT_CALL); glibc's call runs out of Weft (__weft_outcall_begin),
 * as the program's own code would.  On a kernel thread that carries no VP
 * (one Weft did not make), the kernel thread's mask is its own: glibc's
 * call as it is.  A vfork child runs on its parent UT's stack and memory
 * (runtime/vfork.c): it takes the UT's mask and calls glibc, touching no
 * runtime state.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

extern char **environ;

static void *real(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* One exec call's arguments, for whichever of glibc's entries makes it. */
struct exec_args {
	int fd, flags;
	const char *path;
	char *const *argv, *const *envp;
};
typedef int (*exec_call)(const struct exec_args *);

/* glibc's entries, found at first use (dlsym answers the same each time) */
static void *ve, *vpe, *fe, *veat;

static int call_execve(const struct exec_args *a) { return ((execve_fn)ve)(a->path, a->argv, a->envp); }
static int call_execvpe(const struct exec_args *a) { return ((execvpe_fn)vpe)(a->path, a->argv, a->envp); }
static int call_fexecve(const struct exec_args *a) { return ((fexecve_fn)fe)(a->fd, a->argv, a->envp); }
static int call_execveat(const struct exec_args *a)
{
	return ((execveat_fn)veat)(a->fd, a->path, a->argv, a->envp, a->flags);
}

/* glibc's entry `name` (found into *slot) between the caller's mask and, if
 * it returns, the carrier's. */
static int with_callers_mask(void **slot, const char *name, exec_call call, const struct exec_args *a)
{
	if (!__atomic_load_n(slot, __ATOMIC_ACQUIRE))
		__atomic_store_n(slot, real(name), __ATOMIC_RELEASE);
	if (!*slot) {
		errno = ENOSYS;
		return -1;
	}
	/* a UT's kernel thread, on its VP or away from it (WEFT_CALL brings
	 * it back first); any other thread's mask is its own */
	if (!__weft_started)
		return call(a);
	struct vp *vp = __weft_vp();
	/* A vfork child, on its parent UT's stack and memory, touches
	 * nothing of the runtime's (an epilogue here would run in the
	 * parent's state).  Weft's vfork's child started with the UT's mask
	 * as its kernel mask and changes it by plain calls (runtime/vfork.c):
	 * its entries answer WHERE_NONE, and glibc's call passes that mask
	 * on.  A vfork made without Weft's (the system call itself) passes
	 * the entry's test as the carrier, on another tid: the UT's mask. */
	enum weft_where w = __weft_where(vp);
	if (w == WHERE_FOREIGN || w == WHERE_NONE)
		return call(a);
	if (w == WHERE_VP && (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0) !=
				     __atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE)) {
		__weft_sig_exec_mask();
		return call(a);
	}
	WEFT_CALL();
	__weft_sig_exec_mask();
	__weft_outcall_begin(__weft_vp());
	int r = call(a);
	int e = errno;
	__weft_outcall_end();
	__weft_sig_exec_failed();
	errno = e;
	return r;
}

static int do_execve(const char *path, char *const argv[], char *const envp[], bool search)
{
	struct exec_args a = { .path = path, .argv = argv, .envp = envp };
	if (search)
		return with_callers_mask(&vpe, "execvpe", call_execvpe, &a);
	return with_callers_mask(&ve, "execve", call_execve, &a);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return do_execve(path, argv, envp, false);
}

EXPORT int execv(const char *path, char *const argv[])
{
	return do_execve(path, argv, environ, false);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return do_execve(file, argv, environ, true);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return do_execve(file, argv, envp, true);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_args a = { .fd = fd, .argv = argv, .envp = envp };
	return with_callers_mask(&fe, "fexecve", call_fexecve, &a);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	struct exec_args a = { .fd = dirfd, .flags = flags, .path = path, .argv = argv, .envp = envp };
	return with_callers_mask(&veat, "execveat", call_execveat, &a);
}

/* The variadic forms: the arguments up to the NULL, as a vector on the
 * stack (glibc's own execl does the same; E2BIG past what one exec takes). */
#define ARGS_MAX 65536

#define COLLECT(argv, arg, ap, after)                                         \
	size_t n_ = 1;                                                        \
	va_start(ap, arg);                                                    \
	while (va_arg(ap, const char *) != NULL)                              \
		if (++n_ >= ARGS_MAX) {                                       \
			va_end(ap);                                           \
			errno = E2BIG;                                        \
			return -1;                                            \
		}                                                             \
	va_end(ap);                                                           \
	const char *argv[n_ + 1];                                             \
	argv[0] = arg;                                                        \
	va_start(ap, arg);                                                    \
	for (size_t i_ = 1; i_ <= n_; i_++)                                   \
		argv[i_] = va_arg(ap, const char *);                          \
	after;                                                                \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT(argv, arg, ap, (void)0);
	return do_execve(path, (char *const *)argv, environ, false);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT(argv, arg, ap, (void)0);
	return do_execve(file, (char *const *)argv, environ, true);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char *const *envp;
	COLLECT(argv, arg, ap, envp = va_arg(ap, char *const *));
	return do_execve(path, (char *const *)argv, envp, false);
}
