/*
 * The agent protocol's commands, one line each on stdin (main.c has the
 * whole protocol): gen, counts, reset, stats, quit; each answered by
 * exactly one reply (reply.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "agent.h"

struct counts idle_counts;

/* Handles one command line; returns false on `quit`. */
static bool handle_command(char *line)
{
	char *save = NULL, *verb, *tok;
	char err[256];

	verb = strtok_r(line, " \t\r", &save);
	if (verb == NULL) {
		reply("err empty command");
		return true;
	}
	if (strcmp(verb, "gen") == 0) {
		struct trial_params t = opt.trial;
		struct trial_result r;

		if (opt.mode != MODE_GEN) {
			reply("err gen needs --mode gen");
			return true;
		}
		while ((tok = strtok_r(NULL, " \t\r", &save)) != NULL) {
			char *eq = strchr(tok, '=');

			if (eq == NULL) {
				reply("err gen: expected key=value, got '%s'", tok);
				return true;
			}
			*eq = '\0';
			switch (set_trial_param(&t, tok, eq + 1, err, sizeof(err))) {
			case 0:
				reply("err gen: unknown key '%s' (size, rate, secs, count, burst)", tok);
				return true;
			case -1:
				reply("err gen: %s", err);
				return true;
			}
		}
		if (!trial_params_ok(&t, err, sizeof(err))) {
			reply("err gen: %s", err);
			return true;
		}
		run_trial(&t, &r);
		reply_gen(&r, &trial_counts);
		return true;
	}
	tok = strtok_r(NULL, " \t\r", &save);
	if (strcmp(verb, "reset") == 0 && tok != NULL) {
		/* reset trial=ID: count that trial's frames only. */
		char *end = NULL;
		unsigned long id;

		errno = 0;
		id = strncmp(tok, "trial=", 6) == 0 ? strtoul(tok + 6, &end, 10) : 0;
		if (end == NULL || *end != '\0' || errno != 0 || id == 0 || id > UINT16_MAX ||
		    strtok_r(NULL, " \t\r", &save) != NULL) {
			reply("err %s: reset takes trial=ID, ID 1..=65535", tok);
			return true;
		}
		counts_reset(&idle_counts);
		idle_counts.trial = (uint16_t)id;
		idle_counts.adopt = false;
		reply("ok");
		return true;
	}
	if (strcmp(verb, "counts") == 0 || strcmp(verb, "reset") == 0 || strcmp(verb, "stats") == 0 ||
	    strcmp(verb, "quit") == 0) {
		if (tok != NULL) {
			reply("err %s takes no arguments", verb);
			return true;
		}
	} else {
		reply("err unknown command: %s", verb);
		return true;
	}
	if (strcmp(verb, "counts") == 0) {
		reply_counts(&idle_counts);
	} else if (strcmp(verb, "reset") == 0) {
		counts_reset(&idle_counts);
		idle_counts.adopt = true;
		reply("ok");
	} else if (strcmp(verb, "stats") == 0) {
		struct rte_eth_stats s;
		int rc = rte_eth_stats_get(port, &s);

		if (rc != 0)
			reply("err stats: %s", rte_strerror(-rc));
		else
			reply("ok ipackets=%" PRIu64 " opackets=%" PRIu64 " imissed=%" PRIu64 " oerrors=%" PRIu64,
			      s.ipackets, s.opackets, s.imissed, s.oerrors);
	} else {
		reply("ok");
		return false;
	}
	return true;
}

void serve(void)
{
	static char line[LINE_MAX_LEN + 1];
	size_t len = 0;
	bool skipping = false; /* inside an overlong line */
	const uint64_t check_every = tsc_hz / 10000;
	uint64_t next_check = 0;

	while (!stop) {
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		uint64_t now;
		ssize_t n;
		char *nl;

		rx_poll(&idle_counts);
		now = rte_rdtsc();
		if (now < next_check)
			continue;
		next_check = now + check_every;
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		n = read(STDIN_FILENO, line + len, LINE_MAX_LEN - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return; /* EOF (or stdin unusable): as quit */
		len += (size_t)n;
		while ((nl = memchr(line, '\n', len)) != NULL) {
			size_t used = (size_t)(nl - line) + 1;

			*nl = '\0';
			if (skipping)
				skipping = false;
			else if (!handle_command(line))
				return;
			memmove(line, nl + 1, len - used);
			len -= used;
		}
		if (len == LINE_MAX_LEN) {
			if (!skipping)
				reply("err command longer than %u bytes", LINE_MAX_LEN);
			skipping = true;
			len = 0;
		}
	}
}
