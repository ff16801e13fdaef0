/*
 * io_pipes_sockets_poll — an ordinary threaded program that blocks in I/O:
 * a thread reads a pipe that main writes later, an echo thread on a
 * socketpair, a TCP server thread on loopback, a thread in poll, one in
 * select with a timeout, one in waitpid for a child.  Each blocking call is
 * made before the thread that will satisfy it has acted, so on a runtime
 * whose blocking calls stopped every thread it would hang.  It prints the
 * same lines whatever the threads' order.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int pp[2], sv[2], lst, polled[2], selp[2];
static pid_t kid;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *pipe_reader(void *a)
{
	char b[16] = { 0 };
	if (read(pp[0], b, sizeof b - 1) != 5)
		die("read");
	printf("pipe: %s\n", b);
	return a;
}

static void *echo(void *a)
{
	char b[64];
	ssize_t n;
	while ((n = read(sv[1], b, sizeof b)) > 0)
		if (write(sv[1], b, (size_t)n) != n)
			die("echo write");
	return a;
}

static void *server(void *a)
{
	int c = accept(lst, NULL, NULL);
	char b[8] = { 0 };
	if (c < 0 || recv(c, b, 4, MSG_WAITALL) != 4 || strcmp(b, "ping") != 0)
		die("server");
	if (send(c, "pong", 4, 0) != 4)
		die("send");
	close(c);
	return a;
}

static void *poller(void *a)
{
	struct pollfd p = { polled[0], POLLIN, 0 };
	int n = poll(&p, 1, -1);
	printf("poll: %d%s\n", n, p.revents & POLLIN ? " POLLIN" : "");
	return a;
}

static void *selecter(void *a)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(selp[0], &r);
	struct timeval tv = { 0, 30000 };
	printf("select: %d\n", select(selp[0] + 1, &r, NULL, NULL, &tv));
	return a;
}

static void *waiter(void *a)
{
	int st;
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		die("waitpid");
	printf("waitpid: %d\n", WEXITSTATUS(st));
	return a;
}

int main(void)
{
	pthread_t t[6];
	if (pipe(pp) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(polled) || pipe(selp))
		die("set-up");
	lst = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (bind(lst, (struct sockaddr *)&a, sizeof a) || listen(lst, 4) ||
	    getsockname(lst, (struct sockaddr *)&a, &len))
		die("listen");
	fflush(stdout);
	kid = fork();
	if (kid == 0) {
		usleep(20000);
		_exit(3);
	}
	pthread_create(&t[0], NULL, pipe_reader, NULL);
	pthread_create(&t[1], NULL, echo, NULL);
	pthread_create(&t[2], NULL, server, NULL);
	pthread_create(&t[3], NULL, poller, NULL);
	pthread_create(&t[4], NULL, selecter, NULL);
	pthread_create(&t[5], NULL, waiter, NULL);
	usleep(20000);                        /* every thread is blocked by now */

	if (write(pp[1], "hello", 5) != 5 || write(polled[1], "p", 1) != 1)
		die("write");
	char b[64], line[64] = "echo:";
	const char *msgs[] = { "one", "two", "three" };
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(msgs[i]);
		if (write(sv[0], msgs[i], n) != (ssize_t)n || read(sv[0], b, sizeof b) != (ssize_t)n)
			die("echo");
		snprintf(line + strlen(line), sizeof line - strlen(line), " %.*s", (int)n, b);
	}
	printf("%s\n", line);
	shutdown(sv[0], SHUT_WR);

	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a) || send(c, "ping", 4, 0) != 4)
		die("connect");
	memset(b, 0, sizeof b);
	if (recv(c, b, 4, MSG_WAITALL) != 4)
		die("recv");
	printf("tcp: %s\n", b);
	close(c);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	return 0;
}
