/* The context switch keeps each UT's floating-point control state: the SSE
 * control/status register's control bits (rounding, flush-to-zero) and the
 * x87 control word (rounding, precision) travel with the UT across yields,
 * and a new UT starts with its creator's modes (C11 7.6).  Also: unwinding
 * from inside a UT stops cleanly at the thread's entry (end of stack), as
 * gdb's bt does, instead of walking into garbage. */
#include "check.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unwind.h>

#define MXCSR_CONTROL 0xffc0u      /* rounding, FTZ, DAZ, exception masks */
#define MXCSR_RC_UP 0x4000u
#define MXCSR_RC_DOWN 0x2000u
#define MXCSR_FTZ 0x8000u
#define X87_RC_UP 0x0800u
#define X87_RC_DOWN 0x0400u
#define X87_PC_SINGLE 0x0000u
#define X87_PC_MASK 0x0300u
#define X87_RC_MASK 0x0c00u

static uint32_t get_mxcsr(void)
{
	uint32_t v;
	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return v & MXCSR_CONTROL;
}

static void set_mxcsr(uint32_t control)
{
	uint32_t v;
	__asm__ volatile("stmxcsr %0" : "=m"(v));
	v = (v & ~MXCSR_CONTROL) | control;
	__asm__ volatile("ldmxcsr %0" : : "m"(v));
}

static uint16_t get_x87cw(void)
{
	uint16_t v;
	__asm__ volatile("fnstcw %0" : "=m"(v));
	return v;
}

static void set_x87cw(uint16_t v) { __asm__ volatile("fldcw %0" : : "m"(v)); }

struct modes {
	uint32_t mxcsr;
	uint16_t x87;
};

static void *keep_modes(void *arg)
{
	const struct modes *m = arg;
	set_mxcsr(m->mxcsr);
	set_x87cw(m->x87);
	for (int i = 0; i < 100; i++) {
		sched_yield();
		CHECK_EQ(get_mxcsr(), m->mxcsr);
		CHECK_EQ(get_x87cw(), m->x87);
	}
	return NULL;
}

static void *report_modes(void *arg)
{
	struct modes *m = arg;
	m->mxcsr = get_mxcsr();
	m->x87 = get_x87cw();
	return NULL;
}

static void test_modes_travel(void)
{
	uint32_t mx0 = get_mxcsr();
	uint16_t cw0 = get_x87cw();
	struct modes a = { (mx0 & ~0x6000u) | MXCSR_RC_UP | MXCSR_FTZ,
			   (uint16_t)((cw0 & ~(X87_RC_MASK | X87_PC_MASK)) | X87_RC_UP | X87_PC_SINGLE) };
	struct modes b = { (mx0 & ~0x6000u) | MXCSR_RC_DOWN,
			   (uint16_t)((cw0 & ~X87_RC_MASK) | X87_RC_DOWN) };
	/* one mode differing at a time from main's: the switch loads MXCSR
	 * always and the x87 word only when it differs (switch.S), so each
	 * must travel whether or not the other one changed */
	struct modes c = { (mx0 & ~0x6000u) | MXCSR_RC_DOWN | MXCSR_FTZ, cw0 };
	struct modes d = { mx0, (uint16_t)((cw0 & ~X87_RC_MASK) | X87_RC_UP) };
	pthread_t ta, tb, tc2, td;
	CHECK_OK(pthread_create(&ta, NULL, keep_modes, &a));
	CHECK_OK(pthread_create(&tb, NULL, keep_modes, &b));
	CHECK_OK(pthread_create(&tc2, NULL, keep_modes, &c));
	CHECK_OK(pthread_create(&td, NULL, keep_modes, &d));
	for (int i = 0; i < 100; i++) {
		sched_yield();
		CHECK_EQ(get_mxcsr(), mx0);
		CHECK_EQ(get_x87cw(), cw0);
	}
	CHECK_OK(pthread_join(ta, NULL));
	CHECK_OK(pthread_join(tb, NULL));
	CHECK_OK(pthread_join(tc2, NULL));
	CHECK_OK(pthread_join(td, NULL));
	CHECK_EQ(get_mxcsr(), mx0);
	CHECK_EQ(get_x87cw(), cw0);

	/* a new UT inherits the modes its creator had at pthread_create */
	struct modes got;
	pthread_t tc;
	set_mxcsr(a.mxcsr);
	set_x87cw(a.x87);
	CHECK_OK(pthread_create(&tc, NULL, report_modes, &got));
	set_mxcsr(mx0);
	set_x87cw(cw0);
	CHECK_OK(pthread_join(tc, NULL));
	CHECK_EQ(got.mxcsr, a.mxcsr);
	CHECK_EQ(got.x87, a.x87);
}

struct walk {
	int frames;
};

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	w->frames++;
	return w->frames > 1000 ? _URC_FATAL_PHASE1_ERROR : _URC_NO_REASON;
}

static __attribute__((noinline)) int unwind_here(int depth, struct walk *w)
{
	if (depth > 0)
		return unwind_here(depth - 1, w) + 1;
	return (int)_Unwind_Backtrace(count_frame, w);
}

static void *unwinder(void *arg)
{
	struct walk *w = arg;
	sched_yield();                     /* unwind after a switch, too */
	int rc = unwind_here(5, w);
	return (void *)(intptr_t)rc;
}

static void test_unwind_stops_at_entry(void)
{
	struct walk w = { 0 };
	pthread_t t;
	void *rc;
	CHECK_OK(pthread_create(&t, NULL, unwinder, &w));
	CHECK_OK(pthread_join(t, &rc));
	/* _Unwind_Backtrace's own result, plus the 6 unwind_here frames */
	CHECK_EQ((intptr_t)rc - 5, _URC_END_OF_STACK);
	/* unwind_here (x6 unless the compiler made a loop of it), unwinder,
	 * Weft's thread start, its entry: a handful of frames */
	CHECK(w.frames >= 3);
	CHECK(w.frames < 20);
}

int main(void)
{
	test_modes_travel();
	test_unwind_stops_at_entry();
	return 0;
}
