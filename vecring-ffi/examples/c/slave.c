/*
 * slave.c -- the container side of a two-process vecring link in C: it
 * connects to the master's link (master.c), receives COUNT frames, checks
 * each one's number, and closes.
 *
 *     cc slave.c -o slave $(pkg-config --cflags --libs vecring)
 *     ./slave [RUN_DIR [COUNT]]       # default /run/vecring, 1000 frames
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vecring.h>

static int check(int rc, const char *what)
{
	if (rc < 0)
		fprintf(stderr, "slave: %s: %s: %s\n", what, vecring_strerror(rc), vecring_last_error_message());
	return rc < 0;
}

int main(int argc, char **argv)
{
	vecring_options_t opts;
	vecring_link_t *link = NULL;
	unsigned long count = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	int failed = 1;

	vecring_options_init(&opts);
	opts.domain = "demo";
	opts.link = "eth0";
	opts.run_dir = argc > 1 ? argv[1] : NULL;
	opts.role = VECRING_ROLE_SLAVE; /* the default; either side may start first */
	if (check(vecring_open(&opts, &link), "open"))
		goto out;
	/* Say what this side waits for: a silent slave looks hung. */
	fprintf(stderr, "slave: waiting for the master of demo/eth0 (up to 30 s)\n");
	if (check(vecring_wait_up(link, 30000, NULL), "wait for the master"))
		goto out;

	for (unsigned long i = 0; i < count; i++) {
		char buf[9216], want[64];
		size_t len = 0;
		/* Sleeps until the frame comes (30 s at most; then VECRING_E_AGAIN). */
		int rc = vecring_recv_timeout(link, buf, sizeof buf, &len, 30000);
		if (check(rc, "receive"))
			goto out;
		int n = snprintf(want, sizeof want, "frame %lu", i);
		if (len != (size_t)n + 1 || memcmp(buf, want, len) != 0) {
			fprintf(stderr, "slave: frame %lu: got %zu bytes '%.*s'\n", i, len, (int)len, buf);
			goto out;
		}
	}
	printf("slave: received %lu frames in order\n", count);
	failed = 0;
out:
	vecring_close(link);
	return failed;
}
