/* Thread-specific data: values are per UT, destructors run at exit with the
 * value for non-NULL values of live keys only, a destructor that stores a
 * value again is called again up to PTHREAD_DESTRUCTOR_ITERATIONS rounds
 * and no more, a value stored by a destructor for another key gets its own
 * round, deleted keys read NULL and never call their destructor, a reused
 * slot starts with no values, and running out of keys is EAGAIN. */
#include "check.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

static pthread_key_t k_plain, k_again, k_a, k_b;
/* C11 atomics: the destructors of several UTs update them as each ends
 * (and they are read after sched_yield, which glibc declares "leaf") */
static atomic_int plain_calls, again_calls, a_calls, b_calls;
static _Atomic(void *) plain_last;

static void plain_dtor(void *v)
{
	plain_calls++;
	plain_last = v;
	CHECK(pthread_getspecific(k_plain) == NULL);   /* cleared before the call */
}

/* Stores itself again every time: POSIX bounds the rounds. */
static void again_dtor(void *v)
{
	again_calls++;
	CHECK_OK(pthread_setspecific(k_again, v));
}

static void b_dtor(void *v) { b_calls++; }
static void a_dtor(void *v)
{
	a_calls++;
	CHECK_OK(pthread_setspecific(k_b, (void *)0xb));   /* b's round comes next */
}

static void *set_plain(void *arg)
{
	CHECK(pthread_getspecific(k_plain) == NULL);
	CHECK_OK(pthread_setspecific(k_plain, arg));
	sched_yield();
	CHECK(pthread_getspecific(k_plain) == arg);
	return NULL;
}

static void *set_null(void *arg)
{
	CHECK_OK(pthread_setspecific(k_plain, NULL));
	return NULL;
}

static void *set_again(void *arg)
{
	CHECK_OK(pthread_setspecific(k_again, arg));
	return NULL;
}

static void *set_a(void *arg)
{
	CHECK_OK(pthread_setspecific(k_a, arg));
	return NULL;
}

static void *set_then_exit(void *arg)
{
	CHECK_OK(pthread_setspecific(k_plain, arg));
	pthread_exit(NULL);
}

static void run(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, fn, arg));
	CHECK_OK(pthread_join(t, NULL));
}

static void test_values_and_destructor(void)
{
	CHECK_OK(pthread_key_create(&k_plain, plain_dtor));
	CHECK(pthread_getspecific(k_plain) == NULL);
	CHECK_OK(pthread_setspecific(k_plain, (void *)0x1000));

	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t[i], NULL, set_plain, (void *)(intptr_t)(0x100 + i)));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(plain_calls, 4);
	CHECK(pthread_getspecific(k_plain) == (void *)0x1000);   /* main's own */

	run(set_null, NULL);
	CHECK_EQ(plain_calls, 4);          /* NULL values have no destructor call */
	run(set_then_exit, (void *)0x55);
	CHECK_EQ(plain_calls, 5);
	CHECK(plain_last == (void *)0x55);

	/* detached UTs run destructors too */
	pthread_attr_t a;
	pthread_t d;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_create(&d, &a, set_then_exit, (void *)0x66));
	CHECK_OK(pthread_attr_destroy(&a));
	/* one VP: it has run after two yields; more (WEFT_VPS): it may run
	 * on another, whose kernel thread a loaded machine may not run for a
	 * while, so wait for it (bounded by 10 s) */
	sched_yield();
	sched_yield();
	for (int i = 0; i < 10000 && plain_calls < 6; i++)
		usleep(1000);
	CHECK_EQ(plain_calls, 6);
	CHECK(plain_last == (void *)0x66);
}

static void test_rounds(void)
{
	CHECK_OK(pthread_key_create(&k_again, again_dtor));
	run(set_again, (void *)0x2);
	CHECK_EQ(again_calls, PTHREAD_DESTRUCTOR_ITERATIONS);

	CHECK_OK(pthread_key_create(&k_a, a_dtor));
	CHECK_OK(pthread_key_create(&k_b, b_dtor));
	run(set_a, (void *)0xa);
	CHECK_EQ(a_calls, 1);
	CHECK_EQ(b_calls, 1);
}

static atomic_int value_set, key_renewed;

static void *hold_until_deleted(void *arg)
{
	CHECK_OK(pthread_setspecific(k_plain, arg));
	value_set = 1;
	while (!key_renewed)               /* main deletes and re-creates the key */
		sched_yield();
	CHECK(pthread_getspecific(k_plain) == NULL);
	return NULL;
}

static void test_delete(void)
{
	int before = plain_calls;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, hold_until_deleted, (void *)0x77));
	while (!value_set)                 /* (several VPs: it may run meanwhile) */
		sched_yield();
	pthread_key_t old = k_plain;
	CHECK_OK(pthread_key_delete(k_plain));
	CHECK_EQ(pthread_key_delete(old), EINVAL);
	CHECK_EQ(pthread_setspecific(old, (void *)1), EINVAL);
	CHECK(pthread_getspecific(old) == NULL);
	CHECK_OK(pthread_key_create(&k_plain, plain_dtor));   /* maybe the same index */
	CHECK(pthread_getspecific(k_plain) == NULL);          /* main's 0x1000 is gone */
	key_renewed = 1;
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(plain_calls, before);     /* a value of a deleted key: no call */
	CHECK_OK(pthread_key_delete(k_plain));

	CHECK_EQ(pthread_key_delete(PTHREAD_KEYS_MAX), EINVAL);
	CHECK_EQ(pthread_key_delete((pthread_key_t)-1), EINVAL);
	CHECK_EQ(pthread_setspecific(PTHREAD_KEYS_MAX, (void *)1), EINVAL);
	CHECK(pthread_getspecific(PTHREAD_KEYS_MAX) == NULL);
	CHECK(pthread_getspecific((pthread_key_t)-1) == NULL);
}

static pthread_key_t k_reuse;
static void *set_reuse(void *arg)
{
	CHECK(pthread_getspecific(k_reuse) == NULL);   /* nothing from the slot's last UT */
	CHECK_OK(pthread_setspecific(k_reuse, arg));
	return NULL;
}

static void test_slot_reuse(void)
{
	CHECK_OK(pthread_key_create(&k_reuse, NULL));
	for (int i = 1; i <= 100; i++)
		run(set_reuse, (void *)(intptr_t)i);
	CHECK_OK(pthread_key_delete(k_reuse));
}

static void test_exhaustion(void)
{
	static pthread_key_t all[PTHREAD_KEYS_MAX + 1];
	int n = 0;
	int e;
	while ((e = pthread_key_create(&all[n], NULL)) == 0) {
		CHECK(n < PTHREAD_KEYS_MAX);
		n++;
	}
	CHECK_EQ(e, EAGAIN);
	CHECK(n >= PTHREAD_KEYS_MAX - 8);
	CHECK_OK(pthread_setspecific(all[n - 1], (void *)7));   /* the last block works */
	CHECK(pthread_getspecific(all[n - 1]) == (void *)7);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_key_delete(all[i]));
	pthread_key_t k;
	CHECK_OK(pthread_key_create(&k, NULL));
	CHECK(pthread_getspecific(k) == NULL);
	CHECK_OK(pthread_key_delete(k));
}

int main(void)
{
	test_values_and_destructor();
	test_rounds();
	test_delete();
	test_slot_reuse();
	test_exhaustion();
	return 0;
}
