/* test_spec.c - speculative decoding without a model (spec.h): the suffix
 * matcher, the prediction's alignment through an edit, n-gram drafts, the
 * adaptive length (grows with acceptance, switches off, probes), the step
 * cost fit, and, on synthetic distributions with the real sampler, that
 * verified tokens are exactly those one-token-per-step sampling draws with
 * the same seed and follow the target distribution whatever the drafts. */
#include "engine/sample/sampler.h"
#include "engine/sched/spec.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_match(void)
{
    static const struct {
        int32_t seq[12], n_seq, before, out[6], n_out, min_len, max_len, from, want;
        const char *what;
    } cases[] = {
        {{1, 2, 3, 4, 5}, 5, 5, {2, 3}, 2, 1, 4, 0, 3, "a 2-token match ends at 3"},
        {{1, 2, 3, 4, 5}, 5, 5, {9, 3}, 2, 2, 4, 0, -1, "no 2-token match"},
        {{1, 2, 3, 4, 5}, 5, 5, {9, 3}, 2, 1, 4, 0, 3, "a 1-token match when allowed"},
        {{7, 8, 1, 2, 7, 8, 3}, 7, 7, {7, 8}, 2, 2, 4, 0, 2, "the first match at or after `from`"},
        {{7, 8, 1, 2, 7, 8, 3}, 7, 7, {7, 8}, 2, 2, 4, 3, 6, "from 3: the later one"},
        {{7, 8, 1, 2, 7, 8, 3}, 7, 7, {7, 8}, 2, 2, 4, 7, 6, "nothing after `from`: the last before it"},
        {{5, 7, 8, 1, 9, 7, 8, 3}, 8, 8, {5, 7, 8}, 3, 2, 4, 8, 3, "the longest match wins over a later one"},
        {{7, 8, 1, 7, 8}, 5, 4, {7, 8}, 2, 2, 4, 5, 2, "`before` excludes the match ending at the end"},
        {{1, 1, 1, 1}, 4, 3, {1, 1, 1}, 3, 2, 5, 4, 3, "a run of one token"},
        {{1}, 1, 1, {1, 2}, 2, 1, 8, 0, -1, "longer output than sequence, no match"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t got = spec_match_suffix(cases[i].seq, cases[i].n_seq, cases[i].before, cases[i].out, cases[i].n_out,
                                        cases[i].min_len, cases[i].max_len, cases[i].from);
        tap_ok(got == cases[i].want, "match: %s (got %d)", cases[i].what, got);
    }
}

/* hist = prompt (3 tokens) then out */
static int32_t propose(spec_seq_t *sp, const int32_t *out, int32_t n_out, int32_t k, int32_t *draft, spec_src_t *src)
{
    int32_t hist[256] = {100, 101, 102};
    memcpy(hist + 3, out, (size_t)n_out * sizeof *out);
    return spec_seq_propose(sp, hist, 3 + n_out, 3, k, draft, src);
}

static void test_prediction(void)
{
    /* the prediction: 10..49; the output follows it, then an edit replaces
     * 20..24 with 90 91 92, then it goes on from 25 */
    int32_t pred[40];
    for (int i = 0; i < 40; i++)
        pred[i] = 10 + i;
    spec_params_t p = {.prediction = pred, .n_prediction = 40};
    lf_err_t err = {0};
    spec_seq_t *sp = spec_seq_create(&p, &err);
    int32_t out[64], d[16];
    spec_src_t src;
    out[0] = 10;
    int32_t n = propose(sp, out, 1, 4, d, &src);
    tap_ok(n == 4 && src == SPEC_SRC_PREDICTION && d[0] == 11 && d[3] == 14, "follows the prediction from its start");
    for (int i = 1; i < 10; i++)
        out[i] = 10 + i;
    n = propose(sp, out, 10, 16, d, &src);
    tap_ok(n == 16 && d[0] == 20 && d[15] == 35, "after 10 tokens: drafts 20.. (got %d..)", d[0]);
    out[10] = 90, out[11] = 91, out[12] = 92; /* the edit */
    n = propose(sp, out, 11, 4, d, &src);
    tap_ok(n == 0 || d[0] != 20, "diverged: no longer drafts the replaced text (%d drafts)", n);
    n = propose(sp, out, 13, 4, d, &src);
    out[13] = 25, out[14] = 26;
    n = propose(sp, out, 15, 6, d, &src);
    tap_ok(n == 6 && src == SPEC_SRC_PREDICTION && d[0] == 27 && d[5] == 32,
           "back on the prediction after the edit: drafts 27.. (got %d, %d)", n, n ? d[0] : -1);
    /* the end of the prediction: nothing more to draft */
    for (int i = 15; i < 38; i++)
        out[i] = 12 + i;
    n = propose(sp, out, 38, 16, d, &src);
    tap_ok(n == 0 && src == SPEC_SRC_NONE, "past the prediction's end: no drafts (%d)", n);
    spec_seq_free(sp);

    /* a first token tokenized differently from the prediction's start */
    spec_seq_t *sp2 = spec_seq_create(&p, &err);
    out[0] = 77, out[1] = 12;
    n = propose(sp2, out, 2, 3, d, &src);
    tap_ok(n == 3 && d[0] == 13, "re-aligned by the output's last token when the start differs");
    spec_seq_free(sp2);
    spec_params_t none = {0};
    tap_ok(spec_seq_create(&none, &err) == NULL, "no source: no state");
}

static void test_ngram(void)
{
    spec_params_t p = {.ngram = true};
    lf_err_t err = {0};
    spec_seq_t *sp = spec_seq_create(&p, &err);
    int32_t out[] = {5, 6, 7, 8, 9, 1, 2, 5, 6}, d[16];
    spec_src_t src;
    int32_t n = propose(sp, out, 9, 8, d, &src);
    tap_ok(n == 7 && src == SPEC_SRC_NGRAM && d[0] == 7 && d[1] == 8 && d[6] == 6,
           "n-gram: '5 6' seen before, drafts what followed it (%d)", n);
    int32_t out2[] = {100, 101, 30, 31};
    n = propose(sp, out2, 4, 8, d, &src);
    tap_ok(n == 0 && src == SPEC_SRC_NONE, "no earlier occurrence: no drafts");
    int32_t out3[] = {101, 102};
    n = propose(sp, out3, 2, 8, d, &src);
    tap_ok(n == 2 && d[0] == 101 && d[1] == 102, "the prompt's n-grams count too (%d)", n);
    spec_seq_free(sp);
}

static void test_length(void)
{
    spec_params_t p = {.ngram = true, .k_max = 12};
    lf_err_t err = {0};
    spec_seq_t *sp = spec_seq_create(&p, &err);
    spec_cost_t cheap = {.t0 = 1.0, .t1 = 0.02}, dear = {.t0 = 1.0, .t1 = 0.5};
    int32_t k0 = spec_seq_length(sp, SPEC_SRC_NGRAM, &cheap, 1, 16);
    for (int i = 0; i < 20; i++)
        spec_seq_feedback(sp, SPEC_SRC_NGRAM, 8, 6);
    int32_t k1 = spec_seq_length(sp, SPEC_SRC_NGRAM, &cheap, 1, 16);
    tap_ok(k1 > k0 && k1 == 12, "drafts mostly accepted (6 of 8) raise the length to k_max (%d -> %d)", k0, k1);
    int32_t k2 = spec_seq_length(sp, SPEC_SRC_NGRAM, &dear, 8, 16);
    tap_ok(k2 >= 1 && k2 <= 2, "rows that cost more (8 streams, a row = half a step) shorten it to %d", k2);
    tap_ok(spec_seq_length(sp, SPEC_SRC_NGRAM, &cheap, 1, 3) == 3, "the cap (max_tokens, context, budget) holds");
    /* a hybrid model: a rejection recomputes the accepted rows */
    spec_cost_t mid = {.t0 = 1.0, .t1 = 0.2}, mid_re = mid;
    mid_re.refeed = true;
    const int32_t k_tr = spec_seq_length(sp, SPEC_SRC_NGRAM, &mid, 1, 16);
    const int32_t k_re = spec_seq_length(sp, SPEC_SRC_NGRAM, &mid_re, 1, 16);
    tap_ok(k_re >= 1 && k_re < k_tr, "where a rejection costs the accepted rows again, drafts are shorter (%d, not %d)",
           k_re, k_tr);
    for (int i = 0; i < 30; i++)
        spec_seq_feedback(sp, SPEC_SRC_NGRAM, 4, 0);
    int probes = 0, zeros = 0;
    for (int i = 0; i < 64; i++) {
        int32_t k = spec_seq_length(sp, SPEC_SRC_NGRAM, &cheap, 1, 16);
        probes += k == 1;
        zeros += k == 0;
    }
    tap_ok(zeros >= 56 && probes >= 3 && probes <= 5, "drafts that always fail: off, one probe every %d steps (%d probes)",
           SPEC_PROBE_EVERY, probes);
    /* probes that keep failing come twice as rarely each time */
    int steps = 0, n_probe = 0, gaps[8] = {0}, last = 0;
    for (steps = 1; steps <= 2000 && n_probe < 6; steps++) {
        if (spec_seq_length(sp, SPEC_SRC_NGRAM, &cheap, 1, 16) == 1) {
            gaps[n_probe++] = steps - last;
            last = steps;
            spec_seq_feedback(sp, SPEC_SRC_NGRAM, 1, 0);
        }
    }
    tap_ok(n_probe == 6 && gaps[1] == 2 * gaps[0] && gaps[2] == 2 * gaps[1] && gaps[5] == SPEC_PROBE_MAX,
           "failed probes back off: gaps %d %d %d ... %d (at most %d)", gaps[0], gaps[1], gaps[2], gaps[5],
           SPEC_PROBE_MAX);
    int64_t dr, ac;
    spec_seq_counts(sp, SPEC_SRC_NGRAM, &dr, &ac);
    tap_ok(dr == 20 * 8 + 30 * 4 + 6 && ac == 120, "counts per source (%lld drafted, %lld accepted)", (long long)dr,
           (long long)ac);
    spec_seq_free(sp);

    /* a draft model: its own step counts (measured, or before that the
     * ratio of its weights); always-right drafts from a model as large as
     * the target cannot pay, from a tenth of it they do */
    spec_params_t pd = {.draft_model = true, .k_max = 16};
    const struct {
        double ratio, t_draft;
        int32_t k_min, k_max;
        const char *what;
    } dcases[] = {
        {1.0, 0, 0, 0, "a draft as large as the target (weights' ratio 1): no drafts"},
        {0.1, 0, 8, 16, "a draft a tenth of the target: long drafts"},
        {0.1, 1.2, 0, 0, "measured draft steps slower than a step override the ratio: no drafts"},
        {1.0, 0.05, 8, 16, "measured draft steps of 0.05 of a step: long drafts"},
    };
    for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
        spec_seq_t *sd = spec_seq_create(&pd, &err);
        for (int r = 0; r < 20; r++)
            spec_seq_feedback(sd, SPEC_SRC_DRAFT, 8, 8);
        spec_cost_t dc = {.t0 = 1.0, .t1 = 0.02, .draft_ratio = dcases[i].ratio, .t_draft = dcases[i].t_draft};
        int32_t k = spec_seq_length(sd, SPEC_SRC_DRAFT, &dc, 1, 16);
        tap_ok(k >= dcases[i].k_min && k <= dcases[i].k_max, "%s (%d)", dcases[i].what, k);
        spec_seq_free(sd);
    }
    {
        /* a switched-off draft model is probed only while it is cheap (a
         * probe catches its cache up first) */
        const double ratios[] = {1.0, 0.6, 0.1};
        const int want[] = {0, 0, 1};
        for (int r = 0; r < 3; r++) {
            spec_seq_t *sd = spec_seq_create(&pd, &err);
            for (int i = 0; i < 30; i++)
                spec_seq_feedback(sd, SPEC_SRC_DRAFT, 4, 0);
            spec_cost_t dc = {.t0 = 1.0, .t1 = 0.02, .draft_ratio = ratios[r]};
            int n1 = 0, nk = 0;
            for (int i = 0; i < 20; i++) {
                const int32_t k = spec_seq_length(sd, SPEC_SRC_DRAFT, &dc, 1, 16);
                n1 += k == 1;
                nk += k > 1;
            }
            tap_ok(n1 == want[r] && nk == 0, "a failing draft model of %.0f%% of the target's weights: %d probes in 20 steps",
                   100 * ratios[r], n1);
            spec_seq_free(sd);
        }
    }
    tap_ok(fabs(spec_expected_accepted(0.5, 3) - 0.875) < 1e-12 && spec_expected_accepted(1.0, 5) == 5.0,
           "expected accepted tokens (geometric)");

    spec_cost_t c;
    spec_cost_init(&c);
    for (int i = 0; i < 200; i++) {
        int32_t r = 1 + i % 9;
        spec_cost_observe(&c, r, 0.030 + 0.004 * r);
    }
    tap_ok(fabs(c.t0 - 0.030) < 1e-4 && fabs(c.t1 - 0.004) < 1e-5, "step cost fit: t0 %.4f t1 %.5f", c.t0, c.t1);
    spec_cost_init(&c);
    for (int i = 0; i < 20; i++)
        spec_cost_observe(&c, 1, 0.05);
    tap_ok(c.t0 > 0.04 && c.t0 < 0.05 && c.t1 > 0 && c.t1 < 0.01, "one step size: the prior ratio at the measured scale");
}

/* ---- verification on synthetic distributions ---- */

enum { V = 6, T = 3 };
static float target[V][V]; /* logits of the next token after token i */

typedef struct {
    sampler_t *smp;
    int32_t prev;          /* token before row 0 */
    const int32_t *draft;
    int32_t *out;
    int32_t n_out;
} synth_t;

static int32_t synth_row(void *arg, int32_t r)
{
    synth_t *c = arg;
    if (c->n_out >= T)
        return -1;
    const int32_t prev = r == 0 ? c->prev : c->draft[r - 1];
    int32_t tok = -1;
    lf_err_t err;
    if (sampler_sample(c->smp, target[prev], &tok, &err) != LF_OK || sampler_accept(c->smp, tok, &err) != LF_OK)
        return -1;
    c->out[c->n_out++] = tok;
    return c->n_out >= T ? -1 : tok;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void test_distribution(void)
{
    uint64_t g = 12345;
    for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++)
            target[i][j] = (float)((double)(lcg(&g) % 1000) / 250.0);
    /* exact probabilities of every sequence of T tokens after token 0 */
    double prob[V * V * V];
    for (int a = 0; a < V; a++)
        for (int b = 0; b < V; b++)
            for (int c = 0; c < V; c++) {
                double pr = 1;
                const int seqv[T] = {a, b, c};
                int prev = 0;
                for (int t = 0; t < T; t++) {
                    double z = 0;
                    for (int x = 0; x < V; x++)
                        z += exp(target[prev][x]);
                    pr *= exp(target[prev][seqv[t]]) / z;
                    prev = seqv[t];
                }
                prob[a * V * V + b * V + c] = pr;
            }
    const int N = 20000;
    static int count[V * V * V];
    memset(count, 0, sizeof count);
    int same = 1, accepted_total = 0;
    uint64_t dg = 777;
    for (int n = 0; n < N; n++) {
        sampler_params_t sp;
        sampler_params_default(&sp);
        sp.has_seed = true;
        sp.seed = (uint64_t)n;
        lf_err_t err;
        /* one token per step */
        sampler_t *plain = sampler_create(&sp, V, 0, &err);
        int32_t ref[T], prev = 0;
        for (int t = 0; t < T; t++) {
            sampler_sample(plain, target[prev], &ref[t], &err);
            sampler_accept(plain, ref[t], &err);
            prev = ref[t];
        }
        sampler_free(plain);
        /* speculative: random drafts (a different distribution, sometimes
         * right), as many tokens per step as verification keeps */
        synth_t c = {.smp = sampler_create(&sp, V, 0, &err), .prev = 0};
        int32_t out[T + 8];
        c.out = out;
        while (c.n_out < T) {
            int32_t draft[4];
            const int32_t k = (int32_t)(lcg(&dg) % 4);
            for (int i = 0; i < k; i++)
                draft[i] = (int32_t)(lcg(&dg) % 3); /* only tokens 0..2 */
            c.draft = draft;
            accepted_total += spec_verify(draft, k, synth_row, &c);
            c.prev = out[c.n_out - 1];
        }
        sampler_free(c.smp);
        same &= !memcmp(out, ref, sizeof ref);
        count[out[0] * V * V + out[1] * V + out[2]]++;
    }
    tap_ok(same, "%d seeds: speculative tokens equal one-token-per-step sampling's", N);
    double chi = 0;
    int cells = 0;
    for (int i = 0; i < V * V * V; i++) {
        const double e = prob[i] * N;
        if (e < 1e-9)
            continue;
        chi += (count[i] - e) * (count[i] - e) / e;
        cells++;
    }
    /* df = cells - 1 (about 215): chi2 above 300 has p < 1e-4 */
    tap_ok(chi < 300 && accepted_total > 0, "accepted-and-resampled tokens follow the target distribution: chi2 %.1f over %d cells (%d drafts accepted)",
           chi, cells, accepted_total);
}

int main(void)
{
    test_match();
    test_prediction();
    test_ngram();
    test_length();
    test_distribution();
    return tap_done();
}
