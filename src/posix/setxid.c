/*
 * setxid.c — setuid, setgid, seteuid, setegid, setreuid, setregid,
 * setresuid, setresgid, setgroups and initgroups: the process's IDs, changed
 * on every kernel thread it has (runtime/setxid.c says why glibc's own
 * broadcast cannot do it under Weft).
 *
 * Each is one system call made everywhere; errors are the kernel's
 * (EPERM, EINVAL), as glibc's.  seteuid and setegid are setresuid and
 * setresgid with the other IDs left alone, and refuse -1 with EINVAL, as
 * glibc's do.  initgroups reads the groups with getgrouplist (NSS, as
 * glibc's) and sets them with Weft's setgroups.
 *
 * No runtime state is touched and no UT is switched: the caller's kernel
 * thread waits, for microseconds, until every other one has made the call.
 * Without /proc (no task list to signal) they fall back to glibc's own.
 */
#include "posix.h"

#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int result(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* glibc's own definition of name (its broadcast, which reaches every
 * thread glibc made): the fallback without /proc. */
static void *glibc_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define SETXID3(fn, nr, a, b, c, ...)                                                \
	do {                                                                         \
		long r_ = __weft_setxid(nr, (long)(a), (long)(b), (long)(c));        \
		if (r_ == -ENOSYS) {                                                 \
			__typeof__(&fn) g_ = (__typeof__(&fn))glibc_fn(#fn);          \
			if (g_)                                                      \
				return g_(__VA_ARGS__);                              \
		}                                                                    \
		return result(r_);                                                   \
	} while (0)

EXPORT int setuid(uid_t uid)
{
	SETXID3(setuid, SYS_setuid, uid, 0, 0, uid);
}

EXPORT int setgid(gid_t gid)
{
	SETXID3(setgid, SYS_setgid, gid, 0, 0, gid);
}

EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	SETXID3(setreuid, SYS_setreuid, (int)ruid, (int)euid, 0, ruid, euid);
}

EXPORT int setregid(gid_t rgid, gid_t egid)
{
	SETXID3(setregid, SYS_setregid, (int)rgid, (int)egid, 0, rgid, egid);
}

EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	SETXID3(setresuid, SYS_setresuid, (int)ruid, (int)euid, (int)suid, ruid, euid, suid);
}

EXPORT int setresgid(gid_t rgid, gid_t egid, gid_t sgid)
{
	SETXID3(setresgid, SYS_setresgid, (int)rgid, (int)egid, (int)sgid, rgid, egid, sgid);
}

EXPORT int seteuid(uid_t euid)
{
	if (euid == (uid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	SETXID3(seteuid, SYS_setresuid, -1, (int)euid, -1, euid);
}

EXPORT int setegid(gid_t egid)
{
	if (egid == (gid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	SETXID3(setegid, SYS_setresgid, -1, (int)egid, -1, egid);
}

EXPORT int setgroups(size_t n, const gid_t *groups)
{
	SETXID3(setgroups, SYS_setgroups, n, groups, 0, n, groups);
}

EXPORT int initgroups(const char *user, gid_t group)
{
	long max = sysconf(_SC_NGROUPS_MAX);
	if (max <= 0 || max > 65536)
		max = 65536;
	int n = 64;
	gid_t *g = NULL;
	for (;;) {
		gid_t *more = realloc(g, (size_t)n * sizeof *g);
		if (!more) {
			free(g);
			errno = ENOMEM;
			return -1;
		}
		g = more;
		int got = n;
		if (getgrouplist(user, group, g, &got) >= 0) {
			n = got;
			break;
		}
		if (got <= n) {            /* no answer from NSS beyond what it gave */
			n = got;
			break;
		}
		if (n >= max) {            /* glibc's initgroups keeps the first max */
			n = (int)max;
			break;
		}
		n = got < max ? got : (int)max;
	}
	int r = setgroups((size_t)n, g);
	int e = errno;
	free(g);
	errno = e;
	return r;
}
