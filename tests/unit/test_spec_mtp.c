/* test_spec_mtp.c - drafts from a model's own MTP (nextn) block
 * (spec_mtp.h, model_nextn_view, nextn.h) on tinyqwen35-f32 (and
 * tinyqwen35moe-f32 against llama.cpp):
 *  - the block's rows are (the token at p, the target's hidden state at
 *    p - 1, zeros before position 0), as llama.cpp's draft-mtp builds
 *    them: a reference computed directly on the view gives the same
 *    drafts, the first from the row of the next decode input, the others
 *    chained through the block's own output state;
 *  - feeding a prompt in one batch, in chunks, or with drafting in between
 *    gives the same drafts (the drafting rows are forgotten); slots
 *    drafting together in one batch per step get their own drafts;
 *  - a slot whose first fed position is not 0 drafts (from where it
 *    starts), one fed out of order gives none, a reset slot starts over;
 *  - llama.cpp's own MTP drafts on the same files agree: recorded from
 *    llama-server (the node-llama-cpp 3.22.1 tree, de3ff81) started with
 *    `--spec-type draft-mtp --spec-draft-n-max 3 --spec-draft-p-min 0
 *    -fa off -np 1 -lv 5`, a greedy /completion of 12 tokens after the
 *    prompt [1, 403, 407, 261, 378]: its "draft candidate 0" log lines
 *    (every draft was rejected, so round i drafts after the prompt and
 *    the first i generated tokens, from generated token i);
 *  - a model without an MTP block is refused. */
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/model/nextn.h"
#include "engine/sched/spec.h"
#include "engine/sched/spec_mtp.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 24, K = 5 };

/* The reference: the view run row by row from the definition. */
static void reference(const model_t *m, const int32_t *toks, const float *H, int32_t n, int32_t next, int32_t k,
                      int32_t *out)
{
    const int64_t E = model_hparams(m)->n_embd;
    const int32_t nv = model_hparams(m)->n_vocab;
    model_t *v = model_nextn_view(m, NULL);
    fwd_opts_t fo = {.n_seq = 1, .n_ctx = 256, .max_batch = 64, .n_threads = 1};
    fwd_t *f = fwd_create(v, &fo, NULL);
    float *zeros = calloc((size_t)E, sizeof(float)), *in = malloc((size_t)E * sizeof(float)), h[4096];
    void *scratch = malloc(nextn_input_scratch(v, 1));
    const float *hp = zeros;
    for (int32_t p = 0; p <= n + k - 1; p++) {
        int32_t t = p < n ? toks[p] : p == n ? next : out[p - n - 1];
        nextn_input(NULL, v, &t, &hp, 1, scratch, in);
        fwd_tok_t tk = {.token = t, .seq = 0, .pos = p, .logits = p >= n ? FWD_OUT_LOGITS | FWD_OUT_HIDDEN : 0};
        fwd_mm_t mm = {.embd = in};
        fwd_decode_mm(f, &tk, &mm, 1, NULL);
        if (p < n) {
            hp = H + (int64_t)p * E;
        } else {
            out[p - n] = spec_argmax(fwd_logits(f, 0), nv);
            memcpy(h, fwd_hidden(f, 0), (size_t)E * sizeof(float));
            hp = h;
        }
    }
    free(zeros), free(in), free(scratch);
    fwd_free(f);
    model_free(v);
}

static void feed(spec_mtp_t *mt, int32_t seq, const int32_t *toks, const float *H, int64_t E, int32_t from,
                 int32_t to, int32_t chunk);

/* llama-server's rounds: the prompt [1, 403, 407, 261, 378] then gen[12]
 * greedily, every draft rejected; round r drafts 3 tokens from gen[r]
 * after the prompt and gen[0..r). Returns the rounds that agree. */
static int replay(const model_t *m, const int32_t gen[12], const int32_t want[10][3])
{
    const int64_t E = model_hparams(m)->n_embd;
    int32_t toks[17] = {1, 403, 407, 261, 378};
    memcpy(toks + 5, gen, 12 * sizeof(int32_t));
    fwd_opts_t fo = {.n_seq = 1, .n_ctx = 256, .max_batch = 64, .n_threads = 1};
    fwd_t *tf = fwd_create(m, &fo, NULL);
    float *H = malloc((size_t)17 * (size_t)E * sizeof(float));
    fwd_tok_t pt[17];
    for (int32_t i = 0; tf && i < 17; i++)
        pt[i] = (fwd_tok_t){.token = toks[i], .seq = 0, .pos = i, .logits = FWD_OUT_HIDDEN,
                            .prompt = i < 5 && fwd_prompt_order(tf, 5, i)};
    /* the prompt in one batch, then one decode row per generated token */
    bool ok = tf && H && fwd_decode(tf, pt, 5, NULL) == LF_OK;
    for (int32_t i = 0; ok && i < 5; i++)
        memcpy(H + (int64_t)i * E, fwd_hidden(tf, i), (size_t)E * sizeof(float));
    for (int32_t i = 5; ok && i < 17; i++) {
        ok = fwd_decode(tf, &pt[i], 1, NULL) == LF_OK;
        if (ok)
            memcpy(H + (int64_t)i * E, fwd_hidden(tf, 0), (size_t)E * sizeof(float));
    }
    spec_mtp_t *mt = ok ? spec_mtp_create(m, 1, 256, 64, 1, NULL) : NULL;
    int agree = 0;
    for (int32_t r = 0; mt && r < 10; r++) {
        if (r == 0)
            feed(mt, 0, toks, H, E, 0, 5, 5);
        else
            feed(mt, 0, toks, H, E, 4 + r, 5 + r, 1);
        int32_t d[3];
        agree += spec_mtp_draft(mt, 0, gen[r], 3, d) == 3 && !memcmp(d, want[r], sizeof d);
    }
    spec_mtp_free(mt);
    free(H);
    fwd_free(tf);
    return agree;
}

static void feed(spec_mtp_t *mt, int32_t seq, const int32_t *toks, const float *H, int64_t E, int32_t from,
                 int32_t to, int32_t chunk)
{
    spec_mtp_row_t rows[N];
    for (int32_t a = from; a < to; a += chunk) {
        int32_t n = 0;
        for (int32_t p = a; p < to && p < a + chunk; p++)
            rows[n++] = (spec_mtp_row_t){.seq = seq, .pos = p, .token = toks[p], .h = H + (int64_t)p * E};
        spec_mtp_feed(mt, rows, n, NULL);
    }
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    char path[1024];
    snprintf(path, sizeof path, "%s/tinyqwen35-f32.gguf", dir);
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "tinyqwen35-f32 loads (%s)", err.msg))
        return tap_done();
    const int64_t E = model_hparams(m)->n_embd;
    /* the target's hidden states over a prompt */
    int32_t toks[N];
    for (int32_t i = 0; i < N; i++)
        toks[i] = i == 0 ? 1 : 3 + (i * 37) % 500;
    fwd_opts_t fo = {.n_seq = 1, .n_ctx = 256, .max_batch = 64, .n_threads = 1};
    fwd_t *tf = fwd_create(m, &fo, &err);
    fwd_tok_t tk[N];
    for (int32_t i = 0; i < N; i++)
        tk[i] = (fwd_tok_t){.token = toks[i], .seq = 0, .pos = i, .logits = FWD_OUT_HIDDEN};
    float *H = malloc((size_t)N * (size_t)E * sizeof(float));
    bool ok = tf && fwd_decode(tf, tk, N, &err) == LF_OK;
    for (int32_t i = 0; ok && i < N; i++)
        memcpy(H + (int64_t)i * E, fwd_hidden(tf, i), (size_t)E * sizeof(float));
    if (!tap_ok(ok, "the target's hidden states at every prompt position")) {
        free(H);
        fwd_free(tf);
        model_free(m);
        return tap_done();
    }
    const int32_t next = 77;

    spec_mtp_t *mt = spec_mtp_create(m, 4, 256, 64, 1, &err);
    if (!tap_ok(mt != NULL, "an MTP drafter for tinyqwen35 (%s)", err.msg)) {
        free(H);
        fwd_free(tf);
        model_free(m);
        return tap_done();
    }
    int32_t want[K], got[K];
    reference(m, toks, H, N, next, K, want);
    feed(mt, 0, toks, H, E, 0, N, N);
    int32_t n = spec_mtp_draft(mt, 0, next, K, got);
    tap_ok(n == K && !memcmp(got, want, sizeof want), "the drafts of the definition: %d %d %d %d %d", got[0], got[1],
           got[2], got[3], got[4]);
    n = spec_mtp_draft(mt, 0, next, K, got);
    tap_ok(n == K && !memcmp(got, want, sizeof want), "drafting again gives the same drafts (its rows were forgotten)");
    feed(mt, 1, toks, H, E, 0, N, 5);
    n = spec_mtp_draft(mt, 1, next, K, got);
    tap_ok(n == K && !memcmp(got, want, sizeof want), "fed in chunks of 5: the same drafts");
    /* drafting between the chunks */
    feed(mt, 2, toks, H, E, 0, 10, 10);
    int32_t mid[K];
    spec_mtp_draft(mt, 2, toks[10], K, mid);
    feed(mt, 2, toks, H, E, 10, N, 7);
    n = spec_mtp_draft(mt, 2, next, 2, got);
    tap_ok(n == 2 && got[0] == want[0] && got[1] == want[1], "drafting between two feeds changes nothing; k = 2 gives two");
    /* several slots drafting together: each gets what it gets alone */
    {
        int32_t a[K], b[K], c[K], one_b[K];
        spec_mtp_draft(mt, 2, next, K, one_b);
        spec_mtp_req_t rq[3] = {{0, next, K, a}, {2, next, 3, b}, {1, 99, K, c}};
        int32_t one_c[K];
        spec_mtp_draft(mt, 1, 99, K, one_c);
        spec_mtp_draft_many(mt, rq, 3);
        tap_ok(rq[0].k == K && rq[1].k == 3 && rq[2].k == K && !memcmp(a, want, sizeof want) &&
                   !memcmp(b, one_b, 3 * sizeof(int32_t)) && !memcmp(c, one_c, sizeof c),
               "three slots drafting in one batch per step (lengths 5, 3, 5): each its own drafts");
    }
    /* a slot starting at position 8 (a reused prefix) drafts; out of order
     * gives none; reset starts over */
    feed(mt, 3, toks, H, E, 8, N, N);
    tap_ok(spec_mtp_draft(mt, 3, next, K, got) == K, "a slot first fed at position 8 drafts");
    feed(mt, 3, toks, H, E, 2, 4, 4);
    tap_ok(spec_mtp_draft(mt, 3, next, K, got) == 0, "rows that do not continue the slot: no drafts");
    spec_mtp_reset(mt, 3);
    feed(mt, 3, toks, H, E, 0, N, N);
    tap_ok(spec_mtp_draft(mt, 3, next, K, got) == K && !memcmp(got, want, sizeof want), "reset: the slot starts over");
    tap_ok(spec_mtp_draft(mt, 9, next, K, got) == 0 && spec_mtp_draft(mt, 0, -1, K, got) == 0 &&
               spec_mtp_draft(mt, 0, next, 0, got) == 0,
           "no drafts for a bad slot, token or length");
    tap_ok(spec_mtp_cost_ratio(mt) > 0 && spec_mtp_cost_ratio(mt) < 1 && spec_mtp_step_seconds(mt) > 0,
           "its cost: %.3f of the target's weight bytes per token", spec_mtp_cost_ratio(mt));
    spec_mtp_free(mt);

    /* llama.cpp's drafts (see the top) */
    static const int32_t gen35[12] = {489, 303, 398, 302, 327, 300, 491, 441, 288, 502, 508, 397};
    static const int32_t drafts35[10][3] = {{284, 316, 279}, {313, 400, 409}, {362, 279, 267}, {380, 444, 410},
                                            {451, 12, 285},  {358, 334, 357}, {378, 308, 336}, {501, 276, 271},
                                            {2, 308, 402},   {400, 284, 294}};
    tap_ok(replay(m, gen35, drafts35) == 10, "llama.cpp's MTP drafts on tinyqwen35-f32: 10 rounds of 3 agree");
    static const int32_t genmoe[12] = {392, 426, 365, 349, 320, 375, 493, 12, 511, 285, 329, 409};
    static const int32_t draftsmoe[10][3] = {{406, 460, 351}, {480, 272, 446}, {312, 449, 299}, {511, 274, 441},
                                             {455, 260, 319}, {425, 406, 511}, {406, 393, 260}, {495, 263, 274},
                                             {271, 425, 320}, {260, 395, 364}};
    snprintf(path, sizeof path, "%s/tinyqwen35moe-f32.gguf", dir);
    model_t *moe = model_load(path, &err);
    tap_ok(moe && replay(moe, genmoe, draftsmoe) == 10,
           "llama.cpp's MTP drafts on tinyqwen35moe-f32 (an MoE block): 10 rounds of 3 agree");
    model_free(moe);

    snprintf(path, sizeof path, "%s/stories260K.gguf", dir);
    model_t *plain = model_load(path, &err);
    lf_err_t e2 = {0};
    tap_ok(plain && !spec_mtp_create(plain, 1, 64, 16, 1, &e2) && e2.code == LF_ERR_UNSUPPORTED,
           "a model without an MTP block: refused (%s)", e2.msg);
    model_free(plain);
    free(H);
    fwd_free(tf);
    model_free(m);
    return tap_done();
}
