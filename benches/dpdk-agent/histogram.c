/* The latency histogram's quantiles (histogram.h has its buckets). */
#include <math.h>

#include "histogram.h"

/* The smallest value of bucket `idx` (for the human summary). */
static uint64_t bucket_low(unsigned idx)
{
	unsigned g;

	if (idx < 32)
		return idx;
	g = idx - 32;
	return (uint64_t)(g % 16 + 16) << (g / 16 + 1);
}

uint64_t hist_quantile(const uint64_t *hist, uint64_t total, double q)
{
	uint64_t want = (uint64_t)ceil(q * (double)total), sum = 0;
	unsigned i;

	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		sum += hist[i];
		if (sum >= want)
			return bucket_low(i);
	}
	return 0;
}
