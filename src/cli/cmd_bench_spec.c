/* cmd_bench_spec.c - `llm-fcgi bench --spec MODE`: decode speed with and
 * without speculative decoding, through the scheduler as the server runs
 * it. Each stream generates greedily from its own random prompt; the
 * reference run (speculation off) gives the output, and the speculative
 * run gets a prediction made from it (MODE predict: the output itself;
 * edit: its middle tenth replaced; unrelated: other tokens), n-gram drafts
 * (ngram) or a draft model (draft). The prediction is the output's tokens
 * themselves, or with text_pred its text tokenized back as the API does (a
 * random model's output is often not the canonical tokenization of its
 * text, which a trained model's is: the text round trip then measures the
 * tokenizer as much as the speculation). Runs alternate, the
 * speculative output is checked against the reference, and the decode
 * tokens/s of both (tokens after the first / time from the first token to
 * the last) are reported with their ratio. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "engine/kernels/kernels.h"
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"

#define BS_MAX_STREAMS 64

static double bs_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    int32_t *out[BS_MAX_STREAMS]; /* tokens generated */
    int32_t n[BS_MAX_STREAMS];
    double t_first, t_last;       /* first token of any stream, last DONE */
    int64_t accepted, rejected;   /* prediction counts of all streams */
} bs_run_t;

/* Runs every stream at once; returns decode tokens/s (tokens after each
 * stream's first / the time from the first token to the last). */
static double bs_run(sched_t *s, int32_t streams, int32_t *const *prompts, const size_t *n_prompt, int32_t n_gen,
                     int32_t *const *pred, const int32_t *n_pred, bs_run_t *r, lf_err_t *err)
{
    sched_params_t p[BS_MAX_STREAMS];
    memset(p, 0, sizeof p);
    for (int32_t i = 0; i < streams; i++) {
        p[i].max_tokens = n_gen;
        sampler_params_default(&p[i].sampling);
        p[i].sampling.temperature = 0.0f;
        p[i].ignore_eos = true;
        if (pred) {
            p[i].spec.prediction = pred[i];
            p[i].spec.n_prediction = n_pred[i];
        }
        r->n[i] = 0;
    }
    sched_chan_t *ch = sched_chan_create(s);
    if (!ch || sched_submit(s, ch, (const int32_t *const *)prompts, n_prompt, p, streams, err) != LF_OK) {
        sched_chan_free(ch);
        return -1;
    }
    r->t_first = 0;
    r->accepted = r->rejected = 0;
    sched_event_t ev;
    while (sched_chan_next(ch, &ev, 600000) == 1) {
        if (ev.kind == SCHED_EV_TOKEN && ev.index >= 0 && ev.index < streams) {
            if (r->t_first == 0)
                r->t_first = bs_now();
            if (r->n[ev.index] < n_gen)
                r->out[ev.index][r->n[ev.index]++] = ev.token;
        } else if (ev.kind == SCHED_EV_DONE) {
            r->t_last = bs_now();
            r->accepted += ev.n_pred_accepted;
            r->rejected += ev.n_pred_rejected;
        } else if (ev.kind == SCHED_EV_PROMPT) {
            free(ev.prompt_lp);
        }
    }
    sched_chan_free(ch);
    int64_t toks = 0;
    for (int32_t i = 0; i < streams; i++)
        toks += r->n[i] > 0 ? r->n[i] - 1 : 0;
    return r->t_last > r->t_first ? (double)toks / (r->t_last - r->t_first) : 0;
}

/* The prediction of MODE from a reference output, as text tokenized back
 * (what a client sends and the server tokenizes). */
static int32_t *bs_prediction(const vocab_t *v, const char *mode, bool text_pred, const int32_t *ref, int32_t n,
                              int32_t *n_out, uint64_t seed, lf_err_t *err)
{
    if (!text_pred) {
        int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
        if (!ids)
            return NULL;
        const int32_t lo = n * 45 / 100, hi = n * 55 / 100;
        for (int32_t i = 0; i < n; i++) {
            ids[i] = ref[i];
            if (!strcmp(mode, "unrelated") || (!strcmp(mode, "edit") && i >= lo && i < hi)) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                ids[i] = (int32_t)(3 + (seed >> 33) % (uint64_t)(vocab_n_tokens(v) - 3));
            }
        }
        *n_out = n;
        return ids;
    }
    size_t cap = (size_t)n * 64 + 64, len = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    int32_t lo = n * 45 / 100, hi = n * 55 / 100;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = ref[i];
        if (!strcmp(mode, "unrelated") || (!strcmp(mode, "edit") && i >= lo && i < hi)) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            t = (int32_t)(3 + (seed >> 33) % (uint64_t)(vocab_n_tokens(v) - 3));
        }
        int w = vocab_token_to_piece(v, t, false, text + len, cap - len - 1);
        if (w > 0 && len + (size_t)w < cap - 1)
            len += (size_t)w;
    }
    text[len] = '\0';
    int32_t *ids = NULL;
    size_t n_ids = 0;
    lf_code_t rc = vocab_tokenize(v, text, len, false, false, &ids, &n_ids, err);
    free(text);
    *n_out = rc == LF_OK ? (int32_t)n_ids : 0;
    return rc == LF_OK ? ids : NULL;
}

int bench_spec(const char *path, const char *mode, const char *draft_path, int32_t threads, int32_t n_gen,
               int32_t reps, int32_t streams, int32_t k_max, double row_cost, bool text_pred, bool json)
{
    const bool pred_mode = !strcmp(mode, "predict") || !strcmp(mode, "edit") || !strcmp(mode, "unrelated");
    const bool draft_mode = !strcmp(mode, "draft"), mtp_mode = !strcmp(mode, "mtp");
    if (!pred_mode && !draft_mode && !mtp_mode && strcmp(mode, "ngram")) {
        fprintf(stderr, "llm-fcgi bench: --spec %s: expected predict, edit, unrelated, ngram, draft or mtp\n", mode);
        return 2;
    }
    if (draft_mode != (draft_path != NULL)) {
        fprintf(stderr, "llm-fcgi bench: --spec draft goes with --model-draft FILE (and only it)\n");
        return 2;
    }
    if (streams < 1 || streams > BS_MAX_STREAMS || n_gen < 2) {
        fprintf(stderr, "llm-fcgi bench: --spec needs -n >= 2 and 1..%d streams (--batch)\n", BS_MAX_STREAMS);
        return 2;
    }
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!m) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        return 1;
    }
    const vocab_t *v = model_vocab(m);
    model_t *dm = NULL;
    if (draft_path && !(dm = model_load(draft_path, &err))) {
        fprintf(stderr, "llm-fcgi: the draft model: %s\n", err.msg);
        model_free(m);
        return 1;
    }
    const int32_t n_prompt = 32;
    sched_opts_t o = {.n_parallel = streams, .n_ctx = n_prompt + n_gen + SPEC_K_MAX + 8, .max_queue = streams,
                      .batch_tokens = 512, .n_threads = threads, .chan_cap = 4 * SPEC_K_MAX + 8};
    sched_opts_t o_off = o, o_on = o;
    o_off.spec_off = true;
    o_on.spec_ngram = !pred_mode && !mtp_mode;
    o_on.spec_mtp = mtp_mode;
    o_on.spec_k_max = k_max;
    o_on.spec_row_cost = row_cost;
    o_on.draft_model = dm;
    sched_t *off = sched_create(m, &o_off, &err), *on = off ? sched_create(m, &o_on, &err) : NULL;
    int32_t *prompts[BS_MAX_STREAMS] = {0}, *pred[BS_MAX_STREAMS] = {0}, n_pred[BS_MAX_STREAMS] = {0};
    size_t n_prompts[BS_MAX_STREAMS];
    bs_run_t ref = {0}, got = {0};
    double *ts_off = calloc((size_t)reps, sizeof(double)), *ts_on = calloc((size_t)reps, sizeof(double));
    int status = 1;
    bool same = true;
    if (!on || !ts_off || !ts_on)
        goto out;
    uint64_t seed = 1234567;
    for (int32_t i = 0; i < streams; i++) {
        prompts[i] = malloc((size_t)n_prompt * sizeof(int32_t));
        ref.out[i] = malloc((size_t)n_gen * sizeof(int32_t));
        got.out[i] = malloc((size_t)n_gen * sizeof(int32_t));
        if (!prompts[i] || !ref.out[i] || !got.out[i])
            goto out;
        prompts[i][0] = vocab_add_bos(v) && vocab_bos(v) >= 0 ? vocab_bos(v) : 3;
        for (int32_t k = 1; k < n_prompt; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            prompts[i][k] = (int32_t)(3 + (seed >> 33) % (uint64_t)(vocab_n_tokens(v) - 3));
        }
        n_prompts[i] = (size_t)n_prompt;
    }
    /* the reference outputs (and a warm-up), then the predictions */
    if (bs_run(off, streams, prompts, n_prompts, n_gen, NULL, NULL, &ref, &err) < 0)
        goto out;
    for (int32_t i = 0; pred_mode && i < streams; i++)
        if (!(pred[i] = bs_prediction(v, mode, text_pred, ref.out[i], ref.n[i], &n_pred[i], 99 + (uint64_t)i, &err)))
            goto out;
    sched_stats_t st0, st1;
    sched_stats(on, &st0);
    for (int32_t r = 0; r < reps; r++) {
        ts_off[r] = bs_run(off, streams, prompts, n_prompts, n_gen, NULL, NULL, &ref, &err);
        ts_on[r] = bs_run(on, streams, prompts, n_prompts, n_gen, pred_mode ? pred : NULL, n_pred, &got, &err);
        if (ts_off[r] < 0 || ts_on[r] < 0)
            goto out;
        for (int32_t i = 0; i < streams; i++)
            same &= got.n[i] == ref.n[i] && !memcmp(got.out[i], ref.out[i], (size_t)ref.n[i] * sizeof(int32_t));
    }
    sched_stats(on, &st1);
    uint64_t drafted = 0, accepted = 0;
    for (int src = 1; src < SPEC_SRC_COUNT; src++) {
        drafted += st1.spec_drafted[src] - st0.spec_drafted[src];
        accepted += st1.spec_accepted[src] - st0.spec_accepted[src];
    }
    double m_off, sd_off, m_on, sd_on;
    bench_mean_sd(ts_off, reps, &m_off, &sd_off);
    bench_mean_sd(ts_on, reps, &m_on, &sd_on);
    const model_hparams_t *hp = model_hparams(m);
    if (json) {
        json_object *j = json_object_new_object();
        json_object_object_add(j, "model", json_object_new_string(path));
        json_object_object_add(j, "spec", json_object_new_string(mode));
        json_object_object_add(j, "prediction_as_text", json_object_new_boolean(text_pred));
        json_object_object_add(j, "streams", json_object_new_int(streams));
        json_object_object_add(j, "n_gen", json_object_new_int(n_gen));
        json_object_object_add(j, "repetitions", json_object_new_int(reps));
        json_object_object_add(j, "isa", json_object_new_string(kern_isa_name(kern_isa())));
        json_object_object_add(j, "tg_tokens_per_s_off", json_object_new_double(m_off));
        json_object_object_add(j, "tg_tokens_per_s_on", json_object_new_double(m_on));
        json_object_object_add(j, "tg_stddev_off", json_object_new_double(sd_off));
        json_object_object_add(j, "tg_stddev_on", json_object_new_double(sd_on));
        json_object_object_add(j, "speedup", json_object_new_double(m_off > 0 ? m_on / m_off : 0));
        json_object_object_add(j, "drafted", json_object_new_int64((int64_t)drafted));
        json_object_object_add(j, "accepted", json_object_new_int64((int64_t)accepted));
        json_object_object_add(j, "same_output", json_object_new_boolean(same));
        printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
    } else {
        printf("| model | isa | threads | streams | spec | tg%d off t/s | tg%d on t/s | speedup | accepted |\n"
               "|---|---|---|---|---|---|---|---|---|\n",
               n_gen, n_gen);
        printf("| %s | %s | %d | %d | %s | %.2f ± %.2f | %.2f ± %.2f | %.2fx | %llu of %llu drafts |\n",
               hp->name[0] ? hp->name : hp->arch, kern_isa_name(kern_isa()), threads, streams, mode, m_off, sd_off,
               m_on, sd_on, m_off > 0 ? m_on / m_off : 0, (unsigned long long)accepted,
               (unsigned long long)drafted);
        printf("\noutput with speculation %s the output without (greedy, %d tokens per stream)%s\n",
               same ? "equals" : "DIFFERS FROM", n_gen,
               pred_mode ? (text_pred ? "; predictions sent as text" : "; predictions given as tokens") : "");
        if (mtp_mode) {
            sched_stats_t st;
            sched_stats(on, &st);
            printf("MTP block: a draft costs ~%.2f of a step%s\n", st.spec_mtp_cost,
                   st.spec_mtp_used ? "" : " (not used: too costly to pay back)");
        }
    }
    status = same ? 0 : 1;
out:
    if (status == 1 && err.msg[0])
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
    for (int32_t i = 0; i < streams && i < BS_MAX_STREAMS; i++) {
        free(prompts[i]);
        free(pred[i]);
        free(ref.out[i]);
        free(got.out[i]);
    }
    free(ts_off);
    free(ts_on);
    sched_free(on);
    sched_free(off);
    model_free(dm);
    model_free(m);
    return status;
}
