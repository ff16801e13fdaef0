/*
 * cpu_idle.h — one CPU's idle time from /proc/stat, shared by the echo
 * rows' server side (fam_echo.c) and their load generator (echo_load.c,
 * which links glibc alone and nothing of the harness): the idle time over a
 * window, beside a process's own CPU time, says whether that process or
 * other work on the same CPU was the limit.
 */
#ifndef WEFT_BENCH_CPU_IDLE_H
#define WEFT_BENCH_CPU_IDLE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Idle time (idle + iowait) of CPU `cpu` in ns; -1 if unknown. */
static inline int64_t cpu_idle_ns(int cpu)
{
	char want[16], line[256];
	if (cpu < 0)
		return -1;
	snprintf(want, sizeof want, "cpu%d ", cpu);
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	int64_t idle = -1;
	size_t wl = strlen(want);
	while (fgets(line, sizeof line, f)) {
		unsigned long long v[5];
		if (strncmp(line, want, wl) == 0 &&
		    sscanf(line + wl, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5) {
			idle = (int64_t)((v[3] + v[4]) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)));
			break;
		}
	}
	fclose(f);
	return idle;
}

#endif
