/*
 * check.h -- the check macros of the C API's contract tests (api.c,
 * wait_api.c): count each passed check, and stop at the first failed one,
 * naming it, its line and the library's last error message.
 *
 * The including file defines CHECK_PROGRAM (its name, e.g. "api") before
 * including this header, and prints "<program>: all N checks passed" with
 * `passed` at its end.
 */
#ifndef VECRING_TEST_CHECK_H
#define VECRING_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecring.h"

static int passed;

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		if (cond) {                                                                                \
			passed++;                                                                          \
		} else {                                                                                   \
			fprintf(stderr, "%s.c:%d: FAIL: %s: ", CHECK_PROGRAM, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                                      \
			fprintf(stderr, " [last error: %s]\n", vecring_last_error_message());              \
			printf("%s: failed after %d checks\n", CHECK_PROGRAM, passed);                     \
			exit(1);                                                                           \
		}                                                                                          \
	} while (0)

/* rc == want, naming both codes on failure. */
#define EXPECT(rc_expr, want)                                                                              \
	do {                                                                                               \
		int rc_ = (rc_expr);                                                                       \
		CHECK(rc_ == (want), "%s returned %d (%s), expected %d (%s)", #rc_expr, rc_,                \
		      vecring_strerror(rc_), (want), vecring_strerror(want));                              \
	} while (0)

/* Whether the library's last error message contains `needle`. */
static inline int last_error_contains(const char *needle)
{
	return strstr(vecring_last_error_message(), needle) != NULL;
}

#endif
