/* sched_sample.h - the scheduler's minimal token sampler: greedy when the
 * temperature is 0, else a softmax draw with a per-job RNG (so a seeded job
 * gives the same tokens whatever else runs). The full sampler chain
 * (engine/sampler.h: top-k/p, min-p, penalties, bias) replaces the body of
 * sched_sample() when it lands; the signature is the scheduler's only
 * dependency.
 */
#ifndef LF_SCHED_SAMPLE_H
#define LF_SCHED_SAMPLE_H

#include <stdint.h>

#include "engine/vocab.h"

typedef struct {
    uint64_t s;
} sched_rng_t;

void sched_rng_seed(sched_rng_t *r, uint64_t seed);
/* Uniform in [0, 1). */
double sched_rng_uniform(sched_rng_t *r);

/* Picks a token from logits[0..n). ban_eog: if not NULL, end-of-generation
 * tokens of that vocabulary are never picked (ignore_eos). */
int32_t sched_sample(const float *logits, int32_t n, float temperature, sched_rng_t *rng,
                     const vocab_t *ban_eog);

#endif
