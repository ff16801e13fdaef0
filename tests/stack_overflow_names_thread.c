/* A UT that overflows its stack kills the process with one line on stderr
 * naming the thread (Weft id and name) and the fault address, never silent
 * corruption.  Each case runs in a forked child whose stderr the parent
 * reads:
 *   - unbounded recursion on a default stack hits the default guard, also
 *     while main spins (under two VPs the victim then runs on a kernel
 *     thread Weft made, which needs an alternate signal stack of its own);
 *   - a touch in the middle of a large custom guard is recognised as well,
 *     for a guard made of page-table markers (64 KiB) and for one mapped
 *     PROT_NONE (1 TiB: runtime/stack.c never marks that many pages).
 * A stack created with guardsize 0 is the program's to manage and is never
 * reported (stack_guard0_low_pages_protected).
 * UT ids are 1 for main, then 2, 3, ... in creation order; the children
 * fork before the parent creates any UT, so the victim is always UT 2. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile uint64_t sink;
static volatile int keep_going = 1;   /* always 1: unbounded in practice */

static uint64_t recurse(uint64_t depth)
{
	volatile char pad[512];
	pad[0] = (char)depth;
	pad[sizeof pad - 1] = (char)depth;
	sink += pad[0];
	if (!keep_going)
		return depth;
	return recurse(depth + 1) + pad[sizeof pad - 1];   /* not a tail call */
}

static void *overflow(void *arg)
{
	sink = recurse(0);
	return NULL;
}

static size_t want_guard;

static void *touch_guard_middle(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t size, guard;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_getguardsize(&a, &guard));
	CHECK_EQ(guard, want_guard);
	sink = *((volatile char *)lo - guard / 2);
	return NULL;
}

/* In the child: one named UT, with `guard` bytes of guard (-1: default). */
struct child_args {
	void *(*fn)(void *);
	long guard;
	const char *name;
	bool main_spins;   /* main never parks: under two VPs the victim runs on
			    * the other kernel thread (one VP: the tick runs it) */
};

static volatile int named;
static void *(*volatile named_fn)(void *);

/* The UT's start: once main has named it (on several VPs it would
 * otherwise run, and overflow, before pthread_setname_np). */
static void *after_naming(void *arg)
{
	while (!named)
		sched_yield();
	return named_fn(arg);
}

static void child(void *p)
{
	const struct child_args *c = p;
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	if (c->guard >= 0)
		CHECK_OK(pthread_attr_setguardsize(&a, (size_t)c->guard));
	want_guard = (size_t)c->guard;
	named_fn = c->fn;
	CHECK_OK(pthread_create(&t, &a, after_naming, NULL));
	CHECK_OK(pthread_setname_np(t, c->name));
	named = 1;
	if (c->main_spins)
		for (;;)
			sink++;
	pthread_join(t, NULL);
	/* returning ends the child with 0: survived, and the parent fails */
}

/* Fork a child running `fn`; return its wait status and its stderr. */
static int run_child(void *(*fn)(void *), long guard, const char *name, char *err, size_t errsz,
		     bool main_spins)
{
	struct child_args c = { fn, guard, name, main_spins };
	return test_in_child(child, &c, err, errsz);
}

static int count_lines_with(const char *text, const char *what)
{
	int n = 0;
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[512];
		if (len >= sizeof buf)
			len = sizeof buf - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		if (strstr(buf, what))
			n++;
		line += len + (end ? 1 : 0);
	}
	return n;
}

/* Died of the fault: SIGSEGV normally; under ASan its own handler reports
 * the overflow after Weft's line and exits non-zero instead. */
static void check_died(int st, int sig, const char *err)
{
#ifdef WEFT_TEST_SANITIZE
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		return;
#endif
	if (!WIFSIGNALED(st) || WTERMSIG(st) != sig) {
		fprintf(stderr, "child status %#x, stderr:\n%s\n", st, err);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig);
	}
}

static void check_named(const char *err, const char *want)
{
	if (count_lines_with(err, want) != 1) {
		fprintf(stderr, "want one line with \"%s\" in:\n%s\n", want, err);
		CHECK_EQ(count_lines_with(err, want), 1);
	}
}

int main(void)
{
	static char err[16384];
	for (int spin = 0; spin < 2; spin++) {
		int st = run_child(overflow, -1, "deep-recurse", err, sizeof err, spin);
		check_died(st, SIGSEGV, err);
		check_named(err, "thread 2 (deep-recurse)");
		check_named(err, "fault at 0x");
		CHECK_EQ(count_lines_with(err, "weft:"), 1);
	}

	static const long guards[] = { 64 * 1024, 1L << 40 };
	for (int i = 0; i < 2; i++) {
		int st = run_child(touch_guard_middle, guards[i], "big-guard", err, sizeof err, false);
		check_died(st, SIGSEGV, err);
		check_named(err, "thread 2 (big-guard)");
		check_named(err, "fault at 0x");
	}
	return 0;
}
