/*
 * late_library.h — what the late-loaded-library tests share
 * (preempt_late_loaded_library, signal_over_late_loaded_library): a
 * converter UT whose time is in glibc's ISO8859-2 gconv module (loaded by
 * glibc's own dlopen at iconv_open, named protected by the test's
 * WEFT_NOPREEMPT), and the count a spinner UT keeps of how often it got the
 * processor back while the converter was inside the library's call.
 */
#ifndef WEFT_TEST_LATE_LIBRARY_H
#define WEFT_TEST_LATE_LIBRARY_H

#include "check.h"

#include <iconv.h>

#define LATE_BUF (32 << 10)

static char late_in[LATE_BUF], late_out[LATE_BUF];
static volatile int late_inside;            /* the converter is in the library's call */
static volatile unsigned long late_progress; /* the converter's rounds */

/* The converter's input: UTF-8 text with Latin-2 letters (ą ę ł ó ś ź ż),
 * the rest plain ASCII; and the test's set-up asserted. */
static inline void late_setup(void)
{
	static const char word[] = "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 g\xc4\x99\xc5\x9bl\xc4\x85 ja\xc5\xba\xc5\x84 ";
	size_t w = sizeof word - 1, n = 0;
	while (n + w <= sizeof late_in / 2) {
		memcpy(late_in + n, word, w);
		n += w;
	}
	memset(late_in + n, 'a', sizeof late_in - n);
	const char *np = getenv("WEFT_NOPREEMPT");
	CHECK(np && strstr(np, "ISO8859-2"));    /* the test's set-up (CMakeLists.txt) */
}

/* One conversion of the whole input into ISO-8859-2, flagged inside. */
static inline void late_convert(iconv_t cd)
{
	char *ip = late_in, *op = late_out;
	size_t il = sizeof late_in, ol = sizeof late_out;
	late_inside = 1;
	size_t r = iconv(cd, &ip, &il, &op, &ol);
	late_inside = 0;
	CHECK(r != (size_t)-1);
	CHECK_EQ(il, 0);
}

struct late_seen {
	long handbacks, inside;
};

/* The spinner's look after it got the processor back: did the converter
 * run meanwhile, and was it inside the library's call when it stopped? */
static inline void late_look(struct late_seen *s, unsigned long *last)
{
	unsigned long p = late_progress;
	if (p != *last) {
		*last = p;
		s->handbacks++;
		if (late_inside)
			s->inside++;
	}
}

#endif
