/* test_sched_decoding.c - the scheduler's decoding features on the REAL
 * engine (stories260K.gguf): logprobs on TOKEN events (against the golden
 * top-5 of llama.cpp), prompt logprobs, stop_token_ids, min_tokens, share
 * groups (n > 1), per-job cancellation, seeded reproducibility beside other
 * jobs. Skips when the fixture model is missing. */
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* golden (llama.cpp c392e509): prompt "Once upon a time" greedy */
static const int32_t PROMPT[] = {1, 403, 407, 261, 378};
static const int32_t GREEDY[] = {432, 383, 286, 261, 376, 298};
static const float GREEDY_LP0 = -0.031752943992614746f; /* logprob of 432 at step 0 */
static const float TOP1_LP0 = -3.5481619834899902f;     /* second best at step 0 (383) */

typedef struct {
    int32_t toks[4][64];
    int32_t n[4];
    sched_event_t done[4];
    sched_lp_t lp0[4];
    sched_prompt_lp_t *plp[4];
    int32_t order[256];
    int32_t n_order;
} got_t;

static void drain(sched_chan_t *ch, got_t *g)
{
    memset(g, 0, sizeof *g);
    sched_event_t ev;
    while (sched_chan_next(ch, &ev, 20000) == 1) {
        int32_t i = ev.index;
        if (i < 0 || i >= 4)
            continue;
        if (ev.kind == SCHED_EV_TOKEN) {
            if (g->n[i] == 0)
                g->lp0[i] = ev.lp;
            if (g->n[i] < 64)
                g->toks[i][g->n[i]++] = ev.token;
            if (g->n_order < 256)
                g->order[g->n_order++] = i;
        } else if (ev.kind == SCHED_EV_DONE) {
            g->done[i] = ev;
        } else if (ev.kind == SCHED_EV_PROMPT) {
            free(g->plp[i]);
            g->plp[i] = ev.prompt_lp;
        }
    }
}

static void got_free(got_t *g)
{
    for (int i = 0; i < 4; i++)
        free(g->plp[i]);
}

static sched_params_t greedy_params(int32_t max_tokens)
{
    sched_params_t p;
    memset(&p, 0, sizeof p);
    p.max_tokens = max_tokens;
    sampler_params_default(&p.sampling);
    p.sampling.temperature = 0.0f;
    return p;
}

static lf_code_t run(sched_t *s, const sched_params_t *p, int32_t n, got_t *g)
{
    const int32_t *prompts[4] = {PROMPT, PROMPT, PROMPT, PROMPT};
    size_t lens[4] = {5, 5, 5, 5};
    sched_chan_t *ch = sched_chan_create(s);
    lf_err_t err = {0};
    lf_code_t rc = sched_submit(s, ch, prompts, lens, p, n, &err);
    if (rc == LF_OK)
        drain(ch, g);
    sched_chan_free(ch);
    return rc;
}

int main(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "model loads (%s)", err.msg))
        return tap_done();
    sched_opts_t o = {.n_parallel = 4, .n_ctx = 256, .max_queue = 8, .batch_tokens = 64, .n_threads = 1};
    sched_t *s = sched_create(m, &o, &err);
    if (!tap_ok(s != NULL, "scheduler starts (%s)", err.msg)) {
        model_free(m);
        return tap_done();
    }
    got_t g;

    /* logprobs on TOKEN events */
    sched_params_t p = greedy_params(6);
    p.logprobs = true;
    p.top_logprobs = 5;
    tap_ok(run(s, &p, 1, &g) == LF_OK, "greedy job with logprobs runs");
    tap_ok(g.n[0] == 6 && !memcmp(g.toks[0], GREEDY, sizeof GREEDY), "greedy tokens equal llama.cpp's");
    tap_ok(g.lp0[0].has && g.lp0[0].token == 432 && fabsf(g.lp0[0].logprob - GREEDY_LP0) < 2e-3f &&
               g.lp0[0].rank == 1,
           "TOKEN logprob of the first token matches the golden (%g vs %g)", (double)g.lp0[0].logprob,
           (double)GREEDY_LP0);
    tap_ok(g.lp0[0].n_top == 5 && g.lp0[0].top[0].token == 432 && g.lp0[0].top[1].token == 383 &&
               fabsf(g.lp0[0].top[1].logprob - TOP1_LP0) < 2e-3f && g.lp0[0].top[1].rank == 2,
           "top-5 alternatives best first with ranks");
    tap_ok(g.done[0].finish == SCHED_FINISH_LENGTH && g.done[0].stop_token == -1 && g.done[0].n_gen == 6,
           "max_tokens -> LENGTH, no stop token");
    got_free(&g);

    p = greedy_params(6);
    tap_ok(run(s, &p, 1, &g) == LF_OK && !g.lp0[0].has, "no logprobs unless asked");
    got_free(&g);

    /* prompt logprobs */
    p = greedy_params(2);
    p.prompt_logprobs = true;
    p.n_prompt_top = 3;
    tap_ok(run(s, &p, 1, &g) == LF_OK && g.plp[0] != NULL, "prompt logprobs event arrives");
    if (g.plp[0]) {
        const sched_prompt_lp_t *q = g.plp[0];
        int ok = q->n == 5 && !q->e[0].has;
        for (int i = 1; ok && i < 5; i++)
            ok = q->e[i].has && q->e[i].token == PROMPT[i] && q->e[i].logprob <= 0.0f && q->e[i].rank >= 1 &&
                 q->e[i].n_top == 3 && q->e[i].top[0].logprob >= q->e[i].logprob;
        tap_ok(ok, "prompt logprobs: first null, then each prompt token with rank and top-3");
    }
    tap_ok(g.done[0].n_cached == 0, "prompt logprobs compute the whole prompt (no prefix cache)");
    got_free(&g);

    /* stop_token_ids: " a" (261) is the 4th greedy token */
    p = greedy_params(20);
    int32_t stop_ids[] = {261};
    p.stop_token_ids = stop_ids;
    p.n_stop_token_ids = 1;
    tap_ok(run(s, &p, 1, &g) == LF_OK && g.n[0] == 4 && g.done[0].finish == SCHED_FINISH_STOP &&
               g.done[0].stop_token == 261,
           "stop_token_ids: STOP with the id after 4 tokens");
    got_free(&g);
    /* min_tokens bans the stop token until reached: 261 cannot be token 4 */
    p.sampling.min_tokens = 5;
    tap_ok(run(s, &p, 1, &g) == LF_OK && g.n[0] >= 5 && g.toks[0][3] != 261, "min_tokens bans stop tokens before");
    got_free(&g);

    /* share groups: n = 3, greedy -> identical; choices 1, 2 attach the prompt */
    sched_params_t ps[4];
    for (int i = 0; i < 3; i++) {
        ps[i] = greedy_params(4);
        ps[i].share_group = 1;
    }
    tap_ok(run(s, ps, 3, &g) == LF_OK, "share group of 3 runs");
    tap_ok(g.n[0] == 4 && g.n[1] == 4 && g.n[2] == 4 && !memcmp(g.toks[0], g.toks[1], 16) &&
               !memcmp(g.toks[0], g.toks[2], 16) && !memcmp(g.toks[0], GREEDY, 16),
           "share group: every choice gives the greedy tokens");
    got_free(&g);

    /* seeded sampling: the same alone and beside other jobs */
    p = greedy_params(12);
    p.sampling.temperature = 1.0f;
    p.sampling.has_seed = true;
    p.sampling.seed = 77;
    got_t alone;
    run(s, &p, 1, &alone);
    for (int i = 0; i < 4; i++) {
        ps[i] = p;
        ps[i].sampling.seed = i == 2 ? 77 : (uint64_t)i + 1000;
    }
    run(s, ps, 4, &g);
    tap_ok(alone.n[0] == 12 && g.n[2] == 12 && !memcmp(alone.toks[0], g.toks[2], 12 * sizeof(int32_t)),
           "seeded job: same tokens alone and beside three others");
    int inter = 0;
    for (int i = 1; i < g.n_order; i++)
        inter |= g.order[i] != g.order[i - 1];
    tap_ok(inter, "jobs of one channel interleave their events");
    got_free(&alone);
    got_free(&g);

    /* per-job cancellation */
    for (int i = 0; i < 2; i++)
        ps[i] = greedy_params(200);
    const int32_t *prompts[2] = {PROMPT, PROMPT};
    size_t lens[2] = {5, 5};
    sched_chan_t *ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, prompts, lens, ps, 2, &err) == LF_OK, "two long jobs submitted");
    sched_chan_cancel_job(ch, 0);
    drain(ch, &g);
    tap_ok(g.done[0].finish == SCHED_FINISH_CANCELLED && g.done[1].finish == SCHED_FINISH_LENGTH && g.done[1].n_gen == 200,
           "cancelling job 0 leaves job 1 running to its end");
    got_free(&g);
    sched_chan_free(ch);

    sched_free(s);
    model_free(m);
    return tap_done();
}
