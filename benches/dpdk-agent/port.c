/* Port 0: its configuration (one queue pair, the largest MTU it takes) and link state. */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>

#include "agent.h"
#include "frame.h"

struct rte_mempool *pool;
struct rte_ether_addr port_mac;
uint32_t max_frame;

bool link_up(void)
{
	struct rte_eth_link l;

	return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

int port_setup(void)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_eth_txconf txconf;
	uint16_t nrx = NB_DESC, ntx = NB_DESC;
	uint32_t overhead, mtu, want = MAX_FRAME - RTE_ETHER_HDR_LEN;
	int rc;

	if ((rc = rte_eth_dev_info_get(port, &info)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: dev_info: %s\n", port, rte_strerror(-rc));
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
		fprintf(stderr, "dpdk-agent: note: port %u (%s) accepts frames up to %u bytes (max_rx_pktlen %u, max_mtu %u)\n",
			port, info.driver_name, max_frame, info.max_rx_pktlen, info.max_mtu);

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = mtu >= info.min_mtu ? mtu : 0;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE; /* one pool, refcnt 1 */
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: configure (mtu %u): %s\n", port, conf.rxmode.mtu, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: descriptors: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port), NULL, pool)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: rx queue: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	txconf = info.default_txconf;
	txconf.offloads = conf.txmode.offloads;
	if ((rc = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port), &txconf)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: tx queue: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	if ((rc = rte_eth_dev_start(port)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: start: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	/* A sink receives frames addressed to another MAC; PMDs that filter would drop them. */
	rc = rte_eth_promiscuous_enable(port);
	if (rc != 0 && rc != -ENOTSUP)
		fprintf(stderr, "dpdk-agent: port %u: promiscuous mode: %s\n", port, rte_strerror(-rc));
	if ((rc = rte_eth_macaddr_get(port, &port_mac)) != 0) {
		fprintf(stderr, "dpdk-agent: port %u: mac: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	return 0;
}
