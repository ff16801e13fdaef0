/*
 * fam_activations.c — the "Activations" rows: what a call that hands the VP
 * on costs (src/runtime/handoff.c, src/posix/blocking.c).
 *
 *   flock_free      flock(LOCK_EX) + flock(LOCK_UN) on a private file, with
 *                   a second thread alive: a wrapped call that does not
 *                   block (its LOCK_NB try succeeds; no handoff)
 *   fsync_clean     fsync of a small file with nothing dirty, a second
 *                   thread alive: the call always hands the VP on under
 *                   Weft, so this is the handoff's whole cost for a call
 *                   that returns at once (hand on, return, rejoin)
 *   sem_pingpong    two threads pass a token through two SysV semaphores;
 *                   each op is a round trip with two calls that block in
 *                   the kernel: under Weft two handoffs and two rejoins,
 *                   i.e. twice the handoff latency of a known blocking call
 * Invariant: every row leaves no thread, file or IPC object behind.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Activations"

static volatile int partner_stop;

static void *idle_partner(void *arg)
{
	(void)arg;
	while (!partner_stop)
		usleep(1000);
	return NULL;
}

static int temp_file(void)
{
	char path[] = "/tmp/weft-bench-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		if (write(fd, "x", 1) != 1) {
			close(fd);
			return -1;
		}
		fsync(fd);
	}
	return fd;
}

static BENCH_ALIGNED int64_t with_partner(uint64_t n, int which)
{
	int fd = temp_file();
	if (fd < 0)
		return -1;
	pthread_t t;
	partner_stop = 0;
	if (pthread_create(&t, NULL, idle_partner, NULL) != 0) {
		close(fd);
		return -1;
	}
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (which == 0) {
			flock(fd, LOCK_EX);
			flock(fd, LOCK_UN);
		} else {
			fsync(fd);
		}
	}
	int64_t dt = now_ns() - t0;
	partner_stop = 1;
	pthread_join(t, NULL);
	close(fd);
	return dt;
}

static BENCH_ALIGNED int64_t m_flock_free(uint64_t n) { return with_partner(n, 0); }
static BENCH_ALIGNED int64_t m_fsync_clean(uint64_t n) { return with_partner(n, 1); }

struct pingpong {
	int sem;
	uint64_t n;
};

static void sem_add(int id, unsigned short num, short d)
{
	struct sembuf op = { num, d, 0 };
	semop(id, &op, 1);
}

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	for (uint64_t i = 0; i < p->n; i++) {
		sem_add(p->sem, 0, -1);
		sem_add(p->sem, 1, 1);
	}
	return NULL;
}

static BENCH_ALIGNED int64_t m_sem_pingpong(uint64_t n)
{
	struct pingpong p = { semget(IPC_PRIVATE, 2, 0600), n };
	if (p.sem < 0)
		return -1;
	pthread_t t;
	if (pthread_create(&t, NULL, pong, &p) != 0) {
		semctl(p.sem, 0, IPC_RMID);
		return -1;
	}
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		sem_add(p.sem, 0, 1);
		sem_add(p.sem, 1, -1);
	}
	int64_t dt = now_ns() - t0;
	pthread_join(t, NULL);
	semctl(p.sem, 0, IPC_RMID);
	return dt;
}

static const struct metric activation_rows[] = {
	{ "flock_free", GROUP, U_NS, 0, "flock lock+unlock that does not block (a second thread alive)",
	  "", NULL, m_flock_free, NULL, NULL, NULL },
	{ "fsync_clean", GROUP, U_NS, 0, "fsync with nothing to write: the VP handed on and back under Weft",
	  "", NULL, m_fsync_clean, NULL, NULL, NULL },
	{ "sem_pingpong", GROUP, U_NS, 0, "SysV semaphore round trip between two threads (two blocking calls)",
	  "", NULL, m_sem_pingpong, NULL, NULL, NULL },
};
BENCH_FAMILY(fam_activations, activation_rows);
