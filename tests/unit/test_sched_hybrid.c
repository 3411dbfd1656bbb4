/* test_sched_hybrid.c - the scheduler with hybrid models (recurrent state
 * beside the paged KV cache): tinyqwen35 (Gated DeltaNet + attention) and
 * tinylfm2 (short convolutions + attention).
 *
 * For each model, every job must give exactly the tokens it gives alone:
 *  - batched with other hybrid sequences (greedy and seeded);
 *  - preempted for KV memory and resumed (its state recomputed);
 *  - as a choice of n > 1 (the followers take the leader's state from a
 *    snapshot);
 *  - in a slot where another job was just cancelled (no stale state);
 *  - when its prompt extends a cached one (the state resumes from a
 *    snapshot: n_cached > 0), compared with a scheduler that never saw it.
 * The stats report the state memory.
 */
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 1600
#define NJ 4

static sched_params_t greedy(int32_t n)
{
    sched_params_t p = {.max_tokens = n, .ignore_eos = true};
    sampler_params_default(&p.sampling);
    p.sampling.temperature = 0;
    return p;
}

static sched_params_t seeded(int32_t n, uint64_t seed)
{
    sched_params_t p = greedy(n);
    p.sampling.temperature = 1;
    p.sampling.has_seed = true;
    p.sampling.seed = seed;
    return p;
}

typedef struct {
    int32_t t[NJ][MAXT], n[NJ];
    sched_event_t done[NJ];
} got_t;

/* Submits n jobs in one channel and drains it; false on a submit error or
 * a timeout. cancel_first: job 0 is cancelled after its first token. */
static bool run(sched_t *s, const int32_t *const *pr, const size_t *np, const sched_params_t *pp, int n, got_t *g,
                bool cancel_first)
{
    lf_err_t err;
    memset(g, 0, sizeof *g);
    sched_chan_t *ch = sched_chan_create(s);
    if (sched_submit(s, ch, pr, np, pp, n, &err) != LF_OK) {
        sched_chan_free(ch);
        return false;
    }
    sched_event_t ev;
    int got;
    while ((got = sched_chan_next(ch, &ev, 60000)) == 1) {
        if (ev.index < 0 || ev.index >= n)
            continue;
        if (ev.kind == SCHED_EV_TOKEN && g->n[ev.index] < MAXT) {
            g->t[ev.index][g->n[ev.index]++] = ev.token;
            if (cancel_first && ev.index == 0 && g->n[0] == 1)
                sched_chan_cancel_job(ch, 0);
        } else if (ev.kind == SCHED_EV_DONE) {
            g->done[ev.index] = ev;
        }
    }
    sched_chan_free(ch);
    return got != 0; /* 0: a timeout */
}

static bool same_tokens(const got_t *a, int i, const got_t *b, int j, int n)
{
    return a->n[i] == n && b->n[j] == n && !memcmp(a->t[i], b->t[j], (size_t)n * sizeof(int32_t));
}

static void test_model(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lf_err_t err;
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "%s: loads (%s)", file, m ? "ok" : err.msg))
        return;
    const int32_t bos = vocab_bos(model_vocab(m));
    /* four prompts of different lengths */
    static int32_t p[NJ][300];
    size_t np[NJ] = {40, 120, 73, 260};
    const int32_t *pr[NJ];
    for (int k = 0; k < NJ; k++) {
        p[k][0] = bos;
        for (size_t i = 1; i < np[k]; i++)
            p[k][i] = 260 + (int32_t)((i * (k == 3 ? 7 : 7 + 4 * (uint64_t)k) + (k == 3 ? 0 : 3 * (uint64_t)k)) % 200);
        pr[k] = p[k];
    }
    sched_params_t pp[NJ] = {greedy(60), seeded(60, 7), greedy(60), seeded(60, 9)};

    /* references: each job alone */
    sched_opts_t o = {.n_parallel = 4, .n_ctx = 512, .max_queue = 8, .chan_cap = 256, .n_threads = 2,
                      .batch_tokens = 64};
    sched_t *s = sched_create(m, &o, &err);
    if (!tap_ok(s != NULL, "%s: scheduler (%s)", file, s ? "ok" : err.msg)) {
        model_free(m);
        return;
    }
    static got_t ref, g;
    bool ok = true;
    for (int k = 0; k < NJ; k++) {
        static got_t one;
        ok &= run(s, &pr[k], &np[k], &pp[k], 1, &one, false);
        memcpy(ref.t[k], one.t[0], sizeof one.t[0]);
        ref.n[k] = one.n[0];
    }
    tap_ok(ok && ref.n[0] == 60 && ref.n[3] == 60, "%s: four jobs alone", file);
    sched_stats_t st;
    sched_stats(s, &st);
    tap_ok(st.state_per_seq_bytes > 0 && st.state_bytes == 4 * st.state_per_seq_bytes && st.state_snap_slots > 0,
           "%s: state %llu bytes per sequence, %llu live, %d snapshot slots", file,
           (unsigned long long)st.state_per_seq_bytes, (unsigned long long)st.state_bytes, st.state_snap_slots);

    /* batched together (64-token steps: prefill chunks beside decodes) */
    ok = run(s, pr, np, pp, NJ, &g, false);
    bool same = ok;
    for (int k = 0; k < NJ; k++)
        same &= same_tokens(&g, k, &ref, k, 60);
    tap_ok(same, "%s: four hybrid jobs batched give their tokens alone", file);

    /* a cancelled job, then a new one in its slot */
    ok = run(s, pr, np, pp, 2, &g, true);
    tap_ok(ok && g.done[0].finish == SCHED_FINISH_CANCELLED && same_tokens(&g, 1, &ref, 1, 60),
           "%s: job 0 cancelled after one token, job 1 unaffected", file);
    ok = run(s, &pr[2], &np[2], &pp[2], 1, &g, false);
    tap_ok(ok && same_tokens(&g, 0, &ref, 2, 60), "%s: the next job in a freed slot starts from a clean state", file);

    /* n > 1: three choices of prompt 3 (seeded differently); the followers
     * resume from the leader's snapshot */
    sched_params_t sp[3];
    const int32_t *spr[3] = {pr[3], pr[3], pr[3]};
    size_t snp[3] = {np[3], np[3], np[3]};
    static got_t alone[3];
    for (int i = 0; i < 3; i++) {
        sp[i] = seeded(30, 100 + (uint64_t)i);
        ok &= run(s, &spr[i], &snp[i], &sp[i], 1, &alone[i], false);
        sp[i].share_group = 1;
    }
    sched_stats(s, &st);
    const uint64_t restored0 = st.state_restores;
    ok = ok && run(s, spr, snp, sp, 3, &g, false);
    same = ok;
    for (int i = 0; i < 3; i++)
        same &= same_tokens(&g, i, &alone[i], 0, 30);
    sched_stats(s, &st);
    tap_ok(same && g.done[1].n_cached > 0 && g.done[2].n_cached > 0 && st.state_restores > restored0,
           "%s: n = 3 choices, each its tokens alone; choices 1, 2 resumed %d and %d positions from a state snapshot",
           file, g.done[1].n_cached, g.done[2].n_cached);

    /* prefix-cache resume: prompt 3 + 37 more tokens resumes from prompt
     * 3's snapshot and gives what a scheduler that never saw it gives */
    static int32_t ext[300];
    memcpy(ext, p[3], np[3] * sizeof(int32_t));
    for (int i = 0; i < 37; i++)
        ext[np[3] + (size_t)i] = 300 + i;
    const int32_t *epr = ext;
    size_t enp = np[3] + 37;
    sched_params_t ep = greedy(40);
    ok = run(s, &epr, &enp, &ep, 1, &g, false);
    sched_t *s2 = sched_create(m, &o, &err);
    static got_t fresh;
    ok = ok && s2 && run(s2, &epr, &enp, &ep, 1, &fresh, false);
    tap_ok(ok && g.done[0].n_cached >= 240 && fresh.done[0].n_cached == 0 && same_tokens(&g, 0, &fresh, 0, 40),
           "%s: a prompt extending a cached one resumes %d of %zu positions, same tokens as a fresh scheduler", file,
           g.done[0].n_cached, enp);
    sched_free(s2);
    sched_free(s);

    /* preemption: a 1 MiB KV budget (the attention layers' positions), four
     * jobs of half of it each (up to MAXT) */
    sched_opts_t ot = o;
    ot.kv_mb = 1;
    ot.batch_tokens = 32;
    s = sched_create(m, &ot, &err);
    sched_stats_t st0;
    if (s)
        sched_stats(s, &st0);
    int64_t L = s ? st0.kv_cap_tokens / 2 : 300;
    L = L > MAXT ? MAXT : L < 300 ? 300 : L;
    if (s && L + 16 > ot.n_ctx) { /* a context that holds one job */
        sched_free(s);
        ot.n_ctx = (int32_t)L + 16;
        s = sched_create(m, &ot, &err);
    }
    if (!tap_ok(s != NULL, "%s: scheduler with a 1 MiB KV budget", file)) {
        model_free(m);
        return;
    }
    sched_params_t lp[NJ];
    static got_t lref;
    for (int k = 0; k < NJ; k++) {
        lp[k] = k % 2 ? seeded((int32_t)(L - (int64_t)np[k]), 20 + (uint64_t)k) : greedy((int32_t)(L - (int64_t)np[k]));
        static got_t one;
        run(s, &pr[k], &np[k], &lp[k], 1, &one, false);
        memcpy(lref.t[k], one.t[0], sizeof one.t[0]);
        lref.n[k] = one.n[0];
    }
    ok = run(s, pr, np, lp, NJ, &g, false);
    sched_stats(s, &st);
    same = ok;
    for (int k = 0; k < NJ; k++)
        same &= g.n[k] == lp[k].max_tokens && same_tokens(&g, k, &lref, k, lp[k].max_tokens);
    tap_ok(st.preemptions > 0 && same, "%s: %llu preemptions (4 jobs of %lld positions, %lld in the budget), every "
           "job resumed gives its tokens alone", file, (unsigned long long)st.preemptions, (long long)L,
           (long long)st.kv_cap_tokens);
    tap_ok(st.running == 0 && st.waiting == 0, "%s: all done", file);
    sched_free(s);
    model_free(m);
}

int main(int argc, char **argv)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    const char *files[] = {"tinyqwen35-f32.gguf", "tinylfm2-f32.gguf", "tinyqwen35moe-q8_0.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (argc < 2 || strstr(files[i], argv[1]))
            test_model(dir, files[i]);
    return tap_done();
}
