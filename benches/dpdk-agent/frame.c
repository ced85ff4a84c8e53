/* Building frames: the payload ramp, the flows and each flow's template. */
#include <netinet/in.h>

#include "agent.h"
#include "frame.h"

uint8_t ramp[256 + MAX_FRAME];

void ramp_init(void)
{
	unsigned i;

	for (i = 0; i < sizeof(ramp); i++)
		ramp[i] = (uint8_t)i;
}

void flow_next(struct flow *f)
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

void build_template(uint8_t *t, const struct flow *f, uint32_t size, uint16_t trial)
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
