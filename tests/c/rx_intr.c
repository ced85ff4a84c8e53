/*
 * rx_intr.c -- a DPDK application that receives in interrupt mode, as
 * l3fwd-power does, for tests/dpdk_intr.rs.
 *
 * Configures the one port given with --vdev with Q Rx/Tx queues and
 * intr_conf.rxq = 1, waits until its link is up, adds every Rx queue's
 * interrupt to the thread's epoll set (rte_eth_dev_rx_intr_ctl_q), then:
 *
 *   1. idles for IDLE seconds, sleeping in rte_epoll_wait with the
 *      queues' interrupts enabled, and reports the thread's CPU time;
 *   2. receives FRAMES frames: each time, enables the interrupts, sleeps in
 *      rte_epoll_wait (5 s at most), disables the interrupts of the queues
 *      that woke and drains them with rte_eth_rx_burst. Every frame must
 *      carry the queue it came on and a per-queue sequence number, in
 *      order (see frame_ok). After the first FRAMES / 2 frames it prints
 *      "rx_intr: pausing" and pauses 300 ms with the interrupts disabled:
 *      a frame the peer sends then is waiting when they are enabled again,
 *      and the next sleep must end at once (the peer sends nothing more
 *      until it reads "rx_intr: woke for a waiting frame");
 *   3. with "down" as the last argument: sleeps the same way until the
 *      link is down (the peer leaves while it sleeps), each sleep 5 s at
 *      most, and checks that the queues then receive nothing;
 *      with "relink": while it sleeps the same way, another thread sets
 *      the port's link down and, 500 ms later, up again (the port closes
 *      its link and opens a new one, whose receivers replace the queues');
 *      then it sleeps until the link is up and receives FRAMES / 4 more
 *      frames, each sleep 5 s at most.
 *
 * With "watch" or "poll" as the last argument it skips 1 to 3 and watches
 * a hostile peer instead: with promiscuous mode on, it counts frames of any
 * content on every queue until stdin has a line or closes, each round
 * either sleeping in rte_epoll_wait (50 ms at most, "watch") or polling
 * ("poll", with Rx interrupts not configured), and reports every 100 ms
 * how many rounds it made, the frames counted and the longest time between
 * two rounds (a round blocked in the driver shows there, and the reports
 * stop). Then it times stopping and closing the port. FRAMES and IDLE are
 * ignored.
 *
 * usage: rx_intr <EAL args> -- Q FRAMES IDLE [down|relink|watch|poll]
 *
 * Prints "rx_intr: ready" once the queues are in the epoll set (the peer
 * starts its idle period then), "rx_intr: idle cpu_us=C wall_us=W
 * wakeups=N", then "rx_intr: received F frames, E events, T timeouts" and
 * "rx_intr: link down after E events, T timeouts" in mode "down",
 * "rx_intr: relink: link up after E events, T timeouts" and
 * "rx_intr: relink: received F frames, E events, T timeouts" in mode
 * "relink", "rx_intr: watch rounds=R frames=F events=E max_gap_ms=G" in
 * modes "watch" and "poll", then "rx_intr: closed ms=M" (stopping and
 * closing the port took M ms), and "rx_intr: ok". Exits 1 on a setup error, a bad frame or a timeout;
 * SIGALRM ends it if it is still running after its own watchdog (90 s).
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <rte_epoll.h>
#include <rte_interrupts.h>

#define PORT_PROGRAM "rx_intr"
#include "dpdk_port.h"

#define WATCHDOG_S 90
#define MAX_QUEUES 16
#define BURST 32
/* Bytes 14..16 of a frame: its queue; 16..20: its sequence on that queue. */
#define QUEUE_AT 14
#define SEQ_AT 16

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t thread_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
}

/* Set by relink_thread once the link is set down and up again. */
static int relink_done;

/* Sets the port's link down and up again while the main thread sleeps. */
static void *relink_thread(void *arg)
{
	uint16_t port = *(const uint16_t *)arg;
	int down, up;

	usleep(500000);
	down = rte_eth_dev_set_link_down(port);
	usleep(500000);
	up = rte_eth_dev_set_link_up(port);
	printf("rx_intr: relink: set link down %d, up %d\n", down, up);
	fflush(stdout);
	__atomic_store_n(&relink_done, down == 0 && up == 0 ? 1 : -1, __ATOMIC_RELEASE);
	return NULL;
}

/* Next sequence number expected on each queue. */
static uint32_t next_seq[MAX_QUEUES];

static int frame_ok(struct rte_mbuf *m, uint16_t q)
{
	uint16_t queue;
	uint32_t seq;

	if (rte_pktmbuf_pkt_len(m) < SEQ_AT + 4 || m->nb_segs != 1) {
		fprintf(stderr, "rx_intr: queue %u: frame of %u bytes\n", q, rte_pktmbuf_pkt_len(m));
		return 0;
	}
	memcpy(&queue, rte_pktmbuf_mtod_offset(m, const char *, QUEUE_AT), 2);
	memcpy(&seq, rte_pktmbuf_mtod_offset(m, const char *, SEQ_AT), 4);
	if (queue != q || seq != next_seq[q]) {
		fprintf(stderr, "rx_intr: queue %u: frame of queue %u seq %u, expected seq %u\n", q,
			queue, seq, next_seq[q]);
		return 0;
	}
	next_seq[q]++;
	return 1;
}

/* Drains queue q whatever the frames carry; returns the frames read. */
static int drain_any(uint16_t port, uint16_t q)
{
	struct rte_mbuf *pkts[BURST];
	int total = 0;
	uint16_t n, i;

	do {
		n = rte_eth_rx_burst(port, q, pkts, BURST);
		for (i = 0; i < n; i++)
			rte_pktmbuf_free(pkts[i]);
		total += n;
	} while (n > 0);
	return total;
}

/* Whether stdin has a line or is closed: the end of the watch. */
static int stdin_says_stop(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

/*
 * Watches a hostile peer until stdin says stop: counts frames of any
 * content on every queue, sleeping in rte_epoll_wait between rounds
 * (sleep != 0) or polling, and reports every 100 ms.
 */
static void watch(uint16_t port, uint16_t queues, int sleep)
{
	struct rte_epoll_event ev[MAX_QUEUES];
	uint64_t last = now_us(), next_report = last, gap, max_gap = 0, t, rounds = 0;
	int frames = 0, events = 0, n;
	uint16_t q;

	while (!stdin_says_stop()) {
		if (sleep) {
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_enable(port, q);
			n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES, 50);
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_disable(port, q);
			if (n > 0)
				events += n;
		}
		for (q = 0; q < queues; q++)
			frames += drain_any(port, q);
		rounds++;
		t = now_us();
		gap = t - last;
		last = t;
		if (gap > max_gap)
			max_gap = gap;
		if (t >= next_report) {
			printf("rx_intr: watch rounds=%" PRIu64 " frames=%d events=%d max_gap_ms=%" PRIu64
			       "\n",
			       rounds, frames, events, max_gap / 1000);
			fflush(stdout);
			next_report = t + 100000;
		}
	}
}

/* Drains queue q; returns the frames read, or -1 for a bad one. */
static int drain(uint16_t port, uint16_t q)
{
	struct rte_mbuf *pkts[BURST];
	int total = 0, bad = 0;
	uint16_t n, i;

	do {
		n = rte_eth_rx_burst(port, q, pkts, BURST);
		for (i = 0; i < n; i++) {
			bad |= !frame_ok(pkts[i], q);
			rte_pktmbuf_free(pkts[i]);
		}
		total += n;
	} while (n > 0);
	return bad ? -1 : total;
}

int main(int argc, char **argv)
{
	struct rte_epoll_event ev[MAX_QUEUES];
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	struct rte_mempool *pool;
	uint64_t cpu0, wall0, idle_until;
	uint16_t port, queues, q;
	int rc, n, frames, idle_s, got = 0, events = 0, timeouts = 0, wakeups = 0;
	int down = 0, relink = 0, paused = 0, woke_for_waiting = 0, short_count = 0;
	int watching = 0, sleeping = 0;

	rc = eal_start(argc, argv, WATCHDOG_S);
	argc -= rc;
	argv += rc;
	if (argc == 5 && strcmp(argv[4], "down") == 0) {
		down = 1;
		argc--;
	} else if (argc == 5 && strcmp(argv[4], "relink") == 0) {
		relink = 1;
		argc--;
	} else if (argc == 5 && (strcmp(argv[4], "watch") == 0 || strcmp(argv[4], "poll") == 0)) {
		watching = 1;
		sleeping = strcmp(argv[4], "watch") == 0;
		argc--;
	}
	if (argc != 4) {
		fprintf(stderr,
			"usage: rx_intr <EAL args> -- QUEUES FRAMES IDLE_S [down|relink|watch|poll]\n");
		return 1;
	}
	queues = (uint16_t)atoi(argv[1]);
	frames = atoi(argv[2]);
	idle_s = atoi(argv[3]);
	if (queues < 1 || queues > MAX_QUEUES)
		die("the queue count", -EINVAL);
	memset(&conf, 0, sizeof(conf));
	/* "poll" is a plain polling application: no Rx interrupts at all. */
	conf.intr_conf.rxq = !watching || sleeping;
	port = port_setup(&conf, queues, 1024, 4095, &pool);
	rc = rte_eth_dev_start(port);
	if (rc != 0)
		die("rte_eth_dev_start", rc);
	wait_link(port, RTE_ETH_LINK_UP);
	for (q = 0; q < queues && conf.intr_conf.rxq; q++) {
		rc = rte_eth_dev_rx_intr_ctl_q(port, q, RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_ADD,
					       (void *)(uintptr_t)q);
		if (rc != 0)
			die("rte_eth_dev_rx_intr_ctl_q", rc);
	}
	printf("rx_intr: ready\n");
	fflush(stdout);

	if (watching) {
		uint64_t t0;

		rc = rte_eth_promiscuous_enable(port);
		if (rc != 0)
			die("rte_eth_promiscuous_enable", rc);
		watch(port, queues, sleeping);
		t0 = now_us();
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
		printf("rx_intr: closed ms=%" PRIu64 "\n", (now_us() - t0) / 1000);
		fflush(stdout);
		rte_eal_cleanup();
		printf("rx_intr: ok\n");
		return 0;
	}

	/* 1. Idle: nothing arrives; the thread should sleep. */
	cpu0 = thread_cpu_us();
	wall0 = now_us();
	idle_until = wall0 + (uint64_t)idle_s * 1000000;
	while (now_us() < idle_until) {
		for (q = 0; q < queues; q++) {
			if (drain(port, q) != 0)
				die("idling: a frame came", -EPROTO);
			rte_eth_dev_rx_intr_enable(port, q);
		}
		n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES,
				   (int)((idle_until - now_us()) / 1000) + 1);
		for (q = 0; q < queues; q++)
			rte_eth_dev_rx_intr_disable(port, q);
		if (n > 0)
			wakeups++;
	}
	printf("rx_intr: idle cpu_us=%" PRIu64 " wall_us=%" PRIu64 " wakeups=%d\n",
	       thread_cpu_us() - cpu0, now_us() - wall0, wakeups);
	fflush(stdout);

	/* 2. Frames: each burst wakes the sleeper by an event. */
	while (got < frames) {
		for (q = 0; q < queues; q++)
			rte_eth_dev_rx_intr_enable(port, q);
		n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES, 5000);
		if (n == 0) {
			timeouts++;
			fprintf(stderr, "rx_intr: no event in 5 s with %d of %d frames\n", got, frames);
			break;
		}
		if (n < 0)
			continue; /* interrupted by a signal */
		events += n;
		for (q = 0; q < queues; q++)
			rte_eth_dev_rx_intr_disable(port, q);
		for (q = 0; q < queues; q++) {
			rc = drain(port, q);
			if (rc < 0)
				return 1;
			got += rc;
			if (rc > 0 && paused && !woke_for_waiting) {
				woke_for_waiting = 1;
				printf("rx_intr: woke for a waiting frame\n");
				fflush(stdout);
			}
		}
		if (!paused && got >= frames / 2) {
			paused = 1;
			printf("rx_intr: pausing\n");
			fflush(stdout);
			usleep(300000);
		}
	}
	printf("rx_intr: received %d frames, %d events, %d timeouts\n", got, events, timeouts);
	fflush(stdout);

	/* 3. The peer leaves while the queues sleep: a link change wakes them. */
	if (down && timeouts == 0) {
		int down_events = 0;

		for (;;) {
			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(port, &link) == 0 &&
			    link.link_status == RTE_ETH_LINK_DOWN)
				break;
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_enable(port, q);
			n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES, 5000);
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_disable(port, q);
			if (n == 0) {
				timeouts++;
				fprintf(stderr, "rx_intr: no event in 5 s while waiting for link down\n");
				break;
			}
			if (n > 0)
				down_events += n;
			for (q = 0; q < queues; q++) {
				rc = drain(port, q);
				if (rc != 0) {
					fprintf(stderr, "rx_intr: %d frames after the last one\n", rc);
					return 1;
				}
			}
		}
		printf("rx_intr: link down after %d events, %d timeouts\n", down_events, timeouts);
		fflush(stdout);
		for (q = 0; q < queues; q++) {
			if (drain(port, q) != 0) {
				fprintf(stderr, "rx_intr: queue %u received after link down\n", q);
				return 1;
			}
		}
	}

	/*
	 * 3b. The port's link is closed and reopened while the queues sleep:
	 * each change wakes them, and the new link's receivers reach them.
	 * The main thread makes no control call while the other thread runs.
	 */
	if (relink && timeouts == 0) {
		pthread_t t;
		int relink_events = 0, more = frames / 4, got_more = 0, state;

		if (pthread_create(&t, NULL, relink_thread, &port) != 0)
			die("pthread_create", -EAGAIN);
		for (;;) {
			state = __atomic_load_n(&relink_done, __ATOMIC_ACQUIRE);
			if (state != 0) {
				memset(&link, 0, sizeof(link));
				/* Safe now: the other thread's calls are done. */
				if (rte_eth_link_get_nowait(port, &link) == 0 &&
				    link.link_status == RTE_ETH_LINK_UP)
					break;
			}
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_enable(port, q);
			n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES, 5000);
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_disable(port, q);
			if (n == 0) {
				timeouts++;
				fprintf(stderr, "rx_intr: relink: no event in 5 s (state %d)\n", state);
				break;
			}
			if (n > 0)
				relink_events += n;
			for (q = 0; q < queues; q++) {
				if (drain(port, q) != 0) {
					fprintf(stderr, "rx_intr: relink: queue %u received\n", q);
					return 1;
				}
			}
		}
		pthread_join(t, NULL);
		if (__atomic_load_n(&relink_done, __ATOMIC_ACQUIRE) != 1)
			die("setting the link down and up", -EIO);
		printf("rx_intr: relink: link up after %d events, %d timeouts\n", relink_events,
		       timeouts);
		fflush(stdout);
		relink_events = 0;
		while (timeouts == 0 && got_more < more) {
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_enable(port, q);
			n = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, MAX_QUEUES, 5000);
			for (q = 0; q < queues; q++)
				rte_eth_dev_rx_intr_disable(port, q);
			if (n == 0) {
				timeouts++;
				fprintf(stderr, "rx_intr: relink: no event in 5 s with %d of %d frames\n",
					got_more, more);
				break;
			}
			if (n > 0)
				relink_events += n;
			for (q = 0; q < queues; q++) {
				rc = drain(port, q);
				if (rc < 0)
					return 1;
				got_more += rc;
			}
		}
		printf("rx_intr: relink: received %d frames, %d events, %d timeouts\n", got_more,
		       relink_events, timeouts);
		fflush(stdout);
		short_count = got_more != more;
	}
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	if (got != frames || timeouts != 0 || short_count)
		return 1;
	printf("rx_intr: ok\n");
	return 0;
}
