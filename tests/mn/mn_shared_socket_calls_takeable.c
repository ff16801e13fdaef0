/*
 * mn_shared_socket_calls_takeable — a socket call that Weft must make
 * plain, because another process shares the socket (it cannot set
 * O_NONBLOCK there), blocks only its own UT's VP, and not for good: the
 * other VPs go on, and the monitor hands the blocked VP on (docs/io.md).
 *
 * The call is a connect to a Unix listener whose backlog is full (listen
 * with backlog 0 and one connection already queued): it waits in the kernel
 * until the listener accepts.  The client socket is made before a fork, so
 * Weft takes it for one another process may share.  A second UT, which
 * counts sched_yield calls meanwhile, is the one that accepts, 200 ms
 * later.  Until the twenty-fourth stop the connect was made under the
 * runtime lock, at a system call the monitor does not take: on two VPs the
 * counter stopped at its first Weft call, on one VP it never ran, and in
 * both the test deadlocked (its alarm ends it).  Now the counter must count
 * while the connect waits (more than 1,000 yields on two VPs, where it has
 * a VP of its own; at least one on one VP, where it runs once the monitor
 * has handed the VP on), and the connect must succeed.  accept on a shared
 * listener (blocking when another process took the connection after the
 * poll) is made at the same takeable system call.
 */
#include "mn_test.h"

#include <weft.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOLD_NS (200LL * 1000 * 1000)
#define ROUNDS 3

static int vps;
static int listener;
static struct sockaddr_un where;
static volatile unsigned long count;
static volatile int connecting;

static void *connector(void *arg)
{
	int fd = (int)(intptr_t)arg;
	__atomic_store_n(&connecting, 1, __ATOMIC_RELEASE);
	errno = 0;
	CHECK_EQ(connect(fd, (struct sockaddr *)&where, sizeof where), 0);
	return NULL;
}

static void *counter(void *arg)
{
	unsigned long *counted = arg;
	while (!__atomic_load_n(&connecting, __ATOMIC_ACQUIRE))
		sched_yield();
	unsigned long before = count;
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < HOLD_NS) {
		count++;
		sched_yield();
	}
	*counted = count - before;
	/* room in the backlog: the connect ends */
	int a = accept(listener, NULL, NULL);
	CHECK(a >= 0);
	close(a);
	return NULL;
}

static void one_round(void)
{
	int queued = socket(AF_UNIX, SOCK_STREAM, 0);
	int blocked = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(queued >= 0 && blocked >= 0);
	/* shared, as far as Weft can tell: made before a fork */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* fills the backlog of 0: the next connect waits for an accept */
	CHECK_OK(connect(queued, (struct sockaddr *)&where, sizeof where));
	connecting = 0;
	unsigned long counted = 0;
	pthread_t c, k;
	CHECK_OK(pthread_create(&k, NULL, counter, &counted));
	CHECK_OK(pthread_create(&c, NULL, connector, (void *)(intptr_t)blocked));
	CHECK_OK(pthread_join(c, NULL));
	CHECK_OK(pthread_join(k, NULL));
	if (counted <= (vps >= 2 ? 1000u : 0u))
		fprintf(stderr, "%d VPs: the counter counted %lu during the connect\n", vps, counted);
	CHECK(counted > (vps >= 2 ? 1000u : 0u));
	int a = accept(listener, NULL, NULL);    /* the queued one */
	CHECK(a >= 0);
	close(a);
	close(queued);
	close(blocked);
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	vps = (int)s.vps;
	alarm(60);                           /* the old runtime deadlocked here */
	listener = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(listener >= 0);
	memset(&where, 0, sizeof where);
	where.sun_family = AF_UNIX;
	/* an abstract name: nothing to clean up */
	snprintf(where.sun_path + 1, sizeof where.sun_path - 1, "weft-mn-takeable-%d", (int)getpid());
	CHECK_OK(bind(listener, (struct sockaddr *)&where, sizeof where));
	CHECK_OK(listen(listener, 0));
	for (int i = 0; i < ROUNDS; i++)
		one_round();
	close(listener);
	return 0;
}
