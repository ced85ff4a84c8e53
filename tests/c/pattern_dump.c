/*
 * pattern_dump.c -- writes frames 0..1999 of the mixed-size workload as made
 * by tests/c/pattern.h, each as a 32-bit little-endian length and the frame's
 * bytes, for tests/ffi.rs to compare with vecring_core::test_support::pattern.
 */
#include <stdio.h>

#include "pattern.h"

int main(void)
{
	static uint8_t buf[4 + 9216];
	for (uint64_t seq = 0; seq < 2000; seq++) {
		size_t len = pattern_mixed_len(seq);
		pattern_put_le64(buf, len, 4);
		pattern_fill(buf + 4, len, seq);
		uint64_t back;
		if (pattern_check(buf + 4, len, &back) != 0 || back != seq) {
			fprintf(stderr, "pattern_check refuses frame %llu\n", (unsigned long long)seq);
			return 1;
		}
		if (fwrite(buf, 1, 4 + len, stdout) != 4 + len)
			return 1;
	}
	return fflush(stdout) != 0;
}
