/*
 * dump_signal — what the dump signal's action does, and how its setting is
 * read (runtime/dump.c; linked with libweft.a, whose hidden functions it
 * calls: the runtime's WEFT_DUMP_SIGNAL hook calls the same two).
 *   dump_signal parse      WEFT_DUMP_SIGNAL values: accepted, refused
 *   dump_signal continue   a SIGQUIT handler dumps and the program goes on
 *   dump_signal exit       ... and the process ends by SIGQUIT
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int __weft_dump_signal_parse(const char *v, bool *then_exit);
void __weft_dump_on_signal(int sig, bool then_exit);

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static bool then_exit;

void *blocked_in_lock(void *arg)
{
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return arg;
}

static void on_quit(int sig)
{
	__weft_dump_on_signal(sig, then_exit);
}

static void parse_cases(void)
{
	bool ex;
	CHECK_EQ(__weft_dump_signal_parse("SIGQUIT", &ex), SIGQUIT);
	CHECK(!ex);
	CHECK_EQ(__weft_dump_signal_parse("QUIT:exit", &ex), SIGQUIT);
	CHECK(ex);
	CHECK_EQ(__weft_dump_signal_parse("SIGUSR2:continue", &ex), SIGUSR2);
	CHECK(!ex);
	CHECK_EQ(__weft_dump_signal_parse("SIGRTMIN+3", &ex), SIGRTMIN + 3);
	CHECK_EQ(__weft_dump_signal_parse("10", &ex), 10);
	CHECK_EQ(__weft_dump_signal_parse("SIGKILL", &ex), -1);
	CHECK_EQ(__weft_dump_signal_parse("SIGSEGV", &ex), -1);
	CHECK_EQ(__weft_dump_signal_parse("33", &ex), -1);          /* glibc's own */
	CHECK_EQ(__weft_dump_signal_parse("SIGQUIT:later", &ex), -1);
	CHECK_EQ(__weft_dump_signal_parse("SIGNOPE", &ex), -1);
	CHECK_EQ(__weft_dump_signal_parse("", &ex), -1);
	CHECK_EQ(__weft_dump_signal_parse("SIGRTMIN+99", &ex), -1);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "parse";
	if (strcmp(mode, "parse") == 0) {
		parse_cases();
		return 0;
	}
	then_exit = strcmp(mode, "exit") == 0;
	pthread_t t[3];
	pthread_mutex_lock(&m);
	pthread_setname_np(pthread_self(), "main");
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof name, "worker-%d", i + 1);
		CHECK_OK(pthread_create(&t[i], NULL, blocked_in_lock, NULL));
		CHECK_OK(pthread_setname_np(t[i], name));
	}
	sched_yield();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_quit;
	CHECK_OK(sigaction(SIGQUIT, &sa, NULL));
	raise(SIGQUIT);
	printf("continued\n");
	pthread_mutex_unlock(&m);
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	return 0;
}
