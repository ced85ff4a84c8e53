/*
 * vecring_close racing calls on other threads: each round opens a link,
 * starts threads that block in vecring_wait_up and loop on link-level, TX
 * and RX calls on the same handle, and closes it from the main thread at a
 * varying moment. Every thread must end with VECRING_E_CLOSED, close must
 * succeed, and nothing may read freed memory (run it under valgrind or ASan
 * to be sure). Even rounds use a slave that never comes up (the threads
 * wait); odd rounds a master whose slave is attached (the threads move
 * frames through the rings while the handle is closed).
 *
 * Usage: close_race RUN_DIR ROUNDS [--no-time-limit]
 * The time limit (close returns within one second) is skipped under tools
 * that slow the program down many times.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vecring.h"

static const char *run_dir;

#define FAIL(...)                                                                                          \
	do {                                                                                               \
		fprintf(stderr, "close_race: " __VA_ARGS__);                                                 \
		fprintf(stderr, " (%s)\n", vecring_last_error_message());                                   \
		exit(1);                                                                                   \
	} while (0)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static vecring_link_t *open_link(int role)
{
	vecring_options_t o;
	vecring_options_init(&o);
	o.role = role;
	o.domain = "race";
	o.link = "l";
	o.run_dir = run_dir;
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	o.retry_interval_ms = 5;
	vecring_link_t *l = NULL;
	int rc = vecring_open(&o, &l);
	if (rc != VECRING_OK)
		FAIL("open (role %d): %d", role, rc);
	return l;
}

/* What one racing thread does with the handle. */
enum job { WAIT_UP, LINK_CALLS, TX_CALLS, RX_CALLS, JOBS };
static const char *const job_names[JOBS] = { "wait_up", "link-level calls", "TX calls", "RX calls" };

struct racer {
	pthread_t thread;
	vecring_link_t *link;
	enum job job;
	atomic_int *started;
	int rc;      /* the call's return that ended the loop */
	long calls;  /* calls made */
};

static int tx_once(vecring_link_t *l, long i)
{
	uint8_t frame[200];
	memset(frame, (int)i, sizeof frame);
	if (i % 3 == 0)
		return vecring_send(l, frame, 60 + i % 140);
	vecring_frame_t f[2] = { { frame, 64, 0 }, { frame, 128, 0 } };
	int rc = vecring_send_batch(l, f, 2);
	return rc >= 0 ? VECRING_OK : rc;
}

static int rx_once(vecring_link_t *l, long i)
{
	uint8_t buf[9216];
	size_t len;
	if (i % 2 == 0)
		return vecring_recv(l, buf, sizeof buf, &len);
	vecring_frame_t f[8];
	int n = vecring_rx_peek(l, f, 8);
	if (n <= 0)
		return n;
	uint8_t sum = 0;
	for (int k = 0; k < n; k++)
		sum ^= f[k].data[f[k].len - 1]; /* touch the ring memory */
	(void)sum;
	int rc = vecring_rx_release(l);
	return rc;
}

static void *race(void *arg)
{
	struct racer *r = arg;
	atomic_fetch_add(r->started, 1);
	uint64_t g = 0;
	vecring_counters_t c;
	uint32_t slots;
	for (long i = 0;; i++) {
		int rc;
		switch (r->job) {
		case WAIT_UP:
			rc = vecring_wait_up(r->link, 30000, &g);
			/* Up already (odd rounds): wait for it to go down instead. */
			if (rc == VECRING_OK)
				rc = vecring_wait_down(r->link, 30000);
			break;
		case LINK_CALLS:
			rc = vecring_state(r->link, &g);
			if (rc >= 0)
				rc = vecring_counters(r->link, &c, sizeof c);
			if (rc >= 0) {
				rc = vecring_geometry(r->link, &slots, NULL, NULL);
				if (rc == VECRING_E_LINK_DOWN)
					rc = VECRING_OK;
			}
			break;
		case TX_CALLS:
			rc = tx_once(r->link, i);
			break;
		default:
			rc = rx_once(r->link, i);
			break;
		}
		r->calls++;
		if (rc >= 0 || rc == VECRING_E_AGAIN || rc == VECRING_E_LINK_DOWN)
			continue;
		r->rc = rc;
		return NULL;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: close_race RUN_DIR ROUNDS [--no-time-limit]\n");
		return 2;
	}
	run_dir = argv[1];
	const int rounds = atoi(argv[2]);
	const int time_limit = !(argc > 3 && strcmp(argv[3], "--no-time-limit") == 0);
	double slowest = 0;
	long calls = 0;
	srand(12345);
	for (int round = 0; round < rounds; round++) {
		const int linked = round % 2;
		vecring_link_t *peer = NULL;
		vecring_link_t *l = open_link(linked ? VECRING_ROLE_MASTER : VECRING_ROLE_SLAVE);
		if (linked) {
			peer = open_link(VECRING_ROLE_SLAVE);
			if (vecring_wait_up(l, 10000, NULL) != VECRING_OK || vecring_wait_up(peer, 10000, NULL) != VECRING_OK)
				FAIL("round %d: link did not come up", round);
		}
		atomic_int started = 0;
		struct racer r[JOBS];
		for (int j = 0; j < JOBS; j++) {
			r[j] = (struct racer){ .link = l, .job = j, .started = &started, .rc = 1 };
			if (pthread_create(&r[j].thread, NULL, race, &r[j]) != 0)
				FAIL("pthread_create");
		}
		/* Close before, while or after the threads get going. */
		if (round % 5 != 0) {
			while (atomic_load(&started) < JOBS)
				sched_yield();
			struct timespec ts = { 0, (rand() % 3000) * 1000L };
			nanosleep(&ts, NULL);
		}
		double t0 = now();
		int rc = vecring_close(l);
		double took = now() - t0;
		if (rc != VECRING_OK)
			FAIL("round %d: close returned %d", round, rc);
		if (took > slowest)
			slowest = took;
		if (time_limit && took > 1.0)
			FAIL("round %d: close took %.3f s", round, took);
		for (int j = 0; j < JOBS; j++) {
			pthread_join(r[j].thread, NULL);
			calls += r[j].calls;
			if (r[j].rc != VECRING_E_CLOSED)
				FAIL("round %d: the thread making %s ended with %d, not VECRING_E_CLOSED", round,
				     job_names[j], r[j].rc);
		}
		if (vecring_state(l, NULL) != VECRING_E_CLOSED || vecring_close(l) != VECRING_E_CLOSED)
			FAIL("round %d: the closed handle is not refused as closed", round);
		if (peer && vecring_close(peer) != VECRING_OK)
			FAIL("round %d: closing the peer", round);
	}
	printf("close_race: %d rounds passed (%ld racing calls; slowest close %.1f ms)\n", rounds, calls,
	       slowest * 1e3);
	return 0;
}
