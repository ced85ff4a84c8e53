/*
 * pattern.h -- vecring_core::test_support::pattern in C: self-checking frames made of a
 * sequence number (little-endian), an xorshift payload derived from it and
 * an FNV-1a checksum of both in the last 8 bytes, so that a receiver proves
 * that nothing was lost, duplicated, reordered or altered. Must stay
 * byte-for-byte equal to vecring-core/src/test_support/pattern.rs (tests/ffi.rs checks it
 * against the Rust implementation).
 */
#ifndef VECRING_TEST_PATTERN_H
#define VECRING_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_MIN_LEN 16

/* vecring_core::test_support::pattern::fnv1a: 64-bit FNV-1a, as in pattern.rs. */
static inline uint64_t pattern_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static inline void pattern_put_le64(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t pattern_get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void pattern_payload(uint8_t *p, size_t n, uint64_t seq)
{
	uint64_t x = (seq * 0x9e3779b97f4a7c15ull) | 1;
	for (size_t at = 0; at < n; at += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pattern_put_le64(p + at, x, n - at < 8 ? n - at : 8);
	}
}

/* Fills p[0..n) with frame seq. */
static inline void pattern_fill(uint8_t *p, size_t n, uint64_t seq)
{
	if (n < PATTERN_MIN_LEN) {
		pattern_put_le64(p, seq, n);
		return;
	}
	pattern_put_le64(p, seq, 8);
	pattern_payload(p + 8, n - 16, seq);
	pattern_put_le64(p + n - 8, pattern_fnv1a(p, n - 8), 8);
}

/* Checks a frame made by pattern_fill; returns 0 and its sequence number in
 * *seq, or -1 if it is damaged. */
static inline int pattern_check(const uint8_t *p, size_t n, uint64_t *seq)
{
	uint8_t expect[8];
	if (n < PATTERN_MIN_LEN)
		return -1;
	*seq = pattern_get_le64(p);
	if (pattern_fnv1a(p, n - 8) != pattern_get_le64(p + n - 8))
		return -1;
	uint64_t x = (*seq * 0x9e3779b97f4a7c15ull) | 1;
	for (size_t at = 8; at < n - 8; at += 8) {
		size_t k = n - 8 - at < 8 ? n - 8 - at : 8;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pattern_put_le64(expect, x, k);
		for (size_t i = 0; i < k; i++)
			if (p[at + i] != expect[i])
				return -1;
	}
	return 0;
}

/* Length of frame seq in the mixed-size workload: mostly 16..1514 bytes, one
 * in 64 a jumbo frame of 1515..9216 bytes. */
static inline size_t pattern_mixed_len(uint64_t seq)
{
	uint64_t r = (seq * 0x2545f4914f6cdd1dull) >> 32;
	if (r % 64 == 0)
		return 1515 + (size_t)((r >> 6) % (9216 - 1515 + 1));
	return 16 + (size_t)((r >> 6) % (1514 - 16 + 1));
}

/* pattern_mixed_len limited to max_len (>= 16) for links or peers that do
 * not carry jumbo frames. */
static inline size_t pattern_len(uint64_t seq, size_t max_len)
{
	size_t len = pattern_mixed_len(seq);
	return len <= max_len ? len : PATTERN_MIN_LEN + len % (max_len - PATTERN_MIN_LEN + 1);
}

#endif
