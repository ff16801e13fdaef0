/* 8 UTs doing printf and malloc/free under a 50 us slice for 5 s: no
 * deadlock, no corrupt line.  Ticks that land in libc (stdio, malloc) are
 * deferred, so a UT never switches while holding the kernel thread's stdio
 * or malloc locks. */
#include "preempt_test.h"
#include <string.h>

#define NTH 8
static volatile int stop;
static FILE *out;
static uint64_t lines[NTH];

static void *storm(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t seq = 0;
	while (!stop) {
		size_t n = 16 + (seq * 7919 + (uint64_t)id * 104729) % 4000;
		unsigned char *p = malloc(n);
		CHECK(p != NULL);
		memset(p, id + 1, n);
		fprintf(out, "ut %d seq %llu len %zu sum %llu end\n", id, (unsigned long long)seq, n,
			(unsigned long long)(n * (size_t)(id + 1)));
		for (size_t i = 0; i < n; i += 97)
			CHECK_EQ(p[i], id + 1);
		free(p);
		seq++;
	}
	lines[id] = seq;
	return NULL;
}

int main(void)
{
	preempt_test_slice(50 * 1000);
	out = tmpfile();
	CHECK(out != NULL);
	pthread_t t[NTH];
	for (int i = 0; i < NTH; i++)
		CHECK_OK(pthread_create(&t[i], NULL, storm, (void *)(intptr_t)i));
	struct timespec five = { 5 / TEST_SCALE, (5 % TEST_SCALE) * 1000000000L / TEST_SCALE };
	CHECK_OK(nanosleep(&five, NULL));
	stop = 1;
	for (int i = 0; i < NTH; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(fflush(out));
	rewind(out);
	uint64_t next[NTH] = { 0 }, count = 0;
	char line[256];
	while (fgets(line, sizeof line, out)) {
		int id;
		unsigned long long seq, sum;
		size_t len;
		char end[8];
		CHECK_EQ(sscanf(line, "ut %d seq %llu len %zu sum %llu %7s", &id, &seq, &len, &sum, end), 5);
		CHECK(id >= 0 && id < NTH);
		CHECK_EQ(seq, next[id]);              /* each UT's lines in order, none lost */
		CHECK_EQ(sum, len * (size_t)(id + 1));
		CHECK(strcmp(end, "end") == 0);
		next[id]++;
		count++;
	}
	for (int i = 0; i < NTH; i++)
		CHECK_EQ(next[i], lines[i]);
	CHECK(count > 1000);
	struct weft_stats s = preempt_test_stats();
	CHECK(s.preemptions > 0);
	return 0;
}
