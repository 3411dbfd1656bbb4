/* test_sched_grammar.c - constrained jobs in the scheduler on the REAL
 * engine (stories260K.gguf): every token a grammar job emits keeps its text
 * valid, the job ends with STOP as soon as the grammar is complete, a
 * constrained job and a free one share batches, and a grammar whose only
 * continuation is the end still stops under ignore_eos. */
#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"
#include "grammar/grammar.h"
#include "tap.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char text[2][1024];
    size_t len[2];
    int32_t n[2];
    sched_event_t done[2];
} got_t;

static void drain(const vocab_t *v, sched_chan_t *ch, got_t *g)
{
    memset(g, 0, sizeof *g);
    sched_event_t ev;
    while (sched_chan_next(ch, &ev, 30000) == 1) {
        int32_t i = ev.index;
        if (i < 0 || i >= 2)
            continue;
        if (ev.kind == SCHED_EV_TOKEN) {
            g->n[i]++;
            int k = vocab_token_to_piece(v, ev.token, false, g->text[i] + g->len[i], sizeof g->text[i] - g->len[i] - 1);
            if (k > 0 && g->len[i] + (size_t)k < sizeof g->text[i])
                g->len[i] += (size_t)k;
        } else if (ev.kind == SCHED_EV_DONE) {
            g->done[i] = ev;
        } else if (ev.kind == SCHED_EV_PROMPT) {
            free(ev.prompt_lp);
        }
    }
}

static bool full_match(const char *re, const char *text)
{
    regex_t r;
    if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
        return false;
    bool m = regexec(&r, text, 0, NULL, 0) == 0;
    regfree(&r);
    return m;
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "load %s", path))
        return tap_done();
    const vocab_t *v = model_vocab(m);
    grammar_engine_t *ge = grammar_engine_create(v, 0, &err);
    tap_ok(ge != NULL, "grammar engine for the model's vocabulary");
    sched_opts_t o = {.n_parallel = 2, .n_ctx = 256, .max_queue = 8, .batch_tokens = 64, .n_threads = 1};
    sched_t *s = sched_create(m, &o, &err);
    int32_t prompt[] = {1, 403, 407, 261, 378};
    const int32_t *ps[2] = {prompt, prompt};
    size_t ns[2] = {5, 5};

    /* a regex job beside a free job, sampling at temperature 1 */
    const char *re = "(yes|no), [0-9]{2,3} (cats|dogs)\\.";
    grammar_t *g = grammar_from_regex(ge, re, strlen(re), NULL, &err);
    tap_ok(g != NULL, "regex compiles");
    sched_params_t p[2];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 2; i++) {
        sampler_params_default(&p[i].sampling);
        p[i].sampling.has_seed = true;
        p[i].sampling.seed = 42 + (uint64_t)i;
        p[i].max_tokens = 60;
    }
    p[0].grammar = g;
    p[0].grammar_engine = ge;
    for (int rep = 0; rep < 3; rep++) {
        p[0].sampling.seed = 100 + (uint64_t)rep;
        sched_chan_t *ch = sched_chan_create(s);
        tap_ok(sched_submit(s, ch, ps, ns, p, 2, &err) == LF_OK, "submit a constrained and a free job (%d)", rep);
        got_t got;
        drain(v, ch, &got);
        sched_chan_free(ch);
        tap_ok(got.done[0].finish == SCHED_FINISH_STOP && full_match("^(yes|no), [0-9]{2,3} (cats|dogs)\\.$", got.text[0]),
               "constrained job: \"%s\" matches and ends with STOP at once (%d tokens)", got.text[0], got.n[0]);
        tap_ok(got.done[1].finish == SCHED_FINISH_LENGTH && got.n[1] == 60, "the free job beside it runs to max_tokens");
    }
    grammar_release(g);

    /* ignore_eos: a complete grammar still stops; JSON schema job */
    const char *schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"enum\":[1,2]}},\"required\":[\"n\"],"
                         "\"additionalProperties\":false}";
    grammar_t *gj = grammar_from_json_schema(ge, schema, strlen(schema), NULL, &err);
    tap_ok(gj != NULL, "schema compiles");
    p[0].grammar = gj;
    p[0].ignore_eos = true;
    p[0].sampling.min_tokens = 50;
    sched_chan_t *ch = sched_chan_create(s);
    tap_ok(sched_submit(s, ch, ps, ns, p, 1, &err) == LF_OK, "submit a schema job with ignore_eos and min_tokens");
    got_t got;
    drain(v, ch, &got);
    sched_chan_free(ch);
    tap_ok(got.done[0].finish == SCHED_FINISH_STOP && full_match("^ ?\\{[ \n\t]*\"n\"[ \n\t]*:[ \n\t]*[12][ \n\t]*\\} ?$",
                                                                  got.text[0]),
           "the complete object ends the job with STOP: \"%s\"", got.text[0]);
    grammar_release(gj);
    sched_free(s);
    grammar_engine_free(ge);
    model_free(m);
    return tap_done();
}
