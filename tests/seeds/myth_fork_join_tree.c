/* Myth fork/join trees: a thread forks two children and joins both, down
 * to depth D, and every value comes back up through th_join (the sum of
 * the leaves' numbers, exactly); a fork/join Fibonacci does the same with
 * uneven subtrees.  Joins of children that have already ended return their
 * values too, and a thread joined once cannot be joined again. */
#include "../check.h"
#include <errno.h>
#include <weft/myth.h>

static void *tree(void *arg)
{
	long v = (long)arg;                 /* depth << 32 | leaf number */
	long depth = v >> 32, id = v & 0xffffffff;
	if (depth == 0)
		return (void *)id;
	th_thread_t l = th_fork(tree, (void *)((depth - 1) << 32 | (2 * id)));
	th_thread_t r = th_fork(tree, (void *)((depth - 1) << 32 | (2 * id + 1)));
	CHECK(l && r);
	if (id & 1)
		th_yield();                 /* some join children that ended */
	long a = (long)th_join(l), b = (long)th_join(r);
	return (void *)(a + b);
}

static void *fib(void *arg)
{
	long k = (long)arg;
	if (k < 2)
		return arg;
	th_thread_t a = th_fork(fib, (void *)(k - 1));
	th_thread_t b = th_fork(fib, (void *)(k - 2));
	CHECK(a && b);
	return (void *)((long)th_join(a) + (long)th_join(b));
}

int main(void)
{
	CHECK_EQ(th_init(4), 0);            /* 4 VPs asked; Weft runs 1 */
	long depth = TEST_SCALE > 1 ? 9 : 12;
	th_thread_t root = th_fork(tree, (void *)(depth << 32));
	long leaves = 1L << depth;
	/* the leaves are numbered 0..leaves-1 */
	CHECK_EQ((long)th_join(root), (leaves - 1) * leaves / 2);
	CHECK(th_join(root) == TH_JOIN_FAILED);
	CHECK_EQ(errno, ESRCH);

	th_thread_t f = th_fork(fib, (void *)(long)(TEST_SCALE > 1 ? 14 : 18));
	CHECK_EQ((long)th_join(f), TEST_SCALE > 1 ? 377 : 2584);

	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.threads_live, 1);        /* every child joined and gone */
	return 0;
}
