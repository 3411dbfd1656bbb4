/* sampler.c - the sampling chain of sampler.h.
 *
 * Working memory (all sized n_vocab at creation, reused every step):
 *   work[t]  the logits being transformed (indexed by token id)
 *   expv[t]  exp(work[t] - max) once temperature is applied
 *   cand[]   the surviving token ids, either in ascending id order (no
 *            sorting step ran) or sorted best-first (top-k / top-p ran)
 *   heap[]   scratch for the partial sort
 *   bucket[] top-p's bucket index per candidate (see sampler_top_p)
 *   score[t] typical-p's |-log p - H| (only allocated when typical_p < 1)
 * Both orders are a pure function of the logits and the parameters, so the
 * draw is reproducible for a given seed.
 */
#include "engine/sample/sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sample/rng.h"

enum {
    SAMPLER_SEEN_PROMPT = 1,
    SAMPLER_SEEN_OUTPUT = 2
};

/* top-p buckets: SAMPLER_BUCKETS slices of 1/SAMPLER_BUCKET_SCALE nat below
 * the max logit; the last one also takes everything further down. */
#define SAMPLER_BUCKETS 1024
#define SAMPLER_BUCKET_SCALE 32.0f

struct sampler {
    sampler_params_t p; /* array pointers cleared: see the copies below */
    int32_t n_vocab;
    uint64_t seed;      /* what the RNG was seeded with */
    rng_t rng;

    sampler_bias_t *bias; /* deduplicated copy of p.logit_bias */
    int32_t n_bias;
    int32_t *ban;         /* copy of p.banned */
    int32_t n_ban;
    int32_t *mt_ban;      /* copy of p.min_tokens_ban */
    int32_t n_mt_ban;

    uint32_t *counts;     /* [n_vocab] times generated */
    uint8_t *seen_flags;  /* [n_vocab] SAMPLER_SEEN_* */
    int32_t *seen;        /* distinct tokens with a flag, n_seen of them */
    int32_t n_seen;
    int32_t n_generated;

    const uint32_t *allowed;
    sampler_mask_fn mask_fn;
    void *mask_ctx;

    float *work;          /* [n_vocab] */
    float *expv;          /* [n_vocab] */
    int32_t *cand;        /* [n_vocab] */
    int32_t *heap;        /* [n_vocab] */
    uint16_t *bucket;     /* [n_vocab] */
    float *score;         /* [n_vocab] when typical_p < 1, else NULL */
    double bmass[SAMPLER_BUCKETS];
};

void sampler_params_default(sampler_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->temperature = 1.0f;
    p->top_k = -1;
    p->top_p = 1.0f;
    p->min_p = 0.0f;
    p->typical_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

static lf_code_t sampler_bad(const char **param, const char *name, lf_err_t *err,
                             const char *what)
{
    if (param)
        *param = name;
    return lf_err_set(err, LF_ERR_INVALID, "%s: %s", name, what);
}

/* Range checks are written as !(lo <= x && x <= hi) so NaN fails them. */
lf_code_t sampler_params_validate(const sampler_params_t *p, int32_t n_vocab,
                                  const char **param, lf_err_t *err)
{
    char what[160];
    if (param)
        *param = NULL;
    if (n_vocab <= 0)
        return sampler_bad(param, "n_vocab", err, "vocabulary is empty");
    if (!(p->temperature >= 0.0f && p->temperature <= SAMPLER_TEMPERATURE_MAX)) {
        snprintf(what, sizeof(what), "must be between 0 and %g, got %g",
                 (double)SAMPLER_TEMPERATURE_MAX, (double)p->temperature);
        return sampler_bad(param, "temperature", err, what);
    }
    if (p->top_k < -1) {
        snprintf(what, sizeof(what), "must be -1 or 0 (off) or at least 1, got %d",
                 (int)p->top_k);
        return sampler_bad(param, "top_k", err, what);
    }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
        snprintf(what, sizeof(what), "must be in (0, 1], got %g", (double)p->top_p);
        return sampler_bad(param, "top_p", err, what);
    }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
        snprintf(what, sizeof(what), "must be in [0, 1], got %g", (double)p->min_p);
        return sampler_bad(param, "min_p", err, what);
    }
    if (!(p->typical_p > 0.0f && p->typical_p <= 1.0f)) {
        snprintf(what, sizeof(what), "must be in (0, 1], got %g", (double)p->typical_p);
        return sampler_bad(param, "typical_p", err, what);
    }
    if (!(p->frequency_penalty >= -SAMPLER_PENALTY_MAX &&
          p->frequency_penalty <= SAMPLER_PENALTY_MAX)) {
        snprintf(what, sizeof(what), "must be between -2 and 2, got %g",
                 (double)p->frequency_penalty);
        return sampler_bad(param, "frequency_penalty", err, what);
    }
    if (!(p->presence_penalty >= -SAMPLER_PENALTY_MAX &&
          p->presence_penalty <= SAMPLER_PENALTY_MAX)) {
        snprintf(what, sizeof(what), "must be between -2 and 2, got %g",
                 (double)p->presence_penalty);
        return sampler_bad(param, "presence_penalty", err, what);
    }
    if (!(p->repetition_penalty > 0.0f && isfinite(p->repetition_penalty))) {
        snprintf(what, sizeof(what), "must be greater than 0, got %g",
                 (double)p->repetition_penalty);
        return sampler_bad(param, "repetition_penalty", err, what);
    }
    if (p->n_logit_bias < 0 || (p->n_logit_bias > 0 && !p->logit_bias))
        return sampler_bad(param, "logit_bias", err, "malformed list");
    for (int32_t i = 0; i < p->n_logit_bias; i++) {
        const sampler_bias_t *b = &p->logit_bias[i];
        if (b->token < 0 || b->token >= n_vocab) {
            snprintf(what, sizeof(what), "token id %d is not in the vocabulary (0..%d)",
                     (int)b->token, (int)n_vocab - 1);
            return sampler_bad(param, "logit_bias", err, what);
        }
        if (!(b->bias >= -SAMPLER_LOGIT_BIAS_MAX && b->bias <= SAMPLER_LOGIT_BIAS_MAX)) {
            snprintf(what, sizeof(what), "bias for token %d must be between -100 and 100, got %g",
                     (int)b->token, (double)b->bias);
            return sampler_bad(param, "logit_bias", err, what);
        }
    }
    if (p->min_tokens < 0) {
        snprintf(what, sizeof(what), "must be at least 0, got %d", (int)p->min_tokens);
        return sampler_bad(param, "min_tokens", err, what);
    }
    const struct {
        const char *name;
        const int32_t *ids;
        int32_t n;
    } lists[] = {
        {"min_tokens", p->min_tokens_ban, p->n_min_tokens_ban},
        {"bad_words", p->banned, p->n_banned},
    };
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        if (lists[l].n < 0 || (lists[l].n > 0 && !lists[l].ids))
            return sampler_bad(param, lists[l].name, err, "malformed token list");
        for (int32_t i = 0; i < lists[l].n; i++) {
            if (lists[l].ids[i] < 0 || lists[l].ids[i] >= n_vocab) {
                snprintf(what, sizeof(what), "token id %d is not in the vocabulary (0..%d)",
                         (int)lists[l].ids[i], (int)n_vocab - 1);
                return sampler_bad(param, lists[l].name, err, what);
            }
        }
    }
    return LF_OK;
}

static int32_t *sampler_ids_dup(const int32_t *ids, int32_t n)
{
    int32_t *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0)
        memcpy(c, ids, sizeof(*c) * (size_t)n);
    return c;
}

sampler_t *sampler_create(const sampler_params_t *p, int32_t n_vocab,
                          uint64_t entropy, lf_err_t *err)
{
    if (sampler_params_validate(p, n_vocab, NULL, err) != LF_OK)
        return NULL;
    sampler_t *s = calloc(1, sizeof(*s));
    if (!s) {
        lf_err_set(err, LF_ERR_NOMEM, "sampler: out of memory");
        return NULL;
    }
    size_t nv = (size_t)n_vocab;
    s->p = *p;
    s->p.logit_bias = NULL;
    s->p.min_tokens_ban = NULL;
    s->p.banned = NULL;
    s->n_vocab = n_vocab;
    s->seed = p->has_seed ? p->seed : entropy;
    s->bias = malloc(sizeof(*s->bias) * (size_t)(p->n_logit_bias > 0 ? p->n_logit_bias : 1));
    s->ban = sampler_ids_dup(p->banned, p->n_banned);
    s->n_ban = p->n_banned;
    s->mt_ban = sampler_ids_dup(p->min_tokens_ban, p->n_min_tokens_ban);
    s->n_mt_ban = p->n_min_tokens_ban;
    s->counts = calloc(nv, sizeof(*s->counts));
    s->seen_flags = calloc(nv, sizeof(*s->seen_flags));
    s->seen = malloc(sizeof(*s->seen) * nv);
    s->work = malloc(sizeof(*s->work) * nv);
    s->expv = malloc(sizeof(*s->expv) * nv);
    s->cand = malloc(sizeof(*s->cand) * nv);
    s->heap = malloc(sizeof(*s->heap) * nv);
    s->bucket = malloc(sizeof(*s->bucket) * nv);
    if (p->typical_p < 1.0f)
        s->score = malloc(sizeof(*s->score) * nv);
    if (!s->bias || !s->ban || !s->mt_ban || !s->counts || !s->seen_flags || !s->seen ||
        !s->work || !s->expv || !s->cand || !s->heap ||
        !s->bucket || (p->typical_p < 1.0f && !s->score)) {
        sampler_free(s);
        lf_err_set(err, LF_ERR_NOMEM, "sampler: out of memory for %d tokens", (int)n_vocab);
        return NULL;
    }
    /* Deduplicate logit_bias, the last entry for an id wins (as a JSON object
     * would): walk backwards, using counts[] as a scratch "already have" mark. */
    for (int32_t i = p->n_logit_bias - 1; i >= 0; i--) {
        int32_t t = p->logit_bias[i].token;
        if (s->counts[t])
            continue;
        s->counts[t] = 1;
        s->bias[s->n_bias++] = p->logit_bias[i];
    }
    for (int32_t i = 0; i < s->n_bias; i++)
        s->counts[s->bias[i].token] = 0;
    rng_seed(&s->rng, s->seed);
    return s;
}

void sampler_free(sampler_t *s)
{
    if (!s)
        return;
    free(s->bias);
    free(s->ban);
    free(s->mt_ban);
    free(s->counts);
    free(s->seen_flags);
    free(s->seen);
    free(s->work);
    free(s->expv);
    free(s->cand);
    free(s->heap);
    free(s->bucket);
    free(s->score);
    free(s);
}

void sampler_reset(sampler_t *s)
{
    for (int32_t i = 0; i < s->n_seen; i++) {
        s->counts[s->seen[i]] = 0;
        s->seen_flags[s->seen[i]] = 0;
    }
    s->n_seen = 0;
    s->n_generated = 0;
    s->allowed = NULL;
    s->mask_fn = NULL;
    s->mask_ctx = NULL;
    rng_seed(&s->rng, s->seed);
}

static void sampler_mark(sampler_t *s, int32_t t, uint8_t flag)
{
    if (!s->seen_flags[t])
        s->seen[s->n_seen++] = t;
    s->seen_flags[t] |= flag;
}

lf_code_t sampler_add_prompt(sampler_t *s, const int32_t *tokens, int32_t n,
                             lf_err_t *err)
{
    if (n < 0 || (n > 0 && !tokens))
        return lf_err_set(err, LF_ERR_INVALID, "sampler: malformed prompt");
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->n_vocab)
            return lf_err_set(err, LF_ERR_INVALID, "sampler: prompt token %d out of range",
                              (int)tokens[i]);
    for (int32_t i = 0; i < n; i++)
        sampler_mark(s, tokens[i], SAMPLER_SEEN_PROMPT);
    return LF_OK;
}

lf_code_t sampler_accept(sampler_t *s, int32_t token, lf_err_t *err)
{
    if (token < 0 || token >= s->n_vocab)
        return lf_err_set(err, LF_ERR_INVALID, "sampler: token %d out of range", (int)token);
    sampler_mark(s, token, SAMPLER_SEEN_OUTPUT);
    if (s->counts[token] < UINT32_MAX)
        s->counts[token]++;
    if (s->n_generated < INT32_MAX)
        s->n_generated++;
    return LF_OK;
}

int32_t sampler_n_generated(const sampler_t *s)
{
    return s->n_generated;
}

void sampler_set_allowed(sampler_t *s, const uint32_t *allowed)
{
    s->allowed = allowed;
}

void sampler_set_mask_fn(sampler_t *s, sampler_mask_fn fn, void *ctx)
{
    s->mask_fn = fn;
    s->mask_ctx = fn ? ctx : NULL;
}

/* Steps 1-3 into s->work. */
static lf_code_t sampler_prepare(sampler_t *s, const float *logits, lf_err_t *err)
{
    float *w = s->work;
    /* One branch-free pass (vectorisable): NaN and +inf both fail x < inf. */
    int bad = 0;
    for (int32_t t = 0; t < s->n_vocab; t++) {
        w[t] = logits[t];
        bad |= !(logits[t] < INFINITY);
    }
    if (bad)
        for (int32_t t = 0; t < s->n_vocab; t++)
            if (!(logits[t] < INFINITY))
                return lf_err_set(err, LF_ERR_INTERNAL, "sampler: logit of token %d is %s",
                                  (int)t, isnan(logits[t]) ? "NaN" : "+inf");
    /* 1. logit_bias */
    for (int32_t i = 0; i < s->n_bias; i++) {
        const sampler_bias_t *b = &s->bias[i];
        if (b->bias <= -SAMPLER_LOGIT_BIAS_MAX)
            w[b->token] = -INFINITY;
        else
            w[b->token] += b->bias;
    }
    /* 2. penalties: repetition on prompt+output, then the additive pair on
     * output counts (vLLM's order). */
    const float rp = s->p.repetition_penalty;
    const float fp = s->p.frequency_penalty, pp = s->p.presence_penalty;
    for (int32_t i = 0; i < s->n_seen; i++) {
        int32_t t = s->seen[i];
        if (rp != 1.0f)
            w[t] = w[t] > 0.0f ? w[t] / rp : w[t] * rp;
        if (s->counts[t] > 0)
            w[t] -= fp * (float)s->counts[t] + pp;
    }
    /* 3. bans */
    for (int32_t i = 0; i < s->n_ban; i++)
        w[s->ban[i]] = -INFINITY;
    if (s->n_generated < s->p.min_tokens)
        for (int32_t i = 0; i < s->n_mt_ban; i++)
            w[s->mt_ban[i]] = -INFINITY;
    if (s->allowed)
        for (int32_t t = 0; t < s->n_vocab; t++)
            if (!(s->allowed[t >> 5] >> (t & 31) & 1u))
                w[t] = -INFINITY;
    if (s->mask_fn)
        s->mask_fn(s->mask_ctx, w, s->n_vocab);
    return LF_OK;
}

/* The total order every sorting step uses: higher logit first, then the lower
 * token id. */
static int sampler_better(const float *w, int32_t a, int32_t b)
{
    return w[a] > w[b] || (w[a] == w[b] && a < b);
}

static void sampler_sift_down(const float *w, int32_t *h, int32_t n, int32_t i)
{
    int32_t x = h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && sampler_better(w, h[c + 1], h[c]))
            c++;
        if (!sampler_better(w, h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void sampler_heap_build(const float *w, int32_t *h, int32_t n)
{
    for (int32_t i = n / 2 - 1; i >= 0; i--)
        sampler_sift_down(w, h, n, i);
}

/* Removes and returns the best element; *n shrinks by one. */
static int32_t sampler_heap_pop(const float *w, int32_t *h, int32_t *n)
{
    int32_t top = h[0];
    h[0] = h[--*n];
    if (*n > 0)
        sampler_sift_down(w, h, *n, 0);
    return top;
}

/* top-p without a preceding sort, in O(n) plus a sort of one bucket.
 * Candidates are binned by (max - logit) into buckets that are monotone in
 * the logit (equal logits share a bucket). Walking the buckets from the top
 * finds the one where the mass reaches target: every token of an earlier
 * bucket has less than target above it (kept), every token of a later one
 * at least target (dropped), and only the crossing bucket needs the exact
 * sorted walk (heap pops). Survivors end up in cand[]: those of the earlier
 * buckets in ascending id order, then the crossing bucket's best-first.
 * Returns how many. */
static int32_t sampler_top_p(sampler_t *s, int32_t n, double target, float mx)
{
    const float *w = s->work;
    memset(s->bmass, 0, sizeof(s->bmass));
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->cand[i];
        float d = (mx - w[t]) * SAMPLER_BUCKET_SCALE;
        int b = d < (float)(SAMPLER_BUCKETS - 1) ? (int)d : SAMPLER_BUCKETS - 1;
        s->bucket[i] = (uint16_t)b;
        s->bmass[b] += s->expv[t];
    }
    double cum = 0.0;
    int cb = 0;
    while (cb < SAMPLER_BUCKETS - 1 && cum + s->bmass[cb] < target)
        cum += s->bmass[cb++];
    int32_t keep = 0, nc = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->cand[i];
        if (s->bucket[i] < cb)
            s->cand[keep++] = t; /* keep <= i: in-place compaction */
        else if (s->bucket[i] == cb)
            s->heap[nc++] = t;
    }
    sampler_heap_build(w, s->heap, nc);
    while (nc > 0 && cum < target) {
        int32_t t = sampler_heap_pop(w, s->heap, &nc);
        s->cand[keep++] = t;
        cum += s->expv[t];
    }
    return keep;
}

/* typical-p's order: lower score first, then the more likely token, then
 * the lower id (a total order, so the kept prefix is reproducible). */
static int sampler_more_typical(const sampler_t *s, int32_t a, int32_t b)
{
    const float *sc = s->score;
    if (sc[a] != sc[b])
        return sc[a] < sc[b];
    if (s->expv[a] != s->expv[b])
        return s->expv[a] > s->expv[b];
    return a < b;
}

static void sampler_typical_sift(const sampler_t *s, int32_t *h, int32_t n, int32_t i)
{
    int32_t x = h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && sampler_more_typical(s, h[c + 1], h[c]))
            c++;
        if (!sampler_more_typical(s, h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Step 8b over cand[0..n) with weights expv: entropy of the renormalised
 * survivors, then the most typical tokens popped from a heap until their
 * mass reaches typical_p. cand ends up in typical order. Returns how many. */
static int32_t sampler_typical(sampler_t *s, int32_t n)
{
    double total = 0.0;
    for (int32_t i = 0; i < n; i++)
        total += s->expv[s->cand[i]];
    double ent = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double q = s->expv[s->cand[i]] / total;
        if (q > 0.0)
            ent -= q * log(q);
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->cand[i];
        double q = s->expv[t] / total;
        s->score[t] = q > 0.0 ? (float)fabs(-log(q) - ent) : INFINITY;
    }
    int32_t hn = n;
    memcpy(s->heap, s->cand, sizeof(*s->heap) * (size_t)n);
    for (int32_t i = hn / 2 - 1; i >= 0; i--)
        sampler_typical_sift(s, s->heap, hn, i);
    const double target = (double)s->p.typical_p * total;
    double cum = 0.0;
    int32_t keep = 0;
    while (hn > 0 && (keep == 0 || cum < target)) {
        int32_t t = s->heap[0];
        s->heap[0] = s->heap[--hn];
        if (hn > 0)
            sampler_typical_sift(s, s->heap, hn, 0);
        s->cand[keep++] = t;
        cum += s->expv[t];
    }
    return keep;
}

/* Steps 4-8. On success s->cand[0..*n_out) holds the survivors and
 * s->expv[t] their unnormalised weights (max weight 1). */
static lf_code_t sampler_filter(sampler_t *s, int32_t *n_out, lf_err_t *err)
{
    float *w = s->work;
    /* 4. greedy: ascending scan with a strict > keeps the lowest id on ties */
    if (s->p.temperature < SAMPLER_GREEDY_EPS) {
        int32_t best = 0;
        for (int32_t t = 1; t < s->n_vocab; t++)
            if (w[t] > w[best])
                best = t;
        if (w[best] == -INFINITY)
            return lf_err_set(err, LF_ERR_INVALID,
                              "sampler: every token is banned (logit_bias, min_tokens or mask)");
        s->cand[0] = best;
        s->expv[best] = 1.0f;
        *n_out = 1;
        return LF_OK;
    }

    int32_t n = 0;
    for (int32_t t = 0; t < s->n_vocab; t++)
        if (w[t] > -INFINITY)
            s->cand[n++] = t;
    if (n == 0)
        return lf_err_set(err, LF_ERR_INVALID,
                          "sampler: every token is banned (logit_bias, min_tokens or mask)");

    /* 5. temperature */
    const float temp = s->p.temperature;
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->cand[i];
        if (temp != 1.0f)
            w[t] /= temp;
        if (w[t] > mx)
            mx = w[t];
    }

    /* 6. top-k: pop the k best from a heap, leaving cand sorted best-first */
    int sorted = 0;
    if (s->p.top_k > 0 && s->p.top_k < n) {
        int32_t hn = n;
        memcpy(s->heap, s->cand, sizeof(*s->heap) * (size_t)n);
        sampler_heap_build(w, s->heap, hn);
        for (int32_t i = 0; i < s->p.top_k; i++)
            s->cand[i] = sampler_heap_pop(w, s->heap, &hn);
        n = s->p.top_k;
        sorted = 1;
    }
    /* Weights only for the survivors of top-k (the max is among them). */
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->cand[i];
        s->expv[t] = expf(w[t] - mx);
    }

    /* 7. top-p over the survivors' renormalised mass */
    if (s->p.top_p < 1.0f && n > 1) {
        double total = 0.0;
        for (int32_t i = 0; i < n; i++)
            total += s->expv[s->cand[i]];
        const double target = (double)s->p.top_p * total;
        double cum = 0.0;
        int32_t keep = 0;
        if (sorted) {
            while (keep < n && cum < target)
                cum += s->expv[s->cand[keep++]];
        } else {
            keep = sampler_top_p(s, n, target, mx);
        }
        n = keep > 0 ? keep : 1;
    }

    /* 8. min-p: weights are relative to the max (weight 1), so the test
     * p_t >= min_p * p_max is expv[t] >= min_p. Order is preserved. */
    if (s->p.min_p > 0.0f) {
        int32_t keep = 0;
        for (int32_t i = 0; i < n; i++)
            if (s->expv[s->cand[i]] >= s->p.min_p)
                s->cand[keep++] = s->cand[i];
        n = keep; /* the max itself (weight 1) always survives */
    }

    /* 8b. typical-p */
    if (s->p.typical_p < 1.0f && n > 1)
        n = sampler_typical(s, n);
    *n_out = n;
    return LF_OK;
}

lf_code_t sampler_transform(sampler_t *s, const float *logits, float *out,
                            lf_err_t *err)
{
    lf_code_t rc = sampler_prepare(s, logits, err);
    if (rc != LF_OK)
        return rc;
    memcpy(out, s->work, sizeof(*out) * (size_t)s->n_vocab);
    return LF_OK;
}

lf_code_t sampler_distribution(sampler_t *s, const float *logits, float *probs,
                               lf_err_t *err)
{
    int32_t n = 0;
    lf_code_t rc = sampler_prepare(s, logits, err);
    if (rc == LF_OK)
        rc = sampler_filter(s, &n, err);
    if (rc != LF_OK)
        return rc;
    memset(probs, 0, sizeof(*probs) * (size_t)s->n_vocab);
    double total = 0.0;
    for (int32_t i = 0; i < n; i++)
        total += s->expv[s->cand[i]];
    for (int32_t i = 0; i < n; i++)
        probs[s->cand[i]] = (float)(s->expv[s->cand[i]] / total);
    return LF_OK;
}

lf_code_t sampler_sample(sampler_t *s, const float *logits, int32_t *token,
                         lf_err_t *err)
{
    int32_t n = 0;
    lf_code_t rc = sampler_prepare(s, logits, err);
    if (rc == LF_OK)
        rc = sampler_filter(s, &n, err);
    if (rc != LF_OK)
        return rc;
    if (s->p.temperature < SAMPLER_GREEDY_EPS || n == 1) {
        /* Greedy draws nothing; a single survivor does draw, so a seeded
         * sequence's RNG stream does not depend on how peaked each step is. */
        if (s->p.temperature >= SAMPLER_GREEDY_EPS)
            (void)rng_next_double(&s->rng);
        *token = s->cand[0];
        return LF_OK;
    }
    /* 9. draw */
    double total = 0.0;
    for (int32_t i = 0; i < n; i++)
        total += s->expv[s->cand[i]];
    const double u = rng_next_double(&s->rng) * total;
    double cum = 0.0;
    int32_t pick = s->cand[0];
    for (int32_t i = n - 1; i >= 0; i--) /* rounding fallback: last weight > 0 */
        if (s->expv[s->cand[i]] > 0.0f) {
            pick = s->cand[i];
            break;
        }
    for (int32_t i = 0; i < n; i++) {
        cum += s->expv[s->cand[i]];
        if (u < cum) {
            pick = s->cand[i];
            break;
        }
    }
    *token = pick;
    return LF_OK;
}
