/*
 * monitor_keeps_lowest_fd — the monitor reads /proc files all the time,
 * and open() takes the lowest free descriptor: it must never take, even
 * for an instant, a number in the program's table.  Asserts: while the
 * monitor samples the carrier (a second UT exists, main runs outside
 * Weft), every open() of main returns the lowest free number, the one it
 * got first, 200,000 times; close(1) then open() gets 1 (the redirect
 * idiom); and the monitor did sample meanwhile (a UT blocked in an
 * unwrapped call was taken over at least once).
 */
#include "check.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>

#define OPENS 200000

static int pipefd[2];

/* Blocks in a call no wrapper sees until main writes: the monitor takes
 * the VP from it, so main runs beside and the monitor keeps looking. */
static void *unwrapped_reader(void *arg)
{
	char c;
	CHECK_EQ(syscall(SYS_read, pipefd[0], &c, 1), 1);
	return arg;
}

static void *sleeper(void *arg)
{
	usleep(300000);
	return arg;
}

int main(void)
{
	const char *act = getenv("WEFT_ACTIVATIONS"), *thr = getenv("WEFT_BLOCK_THRESHOLD");
	if ((act && strcmp(act, "off") == 0) || (thr && strcmp(thr, "0") == 0))
		SKIP("no monitor here: the reader would hold the VP for good");
	CHECK_OK(pipe(pipefd));
	struct weft_stats s0 = test_stats();
	pthread_t r, s;
	CHECK_OK(pthread_create(&s, NULL, sleeper, NULL));
	CHECK_OK(pthread_create(&r, NULL, unwrapped_reader, NULL));
	sched_yield();                           /* the reader blocks; the monitor takes the VP */
	int first = open("/dev/null", O_RDONLY);
	CHECK(first >= 0);
	CHECK_OK(close(first));
	for (int i = 0; i < OPENS; i++) {
		int fd = open("/dev/null", O_RDONLY);
		CHECK_EQ(fd, first);
		CHECK_OK(close(fd));
	}
	/* the redirect idiom: stdout's number is the lowest free one */
	int saved = dup(1);
	CHECK(saved >= 0);
	for (int i = 0; i < 2000; i++) {
		CHECK_OK(close(1));
		int fd = open("/dev/null", O_WRONLY);
		CHECK_EQ(fd, 1);
	}
	CHECK_EQ(dup2(saved, 1), 1);
	CHECK_OK(close(saved));
	CHECK_EQ(write(pipefd[1], "x", 1), 1);
	CHECK_OK(pthread_join(r, NULL));
	CHECK_OK(pthread_join(s, NULL));
	/* the monitor looked meanwhile: it took the VP from the reader */
	struct weft_stats s1 = test_stats();
	CHECK(s1.takeovers > s0.takeovers);
	return 0;
}
