/* test_greedy.c - the engine against llama.cpp's greedy goldens.
 *
 * For every golden file (../shared/golden/greedy-*.jsonl, format in
 * golden/README.md sections 1 and 1b) and every record:
 *  - the prompt tokenizes to the golden prompt_tokens (BOS + parse_special);
 *  - teacher-forced: prompt + the golden tokens so far are evaluated in one
 *    batch; at each step the argmax and the log-softmax of the golden top-5
 *    ids are compared with the golden values;
 *  - free-running greedy generation is compared token by token up to the
 *    point the file's bar allows (all tokens, or up to first_near_tie_step).
 * The bars per file are in `bars` below, with where each number comes from.
 */
#include <json-c/json.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "golden_util.h"
#include "tap.h"

/* How each golden file is judged.
 *  max_abs: bound on every difference (0: not checked).
 *  median, p95: bound on the median and 95th percentile of |our logprob -
 *    golden logprob| over all golden top-5 entries of all teacher-forced
 *    steps of the file (underflowed golden entries skipped).
 *  max_argmax_diff: steps whose argmax differs from the golden token.
 *  free_run: FREE_ALL = every generated id must match; FREE_TIE = match up
 *    to first_near_tie_step; FREE_GAP = match up to the first step whose
 *    golden top1-top2 gap is below gap_tol (README section 1b, point 2).
 *    gap_tol is the largest logprob error the independent implementation of
 *    README section 1b made on that family (so a step with a smaller golden
 *    gap can legitimately flip): 0.26 for stories260K-q*, 0.12 for
 *    tiny256-f16 (x8 for bf16), 0.38 tinyqwen2-f16, 2.7 tiny256 quantized,
 *    4.3 tinyqwen2-q8_0.
 * The figures for stories260K, tiny256-{f32,f16,q8_0}, tinyqwen2-{f16,q8_0}
 * and stories260K-q8_0 are those of the independent implementation measured
 * in golden/README.md section 1b (a bar set by the issue: be at least as
 * close to llama.cpp as it). Files it did not measure take the figures of
 * the nearest measured file with the same activation rounding: the other
 * stories260K quantizations take stories260K-q8_0's (their activations are
 * quantized to 8 bits as well, Q8_0 or Q8_1), bf16 takes f16's scaled by 8
 * (its activations are rounded to 8 significant bits instead of 11, so every
 * rounding error is 2^3 times larger; argmax flips allowed 3), and the
 * tiny256 K-quant, Q4/Q5 and IQ4_NL/IQ4_XS files take tiny256-q8_0's
 * (README sections 1b and 1d: "expect at least the Q8_0 figures"; their
 * activations are quantized to Q8_0 or Q8_K as well). The stories260K F32 logprob bar is 2e-3 as the
 * issue states for that file.
 *
 * Model families (README section 1c, the 2026 reference build): the F32
 * files must be free-running exact (up to a near tie) with every logprob
 * within 2e-3 (the bar; the engine reproduces the reference bit for
 * bit there). The Q8_0 files take tiny256-q8_0's logprob bars and free-run
 * up to the first golden gap below 2.7; their teacher-forced argmax may
 * differ only at steps whose golden top1-top2 gap is below that same 2.7
 * nats (flip_gap: the largest Q8_0 error of the independent implementation,
 * README 1b; such a step can legitimately flip), whatever their number. */
enum { FREE_ALL, FREE_TIE, FREE_GAP };
typedef struct {
    const char *file;
    double median, p95, max_abs; /* max_abs 0: not checked */
    int max_argmax_diff;         /* < 0: not counted (see flip_gap) */
    int free_run;
    double gap_tol;
    double flip_gap;             /* > 0: an argmax difference at a step whose
                                    golden gap is >= flip_gap fails */
} bar_t;

static const bar_t bars[] = {
    {"greedy-stories260K.jsonl", 0.0008, 0.002, 0.002, 0, FREE_ALL, 0, 0},
    {"greedy-llama-2-tiny-random.jsonl", 0.03, 0.07, 0, 12, FREE_TIE, 0, 0},
    {"greedy-tiny256-f32.jsonl", 0.005, 0.02, 0, 0, FREE_ALL, 0, 0},
    {"greedy-tiny256-f16.jsonl", 0.03, 0.07, 0, 1, FREE_GAP, 0.12, 0},
    {"greedy-tiny256-bf16.jsonl", 0.24, 0.56, 0, 3, FREE_GAP, 1.0, 0},
    {"greedy-tinyqwen2-f16.jsonl", 0.03, 0.08, 0, 1, FREE_GAP, 0.38, 0},
    {"greedy-tinyqwen2-q8_0.jsonl", 0.00003, 1.35, 0, 7, FREE_GAP, 4.3, 0},
    {"greedy-stories260K-q8_0.jsonl", 0.04, 0.12, 0, 6, FREE_GAP, 0.26, 0},
    {"greedy-stories260K-q5_1.jsonl", 0.04, 0.12, 0, 6, FREE_GAP, 0.26, 0},
    {"greedy-stories260K-q5_0.jsonl", 0.04, 0.12, 0, 6, FREE_GAP, 0.26, 0},
    {"greedy-stories260K-q4_1.jsonl", 0.04, 0.12, 0, 6, FREE_GAP, 0.26, 0},
    {"greedy-stories260K-q4_0.jsonl", 0.04, 0.12, 0, 6, FREE_GAP, 0.26, 0},
    {"greedy-tiny256-q8_0.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q6_k.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q5_k_m.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q5_1.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q5_0.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q4_k_m.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q4_1.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q4_0.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q3_k_m.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-q2_k.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-iq4_nl.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tiny256-iq4_xs.jsonl", 0.67, 1.4, 0, 10, FREE_GAP, 2.7, 0},
    {"greedy-tinyqwen3-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinyqwen3moe-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinygemma3-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinyphi3-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinysmollm3-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinygptoss-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"greedy-tinyqwen3-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"greedy-tinyqwen3moe-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"greedy-tinygemma3-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"greedy-tinyphi3-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"greedy-tinysmollm3-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"greedy-tinygptoss-mxfp4_moe.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    /* the 2026 hybrids (golden/families/README.md): the same bars */
    {"families/greedy-tinyqwen35-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-tinyqwen35moe-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-tinygemma4-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-tinygemma4moe-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-tinylfm2-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-long-tinyqwen35-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-long-tinyqwen35moe-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-long-tinylfm2-f32.jsonl", 0.002, 0.002, 0.002, 0, FREE_TIE, 0, 0},
    {"families/greedy-tinyqwen35-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"families/greedy-tinyqwen35moe-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"families/greedy-tinygemma4-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    /* Gemma 4 MoE: router margins down to 3e-5 (README-families section 5), so
     * a Q8_0 rounding difference can switch an expert; the independent
     * implementation's Q8_0 error reached 5.1 nats (p95) on these files */
    {"families/greedy-tinygemma4moe-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 5.1},
    {"families/greedy-tinylfm2-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
    {"families/greedy-long-tinyqwen35-q8_0.jsonl", 0.67, 1.4, 0, -1, FREE_GAP, 2.7, 2.7},
};

#define MAX_TOK 4096
#define FREE_BATCH 64 /* prompt chunk of the free run: <= the context's max_batch */

typedef struct {
    double *v;
    size_t n, cap;
} dvec_t;

static void dvec_push(dvec_t *d, double x)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 1024;
        d->v = realloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(dvec_t *d, double q)
{
    if (!d->n)
        return 0;
    qsort(d->v, d->n, sizeof *d->v, cmp_double);
    size_t i = (size_t)(q * (double)(d->n - 1) + 0.5);
    return d->v[i];
}

/* log-softmax of the logits at id, with the sum in double. */
static double logprob_of(const float *logits, int n_vocab, int id, float max, double lse)
{
    (void)n_vocab;
    return (double)(logits[id] - max) - lse;
}

static void lse_of(const float *logits, int n_vocab, float *max, double *lse)
{
    float m = logits[0];
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > m)
            m = logits[i];
    double s = 0;
    for (int i = 0; i < n_vocab; i++)
        s += exp((double)(logits[i] - m));
    *max = m;
    *lse = log(s);
}




/* Evaluates prompt + completion[0..n_comp) in batches (seq 0 from pos 0),
 * keeping logits rows for steps 0..n_comp (the prediction after the prompt
 * and after each golden token). Returns the logits, n_steps x n_vocab. */
static float *teacher_forced(fwd_t *fw, const int32_t *toks, int n_prompt, int n_total, int n_vocab,
                             int max_batch, lf_err_t *err)
{
    int n_steps = n_total - n_prompt + 1;
    float *out = malloc((size_t)n_steps * (size_t)n_vocab * sizeof(float));
    fwd_tok_t *batch = malloc((size_t)max_batch * sizeof *batch);
    fwd_seq_rm(fw, 0);
    int step = 0;
    for (int start = 0; start < n_total; start += max_batch) {
        int n = n_total - start < max_batch ? n_total - start : max_batch;
        for (int i = 0; i < n; i++) {
            int p = start + i;
            batch[i] = (fwd_tok_t){toks[p], 0, p, p >= n_prompt - 1, p < n_prompt && fwd_prompt_order(fw, n_prompt, p)};
        }
        if (fwd_decode(fw, batch, n, err) != LF_OK) {
            free(out);
            free(batch);
            return NULL;
        }
        for (int j = 0; fwd_logits(fw, j); j++)
            memcpy(out + (size_t)(step++) * n_vocab, fwd_logits(fw, j), (size_t)n_vocab * sizeof(float));
    }
    free(batch);
    return out;
}

/* Free-running greedy: returns the number of generated ids equal to the
 * golden ones before the first difference (up to n_gen). */
static int free_run(fwd_t *fw, const int32_t *prompt, int n_prompt, const int32_t *golden, int n_gen,
                    int n_vocab, lf_err_t *err)
{
    fwd_seq_rm(fw, 0);
    fwd_tok_t batch[FREE_BATCH];
    for (int start = 0; start < n_prompt; start += FREE_BATCH) {
        int n = n_prompt - start < FREE_BATCH ? n_prompt - start : FREE_BATCH;
        for (int i = 0; i < n; i++)
            batch[i] = (fwd_tok_t){prompt[start + i], 0, start + i, start + i == n_prompt - 1,
                                   fwd_prompt_order(fw, n_prompt, start + i)};
        if (fwd_decode(fw, batch, n, err) != LF_OK)
            return -1;
    }
    int pos = n_prompt;
    for (int i = 0; i < n_gen; i++) {
        int tok = argmax(fwd_logits(fw, 0), n_vocab);
        if (tok != golden[i])
            return i;
        fwd_tok_t t = {tok, 0, pos++, true, false};
        if (fwd_decode(fw, &t, 1, err) != LF_OK)
            return -1;
    }
    return n_gen;
}

static void run_file(const char *golden_dir, const char *models_dir, const bar_t *bar)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", golden_dir, bar->file);
    FILE *fp = fopen(path, "r");
    if (!tap_ok(fp != NULL, "%s: golden file present", bar->file))
        return;
    model_t *m = NULL;
    fwd_t *fw = NULL;
    const int max_batch = 128;
    dvec_t diffs = {0};
    int argmax_diff = 0, steps = 0, rec = 0, big_flips = 0;
    static char line[1 << 22];
    int32_t prompt[MAX_TOK], comp[MAX_TOK], all[2 * MAX_TOK];
    while (fgets(line, sizeof line, fp)) {
        json_object *o = json_tokener_parse(line);
        if (!o)
            continue;
        rec++;
        if (!m) {
            snprintf(path, sizeof path, "%s/%s", models_dir,
                     json_object_get_string(json_object_object_get(o, "model")));
            lf_err_t err;
            m = model_load(path, &err);
            if (!tap_ok(m != NULL, "%s: model loads (%s)", bar->file, m ? "ok" : err.msg)) {
                json_object_put(o);
                break;
            }
            fwd_opts_t opts = {.n_seq = 1, .n_ctx = 1024, .max_batch = max_batch, .n_threads = 2};
            fw = fwd_create(m, &opts, &err);
            if (!tap_ok(fw != NULL, "%s: forward context (%s)", bar->file, fw ? "ok" : err.msg)) {
                json_object_put(o);
                break;
            }
        }
        const vocab_t *v = model_vocab(m);
        const int n_vocab = model_hparams(m)->n_vocab;
        const char *text = json_object_get_string(json_object_object_get(o, "prompt"));
        int n_prompt = ids_of(json_object_object_get(o, "prompt_tokens"), prompt, MAX_TOK);
        int n_comp = ids_of(json_object_object_get(o, "completion_tokens"), comp, MAX_TOK);
        int32_t *ids = NULL;
        size_t n_ids = 0;
        lf_err_t err;
        bool tok_ok = vocab_tokenize(v, text, strlen(text), true, true, &ids, &n_ids, &err) == LF_OK &&
                      n_ids == (size_t)n_prompt && !memcmp(ids, prompt, n_ids * sizeof *ids);
        tap_ok(tok_ok, "%s #%d: prompt tokenizes like llama.cpp (%zu vs %d ids)", bar->file, rec, n_ids, n_prompt);
        free(ids);

        /* teacher-forced comparison of every step */
        memcpy(all, prompt, (size_t)n_prompt * sizeof *all);
        memcpy(all + n_prompt, comp, (size_t)n_comp * sizeof *all);
        /* the last golden token's prediction is not in the golden data */
        float *lg = teacher_forced(fw, all, n_prompt, n_prompt + n_comp - 1, n_vocab, max_batch, &err);
        if (!tap_ok(lg != NULL, "%s #%d: teacher-forced decode (%s)", bar->file, rec, lg ? "ok" : err.msg)) {
            json_object_put(o);
            continue;
        }
        json_object *tops = json_object_object_get(o, "top_probs");
        int rec_diff = 0;
        double rec_max = 0;
        for (int s = 0; s < n_comp; s++) {
            const float *l = lg + (size_t)s * n_vocab;
            float mx;
            double lse;
            lse_of(l, n_vocab, &mx, &lse);
            json_object *top = json_object_array_get_idx(tops, (size_t)s);
            if (argmax(l, n_vocab) != comp[s]) {
                rec_diff++;
                if (bar->flip_gap > 0 && golden_gap(top) >= bar->flip_gap)
                    big_flips++;
                if (getenv("GREEDY_VERBOSE"))
                    tap_diag("  step %d: argmax differs, golden gap %.4f", s, golden_gap(top));
            }
            for (size_t k = 0; k < json_object_array_length(top); k++) {
                json_object *e = json_object_array_get_idx(top, k);
                double glp = json_object_get_double(json_object_object_get(e, "logprob"));
                /* A golden probability below FLT_MIN was a float32 subnormal
                 * (or 0): its logprob is coarsely quantized or meaningless,
                 * so it says nothing about our agreement. */
                if (glp < log(FLT_MIN))
                    continue;
                int id = json_object_get_int(json_object_object_get(e, "id"));
                double d = fabs(logprob_of(l, n_vocab, id, mx, lse) - glp);
                if (getenv("GREEDY_VERBOSE") && d > atof(getenv("GREEDY_VERBOSE")))
                    tap_diag("  step %d rank %zu id %d: golden %.6f ours %.6f", s, k, id, glp,
                             logprob_of(l, n_vocab, id, mx, lse));
                dvec_push(&diffs, d);
                if (d > rec_max)
                    rec_max = d;
            }
        }
        steps += n_comp;
        argmax_diff += rec_diff;
        tap_diag("%s #%d: %d steps, argmax differs at %d, max |dlogprob| %.5f", bar->file, rec, n_comp, rec_diff,
                 rec_max);
        free(lg);

        /* free-running greedy */
        int limit = n_comp;
        json_object *tie = json_object_object_get(o, "first_near_tie_step");
        if (bar->free_run == FREE_TIE && tie && !json_object_is_type(tie, json_type_null))
            limit = json_object_get_int(tie);
        if (bar->free_run == FREE_GAP)
            for (int s = 0; s < n_comp; s++) {
                json_object *top = json_object_array_get_idx(tops, (size_t)s);
                if (json_object_array_length(top) < 2)
                    continue;
                double a = json_object_get_double(json_object_object_get(json_object_array_get_idx(top, 0), "logprob"));
                double b = json_object_get_double(json_object_object_get(json_object_array_get_idx(top, 1), "logprob"));
                if (a - b < bar->gap_tol) {
                    limit = s;
                    break;
                }
            }
        int same = free_run(fw, prompt, n_prompt, comp, limit, n_vocab, &err);
        tap_ok(same == limit, "%s #%d: free-running greedy matches the first %d tokens (matched %d)", bar->file,
               rec, limit, same);
        json_object_put(o);
    }
    fclose(fp);
    if (m && fw) {
        double med = quantile(&diffs, 0.5), p95 = quantile(&diffs, 0.95), mx = quantile(&diffs, 1.0);
        tap_diag("%s: %d steps, |dlogprob| median %.6f p95 %.6f max %.6f, argmax differs at %d", bar->file, steps,
                 med, p95, mx, argmax_diff);
        tap_ok(med <= bar->median, "%s: median |dlogprob| %.6f <= %g", bar->file, med, bar->median);
        tap_ok(p95 <= bar->p95, "%s: p95 |dlogprob| %.6f <= %g", bar->file, p95, bar->p95);
        if (bar->max_abs > 0)
            tap_ok(mx <= bar->max_abs, "%s: every |dlogprob| %.6f <= %g", bar->file, mx, bar->max_abs);
        if (bar->max_argmax_diff >= 0)
            tap_ok(argmax_diff <= bar->max_argmax_diff, "%s: teacher-forced argmax differs at %d steps (<= %d)",
                   bar->file, argmax_diff, bar->max_argmax_diff);
        if (bar->flip_gap > 0)
            tap_ok(big_flips == 0, "%s: teacher-forced argmax differs at %d steps, %d of them with a golden gap >= %g",
                   bar->file, argmax_diff, big_flips, bar->flip_gap);
    }
    free(diffs.v);
    fwd_free(fw);
    model_free(m);
}

int main(int argc, char **argv)
{
    const char *golden = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    const char *models = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    for (size_t i = 0; i < sizeof bars / sizeof bars[0]; i++) {
        if (argc > 1 && !strstr(bars[i].file, argv[1]))
            continue;
        run_file(golden, models, &bars[i]);
    }
    return tap_done();
}
