/* Bershad's restartable atomic sequence: a load/compute/store increment
 * that is not atomic.  Four UTs share a counter under a tight slice: without
 * registration updates are lost (the control), with weft_ras_register every
 * interrupted sequence restarts from its first instruction and none is lost;
 * the rollbacks are counted. */
#include "preempt_test.h"

volatile uint64_t ras_counter;

/* The multiplies widen the window between load and store; the single
 * committing store is the last instruction of the sequence. */
__asm__(".text\n"
	".globl ras_increment, ras_seq_begin, ras_seq_end\n"
	".type ras_increment, @function\n"
	"ras_increment:\n"
	"ras_seq_begin:\n"
	"  movq ras_counter(%rip), %rax\n"
	"  movq $3, %rcx\n"
	"  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n"
	"  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n"
	"  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n  imulq %rcx, %rcx\n"
	"  andq $1, %rcx\n"
	"  addq %rcx, %rax\n"
	"  movq %rax, ras_counter(%rip)\n"
	"ras_seq_end:\n"
	"  ret\n"
	".size ras_increment, .-ras_increment\n");
void ras_increment(void);
extern char ras_seq_begin[], ras_seq_end[];

#define NTH 4
static const uint64_t per_ut = 500 * 1000;

static void *incrementer(void *arg)
{
	for (uint64_t i = 0; i < per_ut; i++)
		ras_increment();
	return NULL;
}

static uint64_t run_round(void)
{
	ras_counter = 0;
	pthread_t t[NTH];
	for (int i = 0; i < NTH; i++)
		CHECK_OK(pthread_create(&t[i], NULL, incrementer, NULL));
	for (int i = 0; i < NTH; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	return ras_counter;
}

int main(void)
{
	preempt_test_slice(20 * 1000);

	struct weft_stats s0 = preempt_test_stats();
	uint64_t unprotected = run_round();
	struct weft_stats s1 = preempt_test_stats();
	/* the tick switched the incrementers many times (how many depends on
	 * the slice in force, never below the machine's tick-cost floor) */
	CHECK(s1.preemptions - s0.preemptions > 10);
	CHECK(unprotected < NTH * per_ut);          /* the control: updates were lost */
	CHECK_EQ(s1.ras_rollbacks, s0.ras_rollbacks);

	CHECK_EQ(weft_ras_register(ras_seq_end, ras_seq_begin), EINVAL);
	CHECK_OK(weft_ras_register(ras_seq_begin, ras_seq_end));
	uint64_t protected_count = run_round();
	struct weft_stats s2 = preempt_test_stats();
	CHECK_EQ(protected_count, NTH * per_ut);
	CHECK(s2.ras_rollbacks - s1.ras_rollbacks > 0);
	return 0;
}
