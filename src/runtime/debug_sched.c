/*
 * debug_sched.c — schedules for finding races, traces, deadlock reports.
 *
 * Mueller's "perverted scheduling": force switches where a correct program
 * cannot care and a racy one breaks.  WEFT_SCHED chooses:
 *   mutexswitch      switch after every successful mutex lock;
 *   rrswitch         switch at every exit from Weft, round robin;
 *   random:SEED      at every exit from Weft, switch when a seeded generator
 *                    says so, to a UT it picks; it also picks whom to run
 *                    when a UT blocks;
 *   pct:SEED:DEPTH[:STEPS]  probabilistic concurrency testing (Burckhardt et
 *                    al. 2010): random priorities, DEPTH-1 change points
 *                    among the first STEPS (default 2000) exits from Weft,
 *                    the highest such priority always runs.
 * POSIX priorities still come first: these policies only choose among the
 * UTs of the highest ready priority.  Switches come from the generator alone,
 * so for one seed and one input the schedule repeats exactly, unless the
 * preemption tick (kept as a backstop against UTs that spin without calling
 * Weft) or a timer (a sleep, a timed wait) forced a switch: the report at
 * exit says which.
 *
 * WEFT_TRACE=FILE writes one line per switch, creation and exit (thread ids,
 * no times or addresses) so two runs can be compared.  WEFT_DEADLOCK=report
 * (on by itself under the debug policies) prints every blocked UT, what it
 * waits on and its backtrace when nothing can ever wake any of them (the
 * thread dump's printer, dump.c), then aborts.
 */
#include "rt.h"
#include "dump.h"
#include "weft.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCT_MAX_DEPTH 64
#define PCT_DEFAULT_STEPS 2000
#define DEBUG_BACKSTOP_NS (20u * 1000 * 1000)

static char policy_text[96];
static uint64_t rng_state;
static unsigned pct_depth;
static uint64_t pct_steps, pct_step_count;
static uint64_t pct_change[PCT_MAX_DEPTH];

struct trace_buf {
	int fd;
	size_t len;
	char buf[65536];
};

/* splitmix64: tiny, good enough, and the same on every machine. */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool parse_u64(const char *s, const char **end, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	uint64_t v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*out = v;
	return true;
}

bool __weft_sched_debug_parse(const char *v)
{
	struct vp *vp = __weft_vp();
	const char *e;
	uint64_t seed, depth, steps = PCT_DEFAULT_STEPS;
	if (strcmp(v, "mutexswitch") == 0) {
		vp->sched_debug = SD_MUTEXSWITCH;
	} else if (strcmp(v, "rrswitch") == 0) {
		vp->sched_debug = SD_RRSWITCH;
	} else if (strncmp(v, "random:", 7) == 0 && parse_u64(v + 7, &e, &seed) && !*e) {
		vp->sched_debug = SD_RANDOM;
		rng_state = seed;
	} else if (strncmp(v, "pct:", 4) == 0 && parse_u64(v + 4, &e, &seed) && *e == ':' &&
		   parse_u64(e + 1, &e, &depth) && depth >= 1 && depth <= PCT_MAX_DEPTH &&
		   (!*e || (*e == ':' && parse_u64(e + 1, &e, &steps) && !*e && steps >= 1))) {
		vp->sched_debug = SD_PCT;
		rng_state = seed;
		pct_depth = (unsigned)depth;
		pct_steps = steps;
		for (unsigned i = 1; i < pct_depth; i++)
			pct_change[i] = 1 + rng() % pct_steps;
	} else {
		return false;
	}
	vp->debug_pick = vp->sched_debug >= SD_RANDOM;
	snprintf(policy_text, sizeof policy_text, "%s", v);
	return true;
}

/* ---- trace -------------------------------------------------------------- */

static void trace_flush(void)
{
	struct trace_buf *t = __weft_proc.trace;
	size_t off = 0;
	while (off < t->len) {
		long w = __weft_kwrite(t->fd, t->buf + off, t->len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	t->len = 0;
}

static void trace_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace_line(const char *fmt, ...)
{
	struct trace_buf *t = __weft_proc.trace;
	if (sizeof t->buf - t->len < 128)
		trace_flush();
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
}

void __weft_trace_switch(struct ut *from, struct ut *to)
{
	static const char *why[] = { "free", "ready", "running", "blocked", "zombie", "exit" };
	trace_line("switch %llu -> %llu (%s)\n", (unsigned long long)from->id,
		   (unsigned long long)to->id, from->state <= UT_EXITING ? why[from->state] : "?");
}

/* ---- the policies ------------------------------------------------------- */

void __weft_debug_created(struct ut *parent, struct ut *child)
{
	struct vp *vp = __weft_vp();
	if (vp->sched_debug == SD_PCT)
		child->pct_prio = pct_depth + (uint32_t)(rng() % 1000000u);
	if (__weft_proc.trace)
		trace_line("create %llu -> %llu\n", (unsigned long long)parent->id,
			   (unsigned long long)child->id);
}

static unsigned level_length(struct ut *head)
{
	unsigned n = 1;
	for (struct ut *t = head->q_next; t != head; t = t->q_next)
		n++;
	return n;
}

struct ut *__weft_debug_pick(struct vp *vp, struct ut *head)
{
	struct ut *best = head;
	if (vp->sched_debug == SD_RANDOM) {
		unsigned k = (unsigned)(rng() % level_length(head));
		while (k--)
			best = best->q_next;
		return best;
	}
	for (struct ut *t = head->q_next; t != head; t = t->q_next)
		if (t->pct_prio > best->pct_prio)
			best = t;
	return best;
}

/* Count a switch the seed chose, if vp (the caller's VP before it) made
 * one: on the VP the caller runs on now.  Under M:N it may go on on
 * another VP, and the one it left is another carrier's to write. */
static void count_seeded(struct vp *vp, uint64_t before)
{
	if (vp->stat.switches != before)
		__weft_vp()->stat.seeded_switches++;
}

static void seeded_yield(void)
{
	struct vp *vp = __weft_vp();
	uint64_t before = vp->stat.switches;
	__weft_yield();
	count_seeded(vp, before);
}

static void random_step(void)
{
	struct vp *vp = __weft_vp();
	if (rng() & 1)
		return;
	int p = __weft_highest_ready();
	if (p < (int)vp->cur->prio)
		return;
	struct ut *t = __weft_debug_pick(vp, __weft_level_head(vp, p));
	uint64_t before = vp->stat.switches;
	__weft_yield_to(t);
	count_seeded(vp, before);
}

static void pct_step(void)
{
	struct vp *vp = __weft_vp();
	struct ut *cur = vp->cur;
	pct_step_count++;
	for (unsigned i = 1; i < pct_depth; i++)
		if (pct_change[i] == pct_step_count)
			cur->pct_prio = i;       /* below every initial priority */
	int p = __weft_highest_ready();
	if (p < (int)cur->prio)
		return;
	struct ut *best = __weft_debug_pick(vp, __weft_level_head(vp, p));
	if (p > (int)cur->prio || best->pct_prio > cur->pct_prio) {
		uint64_t before = vp->stat.switches;
		__weft_yield_to(best);
		count_seeded(vp, before);
	}
}

/* A switch point for the debug policy in force (the epilogue calls it). */
void __weft_debug_switch_point(struct vp *vp, enum exit_point p)
{
	switch (vp->sched_debug) {
	case SD_MUTEXSWITCH:
		if (p == EXIT_MUTEX_LOCK)
			seeded_yield();
		break;
	case SD_RRSWITCH:
		seeded_yield();
		break;
	case SD_RANDOM:
		random_step();
		break;
	case SD_PCT:
		pct_step();
		break;
	default:
		break;
	}
}

/* ---- reports ------------------------------------------------------------ */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof line)
		n = sizeof line - 1;
	long w = __weft_kwrite(2, line, (size_t)n);
	(void)w;
}

static uint64_t timer_switches(void)
{
	const struct vp *vp = __weft_vp();
	return vp->stat.preemptions + vp->stat.dispatches;
}

static void schedule_summary(const char *prefix)
{
	const struct vp *vp = __weft_vp();
	uint64_t forced = timer_switches();
	say("%sschedule %s: %llu switches chosen by the seed, %llu forced by the tick, %llu timer wake-ups: %s\n",
	    prefix, policy_text, (unsigned long long)vp->stat.seeded_switches,
	    (unsigned long long)forced, (unsigned long long)vp->stat.timer_wakeups,
	    forced || vp->stat.timer_wakeups ? "not fully seed-determined"
					     : "fully seed-determined");
}

static void at_exit_report(void)
{
	struct vp *vp = __weft_vp();
	if (__weft_proc.trace)
		trace_flush();
	if (vp->sched_debug)
		schedule_summary("weft: ");
}

void __weft_deadlock(void)
{
	struct vp *vp = __weft_vp();
	if (!__weft_cfg()->deadlock_report && !vp->sched_debug)
		return;
	say("weft: deadlock: every thread is blocked and nothing can wake any of them\n");
	__weft_dump_threads(2, "weft: ", DUMP_BLOCKED_ONLY | DUMP_BACKTRACE);
	if (vp->sched_debug)
		schedule_summary("weft: ");
	if (__weft_proc.trace)
		trace_flush();
	abort();
}

void __weft_sched_debug_init(void)
{
	struct vp *vp = __weft_vp();
	const char *path = __weft_cfg()->trace_path;
	if (path) {
		struct trace_buf *t = malloc(sizeof *t);
		int fd = (int)__weft_kopen(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (!t || fd < 0) {
			say("weft: WEFT_TRACE=%s cannot be written; no trace\n", path);
			free(t);
			if (fd >= 0)
				__weft_kclose(fd);
		} else {
			t->fd = fd;
			t->len = 0;
			__weft_proc.trace = t;
			vp->trace_on = 1;
		}
	}
	if (vp->sched_debug == SD_PCT)
		vp->cur->pct_prio = pct_depth + (uint32_t)(rng() % 1000000u);
	/* A backstop only: a UT spinning without calling Weft must not hang a
	 * seeded schedule, but every tick switch makes the run timing-dependent. */
	if (vp->sched_debug && vp->preempt_on)
		__weft_timeslice_set(DEBUG_BACKSTOP_NS);
	if (vp->sched_debug || __weft_proc.trace)
		atexit(at_exit_report);
}
