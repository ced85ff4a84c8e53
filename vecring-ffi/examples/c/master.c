/*
 * master.c -- the host side of a two-process vecring link in C: it creates
 * the link, waits for a slave (slave.c, in another process or a container),
 * sends COUNT numbered frames, and waits for the slave to have read them.
 *
 * Build (see docs/c-api.md), from the build tree or against the installed
 * library, then run the master and the slave in two shells:
 *
 *     cc master.c -o master $(pkg-config --cflags --libs vecring)
 *     ./master [RUN_DIR [COUNT]]      # default /run/vecring, 1000 frames
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vecring.h>

static int check(int rc, const char *what)
{
	if (rc < 0)
		fprintf(stderr, "master: %s: %s: %s\n", what, vecring_strerror(rc), vecring_last_error_message());
	return rc < 0;
}

int main(int argc, char **argv)
{
	vecring_options_t opts;
	vecring_link_t *link = NULL;
	unsigned long count = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	int failed = 1;

	vecring_options_init(&opts); /* always first: defaults, and the struct's size */
	opts.domain = "demo";
	opts.link = "eth0";
	opts.run_dir = argc > 1 ? argv[1] : NULL;
	opts.role = VECRING_ROLE_MASTER;
	if (check(vecring_open(&opts, &link), "open"))
		goto out;
	printf("master: waiting for the slave\n");
	fflush(stdout);
	if (check(vecring_wait_up(link, 30000, NULL), "wait for the slave"))
		goto out;

	for (unsigned long i = 0; i < count; i++) {
		char frame[64];
		int n = snprintf(frame, sizeof frame, "frame %lu", i);
		/* A full ring means the slave is behind: sleep until it has read
		 * (30 s at most; then VECRING_E_AGAIN). */
		int rc = vecring_send_timeout(link, frame, (size_t)n + 1, 30000);
		if (check(rc, "send"))
			goto out;
	}
	/* Wait for the slave to close: it has read every frame by then. */
	if (check(vecring_wait_down(link, 30000), "wait for the slave to finish"))
		goto out;
	printf("master: sent %lu frames\n", count);
	failed = 0;
out:
	vecring_close(link);
	return failed;
}
