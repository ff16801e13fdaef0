/*
 * mn_io_edges_not_lost — under M:N a wrapped read or write makes its
 * non-blocking try without the runtime lock (src/io/io.h, io_try6;
 * rt.h, __weft_try_syscall6), so that the VPs' system calls overlap.  The
 * poller may then take an edge for the descriptor on another VP in the
 * middle of the try; such an edge must not be lost (edge-triggered epoll
 * sends no second one), or the reader waits for ever.
 *
 * PAIRS pairs over Unix stream sockets (with read and write, with recv and
 * send, with recvmsg and sendmsg, with recvmmsg and sendmmsg, whose tries
 * are made the same way: sock.c) and PAIRS
 * over pipes pass a counter back and forth ROUNDS times: ping writes i, pong reads it and writes i+1,
 * ping reads that.  Every value read must be the one expected, and the
 * whole must end before the watchdog (alarm, WATCHDOG_S: a lost edge hangs
 * a pair; the first version of the lock-free try, without the edge count,
 * hung within a second).  The pipes' readers ask for more than a message,
 * so their reads come back short: a short read marks a pipe "known empty"
 * (io.h, D_SHORT_DRAINS) unless an edge came during the read, the second
 * way an edge could be lost.
 *
 * Then READERS threads read one file of FILE_SIZE bytes from the page
 * cache with pread (the try with RWF_NOWAIT, made without the lock) and
 * compare every byte with what was written: reads on several VPs at once
 * return the file's data.
 */
#include "check.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#if defined(WEFT_TEST_SANITIZE) || defined(WEFT_TEST_TSAN)
#define ROUNDS 2000
#define FILE_READS 20
#else
#define ROUNDS 20000
#define FILE_READS 200
#endif
#define PAIRS 4
#define READERS 4
#define FILE_SIZE (256 << 10)
#define WATCHDOG_S 60

struct pair {
	int ping_rd, ping_wr;    /* ping's ends */
	int pong_rd, pong_wr;    /* pong's ends */
	bool short_reads;        /* read with a larger buffer than a message */
	enum { RW, RECV_SEND, MSG, MMSG } calls;  /* which calls pass the bytes */
};

static struct pair pairs[2 * PAIRS];

static uint32_t get(const struct pair *p, int fd)
{
	char buf[64];
	size_t want = p->short_reads ? sizeof buf : sizeof(uint32_t);
	ssize_t n;
	if (p->calls == MSG) {
		struct iovec iov = { buf, want };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		n = recvmsg(fd, &m, 0);
	} else if (p->calls == MMSG) {
		struct iovec iov = { buf, want };
		struct mmsghdr mm = { .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };
		CHECK_EQ(recvmmsg(fd, &mm, 1, 0, NULL), 1);
		n = (ssize_t)mm.msg_len;
	} else {
		n = p->calls == RECV_SEND ? recv(fd, buf, want, 0) : read(fd, buf, want);
	}
	/* one message in flight per direction: a read returns it whole */
	CHECK_EQ(n, (ssize_t)sizeof(uint32_t));
	uint32_t v;
	memcpy(&v, buf, sizeof v);
	return v;
}

static void put(const struct pair *p, int fd, uint32_t v)
{
	ssize_t n;
	if (p->calls == MSG) {
		struct iovec iov = { &v, sizeof v };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		n = sendmsg(fd, &m, 0);
	} else if (p->calls == MMSG) {
		struct iovec iov = { &v, sizeof v };
		struct mmsghdr mm = { .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };
		CHECK_EQ(sendmmsg(fd, &mm, 1, 0), 1);
		n = (ssize_t)mm.msg_len;
	} else {
		n = p->calls == RECV_SEND ? send(fd, &v, sizeof v, 0) : write(fd, &v, sizeof v);
	}
	CHECK_EQ(n, (ssize_t)sizeof v);
}

static void *ping(void *arg)
{
	struct pair *p = arg;
	for (uint32_t i = 0; i < ROUNDS; i++) {
		put(p, p->ping_wr, 2 * i);
		CHECK_EQ(get(p, p->ping_rd), 2 * i + 1);
	}
	return NULL;
}

static void *pong(void *arg)
{
	struct pair *p = arg;
	for (uint32_t i = 0; i < ROUNDS; i++) {
		CHECK_EQ(get(p, p->pong_rd), 2 * i);
		put(p, p->pong_wr, 2 * i + 1);
	}
	return NULL;
}

static int file_fd;
static unsigned char expect[FILE_SIZE];

static void *reader(void *arg)
{
	(void)arg;
	unsigned char *buf = malloc(FILE_SIZE);
	CHECK(buf);
	for (int i = 0; i < FILE_READS; i++) {
		memset(buf, 0, FILE_SIZE);
		CHECK_EQ(pread(file_fd, buf, FILE_SIZE, 0), FILE_SIZE);
		CHECK(memcmp(buf, expect, FILE_SIZE) == 0);
	}
	free(buf);
	return NULL;
}

int main(void)
{
	alarm(WATCHDOG_S);
	for (int i = 0; i < 2 * PAIRS; i++) {
		struct pair *p = &pairs[i];
		if (i < PAIRS) {
			int s[2];
			CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
			p->ping_rd = p->ping_wr = s[0];
			p->pong_rd = p->pong_wr = s[1];
			p->calls = i % 4 == 0 ? RW : i % 4 == 1 ? RECV_SEND : i % 4 == 2 ? MSG : MMSG;
		} else {
			int a[2], b[2];
			CHECK_OK(pipe(a));
			CHECK_OK(pipe(b));
			p->ping_wr = a[1];
			p->pong_rd = a[0];
			p->pong_wr = b[1];
			p->ping_rd = b[0];
			p->short_reads = true;
		}
	}
	pthread_t t[4 * PAIRS];
	for (int i = 0; i < 2 * PAIRS; i++) {
		CHECK_OK(pthread_create(&t[2 * i], NULL, ping, &pairs[i]));
		CHECK_OK(pthread_create(&t[2 * i + 1], NULL, pong, &pairs[i]));
	}
	for (int i = 0; i < 4 * PAIRS; i++)
		CHECK_OK(pthread_join(t[i], NULL));

	char path[] = "/tmp/weft-mn-io-XXXXXX";
	file_fd = mkstemp(path);
	CHECK(file_fd >= 0);
	CHECK_OK(unlink(path));
	for (size_t i = 0; i < FILE_SIZE; i++)
		expect[i] = (unsigned char)(i * 7 + (i >> 9));
	CHECK_EQ(pwrite(file_fd, expect, FILE_SIZE, 0), FILE_SIZE);
	pthread_t r[READERS];
	for (int i = 0; i < READERS; i++)
		CHECK_OK(pthread_create(&r[i], NULL, reader, NULL));
	for (int i = 0; i < READERS; i++)
		CHECK_OK(pthread_join(r[i], NULL));
	alarm(0);
	return 0;
}
