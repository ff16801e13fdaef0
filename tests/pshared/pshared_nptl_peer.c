/*
 * pshared_nptl_peer.c — the other process of the process-shared tests: a
 * program linked with plain -pthread, never with Weft, so its side of
 * every object runs glibc's NPTL code.  It maps the test's shared page
 * (a memfd inherited across exec) and plays one part, given in argv:
 *
 *   pshared_nptl_peer FD MODE N T X
 *
 * MODE names a worker of pshared_common.h run by T threads (N its count,
 * X its extra), or one of the cases in main.  The process exits 0 only if
 * every check held; a failure prints "nptl peer:line" and exits 1.
 */
#define PS_SIDE "nptl peer"
#include "pshared_common.h"

#include <dlfcn.h>

static const struct {
	const char *mode;
	void *(*fn)(void *);
} workers[] = {
	{ "mutex", ps_mutex_part }, { "robust", ps_robust_part }, { "produce", ps_produce },
	{ "consume", ps_consume }, { "rwlock", ps_rw_part }, { "barrier", ps_barrier_part },
	{ "sem", ps_sem_part }, { "spin", ps_spin_part }, { "named", ps_named_part },
};

int main(int argc, char **argv)
{
	if (argc < 6)
		PS_FAIL("usage: pshared_nptl_peer FD MODE N T X");
	/* the point of this program: Weft is not here */
	if (dlsym(RTLD_DEFAULT, "weft_version"))
		PS_FAIL("linked with Weft");
	sh = ps_map(atoi(argv[1]));
	if (!sh)
		PS_FAIL("mmap");
	const char *mode = argv[2];
	n = atol(argv[3]);
	int threads = atoi(argv[4]);
	x = atol(argv[5]);
	for (size_t i = 0; i < sizeof workers / sizeof workers[0]; i++)
		if (!strcmp(mode, workers[i].mode)) {
			/* mutex: m, or em with x 1 */
			ps_run_threads(threads, workers[i].fn, x ? &sh->em : &sh->m);
			return 0;
		}
	if (!strcmp(mode, "init")) {
		ps_init_all((unsigned)x);
	} else if (!strcmp(mode, "hold")) {
		/* hold m (x 0) or rm (x & 1) for n ms, then let go, or die
		 * holding it (x & 2): the kernel marks it FUTEX_OWNER_DIED */
		pthread_mutex_t *m = x & 1 ? &sh->rm : &sh->m;
		PS_OK(pthread_mutex_lock(m));
		__atomic_store_n(&sh->ready, 1, __ATOMIC_SEQ_CST);
		ps_nap(n * 1000000);
		if (x & 2)
			_exit(0);
		PS_OK(pthread_mutex_unlock(m));
	} else if (!strcmp(mode, "ownerdead")) {
		/* the test's process died holding rm */
		if (pthread_mutex_lock(&sh->rm) != EOWNERDEAD)
			PS_FAIL("lock after the owner died is not EOWNERDEAD");
		PS_OK(pthread_mutex_consistent(&sh->rm));
		sh->counter2++;
		PS_OK(pthread_mutex_unlock(&sh->rm));
		PS_OK(pthread_mutex_lock(&sh->rm));
		PS_OK(pthread_mutex_unlock(&sh->rm));
	} else if (!strcmp(mode, "notrecoverable")) {
		if (pthread_mutex_lock(&sh->rm) != ENOTRECOVERABLE)
			PS_FAIL("lock of a mutex left inconsistent is not ENOTRECOVERABLE");
	} else {
		PS_FAIL("unknown mode");
	}
	return 0;
}
