/* rng.h - a small, self-contained pseudo-random generator for sampling.
 *
 * xoshiro256** (Blackman & Vigna, 2018, public domain reference at
 * prng.di.unimi.it), seeded through splitmix64 so that any 64-bit seed,
 * including 0, gives a well-mixed non-zero state. An rng_t is a plain value:
 * no global state, no allocation, not thread-safe (one per sequence). The
 * same seed always gives the same stream on every platform (only 64-bit
 * integer arithmetic; the double conversion is exact).
 */
#ifndef LF_RNG_H
#define LF_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} rng_t;

/* Seeds r from a 64-bit value (splitmix64 expands it into the state). */
void rng_seed(rng_t *r, uint64_t seed);

/* Next 64 random bits. */
uint64_t rng_next_u64(rng_t *r);

/* Uniform double in [0, 1) with 53 random bits. */
double rng_next_double(rng_t *r);

#endif
