/* Registers survive preemption: UTs keeping values only in registers (the
 * general ones, AVX ymm0-15, the x87 stack), in the red zone below %rsp of a
 * leaf function, and in MXCSR/x87 control modes, across thousands of fake
 * calls under a 100 us slice; every result checks out. */
#include "preempt_test.h"
#include <fenv.h>
#include <stdbool.h>

#define ROUNDS 4

/* Leaf function: 16 words in the red zone, checked over and over.
 * int redzone_loop(uint64_t iterations): 0 if they all survived. */
__asm__(".text\n"
	".globl redzone_loop\n"
	".type redzone_loop, @function\n"
	"redzone_loop:\n"
	"  movq $0x1111, -8(%rsp)\n  movq $0x2222, -16(%rsp)\n  movq $0x3333, -24(%rsp)\n"
	"  movq $0x4444, -32(%rsp)\n  movq $0x5555, -40(%rsp)\n  movq $0x6666, -48(%rsp)\n"
	"  movq $0x7777, -56(%rsp)\n  movq $0x8888, -64(%rsp)\n  movq $0x9999, -72(%rsp)\n"
	"  movq $0xaaaa, -80(%rsp)\n  movq $0xbbbb, -88(%rsp)\n  movq $0xcccc, -96(%rsp)\n"
	"  movq $0xdddd, -104(%rsp)\n  movq $0xeeee, -112(%rsp)\n  movq $0xffff, -120(%rsp)\n"
	"  movq $0x1234, -128(%rsp)\n"
	"1:\n"
	"  cmpq $0x1111, -8(%rsp)\n  jne 2f\n  cmpq $0x2222, -16(%rsp)\n  jne 2f\n"
	"  cmpq $0x3333, -24(%rsp)\n  jne 2f\n  cmpq $0x4444, -32(%rsp)\n  jne 2f\n"
	"  cmpq $0x5555, -40(%rsp)\n  jne 2f\n  cmpq $0x6666, -48(%rsp)\n  jne 2f\n"
	"  cmpq $0x7777, -56(%rsp)\n  jne 2f\n  cmpq $0x8888, -64(%rsp)\n  jne 2f\n"
	"  cmpq $0x9999, -72(%rsp)\n  jne 2f\n  cmpq $0xaaaa, -80(%rsp)\n  jne 2f\n"
	"  cmpq $0xbbbb, -88(%rsp)\n  jne 2f\n  cmpq $0xcccc, -96(%rsp)\n  jne 2f\n"
	"  cmpq $0xdddd, -104(%rsp)\n  jne 2f\n  cmpq $0xeeee, -112(%rsp)\n  jne 2f\n"
	"  cmpq $0xffff, -120(%rsp)\n  jne 2f\n  cmpq $0x1234, -128(%rsp)\n  jne 2f\n"
	"  decq %rdi\n  jnz 1b\n"
	"  xorl %eax, %eax\n  ret\n"
	"2:\n  movl $1, %eax\n  ret\n"
	".size redzone_loop, .-redzone_loop\n");
int redzone_loop(uint64_t iterations);

/* ymm0..ymm14 start at init[i] (4 x u64 lanes) and each gains 1 per lane per
 * iteration; r8..r15 count alongside. */
static void avx_loop(const uint64_t init[15][4], uint64_t out[15][4], uint64_t gpr[8], uint64_t iters)
{
	__asm__ volatile(
		"vpcmpeqq %%ymm15, %%ymm15, %%ymm15\n\t"
		"vpsrlq $63, %%ymm15, %%ymm15\n\t"          /* every lane = 1 */
		"vmovdqu 0(%[in]), %%ymm0\n\t   vmovdqu 32(%[in]), %%ymm1\n\t"
		"vmovdqu 64(%[in]), %%ymm2\n\t  vmovdqu 96(%[in]), %%ymm3\n\t"
		"vmovdqu 128(%[in]), %%ymm4\n\t vmovdqu 160(%[in]), %%ymm5\n\t"
		"vmovdqu 192(%[in]), %%ymm6\n\t vmovdqu 224(%[in]), %%ymm7\n\t"
		"vmovdqu 256(%[in]), %%ymm8\n\t vmovdqu 288(%[in]), %%ymm9\n\t"
		"vmovdqu 320(%[in]), %%ymm10\n\t vmovdqu 352(%[in]), %%ymm11\n\t"
		"vmovdqu 384(%[in]), %%ymm12\n\t vmovdqu 416(%[in]), %%ymm13\n\t"
		"vmovdqu 448(%[in]), %%ymm14\n\t"
		"xorl %%r8d, %%r8d\n\t movq $1, %%r9\n\t movq $2, %%r10\n\t movq $3, %%r11\n\t"
		"movq $4, %%r12\n\t movq $5, %%r13\n\t movq $6, %%r14\n\t movq $7, %%r15\n\t"
		"1:\n\t"
		"vpaddq %%ymm15, %%ymm0, %%ymm0\n\t vpaddq %%ymm15, %%ymm1, %%ymm1\n\t"
		"vpaddq %%ymm15, %%ymm2, %%ymm2\n\t vpaddq %%ymm15, %%ymm3, %%ymm3\n\t"
		"vpaddq %%ymm15, %%ymm4, %%ymm4\n\t vpaddq %%ymm15, %%ymm5, %%ymm5\n\t"
		"vpaddq %%ymm15, %%ymm6, %%ymm6\n\t vpaddq %%ymm15, %%ymm7, %%ymm7\n\t"
		"vpaddq %%ymm15, %%ymm8, %%ymm8\n\t vpaddq %%ymm15, %%ymm9, %%ymm9\n\t"
		"vpaddq %%ymm15, %%ymm10, %%ymm10\n\t vpaddq %%ymm15, %%ymm11, %%ymm11\n\t"
		"vpaddq %%ymm15, %%ymm12, %%ymm12\n\t vpaddq %%ymm15, %%ymm13, %%ymm13\n\t"
		"vpaddq %%ymm15, %%ymm14, %%ymm14\n\t"
		"incq %%r8\n\t incq %%r9\n\t incq %%r10\n\t incq %%r11\n\t"
		"incq %%r12\n\t incq %%r13\n\t incq %%r14\n\t incq %%r15\n\t"
		"decq %[n]\n\t jnz 1b\n\t"
		"vmovdqu %%ymm0, 0(%[out])\n\t   vmovdqu %%ymm1, 32(%[out])\n\t"
		"vmovdqu %%ymm2, 64(%[out])\n\t  vmovdqu %%ymm3, 96(%[out])\n\t"
		"vmovdqu %%ymm4, 128(%[out])\n\t vmovdqu %%ymm5, 160(%[out])\n\t"
		"vmovdqu %%ymm6, 192(%[out])\n\t vmovdqu %%ymm7, 224(%[out])\n\t"
		"vmovdqu %%ymm8, 256(%[out])\n\t vmovdqu %%ymm9, 288(%[out])\n\t"
		"vmovdqu %%ymm10, 320(%[out])\n\t vmovdqu %%ymm11, 352(%[out])\n\t"
		"vmovdqu %%ymm12, 384(%[out])\n\t vmovdqu %%ymm13, 416(%[out])\n\t"
		"vmovdqu %%ymm14, 448(%[out])\n\t"
		"movq %%r8, 0(%[g])\n\t movq %%r9, 8(%[g])\n\t movq %%r10, 16(%[g])\n\t movq %%r11, 24(%[g])\n\t"
		"movq %%r12, 32(%[g])\n\t movq %%r13, 40(%[g])\n\t movq %%r14, 48(%[g])\n\t movq %%r15, 56(%[g])\n\t"
		"vzeroupper\n\t"
		: [n] "+r"(iters)
		: [in] "r"(init), [out] "r"(out), [g] "r"(gpr)
		: "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "xmm2",
		  "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
		  "xmm13", "xmm14", "xmm15", "memory", "cc");
}

/* The x87 stack: st(0) accumulates 1.0 per iteration, st(1) keeps 0.5. */
static double x87_loop(uint64_t iters)
{
	double r;
	__asm__ volatile("fld1\n\t fld1\n\t fchs\n\t fld1\n\t faddp\n\t"   /* st0 = 0 */
			 "fld1\n\t fxch\n\t"                                /* st0 = 0, st1 = 1 */
			 "1:\n\t fadd %%st(1), %%st\n\t decq %[n]\n\t jnz 1b\n\t"
			 "fstpl %[r]\n\t fstp %%st(0)\n\t"
			 : [n] "+r"(iters), [r] "=m"(r)
			 :
			 : "st", "st(1)", "memory", "cc");
	return r;
}

static const uint64_t iters = 20 * 1000 * 1000;

static void *avx_worker(void *arg)
{
	uint64_t seed = (uint64_t)(intptr_t)arg * 1000003;
	uint64_t init[15][4], out[15][4], gpr[8];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 15; i++)
			for (int l = 0; l < 4; l++)
				init[i][l] = seed + (uint64_t)(i * 4 + l) * 7919 + (uint64_t)r;
		avx_loop(init, out, gpr, iters);
		for (int i = 0; i < 15; i++)
			for (int l = 0; l < 4; l++)
				CHECK_EQ(out[i][l], init[i][l] + iters);
		for (int i = 0; i < 8; i++)
			CHECK_EQ(gpr[i], (uint64_t)i + iters);
	}
	return NULL;
}

static void *x87_worker(void *arg)
{
	for (int r = 0; r < ROUNDS; r++)
		CHECK(x87_loop(iters) == (double)iters);
	return NULL;
}

static void *redzone_worker(void *arg)
{
	for (int r = 0; r < ROUNDS; r++)
		CHECK_EQ(redzone_loop(iters), 0);
	return NULL;
}

/* Each UT keeps its own rounding mode (MXCSR and the x87 control word). */
static void *rounding_worker(void *arg)
{
	int mode = (int)(intptr_t)arg;
	CHECK_OK(fesetround(mode));
	int64_t t0 = test_now_ns();
	volatile double third;
	while (test_now_ns() - t0 < 400 * 1000 * 1000) {
		third = 1.0;
		third = third / 3.0;
		CHECK_EQ(fegetround(), mode);
	}
	return NULL;
}

int main(void)
{
	preempt_test_slice(100 * 1000);
	struct weft_stats s0 = preempt_test_stats();
	pthread_t t[8];
	int n = 0;
	bool avx = __builtin_cpu_supports("avx2");
	for (int i = 0; i < 2 && avx; i++)
		CHECK_OK(pthread_create(&t[n++], NULL, avx_worker, (void *)(intptr_t)(i + 1)));
	CHECK_OK(pthread_create(&t[n++], NULL, x87_worker, NULL));
	CHECK_OK(pthread_create(&t[n++], NULL, redzone_worker, NULL));
	CHECK_OK(pthread_create(&t[n++], NULL, rounding_worker, (void *)(intptr_t)FE_DOWNWARD));
	CHECK_OK(pthread_create(&t[n++], NULL, rounding_worker, (void *)(intptr_t)FE_UPWARD));
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	struct weft_stats s1 = preempt_test_stats();
	/* with a VP for every worker (WEFT_VPS=8) nothing needs preempting:
	 * the workers' checks still ran, but not across preemptions */
	if (s1.vps < (uint64_t)n)
		CHECK(s1.preemptions - s0.preemptions > 1000);
	CHECK_EQ(fegetround(), FE_TONEAREST);
	return 0;
}
