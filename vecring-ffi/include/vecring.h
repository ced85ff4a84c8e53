/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * vecring.h -- the C API of vecring (libvecring.so, libvecring.a).
 *
 * vecring is a shared-memory virtual Ethernet link between two processes on
 * one host. One side is the *master* (it creates the link memory and listens
 * on <run_dir>/<domain>/<link>.sock), the other the *slave* (it connects and
 * maps the master's memory). Either side may start first; when the peer exits
 * (even by kill -9) the link goes down, and it comes back up by itself, in a
 * new *generation*, when the peer returns. A generation number names one
 * connection: it grows with every connection and across master restarts (a
 * master starts counting from the clock), so compare generations, do not
 * expect small numbers. The other end may be a DPDK
 * application using the vecring PMD (librte_net_vecring.so), a Rust program
 * using the vecring-core crate, or another program using this library.
 *
 * Frames are 1 to 9216 bytes (or the link's smaller maximum). They travel
 * through two single-producer/single-consumer rings of fixed-size slots; a
 * frame larger than a slot continues in the following slots. Each frame is
 * published by its own slot descriptor, which carries the lap of the ring
 * it belongs to (ring format 5, docs/ARCHITECTURE.md): both ends must speak
 * it, and a peer of format 4 is refused at attach with both versions named
 * (VECRING_E_REFUSED, "ours 5, theirs 4").
 *
 * Build and link:
 *
 *     PKG_CONFIG_PATH=<prefix>/lib/pkgconfig \
 *         cc app.c $(pkg-config --cflags --libs vecring)
 *
 * (see docs/c-api.md for installing, static linking and an example).
 *
 * ---------------------------------------------------------------------------
 * Return values
 *
 *   Every function returning int returns VECRING_OK (0) or a non-negative
 *   count on success and a negative VECRING_E_* code on failure. After a
 *   failure, vecring_last_error_message() says what exactly went wrong on this
 *   thread, e.g. "master's region refused: region slot count mismatch: ours
 *   512, theirs 1024". No function aborts the process or unwinds into C: null
 *   pointers, zero or oversized lengths, too-small buffers and invalid
 *   or closed handles are reported as errors (VECRING_E_INVAL,
 *   VECRING_E_CLOSED; every function taking a link may return the latter),
 *   and an internal error of the library is
 *   reported as VECRING_E_PANIC.
 *
 * Threads
 *
 *   A link has one producer thread and one consumer thread: the TX functions
 *   (vecring_send*, vecring_tx_*) may be called from one thread at a time and
 *   the RX functions (vecring_recv*, vecring_rx_*) from one thread at a time;
 *   these two may be different threads, and may change over time as long as
 *   the caller orders the hand-over (e.g. with a mutex or a thread join).
 *   A TX (RX) call made while another thread is inside a TX (RX) call on the
 *   same link returns VECRING_E_BUSY and does nothing: misuse is reported, not
 *   undefined; a thread sleeping in vecring_rx_wait or vecring_recv_timeout
 *   is inside an RX call. The link-level functions (vecring_state,
 *   vecring_wait_up, vecring_wait_down, vecring_geometry, vecring_counters)
 *   and the descriptors (vecring_rx_fd, vecring_tx_fd) may be called from
 *   any thread at any time. vecring_close may be called from any thread,
 *   also while other threads are inside calls on the link: those calls
 *   return (a wait ends with VECRING_E_CLOSED), every call made on the
 *   handle afterwards returns VECRING_E_CLOSED, and the link is freed when
 *   the last call using it has returned. A handle value is a checked token,
 *   not an address: a closed or made-up handle is an error, never a crash.
 *
 * Ownership
 *
 *   vecring_open allocates the link; vecring_close frees it. Everything else
 *   borrows: the library keeps no pointer passed to it beyond the call,
 *   except the callback and user_data of vecring_options_t, which it keeps
 *   until vecring_close. Pointers the library returns into the rings
 *   (vecring_tx_alloc, vecring_rx_peek) are valid until the matching
 *   vecring_tx_commit / vecring_tx_abort / vecring_rx_release (or
 *   vecring_close); strings it returns are static, except
 *   vecring_last_error_message's, which lives until the next failing call on
 *   the same thread.
 *
 * The peer is untrusted
 *
 *   Every index and length the peer writes is checked; a peer that breaks the
 *   ring protocol makes the calls return VECRING_E_CORRUPT and the link drops
 *   it and waits for a new peer. Frame *bytes* in shared memory may still be
 *   changed by a hostile peer while you read them in place (vecring_rx_peek):
 *   copy what you must validate before validating it.
 * ---------------------------------------------------------------------------
 */
#ifndef VECRING_H
#define VECRING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Errors ============================================================= */

/** Return codes. Success is 0; errors are negative. */
typedef enum vecring_error {
	/** Success. */
	VECRING_OK = 0,
	/** An argument is invalid: a null pointer, a zero or out-of-range length
	 *  or value, a handle vecring_open never returned, a bad option, or a call out of
	 *  sequence (e.g. vecring_tx_alloc without vecring_tx_reserve). */
	VECRING_E_INVAL = -1,
	/** The link has no peer. Frames cannot be sent or received now; wait with
	 *  vecring_wait_up. */
	VECRING_E_LINK_DOWN = -2,
	/** The ring is full (sending) or empty (receiving): try again later.
	 *  Nothing was sent or received. */
	VECRING_E_AGAIN = -3,
	/** The frame is longer than the link's maximum frame length (9216 unless
	 *  configured smaller); it can never be sent. */
	VECRING_E_TOOBIG = -4,
	/** The buffer is too small for the next frame. The frame stays queued;
	 *  the length it needs is reported (see vecring_recv). */
	VECRING_E_NOBUFS = -5,
	/** The peer corrupted the shared memory. The link drops that peer and
	 *  waits for a new one; calls fail with this code until it has. */
	VECRING_E_CORRUPT = -6,
	/** The wait timed out. */
	VECRING_E_TIMEDOUT = -7,
	/** The master refused this slave (credentials, a second slave), or this
	 *  slave refused the master's memory (a geometry or version mismatch). */
	VECRING_E_REFUSED = -8,
	/** Another live master holds this link (vecring_open as master). */
	VECRING_E_EXISTS = -9,
	/** The domain or link name is not allowed: 1-64 characters of
	 *  [A-Za-z0-9_.-], not starting with '.' or '-', without "..". */
	VECRING_E_NAME = -10,
	/** The NUMA node does not exist, or the memory could not be bound to it. */
	VECRING_E_NUMA = -11,
	/** The link memory could not be allocated: hugepages were required and
	 *  none were free, or the system is out of memory. */
	VECRING_E_NOMEM = -12,
	/** A file-system, socket or other system call failed (e.g. permissions
	 *  on run_dir, a socket path longer than 107 bytes). */
	VECRING_E_IO = -13,
	/** Another thread is inside a TX (or RX) call on this link right now: a
	 *  link has one producer thread and one consumer thread. Nothing was done. */
	VECRING_E_BUSY = -14,
	/** An internal error of the library (a bug; please report it). The call
	 *  did nothing harmful but its effect is unknown; closing the link is the
	 *  safe reaction. */
	VECRING_E_PANIC = -15,
	/** The peer broke the handshake protocol. */
	VECRING_E_PROTO = -16,
	/** The link handle was closed by vecring_close, before or during this
	 *  call (on any thread). Nothing was done. */
	VECRING_E_CLOSED = -17
} vecring_error_t;

/**
 * The text of a return code, e.g. "link is down". Static; never NULL (an
 * unknown code gives "unknown vecring error code"). Any thread.
 */
const char *vecring_strerror(int code);

/**
 * What the last failed vecring call on this thread said, with details
 * (which option, which field mismatched, what the peer did), or "" if no
 * call has failed on this thread. Never NULL. Valid until the next failing
 * vecring call on this thread; successful calls leave it alone.
 */
const char *vecring_last_error_message(void);

/** The library's version, e.g. "0.1.0". Static. */
const char *vecring_version(void);

/* ==== Opening and closing ================================================ */

/** An open link. Opaque; from vecring_open, freed by vecring_close. */
typedef struct vecring_link vecring_link_t;

/** vecring_options_t.role */
enum vecring_role {
	/** Connect to the master and map its memory (typically in a container). */
	VECRING_ROLE_SLAVE = 0,
	/** Create the memory and listen (typically on the host). */
	VECRING_ROLE_MASTER = 1
};

/** vecring_options_t.hugepages (master) */
enum vecring_hugepages {
	/** 2 MiB hugepages if available, else ordinary pages (one warning). */
	VECRING_HUGEPAGES_PREFER = 0,
	/** 2 MiB hugepages or fail with VECRING_E_NOMEM. */
	VECRING_HUGEPAGES_REQUIRE = 1,
	/** Ordinary pages. */
	VECRING_HUGEPAGES_NEVER = 2
};

/**
 * State-change callback: called from the link's own control thread (not a
 * thread of yours) each time the link comes up (up = 1, generation >= 1) or
 * goes down (up = 0, generation = 0). It must return quickly, be safe to run
 * concurrently with your threads, and should not call vecring_close on this
 * link (the close then takes up to a second and completes after the
 * callback returns). It may call the
 * link-level functions such as vecring_counters.
 */
typedef void (*vecring_state_cb_t)(void *user_data, int up, uint64_t generation);

/**
 * Options of vecring_open: everything the Rust LinkBuilder can set. Always
 * fill with vecring_options_init first, then set what you need: new fields
 * may be added at the end in later versions, and `size` tells the library
 * which ones your program knows.
 */
typedef struct vecring_options {
	/** sizeof(vecring_options_t), set by vecring_options_init. Do not change. */
	uint32_t size;
	/** VECRING_ROLE_SLAVE (default) or VECRING_ROLE_MASTER. */
	int32_t role;
	/** Domain name (required): a directory under run_dir, typically a
	 *  container's name. Copied by vecring_open. */
	const char *domain;
	/** Link name (required): the socket <run_dir>/<domain>/<link>.sock.
	 *  Copied by vecring_open. */
	const char *link;
	/** Parent directory of the domain directories; NULL (default) for
	 *  /run/vecring. Both sides must name the same directory (or bind mounts
	 *  of it). Copied by vecring_open. */
	const char *run_dir;
	/** NUMA node for the link memory (master: binds it; slave: only checks
	 *  that the node exists); -1 (default) for none. */
	int32_t numa_node;
	/** Master: one of enum vecring_hugepages (default PREFER). */
	int32_t hugepages;
	/** Ring slots, a power of two from 2 to 1048576 (0 = default 32768);
	 *  slots times slot_size at most 1 GiB. */
	uint32_t slot_count;
	/** Bytes per slot, a power of two from 64 to 32768 (0 = default 256); a frame
	 *  takes as many consecutive slots as it needs. */
	uint32_t slot_size;
	/** Largest frame, 1..9216 (0 = default 9216). The ring must hold two
	 *  frames of this size. Master: the geometry it creates when any of
	 *  slot_count, slot_size, max_frame_len is set. Slave: when any is set,
	 *  the slave refuses a master with another geometry (VECRING_E_REFUSED);
	 *  when none is set, it takes the master's. */
	uint32_t max_frame_len;
	/** Master: mode bits of the socket (default 0660). The domain directory
	 *  stays the master's, with search permission for whoever the socket
	 *  mode (or owner_uid) lets connect. 0 = default. */
	uint32_t socket_mode;
	/** Master: owner of the socket, e.g. an unprivileged container's mapped
	 *  root; only that uid may attach unless allowed_uids is given. -1
	 *  (default) for none; set both or neither. */
	int64_t owner_uid;
	/** See owner_uid. */
	int64_t owner_gid;
	/** Master: only slaves running as one of these uids (as seen from the
	 *  master) may attach. NULL/0 (default): any uid that can reach the
	 *  socket. Copied by vecring_open. */
	const uint32_t *allowed_uids;
	/** Entries in allowed_uids. */
	uint32_t allowed_uid_count;
	/** Slave: how often to retry connecting while waiting for a master, in
	 *  milliseconds (0 = default 50). */
	uint32_t retry_interval_ms;
	/** Called on every state change; NULL (default) for none. */
	vecring_state_cb_t on_state_change;
	/** Passed to on_state_change. */
	void *user_data;
	/** Slave: the uids the master may run as (as seen by the slave).
	 *  NULL/0 (default): root, or the owner of the run or domain directory.
	 *  Copied by vecring_open. */
	const uint32_t *master_uids;
	/** Entries in master_uids. */
	uint32_t master_uid_count;
	/** The network namespace the link meets in, with no directory shared:
	 *  a namespace file ("/proc/PID/ns/net", "/run/netns/NAME") or "self"
	 *  for this process's own. The master listens on the abstract name
	 *  "@vecring/1/<domain>/<link>" there and admits only that namespace's
	 *  processes; a slave connects from inside it. NULL (default): the run
	 *  directory's socket. With it, owner and socket_mode must be unset.
	 *  Copied by vecring_open. */
	const char *netns;
} vecring_options_t;

/**
 * Fills the first `size` bytes of *opts with the defaults (a slave; no
 * names) and sets opts->size to what it filled: at most this library's
 * vecring_options_t, at most `size`. NULL, or a size below the first
 * layout's, is ignored. Call it through vecring_options_init below.
 */
void vecring_options_init_size(vecring_options_t *opts, size_t size);

/**
 * The first layout's initializer, for programs built against it: fills
 * the fields up to master_uid_count. Programs built with this header
 * reach vecring_options_init_size instead, through the macro below.
 */
void (vecring_options_init)(vecring_options_t *opts);

/** Fills *opts with the defaults, as far as this program's struct goes:
 *  a library newer than the header never writes past it. */
#define vecring_options_init(opts) vecring_options_init_size((opts), sizeof *(opts))

/**
 * Sets domain, link, run_dir and netns of *opts that are NULL to the values
 * of VECRING_DOMAIN, VECRING_LINK, VECRING_RUN_DIR and VECRING_NETNS that
 * are set: the variables a CDI device (`vecring cdi write`) gives a
 * container. The pointers are the environment's own strings (getenv's);
 * vecring_open copies them. Call it after vecring_options_init and after
 * setting the fields the program decides itself. Returns how many fields it
 * set (0 to 4). Any thread, while no other changes the environment (as for
 * getenv).
 *
 * Errors: VECRING_E_INVAL (opts NULL, or not initialised).
 */
int vecring_options_from_env(vecring_options_t *opts);

/**
 * Opens a link and stores its handle in *link (NULL on failure). A master
 * claims the link and listens; a slave starts trying to attach. Neither
 * waits for the peer: see vecring_wait_up. Any thread.
 *
 * Errors: VECRING_E_INVAL (NULL pointers; options not initialised or from a
 * newer vecring.h; a bad role, hugepages, geometry, socket mode or owner),
 * VECRING_E_NAME, VECRING_E_NUMA, VECRING_E_EXISTS (a live master holds the
 * link), VECRING_E_NOMEM, VECRING_E_IO (e.g. run_dir not writable, or a
 * directory or file of the link that is a symlink, has another owner or is
 * writable by others: the message says which).
 */
int vecring_open(const vecring_options_t *opts, vecring_link_t **link);

/**
 * Closes a link: stops its control thread, disconnects the peer, discards an
 * open TX chunk, releases peeked frames, and (master) removes the socket.
 * NULL is accepted (VECRING_OK). Any thread, at any time: calls in flight on
 * other threads return (vecring_wait_up and vecring_wait_down with
 * VECRING_E_CLOSED within about 10 ms, the RX and TX waits and *_timeout
 * calls at once) and every later call on the handle returns
 * VECRING_E_CLOSED. Pointers into the rings (vecring_tx_alloc,
 * vecring_rx_peek) are invalid once it returns, and so are the descriptors
 * of vecring_rx_fd and vecring_tx_fd (remove them from your epoll set
 * first).
 *
 * Returns within one second whatever the peer does: if calls on other
 * threads or the link's teardown take longer, the last of them finishes
 * freeing the link in the background. Errors: VECRING_E_CLOSED (closed
 * already), VECRING_E_INVAL (a value vecring_open never returned).
 */
int vecring_close(vecring_link_t *link);

/* ==== Link state (any thread) ============================================ */

/**
 * Whether the link is up: returns 1 (up; its generation in *generation if
 * not NULL) or 0 (down; *generation = 0), or VECRING_E_INVAL or
 * VECRING_E_CLOSED.
 */
int vecring_state(const vecring_link_t *link, uint64_t *generation);

/**
 * Waits up to timeout_ms milliseconds for the link to be up; on success the
 * generation goes to *generation (if not NULL). Returns at once if it is up.
 * Errors: VECRING_E_TIMEDOUT; slave: VECRING_E_REFUSED or VECRING_E_PROTO as
 * soon as the master refuses us or we refuse its memory (the link keeps
 * retrying); VECRING_E_CLOSED (closed by another thread, also during the
 * wait); VECRING_E_INVAL.
 */
int vecring_wait_up(const vecring_link_t *link, uint32_t timeout_ms, uint64_t *generation);

/**
 * Waits up to timeout_ms milliseconds for the link to be down (the peer
 * left). VECRING_OK, VECRING_E_TIMEDOUT, VECRING_E_CLOSED (closed by another
 * thread, also during the wait) or VECRING_E_INVAL.
 */
int vecring_wait_down(const vecring_link_t *link, uint32_t timeout_ms);

/**
 * The geometry of the current generation's rings; each out pointer may be
 * NULL. A slave learns it from the master, so it is known only while up:
 * VECRING_E_LINK_DOWN otherwise.
 */
int vecring_geometry(const vecring_link_t *link, uint32_t *slot_count, uint32_t *slot_size,
		     uint32_t *max_frame_len);

/** A snapshot of a link's counters (totals over all generations). */
typedef struct vecring_counters {
	/** Current (or last) generation; 0 before the first. */
	uint64_t generation;
	/** Times the link came up. */
	uint64_t link_ups;
	/** Times the link went down. */
	uint64_t link_downs;
	/** Generations ended because the peer corrupted the memory. */
	uint64_t peer_corruptions;
	/** Peers refused (bad credentials, second slave, bad handshake). */
	uint64_t rejected_peers;
	/** Frames sent (updated by vecring_send*, vecring_tx_commit). */
	uint64_t tx_frames;
	/** Bytes sent. */
	uint64_t tx_bytes;
	/** Frames sent but still unread when their generation ended (lost). */
	uint64_t tx_lost_on_link_down;
	/** Frames received (updated by vecring_recv*, vecring_rx_release). */
	uint64_t rx_frames;
	/** Bytes received. */
	uint64_t rx_bytes;
} vecring_counters_t;

/**
 * Copies the counters into the first `size` bytes of *out; pass
 * sizeof(vecring_counters_t) (a smaller size copies a prefix, so programs
 * built against an older header keep working). VECRING_E_INVAL for a NULL
 * link or out, or size 0.
 */
int vecring_counters(const vecring_link_t *link, vecring_counters_t *out, size_t size);

/* ==== Frames ============================================================== */

/** vecring_frame_t.flags: the frame's slots wrap around the end of the ring,
 *  so data points to a copy made by the library, not into the ring. */
#define VECRING_FRAME_COPIED 1u

/** One frame: input of vecring_send_batch, output of vecring_rx_peek. */
typedef struct vecring_frame {
	/** The frame's bytes. */
	const uint8_t *data;
	/** Its length in bytes. */
	uint32_t len;
	/** VECRING_FRAME_* bits (output; ignored on input). */
	uint32_t flags;
} vecring_frame_t;

/** One receive buffer of vecring_recv_batch. */
typedef struct vecring_buf {
	/** Where a frame is copied to (yours). */
	uint8_t *data;
	/** Bytes available at data. */
	uint32_t cap;
	/** Output: the received frame's length. */
	uint32_t len;
} vecring_buf_t;

/* ==== Sending (the link's one producer thread) ============================ */

/**
 * Copies one frame of len bytes (1 .. the link's maximum) into the link.
 *
 * Errors: VECRING_E_AGAIN (ring full: nothing sent), VECRING_E_LINK_DOWN,
 * VECRING_E_TOOBIG, VECRING_E_INVAL (len 0, NULL frame, a TX chunk is open),
 * VECRING_E_CORRUPT, VECRING_E_BUSY.
 */
int vecring_send(vecring_link_t *link, const void *frame, size_t len);

/**
 * vecring_send, sleeping up to timeout_ms milliseconds for room while the
 * ring is full, as poll(2) counts: -1 waits without limit, 0 does not sleep
 * (exactly vecring_send). Waits through link down and up too: the frame goes
 * into whichever generation has room first. Returns VECRING_OK once the frame
 * is queued.
 *
 * Errors: VECRING_E_AGAIN (still no room after timeout_ms: nothing sent),
 * VECRING_E_CLOSED (also when vecring_close is called on another thread
 * during the wait), VECRING_E_INVAL (a timeout_ms below -1), and those of
 * vecring_send except VECRING_E_LINK_DOWN, which is waited through (with
 * timeout_ms 0 it is returned).
 */
int vecring_send_timeout(vecring_link_t *link, const void *frame, size_t len, int timeout_ms);

/**
 * Copies as many of frames[0 .. count-1] as fit, in order, publishing them
 * with one index update. Returns how many were sent: 0 when the ring has no
 * room for the first; it stops before the first frame that does not fit or
 * has a bad length. Errors as vecring_send, for the first frame only.
 */
int vecring_send_batch(vecring_link_t *link, const vecring_frame_t *frames, size_t count);

/*
 * Zero-copy sending: reserve slots, fill frames in place, commit once.
 *
 *     uint32_t slots;
 *     if (vecring_tx_reserve(link, 64, &slots) == VECRING_OK) {
 *         uint8_t *p;
 *         while (vecring_tx_alloc(link, 60, &p) == VECRING_OK)
 *             build_frame(p, 60);
 *         vecring_tx_commit(link);      // publishes every allocated frame
 *     }
 *
 * While a chunk is open, vecring_send and vecring_send_batch fail with
 * VECRING_E_INVAL, and a second vecring_tx_reserve too.
 */

/**
 * Opens a TX chunk of up to max_slots free slots (the number reserved goes to
 * *slots if not NULL; a frame of n bytes takes ceil(n / slot_size) slots).
 * Errors: VECRING_E_AGAIN (ring full: no chunk opened), VECRING_E_LINK_DOWN,
 * VECRING_E_CORRUPT, VECRING_E_INVAL (max_slots 0, a chunk already open),
 * VECRING_E_BUSY.
 */
int vecring_tx_reserve(vecring_link_t *link, uint32_t max_slots, uint32_t *slots);

/**
 * Adds a frame of len bytes to the open chunk and stores in *data where to
 * write it: len writable bytes of unspecified content, valid until
 * vecring_tx_commit or vecring_tx_abort. Write all len bytes before
 * committing. Usually this is the frame's place in the ring; for a frame
 * whose slots wrap around the end of the ring it is a staging buffer the
 * library copies into the ring at commit.
 *
 * Errors: VECRING_E_AGAIN (the chunk has no room left for this frame: commit
 * and reserve again; the chunk stays open), VECRING_E_TOOBIG, VECRING_E_INVAL
 * (len 0, NULL data, no chunk open), VECRING_E_BUSY.
 */
int vecring_tx_alloc(vecring_link_t *link, uint32_t len, uint8_t **data);

/** Copies a frame into the open chunk. Errors as vecring_tx_alloc. */
int vecring_tx_push(vecring_link_t *link, const void *frame, size_t len);

/**
 * Publishes every frame of the open chunk with one index update and closes
 * the chunk; returns how many frames were published (0 if none were added).
 * If the link went down meanwhile they are counted in tx_lost_on_link_down.
 * Errors: VECRING_E_INVAL (no chunk open), VECRING_E_BUSY.
 */
int vecring_tx_commit(vecring_link_t *link);

/** Discards the open chunk, if any: none of its frames is sent. VECRING_OK. */
int vecring_tx_abort(vecring_link_t *link);

/**
 * How many frames sent in the current generation the peer has not read yet
 * (0 when the link is down): poll it until 0 before closing a link whose last
 * frames must arrive. VECRING_E_INVAL (also while a TX chunk is open),
 * VECRING_E_BUSY.
 */
int vecring_tx_unread(vecring_link_t *link);

/**
 * Whether the peer has a receiver attached to the link's current generation,
 * as it says in shared memory: 1 yes, 0 no or link down. A receiver attaches
 * at its first call after the link came up (for a C peer, its first RX call
 * in the generation). Frames sent while the peer has none may never be read.
 * VECRING_E_INVAL (a TX chunk is open), VECRING_E_BUSY.
 */
int vecring_tx_peer_present(vecring_link_t *link);

/* ==== Receiving (the link's one consumer thread) ========================== */

/**
 * Copies the next frame into buf (cap bytes) and its length into *len.
 *
 * Errors: VECRING_E_AGAIN (no frame waiting), VECRING_E_NOBUFS (the frame
 * needs *len bytes, more than cap; it stays queued: call again with a larger
 * buffer), VECRING_E_LINK_DOWN, VECRING_E_CORRUPT, VECRING_E_INVAL (NULL len,
 * NULL buf with cap > 0, frames are held by vecring_rx_peek), VECRING_E_BUSY.
 */
int vecring_recv(vecring_link_t *link, void *buf, size_t cap, size_t *len);

/**
 * vecring_recv, sleeping up to timeout_ms milliseconds for a frame while
 * none is waiting, as poll(2) counts: -1 waits without limit, 0 does not
 * sleep (exactly vecring_recv). Waits through link down and up too: the
 * next frame of whichever generation brings one. The thread sleeps (no CPU)
 * until the peer sends; see "Sleeping instead of polling" below.
 *
 * Errors: VECRING_E_AGAIN (no frame came within timeout_ms),
 * VECRING_E_CLOSED (also when vecring_close is called on another thread
 * during the wait), VECRING_E_INVAL (a timeout_ms below -1), and those of
 * vecring_recv except VECRING_E_LINK_DOWN, which is waited through (with
 * timeout_ms 0 it is returned).
 */
int vecring_recv_timeout(vecring_link_t *link, void *buf, size_t cap, size_t *len, int timeout_ms);

/**
 * Copies up to count frames, frame i into bufs[i] (length in bufs[i].len),
 * releasing them with one index update. Returns how many: 0 when none is
 * waiting; it stops early at a frame that does not fit its buffer (that frame
 * stays queued). Errors as vecring_recv for the first frame; for
 * VECRING_E_NOBUFS the needed length is in bufs[0].len.
 */
int vecring_recv_batch(vecring_link_t *link, vecring_buf_t *bufs, size_t count);

/**
 * vecring_recv_batch, sleeping up to timeout_ms milliseconds (-1: no limit;
 * 0: exactly vecring_recv_batch) for the first frame, through link down and
 * up. Returns as soon as at least one frame was read, with how many, or 0
 * when none came within timeout_ms (or count is 0). Errors as
 * vecring_recv_timeout.
 */
int vecring_recv_batch_timeout(vecring_link_t *link, vecring_buf_t *bufs, size_t count, int timeout_ms);

/*
 * Zero-copy receiving: peek frames in place, release them once.
 *
 *     vecring_frame_t f[32];
 *     int n = vecring_rx_peek(link, f, 32);
 *     for (int i = 0; i < n; i++)
 *         handle_frame(f[i].data, f[i].len);
 *     vecring_rx_release(link);   // gives the slots back to the peer
 */

/**
 * Hands out up to max waiting frames in place: frames[i].data points into the
 * ring (or, flag VECRING_FRAME_COPIED, to a library copy of a frame that
 * wraps around the ring's end). Returns how many (0: none waiting, nothing
 * held). The frames stay valid and owned by you until vecring_rx_release;
 * the peer cannot reuse their slots until then, so release promptly. While
 * frames are held, another peek and vecring_recv* fail with VECRING_E_INVAL.
 * If the peer corrupted the ring after some frames, those are returned and
 * the next peek reports the corruption.
 *
 * Errors: VECRING_E_LINK_DOWN, VECRING_E_CORRUPT, VECRING_E_INVAL (max 0,
 * NULL frames, frames already held), VECRING_E_BUSY.
 */
int vecring_rx_peek(vecring_link_t *link, vecring_frame_t *frames, size_t max);

/** Releases the frames of the last vecring_rx_peek to the peer (nothing if
 *  none are held). VECRING_OK, VECRING_E_INVAL or VECRING_E_BUSY. */
int vecring_rx_release(vecring_link_t *link);

/* ==== Sleeping instead of polling ========================================= */

/*
 * A consumer thread with nothing to read (or a producer with no room) may
 * sleep until the peer moves, instead of polling: an idle receiver then
 * costs no CPU, and a frame wakes it within microseconds. The peer needs
 * nothing special (the other end may poll, sleep, or be a DPDK port).
 *
 * In an event loop, put the link's descriptor in your own epoll (or poll)
 * set once, and bracket each sleep with prepare / cancel:
 *
 *     int fd = vecring_rx_fd(link);         // same until vecring_close
 *     struct epoll_event ev = { .events = EPOLLIN, .data.ptr = link };
 *     epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
 *     for (;;) {
 *         int n = vecring_recv_batch(link, bufs, 32);
 *         if (n > 0) {
 *             handle(bufs, n);
 *             continue;
 *         }
 *         if (vecring_rx_prepare_wait(link) == 1) {   // nothing ready: sleep
 *             epoll_wait(ep, events, 16, -1);
 *             vecring_rx_cancel_wait(link);
 *         }
 *     }
 *
 * The descriptor becomes readable when frames may have arrived or the link
 * changed (down, up, a new master); a wakeup may find nothing. A hostile
 * peer that never rings can delay a frame until your epoll_wait times out:
 * give it a timeout (say a second) if the peer is not trusted. Use it only
 * for polling (EPOLLIN, level-triggered): do not read, write or close it. It
 * stays the same for the handle's life, across link down and up, and is
 * closed by vecring_close: remove it from your set before closing the link.
 * Sleep only when prepare returned 1, and call cancel after every such sleep,
 * before receiving: until then the peer takes the receiver for asleep and
 * rings for it. With several vecring descriptors in one set, prepare each of
 * them before every sleep: a descriptor stays readable until its next
 * prepare.
 *
 * Without an event loop, vecring_rx_wait / vecring_tx_wait sleep for you,
 * and vecring_recv_timeout, vecring_recv_batch_timeout and
 * vecring_send_timeout are the copying calls with a timeout. They wake at
 * least once a second to look at the ring themselves (a peer that never
 * rings delays a frame by at most that), and vecring_close on another
 * thread ends them at once with VECRING_E_CLOSED.
 *
 * Timeouts count as poll(2)'s do: milliseconds, -1 without limit, 0 not
 * sleeping at all; below -1 is VECRING_E_INVAL. The RX (TX) functions here
 * belong to the consumer (producer) thread like the others (VECRING_E_BUSY
 * otherwise), except vecring_rx_fd and vecring_tx_fd: any thread.
 */

/**
 * The receiver's descriptor (>= 0) for your epoll or poll set: readable when
 * frames may have arrived or the link changed. The same value for the
 * handle's whole life. Any thread. Errors: VECRING_E_INVAL, VECRING_E_CLOSED.
 */
int vecring_rx_fd(const vecring_link_t *link);

/**
 * Prepares the receiver to sleep on vecring_rx_fd: returns 1 (nothing to
 * read: sleep now; the descriptor becomes readable when there is a reason to
 * look) or 0 (frames are ready, or ready again: do not sleep, read them).
 * Also 1 while the link is down: link up wakes the sleeper.
 * Errors: VECRING_E_CORRUPT, VECRING_E_INVAL (frames held by vecring_rx_peek),
 * VECRING_E_BUSY, VECRING_E_CLOSED.
 */
int vecring_rx_prepare_wait(vecring_link_t *link);

/** Says the receiver runs again, after the sleep that followed
 *  vecring_rx_prepare_wait. VECRING_OK, VECRING_E_INVAL (frames held by
 *  vecring_rx_peek) or VECRING_E_BUSY. */
int vecring_rx_cancel_wait(vecring_link_t *link);

/**
 * Sleeps until a frame is ready to read (returns 1) or timeout_ms passes
 * (returns 0), through link down and up. Errors as vecring_rx_prepare_wait,
 * and VECRING_E_INVAL for a timeout_ms below -1.
 */
int vecring_rx_wait(vecring_link_t *link, int timeout_ms);

/**
 * The sender's descriptor (>= 0) for your epoll or poll set: readable when
 * room may have come or the link changed. As vecring_rx_fd.
 */
int vecring_tx_fd(const vecring_link_t *link);

/**
 * Prepares the sender to sleep on vecring_tx_fd until a frame of len bytes
 * fits: returns 1 (no room: sleep now) or 0 (it fits: send it). As
 * vecring_rx_prepare_wait; also VECRING_E_INVAL for len 0 or a TX chunk
 * open, and VECRING_E_TOOBIG for a len above the link's maximum frame length
 * (it would never fit).
 */
int vecring_tx_prepare_wait(vecring_link_t *link, size_t len);

/** Says the sender runs again, after the sleep that followed
 *  vecring_tx_prepare_wait. VECRING_OK, VECRING_E_INVAL (a TX chunk is
 *  open) or VECRING_E_BUSY. */
int vecring_tx_cancel_wait(vecring_link_t *link);

/**
 * Sleeps until a frame of len bytes fits (returns 1) or timeout_ms passes
 * (returns 0), through link down and up. Errors as vecring_tx_prepare_wait,
 * and VECRING_E_INVAL for a timeout_ms below -1.
 */
int vecring_tx_wait(vecring_link_t *link, size_t len, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* VECRING_H */
