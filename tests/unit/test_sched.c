/* test_sched.c - the scheduler over the real engine (stories260K.gguf):
 * tokens, finish reasons, batch invariance (a job's tokens alone == next to
 * another job), shared channels, back-pressure, cancellation, overload,
 * context errors, and KV-budget preemption (every job still completes with
 * the tokens it has alone, nothing emitted twice). stories260K never emits
 * EOS by itself; a logit bias on EOS gives a STOP. The same preemption and
 * prefix reuse on a model with sliding-window layers and experts. */
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXT 512

static sched_params_t params(int32_t max_tokens)
{
    sched_params_t p = {.max_tokens = max_tokens};
    sampler_params_default(&p.sampling);
    p.sampling.temperature = 0;
    return p;
}

static sched_params_t seeded(int32_t max_tokens, uint64_t seed)
{
    sched_params_t p = params(max_tokens);
    p.sampling.temperature = 1;
    p.sampling.has_seed = true;
    p.sampling.seed = seed;
    return p;
}

/* Drains ch; tokens of job i into toks[i]. Returns events read, -1 on a
 * timeout. */
static int drain(sched_chan_t *ch, int32_t toks[][MAXT], int32_t *n, sched_event_t *done, int cap)
{
    sched_event_t ev;
    int got, count = 0;
    while ((got = sched_chan_next(ch, &ev, 60000)) == 1) {
        count++;
        if (ev.index < 0 || ev.index >= cap)
            continue;
        if (ev.kind == SCHED_EV_TOKEN && n[ev.index] < MAXT)
            toks[ev.index][n[ev.index]++] = ev.token;
        else if (ev.kind == SCHED_EV_DONE)
            done[ev.index] = ev;
    }
    return got == 0 ? -1 : count;
}

static int32_t toks[4][MAXT], ref[4][MAXT], n[4], nref[4];

/* Runs one job alone; its tokens into ref[k]. */
static void run_alone(sched_t *s, const int32_t *p, size_t np, sched_params_t prm, int k)
{
    lf_err_t err;
    const int32_t *pp[] = {p};
    sched_chan_t *ch = sched_chan_create(s);
    sched_event_t done[1] = {0};
    nref[k] = 0;
    int32_t (*t)[MAXT] = &ref[k];
    if (sched_submit(s, ch, pp, &np, &prm, 1, &err) == LF_OK)
        drain(ch, t, &nref[k], done, 1);
    sched_chan_free(ch);
}

/* A model with sliding-window layers and experts (tinygptoss: window 40 on
 * layers 0 and 2, MoE): preemption under a small KV budget, prefix reuse
 * across the window and n > 1 give exactly the tokens of a job alone; with
 * the F16 cache and with Q8_0 and Q4_0 caches (the same positions). */
static void test_window_model(const char *dir, fwd_attn_t attn, kv_type_t tk, kv_type_t tv)
{
    char tag[64] = "window model";
    if (tk != KV_F16 || tv != KV_F16 || attn != FWD_ATTN_AUTO)
        snprintf(tag, sizeof tag, "window model, %s, K %s V %s", attn == FWD_ATTN_FLASH ? "flash" : "auto",
                 kv_type_name(tk), kv_type_name(tv));
    char path[1024];
    snprintf(path, sizeof path, "%s/tinygptoss-f32.gguf", dir);
    lf_err_t err;
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "load %s", path))
        return;
    const int32_t bos = vocab_bos(model_vocab(m));
    /* 1 MiB: the window pool for 4 sequences, then ~1400 positions of the
     * full layers for 4 jobs of 4 + 400 */
    sched_opts_t o = {.n_parallel = 4, .n_ctx = 512, .max_queue = 4, .chan_cap = 64, .n_threads = 1,
                      .batch_tokens = 64, .attn = attn, .type_k = tk, .type_v = tv};
    /* 1 MiB of F16 cache, or as many positions of a quantized one */
    o.kv_bytes = (int64_t)((1 << 20) * (double)kv_bytes_per_position(tk, tv, 64) /
                           (double)kv_bytes_per_position(KV_F16, KV_F16, 64));
    sched_t *s = sched_create(m, &o, &err);
    if (!tap_ok(s != NULL, "%s: create with a budget of 1 MiB of F16 cache", tag)) {
        model_free(m);
        return;
    }
    sched_stats_t st;
    sched_stats(s, &st);
    tap_ok(st.kv_bytes <= (uint64_t)o.kv_bytes && st.kv_cap_tokens < 4 * 404, "%s: %llu KV bytes, %lld positions",
           tag, (unsigned long long)st.kv_bytes, (long long)st.kv_cap_tokens);
    int32_t pk[4][4];
    sched_params_t pk_p[4];
    const int32_t *pk_ptr[4];
    size_t pk_n[4];
    for (int k = 0; k < 4; k++) {
        pk[k][0] = bos, pk[k][1] = 350 + k, pk[k][2] = 360 + k, pk[k][3] = 370;
        pk_p[k] = k % 2 ? seeded(400, 11 + (uint64_t)k) : params(400);
        pk_p[k].ignore_eos = true;
        pk_ptr[k] = pk[k];
        pk_n[k] = 4;
        run_alone(s, pk[k], 4, pk_p[k], k);
    }
    sched_chan_t *ch = sched_chan_create(s);
    sched_event_t done[4];
    memset(n, 0, sizeof n);
    memset(done, 0, sizeof done);
    tap_ok(sched_submit(s, ch, pk_ptr, pk_n, pk_p, 4, &err) == LF_OK, "%s: submit four long jobs", tag);
    drain(ch, toks, n, done, 4);
    sched_chan_free(ch);
    sched_stats(s, &st);
    bool same = true;
    for (int k = 0; k < 4; k++)
        same &= n[k] == 400 && nref[k] == 400 && !memcmp(toks[k], ref[k], 400 * sizeof(int32_t));
    tap_ok(st.preemptions > 0 && same, "%s: %llu preemptions, every job gives its tokens alone",
           tag, (unsigned long long)st.preemptions);
    /* a 200-token prompt twice: the second reuses its prefix (beyond the
     * window of 40) and gives the same tokens */
    static int32_t lp[200];
    lp[0] = bos;
    for (int i = 1; i < 200; i++)
        lp[i] = 300 + (i * 7) % 150;
    sched_params_t lpp = params(20);
    lpp.ignore_eos = true;
    run_alone(s, lp, 200, lpp, 0);
    const int32_t *lpa[] = {lp};
    size_t lpn[] = {200};
    ch = sched_chan_create(s);
    memset(n, 0, sizeof n);
    memset(done, 0, sizeof done);
    if (sched_submit(s, ch, lpa, lpn, &lpp, 1, &err) == LF_OK)
        drain(ch, toks, n, done, 1);
    sched_chan_free(ch);
    tap_ok(done[0].n_cached >= 160 && n[0] == 20 && !memcmp(toks[0], ref[0], 20 * sizeof(int32_t)),
           "%s: a repeated 200-token prompt reuses %d positions, same tokens", tag, done[0].n_cached);
    /* n = 3: the same prompt three times in one submit (seeded), as a
     * request with n > 1 runs: each choice as the prompt alone with its seed */
    sched_params_t np3[3];
    const int32_t *lp3[3] = {lp, lp, lp};
    size_t ln3[3] = {200, 200, 200};
    for (int k = 0; k < 3; k++) {
        np3[k] = seeded(24, 100 + (uint64_t)k);
        np3[k].ignore_eos = true;
        run_alone(s, lp, 200, np3[k], k);
    }
    ch = sched_chan_create(s);
    memset(n, 0, sizeof n);
    memset(done, 0, sizeof done);
    if (sched_submit(s, ch, lp3, ln3, np3, 3, &err) == LF_OK)
        drain(ch, toks, n, done, 3);
    sched_chan_free(ch);
    same = true;
    for (int k = 0; k < 3; k++)
        same &= n[k] == 24 && nref[k] == 24 && !memcmp(toks[k], ref[k], 24 * sizeof(int32_t));
    tap_ok(same, "%s: n = 3 choices of one prompt give each seed's tokens alone", tag);
    sched_free(s);
    model_free(m);
}

int main(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    lf_err_t err;
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "load %s", path))
        return tap_done();
    const vocab_t *v = model_vocab(m);
    int32_t eos = vocab_eos(v), bos = vocab_bos(v);
    sched_opts_t o = {.n_parallel = 2, .n_ctx = 2048, .max_queue = 2, .chan_cap = 8, .n_threads = 1};
    sched_t *s = sched_create(m, &o, &err);
    if (!tap_ok(s != NULL, "create"))
        return tap_done();
    tap_ok(sched_n_ctx(s) == 2048, "n_ctx from the options");

    /* job 0 alone, then next to job 1 in one channel (more than chan_cap
     * events in total: the scheduler must wait for the reader, not drop or
     * block); job 1 is biased towards EOS and stops at once */
    int32_t p0[] = {bos, 400, 401, 402}, p1[] = {bos, 300, 301};
    run_alone(s, p0, 4, params(40), 0);
    tap_ok(nref[0] == 40, "job alone: 40 greedy tokens (%d)", nref[0]);
    const int32_t *prompts[] = {p0, p1};
    size_t np[] = {4, 3};
    sched_params_t pp[2] = {params(40), params(12)};
    sampler_bias_t to_eos = {.token = eos, .bias = 100};
    pp[1].sampling.logit_bias = &to_eos;
    pp[1].sampling.n_logit_bias = 1;
    sched_chan_t *ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, prompts, np, pp, 2, &err) == LF_OK, "submit two jobs");
    sched_event_t done[4] = {0};
    tap_ok(drain(ch, toks, n, done, 2) > 0, "events drained to the end");
    tap_ok(n[0] == 40 && !memcmp(toks[0], ref[0], sizeof(int32_t) * 40), "job 0: the same tokens as alone");
    tap_ok(done[0].kind == SCHED_EV_DONE && done[0].finish == SCHED_FINISH_LENGTH && done[0].n_gen == 40 &&
               done[0].n_prompt == 4, "job 0 ends with length, counts");
    tap_ok(n[1] == 1 && toks[1][0] == eos && done[1].finish == SCHED_FINISH_STOP && done[1].n_gen == 1,
           "job 1: EOS -> stop");
    sched_chan_free(ch);

    /* errors: context, vocabulary, empty */
    int32_t bad[] = {bos, 99999};
    const int32_t *pb[] = {bad};
    size_t nb[] = {2};
    sched_params_t big = params(2047);
    ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, pb, nb, &big, 1, &err) == LF_ERR_CONTEXT &&
               strstr(err.msg, "maximum context length is 2048 tokens"), "prompt + max_tokens > n_ctx -> context error");
    sched_params_t one = params(4);
    tap_ok(sched_submit(s, ch, pb, nb, &one, 1, &err) == LF_ERR_INVALID, "token id outside the vocabulary -> invalid");
    size_t n0[] = {0};
    tap_ok(sched_submit(s, ch, pb, n0, &one, 1, &err) == LF_ERR_INVALID, "empty prompt -> invalid");
    sched_chan_free(ch);

    /* overload and cancellation: long jobs (the model never stops by
     * itself) hold both slots */
    const int32_t *pl[] = {p0};
    size_t nl[] = {4};
    sched_params_t longp = params(2000);
    sched_chan_t *c[5];
    lf_code_t rc[5];
    for (int i = 0; i < 5; i++) {
        c[i] = sched_chan_create(s);
        rc[i] = sched_submit(s, c[i], pl, nl, &longp, 1, &err);
    }
    tap_ok(rc[0] == LF_OK && rc[1] == LF_OK && rc[2] == LF_OK && rc[3] == LF_OK, "2 slots + 2 queued accepted");
    tap_ok(rc[4] == LF_ERR_OVERLOAD, "the 5th job -> overload");
    sched_event_t ev;
    tap_ok(sched_chan_next(c[0], &ev, 60000) == 1 && ev.kind == SCHED_EV_TOKEN, "running job produces tokens");
    for (int i = 0; i < 4; i++)
        sched_chan_cancel(c[i]);
    bool cancelled = true;
    for (int i = 0; i < 4; i++) {
        int got;
        sched_finish_t fin = SCHED_FINISH_NONE;
        while ((got = sched_chan_next(c[i], &ev, 60000)) == 1)
            if (ev.kind == SCHED_EV_DONE)
                fin = ev.finish;
        cancelled &= got == -1 && fin == SCHED_FINISH_CANCELLED;
    }
    tap_ok(cancelled, "cancelled jobs (running and queued) end with CANCELLED");
    sched_stats_t st;
    sched_stats(s, &st);
    tap_ok(st.running == 0 && st.waiting == 0 && st.seq_tokens == 0, "slots freed after cancel");
    tap_ok(st.kv_cap_tokens == 2 * 2048 && st.preemptions == 0, "default KV budget: parallel x ctx, no preemption");
    for (int i = 0; i < 5; i++)
        sched_chan_free(c[i]);

    /* an owner that leaves without reading: no leak, no hang */
    c[0] = sched_chan_create(s);
    tap_ok(sched_submit(s, c[0], pl, nl, &longp, 1, &err) == LF_OK, "submit then abandon");
    sched_chan_free(c[0]);

    /* stop: running jobs end CANCELLED, later submits are refused */
    c[0] = sched_chan_create(s);
    sched_submit(s, c[0], pl, nl, &longp, 1, &err);
    tap_ok(sched_chan_next(c[0], &ev, 60000) == 1 && ev.kind == SCHED_EV_TOKEN, "a job runs before stop");
    sched_stop(s);
    sched_finish_t fin = SCHED_FINISH_NONE;
    while (sched_chan_next(c[0], &ev, 60000) == 1)
        if (ev.kind == SCHED_EV_DONE)
            fin = ev.finish;
    tap_ok(fin == SCHED_FINISH_CANCELLED, "stop ends running jobs");
    sched_chan_free(c[0]);
    c[0] = sched_chan_create(s);
    tap_ok(sched_submit(s, c[0], pl, nl, &one, 1, &err) == LF_ERR_OVERLOAD, "submit after stop -> overload");
    sched_chan_free(c[0]);
    sched_free(s);

    /* a full channel shared by two jobs: the reader is late, both jobs
     * still deliver every token and their DONE events */
    sched_opts_t o2 = {.n_parallel = 2, .n_ctx = 64, .max_queue = 2, .chan_cap = 7, .n_threads = 1};
    s = sched_create(m, &o2, &err);
    ch = sched_chan_create(s);
    sched_params_t p3[2] = {params(3), params(3)};
    const int32_t *pp0[] = {p0, p0};
    size_t npp0[] = {4, 4};
    tap_ok(sched_submit(s, ch, pp0, npp0, p3, 2, &err) == LF_OK, "submit two jobs into a 7-event channel");
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    memset(n, 0, sizeof n);
    memset(done, 0, sizeof done);
    int cnt = drain(ch, toks, n, done, 2);
    tap_ok(cnt == 8 && done[0].kind == SCHED_EV_DONE && done[1].kind == SCHED_EV_DONE && n[0] == 3 && n[1] == 3 &&
               done[0].finish == SCHED_FINISH_LENGTH && done[1].finish == SCHED_FINISH_LENGTH,
           "late reader: every token and both DONE events arrive (%d events)", cnt);
    sched_chan_free(ch);
    sched_free(s);

    /* chunked prefill never stalls a running job: with 64 tokens per step a
     * 600-token prompt takes ~10 steps, and in each of them the other job's
     * decode token goes first (events of one channel are in step order) */
    sched_opts_t o4 = {.n_parallel = 2, .n_ctx = 1024, .max_queue = 2, .chan_cap = 64, .n_threads = 1,
                       .batch_tokens = 64};
    s = sched_create(m, &o4, &err);
    if (tap_ok(s != NULL, "create with 64-token steps")) {
        static int32_t longp_toks[600];
        longp_toks[0] = bos;
        for (int i = 1; i < 600; i++)
            longp_toks[i] = 300 + i % 100;
        const int32_t *pc[] = {p0, longp_toks};
        size_t npc[] = {4, 600};
        sched_params_t pcp[2] = {params(40), params(2)};
        ch = sched_chan_create(s);
        int before = -1, a_tokens = 0;
        if (sched_submit(s, ch, pc, npc, pcp, 2, &err) == LF_OK) {
            while (sched_chan_next(ch, &ev, 60000) == 1) {
                if (ev.kind == SCHED_EV_TOKEN && ev.index == 0)
                    a_tokens++;
                if (ev.kind == SCHED_EV_TOKEN && ev.index == 1 && before < 0)
                    before = a_tokens;
            }
        }
        tap_ok(before >= 8 && a_tokens == 40, "running job got %d tokens while a 600-token prompt was prefilled",
               before);
        sched_chan_free(ch);
        sched_free(s);
    }

    /* KV budget: 1 MiB holds ~1600 positions, four jobs of 4 + 450 need
     * more: the newest is preempted and recomputed, every job still gives
     * exactly its tokens alone (greedy and seeded), each token once */
    sched_opts_t o3 = {.n_parallel = 4, .n_ctx = 1024, .max_queue = 4, .chan_cap = 64, .n_threads = 1,
                       .batch_tokens = 64, .kv_mb = 1};
    s = sched_create(m, &o3, &err);
    if (tap_ok(s != NULL, "create with a 1 MiB KV budget")) {
        sched_stats(s, &st);
        tap_ok(st.kv_cap_tokens >= 1024 && st.kv_cap_tokens < 4 * 454, "budget %lld positions",
               (long long)st.kv_cap_tokens);
        int32_t pk[4][4];
        sched_params_t pk_p[4];
        const int32_t *pk_ptr[4];
        size_t pk_n[4];
        for (int k = 0; k < 4; k++) {
            pk[k][0] = bos, pk[k][1] = 350 + k, pk[k][2] = 360 + k, pk[k][3] = 370;
            pk_p[k] = k % 2 ? seeded(450, 7 + (uint64_t)k) : params(450);
            pk_ptr[k] = pk[k];
            pk_n[k] = 4;
            run_alone(s, pk[k], 4, pk_p[k], k);
        }
        sched_stats(s, &st);
        tap_ok(st.preemptions == 0, "one job at a time: no preemption");
        ch = sched_chan_create(s);
        memset(n, 0, sizeof n);
        memset(done, 0, sizeof done);
        tap_ok(sched_submit(s, ch, pk_ptr, pk_n, pk_p, 4, &err) == LF_OK, "submit four long jobs");
        drain(ch, toks, n, done, 4);
        sched_stats(s, &st);
        tap_ok(st.preemptions > 0, "%llu preemptions", (unsigned long long)st.preemptions);
        bool same = true;
        for (int k = 0; k < 4; k++)
            same &= n[k] == 450 && nref[k] == 450 && !memcmp(toks[k], ref[k], 450 * sizeof(int32_t)) &&
                    done[k].finish == SCHED_FINISH_LENGTH && done[k].n_gen == 450;
        tap_ok(same, "every preempted job completes with its tokens alone, each once");
        tap_ok(st.running == 0 && st.waiting == 0 && st.kv_used_tokens <= st.kv_cap_tokens, "all done, KV within budget");
        sched_chan_free(ch);
        sched_free(s);
    }
    model_free(m);
    const char *mdir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    test_window_model(mdir, FWD_ATTN_AUTO, KV_F16, KV_F16);
    test_window_model(mdir, FWD_ATTN_FLASH, KV_Q8_0, KV_Q8_0);
    test_window_model(mdir, FWD_ATTN_AUTO, KV_Q4_0, KV_Q4_0);
    return tap_done();
}
