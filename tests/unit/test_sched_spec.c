/* test_sched_spec.c - speculative decoding in the scheduler on the REAL
 * engine (stories260K.gguf, and the hybrids tinyqwen35 / tinylfm2 whose
 * recurrent states go back to a checkpoint when drafts are rejected):
 * with drafts that are always right, always wrong, random, or right but
 * for an edit, from a prediction, from n-grams, from a draft model or
 * from the model's own MTP block (tinyqwen35),
 * every job gives exactly the tokens (and logprobs, bitwise) it gives
 * without speculation: greedy and seeded, with stop tokens, EOS,
 * max_tokens, a grammar, n > 1, concurrent streams and preemption. */
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"
#include "grammar/grammar.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 700

typedef struct {
    int32_t toks[4][MAXT];
    float lp[4][MAXT];
    int32_t top[4][MAXT]; /* second-best token of each step */
    int32_t n[4];
    sched_event_t done[4];
} got_t;

static void drain(sched_chan_t *ch, got_t *g)
{
    memset(g, 0, sizeof *g);
    sched_event_t ev;
    while (sched_chan_next(ch, &ev, 60000) == 1) {
        const int32_t i = ev.index;
        if (i < 0 || i >= 4)
            continue;
        if (ev.kind == SCHED_EV_TOKEN && g->n[i] < MAXT) {
            g->lp[i][g->n[i]] = ev.lp.has ? ev.lp.logprob : 1.0f;
            g->top[i][g->n[i]] = ev.lp.n_top > 1 ? ev.lp.top[1].token : -1;
            g->toks[i][g->n[i]++] = ev.token;
        } else if (ev.kind == SCHED_EV_DONE) {
            g->done[i] = ev;
        } else if (ev.kind == SCHED_EV_PROMPT) {
            free(ev.prompt_lp);
        }
    }
}

static lf_code_t run(sched_t *s, const int32_t *const *prompts, const size_t *lens, const sched_params_t *p, int32_t n,
                     got_t *g)
{
    sched_chan_t *ch = sched_chan_create(s);
    lf_err_t err = {0};
    lf_code_t rc = sched_submit(s, ch, prompts, lens, p, n, &err);
    if (rc == LF_OK)
        drain(ch, g);
    sched_chan_free(ch);
    return rc;
}

static const int32_t PROMPT[] = {1, 403, 407, 261, 378}; /* "Once upon a time" */

static lf_code_t run1(sched_t *s, const sched_params_t *p, got_t *g)
{
    const int32_t *ps[1] = {PROMPT};
    size_t ns[1] = {5};
    return run(s, ps, ns, p, 1, g);
}

/* The tiny random hybrids end on EOS early: their jobs run to max_tokens
 * (except where EOS is the point). */
static bool g_ignore_eos;

static sched_params_t params(int32_t max_tokens, float temp, uint64_t seed)
{
    sched_params_t p;
    memset(&p, 0, sizeof p);
    p.max_tokens = max_tokens;
    p.ignore_eos = g_ignore_eos;
    sampler_params_default(&p.sampling);
    p.sampling.temperature = temp;
    p.sampling.has_seed = true;
    p.sampling.seed = seed;
    p.logprobs = true;
    p.top_logprobs = 2;
    return p;
}

/* tokens and logprobs equal, bitwise */
static bool same(const got_t *a, int ia, const got_t *b, int ib)
{
    return a->n[ia] == b->n[ib] && !memcmp(a->toks[ia], b->toks[ib], (size_t)a->n[ia] * sizeof(int32_t)) &&
           !memcmp(a->lp[ia], b->lp[ib], (size_t)a->n[ia] * sizeof(float)) &&
           !memcmp(a->top[ia], b->top[ib], (size_t)a->n[ia] * sizeof(int32_t)) &&
           a->done[ia].finish == b->done[ib].finish && a->done[ia].n_gen == b->done[ib].n_gen;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* The prediction kinds: the reference output itself; it with its middle
 * tenth replaced; every pair of consecutive output tokens followed by a
 * wrong one (the output is always found in it, and every draft starts
 * wrong); other text (never aligned: no drafts); random tokens. */
enum { PRED_RIGHT, PRED_EDIT, PRED_WRONG, PRED_OTHER, PRED_RANDOM, PRED_KINDS };
static const char *pred_name[PRED_KINDS] = {"always right", "right but the middle tenth", "always wrong",
                                            "other text", "random"};

static int32_t make_pred(int kind, const int32_t *ref, int32_t n, int32_t n_vocab, int32_t *out, uint64_t seed)
{
    if (kind == PRED_WRONG) {
        int32_t m = 0;
        for (int32_t i = 0; i + 1 < n && m + 3 <= 3 * MAXT; i++) {
            out[m++] = ref[i];
            out[m++] = ref[i + 1];
            out[m++] = ref[i + 1] == 5 ? 6 : 5; /* never what follows the pair */
        }
        return m;
    }
    for (int32_t i = 0; i < n; i++) {
        switch (kind) {
        case PRED_RIGHT: out[i] = ref[i]; break;
        case PRED_EDIT: out[i] = i >= n * 45 / 100 && i < n * 55 / 100 ? (ref[i] + 7) % n_vocab : ref[i]; break;
        case PRED_OTHER: out[i] = (ref[i] + 1) % n_vocab; break;
        default: out[i] = (int32_t)(3 + lcg(&seed) % (uint64_t)(n_vocab - 3)); break;
        }
    }
    return n;
}

/* Every case on one target model: `drafts` are draft models of its
 * vocabulary (the first one agrees with it on greedy jobs), `foreign` one
 * of another vocabulary; kv_bytes a KV budget that forces preemption. */
static void test_model(const char *file, const char *const *drafts, int n_drafts, const char *foreign, int64_t kv_bytes)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tap_env_dir("LLM_MODELS_DIR", "../shared/models"), file);
    printf("# target %s\n", file);
    g_ignore_eos = strncmp(file, "stories", 7) != 0;
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "%s loads (%s)", file, err.msg))
        return;
    const vocab_t *v = model_vocab(m);
    const int32_t nv = vocab_n_tokens(v);
    /* a fixed row cost: the draft lengths (hence the counts checked) do
     * not depend on this machine's timings */
    sched_opts_t base = {.n_parallel = 4, .n_ctx = 1024, .max_queue = 8, .batch_tokens = 64, .n_threads = 1,
                         .chan_cap = 64, .spec_row_cost = 0.05};
    sched_opts_t off_o = base;
    off_o.spec_off = true;
    sched_t *off = sched_create(m, &off_o, &err), *on = sched_create(m, &base, &err);
    if (!tap_ok(off && on, "schedulers with and without speculation")) {
        sched_free(off);
        sched_free(on);
        model_free(m);
        return;
    }
    static got_t ref, got;
    static int32_t pred[4][3 * MAXT];
    sched_stats_t st0, st1;

    /* greedy and seeded, every prediction kind */
    const struct {
        float temp;
        uint64_t seed;
        const char *what;
    } modes[] = {{0.0f, 1, "greedy"}, {0.9f, 5, "seeded (T 0.9)"}, {1.3f, 11, "seeded (T 1.3)"}};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        sched_params_t p = params(200, modes[mi].temp, modes[mi].seed);
        tap_ok(run1(off, &p, &ref) == LF_OK && ref.n[0] == 200, "%s reference: 200 tokens", modes[mi].what);
        for (int k = 0; k < PRED_KINDS; k++) {
            sched_params_t q = p;
            q.spec.n_prediction = make_pred(k, ref.toks[0], ref.n[0], nv, pred[0], 99 + (uint64_t)k);
            q.spec.prediction = pred[0];
            sched_stats(on, &st0);
            lf_code_t rc = run1(on, &q, &got);
            sched_stats(on, &st1);
            const uint64_t acc = st1.spec_accepted[SPEC_SRC_PREDICTION] - st0.spec_accepted[SPEC_SRC_PREDICTION];
            const uint64_t dr = st1.spec_drafted[SPEC_SRC_PREDICTION] - st0.spec_drafted[SPEC_SRC_PREDICTION];
            tap_ok(rc == LF_OK && same(&got, 0, &ref, 0), "%s, prediction %s: the same tokens and logprobs (%llu of %llu drafts accepted)",
                   modes[mi].what, pred_name[k], (unsigned long long)acc, (unsigned long long)dr);
            tap_ok(got.done[0].n_pred_accepted == (int32_t)acc && got.done[0].n_pred_rejected == (int32_t)(dr - acc),
                   "%s, prediction %s: the job's counts (%d accepted, %d rejected)", modes[mi].what, pred_name[k],
                   got.done[0].n_pred_accepted, got.done[0].n_pred_rejected);
            if (k == PRED_RIGHT)
                tap_ok(acc >= 170 && dr - acc <= 16, "%s, prediction always right: %llu accepted, %llu rejected",
                       modes[mi].what, (unsigned long long)acc, (unsigned long long)(dr - acc));
            if (k == PRED_EDIT)
                tap_ok(acc >= 140, "%s, an edit in the middle: the rest still accepted (%llu)", modes[mi].what,
                       (unsigned long long)acc);
            if (k == PRED_WRONG)
                tap_ok(dr > 0 && acc <= dr / 4 && dr <= 80,
                       "%s, drafts always wrong: verified and rejected, then probed only (%llu drafted, %llu accepted)",
                       modes[mi].what, (unsigned long long)dr, (unsigned long long)acc);
            if (k == PRED_OTHER)
                tap_ok(dr <= 48 && acc <= dr / 4, "%s, a prediction of other text: chance alignments and probes only (%llu drafted)",
                       modes[mi].what, (unsigned long long)dr);
        }
    }

    /* max_tokens shorter than the prediction; a stop token inside it */
    sched_params_t p = params(200, 0.0f, 1);
    run1(off, &p, &ref);
    sched_params_t q = params(37, 0.0f, 1);
    q.spec.prediction = ref.toks[0];
    q.spec.n_prediction = 200;
    tap_ok(run1(on, &q, &got) == LF_OK && got.n[0] == 37 && !memcmp(got.toks[0], ref.toks[0], 37 * sizeof(int32_t)) &&
               got.done[0].finish == SCHED_FINISH_LENGTH,
           "max_tokens 37 with a 200-token prediction: exactly 37 tokens, LENGTH");
    int32_t stop_at = 23, stop_tok = ref.toks[0][stop_at];
    int32_t first = 0;
    while (ref.toks[0][first] != stop_tok)
        first++;
    q = params(200, 0.0f, 1);
    q.spec.prediction = ref.toks[0];
    q.spec.n_prediction = 200;
    q.stop_token_ids = &stop_tok;
    q.n_stop_token_ids = 1;
    tap_ok(run1(on, &q, &got) == LF_OK && got.n[0] == first + 1 && got.done[0].finish == SCHED_FINISH_STOP &&
               got.done[0].stop_token == stop_tok,
           "a stop token inside the drafts ends the job there (%d tokens)", got.n[0]);
    /* EOS: a logit bias makes it come; the prediction goes on past it */
    p = params(200, 0.8f, 3);
    p.ignore_eos = false;
    sampler_bias_t eos_bias = {vocab_eos(v), 9.0f};
    p.sampling.logit_bias = &eos_bias;
    p.sampling.n_logit_bias = 1;
    for (float b = 9.0f; b < 30.0f; b += 1.0f) {
        eos_bias.bias = b;
        run1(off, &p, &ref);
        if (ref.done[0].finish == SCHED_FINISH_STOP && ref.n[0] < 200)
            break;
    }
    q = p;
    int32_t longer[MAXT];
    memcpy(longer, ref.toks[0], (size_t)ref.n[0] * sizeof(int32_t));
    for (int32_t i = ref.n[0]; i < ref.n[0] + 30; i++)
        longer[i] = 400 + i % 50;
    q.spec.prediction = longer;
    q.spec.n_prediction = ref.n[0] + 30;
    tap_ok(ref.done[0].finish == SCHED_FINISH_STOP && ref.n[0] < 200 && run1(on, &q, &got) == LF_OK && same(&got, 0, &ref, 0),
           "EOS inside the drafts: the same tokens, STOP at EOS (%d tokens, EOS bias %g)", ref.n[0],
           (double)eos_bias.bias);

    /* a grammar: the same constrained tokens with drafts right and wrong */
    grammar_engine_t *ge = grammar_engine_create(v, 0, &err);
    const char *re = "(yes|no), [0-9]{2,3} (cats|dogs)( and [0-9]{1,3} (birds|fish))*\\.";
    grammar_t *gr = ge ? grammar_from_regex(ge, re, strlen(re), NULL, &err) : NULL;
    if (tap_ok(gr != NULL, "a regex grammar")) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            p = params(120, 1.0f, seed);
            p.grammar = gr;
            p.grammar_engine = ge;
            run1(off, &p, &ref);
            bool ok = true;
            for (int k = 0; k < PRED_KINDS; k++) {
                q = p;
                q.spec.n_prediction = make_pred(k, ref.toks[0], ref.n[0], nv, pred[0], seed);
                q.spec.prediction = pred[0];
                ok &= run1(on, &q, &got) == LF_OK && same(&got, 0, &ref, 0);
            }
            tap_ok(ok && ref.done[0].finish == SCHED_FINISH_STOP, "grammar, seed %llu: the same tokens with every prediction kind (%d tokens)",
                   (unsigned long long)seed, ref.n[0]);
        }
        grammar_release(gr);
    }
    grammar_engine_free(ge);

    /* n > 1 (a share group), each choice with its own prediction */
    sched_params_t pn[3];
    const int32_t *ps[4] = {PROMPT, PROMPT, PROMPT, PROMPT};
    size_t ns[4] = {5, 5, 5, 5};
    for (int i = 0; i < 3; i++) {
        pn[i] = params(150, 0.8f, 40 + (uint64_t)i);
        pn[i].share_group = 1;
    }
    run(off, ps, ns, pn, 3, &ref);
    for (int i = 0; i < 3; i++) {
        pn[i].spec.n_prediction = make_pred(i == 1 ? PRED_WRONG : PRED_RIGHT, ref.toks[i], ref.n[i], nv, pred[i], 1);
        pn[i].spec.prediction = pred[i];
    }
    bool ok = run(on, ps, ns, pn, 3, &got) == LF_OK;
    for (int i = 0; i < 3; i++)
        ok &= same(&got, i, &ref, i);
    tap_ok(ok && got.done[0].n_pred_accepted > 100 && got.done[1].n_pred_accepted <= 3,
           "n = 3 with predictions: every choice its tokens (%d, %d, %d accepted)", got.done[0].n_pred_accepted,
           got.done[1].n_pred_accepted, got.done[2].n_pred_accepted);

    /* n-grams (the server's --spec ngram): same tokens, drafts used */
    sched_opts_t ng_o = base;
    ng_o.spec_ngram = true;
    sched_t *ng = sched_create(m, &ng_o, &err);
    ok = ng != NULL;
    for (int mi = 0; mi < 2 && ok; mi++) {
        p = params(300, mi ? 0.7f : 0.0f, 8);
        run1(off, &p, &ref);
        ok &= run1(ng, &p, &got) == LF_OK && same(&got, 0, &ref, 0);
    }
    sched_stats(ng, &st1);
    tap_ok(ok && st1.spec_drafted[SPEC_SRC_NGRAM] > 0, "n-gram drafts: the same tokens, greedy and seeded (%llu of %llu accepted)",
           (unsigned long long)st1.spec_accepted[SPEC_SRC_NGRAM], (unsigned long long)st1.spec_drafted[SPEC_SRC_NGRAM]);
    sched_free(ng);
    /* a draft model: the model itself (greedy drafts always right for
     * greedy jobs), its Q4_0 quantization (mostly right), and one with
     * another vocabulary (refused) */
    for (int di = 0; di < n_drafts; di++) {
        char dpath[1024];
        snprintf(dpath, sizeof dpath, "%s/%s", tap_env_dir("LLM_MODELS_DIR", "../shared/models"), drafts[di]);
        model_t *dm = model_load(dpath, &err);
        sched_opts_t dr_o = base;
        dr_o.draft_model = dm;
        dr_o.spec_draft_cost = 0.1; /* as cheap as a small draft: drafting is exercised */
        sched_t *dr = dm ? sched_create(m, &dr_o, &err) : NULL;
        ok = tap_ok(dr != NULL, "a scheduler with the draft model %s (%s)", drafts[di], dr ? "ok" : err.msg);
        for (int mi = 0; mi < 3 && ok; mi++) {
            p = params(160, mi ? 0.8f : 0.0f, 21 + (uint64_t)mi);
            run1(off, &p, &ref);
            ok &= run1(dr, &p, &got) == LF_OK && same(&got, 0, &ref, 0);
        }
        /* several streams draft together */
        if (ok) {
            sched_params_t p4[4];
            for (int k = 0; k < 4; k++)
                p4[k] = params(120, k % 2 ? 0.0f : 0.9f, 60 + (uint64_t)k);
            const int32_t *ps4[4] = {PROMPT, PROMPT, PROMPT, PROMPT};
            size_t ns4[4] = {5, 5, 5, 5};
            run(off, ps4, ns4, p4, 4, &ref);
            ok &= run(dr, ps4, ns4, p4, 4, &got) == LF_OK;
            for (int k = 0; k < 4; k++)
                ok &= same(&got, k, &ref, k);
        }
        sched_stats_t ds;
        if (dr)
            sched_stats(dr, &ds);
        tap_ok(ok && ds.spec_drafted[SPEC_SRC_DRAFT] > 0 && (di > 0 || ds.spec_accepted[SPEC_SRC_DRAFT] > 200),
               "draft model %s: the same tokens, greedy, seeded and 4 streams together (%llu of %llu drafts accepted)",
               drafts[di], dr ? (unsigned long long)ds.spec_accepted[SPEC_SRC_DRAFT] : 0ull,
               dr ? (unsigned long long)ds.spec_drafted[SPEC_SRC_DRAFT] : 0ull);
        sched_free(dr);
        model_free(dm);
    }
    {
        char dpath[1024];
        snprintf(dpath, sizeof dpath, "%s/%s", tap_env_dir("LLM_MODELS_DIR", "../shared/models"), foreign);
        model_t *dm = model_load(dpath, &err);
        sched_opts_t dr_o = base;
        dr_o.draft_model = dm;
        lf_err_t derr = {0};
        sched_t *dr = dm ? sched_create(m, &dr_o, &derr) : NULL;
        tap_ok(dm && !dr && derr.code == LF_ERR_INVALID && strstr(derr.msg, "cannot draft"),
               "a draft model with another vocabulary is refused: %s", dm ? derr.msg : err.msg);
        sched_free(dr);
        model_free(dm);
    }

    /* the model's own MTP block as the draft model (--spec mtp) */
    {
        sched_opts_t mo = base;
        mo.spec_mtp = true;
        mo.spec_draft_cost = 0.05; /* cheap enough to be probed often */
        lf_err_t merr = {0};
        sched_t *mt = sched_create(m, &mo, &merr);
        if (model_hparams(m)->n_nextn == 0) {
            tap_ok(!mt && merr.code == LF_ERR_UNSUPPORTED, "--spec mtp without an MTP block: refused (%s)", merr.msg);
        } else {
            ok = tap_ok(mt != NULL, "a scheduler drafting with the MTP block (%s)", mt ? "ok" : merr.msg);
            for (int mi = 0; mi < 2 && ok; mi++) {
                p = params(160, mi ? 0.8f : 0.0f, 31 + (uint64_t)mi);
                run1(off, &p, &ref);
                ok &= run1(mt, &p, &got) == LF_OK && same(&got, 0, &ref, 0);
            }
            if (ok) {
                sched_params_t p4[4];
                for (int k = 0; k < 4; k++)
                    p4[k] = params(100, k % 2 ? 0.0f : 0.9f, 70 + (uint64_t)k);
                const int32_t *ps4[4] = {PROMPT, PROMPT, PROMPT, PROMPT};
                size_t ns4[4] = {5, 5, 5, 5};
                run(off, ps4, ns4, p4, 4, &ref);
                ok &= run(mt, ps4, ns4, p4, 4, &got) == LF_OK;
                for (int k = 0; k < 4; k++)
                    ok &= same(&got, k, &ref, k);
            }
            sched_stats_t ms;
            if (mt)
                sched_stats(mt, &ms);
            tap_ok(ok && ms.spec_drafted[SPEC_SRC_DRAFT] > 0,
                   "MTP drafts: the same tokens, greedy, seeded and 4 streams (%llu of %llu accepted)",
                   mt ? (unsigned long long)ms.spec_accepted[SPEC_SRC_DRAFT] : 0ull,
                   mt ? (unsigned long long)ms.spec_drafted[SPEC_SRC_DRAFT] : 0ull);
            sched_opts_t both = mo;
            both.draft_model = m;
            lf_err_t berr = {0};
            sched_t *bs = sched_create(m, &both, &berr);
            tap_ok(!bs && berr.code == LF_ERR_INVALID, "a draft model and the MTP block together: refused (%s)", berr.msg);
            sched_free(bs);
        }
        sched_free(mt);
    }

    sched_free(on);
    sched_free(off);

    /* four concurrent streams with predictions under a KV budget that
     * forces preemption: each gives its tokens alone */
    sched_opts_t small = base;
    small.kv_bytes = kv_bytes;
    small.spec_off = true;
    off = sched_create(m, &small, &err);
    small.spec_off = false;
    on = sched_create(m, &small, &err);
    int32_t pk[4][4];
    sched_params_t pp[4];
    static got_t alone[4];
    for (int k = 0; k < 4; k++) {
        pk[k][0] = 1, pk[k][1] = 350 + k, pk[k][2] = 360 + k, pk[k][3] = 370;
        ps[k] = pk[k];
        ns[k] = 4;
        pp[k] = params(640, k % 2 ? 0.8f : 0.0f, 7 + (uint64_t)k);
        run(off, &ps[k], &ns[k], &pp[k], 1, &alone[k]);
        pp[k].spec.n_prediction = make_pred(PRED_EDIT, alone[k].toks[0], alone[k].n[0], nv, pred[k], (uint64_t)k);
        pp[k].spec.prediction = pred[k];
    }
    ok = run(on, ps, ns, pp, 4, &got) == LF_OK;
    for (int k = 0; k < 4; k++)
        ok &= same(&got, k, &alone[k], 0);
    sched_stats(on, &st1);
    tap_ok(ok && st1.preemptions > 0, "4 streams with predictions, %llu preemptions: each its tokens alone (%llu drafts accepted)",
           (unsigned long long)st1.preemptions, (unsigned long long)st1.spec_accepted[SPEC_SRC_PREDICTION]);
    tap_ok(st1.running == 0 && st1.kv_used_tokens <= st1.kv_cap_tokens, "all done, KV within budget (%llu positions)",
           (unsigned long long)st1.kv_cap_tokens);

    /* a prediction with an id outside the vocabulary is refused */
    int32_t bad = nv + 5;
    q = params(5, 0.0f, 1);
    q.spec.prediction = &bad;
    q.spec.n_prediction = 1;
    sched_chan_t *ch = sched_chan_create(on);
    tap_ok(sched_submit(on, ch, ps, ns, &q, 1, &err) == LF_ERR_INVALID && strstr(err.msg, "prediction"),
           "a prediction token outside the vocabulary: LF_ERR_INVALID (%s)", err.msg);
    sched_chan_free(ch);
    sched_stats(on, &st1);
    if (st1.state_per_seq_bytes)
        tap_ok(st1.spec_refed > 0, "rejected drafts: the recurrent state went back to its checkpoint (%llu positions again)",
               (unsigned long long)st1.spec_refed);
    sched_free(on);
    sched_free(off);
    model_free(m);
}

int main(void)
{
    const char *stories[] = {"stories260K.gguf", "stories260K-q4_0.gguf"};
    test_model("stories260K.gguf", stories, 2, "tinyqwen2-q8_0.gguf", 1 << 20);
    const char *qwen35[] = {"tinyqwen35-f32.gguf", "tinyqwen35-q8_0.gguf"};
    test_model("tinyqwen35-f32.gguf", qwen35, 2, "tinyqwen2-q8_0.gguf", 1 << 20);
    const char *lfm2[] = {"tinylfm2-f32.gguf"};
    test_model("tinylfm2-f32.gguf", lfm2, 1, "tinyqwen2-q8_0.gguf", 192 << 10);
    return tap_done();
}
