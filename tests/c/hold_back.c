/*
 * hold_back.c -- the bursts an eth_vecring port's receive queue returns to
 * a DPDK application, for tests/dpdk_rx.rs: with hold_back=true, a burst
 * finds nothing while 2 to 63 one-slot frames are ready (for up to 250 ns
 * from its first look at them); one frame alone, and any frames without
 * hold_back, are returned by the first burst after they were published.
 *
 * The test's process is the peer: it publishes K self-checking frames
 * (tests/c/pattern.h, sequence numbers 0, 1, 2, ... in order) with one index
 * store, and only then writes "recv K" on this program's stdin. The
 * program polls rte_eth_rx_burst in a tight loop until the K frames are
 * in, and answers with one line:
 *
 *   "hb: received K empty E bursts S1,S2,..."
 *
 * E: the polls that returned nothing although the frames were ready (all
 * of them were published before the command was written); S1,...: the
 * sizes of the bursts that returned frames. "quit" ends the program ("hb:
 * ok"). Prints "hb: up" once the link is up. Every frame's length,
 * sequence number and bytes are checked; exits 1 on a damaged frame, a
 * setup error or a timeout (20 s per command); SIGALRM ends it after
 * WATCHDOG_S seconds.
 *
 * usage: hold_back <EAL args with one --vdev> -- FRAME_LEN
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "pattern.h"

#define WATCHDOG_S 90
#define BURST 32
/* Seconds a "recv" may poll before the program gives up. */
#define RECV_LIMIT_S 20

static void die(const char *what, int rc)
{
	fprintf(stderr, "hold_back: %s failed: %d (%s)\n", what, rc, rte_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

int main(int argc, char **argv)
{
	struct rte_mbuf *pkts[BURST];
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	struct rte_mempool *pool;
	uint64_t next_seq = 0, seq, deadline;
	size_t frame_len;
	char line[64], sizes[512];
	unsigned int want, got, empty, at;
	uint16_t port, n, k;
	int rc, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(WATCHDOG_S);
	rc = rte_eal_init(argc, argv);
	if (rc < 0)
		die("rte_eal_init", rc);
	argc -= rc;
	argv += rc;
	if (argc != 2 || (frame_len = strtoul(argv[1], NULL, 10)) < PATTERN_MIN_LEN) {
		fprintf(stderr, "usage: hold_back <EAL args> -- FRAME_LEN\n");
		return 1;
	}
	port = rte_eth_find_next(0);
	if (port >= RTE_MAX_ETHPORTS)
		die("finding the port", -ENODEV);
	pool = rte_pktmbuf_pool_create("hold_back", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (pool == NULL)
		die("rte_pktmbuf_pool_create", -rte_errno);
	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) != 0)
		die("rte_eth_dev_configure", rc);
	if ((rc = rte_eth_rx_queue_setup(port, 0, 512, (unsigned int)rte_socket_id(), NULL, pool)) != 0)
		die("rte_eth_rx_queue_setup", rc);
	if ((rc = rte_eth_tx_queue_setup(port, 0, 512, (unsigned int)rte_socket_id(), NULL)) != 0)
		die("rte_eth_tx_queue_setup", rc);
	/* The frames' first bytes are their sequence numbers, not our MAC. */
	if ((rc = rte_eth_promiscuous_enable(port)) != 0)
		die("rte_eth_promiscuous_enable", rc);
	if ((rc = rte_eth_dev_start(port)) != 0)
		die("rte_eth_dev_start", rc);
	for (i = 0;; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
			break;
		if (i == 2000)
			die("waiting for link up", -ETIMEDOUT);
		usleep(10000);
	}
	printf("hb: up\n");

	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line, "quit") == 0)
			break;
		if (sscanf(line, "recv %u", &want) != 1) {
			fprintf(stderr, "hold_back: unknown command '%s'\n", line);
			return 1;
		}
		got = empty = at = 0;
		sizes[0] = 0;
		deadline = rte_get_timer_cycles() + RECV_LIMIT_S * rte_get_timer_hz();
		while (got < want) {
			n = rte_eth_rx_burst(port, 0, pkts, BURST);
			if (n == 0) {
				if (got == 0)
					empty++;
				if (rte_get_timer_cycles() > deadline)
					die("waiting for frames", -ETIMEDOUT);
				continue;
			}
			for (k = 0; k < n; k++) {
				const struct rte_mbuf *m = pkts[k];

				if (m->nb_segs != 1 || m->pkt_len != frame_len ||
				    pattern_check(rte_pktmbuf_mtod(m, const uint8_t *), frame_len, &seq) != 0 ||
				    seq != next_seq) {
					fprintf(stderr, "hold_back: frame %" PRIu64 " damaged (%u bytes)\n", next_seq,
						m->pkt_len);
					return 1;
				}
				next_seq++;
			}
			rte_pktmbuf_free_bulk(pkts, n);
			got += n;
			if (at < sizeof(sizes) - 8)
				at += (unsigned int)snprintf(sizes + at, sizeof(sizes) - at, "%s%u", at ? "," : "", n);
		}
		printf("hb: received %u empty %u bursts %s\n", got, empty, sizes);
	}
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	printf("hb: ok\n");
	return 0;
}
