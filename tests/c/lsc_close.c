/*
 * lsc_close.c -- a DPDK application that closes its port from the port's
 * link-state-change callback, for tests/dpdk_hostile.rs.
 *
 * Starts the one port given with --vdev (with intr_conf.lsc on), waits until
 * its link is up, then makes no more ethdev calls of its own: the callback,
 * on the first link-down event, stops and closes the port. The program then
 * checks that the port is gone and exits.
 *
 * usage: lsc_close <EAL args, with -d the PMD and --vdev the port>
 *
 * Prints "lsc_close: link up" once the link is up, "lsc_close: callback
 * closed the port (stop R, close R)" from the callback, and "lsc_close: ok"
 * before exiting 0. Exits 1 on a setup error or a failed stop/close, 2 if
 * nothing happened within its own watchdog (60 s).
 */
#include <inttypes.h>
#include <stdatomic.h>

#define PORT_PROGRAM "lsc_close"
#include "dpdk_port.h"

/* Seconds before the program gives up on its own. */
#define WATCHDOG_S 60

/* Set once the callback closed the port; result codes of stop and close. */
static atomic_int closed;
static int stop_rc = 1, close_rc = 1;

static int lsc_callback(uint16_t port, enum rte_eth_event_type event, void *arg, void *ret)
{
	struct rte_eth_link link;

	(void)arg;
	(void)ret;
	if (event != RTE_ETH_EVENT_INTR_LSC || atomic_load(&closed))
		return 0;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(port, &link) != 0 || link.link_status == RTE_ETH_LINK_UP)
		return 0;
	stop_rc = rte_eth_dev_stop(port);
	close_rc = rte_eth_dev_close(port);
	printf("lsc_close: callback closed the port (stop %d, close %d)\n", stop_rc, close_rc);
	fflush(stdout);
	atomic_store(&closed, 1);
	return 0;
}

int main(int argc, char **argv)
{
	struct rte_eth_conf conf;
	struct rte_mempool *pool;
	uint16_t port;
	int rc, waited;

	eal_start(argc, argv, WATCHDOG_S);
	memset(&conf, 0, sizeof(conf));
	conf.intr_conf.lsc = 1;
	port = port_setup(&conf, 1, 512, 1023, &pool);
	rc = rte_eth_dev_callback_register(port, RTE_ETH_EVENT_INTR_LSC, lsc_callback, NULL);
	if (rc != 0)
		die("rte_eth_dev_callback_register", rc);
	if ((rc = rte_eth_dev_start(port)) != 0)
		die("rte_eth_dev_start", rc);

	/* Until the link is up, this thread polls it; afterwards only the
	 * callback touches the port (control calls must not run concurrently). */
	wait_link(port, RTE_ETH_LINK_UP);
	printf("lsc_close: link up\n");
	fflush(stdout);

	for (waited = 0; !atomic_load(&closed); waited += 10) {
		if (waited >= WATCHDOG_S * 1000) {
			fprintf(stderr, "lsc_close: the callback did not close the port\n");
			return 2;
		}
		usleep(10 * 1000);
	}
	if (stop_rc != 0 || close_rc != 0)
		return 1;
	if (rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "lsc_close: port %u still valid after close\n", port);
		return 1;
	}
	rte_mempool_free(pool);
	rte_eal_cleanup();
	printf("lsc_close: ok\n");
	return 0;
}
