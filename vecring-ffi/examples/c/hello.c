/*
 * hello.c -- the smallest vecring program in C: it opens both ends of a link
 * (in real use they are two processes, e.g. a host and a container), sends
 * one frame from the master and receives it on the slave.
 *
 * Build and run (see docs/c-api.md):
 *
 *     cc hello.c -o hello $(pkg-config --cflags --libs vecring)
 *     ./hello [RUN_DIR]          # default run directory: /run/vecring
 */
#include <stdio.h>
#include <string.h>
#include <vecring.h>

static int check(int rc, const char *what)
{
	if (rc < 0)
		fprintf(stderr, "hello: %s: %s: %s\n", what, vecring_strerror(rc), vecring_last_error_message());
	return rc < 0;
}

int main(int argc, char **argv)
{
	vecring_options_t opts;
	vecring_link_t *master = NULL, *slave = NULL;
	int failed = 1;

	vecring_options_init(&opts); /* always first: defaults, and the struct's size */
	opts.domain = "hello";
	opts.link = "eth0";
	opts.run_dir = argc > 1 ? argv[1] : NULL;

	/* The master creates the link memory and listens for the slave. */
	opts.role = VECRING_ROLE_MASTER;
	if (check(vecring_open(&opts, &master), "open master"))
		goto out;
	/* The slave connects; either side may come first. */
	opts.role = VECRING_ROLE_SLAVE;
	if (check(vecring_open(&opts, &slave), "open slave"))
		goto out;

	if (check(vecring_wait_up(slave, 5000, NULL), "wait for the link"))
		goto out;
	if (check(vecring_wait_up(master, 5000, NULL), "wait for the link"))
		goto out;

	static const char msg[] = "hello, vecring";
	if (check(vecring_send(master, msg, sizeof msg), "send"))
		goto out;

	char buf[9216];
	size_t len = 0;
	int rc;
	for (int tries = 0; (rc = vecring_recv(slave, buf, sizeof buf, &len)) == VECRING_E_AGAIN && tries < 1000000;
	     tries++)
		; /* a real receiver polls, or sleeps between polls */
	if (check(rc, "receive"))
		goto out;

	printf("slave received %zu bytes: %s\n", len, buf);
	failed = len != sizeof msg || memcmp(buf, msg, len) != 0;
out:
	vecring_close(slave);
	vecring_close(master);
	return failed;
}
