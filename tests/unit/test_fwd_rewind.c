/* test_fwd_rewind.c - fwd_seq_checkpoint / fwd_seq_rewind (forward.h) on a
 * transformer (stories260K) and two hybrids (tinyqwen35: Gated DeltaNet,
 * tinylfm2: short convolutions): after a checkpoint and some positions,
 * rewinding to any length in between and evaluating the positions the
 * call asks again gives, at the next position, bitwise the logits of a
 * sequence that never had the forgotten positions; bad lengths and a
 * missing checkpoint are refused. */
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P = 12, D = 6 }; /* prompt, then D more positions after the checkpoint */

static bool decode(fwd_t *f, int32_t seq, const int32_t *toks, int32_t from, int32_t to, bool logits_last)
{
    fwd_tok_t b[P + D + 1];
    int32_t n = 0;
    for (int32_t p = from; p < to; p++)
        b[n++] = (fwd_tok_t){.token = toks[p], .seq = seq, .pos = p, .logits = logits_last && p == to - 1};
    return n == 0 || fwd_decode(f, b, n, NULL) == LF_OK;
}

static void test_model(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "%s loads (%s)", file, err.msg))
        return;
    const int32_t nv = model_hparams(m)->n_vocab;
    fwd_opts_t fo = {.n_seq = 2, .n_ctx = 128, .max_batch = 32, .n_threads = 1};
    fwd_t *f = fwd_create(m, &fo, &err);
    int32_t toks[P + D + 1], alt[P + D + 1];
    for (int32_t i = 0; i <= P + D; i++) {
        toks[i] = i == 0 ? 1 : 3 + (i * 41) % (nv - 3);
        alt[i] = 3 + (i * 97 + 5) % (nv - 3);
    }
    float *want = malloc((size_t)nv * sizeof(float));
    bool all = f != NULL && want != NULL;
    const bool hybrid = !fwd_can_truncate(f);
    for (int32_t keep = 0; all && keep <= D; keep++) {
        /* the reference: the prompt and `keep` positions, then toks[P + keep] */
        fwd_seq_rm(f, 1);
        all &= decode(f, 1, toks, 0, P + keep + 1, true);
        memcpy(want, fwd_logits(f, 0), (size_t)nv * sizeof(float));
        /* the prompt, a checkpoint, D positions of which only `keep` are
         * the same tokens, a rewind to P + keep */
        fwd_seq_rm(f, 0);
        all &= decode(f, 0, toks, 0, P, false) && fwd_seq_checkpoint(f, 0, NULL) == LF_OK;
        int32_t mixed[P + D + 1];
        memcpy(mixed, toks, sizeof toks);
        for (int32_t p = P + keep; p < P + D; p++)
            mixed[p] = alt[p];
        all &= decode(f, 0, mixed, P, P + D, false);
        const int32_t at = fwd_seq_rewind(f, 0, P + keep, NULL);
        all &= at == (hybrid && keep < D ? P : P + keep) && fwd_seq_len(f, 0) == at;
        all &= decode(f, 0, toks, at, P + keep + 1, true);
        all &= !memcmp(fwd_logits(f, 0), want, (size_t)nv * sizeof(float));
    }
    tap_ok(all, "%s: rewinding to every length after the checkpoint (%s), then the next position: bitwise the logits "
           "of a sequence that never had the rest", file, hybrid ? "back to the checkpoint, positions again" : "forgotten");
    /* refusals */
    lf_err_t e1 = {0}, e2 = {0};
    const int32_t len = fwd_seq_len(f, 0);
    tap_ok(fwd_seq_rewind(f, 0, len + 1, &e1) < 0 && e1.code == LF_ERR_INVALID &&
               fwd_seq_rewind(f, 5, 0, NULL) < 0 && fwd_seq_checkpoint(f, 7, NULL) == LF_ERR_INVALID &&
               fwd_seq_rewind(f, 0, len, NULL) == len,
           "%s: a length past the end or a bad sequence refused; the current length is a no-op", file);
    if (hybrid) {
        fwd_seq_rm(f, 0);
        decode(f, 0, toks, 0, P, false);
        tap_ok(fwd_seq_rewind(f, 0, P - 2, &e2) < 0 && e2.code == LF_ERR_INVALID,
               "%s: no checkpoint to go back to: refused (%s)", file, e2.msg);
    }
    free(want);
    fwd_free(f);
    model_free(m);
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    const char *files[] = {"stories260K.gguf", "tinyqwen35-f32.gguf", "tinylfm2-f32.gguf", "tinyqwen35moe-q8_0.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        test_model(dir, files[i]);
    return tap_done();
}
