/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * The DPDK surface of librte_net_vecring: bindgen reads this header to make
 * the Rust bindings, and glue.c includes it so that the C compiler checks the
 * glue's definitions against the same prototypes.
 */
#ifndef VECRING_PMD_WRAPPER_H
#define VECRING_PMD_WRAPPER_H

#include <stddef.h>
#include <stdint.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <ethdev_driver.h>
#include <ethdev_vdev.h>
#include <bus_vdev_driver.h>

/* ---- implemented in Rust (src/probe.rs) --------------------------------- */

/** vdev probe: parse devargs, open the link, create the ethdev port. */
int vecring_rs_probe(struct rte_vdev_device *dev);
/** vdev remove: close and release the port (also reached by rte_vdev_uninit). */
int vecring_rs_remove(struct rte_vdev_device *dev);

/* ---- implemented in glue.c: wrappers of DPDK static inline helpers ------ */

/** The driver's log type (pmd.net.vecring), registered by glue.c. */
extern int vecring_logtype;

/** Prints "VECRING: <msg>" through rte_log with the driver's log type. */
void vecring_log(uint32_t level, const char *msg);
/** rte_errno of the calling thread. */
int vecring_errno(void);
/** rte_vdev_device_name(). */
const char *vecring_vdev_name(const struct rte_vdev_device *dev);
/** rte_vdev_device_args(); never NULL ("" when there are no devargs). */
const char *vecring_vdev_args(const struct rte_vdev_device *dev);
/** rte_eth_vdev_allocate(). */
struct rte_eth_dev *vecring_eth_vdev_allocate(struct rte_vdev_device *dev,
					      size_t private_data_size);
/** rte_pktmbuf_alloc_bulk(): 0 on success, the whole request or nothing. */
int vecring_pktmbuf_alloc_bulk(struct rte_mempool *pool,
			       struct rte_mbuf **mbufs, unsigned int count);
/**
 * rte_pktmbuf_alloc_bulk() for the RX burst: 0 on success, the whole request
 * or nothing. Each mbuf gets `port` and the reset of its first cache line;
 * the second line (next, tx_offload) is not written, as in DPDK's vector RX
 * paths: a free mbuf's `next` is already NULL, and `tx_offload` is for the
 * application to set before it transmits. The caller sets the lengths.
 */
int vecring_rx_mbufs_alloc(struct rte_mempool *pool, struct rte_mbuf **mbufs,
			   unsigned int count, uint16_t port);
/** rte_mempool_put_bulk(): `count` raw-state objects back to `pool`. */
void vecring_mempool_put_bulk(struct rte_mempool *pool, void *const *objs,
			      unsigned int count);
/** rte_pktmbuf_data_room_size() - RTE_PKTMBUF_HEADROOM, 0 if smaller. */
uint16_t vecring_pktmbuf_buf_space(struct rte_mempool *pool);

/**
 * Points `m` (a fresh direct mbuf) at `len` bytes of external memory at
 * `buf`, sharing `shinfo` (whose free_cb/fcb_opaque the caller set; its
 * reference count is set to 1 here). The data starts at `buf`.
 */
void vecring_pktmbuf_attach_extbuf(struct rte_mbuf *m, void *buf, uint16_t len,
				   struct rte_mbuf_ext_shared_info *shinfo);

/**
 * The 64-bit word of a `struct rte_eth_link` with `link_speed` `speed`,
 * full duplex, autonegotiated, and up if `up` is non-zero (C reaches the
 * fields through the anonymous union newer lines put around them).
 */
uint64_t vecring_link_word(uint32_t speed, int up);
/** Whether the 64-bit word of a `struct rte_eth_link` says the link is up. */
int vecring_link_word_up(uint64_t word);

#endif
