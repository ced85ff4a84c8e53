/*
 * dpdk_port.h -- what the DPDK test programs (hold_back.c, lsc_close.c,
 * monitor.c, rx_intr.c, zero_copy.c) share: starting EAL under a watchdog,
 * setting up the one eth_vecring port their --vdev makes, waiting for its
 * link, and exiting loudly when a step fails.
 *
 * The including file defines PORT_PROGRAM (its name, e.g. "monitor")
 * before including this header: failures are printed as
 * "<program>: <step> failed: <rc> (<message>)", and the receive pool is
 * named after it.
 */
#ifndef VECRING_TEST_DPDK_PORT_H
#define VECRING_TEST_DPDK_PORT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

/* How long wait_link waits for the link before it gives up. */
#define LINK_WAIT_S 30

/* Ends the program with status 1, naming the step that failed and its
 * return code (negative errno values and positive rte_errno values
 * alike). */
static inline void die(const char *what, int rc)
{
	fprintf(stderr, "%s: %s failed: %d (%s)\n", PORT_PROGRAM, what, rc,
		rte_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

/* Arms the watchdog (SIGALRM ends the process after `watchdog_s` seconds,
 * with a status other than 0), then starts EAL; returns how many of the
 * arguments EAL took. */
static inline int eal_start(int argc, char **argv, unsigned int watchdog_s)
{
	int rc;

	alarm(watchdog_s);
	rc = rte_eal_init(argc, argv);
	if (rc < 0)
		die("rte_eal_init", rc);
	return rc;
}

/* Configures the port the --vdev made with `conf` and `queues` RX and TX
 * queues of `desc` descriptors each, receiving into a new pool of `mbufs`
 * mbufs with no per-lcore cache (so that rte_mempool_in_use_count is
 * exact); stores the pool in *pool and returns the port. The port is not
 * started: a program may still register callbacks or change modes. */
static inline uint16_t port_setup(const struct rte_eth_conf *conf, uint16_t queues, uint16_t desc,
				  unsigned int mbufs, struct rte_mempool **pool)
{
	uint16_t port = rte_eth_find_next(0), q;
	int rc;

	if (port >= RTE_MAX_ETHPORTS)
		die("finding the port", -ENODEV);
	*pool = rte_pktmbuf_pool_create(PORT_PROGRAM, mbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					(int)rte_socket_id());
	if (*pool == NULL)
		die("rte_pktmbuf_pool_create", -rte_errno);
	if ((rc = rte_eth_dev_configure(port, queues, queues, conf)) != 0)
		die("rte_eth_dev_configure", rc);
	for (q = 0; q < queues; q++) {
		rc = rte_eth_rx_queue_setup(port, q, desc, (unsigned int)rte_socket_id(), NULL, *pool);
		if (rc != 0)
			die("rte_eth_rx_queue_setup", rc);
		rc = rte_eth_tx_queue_setup(port, q, desc, (unsigned int)rte_socket_id(), NULL);
		if (rc != 0)
			die("rte_eth_tx_queue_setup", rc);
	}
	return port;
}

/* Waits until the port's link status is `up` (RTE_ETH_LINK_UP or
 * RTE_ETH_LINK_DOWN), LINK_WAIT_S seconds at most. */
static inline void wait_link(uint16_t port, int up)
{
	struct rte_eth_link link;
	int i;

	for (i = 0; i < LINK_WAIT_S * 100; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == up)
			return;
		usleep(10000);
	}
	die(up ? "waiting for link up" : "waiting for link down", -ETIMEDOUT);
}

#endif
