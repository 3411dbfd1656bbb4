/* test_sched.c - the scheduler over the stub engine (tests/e2e/engine_stub.c):
 * tokens, finish reasons, shared channels, back-pressure, cancellation,
 * overload and context errors. */
#include "engine/sched.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* stub: byte b is token 3+b, EOS 2; after token at pos p comes STORY[p % len] */
static const char STORY[] = "Once upon a time, a caf\xc3\xa9 cat sang. ";

static sched_params_t params(int32_t max_tokens)
{
    sched_params_t p = {.max_tokens = max_tokens};
    sampler_params_default(&p.sampling);
    p.sampling.temperature = 0;
    return p;
}

/* Drains ch; tokens of job i into toks[i]. Returns events read. */
static int drain(sched_chan_t *ch, int32_t toks[][64], int32_t *n, sched_event_t *done, int cap)
{
    sched_event_t ev;
    int got, count = 0;
    while ((got = sched_chan_next(ch, &ev, 5000)) == 1) {
        count++;
        if (ev.index < 0 || ev.index >= cap)
            continue;
        if (ev.kind == SCHED_EV_TOKEN && n[ev.index] < 64)
            toks[ev.index][n[ev.index]++] = ev.token;
        else if (ev.kind == SCHED_EV_DONE)
            done[ev.index] = ev;
    }
    return got == 0 ? -1 : count;
}

int main(void)
{
    lf_err_t err;
    model_t *m = model_load("stub.gguf", &err);
    sched_opts_t o = {.n_parallel = 2, .n_ctx = 64, .max_queue = 2, .chan_cap = 8};
    sched_t *s = sched_create(m, &o, &err);
    if (!tap_ok(s != NULL, "create"))
        return tap_done();
    tap_ok(sched_n_ctx(s) == 64, "n_ctx from the options");

    /* two prompts in one channel (more than chan_cap events in total:
     * the scheduler must wait for the reader, not drop or block) */
    int32_t p0[] = {1, 3 + 'H', 3 + 'i'}, p1[] = {1, 3 + 'Y', 3 + 'o', 3 + '!'};
    const int32_t *prompts[] = {p0, p1};
    size_t np[] = {3, 4};
    sched_params_t pp[2] = {params(12), params(12)};
    sched_chan_t *ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, prompts, np, pp, 2, &err) == LF_OK, "submit two jobs");
    int32_t toks[2][64], n[2] = {0, 0};
    sched_event_t done[2] = {0};
    tap_ok(drain(ch, toks, n, done, 2) > 0, "events drained to the end");
    bool exact = n[0] == 12;
    for (int i = 0; exact && i < 12; i++)
        exact = toks[0][i] == 3 + (unsigned char)STORY[(2 + i) % (sizeof STORY - 1)];
    tap_ok(exact, "job 0: 12 greedy tokens of the stub story (%d)", n[0]);
    tap_ok(done[0].kind == SCHED_EV_DONE && done[0].finish == SCHED_FINISH_LENGTH && done[0].n_gen == 12 &&
               done[0].n_prompt == 3, "job 0 ends with length, counts");
    tap_ok(n[1] == 1 && toks[1][0] == 2 && done[1].finish == SCHED_FINISH_STOP, "job 1: EOS after '!' -> stop");
    sched_chan_free(ch);

    /* errors: context, vocabulary, empty */
    int32_t bad[] = {1, 9999};
    const int32_t *pb[] = {bad};
    size_t nb[] = {2};
    sched_params_t big = params(63);
    ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, pb, nb, &big, 1, &err) == LF_ERR_CONTEXT &&
               strstr(err.msg, "maximum context length is 64 tokens"), "prompt + max_tokens > n_ctx -> context error");
    sched_params_t one = params(4);
    tap_ok(sched_submit(s, ch, pb, nb, &one, 1, &err) == LF_ERR_INVALID, "token id outside the vocabulary -> invalid");
    size_t n0[] = {0};
    tap_ok(sched_submit(s, ch, pb, n0, &one, 1, &err) == LF_ERR_INVALID, "empty prompt -> invalid");
    sched_chan_free(ch);

    /* overload and cancellation with a slow engine */
    setenv("LLM_STUB_DELAY_MS", "10", 1);
    const int32_t *pl[] = {p0};
    size_t nl[] = {3};
    sched_params_t longp = params(50);
    sched_chan_t *c[5];
    lf_code_t rc[5];
    for (int i = 0; i < 5; i++) {
        c[i] = sched_chan_create(s);
        rc[i] = sched_submit(s, c[i], pl, nl, &longp, 1, &err);
    }
    tap_ok(rc[0] == LF_OK && rc[1] == LF_OK && rc[2] == LF_OK && rc[3] == LF_OK, "2 slots + 2 queued accepted");
    tap_ok(rc[4] == LF_ERR_OVERLOAD, "the 5th job -> overload");
    sched_event_t ev;
    tap_ok(sched_chan_next(c[0], &ev, 5000) == 1 && ev.kind == SCHED_EV_TOKEN, "running job produces tokens");
    for (int i = 0; i < 4; i++)
        sched_chan_cancel(c[i]);
    bool cancelled = true;
    for (int i = 0; i < 4; i++) {
        int got;
        sched_finish_t fin = SCHED_FINISH_NONE;
        while ((got = sched_chan_next(c[i], &ev, 5000)) == 1)
            if (ev.kind == SCHED_EV_DONE)
                fin = ev.finish;
        cancelled &= got == -1 && fin == SCHED_FINISH_CANCELLED;
    }
    tap_ok(cancelled, "cancelled jobs (running and queued) end with CANCELLED");
    sched_stats_t st;
    sched_stats(s, &st);
    tap_ok(st.running == 0 && st.waiting == 0 && st.kv_used_tokens == 0, "slots and KV freed after cancel");
    for (int i = 0; i < 5; i++)
        sched_chan_free(c[i]);

    /* an owner that leaves without reading: no leak, no hang */
    c[0] = sched_chan_create(s);
    tap_ok(sched_submit(s, c[0], pl, nl, &longp, 1, &err) == LF_OK, "submit then abandon");
    sched_chan_free(c[0]);
    unsetenv("LLM_STUB_DELAY_MS");

    /* stop: running jobs end CANCELLED, later submits are refused */
    c[0] = sched_chan_create(s);
    sched_params_t lp = params(60);
    setenv("LLM_STUB_DELAY_MS", "5", 1);
    sched_submit(s, c[0], pl, nl, &lp, 1, &err);
    sched_stop(s);
    sched_finish_t fin = SCHED_FINISH_NONE;
    while (sched_chan_next(c[0], &ev, 5000) == 1)
        if (ev.kind == SCHED_EV_DONE)
            fin = ev.finish;
    tap_ok(fin == SCHED_FINISH_CANCELLED || fin == SCHED_FINISH_LENGTH, "stop ends running jobs");
    sched_chan_free(c[0]);
    c[0] = sched_chan_create(s);
    tap_ok(sched_submit(s, c[0], pl, nl, &one, 1, &err) == LF_ERR_OVERLOAD, "submit after stop -> overload");
    sched_chan_free(c[0]);
    sched_free(s);
    model_free(m);
    return tap_done();
}
