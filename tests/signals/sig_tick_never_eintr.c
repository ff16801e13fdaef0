/*
 * sig_tick_never_eintr — the runtime's own signals (Weft's time-slice tick)
 * never reach the program as EINTR.
 *
 * Invariant: with time slicing on (the default) and two busy threads that
 * never call anything beside it, a thread that runs, for 2 seconds, short
 * timed waits that a handler would interrupt — poll, select, epoll_wait,
 * nanosleep, clock_nanosleep and usleep, both through libc and as raw
 * syscall(SYS_...) calls that no library wraps — sees every one return
 * normally (0, or 0 ready descriptors): zero EINTR.  And sigsuspend, which
 * returns only after a handler ran, returns exactly once per program
 * signal (SIGUSR2 sent to it by a third thread), never because of the tick.
 */
#include "sig_test.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

static volatile int hits;
static void on_usr2(int sig, siginfo_t *si, void *uc) { hits = hits + 1; }

static volatile int stop;

static void *busy(void *arg)
{
	while (!stop)
		__asm__ volatile("" ::: "memory");
	return NULL;
}

static void *kicker(void *arg)
{
	pthread_t target = *(pthread_t *)arg;
	while (!stop) {
		sig_sleep_ms(10);
		CHECK_OK(pthread_kill(target, SIGUSR2));
	}
	return NULL;
}

enum { P_POLL, P_SYS_POLL, P_PPOLL, P_SELECT, P_SYS_SELECT, P_EPOLL, P_SYS_EPOLL, P_NANOSLEEP,
       P_SYS_NANOSLEEP, P_SYS_CLOCK_NANOSLEEP, P_USLEEP, P_SIGSUSPEND, NP };
static const char *const names[] = { "poll", "SYS_poll", "ppoll", "select", "SYS_select", "epoll_wait",
				     "SYS_epoll_wait", "nanosleep", "SYS_nanosleep", "SYS_clock_nanosleep",
				     "usleep", "sigsuspend" };
static long eintr[NP], calls[NP], spurious_suspend;

int main(void)
{
	sig_on(SIGUSR2, on_usr2, 0, 0);
	sig_mask1(SIG_BLOCK, SIGUSR2);   /* only sigsuspend lets it in */
	int ep = epoll_create1(0);
	CHECK(ep >= 0);
	pthread_t self = pthread_self(), b1, b2, k;
	CHECK_OK(pthread_create(&b1, NULL, busy, NULL));
	CHECK_OK(pthread_create(&b2, NULL, busy, NULL));
	CHECK_OK(pthread_create(&k, NULL, kicker, &self));
	sigset_t open_mask;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &open_mask));
	sigdelset(&open_mask, SIGUSR2);
	int64_t end = test_now_ns() + 2000 * SIG_MS;
	for (int i = 0; test_now_ns() < end; i = (i + 1) % NP) {
		struct timespec ts = { 0, 2 * SIG_MS };
		struct timeval tv = { 0, 2000 };
		struct epoll_event ev;
		long r;
		switch (i) {
		case P_POLL: r = poll(NULL, 0, 2); break;
		case P_SYS_POLL: r = syscall(SYS_poll, NULL, 0, 2); break;
		case P_PPOLL: r = ppoll(NULL, 0, &ts, NULL); break;
		case P_SELECT: r = select(0, NULL, NULL, NULL, &tv); break;
		case P_SYS_SELECT: r = syscall(SYS_select, 0, NULL, NULL, NULL, &tv); break;
		case P_EPOLL: r = epoll_wait(ep, &ev, 1, 2); break;
		case P_SYS_EPOLL: r = syscall(SYS_epoll_wait, ep, &ev, 1, 2); break;
		case P_NANOSLEEP: r = nanosleep(&ts, NULL); break;
		case P_SYS_NANOSLEEP: r = syscall(SYS_nanosleep, &ts, NULL); break;
		case P_SYS_CLOCK_NANOSLEEP:
			/* the raw call returns the error number, not -1 */
			r = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
			if (r == -1 && errno == EINTR)
				break;
			r = 0;
			break;
		case P_USLEEP: r = usleep(2000); break;
		case P_SIGSUSPEND: {
			int before = hits;
			r = sigsuspend(&open_mask);
			CHECK_EQ(r, -1);
			if (errno == EINTR && hits == before)
				spurious_suspend++;
			r = 0;
			break;
		}
		default: r = 0;
		}
		calls[i]++;
		if (r == -1) {
			CHECK_EQ(errno, EINTR);
			eintr[i]++;
		} else {
			CHECK_EQ(r, 0);
		}
	}
	stop = 1;
	CHECK_OK(pthread_join(k, NULL));
	CHECK_OK(pthread_join(b1, NULL));
	CHECK_OK(pthread_join(b2, NULL));
	long total = 0;
	for (int i = 0; i < NP; i++) {
		if (eintr[i])
			fprintf(stderr, "%s: %ld EINTR in %ld calls\n", names[i], eintr[i], calls[i]);
		total += eintr[i];
		CHECK(calls[i] > 0);
	}
	if (spurious_suspend)
		fprintf(stderr, "sigsuspend: %ld returns with no program handler run\n", spurious_suspend);
	CHECK_EQ(total, 0);
	CHECK_EQ(spurious_suspend, 0);
#ifndef SIG_NPTL
	CHECK(test_stats().ticks > 0);      /* the tick was on all along */
#endif
	return 0;
}
