/*
 * asan_leaks_kept_by_uts — LeakSanitizer finds no leak in memory that
 * only Weft's own mappings point to (src/runtime/lsan_roots.c), and still
 * finds the program's own.  At exit:
 *   - 4 UTs are blocked, each holding the only pointer to a malloc'd block
 *     in a local on its own stack (a pooled stack: Weft's mapping);
 *   - 2 UTs with a 1 MiB stack (a mapping of its own) do the same;
 *   - 2 copy-stack UTs do the same (their frames saved in Weft's areas);
 *   - 8 UTs have ended after setting a key's value, so Weft keeps their
 *     key storage (heap blocks) with their slots in the UT table.
 * Mode "kept": nothing else; LeakSanitizer must report nothing.
 * Mode "leak": main also drops a block of its own (lose_block), which
 * LeakSanitizer must report (asan_leaks_kept_by_uts.sh checks both).
 * Before lsan_roots.c every one of the kept blocks was reported.
 */
#include "check.h"

#include <semaphore.h>
#include <weft.h>

static sem_t never;                 /* posted by nobody: the UTs block for good */
static sem_t holding;               /* each UT says it holds its block */
static pthread_key_t key;
static int key_value;               /* a static: the value is no leak of its own */

static __attribute__((noinline)) void *hold(void)
{
	/* the only pointer to the block is this local, on the UT's stack */
	char *volatile block = malloc(100);
	CHECK(block != NULL);
	block[0] = 1;
	CHECK_OK(sem_post(&holding));
	while (sem_wait(&never) != 0)
		;
	return (void *)block;
}

static void *holder(void *arg)
{
	(void)arg;
	return hold();
}

static void *sets_key(void *arg)
{
	CHECK_OK(pthread_setspecific(key, &key_value));
	return arg;
}

static __attribute__((noinline)) void lose_block(void)
{
	char *volatile p = malloc(77);
	CHECK(p != NULL);
	p[0] = 1;
	p = NULL;
}

static void make_holders(int n, const pthread_attr_t *a)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, a, holder, NULL));
		CHECK_OK(pthread_detach(t));
	}
	for (int i = 0; i < n; i++)
		while (sem_wait(&holding) != 0)
			;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	CHECK_OK(sem_init(&never, 0, 0));
	CHECK_OK(sem_init(&holding, 0, 0));
	CHECK_OK(pthread_key_create(&key, NULL));

	make_holders(4, NULL);
	pthread_attr_t big, copy;
	CHECK_OK(pthread_attr_init(&big));
	CHECK_OK(pthread_attr_setstacksize(&big, 1 << 20));
	make_holders(2, &big);
	CHECK_OK(pthread_attr_init(&copy));
	CHECK_OK(weft_attr_setstackmode(&copy, WEFT_STACK_COPY));
	make_holders(2, &copy);

	for (int i = 0; i < 8; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, sets_key, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	if (strcmp(argv[1], "leak") == 0)
		lose_block();
	printf("done\n");
	return 0;
}
