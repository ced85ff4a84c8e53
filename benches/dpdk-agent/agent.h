/*
 * vecring-dpdk-agent's shared declarations: its limits, options, receive
 * counters and process state, and what each of its files provides.
 *
 * The files, one concept each:
 *   main.c       start-up: EAL, the port, the wait for link up, then serve
 *                or run one trial (--once)
 *   options.c    the command line and a trial's parameters
 *   port.c       port 0's configuration and link state
 *   frame.h, frame.c   the frame layout shared with the Rust agent; flows
 *   histogram.h, histogram.c   the latency histogram shared with the Rust agent
 *   counts.c     receiving and counting frames (loss, order, duplicates)
 *   trial.c      a generator's trial; a sink's window (--once)
 *   serve.c      the agent protocol's commands on stdin
 *   reply.c      the protocol's replies on stdout; the --once summary
 */
#ifndef VECRING_DPDK_AGENT_H
#define VECRING_DPDK_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <rte_ether.h>
#include <rte_mempool.h>

#include "histogram.h"

/* ---- Limits and sizes -------------------------------------------------- */

#define RX_BURST 64u
#define MAX_BURST 256u
#define NB_MBUFS 16383u      /* 2^n-1: the mempool ring's best size */
#define MBUF_CACHE 512u
#define NB_DESC 1024u
#define SEQ_LIMIT (1ull << 32) /* sequence numbers tracked (a 512 MiB bitmap at most) */
#define SEQ_RESERVE_MAX (1ull << 28) /* bits reserved ahead of a trial (32 MiB) */
#define MAX_RATE 1000000000ull
#define MAX_SECS 3600.0 /* the longest trial, as the Rust agent */
#define LINE_MAX_LEN 4096u
#define DRAIN_QUIET_NS 50000000ull  /* the drain ends after 50 ms without a frame */
#define DRAIN_MAX_NS 1000000000ull  /* or after 1 s */
#define LINK_WAIT_S 60u

/* ---- Options (options.c) ------------------------------------------------ */

enum mode { MODE_NONE, MODE_GEN, MODE_SINK };

/* What one trial asks for; the `gen` command overrides the command line's. */
struct trial_params {
	uint32_t size;  /* frame bytes incl. Ethernet header, without FCS */
	uint64_t rate;  /* frames/s, 0 = as fast as the port takes them */
	double secs;    /* send window; 0 = until `count` */
	uint64_t count; /* frames per trial, 0 = until `secs` */
	uint32_t burst; /* frames per tx burst */
};

struct options {
	enum mode mode;
	struct trial_params trial;
	uint64_t clone; /* frames per flow tuple (pktgen's clone_skb) */
	uint32_t sip_lo, sip_hi, dip_lo, dip_hi; /* host order */
	uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
	struct rte_ether_addr src_mac, dst_mac;
	bool src_mac_set;
	bool verify;
	bool once;
};

extern struct options opt;

/* Parses the application's options (the arguments after "--"); exits 2 on a bad one. */
void parse_options(int argc, char **argv);
/*
 * Sets one trial parameter by name (size, rate, secs, count, burst).
 * Returns 1 when set, 0 when `key` is no trial parameter, -1 (with a message
 * in `err`) when the value is bad.
 */
int set_trial_param(struct trial_params *t, const char *key, const char *val, char *err, size_t errlen);
bool trial_params_ok(const struct trial_params *t, char *err, size_t errlen);

/* ---- Port (port.c) ------------------------------------------------------ */

static const uint16_t port = 0;
extern struct rte_mempool *pool;
extern struct rte_ether_addr port_mac;
extern uint32_t max_frame;

/* Configures and starts port 0 with one queue pair; sets max_frame and port_mac. */
int port_setup(void);
bool link_up(void);

/* ---- Counters of received frames (counts.c) ----------------------------- */

/* Why a frame counts as bad (a breakdown for stderr; the replies give the sum). */
enum bad_why { BAD_LENGTH, BAD_MAGIC, BAD_TRIAL, BAD_DST, BAD_SEQ, BAD_PAYLOAD, BAD_WHY_N };

/*
 * One set of receive counters: a trial's (gen) or since the last `reset`
 * (sink, and gen between trials). `seen` is a bitmap of sequence numbers;
 * `used` words of it may be non-zero, so a reset clears only those.
 */
struct counts {
	uint16_t trial;      /* the trial id counted; others are stale (bad) */
	bool adopt;          /* take the first trial id seen as `trial` */
	uint32_t size;       /* expected frame length, 0 = any */
	bool check_dst;      /* the dst MAC must be `mac` (a forwarder swapped it) */
	bool verify;         /* check every payload byte */
	struct rte_ether_addr mac;
	uint64_t seq_limit;  /* sequence numbers at or above are bad */
	uint64_t rx, unique, dup, reordered;
	uint64_t bad_why[BAD_WHY_N];
	uint64_t max_seq;    /* valid when unique > 0 */
	uint64_t lat_min, lat_max;
	uint64_t hist[HIST_BUCKETS];
	uint64_t *seen;
	uint64_t words, used;
	bool oom_noted;
};

extern struct counts trial_counts; /* gen: the running trial */
extern struct counts idle_counts;  /* sink, and gen between trials */

void counts_reset(struct counts *c);
/* Makes the bitmap hold at least `words` words (zeroed); false if out of memory. */
bool seen_reserve(struct counts *c, uint64_t words);
/* Receives one burst into `c`; returns the frames received. */
unsigned rx_poll(struct counts *c);
uint64_t bad_total(const struct counts *c);

/* ---- Trials (trial.c) ---------------------------------------------------- */

/* What a gen trial reports besides its receive counters. */
struct trial_result {
	uint64_t tx;
	double tx_secs;
	uint64_t offered;
	bool kept_rate;
};

extern uint16_t trial_id; /* the last trial's id; 0 before the first */

void run_trial(const struct trial_params *t, struct trial_result *r);
/* sink --once: counts into idle_counts for the window `t` gives. */
void run_sink_window(const struct trial_params *t);

/* ---- Commands and replies (serve.c, reply.c) ----------------------------- */

extern FILE *out; /* replies only: stdout itself is redirected to stderr */

/*
 * The agent's loop: receive continuously, and look at stdin (without
 * blocking) about every 100 us. Returns at `quit`, EOF or a signal.
 */
void serve(void);
void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void reply_gen(const struct trial_result *r, const struct counts *c);
void reply_counts(const struct counts *c);
/* A human summary on stderr for --once, in the spirit of pktgen's "Result:". */
void summary(const struct trial_params *t, const struct trial_result *r, const struct counts *c);

/* ---- Process state (main.c) --------------------------------------------- */

extern uint64_t tsc_hz;
extern volatile sig_atomic_t stop;

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
