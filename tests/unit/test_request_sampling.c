/* test_request_sampling.c - decoding controls: every field parses to the
 * right value, every bad value is a 400 naming the right `param`. */
#include "server/request/request.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    bool chat;
    const char *fields; /* JSON members added to a minimal valid body */
    const char *param;  /* NULL: must parse; else the 400's param */
} case_t;

static const case_t cases[] = {
    {"top_p 0.5", true, "\"top_p\":0.5", NULL},
    {"top_p 0", true, "\"top_p\":0", "top_p"},
    {"top_p 1.01", true, "\"top_p\":1.01", "top_p"},
    {"top_p string", true, "\"top_p\":\"x\"", "top_p"},
    {"top_k -1", true, "\"top_k\":-1", NULL},
    {"top_k 0", true, "\"top_k\":0", NULL},
    {"top_k -2", true, "\"top_k\":-2", "top_k"},
    {"top_k float", true, "\"top_k\":2.5", "top_k"},
    {"min_p 1", true, "\"min_p\":1", NULL},
    {"min_p -0.1", true, "\"min_p\":-0.1", "min_p"},
    {"frequency_penalty 2", true, "\"frequency_penalty\":2", NULL},
    {"frequency_penalty 2.1", true, "\"frequency_penalty\":2.1", "frequency_penalty"},
    {"presence_penalty -2.5", true, "\"presence_penalty\":-2.5", "presence_penalty"},
    {"repetition_penalty 0", true, "\"repetition_penalty\":0", "repetition_penalty"},
    {"repetition_penalty 1.3", true, "\"repetition_penalty\":1.3", NULL},
    {"logit_bias ok", true, "\"logit_bias\":{\"5\":-100,\"7\":100}", NULL},
    {"logit_bias 101", true, "\"logit_bias\":{\"5\":101}", "logit_bias"},
    {"logit_bias bad key", true, "\"logit_bias\":{\"x\":1}", "logit_bias"},
    {"logit_bias array", true, "\"logit_bias\":[1]", "logit_bias"},
    {"stop string", true, "\"stop\":\"a\"", NULL},
    {"stop 6 strings", true, "\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]", NULL},
    {"stop empty string", true, "\"stop\":[\"\"]", "stop"},
    {"stop object", true, "\"stop\":{}", "stop"},
    {"stop_token_ids ok", true, "\"stop_token_ids\":[1,2]", NULL},
    {"stop_token_ids negative", true, "\"stop_token_ids\":[-1]", "stop_token_ids"},
    {"stop_token_ids string", true, "\"stop_token_ids\":\"1\"", "stop_token_ids"},
    {"ignore_eos int", true, "\"ignore_eos\":1", "ignore_eos"},
    {"min_tokens -1", true, "\"min_tokens\":-1", "min_tokens"},
    {"min_tokens > max_tokens", true, "\"min_tokens\":5,\"max_tokens\":3", "min_tokens"},
    {"min_tokens <= max_tokens", true, "\"min_tokens\":3,\"max_tokens\":3", NULL},
    {"skip_special_tokens str", true, "\"skip_special_tokens\":\"no\"", "skip_special_tokens"},
    {"spaces_between bool", true, "\"spaces_between_special_tokens\":false", NULL},
    {"include_stop_str_in_output", true, "\"include_stop_str_in_output\":true", NULL},
    {"n 3", true, "\"n\":3", NULL},
    {"n 0", true, "\"n\":0", "n"},
    {"best_of = n", false, "\"n\":2,\"best_of\":2", NULL},
    {"best_of > n", false, "\"best_of\":3", "best_of"},
    {"suffix", false, "\"suffix\":\"x\"", "suffix"},
    {"suffix empty", false, "\"suffix\":\"\"", NULL},
    {"chat logprobs true", true, "\"logprobs\":true,\"top_logprobs\":20", NULL},
    {"chat top_logprobs 21", true, "\"logprobs\":true,\"top_logprobs\":21", "top_logprobs"},
    {"chat top_logprobs without logprobs", true, "\"top_logprobs\":2", "top_logprobs"},
    {"chat logprobs int", true, "\"logprobs\":2", "logprobs"},
    {"cmpl logprobs 5", false, "\"logprobs\":5", NULL},
    {"cmpl logprobs 6", false, "\"logprobs\":6", "logprobs"},
    {"cmpl logprobs true", false, "\"logprobs\":true", "logprobs"},
    {"cmpl echo", false, "\"echo\":true", NULL},
    {"chat echo", true, "\"echo\":true", "echo"},
    {"prompt_logprobs 3", true, "\"prompt_logprobs\":3", NULL},
    {"prompt_logprobs 21", true, "\"prompt_logprobs\":21", "prompt_logprobs"},
    {"prompt_logprobs with stream", false, "\"prompt_logprobs\":1,\"stream\":true", "prompt_logprobs"},
    {"mindie bool", true, "\"mindie\":true", NULL},
    {"mindie int", true, "\"mindie\":1", "mindie"},
    {"functions still rejected", true, "\"functions\":[{\"name\":\"f\"}]", "functions"},
    /* structured output (request_format.c) */
    {"response_format json_object", true, "\"response_format\":{\"type\":\"json_object\"}", NULL},
    {"response_format json_schema", true,
     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"integer\"},\"strict\":true}}", NULL},
    {"response_format text", false, "\"response_format\":{\"type\":\"text\"}", NULL},
    {"response_format bad type", true, "\"response_format\":{\"type\":\"yaml\"}", "response_format"},
    {"response_format not object", true, "\"response_format\":\"json\"", "response_format"},
    {"json_schema schema not object", true,
     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":5}}", "response_format"},
    {"guided_json as text", false, "\"guided_json\":\"{\\\"type\\\":\\\"string\\\"}\"", NULL},
    {"guided_json bad text", false, "\"guided_json\":\"{nope\"", "guided_json"},
    {"guided_regex", false, "\"guided_regex\":\"[a-z]+\"", NULL},
    {"guided_regex empty", false, "\"guided_regex\":\"\"", "guided_regex"},
    {"guided_choice", true, "\"guided_choice\":[\"a\",\"b\"]", NULL},
    {"guided_choice not strings", true, "\"guided_choice\":[1]", "guided_choice"},
    {"guided_grammar", false, "\"guided_grammar\":\"root ::= \\\"a\\\"\"", NULL},
    {"two constraints", false, "\"guided_regex\":\"a\",\"guided_choice\":[\"b\"]", "guided_choice"},
    {"structured_outputs choice", true, "\"structured_outputs\":{\"choice\":[\"x\"]}", NULL},
    {"structured_outputs unknown key", true, "\"structured_outputs\":{\"yaml\":1}", "structured_outputs.yaml"},
    {"llama.cpp json_schema", false, "\"json_schema\":{\"type\":\"object\"}", NULL},
    {"llama.cpp grammar", false, "\"grammar\":\"root ::= [0-9]+\"", NULL},
    {"grammar plus response_format", false, "\"grammar\":\"root ::= [0-9]+\",\"response_format\":{\"type\":\"json_object\"}", "grammar"},
    {"guided_whitespace_pattern refused", false, "\"guided_whitespace_pattern\":\" \"", "guided_whitespace_pattern"},
};

static int parse(bool chat, const char *fields, req_gen_t **gen, chat_req_t *q, cmpl_req_t *c, req_err_t *e)
{
    char body[1024];
    if (chat) {
        snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]%s%s}", *fields ? "," : "",
                 fields);
        *gen = &q->gen;
        return req_chat_parse(body, strlen(body), q, e);
    }
    snprintf(body, sizeof body, "{\"prompt\":\"x\"%s%s}", *fields ? "," : "", fields);
    *gen = &c->gen;
    return req_cmpl_parse(body, strlen(body), c, e);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const case_t *k = &cases[i];
        chat_req_t q;
        cmpl_req_t c;
        req_gen_t *g;
        req_err_t e = {0};
        int rc = parse(k->chat, k->fields, &g, &q, &c, &e);
        if (!k->param)
            tap_ok(rc == 0, "%s parses%s%s", k->name, rc ? ": " : "", rc ? e.msg : "");
        else
            tap_ok(rc < 0 && e.status == 400 && !strcmp(e.param, k->param), "%s -> 400 param %s (got %d '%s': %s)",
                   k->name, k->param, e.status, e.param, e.msg);
        if (rc == 0) {
            if (k->chat)
                req_chat_free(&q);
            else
                req_cmpl_free(&c);
        }
    }

    /* values */
    chat_req_t q;
    cmpl_req_t c;
    req_gen_t *g;
    req_err_t e;
    if (tap_ok(parse(true, "", &g, &q, &c, &e) == 0, "defaults parse")) {
        const req_sampling_t *s = &g->samp;
        tap_ok(s->has == 0 && s->top_k == -1 && s->top_p == 1.0f && s->min_p == 0.0f &&
                   s->repetition_penalty == 1.0f && s->n == 1 && !s->logprobs && s->prompt_logprobs == -1 &&
                   s->skip_special_tokens && s->spaces_between_special_tokens && s->mindie == -1 && s->n_stop == 0,
               "defaults: OpenAI / vLLM neutral values, nothing marked given");
        req_chat_free(&q);
    }
    if (tap_ok(parse(true,
                     "\"temperature\":0.7,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"repetition_penalty\":1.1,"
                     "\"frequency_penalty\":0.5,\"presence_penalty\":-0.5,\"logit_bias\":{\"12\":-100,\"3\":2.5},"
                     "\"stop\":[\"\\n\\n\",\"END\"],\"stop_token_ids\":[7,9],\"ignore_eos\":true,\"min_tokens\":2,"
                     "\"skip_special_tokens\":false,\"include_stop_str_in_output\":true,\"n\":3,\"logprobs\":true,"
                     "\"top_logprobs\":4,\"prompt_logprobs\":2,\"max_tokens\":9",
                     &g, &q, &c, &e) == 0,
               "every field parses")) {
        const req_sampling_t *s = &g->samp;
        tap_ok(s->has == (REQ_HAS_TEMPERATURE | REQ_HAS_TOP_P | REQ_HAS_TOP_K | REQ_HAS_MIN_P | REQ_HAS_REP_PENALTY |
                          REQ_HAS_MAX_TOKENS),
               "given fields are marked (server defaults apply to the others)");
        tap_ok(fabsf(s->top_p - 0.9f) < 1e-6f && s->top_k == 40 && fabsf(s->min_p - 0.05f) < 1e-6f &&
                   fabsf(s->repetition_penalty - 1.1f) < 1e-6f && s->frequency_penalty == 0.5f &&
                   s->presence_penalty == -0.5f,
               "numeric controls");
        int ok = s->n_logit_bias == 2;
        for (int i = 0; ok && i < 2; i++)
            ok = (s->logit_bias[i].token == 12 && s->logit_bias[i].bias == -100.0f) ||
                 (s->logit_bias[i].token == 3 && s->logit_bias[i].bias == 2.5f);
        tap_ok(ok, "logit_bias entries");
        tap_ok(s->n_stop == 2 && !strcmp(s->stop[0], "\n\n") && !strcmp(s->stop[1], "END"), "stop list");
        tap_ok(s->n_stop_token_ids == 2 && s->stop_token_ids[1] == 9, "stop_token_ids");
        tap_ok(s->ignore_eos && s->min_tokens == 2 && !s->skip_special_tokens && s->include_stop_str_in_output,
               "stopping flags");
        tap_ok(s->n == 3 && s->logprobs && s->top_logprobs == 4 && s->prompt_logprobs == 2, "n and logprobs");
        req_chat_free(&q);
    }
    if (tap_ok(parse(false, "\"logprobs\":3,\"echo\":true,\"stop\":\"x\"", &g, &q, &c, &e) == 0,
               "completions logprobs parse")) {
        tap_ok(g->samp.logprobs && g->samp.top_logprobs == 3 && g->samp.echo && g->samp.n_stop == 1,
               "integer logprobs means top-N, echo, single stop string");
        req_cmpl_free(&c);
    }
    if (tap_ok(parse(false, "\"logprobs\":0", &g, &q, &c, &e) == 0, "completions logprobs 0 parses")) {
        tap_ok(g->samp.logprobs && g->samp.top_logprobs == 0, "logprobs 0: the chosen token's logprob only");
        req_cmpl_free(&c);
    }
    return tap_done();
}
