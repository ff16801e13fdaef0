/* Myth's failures: -1 with errno (th_fork NULL, th_join TH_JOIN_FAILED),
 * never a crash.  th_join of a handle that never was (NULL, small numbers,
 * pointers to anything), of a thread already joined, of oneself; th_init
 * outside 1..1024; NULL locks and functions.  th_self names the initial
 * thread too, and a thread's own handle; th_exit gives the joiner its
 * value. */
#include "../check.h"
#include <errno.h>
#include <weft/myth.h>

static th_thread_t seen;

static void *report_self(void *arg)
{
	seen = th_self();
	return arg;
}

static void *leave_early(void *arg)
{
	th_exit((void *)77);
	return NULL;
}

#define CHECK_FAILS(call, err)                     \
	do {                                       \
		errno = 0;                         \
		CHECK_EQ((call), -1);              \
		CHECK_EQ(errno, err);              \
	} while (0)

int main(void)
{
	long local;
	th_thread_t bad[] = { NULL, (th_thread_t)1, (th_thread_t)&local,
			      (th_thread_t)(uintptr_t)-1, (th_thread_t)(uintptr_t)0x500000003ull };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		CHECK(th_join(bad[i]) == TH_JOIN_FAILED);
		CHECK_EQ(errno, ESRCH);
	}
	errno = 0;
	CHECK(th_join(th_self()) == TH_JOIN_FAILED);
	CHECK_EQ(errno, EDEADLK);

	th_thread_t t = th_fork(report_self, (void *)5);
	CHECK(t != NULL && t != th_self());
	CHECK(th_join(t) == (void *)5);
	CHECK(seen == t);
	errno = 0;
	CHECK(th_join(t) == TH_JOIN_FAILED);     /* joined already */
	CHECK_EQ(errno, ESRCH);
	CHECK(th_join(th_fork(leave_early, NULL)) == (void *)77);

	errno = 0;
	CHECK(th_fork(NULL, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_FAILS(th_init(0), EINVAL);
	CHECK_FAILS(th_init(-3), EINVAL);
	CHECK_FAILS(th_init(1025), EINVAL);
	CHECK_EQ(th_init(1), 0);
	CHECK_EQ(th_init(1024), 0);                 /* recorded; one VP runs */
	CHECK_FAILS(th_mutex_init(NULL), EINVAL);
	CHECK_FAILS(th_mutex_lock(NULL), EINVAL);
	CHECK_FAILS(th_mutex_unlock(NULL), EINVAL);
	CHECK_FAILS(th_mutex_trylock(NULL), EINVAL);
	CHECK_FAILS(th_mutex_destroy(NULL), EINVAL);
	CHECK(TH_JOIN_FAILED != NULL && TH_JOIN_FAILED != (void *)-1);
	return 0;
}
