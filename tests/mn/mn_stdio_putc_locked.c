/*
 * mn_stdio_putc_locked — stdio's one-character calls lock their stream
 * once UTs run on several kernel threads: 4 UTs each putc 250,000 copies
 * of their own letter to one stream (a buffer of fmemopen), and getc reads
 * them back; every letter is there exactly 250,000 times and the stream's
 * position is exactly 1,000,000.  glibc's putc skips the lock until
 * _IO_enable_locks has run, which NPTL's pthread_create does for its first
 * thread: Weft's kernel threads are made by it, so the locks are on before
 * a second VP runs (were they made otherwise, characters would be lost or
 * doubled here).  Under one VP the same counts hold.
 */
#include "mn_test.h"

enum { UTS = 4, EACH = 250000 };

static FILE *f;
static char *buf;

static void *writer(void *arg)
{
	int c = 'a' + (int)(intptr_t)arg;
	for (int i = 0; i < EACH; i++)
		CHECK(putc(c, f) == c);
	return NULL;
}

static long got[UTS];

static void *reader(void *arg)
{
	(void)arg;
	for (;;) {
		int c = getc(f);
		if (c == EOF)
			break;
		CHECK(c >= 'a' && c < 'a' + UTS);
		__atomic_add_fetch(&got[c - 'a'], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	size_t size = (size_t)UTS * EACH + 1;
	buf = calloc(1, size);
	CHECK(buf);
	f = fmemopen(buf, size, "w+");
	CHECK(f);
	CHECK_OK(setvbuf(f, NULL, _IOFBF, 4096));
	mn_run_uts(UTS, writer);
	CHECK_EQ(ftell(f), (long)UTS * EACH);
	CHECK_OK(fflush(f));
	rewind(f);
	mn_run_uts(UTS, reader);
	for (int i = 0; i < UTS; i++)
		CHECK_EQ(got[i], EACH);
	CHECK_OK(fclose(f));
	free(buf);
	return 0;
}
