/* test_request_tgi.c - the TGI / LMI text-generation body: every parameter
 * parses to the right generation control, every bad or refused value is an
 * error with TGI's status naming the right parameter. */
#include "server/request/request_tgi.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define T TGI_DIALECT_TGI
#define L TGI_DIALECT_LMI

/* ------------------------------------------------------------- errors */

typedef struct {
    const char *name;
    tgi_dialect_t d;
    const char *body;
    int status;         /* expected status */
    const char *param;  /* expected param */
} ecase_t;

static const ecase_t ecases[] = {
    {"not JSON", T, "{\"inputs\":", 400, ""},
    {"not an object", T, "[1]", 400, ""},
    {"inputs missing", T, "{\"parameters\":{}}", 422, "inputs"},
    {"inputs null", T, "{\"inputs\":null}", 422, "inputs"},
    {"inputs empty", T, "{\"inputs\":\"\"}", 422, "inputs"},
    {"inputs number", T, "{\"inputs\":5}", 422, "inputs"},
    {"TGI: inputs list", T, "{\"inputs\":[\"a\"]}", 422, "inputs"},
    {"LMI: inputs empty list", L, "{\"inputs\":[]}", 422, "inputs"},
    {"LMI: inputs list with a number", L, "{\"inputs\":[\"a\",1]}", 422, "inputs"},
    {"LMI: inputs list with an empty string", L, "{\"inputs\":[\"a\",\"\"]}", 422, "inputs"},
    {"LMI: 33 inputs", L,
     "{\"inputs\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
     "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]}",
     422, "inputs"},
    {"LMI: list with stream", L, "{\"inputs\":[\"a\"],\"stream\":true}", 422, "stream"},
    {"parameters array", T, "{\"inputs\":\"a\",\"parameters\":[]}", 422, "parameters"},
    {"max_new_tokens 0", T, "{\"inputs\":\"a\",\"parameters\":{\"max_new_tokens\":0}}", 422, "max_new_tokens"},
    {"max_new_tokens -3", T, "{\"inputs\":\"a\",\"parameters\":{\"max_new_tokens\":-3}}", 422, "max_new_tokens"},
    {"max_new_tokens 1.5", T, "{\"inputs\":\"a\",\"parameters\":{\"max_new_tokens\":1.5}}", 422, "max_new_tokens"},
    {"temperature -1", T, "{\"inputs\":\"a\",\"parameters\":{\"temperature\":-1}}", 422, "temperature"},
    {"temperature 2.5", T, "{\"inputs\":\"a\",\"parameters\":{\"temperature\":2.5}}", 422, "temperature"},
    {"temperature string", T, "{\"inputs\":\"a\",\"parameters\":{\"temperature\":\"hot\"}}", 422, "temperature"},
    {"top_p 0", T, "{\"inputs\":\"a\",\"parameters\":{\"top_p\":0}}", 422, "top_p"},
    {"top_p 1.5", T, "{\"inputs\":\"a\",\"parameters\":{\"top_p\":1.5}}", 422, "top_p"},
    {"top_k -2", T, "{\"inputs\":\"a\",\"parameters\":{\"top_k\":-2}}", 422, "top_k"},
    {"top_k 2.5", T, "{\"inputs\":\"a\",\"parameters\":{\"top_k\":2.5}}", 422, "top_k"},
    {"typical_p 0", T, "{\"inputs\":\"a\",\"parameters\":{\"typical_p\":0}}", 422, "typical_p"},
    {"typical_p 1.2", T, "{\"inputs\":\"a\",\"parameters\":{\"typical_p\":1.2}}", 422, "typical_p"},
    {"min_p 2", L, "{\"inputs\":\"a\",\"parameters\":{\"min_p\":2}}", 422, "min_p"},
    {"repetition_penalty 0", T, "{\"inputs\":\"a\",\"parameters\":{\"repetition_penalty\":0}}", 422,
     "repetition_penalty"},
    {"frequency_penalty 3", T, "{\"inputs\":\"a\",\"parameters\":{\"frequency_penalty\":3}}", 422,
     "frequency_penalty"},
    {"presence_penalty -3", L, "{\"inputs\":\"a\",\"parameters\":{\"presence_penalty\":-3}}", 422,
     "presence_penalty"},
    {"do_sample string", T, "{\"inputs\":\"a\",\"parameters\":{\"do_sample\":\"yes\"}}", 422, "do_sample"},
    {"seed negative", T, "{\"inputs\":\"a\",\"parameters\":{\"seed\":-1}}", 422, "seed"},
    {"seed float", T, "{\"inputs\":\"a\",\"parameters\":{\"seed\":1.5}}", 422, "seed"},
    {"stop number", T, "{\"inputs\":\"a\",\"parameters\":{\"stop\":5}}", 422, "stop"},
    {"stop empty string", T, "{\"inputs\":\"a\",\"parameters\":{\"stop\":[\"\"]}}", 422, "stop"},
    {"stop_sequences with a number", L, "{\"inputs\":\"a\",\"parameters\":{\"stop_sequences\":[\"x\",1]}}", 422,
     "stop_sequences"},
    {"stop_token_ids negative", L, "{\"inputs\":\"a\",\"parameters\":{\"stop_token_ids\":[-1]}}", 422,
     "stop_token_ids"},
    {"min_tokens above max_new_tokens", L,
     "{\"inputs\":\"a\",\"parameters\":{\"min_tokens\":5,\"max_new_tokens\":2}}", 422, "min_tokens"},
    {"return_full_text string", T, "{\"inputs\":\"a\",\"parameters\":{\"return_full_text\":\"y\"}}", 422,
     "return_full_text"},
    {"details number", T, "{\"inputs\":\"a\",\"parameters\":{\"details\":1}}", 422, "details"},
    {"top_n_tokens 21", T, "{\"inputs\":\"a\",\"parameters\":{\"top_n_tokens\":21}}", 422, "top_n_tokens"},
    {"top_n_tokens -1", T, "{\"inputs\":\"a\",\"parameters\":{\"top_n_tokens\":-1}}", 422, "top_n_tokens"},
    {"truncate 0", T, "{\"inputs\":\"a\",\"parameters\":{\"truncate\":0}}", 422, "truncate"},
    {"watermark true (refused)", T, "{\"inputs\":\"a\",\"parameters\":{\"watermark\":true}}", 422, "watermark"},
    {"watermark string", T, "{\"inputs\":\"a\",\"parameters\":{\"watermark\":\"no\"}}", 422, "watermark"},
    {"best_of 2 (refused)", T, "{\"inputs\":\"a\",\"parameters\":{\"best_of\":2}}", 422, "best_of"},
    {"n 2 (refused)", L, "{\"inputs\":\"a\",\"parameters\":{\"n\":2}}", 422, "n"},
    {"num_beams 4 (refused)", L, "{\"inputs\":\"a\",\"parameters\":{\"num_beams\":4}}", 422, "num_beams"},
    {"adapter_id (refused)", T, "{\"inputs\":\"a\",\"parameters\":{\"adapter_id\":\"lora\"}}", 422, "adapter_id"},
    {"grammar without value", T, "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json\"}}}", 422,
     "grammar"},
    {"grammar unknown type", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"gbnf\",\"value\":\"x\"}}}", 422, "grammar"},
    {"grammar regex not a string", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"regex\",\"value\":{}}}}", 422, "grammar"},
    {"grammar json text that is not JSON", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json\",\"value\":\"{nope\"}}}", 422, "grammar"},
    {"grammar json_schema without schema", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json_schema\",\"value\":{}}}}", 422, "grammar"},
    {"decoder_input_details with stream", L,
     "{\"inputs\":\"a\",\"stream\":true,\"parameters\":{\"decoder_input_details\":true}}", 422,
     "decoder_input_details"},
    {"stream string", L, "{\"inputs\":\"a\",\"stream\":\"yes\"}", 422, "stream"},
};

static void test_errors(void)
{
    for (size_t i = 0; i < sizeof ecases / sizeof ecases[0]; i++) {
        const ecase_t *c = &ecases[i];
        tgi_req_t q;
        req_err_t e = {0};
        int rc = req_tgi_parse(c->body, strlen(c->body), c->d, &q, &e);
        bool ok = rc < 0 && e.status == c->status && !strcmp(e.param, c->param) && e.msg[0];
        tap_ok(ok, "%s -> %d naming '%s' (got %d '%s': %s)", c->name, c->status, c->param, e.status, e.param,
               e.msg);
        if (rc == 0)
            req_tgi_free(&q);
    }
}

/* ------------------------------------------------------------- values */

typedef struct {
    const char *name;
    tgi_dialect_t d;
    const char *body;
    bool (*check)(const tgi_req_t *q);
} vcase_t;

static bool feq(float a, float b)
{
    return fabsf(a - b) < 1e-6f;
}

static bool v_defaults_tgi(const tgi_req_t *q)
{
    const req_sampling_t *s = &q->gen.samp;
    return q->n_inputs == 1 && !strcmp(q->inputs[0], "hi") && !q->inputs_list && !q->sampling &&
           q->gen.temperature == 0.0f && (s->has & REQ_HAS_TEMPERATURE) && q->gen.max_tokens == -1 &&
           !q->gen.has_seed && !q->details && q->return_full_text == -1 && q->top_n_tokens == 0 &&
           q->truncate == 0 && s->include_stop_str_in_output && !s->logprobs && s->prompt_logprobs == -1 &&
           s->n == 1 && s->skip_special_tokens && q->grammar.kind == TGI_GRAMMAR_NONE && !q->gen.stream;
}
static bool v_defaults_lmi(const tgi_req_t *q)
{
    return !q->gen.samp.include_stop_str_in_output && !q->sampling && q->gen.max_tokens == -1;
}
static bool v_do_sample_false_wins(const tgi_req_t *q)
{
    return !q->sampling && q->gen.temperature == 0.0f;
}
static bool v_temperature_samples(const tgi_req_t *q)
{
    return q->sampling && feq(q->gen.temperature, 0.7f) && (q->gen.samp.has & REQ_HAS_TEMPERATURE);
}
static bool v_top_k_samples(const tgi_req_t *q)
{
    return q->sampling && q->gen.samp.top_k == 5 && !(q->gen.samp.has & REQ_HAS_TEMPERATURE) &&
           (q->gen.samp.has & REQ_HAS_TOP_K);
}
static bool v_top_p_samples(const tgi_req_t *q)
{
    return q->sampling && feq(q->gen.samp.top_p, 0.9f) && (q->gen.samp.has & REQ_HAS_TOP_P);
}
static bool v_typical_samples(const tgi_req_t *q)
{
    return q->sampling && feq(q->gen.samp.typical_p, 0.5f);
}
static bool v_do_sample_true(const tgi_req_t *q)
{
    return q->sampling && !(q->gen.samp.has & REQ_HAS_TEMPERATURE) && q->gen.temperature == 1.0f;
}
static bool v_penalties(const tgi_req_t *q)
{
    const req_sampling_t *s = &q->gen.samp;
    return !q->sampling && feq(s->repetition_penalty, 1.2f) && (s->has & REQ_HAS_REP_PENALTY) &&
           feq(s->frequency_penalty, 0.5f) && feq(s->presence_penalty, -0.5f) && feq(s->min_p, 0.1f) &&
           (s->has & REQ_HAS_MIN_P);
}
static bool v_seed(const tgi_req_t *q)
{
    return q->gen.has_seed && q->gen.seed == 42 && q->sampling;
}
static bool v_seed_u64(const tgi_req_t *q)
{
    return q->gen.has_seed && q->gen.seed == 18446744073709551615ull;
}
static bool v_max_new(const tgi_req_t *q)
{
    return q->gen.max_tokens == 7 && (q->gen.samp.has & REQ_HAS_MAX_TOKENS);
}
static bool v_stops_merged(const tgi_req_t *q)
{
    const req_sampling_t *s = &q->gen.samp;
    return s->n_stop == 3 && !strcmp(s->stop[0], "a") && !strcmp(s->stop[1], "b") && !strcmp(s->stop[2], "c");
}
static bool v_stop_string(const tgi_req_t *q)
{
    return q->gen.samp.n_stop == 1 && !strcmp(q->gen.samp.stop[0], "x y");
}
static bool v_details(const tgi_req_t *q)
{
    return q->details && !q->decoder_input_details && q->gen.samp.prompt_logprobs == -1 && q->gen.samp.logprobs;
}
static bool v_decoder_input_details(const tgi_req_t *q)
{
    return q->details && q->decoder_input_details && q->gen.samp.prompt_logprobs == 0;
}
static bool v_top_n(const tgi_req_t *q)
{
    return q->top_n_tokens == 3 && q->gen.samp.top_logprobs == 3 && q->gen.samp.logprobs;
}
static bool v_misc(const tgi_req_t *q)
{
    return q->return_full_text == 1 && q->truncate == 9 && q->gen.samp.ignore_eos;
}
static bool v_ignore_eos_token(const tgi_req_t *q)
{
    return q->gen.samp.ignore_eos;
}
static bool v_lmi_extras(const tgi_req_t *q)
{
    const req_sampling_t *s = &q->gen.samp;
    return s->min_tokens == 2 && s->n_stop_token_ids == 2 && s->stop_token_ids[1] == 13 &&
           s->include_stop_str_in_output;
}
static bool v_lmi_list(const tgi_req_t *q)
{
    return q->inputs_list && q->n_inputs == 2 && !strcmp(q->inputs[1], "b");
}
static bool v_stream(const tgi_req_t *q)
{
    return q->stream && q->gen.stream && q->gen.samp.logprobs; /* every event carries its logprob */
}
static bool v_grammar_json(const tgi_req_t *q)
{
    return q->grammar.kind == TGI_GRAMMAR_JSON && q->grammar.value;
}
static bool v_grammar_json_text(const tgi_req_t *q)
{
    return q->grammar.kind == TGI_GRAMMAR_JSON && q->grammar.value;
}
static bool v_grammar_regex(const tgi_req_t *q)
{
    return q->grammar.kind == TGI_GRAMMAR_REGEX;
}
static bool v_grammar_json_schema(const tgi_req_t *q)
{
    return q->grammar.kind == TGI_GRAMMAR_JSON_SCHEMA;
}
static bool v_neutral(const tgi_req_t *q)
{
    return !q->sampling && q->grammar.kind == TGI_GRAMMAR_NONE;
}

static const vcase_t vcases[] = {
    {"TGI defaults: greedy, stop kept, logprobs on", T, "{\"inputs\":\"hi\"}", v_defaults_tgi},
    {"TGI defaults with parameters {}", T, "{\"inputs\":\"hi\",\"parameters\":{}}", v_defaults_tgi},
    {"LMI defaults: greedy, stop cut", L, "{\"inputs\":\"hi\",\"parameters\":null}", v_defaults_lmi},
    {"do_sample false wins over temperature", T,
     "{\"inputs\":\"a\",\"parameters\":{\"do_sample\":false,\"temperature\":0.7,\"top_k\":5}}",
     v_do_sample_false_wins},
    {"temperature alone samples", T, "{\"inputs\":\"a\",\"parameters\":{\"temperature\":0.7}}",
     v_temperature_samples},
    {"top_k alone samples", T, "{\"inputs\":\"a\",\"parameters\":{\"top_k\":5}}", v_top_k_samples},
    {"top_p alone samples", T, "{\"inputs\":\"a\",\"parameters\":{\"top_p\":0.9}}", v_top_p_samples},
    {"typical_p alone samples", T, "{\"inputs\":\"a\",\"parameters\":{\"typical_p\":0.5}}", v_typical_samples},
    {"do_sample true without temperature", L, "{\"inputs\":\"a\",\"parameters\":{\"do_sample\":true}}",
     v_do_sample_true},
    {"penalties and min_p", L,
     "{\"inputs\":\"a\",\"parameters\":{\"repetition_penalty\":1.2,\"frequency_penalty\":0.5,"
     "\"presence_penalty\":-0.5,\"min_p\":0.1}}",
     v_penalties},
    {"seed", T, "{\"inputs\":\"a\",\"parameters\":{\"seed\":42,\"do_sample\":true}}", v_seed},
    {"seed 2^64-1", T, "{\"inputs\":\"a\",\"parameters\":{\"seed\":18446744073709551615}}", v_seed_u64},
    {"max_new_tokens", T, "{\"inputs\":\"a\",\"parameters\":{\"max_new_tokens\":7}}", v_max_new},
    {"stop and stop_sequences merge", L,
     "{\"inputs\":\"a\",\"parameters\":{\"stop\":[\"a\",\"b\"],\"stop_sequences\":[\"c\"]}}", v_stops_merged},
    {"stop as one string", T, "{\"inputs\":\"a\",\"parameters\":{\"stop\":\"x y\"}}", v_stop_string},
    {"details", T, "{\"inputs\":\"a\",\"parameters\":{\"details\":true}}", v_details},
    {"decoder_input_details implies details", T,
     "{\"inputs\":\"a\",\"parameters\":{\"decoder_input_details\":true}}", v_decoder_input_details},
    {"top_n_tokens", T, "{\"inputs\":\"a\",\"parameters\":{\"top_n_tokens\":3,\"details\":true}}", v_top_n},
    {"return_full_text, truncate, ignore_eos", L,
     "{\"inputs\":\"a\",\"parameters\":{\"return_full_text\":true,\"truncate\":9,\"ignore_eos\":true}}", v_misc},
    {"ignore_eos_token (LMI)", L, "{\"inputs\":\"a\",\"parameters\":{\"ignore_eos_token\":true}}",
     v_ignore_eos_token},
    {"vLLM extras through LMI", L,
     "{\"inputs\":\"a\",\"parameters\":{\"min_tokens\":2,\"stop_token_ids\":[2,13],"
     "\"include_stop_str_in_output\":true}}",
     v_lmi_extras},
    {"LMI list of inputs", L, "{\"inputs\":[\"a\",\"b\"]}", v_lmi_list},
    {"stream in the body", L, "{\"inputs\":\"a\",\"stream\":true}", v_stream},
    {"grammar json object kept", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json\",\"value\":{\"properties\":{}}}}}",
     v_grammar_json},
    {"grammar json as text", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json_object\",\"value\":\"{\\\"type\\\":"
     "\\\"object\\\"}\"}}}",
     v_grammar_json_text},
    {"grammar regex", T, "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"regex\",\"value\":\"a+\"}}}",
     v_grammar_regex},
    {"grammar json_schema", T,
     "{\"inputs\":\"a\",\"parameters\":{\"grammar\":{\"type\":\"json_schema\",\"value\":{\"schema\":{}}}}}",
     v_grammar_json_schema},
    {"neutral values: watermark false, best_of 1, grammar null, adapter_id null, unknown ignored", T,
     "{\"inputs\":\"a\",\"parameters\":{\"watermark\":false,\"best_of\":1,\"grammar\":null,\"adapter_id\":null,"
     "\"future_field\":3},\"model\":\"x\"}",
     v_neutral},
};

static void test_values(void)
{
    for (size_t i = 0; i < sizeof vcases / sizeof vcases[0]; i++) {
        const vcase_t *c = &vcases[i];
        tgi_req_t q;
        req_err_t e = {0};
        int rc = req_tgi_parse(c->body, strlen(c->body), c->d, &q, &e);
        tap_ok(rc == 0 && c->check(&q), "%s%s%s", c->name, rc ? ": " : "", rc ? e.msg : "");
        if (rc == 0)
            req_tgi_free(&q);
    }
}

/* The endpoint decides streaming after parsing. */
static void test_set_stream(void)
{
    const char *b = "{\"inputs\":\"a\",\"parameters\":{\"decoder_input_details\":true}}";
    tgi_req_t q;
    req_err_t e = {0};
    int rc = req_tgi_parse(b, strlen(b), T, &q, &e);
    tap_ok(rc == 0 && req_tgi_set_stream(&q, false, &e) == 0 && !q.gen.stream,
           "decoder_input_details without streaming is fine");
    tap_ok(rc == 0 && q.gen.samp.logprobs, "details (implied) asks for token logprobs");
    tap_ok(rc == 0 && req_tgi_set_stream(&q, true, &e) < 0 && e.status == 422 &&
               !strcmp(e.param, "decoder_input_details"),
           "decoder_input_details on /generate_stream -> 422");
    if (rc == 0)
        req_tgi_free(&q);
    tgi_req_t z;
    memset(&z, 0, sizeof z);
    req_tgi_free(&z);
    tap_ok(1, "req_tgi_free accepts a zeroed request");
}

/* /v1/completions with TGI parameters at the top level (what
 * @huggingface/inference's textGeneration sends to a custom endpoint). */
typedef struct {
    const char *name;
    const char *fields;
    const char *param; /* NULL: parses */
    bool (*check)(const cmpl_req_t *q);
} fcase_t;

static bool f_greedy(const cmpl_req_t *q)
{
    return q->gen.temperature == 0.0f && (q->gen.samp.has & REQ_HAS_TEMPERATURE);
}
static bool f_sample(const cmpl_req_t *q)
{
    return feq(q->gen.temperature, 0.5f);
}
static bool f_typical(const cmpl_req_t *q)
{
    return feq(q->gen.samp.typical_p, 0.3f);
}
static bool f_echo(const cmpl_req_t *q)
{
    return q->gen.samp.echo;
}
static bool f_plain(const cmpl_req_t *q)
{
    return !q->gen.samp.echo && q->gen.temperature == 1.0f && q->gen.samp.typical_p == 0.0f;
}

static const fcase_t fcases[] = {
    {"do_sample false -> greedy", "\"do_sample\":false,\"temperature\":0.9", NULL, f_greedy},
    {"do_sample true keeps temperature", "\"do_sample\":true,\"temperature\":0.5", NULL, f_sample},
    {"typical_p", "\"typical_p\":0.3", NULL, f_typical},
    {"return_full_text -> echo", "\"return_full_text\":true", NULL, f_echo},
    {"details, decoder_input_details, top_n_tokens, truncate ignored",
     "\"details\":true,\"decoder_input_details\":true,\"top_n_tokens\":3,\"truncate\":4", NULL, f_plain},
    {"watermark true refused", "\"watermark\":true", "watermark", NULL},
    {"grammar refused", "\"grammar\":{\"type\":\"regex\",\"value\":\"a\"}", "grammar", NULL},
    {"typical_p 0 refused", "\"typical_p\":0", "typical_p", NULL},
    {"do_sample string refused", "\"do_sample\":\"no\"", "do_sample", NULL},
};

static void test_flat(void)
{
    for (size_t i = 0; i < sizeof fcases / sizeof fcases[0]; i++) {
        const fcase_t *c = &fcases[i];
        char body[512];
        snprintf(body, sizeof body, "{\"prompt\":\"x\",%s}", c->fields);
        cmpl_req_t q;
        req_err_t e = {0};
        int rc = req_cmpl_parse(body, strlen(body), &q, &e);
        bool ok = c->param ? rc < 0 && e.status == 400 && !strcmp(e.param, c->param)
                           : rc == 0 && c->check(&q);
        tap_ok(ok, "/v1/completions with flattened TGI fields: %s (%s)", c->name, rc ? e.msg : "ok");
        if (rc == 0)
            req_cmpl_free(&q);
    }
}

int main(void)
{
    test_errors();
    test_values();
    test_set_stream();
    test_flat();
    return tap_done();
}
