/*
 * copystack_refusals — what cannot work with copy-stack UTs is refused
 * with an error, never turned into corrupted memory (weft.h):
 *   - weft_attr_setstackmode: a bad attribute or mode, or WEFT_STACK_COPY
 *     on an attribute with a stack of the program's, is EINVAL;
 *   - pthread_attr_setstack after WEFT_STACK_COPY: pthread_create EINVAL;
 *   - a copy-stack creator passing a pointer into its own stack to
 *     pthread_create: EINVAL, with one line saying why; a pointer to
 *     memory that outlives the call works;
 *   - weft_attr_getstackmode reports the mode asked, else the process's;
 *     pthread_getattr_np of a copy-stack UT says copy;
 *   - a stack size no run stack can hold: EAGAIN, and the runtime works on.
 */
#include "check.h"

#include <errno.h>
#include <sys/mman.h>

static void *ret_arg(void *arg) { return arg; }

static volatile int got;
static void *read_arg(void *arg)
{
	got = *(int *)arg;
	return NULL;
}

static void *creator(void *arg)
{
	int on_my_stack = 42;
	pthread_t t;
	/* refused: the new UT would read another UT's bytes there */
	CHECK_EQ(pthread_create(&t, NULL, read_arg, &on_my_stack), EINVAL);
	static int outlives = 7;
	CHECK_OK(pthread_create(&t, NULL, read_arg, &outlives));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got, 7);
	/* its own mode, by getattr_np */
	pthread_attr_t a;
	int mode = 0;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(weft_attr_getstackmode(&a, &mode));
	CHECK_EQ(mode, WEFT_STACK_COPY);
	CHECK_OK(pthread_attr_destroy(&a));
	return (void *)1;
}

static void from_copy_creator(void *arg)
{
	void *r;
	pthread_t t = test_spawn_copy(creator, NULL, 0);
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((long)r, 1);
}

int main(void)
{
	pthread_attr_t a;
	int mode = 0;
	CHECK_EQ(weft_attr_setstackmode(NULL, WEFT_STACK_COPY), EINVAL);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_EQ(weft_attr_setstackmode(&a, 0), EINVAL);
	CHECK_EQ(weft_attr_setstackmode(&a, 3), EINVAL);
	CHECK_EQ(weft_attr_getstackmode(&a, NULL), EINVAL);
	/* the default is the process's (WEFT_STACK_MODE) */
	CHECK_OK(weft_attr_getstackmode(&a, &mode));
	const char *env = getenv("WEFT_STACK_MODE");
	CHECK_EQ(mode, env && strcmp(env, "copy") == 0 ? WEFT_STACK_COPY : WEFT_STACK_SEPARATE);
	CHECK_OK(weft_attr_setstackmode(&a, WEFT_STACK_SEPARATE));
	CHECK_OK(weft_attr_getstackmode(&a, &mode));
	CHECK_EQ(mode, WEFT_STACK_SEPARATE);
	CHECK_OK(weft_attr_setstackmode(&a, WEFT_STACK_COPY));
	CHECK_OK(weft_attr_getstackmode(&a, &mode));
	CHECK_EQ(mode, WEFT_STACK_COPY);

	/* a stack of the program's cannot be shared: either order */
	size_t sz = 1 << 20;
	void *stk = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(stk != MAP_FAILED);
	CHECK_OK(pthread_attr_setstack(&a, stk, sz));
	pthread_t t;
	CHECK_EQ(pthread_create(&t, &a, ret_arg, NULL), EINVAL);
	pthread_attr_t b;
	CHECK_OK(pthread_attr_init(&b));
	CHECK_OK(pthread_attr_setstack(&b, stk, sz));
	CHECK_EQ(weft_attr_setstackmode(&b, WEFT_STACK_COPY), EINVAL);
	CHECK_OK(weft_attr_setstackmode(&b, WEFT_STACK_SEPARATE));
	CHECK_OK(pthread_create(&t, &b, ret_arg, (void *)5));
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((long)r, 5);
	CHECK_OK(pthread_attr_destroy(&b));
	CHECK_OK(pthread_attr_destroy(&a));

	/* deeper than any run stack: EAGAIN, and copy-stack UTs still work */
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(weft_attr_setstackmode(&a, WEFT_STACK_COPY));
	CHECK_OK(pthread_attr_setstacksize(&a, (size_t)1 << 40));
	CHECK_EQ(pthread_create(&t, &a, ret_arg, NULL), EAGAIN);
	CHECK_OK(pthread_attr_destroy(&a));

	/* from a copy-stack UT: a pointer into its stack is refused, with
	 * one line on stderr that says why */
	static char err[4096];
	int st = test_in_child(from_copy_creator, NULL, err, sizeof err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "the child's status %#x; its stderr:\n%s\n", (unsigned)st, err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(err, "pthread_create: EINVAL: copy-stack thread") != NULL);
	CHECK(strstr(err, "passed a pointer into its own stack") != NULL);
	munmap(stk, sz);
	return 0;
}
