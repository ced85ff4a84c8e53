/*
 * vecring-fwdgen: a DPDK traffic agent for measuring a virtual Ethernet link.
 *
 * One EAL process owns port 0 (a --vdev: eth_vecring or net_memif) on its
 * main lcore. In `gen` mode it sends numbered, time-stamped UDP/IPv4 frames
 * at a paced rate and counts what comes back (a forwarder swaps the MACs):
 * loss, reordering, duplicates, malformed frames and the round-trip latency
 * histogram. In `sink` mode it only receives and counts (one-way latency:
 * both ends read the same host's CLOCK_MONOTONIC).
 *
 * A harness drives it over stdin/stdout, one command line in and exactly one
 * reply line out; `--once` runs a single trial from the command line instead
 * (by hand, like the kernel's pktgen). The frame layout and the histogram
 * formula are shared with the Rust agent and must not change:
 *
 *   0  Ethernet: dst, src, type 0x0800
 *  14  IPv4: 20 bytes, no options, TTL 64, proto 17, total length = size-14
 *  34  UDP: length = size-34, checksum 0
 *  42  magic   u32 LE 0x47465256
 *  46  trial   u16 LE (the gen's trial id, 1, 2, ...)
 *  48  seq     u64 LE (0 at each trial's first frame)
 *  56  stamp   u64 LE (CLOCK_MONOTONIC ns when the frame's burst was sent)
 *  64  payload to the end: byte at absolute offset i = (uint8_t)(seq + i)
 *
 * The protocol (stdout carries nothing else; every reply is flushed):
 *   start-up           -> ready mac=<port mac> max_frame=<min(9216, max_rx_pktlen)>
 *   gen [size=B] [rate=PPS] [secs=S] [count=N] [burst=N]   (omitted: the options')
 *                      -> ok trial= offered= tx= rx= lost= reordered= dup= bad= tx_secs= kept_rate=
 *                         min= max= hist=IDX:N,...
 *   counts             -> ok rx= unique= reordered= dup= bad= min= max= hist=...
 *   reset [trial=ID]   -> ok (with ID: count that trial's frames only)
 *   stats              -> ok ipackets= opackets= imissed= oerrors=
 *   quit (or EOF)      -> ok, then the port stops and the process exits 0
 *   anything else      -> err <why>
 * `offered` counts the frames given a sequence number. Paced (rate > 0), a
 * frame the full ring refuses is dropped and so lost, as a NIC's full queue
 * would drop it; unthrottled, it is offered again, and offered = tx.
 * `counts` and `reset` are about the frames received outside trials: a sink
 * counts the first trial id it sees after a reset (frames of other trials
 * are stale, so reset it before each of the generator's trials).
 *
 * Build with benches/fwdgen/build.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

/* ---- Frame layout ------------------------------------------------------ */

#define MIN_FRAME 64u
#define MAX_FRAME 9216u /* vecring's largest frame (no FCS) */
#define MAGIC_OFF 42u
#define TRIAL_OFF 46u
#define SEQ_OFF 48u
#define STAMP_OFF 56u
#define PAYLOAD_OFF 64u
#define FRAME_MAGIC 0x47465256u
#define IP_OFF RTE_ETHER_HDR_LEN
#define UDP_OFF (IP_OFF + sizeof(struct rte_ipv4_hdr))

_Static_assert(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) == MAGIC_OFF,
	       "the magic follows the UDP header");
_Static_assert(STAMP_OFF + 8 == MIN_FRAME, "a 64-byte frame ends right after the stamp");

/* ---- Limits and sizes -------------------------------------------------- */

#define HIST_BUCKETS 976u    /* index of 2^64-1: 32 + 58*16 + 15 = 975 */
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

_Static_assert(32 + (63 - 5) * 16 + (31 - 16) + 1 == HIST_BUCKETS, "the bucket of 2^64-1 is the last");
_Static_assert(RTE_PKTMBUF_HEADROOM + MAX_FRAME <= UINT16_MAX, "an mbuf's data room is a u16");

/* ---- Options ------------------------------------------------------------ */

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

/* ---- Counters of received frames --------------------------------------- */

/* Why a frame counts as bad (a breakdown for stderr; the replies give the sum). */
enum bad_why { BAD_LENGTH, BAD_MAGIC, BAD_TRIAL, BAD_DST, BAD_SEQ, BAD_PAYLOAD, BAD_WHY_N };
static const char *const bad_why_name[BAD_WHY_N] = {"length", "magic", "stale-trial", "dst-mac", "seq",
						    "payload"};

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

/* What a gen trial reports besides its receive counters. */
struct trial_result {
	uint64_t tx;
	double tx_secs;
	uint64_t offered;
	bool kept_rate;
};

/* ---- Process state ------------------------------------------------------ */

static const uint16_t port = 0;
static struct options opt;
static struct rte_mempool *pool;
static struct rte_ether_addr port_mac;
static uint32_t max_frame;
static uint16_t trial_id;     /* the last trial's id; 0 before the first */
static uint64_t tsc_hz;
static FILE *out;             /* replies only: stdout itself is redirected to stderr */
static volatile sig_atomic_t stop;

/* ramp[k] = (uint8_t)k: the payload of seq s from offset i is ramp + ((s + i) & 255). */
static uint8_t ramp[256 + MAX_FRAME];

static struct counts trial_counts; /* gen: the running trial */
static struct counts idle_counts;  /* sink, and gen between trials */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_16(v);
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_32(v);
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_64(v);
}

static inline void st64(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_le_64(v);
	memcpy(p, &v, sizeof(v));
}

/* ---- Latency histogram: log-linear, 16 buckets per power of two --------- */

static inline unsigned hist_index(uint64_t v)
{
	unsigned e, m;

	if (v < 32)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	m = (unsigned)(v >> (e - 4));            /* 16..31 */
	return 32u + (e - 5u) * 16u + (m - 16u);
}

/* The smallest value of bucket `idx` (for the human summary). */
static uint64_t bucket_low(unsigned idx)
{
	unsigned g;

	if (idx < 32)
		return idx;
	g = idx - 32;
	return (uint64_t)(g % 16 + 16) << (g / 16 + 1);
}

/* The lower bound of the bucket holding quantile q of the counted frames. */
static uint64_t hist_quantile(const struct counts *c, double q)
{
	uint64_t want = (uint64_t)ceil(q * (double)c->rx), sum = 0;
	unsigned i;

	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		sum += c->hist[i];
		if (sum >= want)
			return bucket_low(i);
	}
	return 0;
}

/* ---- Counting ---------------------------------------------------------- */

static void counts_reset(struct counts *c)
{
	if (c->used)
		memset(c->seen, 0, c->used * sizeof(*c->seen));
	c->used = 0;
	c->rx = c->unique = c->dup = c->reordered = 0;
	memset(c->bad_why, 0, sizeof(c->bad_why));
	c->max_seq = 0;
	c->lat_min = UINT64_MAX;
	c->lat_max = 0;
	memset(c->hist, 0, sizeof(c->hist));
}

/* Makes the bitmap hold at least `words` words (zeroed); false if out of memory. */
static bool seen_reserve(struct counts *c, uint64_t words)
{
	uint64_t n = c->words ? c->words : 1u << 14;
	uint64_t *p;

	if (words <= c->words)
		return true;
	while (n < words)
		n *= 2;
	p = realloc(c->seen, n * sizeof(*p));
	if (p == NULL) {
		if (!c->oom_noted)
			fprintf(stderr, "fwdgen: no memory for a bitmap of %" PRIu64 " sequence numbers: frames past it count as bad\n",
				n * 64);
		c->oom_noted = true;
		return false;
	}
	memset(p + c->words, 0, (n - c->words) * sizeof(*p));
	c->seen = p;
	c->words = n;
	return true;
}

/* Every payload byte of a (possibly chained) frame against its sequence number. */
static bool payload_ok(const struct rte_mbuf *m, uint64_t seq)
{
	uint32_t len = m->pkt_len; /* at most MAX_FRAME: the ramp's reach */
	uint32_t off = 0;          /* absolute offset of this segment's first byte */

	for (; m != NULL; m = m->next) {
		const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
		uint32_t n = m->data_len, from = off < PAYLOAD_OFF ? PAYLOAD_OFF - off : 0;

		if (n > len - off)
			return false; /* segments longer than the frame */
		if (from < n && memcmp(d + from, ramp + ((seq + off + from) & 255), n - from) != 0)
			return false;
		off += n;
	}
	return true;
}

/* Counts one received frame (see "Counting" in the file's doc). */
#define BAD(c, why)                    \
	do {                           \
		(c)->bad_why[why]++;   \
		return;                \
	} while (0)
static inline void count_frame(struct counts *c, const struct rte_mbuf *m, uint64_t now)
{
	uint8_t head[PAYLOAD_OFF];
	const uint8_t *p;
	uint32_t len = m->pkt_len;
	uint64_t seq, stamp, lat, w, bit;
	uint16_t trial;
	unsigned idx;

	if (unlikely(len < MIN_FRAME || len > MAX_FRAME))
		BAD(c, BAD_LENGTH);
	if (likely(m->data_len >= PAYLOAD_OFF))
		p = rte_pktmbuf_mtod(m, const uint8_t *);
	else if ((p = rte_pktmbuf_read(m, 0, PAYLOAD_OFF, head)) == NULL)
		BAD(c, BAD_LENGTH);
	if (unlikely(ld32(p + MAGIC_OFF) != FRAME_MAGIC))
		BAD(c, BAD_MAGIC);
	trial = ld16(p + TRIAL_OFF);
	if (unlikely(trial != c->trial)) {
		if (!c->adopt)
			BAD(c, BAD_TRIAL);
		c->trial = trial;
		c->adopt = false;
	}
	if (unlikely(len != (uint32_t)rte_be_to_cpu_16(((const struct rte_ipv4_hdr *)(p + IP_OFF))->total_length) +
				   RTE_ETHER_HDR_LEN ||
		     (c->size != 0 && len != c->size)))
		BAD(c, BAD_LENGTH);
	if (c->check_dst && !rte_is_same_ether_addr((const struct rte_ether_addr *)p, &c->mac))
		BAD(c, BAD_DST);
	seq = ld64(p + SEQ_OFF);
	stamp = ld64(p + STAMP_OFF);
	if (unlikely(seq >= c->seq_limit))
		BAD(c, BAD_SEQ);
	if (c->verify && !payload_ok(m, seq))
		BAD(c, BAD_PAYLOAD);
	w = seq >> 6;
	if (unlikely(w >= c->words) && !seen_reserve(c, w + 1))
		BAD(c, BAD_SEQ);

	c->rx++;
	bit = 1ull << (seq & 63);
	if (c->seen[w] & bit) {
		c->dup++;
	} else {
		c->seen[w] |= bit;
		if (w >= c->used)
			c->used = w + 1;
		if (c->unique != 0 && seq < c->max_seq)
			c->reordered++;
		else
			c->max_seq = seq;
		c->unique++;
		/* Latency of each frame's first copy only, as the Rust agent. */
		lat = now > stamp ? now - stamp : 0;
		idx = hist_index(lat);
		c->hist[idx]++;
		if (lat < c->lat_min)
			c->lat_min = lat;
		if (lat > c->lat_max)
			c->lat_max = lat;
	}
}
#undef BAD

/* Receives one burst into `c`; returns the frames received. */
static inline unsigned rx_poll(struct counts *c)
{
	struct rte_mbuf *m[RX_BURST];
	uint16_t n = rte_eth_rx_burst(port, 0, m, RX_BURST);
	uint64_t now;
	unsigned i;

	if (n == 0)
		return 0;
	now = mono_ns();
	for (i = 0; i < n; i++)
		count_frame(c, m[i], now);
	rte_pktmbuf_free_bulk(m, n);
	return n;
}

/* ---- Frame building ------------------------------------------------------ */

struct flow {
	uint32_t sip, dip;
	uint16_t sport, dport;
};

/* The next tuple: src ip fastest, then dst ip, src port, dst port, wrapping. */
static void flow_next(struct flow *f)
{
	if (f->sip != opt.sip_hi) {
		f->sip++;
		return;
	}
	f->sip = opt.sip_lo;
	if (f->dip != opt.dip_hi) {
		f->dip++;
		return;
	}
	f->dip = opt.dip_lo;
	if (f->sport != opt.sport_hi) {
		f->sport++;
		return;
	}
	f->sport = opt.sport_lo;
	f->dport = f->dport != opt.dport_hi ? (uint16_t)(f->dport + 1) : opt.dport_lo;
}

/*
 * Writes a frame's first SEQ_OFF bytes (headers, magic, trial id) for a
 * flow: every frame of the flow starts with these bytes, so building a frame
 * is one copy of them plus its seq, stamp and payload.
 */
static void build_template(uint8_t *t, const struct flow *f, uint32_t size, uint16_t trial)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)t;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(t + IP_OFF);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(t + UDP_OFF);
	uint32_t magic = rte_cpu_to_le_32(FRAME_MAGIC);
	uint16_t tr = rte_cpu_to_le_16(trial);

	memset(t, 0, SEQ_OFF);
	rte_ether_addr_copy(&opt.dst_mac, &eh->dst_addr);
	rte_ether_addr_copy(&opt.src_mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(size - RTE_ETHER_HDR_LEN));
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(f->sip);
	ip->dst_addr = rte_cpu_to_be_32(f->dip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(f->sport);
	udp->dst_port = rte_cpu_to_be_16(f->dport);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(size - UDP_OFF));
	memcpy(t + MAGIC_OFF, &magic, sizeof(magic));
	memcpy(t + TRIAL_OFF, &tr, sizeof(tr));
}

static inline void fill_frame(struct rte_mbuf *m, const uint8_t *tmpl, uint32_t size, uint64_t seq, uint64_t stamp)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

	memcpy(d, tmpl, SEQ_OFF);
	st64(d + SEQ_OFF, seq);
	st64(d + STAMP_OFF, stamp);
	if (size > PAYLOAD_OFF)
		memcpy(d + PAYLOAD_OFF, ramp + ((seq + PAYLOAD_OFF) & 255), size - PAYLOAD_OFF);
	m->data_len = (uint16_t)size;
	m->pkt_len = size;
}

/* ---- Port ---------------------------------------------------------------- */

static bool link_up(void)
{
	struct rte_eth_link l;

	return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

/* Configures and starts port 0 with one queue pair; sets max_frame and port_mac. */
static int port_setup(void)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_eth_txconf txconf;
	uint16_t nrx = NB_DESC, ntx = NB_DESC;
	uint32_t overhead, mtu, want = MAX_FRAME - RTE_ETHER_HDR_LEN;
	int rc;

	if ((rc = rte_eth_dev_info_get(port, &info)) != 0) {
		fprintf(stderr, "fwdgen: port %u: dev_info: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	/* ethdev's rule: a frame of `mtu` payload bytes takes mtu + overhead <= max_rx_pktlen. */
	overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu ?
			   info.max_rx_pktlen - info.max_mtu :
			   RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	mtu = RTE_MIN(want, (uint32_t)info.max_mtu);
	if (info.max_rx_pktlen < mtu + overhead)
		mtu = info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0;
	max_frame = RTE_MIN(MAX_FRAME, info.max_rx_pktlen);
	if (max_frame < MAX_FRAME)
		fprintf(stderr, "fwdgen: note: port %u (%s) accepts frames up to %u bytes (max_rx_pktlen %u, max_mtu %u)\n",
			port, info.driver_name, max_frame, info.max_rx_pktlen, info.max_mtu);

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = mtu >= info.min_mtu ? mtu : 0;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE; /* one pool, refcnt 1 */
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) != 0) {
		fprintf(stderr, "fwdgen: port %u: configure (mtu %u): %s\n", port, conf.rxmode.mtu, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx)) != 0) {
		fprintf(stderr, "fwdgen: port %u: descriptors: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port), NULL, pool)) != 0) {
		fprintf(stderr, "fwdgen: port %u: rx queue: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	txconf = info.default_txconf;
	txconf.offloads = conf.txmode.offloads;
	if ((rc = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port), &txconf)) != 0) {
		fprintf(stderr, "fwdgen: port %u: tx queue: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_dev_start(port)) != 0) {
		fprintf(stderr, "fwdgen: port %u: start: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	/* A sink receives frames addressed to another MAC; PMDs that filter would drop them. */
	rc = rte_eth_promiscuous_enable(port);
	if (rc != 0 && rc != -ENOTSUP)
		fprintf(stderr, "fwdgen: port %u: promiscuous mode: %s\n", port, rte_strerror(-rc));
	if ((rc = rte_eth_macaddr_get(port, &port_mac)) != 0) {
		fprintf(stderr, "fwdgen: port %u: mac: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	return 0;
}

/* ---- Parsing ----------------------------------------------------------- */

/* A decimal number in 0..max with nothing around it. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x > max)
		return false;
	*v = x;
	return true;
}

static bool parse_ip(const char *s, uint32_t *v)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*v = ntohl(a.s_addr);
	return true;
}

/* "A" or "A-B" with A <= B: IPv4 addresses (host order) or ports. */
static bool parse_range(const char *s, bool ip, uint32_t *lo, uint32_t *hi)
{
	char buf[64], *dash;
	uint64_t v;

	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash != NULL)
		*dash++ = '\0';
	if (ip) {
		if (!parse_ip(buf, lo) || !parse_ip(dash ? dash : buf, hi))
			return false;
	} else {
		if (!parse_u64(buf, UINT16_MAX, &v))
			return false;
		*lo = (uint32_t)v;
		if (dash != NULL && !parse_u64(dash, UINT16_MAX, &v))
			return false;
		*hi = (uint32_t)v;
	}
	return *lo <= *hi;
}

static bool parse_mac(const char *s, struct rte_ether_addr *a)
{
	unsigned b[6];
	int n = 0, i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &n) != 6 ||
	    s[n] != '\0')
		return false;
	for (i = 0; i < 6; i++)
		a->addr_bytes[i] = (uint8_t)b[i];
	return true;
}

/*
 * Sets one trial parameter by name (size, rate, secs, count, burst).
 * Returns 1 when set, 0 when `key` is no trial parameter, -1 (with a message
 * in `err`) when the value is bad.
 */
static int set_trial_param(struct trial_params *t, const char *key, const char *val, char *err, size_t errlen)
{
	const char *range;
	uint64_t v;
	char *end;
	double d;

	if (strcmp(key, "size") == 0) {
		range = "64..9216";
		if (!parse_u64(val, UINT32_MAX, &v) || v < MIN_FRAME || v > MAX_FRAME)
			goto bad;
		t->size = (uint32_t)v;
	} else if (strcmp(key, "rate") == 0) {
		range = "0..1000000000 frames/s";
		if (!parse_u64(val, MAX_RATE, &t->rate))
			goto bad;
	} else if (strcmp(key, "secs") == 0) {
		range = "0..3600 seconds";
		errno = 0;
		d = strtod(val, &end);
		if (*val == '\0' || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || d > MAX_SECS)
			goto bad;
		t->secs = d;
	} else if (strcmp(key, "count") == 0) {
		range = "0..4294967296";
		if (!parse_u64(val, SEQ_LIMIT, &t->count))
			goto bad;
	} else if (strcmp(key, "burst") == 0) {
		range = "1..256";
		if (!parse_u64(val, MAX_BURST, &v) || v < 1)
			goto bad;
		t->burst = (uint32_t)v;
	} else {
		return 0;
	}
	return 1;
bad:
	snprintf(err, errlen, "%s must be %s, not '%s'", key, range, val);
	return -1;
}

static bool trial_params_ok(const struct trial_params *t, char *err, size_t errlen)
{
	if (t->secs == 0 && t->count == 0) {
		snprintf(err, errlen, "secs=0 needs a count");
		return false;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vecring-fwdgen [EAL args] -- --mode gen|sink [options]\n"
		"  --size B          frame bytes incl. Ethernet header, no FCS (64..9216, default 64)\n"
		"  --rate PPS        offered frames/s, 0 = as fast as possible (default 0)\n"
		"  --secs S          send window in seconds (default 2; 0 = until --count)\n"
		"  --count N         frames per trial, 0 = no limit (default 0)\n"
		"  --burst N         frames per tx burst (1..256, default 32)\n"
		"  --clone N         frames per flow tuple (default 1)\n"
		"  --src-ip A[-B], --dst-ip A[-B]       (default 10.0.0.1, 10.0.0.2)\n"
		"  --src-port N[-M], --dst-port N[-M]   (default 1024, 1024)\n"
		"  --src-mac MAC     (default: the port's), --dst-mac MAC (default 02:00:00:00:00:02)\n"
		"  --verify          receivers check every payload byte\n"
		"  --once            run one trial, print its result line, exit\n"
		"Without --once, commands come on stdin: gen, counts, reset, stats, quit.\n");
}

static void die_usage(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "vecring-fwdgen: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n(see --help)\n");
	exit(2);
}

/* Parses the application's options (the arguments after "--"); exits 2 on a bad one. */
static void parse_options(int argc, char **argv)
{
	static const struct rte_ether_addr default_dst = {{0x02, 0, 0, 0, 0, 0x02}};
	char err[256];
	int i;

	memset(&opt, 0, sizeof(opt));
	opt.trial = (struct trial_params){.size = 64, .rate = 0, .secs = 2.0, .count = 0, .burst = 32};
	opt.clone = 1;
	opt.sip_lo = opt.sip_hi = RTE_IPV4(10, 0, 0, 1);
	opt.dip_lo = opt.dip_hi = RTE_IPV4(10, 0, 0, 2);
	opt.sport_lo = opt.sport_hi = opt.dport_lo = opt.dport_hi = 1024;
	opt.dst_mac = default_dst;

	for (i = 0; i < argc; i++) {
		char name[64];
		const char *a = argv[i], *eq, *val = NULL;
		uint32_t lo, hi;
		int r;

		if (strncmp(a, "--", 2) != 0 || strlen(a) >= sizeof(name) + 2)
			die_usage("unexpected argument '%s'%s", a, "");
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
		if (strcmp(name, "help") == 0) {
			usage(stderr);
			exit(0);
		}
		if (strcmp(name, "verify") == 0 || strcmp(name, "once") == 0) {
			if (eq)
				die_usage("--%s takes no value%s", name, "");
			*(strcmp(name, "verify") == 0 ? &opt.verify : &opt.once) = true;
			continue;
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			die_usage("--%s needs a value%s", name, "");

		r = set_trial_param(&opt.trial, name, val, err, sizeof(err));
		if (r < 0)
			die_usage("--%s", err, "");
		if (r > 0)
			continue;
		if (strcmp(name, "mode") == 0) {
			if (strcmp(val, "gen") == 0)
				opt.mode = MODE_GEN;
			else if (strcmp(val, "sink") == 0)
				opt.mode = MODE_SINK;
			else
				die_usage("--mode must be gen or sink, not '%s'%s", val, "");
		} else if (strcmp(name, "clone") == 0) {
			if (!parse_u64(val, UINT32_MAX, &opt.clone) || opt.clone < 1)
				die_usage("bad --clone '%s' (1..2^32-1)%s", val, "");
		} else if (strcmp(name, "src-ip") == 0 || strcmp(name, "dst-ip") == 0) {
			if (!parse_range(val, true, &lo, &hi))
				die_usage("bad --%s '%s' (A.B.C.D or A.B.C.D-A.B.C.D, low first)", name, val);
			if (name[0] == 's') {
				opt.sip_lo = lo;
				opt.sip_hi = hi;
			} else {
				opt.dip_lo = lo;
				opt.dip_hi = hi;
			}
		} else if (strcmp(name, "src-port") == 0 || strcmp(name, "dst-port") == 0) {
			if (!parse_range(val, false, &lo, &hi))
				die_usage("bad --%s '%s' (N or N-M in 0..65535, low first)", name, val);
			if (name[0] == 's') {
				opt.sport_lo = (uint16_t)lo;
				opt.sport_hi = (uint16_t)hi;
			} else {
				opt.dport_lo = (uint16_t)lo;
				opt.dport_hi = (uint16_t)hi;
			}
		} else if (strcmp(name, "src-mac") == 0 || strcmp(name, "dst-mac") == 0) {
			if (!parse_mac(val, name[0] == 's' ? &opt.src_mac : &opt.dst_mac))
				die_usage("bad --%s '%s' (xx:xx:xx:xx:xx:xx)", name, val);
			if (name[0] == 's')
				opt.src_mac_set = true;
		} else {
			die_usage("unknown option '--%s'%s", name, "");
		}
	}
	if (opt.mode == MODE_NONE)
		die_usage("--mode gen|sink is required%s%s", "", "");
	if (!trial_params_ok(&opt.trial, err, sizeof(err)))
		die_usage("%s%s", err, "");
}

/* ---- Replies -------------------------------------------------------------- */

static uint64_t bad_total(const struct counts *c)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < BAD_WHY_N; i++)
		n += c->bad_why[i];
	return n;
}

/* On stderr, why frames were bad (the replies carry only the sum). */
static void note_bad(const char *what, const struct counts *c)
{
	unsigned i;

	if (bad_total(c) == 0)
		return;
	fprintf(stderr, "fwdgen: %s: bad frames:", what);
	for (i = 0; i < BAD_WHY_N; i++)
		if (c->bad_why[i])
			fprintf(stderr, " %s %" PRIu64, bad_why_name[i], c->bad_why[i]);
	fputc('\n', stderr);
}

static void print_lat_hist(const struct counts *c)
{
	unsigned i;
	bool first = true;

	fprintf(out, " min=%" PRIu64 " max=%" PRIu64 " hist=", c->rx ? c->lat_min : 0, c->lat_max);
	for (i = 0; i < HIST_BUCKETS; i++) {
		if (c->hist[i] == 0)
			continue;
		fprintf(out, "%s%u:%" PRIu64, first ? "" : ",", i, c->hist[i]);
		first = false;
	}
	fputc('\n', out);
	fflush(out);
}

static void reply_gen(const struct trial_result *r, const struct counts *c)
{
	fprintf(out,
		"ok trial=%u offered=%" PRIu64 " tx=%" PRIu64 " rx=%" PRIu64 " lost=%" PRIu64 " reordered=%" PRIu64 " dup=%" PRIu64
		" bad=%" PRIu64 " tx_secs=%.6f kept_rate=%d",
		(unsigned)c->trial, r->offered, r->tx, c->rx, r->offered > c->unique ? r->offered - c->unique : 0, c->reordered, c->dup,
		bad_total(c), r->tx_secs,
		r->kept_rate ? 1 : 0);
	print_lat_hist(c);
	note_bad("gen", c);
}

static void reply_counts(const struct counts *c)
{
	fprintf(out, "ok rx=%" PRIu64 " unique=%" PRIu64 " reordered=%" PRIu64 " dup=%" PRIu64 " bad=%" PRIu64, c->rx,
		c->unique, c->reordered, c->dup, bad_total(c));
	print_lat_hist(c);
	note_bad("counts", c);
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

/* A human summary on stderr for --once, in the spirit of pktgen's "Result:". */
static void summary(const struct trial_params *t, const struct trial_result *r, const struct counts *c)
{
	double pps = r && r->tx_secs > 0 ? (double)r->tx / r->tx_secs : 0;

	if (r != NULL)
		fprintf(stderr, "Result: %s: %" PRIu64 " frames of %u bytes in %.6f s: %.0f pps %.1f Mb/s\n",
			r->kept_rate ? "OK" : "rate not kept", r->tx, t->size, r->tx_secs, pps,
			pps * t->size * 8 / 1e6);
	fprintf(stderr, "  rx %" PRIu64 " unique %" PRIu64 " lost %" PRIu64 " reordered %" PRIu64 " dup %" PRIu64
			" bad %" PRIu64 "\n",
		c->rx, c->unique, r && r->tx > c->unique ? r->tx - c->unique : 0, c->reordered, c->dup, bad_total(c));
	if (c->rx)
		fprintf(stderr, "  latency ns (%s): min %" PRIu64 " p50 >=%" PRIu64 " p99 >=%" PRIu64 " max %" PRIu64 "\n",
			r ? "round trip" : "one way", c->lat_min, hist_quantile(c, 0.5), hist_quantile(c, 0.99),
			c->lat_max);
}

/* ---- gen: one trial --------------------------------------------------- */

static void run_trial(const struct trial_params *t, struct trial_result *r)
{
	struct counts *c = &trial_counts;
	struct rte_mbuf *pend[MAX_BURST];
	uint8_t tmpl[SEQ_OFF];
	struct flow flow = {opt.sip_lo, opt.dip_lo, opt.sport_lo, opt.dport_lo};
	const bool multi_flow = opt.sip_lo != opt.sip_hi || opt.dip_lo != opt.dip_hi || opt.sport_lo != opt.sport_hi ||
				opt.dport_lo != opt.dport_hi;
	/*
	 * Frames to build: `count`, and at a rate no more than the window
	 * holds (a burst due just before the window's end would overshoot).
	 */
	const uint64_t count = t->count ? t->count : SEQ_LIMIT;
	const uint64_t limit = t->rate && t->secs > 0 ?
				       RTE_MIN(count, (uint64_t)ceil((double)t->rate * t->secs)) :
				       count;
	const double tsc_per_frame = t->rate ? (double)tsc_hz / (double)t->rate : 0;
	uint64_t clone_left = opt.clone, built = 0, tx = 0, expect;
	uint64_t t0, t_end, t_stop, due, now, next_link, last_rx, drain_start, prev, gap = 0;
	unsigned n_pend = 0;
	bool link_ok, alloc_noted = false;

	trial_id = (uint16_t)(trial_id + 1) ? (uint16_t)(trial_id + 1) : 1;
	counts_reset(c);
	c->trial = trial_id;
	c->adopt = false;
	c->size = t->size;
	c->check_dst = true;
	c->seq_limit = 0;
	/*
	 * Size the bitmap before sending, so it is not grown while frames
	 * arrive: for the frames the trial asks for, or (unthrottled) what 100
	 * Mpps would send; up to SEQ_RESERVE_MAX, past which it grows lazily.
	 */
	expect = t->count ? t->count : (uint64_t)((t->rate ? (double)t->rate * 1.01 : 1e8) * t->secs);
	seen_reserve(c, (RTE_MIN(expect, SEQ_RESERVE_MAX) + 63) / 64);
	build_template(tmpl, &flow, t->size, trial_id);
	if (t->size > max_frame)
		fprintf(stderr, "fwdgen: note: %u-byte frames exceed the port's max_frame %u\n", t->size, max_frame);

	link_ok = link_up();
	t0 = rte_rdtsc();
	/* A count-only trial gives up after an hour, as the Rust agent. */
	t_end = t0 + (uint64_t)((t->secs > 0 ? t->secs : MAX_SECS) * (double)tsc_hz);
	next_link = t0 + tsc_hz / 100;
	due = t0;
	prev = t0;
	for (;;) {
		now = rte_rdtsc();
		/* The loop's longest pause (preemption): it shows in latency and pacing. */
		if (now - prev > gap)
			gap = now - prev;
		prev = now;
		if (now >= t_end || (t->rate ? built >= limit : tx >= count) || stop)
			break;
		if (n_pend > 0 || (built < limit && now >= due)) {
			unsigned old = n_pend, k, i, sent;
			uint64_t stamp = mono_ns();

			if (built < limit && now >= due && n_pend < t->burst) {
				k = (unsigned)RTE_MIN((uint64_t)(t->burst - n_pend), limit - built);
				/* Paced: only the frames due by now, as the Rust agent. */
				if (t->rate) {
					uint64_t due_now = (uint64_t)((double)(now - t0) / tsc_per_frame) + 1;

					if (due_now > built && due_now - built < k)
						k = (unsigned)(due_now - built);
				}
				if (rte_pktmbuf_alloc_bulk(pool, pend + n_pend, k) == 0) {
					for (i = 0; i < k; i++) {
						if (multi_flow) {
							if (clone_left == 0) {
								flow_next(&flow);
								build_template(tmpl, &flow, t->size, trial_id);
								clone_left = opt.clone;
							}
							clone_left--;
						}
						fill_frame(pend[n_pend + i], tmpl, t->size, built + i, stamp);
					}
					n_pend += k;
					built += k;
					c->seq_limit = built;
					due = t0 + (uint64_t)((double)built * tsc_per_frame);
				} else if (!alloc_noted) {
					fprintf(stderr, "fwdgen: mbuf pool empty; retrying\n");
					alloc_noted = true;
				}
			}
			/* Frames the PMD refused before go again, stamped with this burst's time. */
			for (i = 0; i < old; i++)
				st64(rte_pktmbuf_mtod(pend[i], uint8_t *) + STAMP_OFF, stamp);
			sent = rte_eth_tx_burst(port, 0, pend, (uint16_t)n_pend);
			tx += sent;
			n_pend -= sent;
			if (n_pend > 0 && t->rate) {
				/*
				 * Paced: a frame the full ring refuses is lost, as on
				 * a NIC whose queue is full; it keeps its sequence
				 * number, so the receiver sees the gap.
				 */
				rte_pktmbuf_free_bulk(pend + sent, n_pend);
				n_pend = 0;
			} else if (n_pend > 0 && sent > 0) {
				memmove(pend, pend + sent, n_pend * sizeof(*pend));
			}
		}
		rx_poll(c);
		if (now >= next_link) {
			link_ok = link_ok && link_up();
			next_link = now + tsc_hz / 100;
		}
	}
	t_stop = now;
	/* Frames built but never accepted were not sent: free them, count nothing. */
	if (n_pend > 0)
		rte_pktmbuf_free_bulk(pend, n_pend);
	link_ok = link_ok && link_up();

	/* The drain: whatever is still on its way back. */
	drain_start = last_rx = rte_rdtsc();
	while (!stop) {
		now = rte_rdtsc();
		if (rx_poll(c) > 0)
			last_rx = now;
		if (now - last_rx >= DRAIN_QUIET_NS * tsc_hz / 1000000000ull ||
		    now - drain_start >= DRAIN_MAX_NS * tsc_hz / 1000000000ull)
			break;
	}

	if (gap > tsc_hz / 1000)
		fprintf(stderr, "fwdgen: note: the send loop was held up for %.1f ms once\n",
			(double)gap * 1e3 / (double)tsc_hz);
	r->tx = tx;
	/* Paced: every frame given a sequence number; unthrottled: those sent. */
	r->offered = t->rate ? built : tx;
	r->tx_secs = (double)(t_stop - t0) / (double)tsc_hz;
	r->kept_rate = link_ok && (t->rate == 0 || built >= limit || (double)built >= 0.999 * (double)t->rate * t->secs);
}

/* ---- sink --once ------------------------------------------------------- */

static void run_sink_window(const struct trial_params *t)
{
	uint64_t t0 = rte_rdtsc();
	uint64_t t_end = t->secs > 0 ? t0 + (uint64_t)(t->secs * (double)tsc_hz) : UINT64_MAX;

	while (!stop && rte_rdtsc() < t_end && (t->count == 0 || idle_counts.rx < t->count))
		rx_poll(&idle_counts);
}

/* ---- stdin commands ------------------------------------------------------- */

/* Handles one command line; returns false on `quit`. */
static bool handle_command(char *line)
{
	char *save = NULL, *verb, *tok;
	char err[256];

	verb = strtok_r(line, " \t\r", &save);
	if (verb == NULL) {
		reply("err empty command");
		return true;
	}
	if (strcmp(verb, "gen") == 0) {
		struct trial_params t = opt.trial;
		struct trial_result r;

		if (opt.mode != MODE_GEN) {
			reply("err gen needs --mode gen");
			return true;
		}
		while ((tok = strtok_r(NULL, " \t\r", &save)) != NULL) {
			char *eq = strchr(tok, '=');

			if (eq == NULL) {
				reply("err gen: expected key=value, got '%s'", tok);
				return true;
			}
			*eq = '\0';
			switch (set_trial_param(&t, tok, eq + 1, err, sizeof(err))) {
			case 0:
				reply("err gen: unknown key '%s' (size, rate, secs, count, burst)", tok);
				return true;
			case -1:
				reply("err gen: %s", err);
				return true;
			}
		}
		if (!trial_params_ok(&t, err, sizeof(err))) {
			reply("err gen: %s", err);
			return true;
		}
		run_trial(&t, &r);
		reply_gen(&r, &trial_counts);
		return true;
	}
	tok = strtok_r(NULL, " \t\r", &save);
	if (strcmp(verb, "reset") == 0 && tok != NULL) {
		/* reset trial=ID: count that trial's frames only. */
		char *end = NULL;
		unsigned long id;

		errno = 0;
		id = strncmp(tok, "trial=", 6) == 0 ? strtoul(tok + 6, &end, 10) : 0;
		if (end == NULL || *end != '\0' || errno != 0 || id == 0 || id > UINT16_MAX ||
		    strtok_r(NULL, " \t\r", &save) != NULL) {
			reply("err %s: reset takes trial=ID, ID 1..=65535", tok);
			return true;
		}
		counts_reset(&idle_counts);
		idle_counts.trial = (uint16_t)id;
		idle_counts.adopt = false;
		reply("ok");
		return true;
	}
	if (strcmp(verb, "counts") == 0 || strcmp(verb, "reset") == 0 || strcmp(verb, "stats") == 0 ||
	    strcmp(verb, "quit") == 0) {
		if (tok != NULL) {
			reply("err %s takes no arguments", verb);
			return true;
		}
	} else {
		reply("err unknown command: %s", verb);
		return true;
	}
	if (strcmp(verb, "counts") == 0) {
		reply_counts(&idle_counts);
	} else if (strcmp(verb, "reset") == 0) {
		counts_reset(&idle_counts);
		idle_counts.adopt = true;
		reply("ok");
	} else if (strcmp(verb, "stats") == 0) {
		struct rte_eth_stats s;
		int rc = rte_eth_stats_get(port, &s);

		if (rc != 0)
			reply("err stats: %s", rte_strerror(-rc));
		else
			reply("ok ipackets=%" PRIu64 " opackets=%" PRIu64 " imissed=%" PRIu64 " oerrors=%" PRIu64,
			      s.ipackets, s.opackets, s.imissed, s.oerrors);
	} else {
		reply("ok");
		return false;
	}
	return true;
}

/*
 * The agent's loop: receive continuously, and look at stdin (without
 * blocking) about every 100 us. Returns at `quit`, EOF or a signal.
 */
static void serve(void)
{
	static char line[LINE_MAX_LEN + 1];
	size_t len = 0;
	bool skipping = false; /* inside an overlong line */
	const uint64_t check_every = tsc_hz / 10000;
	uint64_t next_check = 0;

	while (!stop) {
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		uint64_t now;
		ssize_t n;
		char *nl;

		rx_poll(&idle_counts);
		now = rte_rdtsc();
		if (now < next_check)
			continue;
		next_check = now + check_every;
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		n = read(STDIN_FILENO, line + len, LINE_MAX_LEN - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return; /* EOF (or stdin unusable): as quit */
		len += (size_t)n;
		while ((nl = memchr(line, '\n', len)) != NULL) {
			size_t used = (size_t)(nl - line) + 1;

			*nl = '\0';
			if (skipping)
				skipping = false;
			else if (!handle_command(line))
				return;
			memmove(line, nl + 1, len - used);
			len -= used;
		}
		if (len == LINE_MAX_LEN) {
			if (!skipping)
				reply("err command longer than %u bytes", LINE_MAX_LEN);
			skipping = true;
			len = 0;
		}
	}
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	int eal_argc, i, reply_fd, rc;
	unsigned waited;

	/*
	 * stdout carries replies only: keep it as `out` and point fd 1 at
	 * stderr, so nothing EAL or a driver prints can land among the replies.
	 */
	reply_fd = dup(STDOUT_FILENO);
	if (reply_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || (out = fdopen(reply_fd, "w")) == NULL) {
		perror("vecring-fwdgen: stdout");
		return 1;
	}
	setvbuf(out, NULL, _IOLBF, 0);

	/* The application's options are checked before EAL takes any resource. */
	for (eal_argc = 0; eal_argc < argc && strcmp(argv[eal_argc], "--") != 0; eal_argc++)
		;
	parse_options(eal_argc < argc ? argc - eal_argc - 1 : 0, argv + RTE_MIN(eal_argc + 1, argc));

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < (int)sizeof(ramp); i++)
		ramp[i] = (uint8_t)i;

	if (rte_eal_init(eal_argc, argv) < 0) {
		fprintf(stderr, "vecring-fwdgen: EAL init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	tsc_hz = rte_get_tsc_hz();
	rc = 1;
	if (!rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "vecring-fwdgen: no port 0 (give a --vdev)\n");
		goto out_eal;
	}
	/* One pool for both directions, its mbufs big enough for any frame in one segment. */
	pool = rte_pktmbuf_pool_create("fwdgen", NB_MBUFS, MBUF_CACHE, 0, RTE_PKTMBUF_HEADROOM + MAX_FRAME,
				       rte_eth_dev_socket_id(port) >= 0 ? rte_eth_dev_socket_id(port) : (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "vecring-fwdgen: mbuf pool: %s\n", rte_strerror(rte_errno));
		goto out_eal;
	}
	if (port_setup() != 0)
		goto out_port;
	if (!opt.src_mac_set)
		opt.src_mac = port_mac;

	for (waited = 0; !link_up() && !stop; waited++) {
		if (waited == LINK_WAIT_S * 100) {
			fprintf(stderr, "vecring-fwdgen: port %u: link still down after %u s\n", port, LINK_WAIT_S);
			goto out_port;
		}
		rte_delay_us_sleep(10000);
	}
	if (stop)
		goto out_port;

	idle_counts.adopt = true;
	idle_counts.check_dst = opt.mode == MODE_GEN;
	idle_counts.verify = trial_counts.verify = opt.verify;
	idle_counts.mac = trial_counts.mac = opt.src_mac;
	idle_counts.seq_limit = SEQ_LIMIT;
	counts_reset(&idle_counts);
	counts_reset(&trial_counts);

	if (opt.once) {
		if (opt.mode == MODE_GEN) {
			struct trial_result r;

			run_trial(&opt.trial, &r);
			reply_gen(&r, &trial_counts);
			summary(&opt.trial, &r, &trial_counts);
		} else {
			run_sink_window(&opt.trial);
			reply_counts(&idle_counts);
			summary(&opt.trial, NULL, &idle_counts);
		}
	} else {
		const uint8_t *a = port_mac.addr_bytes;

		reply("ready mac=%02x:%02x:%02x:%02x:%02x:%02x max_frame=%u", a[0], a[1], a[2], a[3], a[4], a[5],
		      max_frame);
		serve();
	}
	rc = 0;
out_port:
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
out_eal:
	rte_eal_cleanup();
	free(trial_counts.seen);
	free(idle_counts.seen);
	return rc;
}
