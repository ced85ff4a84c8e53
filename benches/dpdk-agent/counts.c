/*
 * Receiving and counting frames. A frame counts as bad (and nothing else)
 * when its length, magic, trial id, destination MAC (a forwarder swapped
 * it), sequence number or, with --verify, any payload byte is wrong;
 * otherwise as received, and as unique, a duplicate or reordered by its
 * sequence number, with its latency (now minus its stamp) in the histogram
 * for its first copy.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_ethdev.h>

#include "agent.h"
#include "frame.h"

void counts_reset(struct counts *c)
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

bool seen_reserve(struct counts *c, uint64_t words)
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
			fprintf(stderr, "dpdk-agent: no memory for a bitmap of %" PRIu64 " sequence numbers: frames past it count as bad\n",
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

/* Counts one received frame (see the file's doc). */
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

unsigned rx_poll(struct counts *c)
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

uint64_t bad_total(const struct counts *c)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < BAD_WHY_N; i++)
		n += c->bad_why[i];
	return n;
}
