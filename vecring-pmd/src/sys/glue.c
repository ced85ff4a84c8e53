/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * The only C of librte_net_vecring: what Rust cannot express.
 *  - driver registration (RTE_PMD_REGISTER_* run as ELF constructors),
 *  - the log type,
 *  - out-of-line wrappers of DPDK's `static inline` helpers, called at most
 *    once per burst or once per control operation,
 *  - build-time checks that the constants mirrored in src/sys/ffi.rs still match
 *    DPDK's headers.
 * Everything else (devargs, ethdev ops, the data path) is in Rust.
 */
#include <string.h>

#include "wrapper.h"

RTE_LOG_REGISTER(vecring_logtype, pmd.net.vecring, NOTICE);

void
vecring_log(uint32_t level, const char *msg)
{
	rte_log(level, vecring_logtype, "VECRING: %s\n", msg);
}

int
vecring_errno(void)
{
	return rte_errno;
}

const char *
vecring_vdev_name(const struct rte_vdev_device *dev)
{
	return rte_vdev_device_name(dev);
}

const char *
vecring_vdev_args(const struct rte_vdev_device *dev)
{
	const char *args = rte_vdev_device_args(dev);

	return args != NULL ? args : "";
}

struct rte_eth_dev *
vecring_eth_vdev_allocate(struct rte_vdev_device *dev, size_t private_data_size)
{
	return rte_eth_vdev_allocate(dev, private_data_size);
}

int
vecring_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs,
			   unsigned int count)
{
	return rte_pktmbuf_alloc_bulk(pool, mbufs, count);
}

int
vecring_rx_mbufs_alloc(struct rte_mempool *pool, struct rte_mbuf **mbufs,
		       unsigned int count, uint16_t port)
{
	unsigned int i;

	if (rte_mempool_get_bulk(pool, (void **)mbufs, count) != 0)
		return -ENOENT;
	for (i = 0; i < count; i++) {
		struct rte_mbuf *m = mbufs[i];

		/* A free mbuf already has refcnt 1, nb_segs 1 and next NULL
		 * (the mbuf library's invariant, checked by debug builds). */
		__rte_mbuf_raw_sanity_check(m);
		m->port = port;
		m->ol_flags &= RTE_MBUF_F_EXTERNAL;
		m->packet_type = 0;
		m->vlan_tci = 0;
		m->vlan_tci_outer = 0;
		rte_pktmbuf_reset_headroom(m);
	}
	return 0;
}

void
vecring_mempool_put_bulk(struct rte_mempool *pool, void *const *objs,
			 unsigned int count)
{
	rte_mempool_put_bulk(pool, objs, count);
}

uint16_t
vecring_pktmbuf_buf_space(struct rte_mempool *pool)
{
	uint16_t room = rte_pktmbuf_data_room_size(pool);

	return room > RTE_PKTMBUF_HEADROOM ? room - RTE_PKTMBUF_HEADROOM : 0;
}

void
vecring_pktmbuf_attach_extbuf(struct rte_mbuf *m, void *buf, uint16_t len,
			      struct rte_mbuf_ext_shared_info *shinfo)
{
	rte_mbuf_ext_refcnt_set(shinfo, 1);
	/* Shared memory is not registered for DMA: no IOVA. */
	rte_pktmbuf_attach_extbuf(m, buf, RTE_BAD_IOVA, len, shinfo);
}

uint64_t
vecring_link_word(uint32_t speed, int up)
{
	struct rte_eth_link link;
	uint64_t word;

	memset(&link, 0, sizeof(link));
	link.link_speed = speed;
	link.link_duplex = RTE_ETH_LINK_FULL_DUPLEX;
	/* The speed is whatever the two ends manage: the only setting
	 * dev_configure accepts (link_speeds 0, autonegotiation). */
	link.link_autoneg = RTE_ETH_LINK_AUTONEG;
	link.link_status = up ? RTE_ETH_LINK_UP : RTE_ETH_LINK_DOWN;
	memcpy(&word, &link, sizeof(word));
	return word;
}

int
vecring_link_word_up(uint64_t word)
{
	struct rte_eth_link link;

	memcpy(&link, &word, sizeof(link));
	return link.link_status == RTE_ETH_LINK_UP;
}

_Static_assert(sizeof(struct rte_eth_link) == sizeof(uint64_t), "port/lsc.rs");

/* Constants mirrored in src/sys/ffi.rs (bindgen cannot evaluate RTE_BIT64()). */
_Static_assert(RTE_ETH_RX_OFFLOAD_SCATTER == (UINT64_C(1) << 13), "ffi.rs");
_Static_assert(RTE_ETH_TX_OFFLOAD_MULTI_SEGS == (UINT64_C(1) << 15), "ffi.rs");
_Static_assert(RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE == (UINT64_C(1) << 16), "ffi.rs");
_Static_assert((RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL) ==
	       ((UINT64_C(1) << 62) | (UINT64_C(1) << 61)), "ffi.rs");
_Static_assert(RTE_ETH_DEV_INTR_LSC == (UINT32_C(1) << 1), "ffi.rs");
_Static_assert(RTE_ETH_LINK_SPEED_FIXED == (UINT32_C(1) << 0), "ffi.rs");
_Static_assert(RTE_ETH_SPEED_NUM_UNKNOWN == UINT32_MAX, "ffi.rs");
_Static_assert(RTE_ETH_XSTATS_NAME_SIZE == 64, "ffi.rs");
_Static_assert(RTE_ETHDEV_QUEUE_STAT_CNTRS == 16, "ffi.rs");
_Static_assert(RTE_PKTMBUF_HEADROOM == 128, "ffi.rs");
_Static_assert(RTE_ETHER_HDR_LEN == 14 && RTE_ETHER_CRC_LEN == 4, "ffi.rs");
_Static_assert(RTE_ETHER_MIN_MTU == 68, "ffi.rs");
_Static_assert(SOCKET_ID_ANY == -1, "ffi.rs");
_Static_assert(RTE_INTR_INSTANCE_F_PRIVATE == 0, "ffi.rs");
/* src/port/intr_handle.rs: one vector and one event fd per queue (16) fit a handle. */
_Static_assert(RTE_MAX_RXTX_INTR_VEC_ID > 16 + RTE_INTR_VEC_RXTX_OFFSET, "port/intr_handle.rs");

static struct rte_vdev_driver vecring_vdev_driver = {
	.probe = vecring_rs_probe,
	.remove = vecring_rs_remove,
};

RTE_PMD_REGISTER_VDEV(net_vecring, vecring_vdev_driver);
RTE_PMD_REGISTER_ALIAS(net_vecring, eth_vecring);
RTE_PMD_REGISTER_PARAM_STRING(net_vecring,
	"domain=<name> "
	"link=<name> "
	"master=<bool> "
	"mac=<xx:xx:xx:xx:xx:xx> "
	"socket=<numa node> "
	"slots=<power of two> "
	"slot_size=<bytes, power of two, multiple of 64> "
	"queues=<1..16> "
	"run_dir=<path> "
	"hugepages=<prefer|require|never> "
	"zero_copy=<bool> "
	"hold_back=<bool> "
	"owner=<uid:gid> "
	"allow_uid=<uid[:uid...]> "
	"master_uid=<uid[:uid...]> "
	"socket_mode=<octal> "
	"netns=<self|path> "
	"env=<bool>");
