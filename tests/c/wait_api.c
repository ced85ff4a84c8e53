/*
 * wait_api.c -- the contract of the C API's waits (vecring_rx_fd ...
 * vecring_send_timeout), checked call by call in one process that opens
 * both ends of a link: bad arguments, invalid and closed handles,
 * timeouts that end no sooner than asked, prepare / cancel around a
 * poll(2) of the descriptor, a receive that waits through link down and
 * up, VECRING_E_BUSY while another thread sleeps in an RX call, and
 * vecring_close ending the waits of other threads.
 *
 * usage: wait_api RUN_DIR    (prints "wait_api: all N checks passed"; exits
 *                           1 at the first failed check, naming it)
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* syscall(2), for threads.h */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vecring.h"

#define CHECK_PROGRAM "wait_api"
#include "check.h"
#include "threads.h"

/* Seconds a thread may take to fall asleep in a wait. */
#define ASLEEP_S 10

static const char *run_dir;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static vecring_link_t *open_link(const char *name, int role)
{
	vecring_options_t o;
	vecring_options_init(&o);
	o.run_dir = run_dir;
	o.domain = "wait";
	o.link = name;
	o.role = role;
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	o.retry_interval_ms = 5;
	vecring_link_t *l = NULL;
	EXPECT(vecring_open(&o, &l), VECRING_OK);
	return l;
}

static void up(vecring_link_t *a, vecring_link_t *b)
{
	EXPECT(vecring_wait_up(a, 10000, NULL), VECRING_OK);
	EXPECT(vecring_wait_up(b, 10000, NULL), VECRING_OK);
}

static uint8_t buf[9216];
static uint8_t frame[1500];

static void test_arguments(vecring_link_t *m)
{
	uint64_t fake[16] = { 0 };
	vecring_link_t *bogus = (vecring_link_t *)fake;
	vecring_buf_t b = { buf, sizeof buf, 0 };
	size_t len = 0;

	EXPECT(vecring_rx_fd(NULL), VECRING_E_INVAL);
	EXPECT(vecring_rx_fd(bogus), VECRING_E_INVAL);
	EXPECT(vecring_tx_fd(NULL), VECRING_E_INVAL);
	EXPECT(vecring_rx_prepare_wait(NULL), VECRING_E_INVAL);
	EXPECT(vecring_rx_cancel_wait(bogus), VECRING_E_INVAL);
	EXPECT(vecring_rx_wait(NULL, 0), VECRING_E_INVAL);
	EXPECT(vecring_tx_prepare_wait(bogus, 64), VECRING_E_INVAL);
	EXPECT(vecring_tx_cancel_wait(NULL), VECRING_E_INVAL);
	EXPECT(vecring_tx_wait(NULL, 64, 0), VECRING_E_INVAL);
	EXPECT(vecring_tx_peer_present(bogus), VECRING_E_INVAL);
	EXPECT(vecring_recv_timeout(NULL, buf, sizeof buf, &len, 0), VECRING_E_INVAL);
	EXPECT(vecring_recv_batch_timeout(bogus, &b, 1, 0), VECRING_E_INVAL);
	EXPECT(vecring_send_timeout(NULL, frame, 64, 0), VECRING_E_INVAL);

	/* Timeouts: -1, 0 and positive only. */
	EXPECT(vecring_rx_wait(m, -2), VECRING_E_INVAL);
	CHECK(last_error_contains("timeout_ms is -2"), "names the value");
	EXPECT(vecring_rx_wait(m, INT_MIN), VECRING_E_INVAL);
	EXPECT(vecring_recv_timeout(m, buf, sizeof buf, &len, -5), VECRING_E_INVAL);
	EXPECT(vecring_recv_batch_timeout(m, &b, 1, -3), VECRING_E_INVAL);
	EXPECT(vecring_tx_wait(m, 64, -2), VECRING_E_INVAL);
	EXPECT(vecring_send_timeout(m, frame, 64, -100), VECRING_E_INVAL);

	/* Lengths a sender could wait for forever. */
	EXPECT(vecring_tx_prepare_wait(m, 0), VECRING_E_INVAL);
	EXPECT(vecring_tx_wait(m, 0, 0), VECRING_E_INVAL);
	EXPECT(vecring_tx_prepare_wait(m, 9217), VECRING_E_TOOBIG);
	CHECK(last_error_contains("9217"), "names the length");
	EXPECT(vecring_tx_wait(m, (size_t)-1, -1), VECRING_E_TOOBIG);
	EXPECT(vecring_send_timeout(m, frame, 0, -1), VECRING_E_INVAL);

	/* Other pointers, as vecring_recv and vecring_send check them. */
	EXPECT(vecring_recv_timeout(m, buf, sizeof buf, NULL, -1), VECRING_E_INVAL);
	EXPECT(vecring_recv_timeout(m, NULL, 64, &len, -1), VECRING_E_INVAL);
	EXPECT(vecring_recv_batch_timeout(m, NULL, 1, -1), VECRING_E_INVAL);
	EXPECT(vecring_send_timeout(m, NULL, 64, -1), VECRING_E_INVAL);
	EXPECT(vecring_recv_batch_timeout(m, &b, 0, -1), 0);
}

static void test_descriptors(vecring_link_t *m, vecring_link_t *s)
{
	int rfd = vecring_rx_fd(m), tfd = vecring_tx_fd(m);
	CHECK(rfd >= 0 && tfd >= 0 && rfd != tfd, "descriptors %d, %d", rfd, tfd);
	CHECK(vecring_rx_fd(s) != rfd && vecring_rx_fd(s) != tfd, "each endpoint has its own");
	CHECK(fcntl(rfd, F_GETFD) >= 0 && fcntl(tfd, F_GETFD) >= 0, "open descriptors");
	CHECK((fcntl(rfd, F_GETFD) & FD_CLOEXEC) != 0, "close-on-exec");
	for (int i = 0; i < 3; i++)
		CHECK(vecring_rx_fd(m) == rfd && vecring_tx_fd(m) == tfd, "the same each time");
	/* The slave's receiver attaches to the generation at its first call. */
	size_t len = 0;
	EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_E_AGAIN);
	EXPECT(vecring_tx_peer_present(m), 1);
}

static void test_timeouts(vecring_link_t *s)
{
	vecring_buf_t b = { buf, sizeof buf, 0 };
	size_t len = 0;
	double t0;

	/* Timeout 0: a look, no sleep. */
	EXPECT(vecring_rx_wait(s, 0), 0);
	EXPECT(vecring_recv_timeout(s, buf, sizeof buf, &len, 0), VECRING_E_AGAIN);
	EXPECT(vecring_recv_batch_timeout(s, &b, 1, 0), 0);

	t0 = now();
	EXPECT(vecring_rx_wait(s, 200), 0);
	CHECK(now() - t0 >= 0.2, "vecring_rx_wait(200) returned after %.3f s", now() - t0);
	t0 = now();
	EXPECT(vecring_recv_timeout(s, buf, sizeof buf, &len, 150), VECRING_E_AGAIN);
	CHECK(now() - t0 >= 0.15, "vecring_recv_timeout(150) returned after %.3f s", now() - t0);
	CHECK(last_error_contains("within 150 ms"), "says how long it waited");
	t0 = now();
	EXPECT(vecring_recv_batch_timeout(s, &b, 1, 100), 0);
	CHECK(now() - t0 >= 0.1, "vecring_recv_batch_timeout(100) returned after %.3f s", now() - t0);
}

static void test_prepare_and_poll(vecring_link_t *m, vecring_link_t *s)
{
	size_t len = 0;
	struct pollfd p = { .fd = vecring_rx_fd(s), .events = POLLIN };
	vecring_frame_t f[1];

	EXPECT(vecring_rx_prepare_wait(s), 1);
	EXPECT(vecring_rx_cancel_wait(s), VECRING_OK);
	/* A frame queued: no sleep. */
	memset(frame, 1, sizeof frame);
	EXPECT(vecring_send(m, frame, 100), VECRING_OK);
	EXPECT(vecring_rx_prepare_wait(s), 0);
	EXPECT(vecring_rx_wait(s, -1), 1);
	/* No sleeping with peeked frames held. */
	EXPECT(vecring_rx_peek(s, f, 1), 1);
	EXPECT(vecring_rx_prepare_wait(s), VECRING_E_INVAL);
	EXPECT(vecring_rx_wait(s, 0), VECRING_E_INVAL);
	EXPECT(vecring_rx_release(s), VECRING_OK);

	/* Prepared, the peer sends: the descriptor becomes readable. */
	for (int round = 0; round < 20; round++) {
		EXPECT(vecring_rx_prepare_wait(s), 1);
		frame[0] = (uint8_t)round;
		EXPECT(vecring_send(m, frame, 60 + round), VECRING_OK);
		CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN), "round %d: the descriptor did not wake", round);
		EXPECT(vecring_rx_cancel_wait(s), VECRING_OK);
		EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_OK);
		CHECK(len == (size_t)(60 + round) && buf[0] == (uint8_t)round, "round %d: frame of %zu bytes", round,
		      len);
	}
	EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_E_AGAIN);
}

struct drainer {
	vecring_link_t *link;
	pid_t sender; /* the thread that waits for room */
	int frames;
	int slept;      /* the sender was seen asleep */
	double reading; /* when the first read began */
	int rc;
};

/* Once the sender sleeps (ASLEEP_S at most), receives `frames` frames with
 * vecring_recv_timeout, noting when it began. */
static void *drain(void *arg)
{
	struct drainer *d = arg;
	size_t len;
	d->slept = thread_wait_until_blocked(d->sender, ASLEEP_S);
	d->reading = now();
	for (int i = 0; i < d->frames; i++) {
		d->rc = vecring_recv_timeout(d->link, buf, sizeof buf, &len, 10000);
		if (d->rc != VECRING_OK)
			break;
	}
	return NULL;
}

static void test_sender_waits(vecring_link_t *m, vecring_link_t *s)
{
	int full = 0;
	double t0;
	pthread_t t;

	while (vecring_send(m, frame, sizeof frame) == VECRING_OK)
		full++;
	CHECK(full > 0, "the ring took no frame");
	EXPECT(vecring_send(m, frame, sizeof frame), VECRING_E_AGAIN);
	EXPECT(vecring_send_timeout(m, frame, sizeof frame, 0), VECRING_E_AGAIN);
	EXPECT(vecring_tx_wait(m, sizeof frame, 0), 0);
	EXPECT(vecring_tx_prepare_wait(m, sizeof frame), 1);
	EXPECT(vecring_tx_cancel_wait(m), VECRING_OK);
	t0 = now();
	EXPECT(vecring_send_timeout(m, frame, sizeof frame, 150), VECRING_E_AGAIN);
	CHECK(now() - t0 >= 0.15, "vecring_send_timeout(150) returned after %.3f s", now() - t0);
	CHECK(last_error_contains("within 150 ms"), "says how long it waited");
	t0 = now();
	EXPECT(vecring_tx_wait(m, sizeof frame, 100), 0);
	CHECK(now() - t0 >= 0.1, "vecring_tx_wait(100) returned after %.3f s", now() - t0);

	/* The peer reads everything once this thread sleeps in the send: the
	 * send returns only after the peer's first read began. */
	struct drainer d = { .link = s, .sender = thread_id(), .frames = full + 1, .rc = 1 };
	CHECK(pthread_create(&t, NULL, drain, &d) == 0, "pthread_create");
	EXPECT(vecring_send_timeout(m, frame, sizeof frame, -1), VECRING_OK);
	t0 = now();
	pthread_join(t, NULL);
	CHECK(d.slept, "vecring_send_timeout(-1) on a full ring was not seen asleep within %d s", ASLEEP_S);
	CHECK(t0 >= d.reading, "vecring_send_timeout(-1) returned %.3f s before the peer began to read",
	      d.reading - t0);
	EXPECT(d.rc, VECRING_OK);
	EXPECT(vecring_tx_wait(m, sizeof frame, 0), 1);
	EXPECT(vecring_tx_prepare_wait(m, sizeof frame), 0);
	EXPECT(vecring_tx_cancel_wait(m), VECRING_OK);
}

struct waiter {
	vecring_link_t *link;
	int tx;            /* 1: vecring_send_timeout; 0: vecring_rx_wait */
	atomic_int tid;    /* the thread's id, once it runs */
	atomic_int done;
	int rc;
};

static void *wait_forever(void *arg)
{
	struct waiter *w = arg;
	atomic_store(&w->tid, (int)thread_id());
	w->rc = w->tx ? vecring_send_timeout(w->link, frame, sizeof frame, -1) : vecring_rx_wait(w->link, -1);
	atomic_store(&w->done, 1);
	return NULL;
}

/* A slave whose master leaves and comes back: vecring_recv_timeout on it
 * waits through link down and up, on the same descriptor. */
struct reopener {
	pid_t receiver; /* the thread that waits in vecring_recv_timeout */
	int slept;      /* it was seen asleep before the master came back */
	int rc;
};

static void *reopen_master(void *arg)
{
	struct reopener *r = arg;
	r->slept = thread_wait_until_blocked(r->receiver, ASLEEP_S);
	vecring_link_t *m = open_link("w", VECRING_ROLE_MASTER);
	r->rc = vecring_wait_up(m, 10000, NULL);
	if (r->rc == VECRING_OK)
		r->rc = vecring_send(m, "after the master came back", 27);
	for (int i = 0; r->rc == VECRING_OK && vecring_tx_unread(m) > 0 && i < 1000; i++)
		sleep_ms(5);
	vecring_close(m);
	return NULL;
}

static void test_wait_through_down_and_up(vecring_link_t *s)
{
	size_t len = 0;
	pthread_t t;
	int fd = vecring_rx_fd(s);
	struct reopener r = { .receiver = thread_id(), .rc = 1 };

	EXPECT(vecring_wait_down(s, 10000), VECRING_OK);
	EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_E_LINK_DOWN);
	EXPECT(vecring_recv_timeout(s, buf, sizeof buf, &len, 0), VECRING_E_LINK_DOWN);
	EXPECT(vecring_rx_prepare_wait(s), 1);
	EXPECT(vecring_rx_cancel_wait(s), VECRING_OK);
	EXPECT(vecring_tx_peer_present(s), 0);
	CHECK(pthread_create(&t, NULL, reopen_master, &r) == 0, "pthread_create");
	EXPECT(vecring_recv_timeout(s, buf, sizeof buf, &len, 20000), VECRING_OK);
	CHECK(len == 27 && strcmp((char *)buf, "after the master came back") == 0, "the new master's frame");
	pthread_join(t, NULL);
	CHECK(r.slept, "vecring_recv_timeout on a link down was not seen asleep within %d s", ASLEEP_S);
	EXPECT(r.rc, VECRING_OK);
	CHECK(vecring_rx_fd(s) == fd, "the descriptor changed across the new master");
}

static void test_close_ends_waits(vecring_link_t *m, vecring_link_t *s)
{
	struct waiter w[2] = { { .link = s, .tx = 0 }, { .link = s, .tx = 1 } };
	pthread_t t[2];
	size_t len = 0;

	/* Each wait below must sleep in full, not nap: until the peer has
	 * acknowledged the wait protocol (the first time it moves the ring
	 * while a sleeper is armed), a sleeper naps at most 64 ms and would
	 * notice the close by itself. So first one acknowledged sleep each
	 * way: s receiving what m sends, s sending while m reads. */
	struct pollfd p = { .fd = vecring_rx_fd(s), .events = POLLIN };
	EXPECT(vecring_rx_prepare_wait(s), 1);
	EXPECT(vecring_send(m, frame, 64), VECRING_OK);
	CHECK(poll(&p, 1, 5000) == 1, "the receiver's descriptor did not wake");
	EXPECT(vecring_rx_cancel_wait(s), VECRING_OK);
	EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_OK);
	while (vecring_send(s, frame, sizeof frame) == VECRING_OK)
		;
	p.fd = vecring_tx_fd(s);
	EXPECT(vecring_tx_prepare_wait(s, sizeof frame), 1);
	EXPECT(vecring_recv(m, buf, sizeof buf, &len), VECRING_OK);
	CHECK(poll(&p, 1, 5000) == 1, "the sender's descriptor did not wake");
	EXPECT(vecring_tx_cancel_wait(s), VECRING_OK);
	/* s's ring to m full again (m reads no more), s's ring from m empty. */
	while (vecring_send(s, frame, sizeof frame) == VECRING_OK)
		;
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, wait_forever, &w[i]) == 0, "pthread_create");
	/* Both asleep in their calls, as the kernel says. */
	for (int i = 0; i < 2; i++) {
		for (int ms = 0; atomic_load(&w[i].tid) == 0 && ms < ASLEEP_S * 1000; ms++)
			sleep_ms(1);
		CHECK(thread_wait_until_blocked(atomic_load(&w[i].tid), ASLEEP_S), "%s was not seen asleep within %d s",
		      w[i].tx ? "vecring_send_timeout(-1)" : "vecring_rx_wait(-1)", ASLEEP_S);
	}
	CHECK(!atomic_load(&w[0].done) && !atomic_load(&w[1].done), "the waits returned with nothing to wait for: %d %d",
	      w[0].rc, w[1].rc);
	/* A thread asleep in an RX (TX) call is inside it: others are refused;
	 * the descriptors are for any thread. */
	EXPECT(vecring_recv(s, buf, sizeof buf, &len), VECRING_E_BUSY);
	EXPECT(vecring_rx_prepare_wait(s), VECRING_E_BUSY);
	EXPECT(vecring_send(s, frame, 64), VECRING_E_BUSY);
	CHECK(vecring_rx_fd(s) >= 0 && vecring_tx_fd(s) >= 0, "descriptors while others sleep");

	EXPECT(vecring_close(s), VECRING_OK);
	/* The close bell wakes both at once. Without it they would sleep on to
	 * their next look at the ring, a second after they started, while the
	 * close (some 20 ms after they started: once both were seen asleep)
	 * stops waiting for them after half a second: they would still be
	 * asleep 0.2 s after it returned. */
	double t0 = now();
	while (!(atomic_load(&w[0].done) && atomic_load(&w[1].done)) && now() - t0 < 0.2)
		sleep_ms(1);
	CHECK(atomic_load(&w[0].done) && atomic_load(&w[1].done), "a wait still asleep 0.2 s after vecring_close");
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT(w[i].rc, VECRING_E_CLOSED);
	}
	EXPECT(vecring_rx_fd(s), VECRING_E_CLOSED);
	EXPECT(vecring_tx_fd(s), VECRING_E_CLOSED);
	EXPECT(vecring_rx_wait(s, 0), VECRING_E_CLOSED);
	EXPECT(vecring_rx_prepare_wait(s), VECRING_E_CLOSED);
	EXPECT(vecring_tx_cancel_wait(s), VECRING_E_CLOSED);
	EXPECT(vecring_send_timeout(s, frame, 64, -1), VECRING_E_CLOSED);
	EXPECT(vecring_recv_timeout(s, buf, sizeof buf, &len, -1), VECRING_E_CLOSED);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: wait_api RUN_DIR\n");
		return 2;
	}
	run_dir = argv[1];
	alarm(120); /* watchdog */
	vecring_link_t *m = open_link("w", VECRING_ROLE_MASTER);
	vecring_link_t *s = open_link("w", VECRING_ROLE_SLAVE);
	up(m, s);
	test_arguments(m);
	test_descriptors(m, s);
	test_timeouts(s);
	test_prepare_and_poll(m, s);
	test_sender_waits(m, s);
	/* The master leaves; a new one comes. */
	EXPECT(vecring_close(m), VECRING_OK);
	test_wait_through_down_and_up(s);
	m = open_link("w", VECRING_ROLE_MASTER);
	up(m, s);
	test_close_ends_waits(m, s);
	EXPECT(vecring_close(m), VECRING_OK);
	printf("wait_api: all %d checks passed\n", passed);
	return 0;
}
