/*
 * libc_single_threaded_cleared — creating a thread tells glibc and
 * libstdc++ that the process is multi-threaded, as glibc's own
 * pthread_create does: __libc_single_threaded goes from 1 to 0 and stays 0
 * after the thread is joined (glibc never sets it back either).
 */
#include "check.h"

#include <sys/single_threaded.h>

static void *noop(void *a) { return a; }

int main(void)
{
	CHECK_EQ(__libc_single_threaded, 1);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, noop, NULL));
	CHECK_EQ(__libc_single_threaded, 0);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(__libc_single_threaded, 0);
	return 0;
}
