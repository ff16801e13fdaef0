/*
 * sig_sync_fault_blocked_ends_process — a fault whose signal is blocked for
 * the faulting thread ends the process, as Linux's force_sig_info does,
 * while every other thread's fault still reaches the handler.
 *
 * Invariant, each in a child process (its end is the result):
 *   - a thread that blocked SIGSEGV with pthread_sigmask and reads an
 *     unmapped page: the child dies of SIGSEGV, the handler never runs;
 *   - a SIGSEGV handler (no SA_NODEFER) that faults again inside itself:
 *     the handler ran once, then the child dies of SIGSEGV;
 *   - the same handler with SA_NODEFER: it runs again inside itself, and
 *     leaves both levels by siglongjmp; the child exits 0;
 *   - a handler on one thread that yields the processor while it runs
 *     (the kernel blocks SIGSEGV there for that thread alone): another
 *     thread's fault meanwhile reaches the handler; both exit 0.  Under
 *     Weft a handler that yields switches its carrier to another UT, whose
 *     fault the kernel would otherwise find blocked (the carrier's mask is
 *     every UT's);
 *   - the same with a one-shot SIGSEGV handler (SA_RESETHAND) that also
 *     blocks SIGFPE (sa_mask) while it runs: another thread's division by
 *     zero meanwhile reaches the SIGFPE handler, and afterwards sigaction
 *     reads SIGSEGV's action back as SIG_DFL; the child exits 0.
 * The handler reports each run on a pipe, so the parent counts them.
 */
#include "sig_test.h"

#include <setjmp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char *hole;
static int report_fd;
static __thread sigjmp_buf *my_jb;
static __thread int depth;
static volatile int in_handler;     /* thread A is inside its handler */
static volatile int b_done;

static void report(char c)
{
	ssize_t n = write(report_fd, &c, 1);
	(void)n;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	report('h');
	if (++depth < 2) {
		/* a second fault inside the handler */
		volatile char c = hole[1];
		(void)c;
	}
	depth = 0;
	siglongjmp(*my_jb, sig);
}

/* The handler for the last case: thread A's run waits inside it until B
 * has faulted and come back; B's run returns at once by the jump. */
static __thread int is_a;
static void on_fault_yield(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	report(is_a ? 'a' : 'b');
	if (is_a) {
		in_handler = 1;
		if (!sig_wait_for(&b_done, 1, 10000))
			_exit(5);
	}
	siglongjmp(*my_jb, sig);
}

static void on_fpe(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	report('b');
	siglongjmp(*my_jb, sig);
}

/* noipa: with a constant dividend of 1, gcc turns the division into compares */
static __attribute__((noipa, no_sanitize_undefined)) int divide(int a, int b) { return a / b; }
static volatile int zero = 0;

static void install(void (*fn)(int, siginfo_t *, void *), int flags)
{
	sig_on(SIGSEGV, fn, flags, 0);
}

static void *blocked_faulter(void *arg)
{
	(void)arg;
	sig_mask1(SIG_BLOCK, SIGSEGV);
	volatile char c = hole[0];
	(void)c;
	_exit(4);                    /* not reached: the fault ends the process */
}

static void fault_once_and_jump(void)
{
	sigjmp_buf jb;
	my_jb = &jb;
	if (sigsetjmp(jb, 1) == 0) {
		volatile char c = hole[0];
		(void)c;
		_exit(6);
	}
}

static void *thread_a(void *arg)
{
	(void)arg;
	is_a = 1;
	fault_once_and_jump();
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	if (!sig_wait_for(&in_handler, 1, 10000))
		_exit(7);
	fault_once_and_jump();
	b_done = 1;
	return NULL;
}

static void *thread_b_divides(void *arg)
{
	(void)arg;
	if (!sig_wait_for(&in_handler, 1, 10000))
		_exit(7);
	sigjmp_buf jb;
	my_jb = &jb;
	if (sigsetjmp(jb, 1) == 0) {
		volatile int q = divide(100, zero);
		(void)q;
		_exit(6);
	}
	b_done = 1;
	return NULL;
}

/* Run `body` in a child; return its wait status and what it reported. */
static int in_child(void (*body)(void), char *seen, size_t size)
{
	int p[2];
	CHECK_OK(pipe(p));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		body();
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	for (;;) {
		ssize_t r = read(p[0], seen + n, size - 1 - n);
		if (r > 0) {
			n += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	seen[n] = 0;
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		CHECK_EQ(errno, EINTR);
	return st;
}

static void case_blocked(void)
{
	install(on_fault, 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, blocked_faulter, NULL));
	pthread_join(t, NULL);
	_exit(3);
}

static void case_nested(void)
{
	install(on_fault, 0);
	fault_once_and_jump();
	_exit(0);
}

static void case_nested_nodefer(void)
{
	install(on_fault, SA_NODEFER);
	fault_once_and_jump();
	/* and once more: nothing is left held */
	fault_once_and_jump();
	_exit(0);
}

static void case_yield_in_handler(void)
{
	install(on_fault_yield, 0);
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, thread_a, NULL));
	CHECK_OK(pthread_create(&b, NULL, thread_b, NULL));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	_exit(0);
}

static void case_resethand_mask(void)
{
	sig_on(SIGSEGV, on_fault_yield, SA_RESETHAND, SIGFPE);
	sig_on(SIGFPE, on_fpe, 0, 0);
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, thread_a, NULL));
	CHECK_OK(pthread_create(&b, NULL, thread_b_divides, NULL));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	struct sigaction old;
	CHECK_OK(sigaction(SIGSEGV, NULL, &old));
	_exit(old.sa_handler == SIG_DFL ? 0 : 8);
}

/* body in a child: the process died of sig (0: exited with 0) and the
 * handlers noted exactly `want` */
static void expect(void (*body)(void), int sig, const char *want)
{
	char seen[64];
	int st = in_child(body, seen, sizeof seen);
	if (sig) {
		CHECK(WIFSIGNALED(st));
		CHECK_EQ(WTERMSIG(st), sig);
	} else {
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), 0);
	}
	if (strcmp(seen, want) != 0) {
		fprintf(stderr, "handlers noted \"%s\", expected \"%s\"\n", seen, want);
		CHECK(strcmp(seen, want) == 0);
	}
}

int main(void)
{
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED);
	expect(case_blocked, SIGSEGV, "");
	expect(case_nested, SIGSEGV, "h");
	expect(case_nested_nodefer, 0, "hhhh");
	for (int i = 0; i < 20; i++) {
		expect(case_yield_in_handler, 0, "ab");
		expect(case_resethand_mask, 0, "ab");
	}
	return 0;
}
