/*
 * peer.c -- one end of a vecring link, in C, for tests/ffi.rs.
 *
 * Sends frames 0..N-1 of the self-checking pattern (tests/c/pattern.h) and
 * expects frames 0..N-1 back, checking every byte, the order and each length.
 * The far end is either a peer generating the same frames (the Rust slave of
 * tests/ffi.rs) or one echoing ours (dpdk-testpmd in io forward mode).
 * A TX thread and an RX thread (the one producer and one consumer thread a
 * link allows) rotate through every way of sending and receiving the C API
 * offers: single copies, batches, zero-copy reserve/alloc/commit and
 * reserve/push/commit, peek/release, and a too-small buffer now and then.
 *
 * usage: peer --role master|slave --run-dir DIR --domain D --link L
 *             --frames N [--max-len BYTES] [--slot-count N] [--slot-size BYTES]
 *             [--hugepages prefer|require|never] [--window FRAMES]
 *             [--timeout SECONDS]
 *
 * --window bounds the frames in flight (sent, not yet received back): an
 * echoing peer that drops what it cannot send back (testpmd) then never
 * finds our receive ring full. Prints "peer: ok ..." and exits 0 on success.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "vecring.h"

#define MAX_FRAME 9216
#define BATCH 8
#define STALL_SECONDS 30

static vecring_link_t *lk;
static uint64_t frames;
static size_t max_len = MAX_FRAME;
static uint64_t window;
static _Atomic uint64_t received;
static uint64_t copied_rx, nobufs_seen, tx_bytes_expected;

static void die(const char *what, int rc)
{
	fprintf(stderr, "peer: FAIL: %s: %s (%d): %s\n", what, vecring_strerror(rc), rc,
		vecring_last_error_message());
	exit(1);
}

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "peer: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Nothing to do: yield, then sleep a little when idle for long; fail when
 * nothing has moved for STALL_SECONDS. */
static void idle(unsigned *spins, double last_progress, const char *who, uint64_t at)
{
	if (++*spins < 64) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50 * 1000 };
		nanosleep(&ts, NULL);
	}
	if ((*spins & 1023) == 0 && now() - last_progress > STALL_SECONDS)
		fail("%s stalled at %" PRIu64 " for %d s", who, at, STALL_SECONDS);
}

static size_t plen(uint64_t seq)
{
	return pattern_len(seq, max_len);
}

static void *tx_main(void *arg)
{
	static uint8_t bufs[BATCH][MAX_FRAME];
	uint64_t seq = 0;
	unsigned round = 0, spins = 0;
	double last = now();
	(void)arg;
	while (seq < frames) {
		uint64_t limit = frames;
		if (window) {
			uint64_t got = atomic_load_explicit(&received, memory_order_acquire);
			if (got + window < limit)
				limit = got + window;
			if (seq >= limit) {
				idle(&spins, last, "tx (window)", seq);
				continue;
			}
		}
		uint64_t sent = 0;
		int rc;
		switch (round++ % 4) {
		case 0: { /* one copy */
			size_t len = plen(seq);
			pattern_fill(bufs[0], len, seq);
			rc = vecring_send(lk, bufs[0], len);
			if (rc == VECRING_OK)
				sent = 1;
			else if (rc != VECRING_E_AGAIN)
				die("vecring_send", rc);
			break;
		}
		case 1: { /* a batch of copies */
			vecring_frame_t batch[BATCH];
			size_t k = 0;
			for (; k < BATCH && seq + k < limit; k++) {
				size_t len = plen(seq + k);
				pattern_fill(bufs[k], len, seq + k);
				batch[k].data = bufs[k];
				batch[k].len = (uint32_t)len;
				batch[k].flags = 0;
			}
			rc = vecring_send_batch(lk, batch, k);
			if (rc < 0)
				die("vecring_send_batch", rc);
			sent = (uint64_t)rc;
			break;
		}
		case 2:   /* zero copy: frames written in place */
		case 3: { /* zero copy: frames copied into the chunk */
			int in_place = (round - 1) % 4 == 2;
			uint32_t slots = 0;
			rc = vecring_tx_reserve(lk, 64, &slots);
			if (rc == VECRING_E_AGAIN)
				break;
			if (rc != VECRING_OK)
				die("vecring_tx_reserve", rc);
			if (slots == 0 || slots > 64)
				fail("vecring_tx_reserve reserved %u slots of at most 64", slots);
			while (seq + sent < limit && sent < 16) {
				size_t len = plen(seq + sent);
				if (in_place) {
					uint8_t *p = NULL;
					rc = vecring_tx_alloc(lk, (uint32_t)len, &p);
					if (rc == VECRING_OK)
						pattern_fill(p, len, seq + sent);
				} else {
					pattern_fill(bufs[0], len, seq + sent);
					rc = vecring_tx_push(lk, bufs[0], len);
				}
				if (rc == VECRING_E_AGAIN)
					break;
				if (rc != VECRING_OK)
					die(in_place ? "vecring_tx_alloc" : "vecring_tx_push", rc);
				sent++;
			}
			rc = vecring_tx_commit(lk);
			if (rc < 0)
				die("vecring_tx_commit", rc);
			if ((uint64_t)rc != sent)
				fail("vecring_tx_commit published %d frames, %" PRIu64 " were added", rc, sent);
			break;
		}
		}
		for (uint64_t i = 0; i < sent; i++)
			tx_bytes_expected += plen(seq + i);
		seq += sent;
		if (sent) {
			last = now();
			spins = 0;
		} else {
			idle(&spins, last, "tx", seq);
		}
	}
	/* Wait until the peer has read everything, so closing loses nothing. */
	last = now();
	int rc;
	while ((rc = vecring_tx_unread(lk)) > 0)
		idle(&spins, last, "tx drain", (uint64_t)rc);
	if (rc < 0)
		die("vecring_tx_unread", rc);
	return NULL;
}

static uint64_t expected_seq;

static void check_frame(const uint8_t *p, size_t len)
{
	uint64_t seq = 0;
	if (pattern_check(p, len, &seq) != 0)
		fail("frame %" PRIu64 " (%zu bytes) is damaged", expected_seq, len);
	if (seq != expected_seq)
		fail("expected frame %" PRIu64 ", got frame %" PRIu64 " (%zu bytes)", expected_seq, seq, len);
	if (len != plen(seq))
		fail("frame %" PRIu64 " has %zu bytes, expected %zu", seq, len, plen(seq));
	expected_seq++;
	atomic_store_explicit(&received, expected_seq, memory_order_release);
}

static void *rx_main(void *arg)
{
	static uint8_t bufs[BATCH][MAX_FRAME];
	unsigned round = 0, spins = 0;
	double last = now();
	(void)arg;
	while (expected_seq < frames) {
		uint64_t before = expected_seq;
		int rc;
		size_t len = 0;
		switch (round++ % 3) {
		case 0: /* one copy, sometimes first into a buffer too small */
			if (round % 7 == 1) {
				uint8_t small[8];
				rc = vecring_recv(lk, small, sizeof small, &len);
				if (rc == VECRING_E_NOBUFS) {
					if (len != plen(expected_seq))
						fail("VECRING_E_NOBUFS reported %zu bytes needed, frame %" PRIu64
						     " has %zu",
						     len, expected_seq, plen(expected_seq));
					nobufs_seen++;
				} else if (rc != VECRING_E_AGAIN) {
					die("vecring_recv into 8 bytes", rc);
				}
			}
			rc = vecring_recv(lk, bufs[0], MAX_FRAME, &len);
			if (rc == VECRING_OK)
				check_frame(bufs[0], len);
			else if (rc != VECRING_E_AGAIN)
				die("vecring_recv", rc);
			break;
		case 1: { /* a batch of copies */
			vecring_buf_t b[BATCH];
			for (int i = 0; i < BATCH; i++) {
				b[i].data = bufs[i];
				b[i].cap = MAX_FRAME;
				b[i].len = 0;
			}
			rc = vecring_recv_batch(lk, b, BATCH);
			if (rc < 0)
				die("vecring_recv_batch", rc);
			for (int i = 0; i < rc; i++)
				check_frame(b[i].data, b[i].len);
			break;
		}
		case 2: { /* zero copy */
			vecring_frame_t f[16];
			rc = vecring_rx_peek(lk, f, 16);
			if (rc < 0)
				die("vecring_rx_peek", rc);
			for (int i = 0; i < rc; i++) {
				check_frame(f[i].data, f[i].len);
				if (f[i].flags & VECRING_FRAME_COPIED)
					copied_rx++;
			}
			rc = vecring_rx_release(lk);
			if (rc != VECRING_OK)
				die("vecring_rx_release", rc);
			break;
		}
		}
		if (expected_seq != before) {
			last = now();
			spins = 0;
		} else {
			idle(&spins, last, "rx", expected_seq);
		}
	}
	return NULL;
}

static const char *arg_value(int *i, int argc, char **argv)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "peer: %s needs a value\n", argv[*i]);
		exit(2);
	}
	return argv[++*i];
}

int main(int argc, char **argv)
{
	vecring_options_t o;
	vecring_options_init(&o);
	unsigned timeout = 240;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--role")) {
			const char *v = arg_value(&i, argc, argv);
			o.role = !strcmp(v, "master") ? VECRING_ROLE_MASTER : VECRING_ROLE_SLAVE;
		} else if (!strcmp(a, "--run-dir")) {
			o.run_dir = arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--domain")) {
			o.domain = arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--link")) {
			o.link = arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--frames")) {
			frames = strtoull(arg_value(&i, argc, argv), NULL, 10);
		} else if (!strcmp(a, "--max-len")) {
			max_len = strtoul(arg_value(&i, argc, argv), NULL, 10);
		} else if (!strcmp(a, "--slot-count")) {
			o.slot_count = (uint32_t)strtoul(arg_value(&i, argc, argv), NULL, 10);
		} else if (!strcmp(a, "--slot-size")) {
			o.slot_size = (uint32_t)strtoul(arg_value(&i, argc, argv), NULL, 10);
		} else if (!strcmp(a, "--hugepages")) {
			const char *v = arg_value(&i, argc, argv);
			o.hugepages = !strcmp(v, "never")     ? VECRING_HUGEPAGES_NEVER
				      : !strcmp(v, "require") ? VECRING_HUGEPAGES_REQUIRE
							      : VECRING_HUGEPAGES_PREFER;
		} else if (!strcmp(a, "--window")) {
			window = strtoull(arg_value(&i, argc, argv), NULL, 10);
		} else if (!strcmp(a, "--timeout")) {
			timeout = (unsigned)strtoul(arg_value(&i, argc, argv), NULL, 10);
		} else {
			fprintf(stderr, "peer: unknown argument %s\n", a);
			return 2;
		}
	}
	if (max_len < PATTERN_MIN_LEN || max_len > MAX_FRAME || frames == 0) {
		fprintf(stderr, "peer: need --frames > 0 and 16 <= --max-len <= 9216\n");
		return 2;
	}
	/* Watchdog: a hung peer must not outlive the test. */
	alarm(timeout);

	int rc = vecring_open(&o, &lk);
	if (rc != VECRING_OK)
		die("vecring_open", rc);
	uint64_t generation = 0;
	rc = vecring_wait_up(lk, 60000, &generation);
	if (rc != VECRING_OK)
		die("vecring_wait_up", rc);
	uint32_t slot_count = 0, slot_size = 0, max_frame = 0;
	rc = vecring_geometry(lk, &slot_count, &slot_size, &max_frame);
	if (rc != VECRING_OK)
		die("vecring_geometry", rc);
	if ((o.slot_count && slot_count != o.slot_count) || (o.slot_size && slot_size != o.slot_size))
		fail("geometry %u x %u is not the one asked for (%u x %u)", slot_count, slot_size,
		     o.slot_count, o.slot_size);
	printf("peer: link up, generation %" PRIu64 ", %u slots of %u bytes, frames up to %u\n", generation,
	       slot_count, slot_size, max_frame);
	fflush(stdout);

	pthread_t tx, rx;
	if (pthread_create(&tx, NULL, tx_main, NULL) || pthread_create(&rx, NULL, rx_main, NULL)) {
		fprintf(stderr, "peer: pthread_create failed\n");
		return 1;
	}
	pthread_join(tx, NULL);
	pthread_join(rx, NULL);

	vecring_counters_t c;
	rc = vecring_counters(lk, &c, sizeof c);
	if (rc != VECRING_OK)
		die("vecring_counters", rc);
	if (c.tx_frames != frames || c.rx_frames != frames)
		fail("counters: tx_frames %" PRIu64 ", rx_frames %" PRIu64 ", expected %" PRIu64 " each", c.tx_frames,
		     c.rx_frames, frames);
	if (c.tx_bytes != tx_bytes_expected || c.rx_bytes != tx_bytes_expected)
		fail("counters: tx_bytes %" PRIu64 ", rx_bytes %" PRIu64 ", expected %" PRIu64 " each", c.tx_bytes,
		     c.rx_bytes, tx_bytes_expected);
	if (c.link_ups != 1 || c.link_downs != 0 || c.generation != generation)
		fail("counters: link_ups %" PRIu64 ", link_downs %" PRIu64 ", generation %" PRIu64, c.link_ups,
		     c.link_downs, c.generation);
	/* The receive paths under test must have run, or their checks above
	 * proved nothing: copies of peeked frames that wrap around the ring's
	 * end, and buffers too small for a frame refused with its length. */
	if (copied_rx == 0)
		fail("no peeked frame was delivered as a copy (VECRING_FRAME_COPIED): the copied-receive path never ran");
	if (nobufs_seen == 0)
		fail("no receive into a too-small buffer was refused with VECRING_E_NOBUFS: the no-buffer path never ran");
	printf("peer: ok: sent %" PRIu64 ", received %" PRIu64 " (%" PRIu64 " bytes each way), "
	       "%" PRIu64 " peeked frames copied, %" PRIu64 " too-small buffers refused\n",
	       c.tx_frames, c.rx_frames, c.rx_bytes, copied_rx, nobufs_seen);
	fflush(stdout);
	rc = vecring_close(lk);
	if (rc != VECRING_OK)
		die("vecring_close", rc);
	return 0;
}
