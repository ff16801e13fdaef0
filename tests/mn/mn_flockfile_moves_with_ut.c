/*
 * mn_flockfile_moves_with_ut — a thread that holds flockfile(f) across a
 * call that parks, and goes on on another VP, can still write to f.
 *
 * glibc's FILE lock is recursive and knows its owner by THREAD_SELF, the
 * VP's identity (runtime/tls.c).  A UT that took it on one VP and came back
 * on another was a stranger to it: its next fputc(f) waited in the kernel
 * for the lock it held itself, and that VP stopped for good (until the
 * twenty-ninth stop; docs/mn.md listed it under "Not yet").  The lock's
 * owner now moves with the UT (posix/stdio_lock.c, the hook ut_rehomed).
 *
 * Checked, under a 30 s alarm:
 *  - 4 UTs, 3,000 rounds each: flockfile(f), fputc of the UT's letter, a
 *    park (nanosleep of 1 µs, or sched_yield), fputc of its capital, an
 *    ftrylockfile/funlockfile pair (recursive: it succeeds), funlockfile.
 *    The stream then holds every pair adjacent (no one wrote between a
 *    holder's two letters) and each UT's pairs exactly 3,000 times;
 *  - with two VPs in force (weft_stats_get: vps), some round came back on
 *    another kernel thread than it locked on, so the case was met;
 *  - after the last round, another UT takes f at once (ftrylockfile), so
 *    no round left it held.
 * Under one VP the same counts hold.
 */
#include "mn_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <weft.h>

enum { UTS = 4, ROUNDS = 3000 };

static FILE *f;
static char *buf;
static long moved;

static void *holder(void *arg)
{
	int i = (int)(intptr_t)arg;
	int lower = 'a' + i, upper = 'A' + i;
	for (int r = 0; r < ROUNDS; r++) {
		flockfile(f);
		pid_t before = (pid_t)syscall(SYS_gettid);
		CHECK(fputc(lower, f) == lower);
		if (r % 2) {
			struct timespec ts = { 0, 1000 };
			CHECK_OK(nanosleep(&ts, NULL));
		} else {
			sched_yield();
		}
		if ((pid_t)syscall(SYS_gettid) != before)
			__atomic_add_fetch(&moved, 1, __ATOMIC_RELAXED);
		CHECK(fputc(upper, f) == upper);    /* waited for itself before */
		CHECK(ftrylockfile(f) == 0);        /* recursive */
		funlockfile(f);
		funlockfile(f);
	}
	return NULL;
}

static void *taker(void *arg)
{
	(void)arg;
	CHECK(ftrylockfile(f) == 0);
	CHECK(fputc('.', f) == '.');
	funlockfile(f);
	return NULL;
}

int main(void)
{
	alarm(30);
	size_t size = (size_t)UTS * ROUNDS * 2 + 2;
	buf = calloc(1, size);
	CHECK(buf);
	f = fmemopen(buf, size, "w+");
	CHECK(f);
	CHECK_OK(setvbuf(f, NULL, _IOFBF, 4096));
	mn_run_uts(UTS, holder);
	mn_run_uts(1, taker);
	CHECK_EQ(ftell(f), (long)UTS * ROUNDS * 2 + 1);
	CHECK_OK(fflush(f));

	long pairs[UTS] = { 0 };
	for (long k = 0; k < (long)UTS * ROUNDS * 2; k += 2) {
		int lo = buf[k], up = buf[k + 1];
		CHECK(lo >= 'a' && lo < 'a' + UTS);
		CHECK_EQ(up, lo - 'a' + 'A');        /* nobody between the two */
		pairs[lo - 'a']++;
	}
	CHECK_EQ(buf[(long)UTS * ROUNDS * 2], '.');
	for (int i = 0; i < UTS; i++)
		CHECK_EQ(pairs[i], ROUNDS);
	CHECK_OK(fclose(f));
	free(buf);

	struct weft_stats st;
	CHECK_OK(weft_stats_get(&st, sizeof st));
	if (st.vps >= 2)
		CHECK(moved > 0);
	return 0;
}
