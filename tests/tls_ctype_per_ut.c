/*
 * tls_ctype_per_ut — a UT with thread-local storage of its own has glibc's
 * ctype tables, as a new thread of glibc's has (__ctype_init at its start).
 *
 * toupper, tolower, the is* classes, strtod and printf's floating-point
 * formatting read the thread's ctype table pointers through TLS.  In a
 * thread block Weft made they were zero, as in the TLS image, and each of
 * those calls crashed in a UT under WEFT_VPS=2 or WEFT_TLS=on (a C program:
 * no module of its own with TLS, so its UTs get blocks only then).
 *
 * Asserted, in 8 UTs at once, each 200 times and across yields: for every
 * byte value, toupper, tolower, isalpha, isdigit, isspace and ispunct agree
 * with main's answers computed before any thread existed; strtod("2.5e1")
 * is 25; snprintf("%.3f %g %e", ...) prints what main printed.  Then main
 * changes the global locale's LC_CTYPE (setlocale, to C.UTF-8): UTs made
 * after it have its tables, as glibc gives a new thread the global
 * locale's (their three table pointers equal main's, which setlocale
 * updated, and differ from the "C" locale's).  Registered with
 * WEFT_TLS=on (and run under two VPs in the suite's M:N pass).
 */
#include "check.h"

#include <ctype.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

enum { UTS = 8, ROUNDS = 200 };

static unsigned char up[256], low[256], cls[256];
static char fmt_main[128];

static unsigned char classes(int c)
{
	return (unsigned char)((isalpha(c) ? 1 : 0) | (isdigit(c) ? 2 : 0) | (isspace(c) ? 4 : 0) |
			       (ispunct(c) ? 8 : 0));
}

static void format(char *out, size_t n, double x)
{
	snprintf(out, n, "%.3f %g %e", x, x / 3, x * 1e10);
}

/* the table pointers a UT must have; NULL: not checked */
static const void *want_b, *want_up, *want_low;

static void *worker(void *arg)
{
	(void)arg;
	if (want_b) {
		CHECK(*__ctype_b_loc() == want_b);
		CHECK(*__ctype_toupper_loc() == want_up);
		CHECK(*__ctype_tolower_loc() == want_low);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int c = 0; c < 256; c++) {
			CHECK_EQ(toupper(c), up[c]);
			CHECK_EQ(tolower(c), low[c]);
			CHECK_EQ(classes(c), cls[c]);
		}
		CHECK(strtod("2.5e1", NULL) == 25.0);
		char out[128];
		format(out, sizeof out, 1234.5678);
		CHECK(strcmp(out, fmt_main) == 0);
		if (r % 16 == 0)
			sched_yield();
	}
	return NULL;
}

int main(void)
{
	for (int c = 0; c < 256; c++) {
		up[c] = (unsigned char)toupper(c);
		low[c] = (unsigned char)tolower(c);
		cls[c] = classes(c);
	}
	format(fmt_main, sizeof fmt_main, 1234.5678);
	pthread_t t[UTS];
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	/* main again, after the others: its own tables still answer */
	worker(NULL);

	/* a new global LC_CTYPE: new UTs get its tables */
	const void *c_b = *__ctype_b_loc();
	CHECK(setlocale(LC_CTYPE, "C.UTF-8") != NULL);
	want_b = *__ctype_b_loc();
	want_up = *__ctype_toupper_loc();
	want_low = *__ctype_tolower_loc();
	CHECK(want_b != c_b);
	for (int c = 0; c < 256; c++) {
		up[c] = (unsigned char)toupper(c);
		low[c] = (unsigned char)tolower(c);
		cls[c] = classes(c);
	}
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	return 0;
}
