/*
 * threads.h -- what a thread of this process is doing, as the kernel says
 * (/proc/self/task/<tid>/syscall): for the C tests that must act only once
 * another thread sleeps (a call that must be refused while another thread
 * sleeps inside, a frame that must wake a sleeper), instead of sleeping a
 * while and hoping it did. tests/support/threads.rs in C.
 *
 * The including file defines _DEFAULT_SOURCE (or _GNU_SOURCE) before its
 * first #include, for syscall(2).
 */
#ifndef VECRING_TEST_THREADS_H
#define VECRING_TEST_THREADS_H

#include <stdio.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* The calling thread's id (gettid). */
static inline pid_t thread_id(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Whether system call nr is one a thread sleeps in while it waits for an
 * event: poll, ppoll, epoll_wait, epoll_pwait, epoll_pwait2 and futex, by
 * their x86-64 and aarch64 numbers. */
static inline int thread_is_wait_syscall(long nr)
{
#if defined(__x86_64__)
	static const long waits[] = { 7, 271, 232, 281, 441, 202 };
#elif defined(__aarch64__)
	static const long waits[] = { 73, 22, 441, 98 };
#else
	static const long waits[] = { -1 };
#endif
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (waits[i] == nr)
			return 1;
	return 0;
}

/* Whether thread tid of this process sits in a waiting system call. The
 * file holds the call's number while the thread is inside one, "running"
 * or -1 otherwise. */
static inline int thread_blocked_in_wait(pid_t tid)
{
	char path[64];
	long nr;
	int got;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	got = fscanf(f, "%ld", &nr);
	fclose(f);
	return got == 1 && thread_is_wait_syscall(nr);
}

static inline double thread_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits until thread tid sits in a waiting system call and stays there for
 * 20 ms (not a wait on the way to its sleep); 0 if that does not happen
 * within timeout_s seconds, 1 once it does. */
static inline int thread_wait_until_blocked(pid_t tid, double timeout_s)
{
	double end = thread_now() + timeout_s, since = -1;
	struct timespec step = { 0, 2 * 1000 * 1000 };

	while (thread_now() < end) {
		if (thread_blocked_in_wait(tid)) {
			if (since < 0)
				since = thread_now();
			if (thread_now() - since >= 0.02)
				return 1;
		} else {
			since = -1;
		}
		nanosleep(&step, NULL);
	}
	return 0;
}

#endif
