/*
 * monitor.c -- DPDK's power-monitor hook on an eth_vecring port, for
 * tests/dpdk_monitor.rs: what rte_power_monitor() would watch
 * (rte_eth_get_monitor_addr) and what its callback decides, at each step
 * of a frame's arrival and of the link going down and up. The test's
 * process is the peer and drives the steps through stdin.
 *
 * The CPU here may have no UMWAIT or MONITORX, so nothing sleeps: at each
 * step the program reads the monitored word as the CPU's monitor would
 * (`size` bytes at `addr`) and calls the callback with it and `opaque`,
 * exactly as rte_power_monitor() does before it sleeps. 0 means "sleep",
 * anything else "a frame (or a link change) is there, do not".
 *
 * Steps, each printed as one line:
 *   "monitor: up"                            the link is up
 *   "monitor: empty rc=R size=S sleep=D"     nothing sent yet: R 0, S 8,
 *                                            D 1 (the callback says sleep)
 *   <reads "sent" from stdin: the peer sent one frame>
 *   "monitor: frame armed=D fresh=E"         the condition taken before
 *                                            the frame (D) and a fresh one
 *                                            (E) both say do not sleep: 0
 *   "monitor: received N"                    rte_eth_rx_burst took it
 *   "monitor: drained sleep=D"               a fresh condition: sleep, 1
 *   <reads "left": the peer closed its link>
 *   "monitor: down rc=R sleep=D"             once the port reports the
 *                                            link down: R 0, D 1
 *   <reads "back": the peer opened its link again>
 *   "monitor: back armed=D"                  the condition taken while
 *                                            down says do not sleep (0)
 *                                            once the link is up
 *   "monitor: ok"
 * Exits 1 on a setup error or a timeout; SIGALRM ends it after 60 s.
 *
 * usage: monitor <EAL args with one --vdev>
 */
/* rte_eth_get_monitor_addr is experimental on 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <rte_power_intrinsics.h>

#define PORT_PROGRAM "monitor"
#include "dpdk_port.h"

#define WATCHDOG_S 60

/* Reads the word as the CPU's monitor would, then asks the callback:
 * 1 if it says sleep, 0 if not. */
static int says_sleep(const struct rte_power_monitor_cond *pmc)
{
	uint64_t v;

	switch (pmc->size) {
	case 1:
		v = *(const volatile uint8_t *)pmc->addr;
		break;
	case 2:
		v = *(const volatile uint16_t *)pmc->addr;
		break;
	case 4:
		v = *(const volatile uint32_t *)pmc->addr;
		break;
	case 8:
		v = *(const volatile uint64_t *)pmc->addr;
		break;
	default:
		die("the condition's size", -EINVAL);
	}
	return pmc->fn(v, pmc->opaque) == 0;
}

static void expect_line(const char *want)
{
	char line[64];

	if (fgets(line, sizeof(line), stdin) == NULL)
		die("reading stdin", -EPIPE);
	line[strcspn(line, "\n")] = 0;
	if (strcmp(line, want) != 0) {
		fprintf(stderr, "monitor: stdin said '%s', expected '%s'\n", line, want);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct rte_power_monitor_cond armed, fresh;
	struct rte_mbuf *pkts[32];
	struct rte_eth_conf conf;
	struct rte_mempool *pool;
	uint16_t port;
	int rc, i, got = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	eal_start(argc, argv, WATCHDOG_S);
	memset(&conf, 0, sizeof(conf));
	port = port_setup(&conf, 1, 512, 1023, &pool);
	rc = rte_eth_promiscuous_enable(port);
	if (rc != 0)
		die("rte_eth_promiscuous_enable", rc);
	rc = rte_eth_dev_start(port);
	if (rc != 0)
		die("rte_eth_dev_start", rc);
	wait_link(port, RTE_ETH_LINK_UP);
	printf("monitor: up\n");

	memset(&armed, 0, sizeof(armed));
	rc = rte_eth_get_monitor_addr(port, 0, &armed);
	printf("monitor: empty rc=%d size=%u sleep=%d\n", rc, armed.size,
	       rc == 0 ? says_sleep(&armed) : -1);
	if (rc != 0)
		die("rte_eth_get_monitor_addr", rc);

	expect_line("sent");
	memset(&fresh, 0, sizeof(fresh));
	rc = rte_eth_get_monitor_addr(port, 0, &fresh);
	if (rc != 0)
		die("rte_eth_get_monitor_addr", rc);
	printf("monitor: frame armed=%d fresh=%d\n", says_sleep(&armed), says_sleep(&fresh));

	for (i = 0; i < 500 && got == 0; i++) {
		uint16_t n = rte_eth_rx_burst(port, 0, pkts, 32);

		got += n;
		rte_pktmbuf_free_bulk(pkts, n);
		if (got == 0)
			usleep(10000);
	}
	printf("monitor: received %d\n", got);
	rc = rte_eth_get_monitor_addr(port, 0, &fresh);
	if (rc != 0)
		die("rte_eth_get_monitor_addr", rc);
	printf("monitor: drained sleep=%d\n", says_sleep(&fresh));

	expect_line("left");
	wait_link(port, RTE_ETH_LINK_DOWN);
	/* A burst while down lets the queue see the link's state. */
	(void)rte_eth_rx_burst(port, 0, pkts, 32);
	memset(&armed, 0, sizeof(armed));
	rc = rte_eth_get_monitor_addr(port, 0, &armed);
	printf("monitor: down rc=%d sleep=%d\n", rc, rc == 0 ? says_sleep(&armed) : -1);
	if (rc != 0)
		die("rte_eth_get_monitor_addr", rc);

	expect_line("back");
	wait_link(port, RTE_ETH_LINK_UP);
	printf("monitor: back armed=%d\n", says_sleep(&armed));

	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	printf("monitor: ok\n");
	return 0;
}
