/*
 * The latency histogram, log-linear with 16 buckets per power of two: the
 * same buckets as the Rust agent's
 * (benches/src/bin/vecring-bench/agent/histogram.rs), whose harness merges
 * both kinds of agents' replies.
 */
#ifndef VECRING_DPDK_AGENT_HISTOGRAM_H
#define VECRING_DPDK_AGENT_HISTOGRAM_H

#include <stdint.h>

#define HIST_BUCKETS 976u /* index of 2^64-1: 32 + 58*16 + 15 = 975 */

_Static_assert(32 + (63 - 5) * 16 + (31 - 16) + 1 == HIST_BUCKETS, "the bucket of 2^64-1 is the last");

/* The bucket of `v` nanoseconds. */
static inline unsigned hist_index(uint64_t v)
{
	unsigned e, m;

	if (v < 32)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	m = (unsigned)(v >> (e - 4));            /* 16..31 */
	return 32u + (e - 5u) * 16u + (m - 16u);
}

/* The lower bound of the bucket holding quantile q of the `total` values in `hist`. */
uint64_t hist_quantile(const uint64_t *hist, uint64_t total, double q);

#endif
