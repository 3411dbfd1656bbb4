/* test_forward.c - the forward pass as the scheduler uses it: batch
 * invariance, prefix reuse, the KV budget and input validation, on llama,
 * qwen2 and the model families (mixtures of experts, sliding windows,
 * sinks: their prompts and generations run past the windows). */
#include "engine/model/forward.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static int32_t n_vocab;

static int same_logits(const float *a, const float *b)
{
    return a && b && !memcmp(a, b, (size_t)n_vocab * sizeof(float));
}

static float *copy_logits(const fwd_t *f, int32_t j)
{
    float *c = malloc((size_t)n_vocab * sizeof(float));
    memcpy(c, fwd_logits(f, j), (size_t)n_vocab * sizeof(float));
    return c;
}

/* Prompt of n tokens on seq, then `steps` single-token decodes of fixed
 * tokens; returns the logits of the last step. */
static float *run_alone(fwd_t *f, int32_t seq, const int32_t *prompt, int32_t n, const int32_t *next, int steps)
{
    fwd_seq_rm(f, seq);
    if (fwd_prefill(f, seq, prompt, n, true, NULL) != LF_OK)
        return NULL;
    for (int i = 0; i < steps; i++) {
        fwd_tok_t t = {next[i], seq, n + i, true, false};
        if (fwd_decode(f, &t, 1, NULL) != LF_OK)
            return NULL;
    }
    return copy_logits(f, 0);
}

static void test_batch_invariance(const model_t *m, const char *name)
{
    fwd_opts_t o = {.n_seq = 4, .n_ctx = 256, .max_batch = 64, .n_threads = 2};
    fwd_t *f = fwd_create(m, &o, NULL);
    int32_t pa[44], pb[77], pc[9], next[6] = {5, 17, 99, 3, 42, 7};
    for (int i = 0; i < 77; i++) {
        if (i < 44)
            pa[i] = (i * 7 + 3) % n_vocab;
        pb[i] = (i * 13 + 11) % n_vocab;
        if (i < 9)
            pc[i] = (i * 5 + 1) % n_vocab;
    }
    float *alone = run_alone(f, 0, pa, 44, next, 6);
    /* the same sequence decoded in a batch with two others, whose prompts
     * are prefilled in the same batches */
    fwd_seq_rm(f, 0);
    fwd_seq_rm(f, 1);
    fwd_seq_rm(f, 2);
    fwd_prefill(f, 1, pb, 77, false, NULL);
    fwd_prefill(f, 0, pa, 44, true, NULL);
    fwd_prefill(f, 2, pc, 9, true, NULL);
    lf_code_t rc = LF_OK;
    for (int i = 0; i < 6 && rc == LF_OK; i++) {
        fwd_tok_t batch[3] = {
            {next[(i + 2) % 6], 2, 9 + i, true, false},
            {next[i], 0, 44 + i, true, false},
            {next[(i + 1) % 6], 1, 77 + i, true, false},
        };
        rc = fwd_decode(f, batch, 3, NULL);
    }
    tap_ok(rc == LF_OK && same_logits(alone, fwd_logits(f, 1)),
           "%s: a sequence decodes bitwise the same alone and in a batch of 3", name);
    free(alone);
    fwd_free(f);
}

static void test_prefix_reuse(const model_t *m, const char *name)
{
    fwd_opts_t o = {.n_seq = 3, .n_ctx = 256, .max_batch = 32, .n_threads = 2};
    fwd_t *f = fwd_create(m, &o, NULL);
    int32_t p[70];
    for (int i = 0; i < 70; i++)
        p[i] = (i * 31 + 7) % n_vocab;
    /* uncached reference: the 70-token prompt in chunks of 32, registering
     * the first 60 positions (3 full blocks) as they are computed, as the
     * scheduler does (sliding-window layers give their early blocks back
     * during the prompt: registered first, they stay cached); the
     * scheduler first tries the prefix cache, which also tells a hybrid
     * model where to snapshot its state for later reuse */
    tap_ok(fwd_seq_attach_prefix(f, 0, p, 70) == 0, "%s: nothing cached at first", name);
    for (int32_t a = 0; a < 70; a += 32) {
        fwd_prefill(f, 0, p + a, a + 32 < 70 ? 32 : 70 - a, a + 32 >= 70, NULL);
        fwd_seq_commit(f, 0, p, 60);
    }
    float *ref = copy_logits(f, 0);
    int32_t reused = fwd_seq_attach_prefix(f, 1, p, 70);
    tap_ok(reused == 48 && fwd_seq_len(f, 1) == 48, "%s: prefix of 3 blocks reused (%d)", name, reused);
    lf_code_t rc = fwd_prefill(f, 1, p + reused, 70 - reused, true, NULL);
    tap_ok(rc == LF_OK && same_logits(ref, fwd_logits(f, 0)), "%s: cached prefix gives bitwise the uncached logits",
           name);
    int32_t used;
    fwd_kv_usage(f, NULL, &used, NULL);
    tap_ok(used == 5 + 2, "%s: shared blocks stored once (%d blocks in use)", name, used);
    /* after the owner is gone the blocks are still reusable */
    fwd_seq_rm(f, 0);
    fwd_seq_rm(f, 1);
    reused = fwd_seq_attach_prefix(f, 2, p, 70);
    rc = fwd_prefill(f, 2, p + reused, 70 - reused, true, NULL);
    tap_ok(reused == 48 && rc == LF_OK && same_logits(ref, fwd_logits(f, 0)),
           "%s: reuse after the first sequence released its blocks", name);
    /* a 49-token prompt of which 48 are cached: one token left to compute */
    fwd_seq_rm(f, 2);
    fwd_prefill(f, 0, p, 49, true, NULL);
    float *ref49 = copy_logits(f, 0);
    fwd_seq_rm(f, 0);
    reused = fwd_seq_attach_prefix(f, 1, p, 49);
    rc = fwd_prefill(f, 1, p + reused, 49 - reused, true, NULL);
    tap_ok(reused == 48 && rc == LF_OK && same_logits(ref49, fwd_logits(f, 0)),
           "%s: a single remaining prompt token after a cached prefix gives the uncached logits", name);
    free(ref49);
    free(ref);
    fwd_free(f);
}

static void test_budget_and_errors(const model_t *m)
{
    fwd_opts_t o = {.n_seq = 2, .n_ctx = 64, .max_batch = 64, .n_threads = 1, .kv_blocks = 5};
    fwd_t *f = fwd_create(m, &o, NULL);
    int32_t p[64];
    for (int i = 0; i < 64; i++)
        p[i] = i % n_vocab;
    lf_err_t err;
    tap_ok(fwd_prefill(f, 0, p, 48, true, &err) == LF_OK, "48 tokens fit a budget of 5 blocks of 16");
    tap_ok(fwd_prefill(f, 1, p, 40, true, &err) == LF_ERR_NOMEM && fwd_seq_len(f, 1) == 0,
           "beyond the budget: LF_ERR_NOMEM and no position added (%s)", err.msg);
    fwd_seq_rm(f, 0);
    fwd_seq_rm(f, 1);
    tap_ok(fwd_prefill(f, 1, p, 40, true, &err) == LF_OK, "after a release it fits");
    fwd_tok_t bad_tok = {n_vocab, 1, 40, true, false};
    tap_ok(fwd_decode(f, &bad_tok, 1, &err) == LF_ERR_INVALID, "token id out of range rejected");
    fwd_tok_t bad_pos = {1, 1, 42, true, false};
    tap_ok(fwd_decode(f, &bad_pos, 1, &err) == LF_ERR_INVALID, "a gap in positions rejected");
    fwd_tok_t bad_seq = {1, 2, 0, true, false};
    tap_ok(fwd_decode(f, &bad_seq, 1, &err) == LF_ERR_INVALID, "sequence out of range rejected");
    tap_ok(fwd_prefill(f, 1, p, 30, true, &err) == LF_ERR_CONTEXT, "beyond the context: LF_ERR_CONTEXT");
    tap_ok(fwd_seq_len(f, 1) == 40, "errors leave the sequence as it was");
    fwd_free(f);
    fwd_opts_t odd = {.n_seq = 1, .n_ctx = 64, .n_threads = 1, .kv_block_tokens = 24};
    err.code = LF_OK;
    tap_ok(fwd_create(m, &odd, &err) == NULL && err.code == LF_ERR_INVALID,
           "KV blocks must be a multiple of 16 positions (%s)", err.msg);
    odd.kv_block_tokens = 32;
    f = fwd_create(m, &odd, &err);
    odd.kv_block_tokens = 0;
    fwd_t *f16 = fwd_create(m, &odd, &err);
    tap_ok(f && f16 && fwd_prefill(f, 0, p, 40, true, &err) == LF_OK &&
               fwd_prefill(f16, 0, p, 40, true, &err) == LF_OK && same_logits(fwd_logits(f, 0), fwd_logits(f16, 0)),
           "KV blocks of 32 positions give bitwise the logits of blocks of 16");
    fwd_free(f);
    fwd_free(f16);
}

/* Speculative decoding: k decode-order rows of one sequence in one batch
 * (beside another sequence's prompt chunk) give each row bitwise the
 * logits single-token decoding gives, and after truncating the rejected
 * rows the sequence continues exactly as if they had never been computed
 * (over the sliding windows of the families that have them). */
static void test_spec_rows(const model_t *m, const char *name)
{
    fwd_opts_t o = {.n_seq = 2, .n_ctx = 256, .max_batch = 64, .n_threads = 2};
    lf_err_t err;
    fwd_t *f = fwd_create(m, &o, &err);
    enum { NP = 40, K = 8 };
    int32_t pa[NP], pb[21], next[K + 1], alt[K + 1];
    for (int i = 0; i < NP; i++)
        pa[i] = (i * 11 + 5) % n_vocab;
    for (int i = 0; i < 21; i++)
        pb[i] = (i * 3 + 2) % n_vocab;
    for (int i = 0; i <= K; i++)
        next[i] = (i * 29 + 7) % n_vocab, alt[i] = next[i];
    alt[3] = (next[3] + 1) % n_vocab;
    float *ref[K];
    for (int s = 0; s < K; s++)
        ref[s] = run_alone(f, 0, pa, NP, next, s + 1);
    /* after rejecting rows 3.. : prompt, next[0..2], then alt[3] */
    fwd_seq_rm(f, 0);
    fwd_prefill(f, 0, pa, NP, true, NULL);
    for (int i = 0; i < 3; i++) {
        fwd_tok_t t = {next[i], 0, NP + i, true, false};
        fwd_decode(f, &t, 1, NULL);
    }
    fwd_tok_t ta = {alt[3], 0, NP + 3, true, false};
    fwd_decode(f, &ta, 1, NULL);
    float *ref_alt = copy_logits(f, 0);

    fwd_seq_rm(f, 0);
    fwd_seq_rm(f, 1);
    fwd_prefill(f, 0, pa, NP, true, NULL);
    fwd_tok_t b[K + 21];
    int32_t n = 0;
    for (int i = 0; i < K; i++)
        b[n++] = (fwd_tok_t){next[i], 0, NP + i, true, false};
    for (int i = 0; i < 21; i++)
        b[n++] = (fwd_tok_t){pb[i], 1, i, i == 20, fwd_prompt_order(f, 21, i)};
    lf_code_t rc = fwd_decode(f, b, n, &err);
    int same = rc == LF_OK;
    for (int i = 0; i < K && same; i++)
        same = same_logits(fwd_logits(f, i), ref[i]);
    tap_ok(same, "%s: %d draft rows in one batch give each row's single-step logits", name, K);
    /* keep next[0..2] (positions NP..NP+2), reject the rest */
    rc = fwd_seq_truncate(f, 0, NP + 3, &err);
    if (!fwd_can_truncate(f)) {
        /* hybrid models: the recurrent state cannot be rolled back */
        tap_ok(rc == LF_ERR_UNSUPPORTED && fwd_seq_len(f, 0) == NP + K,
               "%s: truncation refused (recurrent state), the sequence unchanged", name);
        for (int s = 0; s < K; s++)
            free(ref[s]);
        free(ref_alt);
        fwd_free(f);
        return;
    }
    fwd_tok_t t = {alt[3], 0, NP + 3, true, false};
    tap_ok(rc == LF_OK && fwd_seq_len(f, 0) == NP + 3 && fwd_decode(f, &t, 1, &err) == LF_OK &&
               same_logits(fwd_logits(f, 0), ref_alt),
           "%s: truncated past the rejected rows, the sequence continues bitwise as without them", name);
    tap_ok(fwd_seq_truncate(f, 0, NP + 10, &err) == LF_ERR_INVALID && fwd_seq_truncate(f, 7, 1, &err) == LF_ERR_INVALID,
           "%s: truncating beyond the sequence or a bad sequence is refused", name);
    /* a sequence attached to cached prompt blocks cannot lose them */
    fwd_seq_commit(f, 0, pa, NP);
    fwd_seq_rm(f, 1);
    int32_t reused = fwd_seq_attach_prefix(f, 1, pa, NP);
    tap_ok(reused > 0 && fwd_seq_truncate(f, 1, reused - 1, &err) == LF_ERR_INVALID,
           "%s: positions in shared prompt blocks cannot be truncated (%d reused)", name, reused);
    for (int s = 0; s < K; s++)
        free(ref[s]);
    free(ref_alt);
    fwd_free(f);
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    const char *files[] = {"stories260K.gguf",       "tiny256-q4_k_m.gguf",   "tinyqwen2-q8_0.gguf",
                           "tinyqwen3moe-q8_0.gguf", "tinygemma3-q8_0.gguf",  "tinygptoss-f32.gguf",
                           "tinyphi3-q8_0.gguf",     "tinyqwen35-f32.gguf",   "tinyqwen35moe-q8_0.gguf",
                           "tinygemma4-q8_0.gguf",   "tinygemma4moe-f32.gguf", "tinylfm2-q8_0.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        lf_err_t err;
        model_t *m = model_load(path, &err);
        if (!tap_ok(m != NULL, "load %s", files[i]))
            continue;
        n_vocab = model_hparams(m)->n_vocab;
        test_batch_invariance(m, files[i]);
        test_prefix_reuse(m, files[i]);
        test_spec_rows(m, files[i]);
        if (i == 0)
            test_budget_and_errors(m);
        model_free(m);
    }
    return tap_done();
}
