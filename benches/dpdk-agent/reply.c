/*
 * The agent protocol's replies on stdout, one line each, flushed (serve.c
 * reads the commands), and the human summary of --once on stderr.
 */
#include <inttypes.h>
#include <stdarg.h>

#include "agent.h"

FILE *out;

static const char *const bad_why_name[BAD_WHY_N] = {"length", "magic", "stale-trial", "dst-mac", "seq",
						    "payload"};

/* On stderr, why frames were bad (the replies carry only the sum). */
static void note_bad(const char *what, const struct counts *c)
{
	unsigned i;

	if (bad_total(c) == 0)
		return;
	fprintf(stderr, "dpdk-agent: %s: bad frames:", what);
	for (i = 0; i < BAD_WHY_N; i++)
		if (c->bad_why[i])
			fprintf(stderr, " %s %" PRIu64, bad_why_name[i], c->bad_why[i]);
	fputc('\n', stderr);
}

static void print_lat_hist(const struct counts *c)
{
	unsigned i;
	bool first = true;

	fprintf(out, " min=%" PRIu64 " max=%" PRIu64 " hist=", c->rx ? c->lat_min : 0, c->lat_max);
	for (i = 0; i < HIST_BUCKETS; i++) {
		if (c->hist[i] == 0)
			continue;
		fprintf(out, "%s%u:%" PRIu64, first ? "" : ",", i, c->hist[i]);
		first = false;
	}
	fputc('\n', out);
	fflush(out);
}

void reply_gen(const struct trial_result *r, const struct counts *c)
{
	fprintf(out,
		"ok trial=%u offered=%" PRIu64 " tx=%" PRIu64 " rx=%" PRIu64 " lost=%" PRIu64 " reordered=%" PRIu64 " dup=%" PRIu64
		" bad=%" PRIu64 " tx_secs=%.6f kept_rate=%d",
		(unsigned)c->trial, r->offered, r->tx, c->rx, r->offered > c->unique ? r->offered - c->unique : 0, c->reordered, c->dup,
		bad_total(c), r->tx_secs,
		r->kept_rate ? 1 : 0);
	print_lat_hist(c);
	note_bad("gen", c);
}

void reply_counts(const struct counts *c)
{
	fprintf(out, "ok rx=%" PRIu64 " unique=%" PRIu64 " reordered=%" PRIu64 " dup=%" PRIu64 " bad=%" PRIu64, c->rx,
		c->unique, c->reordered, c->dup, bad_total(c));
	print_lat_hist(c);
	note_bad("counts", c);
}

void reply(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

void summary(const struct trial_params *t, const struct trial_result *r, const struct counts *c)
{
	double pps = r && r->tx_secs > 0 ? (double)r->tx / r->tx_secs : 0;

	if (r != NULL)
		fprintf(stderr, "Result: %s: %" PRIu64 " frames of %u bytes in %.6f s: %.0f pps %.1f Mb/s\n",
			r->kept_rate ? "OK" : "rate not kept", r->tx, t->size, r->tx_secs, pps,
			pps * t->size * 8 / 1e6);
	fprintf(stderr, "  rx %" PRIu64 " unique %" PRIu64 " lost %" PRIu64 " reordered %" PRIu64 " dup %" PRIu64
			" bad %" PRIu64 "\n",
		c->rx, c->unique, r && r->tx > c->unique ? r->tx - c->unique : 0, c->reordered, c->dup, bad_total(c));
	if (c->rx)
		fprintf(stderr, "  latency ns (%s): min %" PRIu64 " p50 >=%" PRIu64 " p99 >=%" PRIu64 " max %" PRIu64 "\n",
			r ? "round trip" : "one way", c->lat_min, hist_quantile(c->hist, c->rx, 0.5), hist_quantile(c->hist, c->rx, 0.99),
			c->lat_max);
}
