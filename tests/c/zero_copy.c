/*
 * zero_copy.c -- a DPDK application that holds the mbufs of an eth_vecring
 * port in zero-copy receive mode (zero_copy=true), for tests/dpdk_rx.rs.
 *
 * Frames of 512 bytes or more come as mbufs attached to their ring slots;
 * the slots go back to the producer when the application frees the mbufs,
 * in ring order only, at the port's next receive burst (copied frames with
 * no attached frame held before them, in the burst that copied them). The
 * test's process
 * is the peer: it sends self-checking frames (tests/c/pattern.h, sequence
 * numbers 0, 1, 2, ... in order), watches the room its ring has, and drives
 * this program through stdin, one command a line, each answered with one
 * line on stdout:
 *
 *   "recv N"    polls until N more frames arrived (20 s at most) and holds
 *               them: "zc: received N attached A", A of them attached to
 *               their slots (RTE_MBUF_F_EXTERNAL)
 *   "free I"    frees held mbuf I (the I-th received, from 0), then polls
 *               once (the burst that gives freed slots back): "zc: freed I
 *               polled P attached A", P frames that arrived in that poll
 *               (held too), A of them attached
 *   "free_all"  frees every mbuf still held, in the order received, then
 *               polls once if the port still runs: "zc: freed all F polled
 *               P attached A"
 *   "check"     reads every held frame again: "zc: intact H" (H held)
 *   "down"      waits until the port reports its link down: "zc: down"
 *   "close"     stops and closes the port: "zc: closed stop R close R"
 *   "count"     "zc: in_use U maps M": mbufs of the receive pool in use
 *               (the pool has no per-lcore cache, so the count is exact)
 *               and mappings of vecring regions (/proc/self/maps)
 *   "quit"      "zc: ok", exit 0
 *
 * Every frame received is checked when it arrives and at each "check":
 * its length (FRAME_LEN, or any when FRAME_LEN is 0), its sequence number
 * (the next one expected) and every byte.
 * Prints "zc: up" once the link is up. Exits 1 on a damaged frame, a setup
 * error or a timeout; SIGALRM ends it after WATCHDOG_S seconds.
 *
 * usage: zero_copy <EAL args with one --vdev> -- FRAME_LEN
 */
#include <inttypes.h>

#include <rte_mempool.h>

#define PORT_PROGRAM "zero_copy"
#include "dpdk_port.h"
#include "pattern.h"

#define WATCHDOG_S 90
#define BURST 32
#define MAX_HELD 1024

static uint16_t port;
static int started;
static size_t frame_len;
static uint64_t next_seq;

/* Held mbufs in the order received (NULL once freed) and the sequence
 * number each carries. */
static struct rte_mbuf *held[MAX_HELD];
static uint64_t held_seq[MAX_HELD];
static unsigned int nheld;

/* Checks held mbuf i: one segment of frame_len bytes (of any length from
 * PATTERN_MIN_LEN when frame_len is 0), frame held_seq[i]. */
static void check_held(unsigned int i)
{
	const struct rte_mbuf *m = held[i];
	uint64_t seq;

	if (m->nb_segs != 1 || m->data_len != m->pkt_len || m->pkt_len < PATTERN_MIN_LEN ||
	    (frame_len != 0 && m->pkt_len != frame_len)) {
		fprintf(stderr, "zero_copy: frame %u: %u segments, %u bytes, want 1 of %zu\n", i, m->nb_segs,
			m->pkt_len, frame_len);
		printf("zc: damaged %u\n", i);
		exit(1);
	}
	if (pattern_check(rte_pktmbuf_mtod(m, const uint8_t *), m->pkt_len, &seq) != 0 || seq != held_seq[i]) {
		fprintf(stderr, "zero_copy: frame %u (sequence %" PRIu64 ") damaged\n", i, held_seq[i]);
		printf("zc: damaged %u\n", i);
		exit(1);
	}
}

/* One receive burst; holds what it got. Returns the frames received and
 * adds the attached ones to *attached. */
static unsigned int poll_once(unsigned int *attached)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n, k;

	n = rte_eth_rx_burst(port, 0, pkts, BURST);
	for (k = 0; k < n; k++) {
		if (nheld == MAX_HELD) {
			fprintf(stderr, "zero_copy: more than %d frames held\n", MAX_HELD);
			exit(1);
		}
		held[nheld] = pkts[k];
		held_seq[nheld] = next_seq++;
		check_held(nheld);
		if (RTE_MBUF_HAS_EXTBUF(pkts[k]))
			(*attached)++;
		nheld++;
	}
	return n;
}

/* Mappings of vecring regions (memfds named vecring...) in this process. */
static int region_mappings(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (f == NULL)
		die("opening /proc/self/maps", -errno);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "memfd:vecring") != NULL)
			n++;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	struct rte_eth_conf conf;
	struct rte_mempool *pool;
	char line[128];
	unsigned int arg, i, attached, got;
	int rc, waited;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = eal_start(argc, argv, WATCHDOG_S);
	argc -= rc;
	argv += rc;
	if (argc != 2 || ((frame_len = strtoul(argv[1], NULL, 10)) != 0 && frame_len < PATTERN_MIN_LEN)) {
		fprintf(stderr, "usage: zero_copy <EAL args> -- FRAME_LEN\n");
		return 1;
	}
	memset(&conf, 0, sizeof(conf));
	/* The pool has no per-lcore cache: rte_mempool_in_use_count is exact. */
	port = port_setup(&conf, 1, 512, 2047, &pool);
	/* The frames' first bytes are their sequence numbers, not our MAC. */
	if ((rc = rte_eth_promiscuous_enable(port)) != 0)
		die("rte_eth_promiscuous_enable", rc);
	if ((rc = rte_eth_dev_start(port)) != 0)
		die("rte_eth_dev_start", rc);
	started = 1;
	wait_link(port, RTE_ETH_LINK_UP);
	printf("zc: up\n");

	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = 0;
		attached = 0;
		if (sscanf(line, "recv %u", &arg) == 1) {
			for (got = 0, waited = 0; got < arg; waited++) {
				if (waited == 20000)
					die("waiting for frames", -ETIMEDOUT);
				got += poll_once(&attached);
				if (got < arg)
					usleep(1000);
			}
			printf("zc: received %u attached %u\n", got, attached);
		} else if (sscanf(line, "free %u", &arg) == 1) {
			if (arg >= nheld || held[arg] == NULL) {
				fprintf(stderr, "zero_copy: no mbuf %u held\n", arg);
				return 1;
			}
			rte_pktmbuf_free(held[arg]);
			held[arg] = NULL;
			got = poll_once(&attached);
			printf("zc: freed %u polled %u attached %u\n", arg, got, attached);
		} else if (strcmp(line, "free_all") == 0) {
			for (i = 0, arg = 0; i < nheld; i++) {
				if (held[i] != NULL) {
					rte_pktmbuf_free(held[i]);
					held[i] = NULL;
					arg++;
				}
			}
			got = started ? poll_once(&attached) : 0;
			printf("zc: freed all %u polled %u attached %u\n", arg, got, attached);
		} else if (strcmp(line, "check") == 0) {
			for (i = 0, arg = 0; i < nheld; i++) {
				if (held[i] != NULL) {
					check_held(i);
					arg++;
				}
			}
			printf("zc: intact %u\n", arg);
		} else if (strcmp(line, "down") == 0) {
			wait_link(port, RTE_ETH_LINK_DOWN);
			printf("zc: down\n");
		} else if (strcmp(line, "close") == 0) {
			int stop_rc = rte_eth_dev_stop(port);
			int close_rc = rte_eth_dev_close(port);

			started = 0;
			printf("zc: closed stop %d close %d\n", stop_rc, close_rc);
		} else if (strcmp(line, "count") == 0) {
			printf("zc: in_use %u maps %d\n", rte_mempool_in_use_count(pool), region_mappings());
		} else if (strcmp(line, "quit") == 0) {
			if (started) {
				rte_eth_dev_stop(port);
				rte_eth_dev_close(port);
			}
			rte_eal_cleanup();
			printf("zc: ok\n");
			return 0;
		} else {
			fprintf(stderr, "zero_copy: unknown command '%s'\n", line);
			return 1;
		}
	}
	fprintf(stderr, "zero_copy: stdin closed before quit\n");
	return 1;
}
