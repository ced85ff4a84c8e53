/*
 * vecring_close with a hostile slave attached, for tests/ffi.rs: a master
 * whose socket is open to every local user and admits one uid receives,
 * asleep in vecring_recv_timeout (50 ms at most per call), until stdin has
 * a line or closes, then closes the link and says how long vecring_close
 * took. The slave (vecring-attack plant where=doorbell then=frames) has
 * rung the doorbells for nothing, planted descriptors whose last close
 * sleeps for an hour on them and stays attached: vecring_close must return
 * within a second all the same.
 *
 * Usage: close_attack RUN_DIR DOMAIN LINK UID
 *
 * Prints "close_attack: listening" once the link is open, "close_attack:
 * up" once the slave attached, "close_attack: rx rounds=R frames=F
 * max_gap_ms=G" every 100 ms while receiving (G: the longest time between
 * two receive calls returning), then "close_attack: closed ms=M rc=C".
 * Exits 1 on a setup error or an unexpected receive error; SIGALRM ends it
 * if it is still running after its own watchdog (90 s).
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "vecring.h"

#define WATCHDOG_S 90

#define FAIL(...)                                                                                          \
	do {                                                                                               \
		fprintf(stderr, "close_attack: " __VA_ARGS__);                                               \
		fprintf(stderr, " (%s)\n", vecring_last_error_message());                                   \
		exit(1);                                                                                   \
	} while (0)

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Whether stdin has a line or is closed: time to close the link. */
static int stdin_says_stop(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

int main(int argc, char **argv)
{
	vecring_options_t o;
	vecring_link_t *link = NULL;
	uint32_t uid;
	uint64_t gen, last, t, gap, max_gap = 0, next_report, rounds = 0, frames = 0, t0;
	unsigned char buf[9216];
	size_t len;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: close_attack RUN_DIR DOMAIN LINK UID\n");
		return 1;
	}
	alarm(WATCHDOG_S); /* SIGALRM ends the process: exit status != 0 */
	uid = (uint32_t)strtoul(argv[4], NULL, 10);
	vecring_options_init(&o);
	o.role = VECRING_ROLE_MASTER;
	o.run_dir = argv[1];
	o.domain = argv[2];
	o.link = argv[3];
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	o.socket_mode = 0666;
	o.allowed_uids = &uid;
	o.allowed_uid_count = 1;
	rc = vecring_open(&o, &link);
	if (rc != VECRING_OK)
		FAIL("vecring_open: %d", rc);
	printf("close_attack: listening\n");
	fflush(stdout);
	rc = vecring_wait_up(link, 30000, &gen);
	if (rc != VECRING_OK)
		FAIL("vecring_wait_up: %d", rc);
	printf("close_attack: up\n");
	fflush(stdout);

	last = next_report = now_us();
	while (!stdin_says_stop()) {
		rc = vecring_recv_timeout(link, buf, sizeof(buf), &len, 50);
		if (rc == VECRING_OK)
			frames++;
		else if (rc != VECRING_E_AGAIN)
			FAIL("vecring_recv_timeout: %d", rc);
		rounds++;
		t = now_us();
		gap = t - last;
		last = t;
		if (gap > max_gap)
			max_gap = gap;
		if (t >= next_report) {
			printf("close_attack: rx rounds=%llu frames=%llu max_gap_ms=%llu\n",
			       (unsigned long long)rounds, (unsigned long long)frames,
			       (unsigned long long)(max_gap / 1000));
			fflush(stdout);
			next_report = t + 100000;
		}
	}

	t0 = now_us();
	rc = vecring_close(link);
	printf("close_attack: closed ms=%llu rc=%d\n", (unsigned long long)((now_us() - t0) / 1000),
	       rc);
	fflush(stdout);
	return rc == VECRING_OK ? 0 : 1;
}
