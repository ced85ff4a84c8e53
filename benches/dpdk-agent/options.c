/* The command line (the arguments after EAL's "--") and a trial's parameters. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_ip.h>

#include "agent.h"
#include "frame.h"

struct options opt;

/* A decimal number in 0..max with nothing around it. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x > max)
		return false;
	*v = x;
	return true;
}

static bool parse_ip(const char *s, uint32_t *v)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*v = ntohl(a.s_addr);
	return true;
}

/* "A" or "A-B" with A <= B: IPv4 addresses (host order) or ports. */
static bool parse_range(const char *s, bool ip, uint32_t *lo, uint32_t *hi)
{
	char buf[64], *dash;
	uint64_t v;

	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash != NULL)
		*dash++ = '\0';
	if (ip) {
		if (!parse_ip(buf, lo) || !parse_ip(dash ? dash : buf, hi))
			return false;
	} else {
		if (!parse_u64(buf, UINT16_MAX, &v))
			return false;
		*lo = (uint32_t)v;
		if (dash != NULL && !parse_u64(dash, UINT16_MAX, &v))
			return false;
		*hi = (uint32_t)v;
	}
	return *lo <= *hi;
}

static bool parse_mac(const char *s, struct rte_ether_addr *a)
{
	unsigned b[6];
	int n = 0, i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &n) != 6 ||
	    s[n] != '\0')
		return false;
	for (i = 0; i < 6; i++)
		a->addr_bytes[i] = (uint8_t)b[i];
	return true;
}

int set_trial_param(struct trial_params *t, const char *key, const char *val, char *err, size_t errlen)
{
	const char *range;
	uint64_t v;
	char *end;
	double d;

	if (strcmp(key, "size") == 0) {
		range = "64..9216";
		if (!parse_u64(val, UINT32_MAX, &v) || v < MIN_FRAME || v > MAX_FRAME)
			goto bad;
		t->size = (uint32_t)v;
	} else if (strcmp(key, "rate") == 0) {
		range = "0..1000000000 frames/s";
		if (!parse_u64(val, MAX_RATE, &t->rate))
			goto bad;
	} else if (strcmp(key, "secs") == 0) {
		range = "0..3600 seconds";
		errno = 0;
		d = strtod(val, &end);
		if (*val == '\0' || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || d > MAX_SECS)
			goto bad;
		t->secs = d;
	} else if (strcmp(key, "count") == 0) {
		range = "0..4294967296";
		if (!parse_u64(val, SEQ_LIMIT, &t->count))
			goto bad;
	} else if (strcmp(key, "burst") == 0) {
		range = "1..256";
		if (!parse_u64(val, MAX_BURST, &v) || v < 1)
			goto bad;
		t->burst = (uint32_t)v;
	} else {
		return 0;
	}
	return 1;
bad:
	snprintf(err, errlen, "%s must be %s, not '%s'", key, range, val);
	return -1;
}

bool trial_params_ok(const struct trial_params *t, char *err, size_t errlen)
{
	if (t->secs == 0 && t->count == 0) {
		snprintf(err, errlen, "secs=0 needs a count");
		return false;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vecring-dpdk-agent [EAL args] -- --mode gen|sink [options]\n"
		"  --size B          frame bytes incl. Ethernet header, no FCS (64..9216, default 64)\n"
		"  --rate PPS        offered frames/s, 0 = as fast as possible (default 0)\n"
		"  --secs S          send window in seconds (default 2; 0 = until --count)\n"
		"  --count N         frames per trial, 0 = no limit (default 0)\n"
		"  --burst N         frames per tx burst (1..256, default 32)\n"
		"  --clone N         frames per flow tuple (default 1)\n"
		"  --src-ip A[-B], --dst-ip A[-B]       (default 10.0.0.1, 10.0.0.2)\n"
		"  --src-port N[-M], --dst-port N[-M]   (default 1024, 1024)\n"
		"  --src-mac MAC     (default: the port's), --dst-mac MAC (default 02:00:00:00:00:02)\n"
		"  --verify          receivers check every payload byte\n"
		"  --once            run one trial, print its result line, exit\n"
		"Without --once, commands come on stdin: gen, counts, reset, stats, quit.\n");
}

static void die_usage(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "vecring-dpdk-agent: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n(see --help)\n");
	exit(2);
}

void parse_options(int argc, char **argv)
{
	static const struct rte_ether_addr default_dst = {{0x02, 0, 0, 0, 0, 0x02}};
	char err[256];
	int i;

	memset(&opt, 0, sizeof(opt));
	opt.trial = (struct trial_params){.size = 64, .rate = 0, .secs = 2.0, .count = 0, .burst = 32};
	opt.clone = 1;
	opt.sip_lo = opt.sip_hi = RTE_IPV4(10, 0, 0, 1);
	opt.dip_lo = opt.dip_hi = RTE_IPV4(10, 0, 0, 2);
	opt.sport_lo = opt.sport_hi = opt.dport_lo = opt.dport_hi = 1024;
	opt.dst_mac = default_dst;

	for (i = 0; i < argc; i++) {
		char name[64];
		const char *a = argv[i], *eq, *val = NULL;
		uint32_t lo, hi;
		int r;

		if (strncmp(a, "--", 2) != 0 || strlen(a) >= sizeof(name) + 2)
			die_usage("unexpected argument '%s'%s", a, "");
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
		if (strcmp(name, "help") == 0) {
			usage(stderr);
			exit(0);
		}
		if (strcmp(name, "verify") == 0 || strcmp(name, "once") == 0) {
			if (eq)
				die_usage("--%s takes no value%s", name, "");
			*(strcmp(name, "verify") == 0 ? &opt.verify : &opt.once) = true;
			continue;
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			die_usage("--%s needs a value%s", name, "");

		r = set_trial_param(&opt.trial, name, val, err, sizeof(err));
		if (r < 0)
			die_usage("--%s", err, "");
		if (r > 0)
			continue;
		if (strcmp(name, "mode") == 0) {
			if (strcmp(val, "gen") == 0)
				opt.mode = MODE_GEN;
			else if (strcmp(val, "sink") == 0)
				opt.mode = MODE_SINK;
			else
				die_usage("--mode must be gen or sink, not '%s'%s", val, "");
		} else if (strcmp(name, "clone") == 0) {
			if (!parse_u64(val, UINT32_MAX, &opt.clone) || opt.clone < 1)
				die_usage("bad --clone '%s' (1..2^32-1)%s", val, "");
		} else if (strcmp(name, "src-ip") == 0 || strcmp(name, "dst-ip") == 0) {
			if (!parse_range(val, true, &lo, &hi))
				die_usage("bad --%s '%s' (A.B.C.D or A.B.C.D-A.B.C.D, low first)", name, val);
			if (name[0] == 's') {
				opt.sip_lo = lo;
				opt.sip_hi = hi;
			} else {
				opt.dip_lo = lo;
				opt.dip_hi = hi;
			}
		} else if (strcmp(name, "src-port") == 0 || strcmp(name, "dst-port") == 0) {
			if (!parse_range(val, false, &lo, &hi))
				die_usage("bad --%s '%s' (N or N-M in 0..65535, low first)", name, val);
			if (name[0] == 's') {
				opt.sport_lo = (uint16_t)lo;
				opt.sport_hi = (uint16_t)hi;
			} else {
				opt.dport_lo = (uint16_t)lo;
				opt.dport_hi = (uint16_t)hi;
			}
		} else if (strcmp(name, "src-mac") == 0 || strcmp(name, "dst-mac") == 0) {
			if (!parse_mac(val, name[0] == 's' ? &opt.src_mac : &opt.dst_mac))
				die_usage("bad --%s '%s' (xx:xx:xx:xx:xx:xx)", name, val);
			if (name[0] == 's')
				opt.src_mac_set = true;
		} else {
			die_usage("unknown option '--%s'%s", name, "");
		}
	}
	if (opt.mode == MODE_NONE)
		die_usage("--mode gen|sink is required%s%s", "", "");
	if (!trial_params_ok(&opt.trial, err, sizeof(err)))
		die_usage("%s%s", err, "");
}
