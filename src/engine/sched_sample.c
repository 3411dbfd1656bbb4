/* sched_sample.c - greedy / temperature sampling (see sched_sample.h). */
#include "engine/sched_sample.h"

#include <math.h>

void sched_rng_seed(sched_rng_t *r, uint64_t seed)
{
    r->s = seed ^ 0x9e3779b97f4a7c15ULL;
}

/* splitmix64: small, good enough, and state is one word per job */
static uint64_t rng_next(sched_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double sched_rng_uniform(sched_rng_t *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static int banned(const vocab_t *v, int32_t id)
{
    return v && vocab_is_eog(v, id);
}

int32_t sched_sample(const float *logits, int32_t n, float temperature, sched_rng_t *rng,
                     const vocab_t *ban_eog)
{
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++)
        if (!banned(ban_eog, i) && (best < 0 || logits[i] > logits[best]))
            best = i;
    if (best < 0)
        return 0;
    if (temperature <= 0.0f)
        return best;
    double sum = 0.0, maxl = logits[best];
    for (int32_t i = 0; i < n; i++)
        if (!banned(ban_eog, i))
            sum += exp(((double)logits[i] - maxl) / temperature);
    double u = sched_rng_uniform(rng) * sum, acc = 0.0;
    for (int32_t i = 0; i < n; i++) {
        if (banned(ban_eog, i))
            continue;
        acc += exp(((double)logits[i] - maxl) / temperature);
        if (acc > u)
            return i;
    }
    return best;
}
