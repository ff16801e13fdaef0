/*
 * mn_ras_refused — a restartable atomic sequence (weft_ras_register) is
 * atomic only against its own VP's tick, so Weft refuses what it could not
 * keep (include/weft.h, docs/mn.md):
 *  - with two VPs in force, weft_ras_register of a valid range is ENOTSUP
 *    (bad ranges are still EINVAL first), before and after a second thread
 *    has run, and nothing is registered;
 *  - with one VP it is 0, and then weft_vps_set(2) is ENOTSUP, and the
 *    number in force (1) stays: weft_vps_set(1) is 0, stats say one VP,
 *    and threads made afterwards still run on one.
 * Registered as mn_ras_refused (WEFT_VPS=2) and mn_ras_refused_vps1.
 */
#include "mn_test.h"

#include <errno.h>

/* Never executed: only its addresses are registered. */
static char sequence[64];

static void *nothing(void *arg)
{
	(void)arg;
	return NULL;
}

int main(void)
{
	char *b = sequence, *e = sequence + 16;
	CHECK_EQ(weft_ras_register(NULL, e), EINVAL);
	CHECK_EQ(weft_ras_register(e, b), EINVAL);
	unsigned vps = test_stats().vps;
	if (vps > 1) {
		CHECK_EQ(weft_ras_register(b, e), ENOTSUP);
		mn_run_uts(4, nothing);
		CHECK_EQ(weft_ras_register(b, e), ENOTSUP);
		CHECK_EQ(weft_ras_register(b + 16, e + 16), ENOTSUP);
		CHECK_EQ(test_stats().vps, vps);
		printf("mn_ras_refused: %u VPs: registration refused (ENOTSUP)\n", vps);
		return 0;
	}
	CHECK_EQ(weft_ras_register(b, e), 0);
	CHECK_EQ(weft_ras_register(b, e), 0);           /* the same range again */
	CHECK_EQ(weft_vps_set(2), ENOTSUP);
	CHECK_EQ(weft_vps_set(8), ENOTSUP);
	CHECK_EQ(weft_vps_set(1), 0);                  /* the number in force */
	CHECK_EQ(test_stats().vps, 1u);
	mn_run_uts(4, nothing);
	CHECK_EQ(test_stats().vps, 1u);
	printf("mn_ras_refused: one VP: registered; weft_vps_set(2) refused (ENOTSUP)\n");
	return 0;
}
