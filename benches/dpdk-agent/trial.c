/*
 * A generator's trial: frames built and sent in bursts, paced to the rate
 * asked (or unthrottled), what comes back counted meanwhile and during a
 * drain after the last one; and a sink's counting window for --once.
 */
#include <math.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "agent.h"
#include "frame.h"

uint16_t trial_id;
struct counts trial_counts;

void run_trial(const struct trial_params *t, struct trial_result *r)
{
	struct counts *c = &trial_counts;
	struct rte_mbuf *pend[MAX_BURST];
	uint8_t tmpl[SEQ_OFF];
	struct flow flow = {opt.sip_lo, opt.dip_lo, opt.sport_lo, opt.dport_lo};
	const bool multi_flow = opt.sip_lo != opt.sip_hi || opt.dip_lo != opt.dip_hi || opt.sport_lo != opt.sport_hi ||
				opt.dport_lo != opt.dport_hi;
	/*
	 * Frames to build: `count`, and at a rate no more than the window
	 * holds (a burst due just before the window's end would overshoot).
	 */
	const uint64_t count = t->count ? t->count : SEQ_LIMIT;
	const uint64_t limit = t->rate && t->secs > 0 ?
				       RTE_MIN(count, (uint64_t)ceil((double)t->rate * t->secs)) :
				       count;
	const double tsc_per_frame = t->rate ? (double)tsc_hz / (double)t->rate : 0;
	uint64_t clone_left = opt.clone, built = 0, tx = 0, expect;
	uint64_t t0, t_end, t_stop, due, now, next_link, last_rx, drain_start, prev, gap = 0;
	unsigned n_pend = 0;
	bool link_ok, alloc_noted = false;

	trial_id = (uint16_t)(trial_id + 1) ? (uint16_t)(trial_id + 1) : 1;
	counts_reset(c);
	c->trial = trial_id;
	c->adopt = false;
	c->size = t->size;
	c->check_dst = true;
	c->seq_limit = 0;
	/*
	 * Size the bitmap before sending, so it is not grown while frames
	 * arrive: for the frames the trial asks for, or (unthrottled) what 100
	 * Mpps would send; up to SEQ_RESERVE_MAX, past which it grows lazily.
	 */
	expect = t->count ? t->count : (uint64_t)((t->rate ? (double)t->rate * 1.01 : 1e8) * t->secs);
	seen_reserve(c, (RTE_MIN(expect, SEQ_RESERVE_MAX) + 63) / 64);
	build_template(tmpl, &flow, t->size, trial_id);
	if (t->size > max_frame)
		fprintf(stderr, "dpdk-agent: note: %u-byte frames exceed the port's max_frame %u\n", t->size, max_frame);

	link_ok = link_up();
	t0 = rte_rdtsc();
	/* A count-only trial gives up after an hour, as the Rust agent. */
	t_end = t0 + (uint64_t)((t->secs > 0 ? t->secs : MAX_SECS) * (double)tsc_hz);
	next_link = t0 + tsc_hz / 100;
	due = t0;
	prev = t0;
	for (;;) {
		now = rte_rdtsc();
		/* The loop's longest pause (preemption): it shows in latency and pacing. */
		if (now - prev > gap)
			gap = now - prev;
		prev = now;
		if (now >= t_end || (t->rate ? built >= limit : tx >= count) || stop)
			break;
		if (n_pend > 0 || (built < limit && now >= due)) {
			unsigned old = n_pend, k, i, sent;
			uint64_t stamp = mono_ns();

			if (built < limit && now >= due && n_pend < t->burst) {
				k = (unsigned)RTE_MIN((uint64_t)(t->burst - n_pend), limit - built);
				/* Paced: only the frames due by now, as the Rust agent. */
				if (t->rate) {
					uint64_t due_now = (uint64_t)((double)(now - t0) / tsc_per_frame) + 1;

					if (due_now > built && due_now - built < k)
						k = (unsigned)(due_now - built);
				}
				if (rte_pktmbuf_alloc_bulk(pool, pend + n_pend, k) == 0) {
					for (i = 0; i < k; i++) {
						if (multi_flow) {
							if (clone_left == 0) {
								flow_next(&flow);
								build_template(tmpl, &flow, t->size, trial_id);
								clone_left = opt.clone;
							}
							clone_left--;
						}
						fill_frame(pend[n_pend + i], tmpl, t->size, built + i, stamp);
					}
					n_pend += k;
					built += k;
					c->seq_limit = built;
					due = t0 + (uint64_t)((double)built * tsc_per_frame);
				} else if (!alloc_noted) {
					fprintf(stderr, "dpdk-agent: mbuf pool empty; retrying\n");
					alloc_noted = true;
				}
			}
			/* Frames the PMD refused before go again, stamped with this burst's time. */
			for (i = 0; i < old; i++)
				st64(rte_pktmbuf_mtod(pend[i], uint8_t *) + STAMP_OFF, stamp);
			sent = rte_eth_tx_burst(port, 0, pend, (uint16_t)n_pend);
			tx += sent;
			n_pend -= sent;
			if (n_pend > 0 && t->rate) {
				/*
				 * Paced: a frame the full ring refuses is lost, as on
				 * a NIC whose queue is full; it keeps its sequence
				 * number, so the receiver sees the gap.
				 */
				rte_pktmbuf_free_bulk(pend + sent, n_pend);
				n_pend = 0;
			} else if (n_pend > 0 && sent > 0) {
				memmove(pend, pend + sent, n_pend * sizeof(*pend));
			}
		}
		rx_poll(c);
		if (now >= next_link) {
			link_ok = link_ok && link_up();
			next_link = now + tsc_hz / 100;
		}
	}
	t_stop = now;
	/* Frames built but never accepted were not sent: free them, count nothing. */
	if (n_pend > 0)
		rte_pktmbuf_free_bulk(pend, n_pend);
	link_ok = link_ok && link_up();

	/* The drain: whatever is still on its way back. */
	drain_start = last_rx = rte_rdtsc();
	while (!stop) {
		now = rte_rdtsc();
		if (rx_poll(c) > 0)
			last_rx = now;
		if (now - last_rx >= DRAIN_QUIET_NS * tsc_hz / 1000000000ull ||
		    now - drain_start >= DRAIN_MAX_NS * tsc_hz / 1000000000ull)
			break;
	}

	if (gap > tsc_hz / 1000)
		fprintf(stderr, "dpdk-agent: note: the send loop was held up for %.1f ms once\n",
			(double)gap * 1e3 / (double)tsc_hz);
	r->tx = tx;
	/* Paced: every frame given a sequence number; unthrottled: those sent. */
	r->offered = t->rate ? built : tx;
	r->tx_secs = (double)(t_stop - t0) / (double)tsc_hz;
	r->kept_rate = link_ok && (t->rate == 0 || built >= limit || (double)built >= 0.999 * (double)t->rate * t->secs);
}

void run_sink_window(const struct trial_params *t)
{
	uint64_t t0 = rte_rdtsc();
	uint64_t t_end = t->secs > 0 ? t0 + (uint64_t)(t->secs * (double)tsc_hz) : UINT64_MAX;

	while (!stop && rte_rdtsc() < t_end && (t->count == 0 || idle_counts.rx < t->count))
		rx_poll(&idle_counts);
}
