/* test_prefix_state.c - prefix caching with recurrent state against
 * llama.cpp's cache goldens (../shared/golden/families/cache-*.jsonl,
 * README-families section 4).
 *
 * Each record is a two-turn conversation on one hybrid model: turn 1 =
 * prompt A (+ its 48 golden completion tokens, fed one at a time as a
 * server generates them); turn 2 = A + turn-1 completion + B ("continue")
 * or A + B ("branch"); `fresh` = turn 2's prompt evaluated from scratch.
 * Here turn 2 must:
 *  - resume from the cache: reuse a prefix of A (whole blocks, at the last
 *    state snapshot of turn 1's prompt) instead of recomputing it;
 *  - give exactly what a fresh evaluation gives in this engine (every
 *    logit bitwise), and what llama.cpp's fresh run gave: the same greedy
 *    tokens (up to the file's bar) and, for F32, every golden top-5
 *    logprob within 2e-3.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "golden_util.h"
#include "tap.h"

#define MAX_TOK 2048
#define NGEN 48



/* Computes prompt[from..n) on seq (the prompt order of a prompt of n, as
 * the scheduler does) and registers its blocks; logits of the last. */
static bool prefill(fwd_t *f, int32_t seq, const int32_t *prompt, int32_t from, int32_t n, lf_err_t *err)
{
    const int32_t B = fwd_max_batch(f);
    fwd_tok_t *b = malloc((size_t)B * sizeof *b);
    bool ok = true;
    for (int32_t s = from; ok && s < n; s += B) {
        const int32_t m = n - s < B ? n - s : B;
        for (int32_t i = 0; i < m; i++)
            b[i] = (fwd_tok_t){prompt[s + i], seq, s + i, s + i == n - 1, fwd_prompt_order(f, n, s + i)};
        ok = fwd_decode(f, b, m, err) == LF_OK;
        fwd_seq_commit(f, seq, prompt, n);
    }
    free(b);
    return ok;
}

/* Greedy generation of n tokens after a prefill (logits row 0); the
 * logits of every step into lg (n x n_vocab). */
static bool generate(fwd_t *f, int32_t seq, int32_t pos, int n, int n_vocab, int32_t *out, float *lg, lf_err_t *err)
{
    for (int i = 0; i < n; i++) {
        const float *l = fwd_logits(f, 0);
        memcpy(lg + (size_t)i * n_vocab, l, (size_t)n_vocab * sizeof(float));
        out[i] = argmax(l, n_vocab);
        fwd_tok_t t = {out[i], seq, pos++, true, false};
        if (fwd_decode(f, &t, 1, err) != LF_OK)
            return false;
    }
    return true;
}

typedef struct {
    const char *file;
    bool f32; /* logprob bar 2e-3 and all tokens; else tokens up to a golden gap < 2.7 */
} bar_t;

static const bar_t bars[] = {
    {"families/cache-tinyqwen35-f32.jsonl", true},
    {"families/cache-tinyqwen35moe-f32.jsonl", true},
    {"families/cache-tinylfm2-f32.jsonl", true},
    {"families/cache-tinyqwen35-q8_0.jsonl", false},
};

static void run_file(const char *gdir, const char *mdir, const bar_t *bar)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", gdir, bar->file);
    FILE *fp = fopen(path, "r");
    if (!tap_ok(fp != NULL, "%s: golden file present", bar->file))
        return;
    static char line[1 << 22];
    static int32_t p1[MAX_TOK], c1[MAX_TOK], p2[MAX_TOK], fc[MAX_TOK], ours[NGEN], fresh[NGEN];
    model_t *m = NULL;
    int rec = 0;
    while (fgets(line, sizeof line, fp)) {
        json_object *o = json_tokener_parse(line);
        if (!o)
            continue;
        rec++;
        lf_err_t err;
        if (!m) {
            snprintf(path, sizeof path, "%s/%s", mdir, json_object_get_string(json_object_object_get(o, "model")));
            m = model_load(path, &err);
            if (!tap_ok(m != NULL, "%s: model loads (%s)", bar->file, m ? "ok" : err.msg)) {
                json_object_put(o);
                break;
            }
        }
        const char *scen = json_object_get_string(json_object_object_get(o, "scenario"));
        json_object *t1 = json_object_object_get(o, "turn1"), *t2 = json_object_object_get(o, "turn2"),
                    *fr = json_object_object_get(o, "fresh");
        const int n1 = ids_of(json_object_object_get(t1, "prompt_tokens"), p1, MAX_TOK);
        const int nc1 = ids_of(json_object_object_get(t1, "completion_tokens"), c1, MAX_TOK);
        const int n2 = ids_of(json_object_object_get(t2, "prompt_tokens"), p2, MAX_TOK);
        const int nf = ids_of(json_object_object_get(fr, "completion_tokens"), fc, MAX_TOK);
        const int n_vocab = model_hparams(m)->n_vocab;
        fwd_opts_t fo = {.n_seq = 2, .n_ctx = 1024, .max_batch = 512, .n_threads = 2};
        fwd_t *f = fwd_create(m, &fo, &err);
        float *lg_ours = malloc((size_t)NGEN * n_vocab * sizeof(float));
        float *lg_fresh = malloc((size_t)NGEN * n_vocab * sizeof(float));
        bool ok = f && lg_ours && lg_fresh;
        /* turn 1 on seq 0, its completion fed one token at a time; the
         * request then ends (its sequence is released) */
        ok = ok && fwd_seq_attach_prefix(f, 0, p1, n1) == 0 && prefill(f, 0, p1, 0, n1, &err);
        for (int i = 0; ok && i + 1 < nc1; i++) {
            fwd_tok_t t = {c1[i], 0, n1 + i, true, false};
            ok = fwd_decode(f, &t, 1, &err) == LF_OK;
        }
        fwd_seq_rm(f, 0);
        /* turn 2 on seq 1: resumes from the cache */
        const int32_t cached = ok ? fwd_seq_attach_prefix(f, 1, p2, n2) : -1;
        const int32_t bt = 16, want = (n1 - 1) / bt * bt;
        tap_ok(cached == want, "%s #%d (%s): turn 2 resumes at turn 1's last block boundary (%d of %d reused, "
               "%d expected)", bar->file, rec, scen, cached, n2, want);
        ok = ok && cached >= 0 && prefill(f, 1, p2, cached, n2, &err) &&
             generate(f, 1, n2, NGEN, n_vocab, ours, lg_ours, &err);
        /* a fresh evaluation of turn 2 in this engine (on a new context) */
        fwd_free(f);
        f = ok ? fwd_create(m, &fo, &err) : NULL;
        ok = ok && f && prefill(f, 0, p2, 0, n2, &err) && generate(f, 0, n2, NGEN, n_vocab, fresh, lg_fresh, &err);
        if (!tap_ok(ok, "%s #%d: turn 1, turn 2 and a fresh turn 2 run (%s)", bar->file, rec, ok ? "ok" : err.msg)) {
            fwd_free(f);
            free(lg_ours);
            free(lg_fresh);
            json_object_put(o);
            continue;
        }
        tap_ok(!memcmp(lg_ours, lg_fresh, (size_t)NGEN * n_vocab * sizeof(float)),
               "%s #%d (%s): the resumed turn 2 equals a fresh evaluation, every logit bitwise", bar->file, rec, scen);
        /* against llama.cpp's fresh run */
        json_object *tops = json_object_object_get(fr, "top_probs");
        int limit = nf < NGEN ? nf : NGEN;
        double max_d = 0;
        for (int s = 0; s < limit; s++) {
            json_object *top = json_object_array_get_idx(tops, (size_t)s);
            const float *l = lg_ours + (size_t)s * n_vocab;
            float mx = l[argmax(l, n_vocab)];
            double sum = 0;
            for (int i = 0; i < n_vocab; i++)
                sum += exp((double)(l[i] - mx));
            for (size_t k = 0; k < json_object_array_length(top); k++) {
                json_object *e = json_object_array_get_idx(top, k);
                const int id = json_object_get_int(json_object_object_get(e, "id"));
                const double d = fabs((double)(l[id] - mx) - log(sum) -
                                      json_object_get_double(json_object_object_get(e, "logprob")));
                max_d = d > max_d ? d : max_d;
            }
            if (!bar->f32 && golden_gap(top) < 2.7) {
                limit = s;
                break;
            }
        }
        int same = 0;
        while (same < limit && ours[same] == fc[same])
            same++;
        tap_ok(same == limit, "%s #%d (%s): llama.cpp's fresh tokens, first %d matched (%d)", bar->file, rec, scen,
               limit, same);
        if (bar->f32)
            tap_ok(max_d <= 2e-3, "%s #%d (%s): every golden top-5 logprob within 2e-3 (max %.6f)", bar->file, rec,
                   scen, max_d);
        fwd_free(f);
        free(lg_ours);
        free(lg_fresh);
        json_object_put(o);
    }
    fclose(fp);
    model_free(m);
}

int main(int argc, char **argv)
{
    const char *golden = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    const char *models = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    for (size_t i = 0; i < sizeof bars / sizeof bars[0]; i++)
        if (argc < 2 || strstr(bars[i].file, argv[1]))
            run_file(golden, models, &bars[i]);
    return tap_done();
}
