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
 * sizes of the bursts that returned frames. "held" answers with the
 * port's xstats of held-back bursts, the port's total and queue 0's:
 *
 *   "hb: held_back_bursts TOTAL Q0"
 *
 * "quit" ends the program ("hb: ok"). Prints "hb: up" once the link is up. Every frame's length,
 * sequence number and bytes are checked; exits 1 on a damaged frame, a
 * setup error or a timeout (20 s per command); SIGALRM ends it after
 * WATCHDOG_S seconds.
 *
 * usage: hold_back <EAL args with one --vdev> -- FRAME_LEN
 */
#include <inttypes.h>

#include <rte_cycles.h>

#define PORT_PROGRAM "hold_back"
#include "dpdk_port.h"
#include "pattern.h"

#define WATCHDOG_S 90
#define BURST 32
/* Seconds a "recv" may poll before the program gives up. */
#define RECV_LIMIT_S 20

/* The value of the port's xstat `name`. */
static uint64_t xstat(uint16_t port, const char *name)
{
	uint64_t id, value;
	int rc;

	if ((rc = rte_eth_xstats_get_id_by_name(port, name, &id)) != 0)
		die(name, rc);
	if ((rc = rte_eth_xstats_get_by_id(port, &id, &value, 1)) != 1)
		die(name, rc < 0 ? rc : -EIO);
	return value;
}

int main(int argc, char **argv)
{
	struct rte_mbuf *pkts[BURST];
	struct rte_eth_conf conf;
	struct rte_mempool *pool;
	uint64_t next_seq = 0, seq, deadline;
	size_t frame_len;
	char line[64], sizes[512];
	unsigned int want, got, empty, at;
	uint16_t port, n, k;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = eal_start(argc, argv, WATCHDOG_S);
	argc -= rc;
	argv += rc;
	if (argc != 2 || (frame_len = strtoul(argv[1], NULL, 10)) < PATTERN_MIN_LEN) {
		fprintf(stderr, "usage: hold_back <EAL args> -- FRAME_LEN\n");
		return 1;
	}
	memset(&conf, 0, sizeof(conf));
	port = port_setup(&conf, 1, 512, 1023, &pool);
	/* The frames' first bytes are their sequence numbers, not our MAC. */
	if ((rc = rte_eth_promiscuous_enable(port)) != 0)
		die("rte_eth_promiscuous_enable", rc);
	if ((rc = rte_eth_dev_start(port)) != 0)
		die("rte_eth_dev_start", rc);
	wait_link(port, RTE_ETH_LINK_UP);
	printf("hb: up\n");

	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line, "quit") == 0)
			break;
		if (strcmp(line, "held") == 0) {
			printf("hb: held_back_bursts %" PRIu64 " %" PRIu64 "\n", xstat(port, "rx_held_back_bursts"),
			       xstat(port, "rx_q0_held_back_bursts"));
			continue;
		}
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
