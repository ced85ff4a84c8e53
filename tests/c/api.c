/*
 * api.c -- the C API's contract, checked call by call in one process that
 * opens both ends of a link: every error code a caller can provoke, null
 * pointers, too-small buffers, invalid handles, calls out of sequence,
 * full and empty rings, zero-copy frames that wrap around the end of the
 * ring, counters and the state callback; the options' names from the
 * environment.
 *
 * usage: api RUN_DIR        (prints "api: all N checks passed"; exits 1 at the
 *                           first failed check, naming it)
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "vecring.h"

#define CHECK_PROGRAM "api"
#include "check.h"

static const char *run_dir;

static vecring_options_t options(const char *link, int role)
{
	vecring_options_t o;
	vecring_options_init(&o);
	o.run_dir = run_dir;
	o.domain = "api";
	o.link = link;
	o.role = role;
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	return o;
}

static atomic_int ups, downs;

static void on_state(void *user_data, int up, uint64_t generation)
{
	CHECK(user_data == (void *)&ups, "user_data %p", user_data);
	if (up) {
		CHECK(generation >= 1, "generation %" PRIu64, generation);
		atomic_fetch_add(&ups, 1);
	} else {
		CHECK(generation == 0, "generation %" PRIu64, generation);
		atomic_fetch_add(&downs, 1);
	}
}

static void wait_count(atomic_int *n, int want)
{
	for (int i = 0; i < 5000 && atomic_load(n) < want; i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	CHECK(atomic_load(n) == want, "callback count %d, expected %d", atomic_load(n), want);
}

static void test_strerror(void)
{
	const int codes[] = { VECRING_OK,        VECRING_E_INVAL,   VECRING_E_LINK_DOWN, VECRING_E_AGAIN,
			      VECRING_E_TOOBIG,  VECRING_E_NOBUFS,  VECRING_E_CORRUPT,   VECRING_E_TIMEDOUT,
			      VECRING_E_REFUSED, VECRING_E_EXISTS,  VECRING_E_NAME,      VECRING_E_NUMA,
			      VECRING_E_NOMEM,   VECRING_E_IO,      VECRING_E_BUSY,      VECRING_E_PANIC,
			      VECRING_E_PROTO,   VECRING_E_CLOSED };
	const size_t n = sizeof codes / sizeof codes[0];
	const char *unknown = vecring_strerror(12345);
	CHECK(unknown && strstr(unknown, "unknown"), "%s", unknown ? unknown : "(null)");
	for (size_t i = 0; i < n; i++) {
		const char *t = vecring_strerror(codes[i]);
		CHECK(t && *t && strcmp(t, unknown) != 0, "code %d has no text", codes[i]);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(t, vecring_strerror(codes[j])) != 0, "codes %d and %d share '%s'", codes[i],
			      codes[j], t);
	}
	CHECK(vecring_last_error_message() != NULL, "never NULL");
	CHECK(vecring_version() && *vecring_version(), "version");
}

/* vecring_options_from_env: the names a CDI device sets, only into fields
 * left NULL; vecring_open takes them. */
static void test_options_from_env(void)
{
	vecring_options_t o;
	vecring_link_t *l = NULL;
	char sock[4096];
	EXPECT(vecring_options_from_env(NULL), VECRING_E_INVAL);
	memset(&o, 0, sizeof o);
	EXPECT(vecring_options_from_env(&o), VECRING_E_INVAL);
	CHECK(last_error_contains("vecring_options_init"), "says what to do");
	unsetenv("VECRING_DOMAIN");
	unsetenv("VECRING_LINK");
	unsetenv("VECRING_RUN_DIR");
	unsetenv("VECRING_NETNS");
	vecring_options_init(&o);
	EXPECT(vecring_options_from_env(&o), 0);
	CHECK(o.domain == NULL && o.link == NULL && o.run_dir == NULL && o.netns == NULL,
	      "nothing set without the variables");
	/* A device in network-namespace mode; a program built against a
	 * layout without netns does not get it. */
	setenv("VECRING_NETNS", "self", 1);
	EXPECT(vecring_options_from_env(&o), 1);
	CHECK(o.netns && strcmp(o.netns, "self") == 0, "netns from VECRING_NETNS");
	vecring_options_init(&o);
	o.size = (uint32_t)offsetof(vecring_options_t, netns);
	EXPECT(vecring_options_from_env(&o), 0);
	CHECK(o.netns == NULL, "not written past the caller's layout");
	unsetenv("VECRING_NETNS");
	setenv("VECRING_DOMAIN", "api", 1);
	setenv("VECRING_LINK", "env", 1);
	setenv("VECRING_RUN_DIR", run_dir, 1);
	vecring_options_init(&o);
	o.link = "mine";
	EXPECT(vecring_options_from_env(&o), 2);
	CHECK(o.domain && strcmp(o.domain, "api") == 0 && strcmp(o.link, "mine") == 0 && o.run_dir &&
		      strcmp(o.run_dir, run_dir) == 0,
	      "a field already set stays, the others come from the environment");
	vecring_options_init(&o);
	EXPECT(vecring_options_from_env(&o), 3);
	o.role = VECRING_ROLE_MASTER;
	o.hugepages = VECRING_HUGEPAGES_NEVER;
	EXPECT(vecring_open(&o, &l), VECRING_OK);
	snprintf(sock, sizeof sock, "%s/api/env.sock", run_dir);
	CHECK(access(sock, F_OK) == 0, "the master listens at %s", sock);
	EXPECT(vecring_close(l), VECRING_OK);
	unsetenv("VECRING_DOMAIN");
	unsetenv("VECRING_LINK");
	unsetenv("VECRING_RUN_DIR");
}

static void test_options_and_open_errors(void)
{
	vecring_options_t o;
	memset(&o, 0xa5, sizeof o);
	vecring_options_init(&o);
	CHECK(o.size == sizeof o, "size %u", o.size);
	CHECK(o.role == VECRING_ROLE_SLAVE && o.numa_node == -1 && o.owner_uid == -1 && o.owner_gid == -1 &&
		      o.hugepages == VECRING_HUGEPAGES_PREFER && o.domain == NULL && o.link == NULL &&
		      o.run_dir == NULL && o.slot_count == 0 && o.slot_size == 0 && o.max_frame_len == 0 &&
		      o.socket_mode == 0 && o.allowed_uids == NULL && o.allowed_uid_count == 0 &&
		      o.retry_interval_ms == 0 && o.on_state_change == NULL && o.user_data == NULL &&
		      o.master_uids == NULL && o.master_uid_count == 0 && o.netns == NULL,
	      "defaults");
	vecring_options_init_size(NULL, sizeof o);
	(vecring_options_init)(NULL);

	/* A program built with a shorter struct: nothing past it is written,
	 * and its size says how far it goes. */
	{
		unsigned char buf[sizeof(vecring_options_t) + 16];
		const size_t shorter = offsetof(vecring_options_t, netns);
		memset(buf, 0x5a, sizeof buf);
		vecring_options_init_size((vecring_options_t *)buf, shorter);
		CHECK(((vecring_options_t *)buf)->size == shorter, "shorter size %u", ((vecring_options_t *)buf)->size);
		for (size_t i = shorter; i < sizeof buf; i++)
			CHECK(buf[i] == 0x5a, "byte %zu past the program's struct written", i);
		memset(buf, 0x5a, sizeof buf);
		(vecring_options_init)((vecring_options_t *)buf);
		CHECK(((vecring_options_t *)buf)->size == shorter, "first layout's size %u", ((vecring_options_t *)buf)->size);
		for (size_t i = shorter; i < sizeof buf; i++)
			CHECK(buf[i] == 0x5a, "byte %zu past the first layout written", i);
	}

	vecring_link_t *l = (vecring_link_t *)&o;
	EXPECT(vecring_open(NULL, &l), VECRING_E_INVAL);
	CHECK(l == NULL, "a failed open leaves NULL");
	o = options("x", VECRING_ROLE_MASTER);
	EXPECT(vecring_open(&o, NULL), VECRING_E_INVAL);

	o.domain = NULL;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	CHECK(last_error_contains("domain"), "names the option");
	o = options("a/b", VECRING_ROLE_MASTER);
	EXPECT(vecring_open(&o, &l), VECRING_E_NAME);
	CHECK(last_error_contains("'a/b' is not allowed"), "names the link");
	o = options("x", VECRING_ROLE_MASTER);
	o.domain = "..";
	EXPECT(vecring_open(&o, &l), VECRING_E_NAME);

	o = options("x", VECRING_ROLE_MASTER);
	o.size = 0;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	CHECK(last_error_contains("vecring_options_init"), "says what to do");
	o.size = sizeof o + 8;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	CHECK(last_error_contains("newer vecring.h"), "says why");

	o = options("x", 7);
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.hugepages = 9;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.slot_count = 1000;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	CHECK(last_error_contains("slot count 1000"), "names the value");
	o = options("x", VECRING_ROLE_MASTER);
	o.slot_count = 4;
	o.slot_size = 64;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.numa_node = 999;
	EXPECT(vecring_open(&o, &l), VECRING_E_NUMA);
	o = options("x", VECRING_ROLE_MASTER);
	o.numa_node = -2;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.owner_uid = 0;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.allowed_uid_count = 2;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.socket_mode = 01777;
	EXPECT(vecring_open(&o, &l), VECRING_E_INVAL);
	o = options("x", VECRING_ROLE_MASTER);
	o.run_dir = "/proc/no/such/dir";
	EXPECT(vecring_open(&o, &l), VECRING_E_IO);
	CHECK(l == NULL, "still NULL");
}

static void test_invalid_handles(void)
{
	uint64_t fake[16] = { 0 };
	vecring_link_t *bogus = (vecring_link_t *)fake;
	uint8_t b[16] = { 0 };
	size_t len = 0;
	vecring_frame_t f[1];
	EXPECT(vecring_send(NULL, b, sizeof b), VECRING_E_INVAL);
	EXPECT(vecring_send(bogus, b, sizeof b), VECRING_E_INVAL);
	CHECK(last_error_contains("invalid link handle"), "says so");
	EXPECT(vecring_recv(bogus, b, sizeof b, &len), VECRING_E_INVAL);
	EXPECT(vecring_rx_peek(bogus, f, 1), VECRING_E_INVAL);
	EXPECT(vecring_tx_reserve(NULL, 1, NULL), VECRING_E_INVAL);
	EXPECT(vecring_state(NULL, NULL), VECRING_E_INVAL);
	EXPECT(vecring_state(bogus, NULL), VECRING_E_INVAL);
	EXPECT(vecring_wait_up(bogus, 0, NULL), VECRING_E_INVAL);
	EXPECT(vecring_close(bogus), VECRING_E_INVAL);
	EXPECT(vecring_close(NULL), VECRING_OK);
}

/* Master and slave of link "l": 32 slots of 1024 bytes. */
static vecring_link_t *m, *s;
static uint64_t generation;

static void test_meeting(void)
{
	vecring_options_t mo = options("l", VECRING_ROLE_MASTER);
	mo.slot_count = 32;
	mo.slot_size = 1024;
	mo.on_state_change = on_state;
	mo.user_data = &ups;
	EXPECT(vecring_open(&mo, &m), VECRING_OK);
	CHECK(m != NULL, "handle");
	EXPECT(vecring_state(m, NULL), 0);
	EXPECT(vecring_geometry(m, NULL, NULL, NULL), VECRING_E_LINK_DOWN);
	EXPECT(vecring_send(m, "x", 1), VECRING_E_LINK_DOWN);
	uint8_t b[64];
	size_t len = 0;
	EXPECT(vecring_recv(m, b, sizeof b, &len), VECRING_E_LINK_DOWN);
	EXPECT(vecring_wait_up(m, 50, NULL), VECRING_E_TIMEDOUT);
	CHECK(last_error_contains("50 ms"), "says how long");

	vecring_link_t *second = NULL;
	EXPECT(vecring_open(&mo, &second), VECRING_E_EXISTS);
	CHECK(last_error_contains("already has a live master"), "says so");

	/* A slave that insists on another geometry refuses the master's memory. */
	vecring_options_t so = options("l", VECRING_ROLE_SLAVE);
	so.slot_count = 64;
	so.slot_size = 1024;
	so.retry_interval_ms = 5;
	vecring_link_t *picky = NULL;
	EXPECT(vecring_open(&so, &picky), VECRING_OK);
	EXPECT(vecring_wait_up(picky, 10000, NULL), VECRING_E_REFUSED);
	CHECK(last_error_contains("region slot count mismatch: ours 64, theirs 32"), "names the field");
	EXPECT(vecring_close(picky), VECRING_OK);

	so = options("l", VECRING_ROLE_SLAVE);
	so.retry_interval_ms = 5;
	EXPECT(vecring_open(&so, &s), VECRING_OK);
	uint64_t gm = 0, gs = 0, g = 0;
	EXPECT(vecring_wait_up(s, 10000, &gs), VECRING_OK);
	EXPECT(vecring_wait_up(m, 10000, &gm), VECRING_OK);
	CHECK(gm == gs && gm >= 1, "generations %" PRIu64 " %" PRIu64, gm, gs);
	generation = gm;
	EXPECT(vecring_state(s, &g), 1);
	CHECK(g == gs, "state's generation");
	uint32_t count = 0, size = 0, max = 0;
	EXPECT(vecring_geometry(s, &count, &size, &max), VECRING_OK);
	CHECK(count == 32 && size == 1024 && max == 9216, "slave learnt %u x %u, max %u", count, size, max);
	wait_count(&ups, 1);
}

static void test_copies(void)
{
	uint8_t b[9216] = { 0 }, small[2];
	size_t len = 12345;
	/* Bad arguments. */
	EXPECT(vecring_send(m, b, 0), VECRING_E_INVAL);
	EXPECT(vecring_send(m, NULL, 5), VECRING_E_INVAL);
	EXPECT(vecring_send(m, b, 9217), VECRING_E_TOOBIG);
	CHECK(last_error_contains("9217"), "names the length");
	EXPECT(vecring_recv(s, b, sizeof b, NULL), VECRING_E_INVAL);
	EXPECT(vecring_recv(s, NULL, 10, &len), VECRING_E_INVAL);
	EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_E_AGAIN);
	EXPECT(vecring_send_batch(m, NULL, 3), VECRING_E_INVAL);
	EXPECT(vecring_send_batch(m, NULL, 0), 0);
	EXPECT(vecring_recv_batch(s, NULL, 3), VECRING_E_INVAL);

	/* A buffer too small: the frame stays queued, its length is reported. */
	EXPECT(vecring_send(m, "hello", 5), VECRING_OK);
	EXPECT(vecring_tx_unread(m), 1);
	EXPECT(vecring_recv(s, small, sizeof small, &len), VECRING_E_NOBUFS);
	CHECK(len == 5, "needed %zu", len);
	EXPECT(vecring_recv(s, NULL, 0, &len), VECRING_E_NOBUFS);
	EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_OK);
	CHECK(len == 5 && memcmp(b, "hello", 5) == 0, "got %zu bytes", len);
	EXPECT(vecring_tx_unread(m), 0);

	/* Fill the ring with one-slot frames: exactly 32 fit. */
	int sent = 0;
	for (;;) {
		pattern_fill(b, 1000, (uint64_t)sent);
		int rc = vecring_send(m, b, 1000);
		if (rc == VECRING_E_AGAIN)
			break;
		EXPECT(rc, VECRING_OK);
		sent++;
	}
	CHECK(sent == 32, "%d one-slot frames fit 32 slots", sent);
	vecring_frame_t one = { b, 1000, 0 };
	EXPECT(vecring_send_batch(m, &one, 1), 0);
	EXPECT(vecring_tx_unread(m), 32);

	/* Drain by batches; a first buffer too small reports the length. */
	static uint8_t store[8][1024];
	vecring_buf_t bufs[8];
	for (int i = 0; i < 8; i++) {
		bufs[i].data = store[i];
		bufs[i].cap = sizeof store[i];
		bufs[i].len = 0;
	}
	bufs[0].cap = 10;
	EXPECT(vecring_recv_batch(s, bufs, 8), VECRING_E_NOBUFS);
	CHECK(bufs[0].len == 1000, "needed %u", bufs[0].len);
	bufs[0].cap = sizeof store[0];
	bufs[3].data = NULL;
	EXPECT(vecring_recv_batch(s, bufs, 8), VECRING_E_INVAL);
	bufs[3].data = store[3];
	uint64_t next = 0;
	while (next < 32) {
		int n = vecring_recv_batch(s, bufs, 8);
		CHECK(n == 8, "batch of %d", n);
		for (int i = 0; i < n; i++) {
			uint64_t seq;
			CHECK(bufs[i].len == 1000 && pattern_check(bufs[i].data, bufs[i].len, &seq) == 0 &&
				      seq == next,
			      "frame %" PRIu64, next);
			next++;
		}
	}
	EXPECT(vecring_recv_batch(s, bufs, 8), 0);

	/* A batch stops at the first frame that does not fit the ring. */
	vecring_frame_t batch[4] = { { b, 9000, 0 }, { b, 9000, 0 }, { b, 9000, 0 }, { b, 9000, 0 } };
	EXPECT(vecring_send_batch(m, batch, 4), 3); /* 9 slots each */
	batch[0].len = 0;
	EXPECT(vecring_send_batch(m, batch, 1), VECRING_E_INVAL);
	for (int i = 0; i < 3; i++) {
		EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_OK);
		CHECK(len == 9000, "len %zu", len);
	}
}

static void test_zero_copy(void)
{
	uint8_t *p = NULL;
	uint32_t slots = 0;
	vecring_frame_t f[32];
	uint8_t b[9216] = { 0 };
	size_t len;

	/* Out of sequence. */
	EXPECT(vecring_tx_alloc(m, 100, &p), VECRING_E_INVAL);
	CHECK(last_error_contains("vecring_tx_reserve"), "says what to call");
	EXPECT(vecring_tx_push(m, b, 100), VECRING_E_INVAL);
	EXPECT(vecring_tx_commit(m), VECRING_E_INVAL);
	EXPECT(vecring_tx_abort(m), VECRING_OK);
	EXPECT(vecring_rx_release(s), VECRING_OK);
	EXPECT(vecring_tx_reserve(m, 0, &slots), VECRING_E_INVAL);
	EXPECT(vecring_rx_peek(s, f, 0), VECRING_E_INVAL);
	EXPECT(vecring_rx_peek(s, NULL, 4), VECRING_E_INVAL);
	EXPECT(vecring_rx_peek(s, f, 32), 0);
	EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_E_AGAIN); /* nothing held after an empty peek */

	/* Reserve the whole ring; 3-slot frames until the chunk is full. */
	EXPECT(vecring_tx_reserve(m, 1000, &slots), VECRING_OK);
	CHECK(slots == 32, "reserved %u", slots);
	EXPECT(vecring_tx_reserve(m, 1, &slots), VECRING_E_INVAL);
	EXPECT(vecring_send(m, b, 10), VECRING_E_INVAL);
	CHECK(last_error_contains("chunk is open"), "says why");
	EXPECT(vecring_tx_unread(m), VECRING_E_INVAL);
	EXPECT(vecring_tx_alloc(m, 100, NULL), VECRING_E_INVAL);
	EXPECT(vecring_tx_alloc(m, 0, &p), VECRING_E_INVAL);
	EXPECT(vecring_tx_alloc(m, 9217, &p), VECRING_E_TOOBIG);
	int added = 0;
	for (;;) {
		int rc = vecring_tx_alloc(m, 3000, &p);
		if (rc == VECRING_E_AGAIN)
			break;
		EXPECT(rc, VECRING_OK);
		pattern_fill(p, 3000, (uint64_t)added);
		added++;
	}
	CHECK(added == 10, "%d frames of 3 slots in 32", added);
	pattern_fill(b, 2000, 10);
	EXPECT(vecring_tx_push(m, b, 2000), VECRING_OK);
	EXPECT(vecring_tx_push(m, b, 1), VECRING_E_AGAIN);
	EXPECT(vecring_rx_peek(s, f, 32), 0); /* nothing published before commit */
	EXPECT(vecring_tx_commit(m), 11);
	EXPECT(vecring_tx_commit(m), VECRING_E_INVAL);

	/* Peek them in place. */
	EXPECT(vecring_rx_peek(s, f, 4), 4);
	EXPECT(vecring_rx_peek(s, f, 4), VECRING_E_INVAL);
	EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_E_INVAL);
	CHECK(last_error_contains("vecring_rx_release"), "says what to call");
	EXPECT(vecring_rx_release(s), VECRING_OK);
	EXPECT(vecring_rx_peek(s, f, 32), 7);
	for (int i = 0; i < 7; i++) {
		uint64_t seq;
		uint32_t want = i == 6 ? 2000 : 3000;
		CHECK(f[i].len == want && pattern_check(f[i].data, f[i].len, &seq) == 0 && seq == (uint64_t)(i + 4),
		      "frame %d", i + 4);
	}
	/* Only the 4 released frames' slots are free again, not the peeked ones. */
	EXPECT(vecring_tx_reserve(m, 32, &slots), VECRING_OK);
	CHECK(slots == 12, "reserved %u", slots);
	EXPECT(vecring_tx_abort(m), VECRING_OK);
	EXPECT(vecring_rx_release(s), VECRING_OK);
	EXPECT(vecring_tx_reserve(m, 32, &slots), VECRING_OK);
	CHECK(slots == 32, "reserved %u", slots);
	EXPECT(vecring_tx_abort(m), VECRING_OK);

	/* An aborted chunk sends nothing. */
	EXPECT(vecring_tx_reserve(m, 8, &slots), VECRING_OK);
	CHECK(slots == 8, "reserved %u", slots);
	EXPECT(vecring_tx_alloc(m, 64, &p), VECRING_OK);
	memset(p, 1, 64);
	EXPECT(vecring_tx_abort(m), VECRING_OK);
	EXPECT(vecring_rx_peek(s, f, 32), 0);
}

/* Frames of every length pattern, zero copy on both sides, many times around
 * the ring: frames whose slots wrap are staged on TX and copied on RX, and
 * every byte still arrives. */
static void test_wrapping(void)
{
	uint64_t seq = 0, expected = 0, copied = 0;
	const uint64_t total = 3000;
	while (expected < total) {
		uint32_t slots = 0;
		int rc = vecring_tx_reserve(m, 32, &slots);
		if (rc == VECRING_OK) {
			int added = 0;
			while (seq < total) {
				uint8_t *p = NULL;
				size_t len = 1 + (size_t)((seq * 2654435761u) % 9216);
				if (len < PATTERN_MIN_LEN)
					len = PATTERN_MIN_LEN;
				rc = vecring_tx_alloc(m, (uint32_t)len, &p);
				if (rc == VECRING_E_AGAIN)
					break;
				EXPECT(rc, VECRING_OK);
				pattern_fill(p, len, seq++);
				added++;
			}
			EXPECT(vecring_tx_commit(m), added);
		} else {
			EXPECT(rc, VECRING_E_AGAIN);
		}
		vecring_frame_t f[8];
		int n = vecring_rx_peek(s, f, 8);
		CHECK(n >= 0, "peek %d", n);
		for (int i = 0; i < n; i++) {
			uint64_t got;
			size_t len = 1 + (size_t)((expected * 2654435761u) % 9216);
			if (len < PATTERN_MIN_LEN)
				len = PATTERN_MIN_LEN;
			CHECK(f[i].len == len && pattern_check(f[i].data, f[i].len, &got) == 0 && got == expected,
			      "frame %" PRIu64 " (%u bytes, flags %u)", expected, f[i].len, f[i].flags);
			if (f[i].flags & VECRING_FRAME_COPIED)
				copied++;
			expected++;
		}
		EXPECT(vecring_rx_release(s), VECRING_OK);
	}
	CHECK(copied > 0, "some frames wrapped (%" PRIu64 ")", copied);
	CHECK(copied < total / 2, "most frames were read in place (%" PRIu64 " copied)", copied);
}

static void test_counters_and_close(void)
{
	vecring_counters_t c;
	EXPECT(vecring_counters(m, NULL, sizeof c), VECRING_E_INVAL);
	EXPECT(vecring_counters(m, &c, 0), VECRING_E_INVAL);
	memset(&c, 0xff, sizeof c);
	EXPECT(vecring_counters(m, &c, sizeof c.generation), VECRING_OK);
	CHECK(c.generation == generation && c.link_ups == UINT64_MAX, "only a prefix is written");
	EXPECT(vecring_counters(m, &c, sizeof c), VECRING_OK);
	vecring_counters_t sc;
	EXPECT(vecring_counters(s, &sc, sizeof sc), VECRING_OK);
	CHECK(c.link_ups == 1 && c.link_downs == 0 && c.rx_frames == 0, "master ups %" PRIu64, c.link_ups);
	CHECK(c.tx_frames == sc.rx_frames && c.tx_bytes == sc.rx_bytes && c.tx_frames > 3000,
	      "master sent %" PRIu64 " (%" PRIu64 " bytes), slave received %" PRIu64 " (%" PRIu64 " bytes)",
	      c.tx_frames, c.tx_bytes, sc.rx_frames, sc.rx_bytes);

	/* A slave closed with a peeked frame held and a chunk open. */
	vecring_frame_t f[1];
	uint32_t slots;
	EXPECT(vecring_send(m, "bye", 3), VECRING_OK);
	EXPECT(vecring_rx_peek(s, f, 1), 1);
	EXPECT(vecring_tx_reserve(s, 4, &slots), VECRING_OK);
	EXPECT(vecring_close(s), VECRING_OK);
	/* A closed handle is refused as closed by every call, close included. */
	uint8_t b[8] = { 0 };
	size_t len = 0;
	EXPECT(vecring_close(s), VECRING_E_CLOSED);
	CHECK(last_error_contains("closed"), "says so");
	EXPECT(vecring_send(s, b, sizeof b), VECRING_E_CLOSED);
	EXPECT(vecring_recv(s, b, sizeof b, &len), VECRING_E_CLOSED);
	EXPECT(vecring_rx_release(s), VECRING_E_CLOSED);
	EXPECT(vecring_tx_commit(s), VECRING_E_CLOSED);
	EXPECT(vecring_state(s, NULL), VECRING_E_CLOSED);
	EXPECT(vecring_wait_up(s, 0, NULL), VECRING_E_CLOSED);
	EXPECT(vecring_wait_down(m, 10000), VECRING_OK);
	EXPECT(vecring_state(m, NULL), 0);
	EXPECT(vecring_send(m, "x", 1), VECRING_E_LINK_DOWN);
	EXPECT(vecring_tx_reserve(m, 1, &slots), VECRING_E_LINK_DOWN);
	EXPECT(vecring_rx_peek(m, f, 1), VECRING_E_LINK_DOWN);
	EXPECT(vecring_geometry(m, NULL, NULL, NULL), VECRING_E_LINK_DOWN);
	EXPECT(vecring_tx_unread(m), 0);
	wait_count(&downs, 1);
	EXPECT(vecring_counters(m, &c, sizeof c), VECRING_OK);
	CHECK(c.link_downs == 1, "downs %" PRIu64, c.link_downs);
	EXPECT(vecring_close(m), VECRING_OK);

	/* The link can be opened again once closed. */
	vecring_options_t mo = options("l", VECRING_ROLE_MASTER);
	EXPECT(vecring_open(&mo, &m), VECRING_OK);
	EXPECT(vecring_close(m), VECRING_OK);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: api RUN_DIR\n");
		return 2;
	}
	run_dir = argv[1];
	alarm(120); /* watchdog */
	test_strerror();
	test_options_and_open_errors();
	test_options_from_env();
	test_invalid_handles();
	test_meeting();
	test_copies();
	test_zero_copy();
	test_wrapping();
	test_counters_and_close();
	printf("api: all %d checks passed\n", passed);
	return 0;
}
