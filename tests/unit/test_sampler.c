/* test_sampler.c - every step of the sampling chain on hand-made logits,
 * statistical checks with fixed seeds, reproducibility, validation. */
#include "engine/sample/sampler.h"
#include "engine/sample/rng.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NV 8

static sampler_t *make(const sampler_params_t *p, int32_t nv, uint64_t entropy)
{
    lf_err_t err;
    sampler_t *s = sampler_create(p, nv, entropy, &err);
    if (!s)
        tap_diag("create failed: %s", err.msg);
    return s;
}

/* logits = log(probs): the softmax at temperature 1 gives probs back */
static void from_probs(const double *p, int n, float *logits)
{
    for (int i = 0; i < n; i++)
        logits[i] = p[i] > 0 ? (float)log(p[i]) : -INFINITY;
}

/* ---------------------------------------------------------------- validate */

typedef struct {
    const char *name;
    void (*set)(sampler_params_t *);
    const char *param; /* NULL = valid */
} vcase_t;

static const sampler_bias_t bias_bad_tok[] = {{NV, 1.0f}};
static const sampler_bias_t bias_bad_val[] = {{1, 100.5f}};
static const sampler_bias_t bias_edge[] = {{0, -100.0f}, {NV - 1, 100.0f}};
static const int32_t ids_bad[] = {3, -1};

static void v_default(sampler_params_t *p) { (void)p; }
static void v_temp_max(sampler_params_t *p) { p->temperature = 2.0f; }
static void v_temp_hi(sampler_params_t *p) { p->temperature = 2.01f; }
static void v_temp_neg(sampler_params_t *p) { p->temperature = -0.1f; }
static void v_temp_nan(sampler_params_t *p) { p->temperature = NAN; }
static void v_topk_off0(sampler_params_t *p) { p->top_k = 0; }
static void v_topk_big(sampler_params_t *p) { p->top_k = 100000; }
static void v_topk_bad(sampler_params_t *p) { p->top_k = -2; }
static void v_topp_zero(sampler_params_t *p) { p->top_p = 0.0f; }
static void v_topp_hi(sampler_params_t *p) { p->top_p = 1.0001f; }
static void v_topp_small(sampler_params_t *p) { p->top_p = 1e-6f; }
static void v_minp_one(sampler_params_t *p) { p->min_p = 1.0f; }
static void v_minp_neg(sampler_params_t *p) { p->min_p = -0.01f; }
static void v_minp_hi(sampler_params_t *p) { p->min_p = 1.5f; }
static void v_typ_zero(sampler_params_t *p) { p->typical_p = 0.0f; }
static void v_typ_hi(sampler_params_t *p) { p->typical_p = 1.01f; }
static void v_typ_nan(sampler_params_t *p) { p->typical_p = NAN; }
static void v_typ_half(sampler_params_t *p) { p->typical_p = 0.5f; }
static void v_freq_edge(sampler_params_t *p) { p->frequency_penalty = -2.0f; }
static void v_freq_hi(sampler_params_t *p) { p->frequency_penalty = 2.5f; }
static void v_pres_lo(sampler_params_t *p) { p->presence_penalty = -2.1f; }
static void v_rep_zero(sampler_params_t *p) { p->repetition_penalty = 0.0f; }
static void v_rep_inf(sampler_params_t *p) { p->repetition_penalty = INFINITY; }
static void v_rep_big(sampler_params_t *p) { p->repetition_penalty = 5.0f; }
static void v_bias_tok(sampler_params_t *p) { p->logit_bias = bias_bad_tok; p->n_logit_bias = 1; }
static void v_bias_val(sampler_params_t *p) { p->logit_bias = bias_bad_val; p->n_logit_bias = 1; }
static void v_bias_edge(sampler_params_t *p) { p->logit_bias = bias_edge; p->n_logit_bias = 2; }
static void v_mint_neg(sampler_params_t *p) { p->min_tokens = -1; }
static void v_mint_ids(sampler_params_t *p) { p->min_tokens_ban = ids_bad; p->n_min_tokens_ban = 2; }
static void v_ban_ids(sampler_params_t *p) { p->banned = ids_bad; p->n_banned = 2; }

static const vcase_t vcases[] = {
    {"defaults", v_default, NULL},
    {"temperature 2", v_temp_max, NULL},
    {"temperature 2.01", v_temp_hi, "temperature"},
    {"temperature -0.1", v_temp_neg, "temperature"},
    {"temperature NaN", v_temp_nan, "temperature"},
    {"top_k 0 (off)", v_topk_off0, NULL},
    {"top_k above vocab", v_topk_big, NULL},
    {"top_k -2", v_topk_bad, "top_k"},
    {"top_p 0", v_topp_zero, "top_p"},
    {"top_p 1.0001", v_topp_hi, "top_p"},
    {"top_p tiny", v_topp_small, NULL},
    {"min_p 1", v_minp_one, NULL},
    {"min_p -0.01", v_minp_neg, "min_p"},
    {"min_p 1.5", v_minp_hi, "min_p"},
    {"typical_p 0", v_typ_zero, "typical_p"},
    {"typical_p 1.01", v_typ_hi, "typical_p"},
    {"typical_p NaN", v_typ_nan, "typical_p"},
    {"typical_p 0.5", v_typ_half, NULL},
    {"frequency_penalty -2", v_freq_edge, NULL},
    {"frequency_penalty 2.5", v_freq_hi, "frequency_penalty"},
    {"presence_penalty -2.1", v_pres_lo, "presence_penalty"},
    {"repetition_penalty 0", v_rep_zero, "repetition_penalty"},
    {"repetition_penalty inf", v_rep_inf, "repetition_penalty"},
    {"repetition_penalty 5", v_rep_big, NULL},
    {"logit_bias token out of vocab", v_bias_tok, "logit_bias"},
    {"logit_bias 100.5", v_bias_val, "logit_bias"},
    {"logit_bias -100 and 100", v_bias_edge, NULL},
    {"min_tokens -1", v_mint_neg, "min_tokens"},
    {"min_tokens ban id -1", v_mint_ids, "min_tokens"},
    {"banned id -1", v_ban_ids, "bad_words"},
};

static void test_validate(void)
{
    for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
        sampler_params_t p;
        sampler_params_default(&p);
        vcases[i].set(&p);
        const char *param = "unset";
        lf_err_t err = {0};
        lf_code_t rc = sampler_params_validate(&p, NV, &param, &err);
        if (!vcases[i].param) {
            tap_ok(rc == LF_OK && param == NULL, "validate %s: accepted", vcases[i].name);
        } else {
            size_t pl = strlen(vcases[i].param);
            tap_ok(rc == LF_ERR_INVALID && param && !strcmp(param, vcases[i].param) &&
                       !strncmp(err.msg, vcases[i].param, pl) && err.msg[pl] == ':',
                   "validate %s: rejected naming %s (%s)", vcases[i].name, vcases[i].param,
                   err.msg);
        }
    }
    sampler_params_t p;
    sampler_params_default(&p);
    p.top_p = 0.0f;
    lf_err_t err;
    tap_ok(!sampler_create(&p, NV, 1, &err) && err.code == LF_ERR_INVALID,
           "create refuses invalid parameters");
}

/* ------------------------------------------------------------------ greedy */

typedef struct {
    const char *name;
    float logits[NV];
    int32_t want;
} gcase_t;

static const gcase_t gcases[] = {
    {"argmax in the middle", {0, 1, 5, 2, -1, 0, 0, 0}, 2},
    {"argmax last", {0, 1, 2, 3, 4, 5, 6, 7}, 7},
    {"tie goes to lowest id", {1, 3, 0, 3, 3, 0, 0, 0}, 1},
    {"all equal -> token 0", {2, 2, 2, 2, 2, 2, 2, 2}, 0},
    {"negative logits", {-9, -3, -4, -3.5f, -8, -7, -6, -5}, 1},
    {"-inf entries skipped", {-INFINITY, -INFINITY, -50, -INFINITY, -60, -INFINITY, -INFINITY, -INFINITY}, 2},
};

static void test_greedy(void)
{
    sampler_params_t p;
    sampler_params_default(&p);
    p.temperature = 0.0f;
    for (size_t i = 0; i < sizeof(gcases) / sizeof(gcases[0]); i++) {
        sampler_t *s = make(&p, NV, 42);
        int32_t tok = -1;
        float probs[NV];
        lf_err_t err;
        bool ok = s && sampler_sample(s, gcases[i].logits, &tok, &err) == LF_OK &&
                  tok == gcases[i].want &&
                  sampler_distribution(s, gcases[i].logits, probs, &err) == LF_OK &&
                  probs[gcases[i].want] == 1.0f;
        tap_ok(ok, "greedy %s -> %d (got %d)", gcases[i].name, gcases[i].want, tok);
        sampler_free(s);
    }
    /* greedy still applies bias and bans */
    static const sampler_bias_t b[] = {{3, 10.0f}};
    p.logit_bias = b;
    p.n_logit_bias = 1;
    sampler_t *s = make(&p, NV, 1);
    int32_t tok = -1;
    sampler_sample(s, gcases[0].logits, &tok, NULL);
    tap_ok(tok == 3, "greedy sees logit_bias (+10 on token 3)");
    sampler_free(s);
}

/* -------------------------------------------- distribution after each step */

typedef struct {
    const char *name;
    double probs[5];   /* model distribution, logits = log(probs) */
    float temperature;
    int32_t top_k;
    float top_p, min_p;
    double want[5];    /* expected final distribution (before the draw) */
} dcase_t;

#define P5 {0.5, 0.3, 0.15, 0.05, 0.0}
static const dcase_t dcases[] = {
    {"no transform", P5, 1, -1, 1, 0, P5},
    {"temperature 0.5 squares", P5, 0.5f, -1, 1, 0,
     {0.25 / 0.3650, 0.09 / 0.3650, 0.0225 / 0.3650, 0.0025 / 0.3650, 0}},
    {"temperature 2 takes sqrt", {0.64, 0.36, 0, 0, 0}, 2, -1, 1, 0, {0.8 / 1.4, 0.6 / 1.4, 0, 0, 0}},
    {"top_k 2", P5, 1, 2, 1, 0, {0.625, 0.375, 0, 0, 0}},
    {"top_k 1", P5, 1, 1, 1, 0, {1, 0, 0, 0, 0}},
    {"top_k 0 is off", P5, 1, 0, 1, 0, P5},
    {"top_k above survivors is off", P5, 1, 7, 1, 0, P5},
    {"top_p 0.1 keeps the top token", P5, 1, -1, 0.1f, 0, {1, 0, 0, 0, 0}},
    {"top_p 0.6", P5, 1, -1, 0.6f, 0, {0.625, 0.375, 0, 0, 0}},
    {"top_p 0.79", P5, 1, -1, 0.79f, 0, {0.625, 0.375, 0, 0, 0}},
    {"top_p 0.85", P5, 1, -1, 0.85f, 0, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0}},
    {"top_p 0.96 keeps all", P5, 1, -1, 0.96f, 0, P5},
    {"top_p 0.83 alone keeps 3", P5, 1, -1, 0.83f, 0, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0}},
    {"top_k 3 then top_p 0.83 keeps 2", P5, 1, 3, 0.83f, 0, {0.625, 0.375, 0, 0, 0}},
    {"min_p 0.2", P5, 1, -1, 1, 0.2f, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0}},
    {"min_p 0.4", P5, 1, -1, 1, 0.4f, {0.625, 0.375, 0, 0, 0}},
    {"min_p 1 keeps the max", P5, 1, -1, 1, 1.0f, {1, 0, 0, 0, 0}},
    {"min_p 0.2 at T=1", {0.64, 0.32, 0.04, 0, 0}, 1, -1, 1, 0.2f, {0.64 / 0.96, 0.32 / 0.96, 0, 0, 0}},
    {"min_p 0.2 applies after T=2", {0.64, 0.32, 0.04, 0, 0}, 2, -1, 1, 0.2f,
     {0.8 / 1.565685, 0.565685 / 1.565685, 0.2 / 1.565685, 0, 0}},
    {"top_k 3, top_p 0.9, min_p 0.5", P5, 1, 3, 0.9f, 0.5f, {0.625, 0.375, 0, 0, 0}},
};

static void test_distribution(void)
{
    for (size_t i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++) {
        const dcase_t *c = &dcases[i];
        sampler_params_t p;
        sampler_params_default(&p);
        p.temperature = c->temperature;
        p.top_k = c->top_k;
        p.top_p = c->top_p;
        p.min_p = c->min_p;
        float logits[5], probs[5];
        from_probs(c->probs, 5, logits);
        sampler_t *s = make(&p, 5, 7);
        lf_err_t err;
        bool ok = s && sampler_distribution(s, logits, probs, &err) == LF_OK;
        double maxdiff = 0;
        for (int t = 0; ok && t < 5; t++) {
            double d = fabs(probs[t] - c->want[t]);
            if (d > maxdiff)
                maxdiff = d;
            if (c->want[t] == 0 && probs[t] != 0)
                ok = false;
        }
        ok = ok && maxdiff < 2e-4;
        tap_ok(ok, "step %s (max diff %.2g)", c->name, maxdiff);
        sampler_free(s);
    }
    /* top-k ties at the border: exactly k survive, lowest ids first */
    float tied[5] = {1, 2, 2, 2, 0};
    float probs[5];
    sampler_params_t p;
    sampler_params_default(&p);
    p.top_k = 2;
    sampler_t *s = make(&p, 5, 7);
    sampler_distribution(s, tied, probs, NULL);
    tap_ok(probs[1] > 0.49f && probs[2] > 0.49f && probs[3] == 0 && probs[0] == 0,
           "top_k tie at the border keeps the lowest ids");
    sampler_free(s);
    /* top-p border: 4 equal tokens, top_p 0.5 -> mass above the 3rd is
     * exactly 0.5, not < 0.5: two survive (vLLM: cumsum <= 1 - p removed) */
    float flat[5] = {0, 0, 0, 0, -INFINITY};
    p.top_k = -1;
    p.top_p = 0.5f;
    s = make(&p, 5, 7);
    sampler_distribution(s, flat, probs, NULL);
    tap_ok(probs[0] == 0.5f && probs[1] == 0.5f && probs[2] == 0 && probs[3] == 0,
           "top_p exact border: mass reaching top_p stops the prefix");
    sampler_free(s);
}

/* typical-p on P5 = {0.5, 0.3, 0.15, 0.05}: entropy H = 1.14212 nats, so
 * |-log p - H| is 0.449, 0.062, 0.755, 1.854 and the typical order is
 * token 1, 0, 2, 3. After top-k 2 the survivors (0.625, 0.375) have
 * H = 0.66156 and the order becomes 0, 1. */
typedef struct {
    const char *name;
    int32_t top_k;
    float typical_p;
    double want[5];
} tcase_t;

static const tcase_t tcases[] = {
    {"typical_p 1 is off", -1, 1.0f, P5},
    {"typical_p 0.2 keeps the most typical (not the most likely)", -1, 0.2f, {0, 1, 0, 0, 0}},
    {"typical_p 0.5 keeps tokens 1, 0", -1, 0.5f, {0.625, 0.375, 0, 0, 0}},
    {"typical_p 0.85 keeps 1, 0, 2", -1, 0.85f, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0}},
    {"typical_p 0.96 keeps all", -1, 0.96f, P5},
    {"top_k 2 then typical_p 0.5: entropy of the survivors", 2, 0.5f, {1, 0, 0, 0, 0}},
};

static void test_typical(void)
{
    const double p5[5] = P5;
    for (size_t i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
        const tcase_t *c = &tcases[i];
        sampler_params_t p;
        sampler_params_default(&p);
        p.top_k = c->top_k;
        p.typical_p = c->typical_p;
        float logits[5], probs[5];
        from_probs(p5, 5, logits);
        sampler_t *s = make(&p, 5, 7);
        lf_err_t err;
        bool ok = s && sampler_distribution(s, logits, probs, &err) == LF_OK;
        double maxdiff = 0;
        for (int t = 0; ok && t < 5; t++) {
            maxdiff = fmax(maxdiff, fabs(probs[t] - c->want[t]));
            if (c->want[t] == 0 && probs[t] != 0)
                ok = false;
        }
        tap_ok(ok && maxdiff < 2e-4, "step %s (max diff %.2g)", c->name, maxdiff);
        sampler_free(s);
    }
    /* a seeded draw under typical_p only ever returns kept tokens */
    sampler_params_t p;
    sampler_params_default(&p);
    p.typical_p = 0.5f;
    p.has_seed = true;
    p.seed = 11;
    float logits[5];
    from_probs(p5, 5, logits);
    sampler_t *s = make(&p, 5, 0);
    int hits[5] = {0};
    for (int k = 0; s && k < 2000; k++) {
        int32_t t = -1;
        if (sampler_sample(s, logits, &t, NULL) == LF_OK && t >= 0 && t < 5)
            hits[t]++;
    }
    tap_ok(hits[0] > 1100 && hits[1] > 600 && hits[2] == 0 && hits[3] == 0 && hits[4] == 0,
           "typical_p 0.5 draws only tokens 0 and 1, in proportion (%d, %d)", hits[0], hits[1]);
    sampler_free(s);
}

/* The heap-based top-k / top-p against a brute-force reference on a larger
 * vector with many ties (logits quantised to 0.25). */
static int ref_order[1000];
static const float *ref_l;
static int ref_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (ref_l[x] != ref_l[y])
        return ref_l[x] > ref_l[y] ? -1 : 1;
    return x - y;
}

static void test_against_reference(int spread)
{
    enum { V = 1000 };
    static float logits[V], probs[V];
    rng_t r;
    rng_seed(&r, 5);
    /* spread 0: 40 levels 0.25 apart (ties); 1: continuous in a 0.1 range
     * (many distinct values per top-p bucket) */
    for (int t = 0; t < V; t++)
        logits[t] = spread ? (float)rng_next_double(&r) * 0.1f
                           : (float)(rng_next_u64(&r) % 40) * 0.25f - 5.0f;
    float mx = logits[0];
    for (int t = 1; t < V; t++)
        mx = fmaxf(mx, logits[t]);
    for (int t = 0; t < V; t++)
        ref_order[t] = t;
    ref_l = logits;
    qsort(ref_order, V, sizeof(int), ref_cmp);
    double e[V];
    for (int t = 0; t < V; t++)
        e[t] = (double)expf(logits[t] - mx);
    const struct {
        int32_t k;
        float p;
    } cfg[] = {{50, 1.0f}, {1, 1.0f}, {999, 1.0f}, {-1, 0.3f}, {-1, 0.9f}, {100, 0.5f}};
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        int keep = cfg[c].k > 0 ? cfg[c].k : V;
        double sum = 0;
        for (int i = 0; i < keep; i++)
            sum += e[ref_order[i]];
        if (cfg[c].p < 1.0f) {
            double cum = 0;
            int i = 0;
            while (i < keep && cum < cfg[c].p * sum)
                cum += e[ref_order[i++]];
            keep = i;
        }
        sampler_params_t p;
        sampler_params_default(&p);
        p.top_k = cfg[c].k;
        p.top_p = cfg[c].p;
        sampler_t *s = make(&p, V, 1);
        bool ok = s && sampler_distribution(s, logits, probs, NULL) == LF_OK;
        for (int i = 0; ok && i < V; i++)
            ok = (probs[ref_order[i]] > 0) == (i < keep);
        tap_ok(ok, "%s: top_k %d top_p %.1f matches a full sort (%d kept)",
               spread ? "continuous" : "tied levels", (int)cfg[c].k, (double)cfg[c].p, keep);
        sampler_free(s);
    }
}

/* -------------------------------------------- statistics with fixed seeds */

typedef struct {
    const char *name;
    int32_t top_k;
    float top_p, min_p;
    double want[6]; /* expected probabilities of the survivors, 0 = excluded */
    double chi2_max; /* 99.9% quantile of chi-square with (survivors - 1) df */
} scase_t;

static const double SP[6] = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};

static const scase_t scases[] = {
    {"no filter", -1, 1, 0, {0.4, 0.25, 0.15, 0.1, 0.06, 0.04}, 20.5},
    {"top_k 3", 3, 1, 0, {0.4 / 0.8, 0.25 / 0.8, 0.15 / 0.8, 0, 0, 0}, 13.8},
    {"top_p 0.7", -1, 0.7f, 0, {0.4 / 0.8, 0.25 / 0.8, 0.15 / 0.8, 0, 0, 0}, 13.8},
    {"min_p 0.2", -1, 1, 0.2f, {0.4 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0.1 / 0.9, 0, 0}, 16.3},
    {"top_k 4 + min_p 0.3", 4, 1, 0.3f, {0.4 / 0.8, 0.25 / 0.8, 0.15 / 0.8, 0, 0, 0}, 13.8},
};

static void test_statistics(void)
{
    const int draws = 20000;
    float logits[6];
    from_probs(SP, 6, logits);
    for (size_t i = 0; i < sizeof(scases) / sizeof(scases[0]); i++) {
        const scase_t *c = &scases[i];
        sampler_params_t p;
        sampler_params_default(&p);
        p.top_k = c->top_k;
        p.top_p = c->top_p;
        p.min_p = c->min_p;
        p.has_seed = true;
        p.seed = 1234 + i;
        sampler_t *s = make(&p, 6, 0);
        int counts[6] = {0};
        bool sampled = s != NULL;
        for (int d = 0; sampled && d < draws; d++) {
            int32_t tok = -1;
            sampled = sampler_sample(s, logits, &tok, NULL) == LF_OK && tok >= 0 && tok < 6;
            if (sampled)
                counts[tok]++;
        }
        bool excluded_never = true;
        double chi2 = 0;
        for (int t = 0; t < 6; t++) {
            if (c->want[t] == 0) {
                excluded_never = excluded_never && counts[t] == 0;
                continue;
            }
            double e = c->want[t] * draws;
            chi2 += (counts[t] - e) * (counts[t] - e) / e;
        }
        tap_ok(sampled && excluded_never, "stats %s: excluded tokens never drawn", c->name);
        tap_ok(sampled && chi2 < c->chi2_max, "stats %s: proportions (chi2 %.2f < %.1f)",
               c->name, chi2, c->chi2_max);
        sampler_free(s);
    }
}

/* ------------------------------------------------------- reproducibility */

static void run_seq(sampler_t *s, const float *logits, int32_t nv, int32_t *out, int n,
                    sampler_t *noise)
{
    for (int i = 0; i < n; i++) {
        out[i] = -1;
        sampler_sample(s, logits, &out[i], NULL);
        sampler_accept(s, out[i], NULL);
        if (noise) { /* another sequence sampling in between */
            int32_t t;
            sampler_sample(noise, logits, &t, NULL);
            sampler_accept(noise, t, NULL);
        }
    }
    (void)nv;
}

static void test_seeds(void)
{
    enum { N = 200, V = 32 };
    float logits[V];
    for (int t = 0; t < V; t++)
        logits[t] = (float)((t * 7) % 11) * 0.3f;
    sampler_params_t p;
    sampler_params_default(&p);
    p.temperature = 0.9f;
    p.top_p = 0.95f;
    p.presence_penalty = 0.2f;
    p.has_seed = true;
    p.seed = 99;
    int32_t a[N], b[N], c[N], d[N];
    sampler_t *s1 = make(&p, V, 1), *s2 = make(&p, V, 2);
    run_seq(s1, logits, V, a, N, NULL);
    sampler_params_t q = p;
    q.seed = 7; /* a different request running alongside */
    sampler_t *noise = make(&q, V, 3);
    run_seq(s2, logits, V, b, N, noise);
    tap_ok(!memcmp(a, b, sizeof(a)), "same seed -> same tokens, alone or interleaved");
    p.seed = 100;
    sampler_t *s3 = make(&p, V, 1);
    run_seq(s3, logits, V, c, N, NULL);
    tap_ok(memcmp(a, c, sizeof(a)) != 0, "different seeds -> different tokens");
    sampler_reset(s1);
    run_seq(s1, logits, V, d, N, NULL);
    tap_ok(!memcmp(a, d, sizeof(a)) && sampler_n_generated(s1) == N,
           "reset replays the same sequence");
    p.has_seed = false;
    sampler_t *u1 = make(&p, V, 555), *u2 = make(&p, V, 555), *u3 = make(&p, V, 556);
    run_seq(u1, logits, V, a, N, NULL);
    run_seq(u2, logits, V, b, N, NULL);
    run_seq(u3, logits, V, c, N, NULL);
    tap_ok(!memcmp(a, b, sizeof(a)) && memcmp(a, c, sizeof(a)) != 0,
           "unseeded: seeded from the caller's entropy");
    sampler_free(s1);
    sampler_free(s2);
    sampler_free(s3);
    sampler_free(noise);
    sampler_free(u1);
    sampler_free(u2);
    sampler_free(u3);

    rng_t r;
    rng_seed(&r, 0);
    uint64_t first = rng_next_u64(&r);
    bool in_range = true;
    for (int i = 0; i < 1000; i++) {
        double x = rng_next_double(&r);
        in_range = in_range && x >= 0.0 && x < 1.0;
    }
    rng_t r2;
    rng_seed(&r2, 0);
    tap_ok(first != 0 && rng_next_u64(&r2) == first && in_range,
           "rng: seed 0 works, reproducible, doubles in [0,1)");
}

/* --------------------------------------------------------------- penalties */

typedef struct {
    const char *name;
    float rep, freq, pres;
    float want[6];
} pcase_t;

/* logits; prompt {0, 1, 1}; generated 2, 2, 3 */
static const float PL[6] = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 1.0f};
static const int32_t PROMPT[] = {0, 1, 1};
static const int32_t GEN[] = {2, 2, 3};

static const pcase_t pcases[] = {
    {"none", 1, 0, 0, {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 1.0f}},
    {"repetition 2 (prompt+output)", 2, 0, 0, {1.0f, -2.0f, 0.25f, 1.5f, -2.0f, 1.0f}},
    {"repetition 0.5 boosts", 0.5f, 0, 0, {4.0f, -0.5f, 1.0f, 6.0f, -2.0f, 1.0f}},
    {"frequency 0.5 (output only)", 1, 0.5f, 0, {2.0f, -1.0f, -0.5f, 2.5f, -2.0f, 1.0f}},
    {"presence 0.3 (output only)", 1, 0, 0.3f, {2.0f, -1.0f, 0.2f, 2.7f, -2.0f, 1.0f}},
    {"negative frequency", 1, -1.0f, 0, {2.0f, -1.0f, 2.5f, 4.0f, -2.0f, 1.0f}},
    {"all three, repetition first", 2, 0.5f, 0.3f, {1.0f, -2.0f, -1.05f, 0.7f, -2.0f, 1.0f}},
};

static void test_penalties(void)
{
    for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
        const pcase_t *c = &pcases[i];
        sampler_params_t p;
        sampler_params_default(&p);
        p.repetition_penalty = c->rep;
        p.frequency_penalty = c->freq;
        p.presence_penalty = c->pres;
        sampler_t *s = make(&p, 6, 1);
        bool ok = s && sampler_add_prompt(s, PROMPT, 3, NULL) == LF_OK;
        for (int g = 0; ok && g < 3; g++)
            ok = sampler_accept(s, GEN[g], NULL) == LF_OK;
        float out[6];
        ok = ok && sampler_transform(s, PL, out, NULL) == LF_OK;
        double md = 0;
        for (int t = 0; ok && t < 6; t++)
            md = fmax(md, fabs(out[t] - c->want[t]));
        tap_ok(ok && md < 1e-6, "penalty %s (max diff %.2g)", c->name, md);
        sampler_free(s);
    }
    sampler_params_t p;
    sampler_params_default(&p);
    sampler_t *s = make(&p, 6, 1);
    const int32_t bad[] = {1, 6};
    lf_err_t err;
    tap_ok(sampler_add_prompt(s, bad, 2, &err) == LF_ERR_INVALID &&
               sampler_accept(s, -1, &err) == LF_ERR_INVALID,
           "out-of-range prompt / accepted token rejected");
    sampler_free(s);
}

/* ------------------------------------------------- bias, bans and hooks */

static void ban_odd(void *ctx, float *logits, int32_t n)
{
    (*(int *)ctx)++;
    for (int32_t t = 1; t < n; t += 2)
        logits[t] = -INFINITY;
}

static bool never_draws(sampler_t *s, const float *logits, int32_t tok, int n)
{
    for (int i = 0; i < n; i++) {
        int32_t t = -1;
        if (sampler_sample(s, logits, &t, NULL) != LF_OK || t == tok)
            return false;
    }
    return true;
}

static bool always_draws(sampler_t *s, const float *logits, int32_t tok, int n)
{
    for (int i = 0; i < n; i++) {
        int32_t t = -1;
        if (sampler_sample(s, logits, &t, NULL) != LF_OK || t != tok)
            return false;
    }
    return true;
}

static void test_bias_and_bans(void)
{
    const float L[NV] = {5, 1, 2, 0.5f, -1, 3, 0, 1.5f};
    sampler_params_t p;
    sampler_params_default(&p);
    static const sampler_bias_t ban0[] = {{0, -100.0f}};
    p.logit_bias = ban0;
    p.n_logit_bias = 1;
    sampler_t *s = make(&p, NV, 11);
    float out[NV];
    sampler_transform(s, L, out, NULL);
    tap_ok(out[0] == -INFINITY && out[1] == 1.0f, "logit_bias -100 is an exact ban");
    tap_ok(never_draws(s, L, 0, 2000), "logit_bias -100: banned argmax never drawn");
    sampler_free(s);

    static const sampler_bias_t force4[] = {{4, 100.0f}};
    p.logit_bias = force4;
    p.temperature = 1.0f;
    s = make(&p, NV, 12);
    tap_ok(always_draws(s, L, 4, 2000), "logit_bias +100 forces the token at T=1");
    sampler_free(s);
    p.temperature = 2.0f;
    s = make(&p, NV, 12);
    tap_ok(always_draws(s, L, 4, 2000), "logit_bias +100 forces the token at T=2");
    sampler_free(s);

    static const sampler_bias_t dup[] = {{6, 3.0f}, {1, 1.0f}, {6, -2.0f}};
    p.logit_bias = dup;
    p.n_logit_bias = 3;
    s = make(&p, NV, 13);
    sampler_transform(s, L, out, NULL);
    tap_ok(out[6] == -2.0f && out[1] == 2.0f, "logit_bias adds; a repeated id: last wins");
    sampler_free(s);

    /* min_tokens: EOS (token 0, the argmax) banned until 3 tokens accepted */
    sampler_params_default(&p);
    p.temperature = 0.0f;
    p.min_tokens = 3;
    static const int32_t eos[] = {0};
    p.min_tokens_ban = eos;
    p.n_min_tokens_ban = 1;
    s = make(&p, NV, 1);
    int32_t seq[5];
    for (int i = 0; i < 5; i++) {
        sampler_sample(s, L, &seq[i], NULL);
        sampler_accept(s, seq[i], NULL);
    }
    tap_ok(seq[0] == 5 && seq[1] == 5 && seq[2] == 5 && seq[3] == 0 && seq[4] == 0,
           "min_tokens bans EOS until 3 tokens were generated");
    sampler_free(s);

    sampler_params_default(&p);
    static const int32_t banned[] = {0, 5};
    p.banned = banned;
    p.n_banned = 2;
    s = make(&p, NV, 3);
    sampler_transform(s, L, out, NULL);
    tap_ok(out[0] == -INFINITY && out[5] == -INFINITY && out[7] == 1.5f, "banned list");
    int calls = 0;
    sampler_set_mask_fn(s, ban_odd, &calls);
    uint32_t allowed = (1u << 2) | (1u << 3) | (1u << 5) | (1u << 6);
    sampler_set_allowed(s, &allowed);
    bool ok = true;
    for (int i = 0; i < 1000 && ok; i++) {
        int32_t t = -1;
        ok = sampler_sample(s, L, &t, NULL) == LF_OK && (t == 2 || t == 6);
    }
    tap_ok(ok && calls == 1000, "allowed set + mask hook + banned list combine");
    sampler_set_mask_fn(s, NULL, NULL);
    sampler_set_allowed(s, NULL);
    sampler_transform(s, L, out, NULL);
    tap_ok(out[1] == 1.0f && out[3] == 0.5f, "hooks can be removed");
    uint32_t none = 0;
    sampler_set_allowed(s, &none);
    lf_err_t err;
    int32_t t = -1;
    tap_ok(sampler_sample(s, L, &t, &err) == LF_ERR_INVALID, "everything banned -> invalid");
    sampler_set_allowed(s, NULL);
    float bad[NV] = {0, 1, NAN, 0, 0, 0, 0, 0};
    tap_ok(sampler_sample(s, bad, &t, &err) == LF_ERR_INTERNAL, "NaN logit -> internal error");
    bad[2] = INFINITY;
    tap_ok(sampler_sample(s, bad, &t, &err) == LF_ERR_INTERNAL, "+inf logit -> internal error");
    sampler_free(s);
    sampler_free(NULL);
}

int main(void)
{
    test_validate();
    test_greedy();
    test_distribution();
    test_typical();
    test_against_reference(0);
    test_against_reference(1);
    test_statistics();
    test_seeds();
    test_penalties();
    test_bias_and_bans();
    return tap_done();
}
