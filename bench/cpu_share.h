/*
 * cpu_share.h — an equal share of one CPU for the echo rows' server
 * (fam_echo.c): two cgroups made for one run, under the cgroup this
 * process is in and with the same CPU weight, one for the server and one
 * for a burner (bench-echo-load --burn: a loop that never sleeps), both
 * on the server's CPU.  While the server has work it gets the CPU's
 * weighted share — half of it by default — and the burner the rest; when
 * it has none the burner takes it all.  The load generator stays out,
 * with the whole other CPU, so that it is never the limit and requests per
 * second measure what the server does with its share.
 *
 * Why weights and not a quota (cpu.max / cpu.cfs_quota_us): bandwidth
 * control throttles a cgroup when its quota runs out and on Linux 6.18
 * does so task by task, so a server with 10,000 threads pays for the
 * quota itself — NPTL's server cost 112 us a request under a quota of
 * 5 ms per 10 ms against 20 us without one, 24 us with 50 ms per 100 ms —
 * while weights are kept by the scheduler's choice between two group
 * entities, whatever each holds.  The weights are the largest the
 * hierarchy allows, so that other work on a shared machine takes almost
 * nothing from either.
 *
 * Invariant: the cgroups hold only this run's server and burner and live
 * for that run; they are named weft-echo-PID (server) and
 * weft-echo-PID-burn after the process that made them, and share_make
 * removes those of processes that have died.  Nothing here changes any
 * other cgroup.
 */
#ifndef WEFT_BENCH_CPU_SHARE_H
#define WEFT_BENCH_CPU_SHARE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cpu_share {
	char dir[512];       /* the server's cgroup ("": no share) */
	char burn[512];      /* the burner's */
	char home[400];      /* the cgroup this process was in */
	char what[200];      /* how the share is kept, for the notes */
};

static bool share_write(const char *dir, const char *file, const char *val)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = write(fd, val, strlen(val));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(val);
}

/* Move process pid (0: the caller) into cgroup dir. */
static bool share_move(const char *dir, pid_t pid)
{
	char v[24];
	snprintf(v, sizeof v, "%d", (int)pid);
	return share_write(dir, "cgroup.procs", v);
}

/* The directory of this process's cgroup in the hierarchy that has the cpu
 * controller: v2 (the "0::" line and a cgroup2 mount) or v1 (a line whose
 * controllers include "cpu", and the cgroup mount carrying it). */
static bool share_home(int version, char *out, size_t n)
{
	char line[1024], path[512] = "";
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = 0;
		if (version == 2 && !strcmp(line, "0") && c1 + 1 == c2) {
			snprintf(path, sizeof path, "%s", c2 + 1);
			found = true;
		} else if (version == 1) {
			for (char *t = strtok(c1 + 1, ","); t; t = strtok(NULL, ","))
				if (!strcmp(t, "cpu")) {
					snprintf(path, sizeof path, "%s", c2 + 1);
					found = true;
				}
		}
	}
	fclose(f);
	if (!found)
		return false;
	/* the mount: mountinfo's root (field 4) and mount point (field 5), the
	 * type and super options after " - " */
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char root[512], mnt[512], type[64], opts[512];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", type, opts) != 2)
			continue;
		if (version == 2 ? strcmp(type, "cgroup2") != 0 : strcmp(type, "cgroup") != 0)
			continue;
		if (version == 1) {
			bool cpu = false;
			for (char *t = strtok(opts, ","); t; t = strtok(NULL, ","))
				cpu |= !strcmp(t, "cpu");
			if (!cpu)
				continue;
		}
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		if (rl && strncmp(path, root, rl) != 0)
			continue;
		if ((size_t)snprintf(out, n, "%s%s", mnt, path + rl) >= n)
			break;
		found = true;
	}
	fclose(f);
	size_t l = strlen(out);
	if (found && l > 1 && out[l - 1] == '/')
		out[l - 1] = 0;
	return found;
}

/* Remove the cgroups of runs whose process is gone. */
static void share_sweep(const char *home)
{
	DIR *d = opendir(home);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid;
		if (sscanf(e->d_name, "weft-echo-%d", &pid) == 1 && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
			char p[800];
			snprintf(p, sizeof p, "%s/%s", home, e->d_name);
			rmdir(p);
		}
	}
	closedir(d);
}

static void share_remove(struct cpu_share *s)
{
	const char *dirs[] = { s->dir, s->burn };
	for (int i = 0; i < 2; i++) {
		if (!dirs[i][0])
			continue;
		/* a process just moved out or reaped may still count a moment */
		for (int k = 0; k < 100 && rmdir(dirs[i]) != 0 && errno == EBUSY; k++)
			usleep(10000);
	}
	s->dir[0] = s->burn[0] = 0;
}

/* Make the two cgroups, the server's with `frac` (0 < frac < 1) of the
 * weight: false when no hierarchy lets this process make them; why says
 * what failed. */
static bool share_make(struct cpu_share *s, double frac, char *why, size_t n)
{
	memset(s, 0, sizeof *s);
	char path[600], v[32];
	for (int version = 2; version >= 1; version--) {
		if (!share_home(version, s->home, sizeof s->home))
			continue;
		share_sweep(s->home);
		const char *file = version == 2 ? "cpu.weight" : "cpu.shares";
		double top = version == 2 ? 10000 : 262144;   /* the largest weight each allows */
		long ws = (long)(top * frac + 0.5), wb = (long)(top * (1 - frac) + 0.5);
		snprintf(s->dir, sizeof s->dir, "%s/weft-echo-%d", s->home, (int)getpid());
		snprintf(s->burn, sizeof s->burn, "%s/weft-echo-%d-burn", s->home, (int)getpid());
		bool ok = (mkdir(s->dir, 0755) == 0 || errno == EEXIST) && (mkdir(s->burn, 0755) == 0 || errno == EEXIST);
		if (ok && version == 2) {
			snprintf(path, sizeof path, "%s/%s", s->dir, file);
			if (access(path, F_OK) != 0)          /* the controller is not enabled below home */
				share_write(s->home, "cgroup.subtree_control", "+cpu");
		}
		snprintf(v, sizeof v, "%ld", ws);
		ok = ok && share_write(s->dir, file, v);
		snprintf(v, sizeof v, "%ld", wb);
		ok = ok && share_write(s->burn, file, v);
		if (!ok) {
			snprintf(why, n, "cannot make two cgroups with %s under %.200s (%s)", file, s->home, strerror(errno));
			rmdir(s->dir);
			rmdir(s->burn);
			s->dir[0] = s->burn[0] = 0;
			continue;
		}
		snprintf(s->what, sizeof s->what, "%.2f of its CPU while it has work, against a burner (cgroup v%d %s %ld : %ld)",
			 frac, version, file, ws, wb);
		return true;
	}
	if (!why[0])
		snprintf(why, n, "no cgroup hierarchy with the cpu controller");
	return false;
}

#endif
