/*
 * io_sendfile_whole_count — sendfile from a regular file to a blocking
 * socket moves the whole count, as it does on NPTL (Linux returns less only
 * at the file's end, on an error, or when a signal handler interrupts it).
 *
 *  - 1 MiB to a loopback TCP socket whose send buffer is small, read by
 *    another UT: the chunks Weft sends wait for room, Weft's tick (and the
 *    monitor) cut them short, and sendfile must go on until all of it has
 *    gone: it returns 1 MiB, and the reader gets every byte, in order.
 *  - a count beyond the file's end: sendfile returns the bytes up to the
 *    end, at once, and the offset says so.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIZE (1 << 20)

static int s[2], file;
static long got, sent, bad;

static unsigned char pattern(long i) { return (unsigned char)(i * 7 + (i >> 12)); }

static void *reader(void *arg)
{
	static unsigned char b[65536];
	long n;
	while ((n = read(s[1], b, sizeof b)) > 0) {
		for (long i = 0; i < n; i++)
			if (b[i] != pattern(got + i))
				bad++;
		got += n;
	}
	return arg;
}

static void *sender(void *arg)
{
	off_t off = 0;
	sent = sendfile(s[0], file, &off, SIZE);
	CHECK_EQ(off, sent);
	CHECK_OK(shutdown(s[0], SHUT_WR));
	return arg;
}

static void tcp_pair(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(l, 1));
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
	s[0] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(s[0], (struct sockaddr *)&a, sizeof a));
	s[1] = accept(l, NULL, NULL);
	CHECK(s[1] >= 0);
	close(l);
	int small = 4096;
	CHECK_OK(setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small));
}

int main(void)
{
	char path[] = "/tmp/weft-sendfile-XXXXXX";
	file = mkstemp(path);
	CHECK(file >= 0);
	unlink(path);
	static unsigned char b[SIZE];
	for (long i = 0; i < SIZE; i++)
		b[i] = pattern(i);
	CHECK_EQ(write(file, b, SIZE), SIZE);

	tcp_pair();
	pthread_t r, w;
	CHECK_OK(pthread_create(&r, NULL, reader, NULL));
	CHECK_OK(pthread_create(&w, NULL, sender, NULL));
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_join(r, NULL));
	CHECK_EQ(sent, SIZE);
	CHECK_EQ(got, SIZE);
	CHECK_EQ(bad, 0);
	close(s[0]);
	close(s[1]);

	/* past the end: the file's size, at once */
	tcp_pair();
	off_t off = SIZE - 1000;
	int64_t t0 = test_now_ns();
	CHECK_EQ(sendfile(s[0], file, &off, 100000), 1000);
	CHECK_EQ(off, SIZE);
	CHECK(test_now_ns() - t0 < 1000000000ll);
	CHECK_EQ(sendfile(s[0], file, &off, 100000), 0);
	close(s[0]);
	close(s[1]);
	close(file);
	return 0;
}
