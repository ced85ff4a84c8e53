/*
 * The frames agents send: the layout shared with the Rust agent
 * (benches/src/bin/vecring-bench/agent/frame.rs), which must not change:
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
 * and the flows (address and port tuples) a generator walks through.
 */
#ifndef VECRING_DPDK_AGENT_FRAME_H
#define VECRING_DPDK_AGENT_FRAME_H

#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

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
_Static_assert(RTE_PKTMBUF_HEADROOM + MAX_FRAME <= UINT16_MAX, "an mbuf's data room is a u16");

/* ramp[k] = (uint8_t)k: the payload of seq s from offset i is ramp + ((s + i) & 255). */
extern uint8_t ramp[256 + MAX_FRAME];

/* Fills `ramp`; once, before any frame is built or checked. */
void ramp_init(void);

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

/* One flow: the addresses and ports of the frames built for it. */
struct flow {
	uint32_t sip, dip;
	uint16_t sport, dport;
};

/* The next tuple: src ip fastest, then dst ip, src port, dst port, wrapping. */
void flow_next(struct flow *f);
/*
 * Writes a frame's first SEQ_OFF bytes (headers, magic, trial id) for a
 * flow: every frame of the flow starts with these bytes, so building a frame
 * is one copy of them plus its seq, stamp and payload.
 */
void build_template(uint8_t *t, const struct flow *f, uint32_t size, uint16_t trial);

/* Builds frame `seq` of `size` bytes in `m` from its flow's template. */
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

#endif
