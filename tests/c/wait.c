/*
 * wait.c -- a C program that sleeps instead of polling, for tests/ffi.rs:
 * the master end of a link whose slave is the Rust test, which paces its
 * side by the lines this program prints.
 *
 *   1. Puts vecring_rx_fd in its own epoll set, once, and receives frames
 *      0..N-1 in an event loop: vecring_recv_batch until nothing is left,
 *      then vecring_rx_prepare_wait -> epoll_wait -> vecring_rx_cancel_wait.
 *      The peer idles about two seconds before its first frame and pauses
 *      between bursts; over the idle period this thread must use under 1 %
 *      of a CPU (getrusage RUSAGE_THREAD).
 *   2. The peer leaves and a new one comes: frames N..2N-1 arrive in a new
 *      generation through the same registration, and vecring_rx_fd still
 *      returns the descriptor registered in step 1.
 *   3. The blocking forms on an idle link: vecring_rx_wait and
 *      vecring_recv_timeout time out (0, VECRING_E_AGAIN) no sooner than
 *      asked, then each returns for a frame the peer sends half a second
 *      later.
 *   4. Sending: fills the ring, vecring_send_timeout times out, then waits
 *      without limit until the peer reads; then sends TX_FRAMES frames in
 *      all from an event loop with vecring_tx_fd and vecring_rx_fd in the
 *      same epoll set, sleeping whenever the ring is full.
 *
 * Every frame is a pattern.h frame and must arrive in order.
 *
 * usage: wait RUN_DIR N TX_FRAMES
 *
 * Prints "wait: ready", "wait: round 1 ok idle_cpu_us=C idle_wall_us=W
 * wakeups=K", "wait: round 2 ok wakeups=K", "wait: blocking",
 * "wait: blocking ok", "wait: tx full frames=M", "wait: tx ok sent=T
 * sleeps=S" and "wait: ok". Exits 1 at the first failed check (naming it on
 * stderr), or by SIGALRM from its own watchdog.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "vecring.h"

#define WATCHDOG_S 150
#define BURST 32
/* Longest sleep while a frame is due: the peer never pauses this long. */
#define STALL_MS 10000
/* The idle thread's CPU budget: 1 % of its wall time. */
#define IDLE_SHARE 0.01
/* The peer idles about 2 s before its first frame: at least this much of
 * it must have been measured. */
#define IDLE_MIN_US 1500000
#define TX_MAX_LEN 1514

#define FAIL(...)                                                                                          \
	do {                                                                                               \
		fprintf(stderr, "wait.c:%d: ", __LINE__);                                                  \
		fprintf(stderr, __VA_ARGS__);                                                              \
		fprintf(stderr, " [last error: %s]\n", vecring_last_error_message());                      \
		exit(1);                                                                                   \
	} while (0)

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		if (!(cond)) {                                                                             \
			fprintf(stderr, "wait.c:%d: FAIL: %s: ", __LINE__, #cond);                         \
			FAIL(__VA_ARGS__);                                                                 \
		}                                                                                          \
	} while (0)

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t thread_cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
}

static vecring_link_t *link_;
static int ep, rx_fd, tx_fd;
static uint64_t next_rx; /* the sequence number of the next frame expected */
static uint8_t mem[BURST][9216];

static void check_frame(const uint8_t *p, size_t len)
{
	uint64_t seq;
	if (pattern_check(p, len, &seq) != 0)
		FAIL("frame %" PRIu64 " (%zu bytes) is damaged", next_rx, len);
	if (seq != next_rx)
		FAIL("frame %" PRIu64 " came where %" PRIu64 " was expected", seq, next_rx);
	next_rx++;
}

/* Sleeps in epoll_wait on the set; fails if nothing woke it in STALL_MS. */
static void sleep_on_set(const char *what)
{
	struct epoll_event ev[4];
	int n;
	do
		n = epoll_wait(ep, ev, 4, STALL_MS);
	while (n < 0);
	if (n == 0)
		FAIL("%s: no wakeup in %d ms (frame %" PRIu64 " expected)", what, STALL_MS, next_rx);
}

/*
 * The event loop of steps 1 and 2: receives until frame `until` - 1. The
 * first frame's arrival is stored in *first_cpu / *first_at (CPU and wall
 * time, microseconds). Returns the number of sleeps.
 */
static int receive_until(uint64_t until, uint64_t *first_cpu, uint64_t *first_at)
{
	vecring_buf_t bufs[BURST];
	int sleeps = 0, first = 1;
	while (next_rx < until) {
		for (int i = 0; i < BURST; i++)
			bufs[i] = (vecring_buf_t){ mem[i], sizeof mem[i], 0 };
		int n = vecring_recv_batch(link_, bufs, BURST);
		if (n == VECRING_E_LINK_DOWN)
			n = 0; /* the peer left; the next one wakes us */
		CHECK(n >= 0, "vecring_recv_batch returned %d", n);
		if (n > 0 && first) {
			*first_cpu = thread_cpu_us();
			*first_at = now_us();
			first = 0;
		}
		for (int i = 0; i < n; i++)
			check_frame(bufs[i].data, bufs[i].len);
		if (n > 0)
			continue;
		int rc = vecring_rx_prepare_wait(link_);
		CHECK(rc == 0 || rc == 1, "vecring_rx_prepare_wait returned %d", rc);
		if (rc == 1) {
			sleep_on_set("receiving");
			sleeps++;
			CHECK(vecring_rx_cancel_wait(link_) == VECRING_OK, "cancel");
		}
		CHECK(vecring_rx_fd(link_) == rx_fd, "the receiver's descriptor changed");
	}
	return sleeps;
}

/* Receives one frame with vecring_recv. */
static void receive_one(void)
{
	size_t len = 0;
	int rc = vecring_recv(link_, mem[0], sizeof mem[0], &len);
	CHECK(rc == VECRING_OK, "vecring_recv returned %d", rc);
	check_frame(mem[0], len);
}

static void print(const char *line)
{
	printf("wait: %s\n", line);
	fflush(stdout);
}

static void blocking(void)
{
	size_t len = 0;
	uint64_t t0 = now_us();
	int rc = vecring_rx_wait(link_, 300);
	CHECK(rc == 0, "vecring_rx_wait(300) on an idle link returned %d", rc);
	CHECK(now_us() - t0 >= 300000, "vecring_rx_wait(300) returned after %" PRIu64 " us", now_us() - t0);
	t0 = now_us();
	rc = vecring_recv_timeout(link_, mem[0], sizeof mem[0], &len, 300);
	CHECK(rc == VECRING_E_AGAIN, "vecring_recv_timeout(300) on an idle link returned %d", rc);
	CHECK(now_us() - t0 >= 300000, "vecring_recv_timeout(300) returned after %" PRIu64 " us", now_us() - t0);

	/* The peer sends a frame 500 ms after this line, and another 500 ms
	 * after the line that says the first was read. */
	print("blocking");
	t0 = now_us();
	rc = vecring_rx_wait(link_, -1);
	CHECK(rc == 1, "vecring_rx_wait(-1) returned %d", rc);
	CHECK(now_us() - t0 >= 400000, "vecring_rx_wait(-1) returned after %" PRIu64 " us, before the frame was sent",
	      now_us() - t0);
	receive_one();
	t0 = now_us();
	print("blocking, the first frame read");
	rc = vecring_recv_timeout(link_, mem[0], sizeof mem[0], &len, STALL_MS);
	CHECK(rc == VECRING_OK, "vecring_recv_timeout returned %d", rc);
	CHECK(now_us() - t0 >= 400000, "vecring_recv_timeout returned after %" PRIu64 " us, before the frame was sent",
	      now_us() - t0);
	check_frame(mem[0], len);
	print("blocking ok");
}

static size_t tx_frame(uint64_t seq)
{
	size_t len = pattern_len(seq, TX_MAX_LEN);
	pattern_fill(mem[0], len, seq);
	return len;
}

static void sending(uint64_t total)
{
	char line[128];
	uint64_t seq = 0, t0;
	size_t len;
	int rc, sleeps = 0;

	CHECK(vecring_tx_peer_present(link_) == 1, "the peer's receiver is not seen");
	/* Fill the ring: nobody reads until the "tx full" line. */
	for (;; seq++) {
		len = tx_frame(seq);
		rc = vecring_send(link_, mem[0], len);
		if (rc == VECRING_E_AGAIN)
			break;
		CHECK(rc == VECRING_OK, "vecring_send of frame %" PRIu64 " returned %d", seq, rc);
	}
	CHECK(seq > 0, "the ring took no frame");
	rc = vecring_tx_wait(link_, len, 0);
	CHECK(rc == 0, "vecring_tx_wait(0) on a full ring returned %d", rc);
	rc = vecring_tx_prepare_wait(link_, len);
	CHECK(rc == 1, "vecring_tx_prepare_wait on a full ring returned %d", rc);
	CHECK(vecring_tx_cancel_wait(link_) == VECRING_OK, "vecring_tx_cancel_wait");
	t0 = now_us();
	rc = vecring_send_timeout(link_, mem[0], len, 300);
	CHECK(rc == VECRING_E_AGAIN, "vecring_send_timeout(300) on a full ring returned %d", rc);
	CHECK(now_us() - t0 >= 300000, "vecring_send_timeout(300) returned after %" PRIu64 " us", now_us() - t0);

	/* The peer starts reading 500 ms after this line. */
	snprintf(line, sizeof line, "tx full frames=%" PRIu64, seq);
	print(line);
	t0 = now_us();
	rc = vecring_send_timeout(link_, mem[0], len, -1);
	CHECK(rc == VECRING_OK, "vecring_send_timeout(-1) returned %d", rc);
	CHECK(now_us() - t0 >= 400000, "vecring_send_timeout(-1) returned after %" PRIu64 " us, before the peer read",
	      now_us() - t0);

	/* The rest from an event loop that sleeps on both descriptors, as an
	 * application with a receive path would: each sleep is prepared on
	 * both (nothing comes in, so the receiver always says sleep). */
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = tx_fd };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, tx_fd, &ev) == 0, "epoll_ctl ADD of the TX descriptor");
	for (seq++; seq < total; seq++) {
		len = tx_frame(seq);
		while ((rc = vecring_send(link_, mem[0], len)) == VECRING_E_AGAIN) {
			int rx = vecring_rx_prepare_wait(link_);
			CHECK(rx == 1, "vecring_rx_prepare_wait returned %d with nothing to receive", rx);
			int tx = vecring_tx_prepare_wait(link_, len);
			CHECK(tx == 0 || tx == 1, "vecring_tx_prepare_wait returned %d", tx);
			if (tx == 1) {
				sleep_on_set("sending");
				sleeps++;
			}
			CHECK(vecring_tx_cancel_wait(link_) == VECRING_OK, "vecring_tx_cancel_wait");
			CHECK(vecring_rx_cancel_wait(link_) == VECRING_OK, "vecring_rx_cancel_wait");
		}
		CHECK(rc == VECRING_OK, "vecring_send of frame %" PRIu64 " returned %d", seq, rc);
	}
	CHECK(vecring_tx_fd(link_) == tx_fd, "the sender's descriptor changed");
	CHECK(sleeps > 0, "the sender never had to sleep: the test proves nothing");
	snprintf(line, sizeof line, "tx ok sent=%" PRIu64 " sleeps=%d", total, sleeps);
	print(line);
}

int main(int argc, char **argv)
{
	char line[256];
	uint64_t cpu0, at0, cpu1 = 0, at1 = 0, g1 = 0, g2 = 0;

	alarm(WATCHDOG_S); /* SIGALRM ends the process: exit status != 0 */
	if (argc != 4) {
		fprintf(stderr, "usage: wait RUN_DIR N TX_FRAMES\n");
		return 2;
	}
	const uint64_t n = strtoull(argv[2], NULL, 10), tx_total = strtoull(argv[3], NULL, 10);

	vecring_options_t o;
	vecring_options_init(&o);
	o.role = VECRING_ROLE_MASTER;
	o.domain = "ffi";
	o.link = "wait";
	o.run_dir = argv[1];
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	/* A small ring, so that step 4 fills it quickly. */
	o.slot_count = 64;
	o.slot_size = 2048;
	int rc = vecring_open(&o, &link_);
	CHECK(rc == VECRING_OK, "vecring_open returned %d", rc);

	rx_fd = vecring_rx_fd(link_);
	tx_fd = vecring_tx_fd(link_);
	CHECK(rx_fd >= 0 && tx_fd >= 0 && rx_fd != tx_fd, "descriptors %d and %d", rx_fd, tx_fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0, "epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = rx_fd };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, rx_fd, &ev) == 0, "epoll_ctl ADD of the RX descriptor");

	/* 1. The peer attaches, idles about 2 s, then sends 0..N-1. */
	cpu0 = thread_cpu_us();
	at0 = now_us();
	print("ready");
	int sleeps = receive_until(n, &cpu1, &at1);
	CHECK(vecring_state(link_, &g1) == 1, "the link is not up after round 1");
	uint64_t cpu = cpu1 - cpu0, wall = at1 - at0;
	snprintf(line, sizeof line, "round 1 ok idle_cpu_us=%" PRIu64 " idle_wall_us=%" PRIu64 " wakeups=%d", cpu,
		 wall, sleeps);
	CHECK(wall >= IDLE_MIN_US, "the first frame came after %" PRIu64 " us: no idle period to measure", wall);
	if (cpu > IDLE_SHARE * wall)
		FAIL("idling used %" PRIu64 " us of CPU in %" PRIu64 " us (%.2f %%, limit %.0f %%)", cpu, wall,
		     100.0 * cpu / wall, 100 * IDLE_SHARE);
	print(line);

	/* 2. The peer leaves; a new one sends N..2N-1. */
	sleeps = receive_until(2 * n, &cpu1, &at1);
	CHECK(vecring_state(link_, &g2) == 1, "the link is not up after round 2");
	CHECK(g2 != g1, "round 2 came in generation %" PRIu64 " as round 1: the peer did not leave", g2);
	snprintf(line, sizeof line, "round 2 ok wakeups=%d", sleeps);
	print(line);

	/* 3. Blocking waits: frames 2N and 2N+1. */
	blocking();

	/* 4. Sending. */
	sending(tx_total);

	CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, rx_fd, NULL) == 0 && epoll_ctl(ep, EPOLL_CTL_DEL, tx_fd, NULL) == 0,
	      "epoll_ctl DEL");
	close(ep);
	/* Let the peer read everything before the link goes. */
	for (int i = 0; vecring_tx_unread(link_) > 0; i++) {
		CHECK(i < 1000, "the peer left %d frames unread", vecring_tx_unread(link_));
		usleep(10000);
	}
	CHECK(vecring_close(link_) == VECRING_OK, "vecring_close");
	print("ok");
	return 0;
}
