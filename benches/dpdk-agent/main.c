/*
 * vecring-dpdk-agent: the DPDK agent of the forwarding benchmark, for
 * measuring a virtual Ethernet link.
 *
 * One EAL process owns port 0 (a --vdev: eth_vecring or net_memif) on its
 * main lcore. In `gen` mode it sends numbered, time-stamped UDP/IPv4 frames
 * at a paced rate and counts what comes back (a forwarder swaps the MACs):
 * loss, reordering, duplicates, malformed frames and the round-trip latency
 * histogram. In `sink` mode it only receives and counts (one-way latency:
 * both ends read the same host's CLOCK_MONOTONIC).
 *
 * The harness (`vecring-bench host-container --forward`) drives it over
 * stdin/stdout with the agent protocol, as it drives the Rust agent
 * (`vecring-bench agent`, benches/src/bin/vecring-bench/agent/protocol.rs):
 * one command line in and exactly one reply line out. `--once` runs a single trial from the command line instead
 * (by hand, like the kernel's pktgen). The frame layout (frame.h) and the
 * histogram (histogram.h) are the Rust agent's too.
 *
 * The protocol (stdout carries nothing else; every reply is flushed):
 *   start-up           -> ready mac=<port mac> max_frame=<min(9216, max_rx_pktlen)>
 *   gen [size=B] [rate=PPS] [secs=S] [count=N] [burst=N]   (omitted: the options')
 *                      -> ok trial= offered= tx= rx= lost= reordered= dup= bad= tx_secs= kept_rate=
 *                         min= max= hist=IDX:N,...
 *   counts             -> ok rx= unique= reordered= dup= bad= min= max= hist=...
 *   reset [trial=ID]   -> ok (with ID: count that trial's frames only)
 *   stats              -> ok ipackets= opackets= imissed= oerrors=
 *   quit (or EOF)      -> ok, then the port stops and the process exits 0
 *   anything else      -> err <why>
 * `offered` counts the frames given a sequence number. Paced (rate > 0), a
 * frame the full ring refuses is dropped and so lost, as a NIC's full queue
 * would drop it; unthrottled, it is offered again, and offered = tx.
 * `counts` and `reset` are about the frames received outside trials: a sink
 * counts the first trial id it sees after a reset (frames of other trials
 * are stale, so reset it before each of the generator's trials).
 *
 * agent.h lists the files. Build with benches/dpdk-agent/build.sh.
 */
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "agent.h"
#include "frame.h"

uint64_t tsc_hz;
volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int eal_argc, reply_fd, rc;
	unsigned waited;

	/*
	 * stdout carries replies only: keep it as `out` and point fd 1 at
	 * stderr, so nothing EAL or a driver prints can land among the replies.
	 */
	reply_fd = dup(STDOUT_FILENO);
	if (reply_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || (out = fdopen(reply_fd, "w")) == NULL) {
		perror("vecring-dpdk-agent: stdout");
		return 1;
	}
	setvbuf(out, NULL, _IOLBF, 0);

	/* The application's options are checked before EAL takes any resource. */
	for (eal_argc = 0; eal_argc < argc && strcmp(argv[eal_argc], "--") != 0; eal_argc++)
		;
	parse_options(eal_argc < argc ? argc - eal_argc - 1 : 0, argv + RTE_MIN(eal_argc + 1, argc));

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ramp_init();

	if (rte_eal_init(eal_argc, argv) < 0) {
		fprintf(stderr, "vecring-dpdk-agent: EAL init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	tsc_hz = rte_get_tsc_hz();
	rc = 1;
	if (!rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "vecring-dpdk-agent: no port 0 (give a --vdev)\n");
		goto out_eal;
	}
	/* One pool for both directions, its mbufs big enough for any frame in one segment. */
	pool = rte_pktmbuf_pool_create("dpdk-agent", NB_MBUFS, MBUF_CACHE, 0, RTE_PKTMBUF_HEADROOM + MAX_FRAME,
				       rte_eth_dev_socket_id(port) >= 0 ? rte_eth_dev_socket_id(port) : (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "vecring-dpdk-agent: mbuf pool: %s\n", rte_strerror(rte_errno));
		goto out_eal;
	}
	if (port_setup() != 0)
		goto out_port;
	if (!opt.src_mac_set)
		opt.src_mac = port_mac;

	for (waited = 0; !link_up() && !stop; waited++) {
		if (waited == LINK_WAIT_S * 100) {
			fprintf(stderr, "vecring-dpdk-agent: port %u: link still down after %u s\n", port, LINK_WAIT_S);
			goto out_port;
		}
		rte_delay_us_sleep(10000);
	}
	if (stop)
		goto out_port;

	idle_counts.adopt = true;
	idle_counts.check_dst = opt.mode == MODE_GEN;
	idle_counts.verify = trial_counts.verify = opt.verify;
	idle_counts.mac = trial_counts.mac = opt.src_mac;
	idle_counts.seq_limit = SEQ_LIMIT;
	counts_reset(&idle_counts);
	counts_reset(&trial_counts);

	if (opt.once) {
		if (opt.mode == MODE_GEN) {
			struct trial_result r;

			run_trial(&opt.trial, &r);
			reply_gen(&r, &trial_counts);
			summary(&opt.trial, &r, &trial_counts);
		} else {
			run_sink_window(&opt.trial);
			reply_counts(&idle_counts);
			summary(&opt.trial, NULL, &idle_counts);
		}
	} else {
		const uint8_t *a = port_mac.addr_bytes;

		reply("ready mac=%02x:%02x:%02x:%02x:%02x:%02x max_frame=%u", a[0], a[1], a[2], a[3], a[4], a[5],
		      max_frame);
		serve();
	}
	rc = 0;
out_port:
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
out_eal:
	rte_eal_cleanup();
	free(trial_counts.seen);
	free(idle_counts.seen);
	return rc;
}
