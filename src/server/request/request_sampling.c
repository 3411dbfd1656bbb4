/* request_sampling.c - decoding controls from JSON (see request_sampling.h). */
#include "server/request/request_sampling.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "engine/sample/logprob.h"
#include "server/request/req_json.h"
#include "server/request/request.h"

#define CMPL_LOGPROBS_MAX 5 /* OpenAI's limit for the legacy integer logprobs */

/* req_json.h: a 400 naming the field, the message cut at a character */
#define bad(e, ...) req_err_set(e, 400, __VA_ARGS__)

static int oom(req_err_t *e)
{
    e->status = 503;
    e->param[0] = e->code[0] = '\0';
    snprintf(e->msg, sizeof e->msg, "out of memory");
    return -1;
}

/* The field, or NULL when absent or null. */
static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

static bool is_num(json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* A number in [lo, hi] (open ends when lo_open / hi_open). 1 if present. */
static int num(json_object *o, const char *k, double lo, bool lo_open, double hi, float *out, req_err_t *e)
{
    json_object *v = get(o, k);
    if (!v)
        return 0;
    if (!is_num(v))
        return bad(e, k, NULL, "'%s' must be a number", k);
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < lo || (lo_open && d == lo) || d > hi)
        return bad(e, k, NULL, "'%s' must be a number %s %g and <= %g, got %.40s", k, lo_open ? ">" : ">=", lo, hi,
                   req_json_literal(v));
    *out = (float)d;
    return 1;
}

static int integer(json_object *o, const char *k, int64_t lo, int64_t hi, int32_t *out, req_err_t *e)
{
    int64_t d;
    int r = req_json_int(o, k, NULL, lo, hi, &d, e);
    if (r == 1)
        *out = (int32_t)d;
    return r;
}

static int boolean(json_object *o, const char *k, bool *out, req_err_t *e)
{
    json_object *v = get(o, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(e, k, NULL, "'%s' must be a boolean", k);
    *out = json_object_get_boolean(v);
    return 1;
}

static int parse_stop(json_object *o, req_sampling_t *s, req_err_t *e)
{
    json_object *v = get(o, "stop");
    if (!v)
        return 0;
    size_t n = json_object_is_type(v, json_type_string) ? 1
               : json_object_is_type(v, json_type_array) ? json_object_array_length(v) : (size_t)-1;
    if (n == (size_t)-1)
        return bad(e, "stop", NULL, "'stop' must be a string or an array of strings");
    if (n > 1024)
        return bad(e, "stop", NULL, "'stop' has too many entries (at most 1024)");
    if (n == 0)
        return 0;
    s->stop = calloc(n, sizeof *s->stop);
    if (!s->stop)
        return oom(e);
    for (size_t i = 0; i < n; i++) {
        json_object *it = json_object_is_type(v, json_type_string) ? v : json_object_array_get_idx(v, i);
        if (!json_object_is_type(it, json_type_string))
            return bad(e, "stop", NULL, "'stop' must be a string or an array of strings");
        if (json_object_get_string_len(it) == 0)
            return bad(e, "stop", NULL, "'stop' strings must not be empty");
        if (!(s->stop[i] = strdup(json_object_get_string(it))))
            return oom(e);
        s->n_stop = (int32_t)i + 1;
    }
    return 0;
}

static int parse_ids(json_object *o, const char *k, int32_t **out, int32_t *n_out, req_err_t *e)
{
    json_object *v = get(o, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_array))
        return bad(e, k, NULL, "'%s' must be an array of token ids", k);
    size_t n = json_object_array_length(v);
    if (n > 4096)
        return bad(e, k, NULL, "'%s' has too many entries", k);
    if (n == 0)
        return 0;
    if (!(*out = malloc(n * sizeof **out)))
        return oom(e);
    for (size_t i = 0; i < n; i++) {
        json_object *it = json_object_array_get_idx(v, i);
        if (!req_json_int_in(it, 0, INT32_MAX))
            return bad(e, k, NULL, "'%s' must contain token ids (integers from 0 to %d), got %.80s", k, INT32_MAX,
                       req_json_literal(it));
        (*out)[i] = (int32_t)json_object_get_int64(it);
    }
    *n_out = (int32_t)n;
    return 0;
}

/* OpenAI Predicted Outputs: {"type": "content", "content": TEXT}, TEXT a
 * string or an array of {"type": "text", "text": ...} parts (joined). */
static int parse_prediction(json_object *o, req_sampling_t *s, req_err_t *e)
{
    json_object *v = get(o, "prediction");
    if (!v)
        return 0;
    const char *shape = "'prediction' must be {\"type\": \"content\", \"content\": a string or an array of text parts}";
    json_object *t = NULL, *c = NULL;
    if (!json_object_is_type(v, json_type_object))
        return bad(e, "prediction", NULL, "%s", shape);
    if (!json_object_object_get_ex(v, "type", &t) || !json_object_is_type(t, json_type_string) ||
        strcmp(json_object_get_string(t), "content"))
        return bad(e, "prediction", NULL, "'prediction.type' must be \"content\", got %.60s",
                   t ? req_json_literal(t) : "nothing");
    if (!json_object_object_get_ex(v, "content", &c) || !c)
        return bad(e, "prediction", NULL, "%s", shape);
    if (json_object_is_type(c, json_type_string)) {
        s->prediction = strdup(json_object_get_string(c));
        if (!s->prediction)
            return oom(e);
        return 0;
    }
    if (!json_object_is_type(c, json_type_array))
        return bad(e, "prediction", NULL, "%s", shape);
    size_t n = json_object_array_length(c), len = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(c, i), *pt = NULL, *tx = NULL;
        if (!json_object_is_type(part, json_type_object) || !json_object_object_get_ex(part, "type", &pt) ||
            !json_object_is_type(pt, json_type_string) || strcmp(json_object_get_string(pt), "text") ||
            !json_object_object_get_ex(part, "text", &tx) || !json_object_is_type(tx, json_type_string))
            return bad(e, "prediction", NULL, "'prediction.content[%zu]' must be {\"type\": \"text\", \"text\": a string}",
                       i);
        len += (size_t)json_object_get_string_len(tx);
    }
    if (!(s->prediction = malloc(len + 1)))
        return oom(e);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *tx = NULL;
        json_object_object_get_ex(json_object_array_get_idx(c, i), "text", &tx);
        const size_t l = (size_t)json_object_get_string_len(tx);
        memcpy(s->prediction + w, json_object_get_string(tx), l);
        w += l;
    }
    s->prediction[w] = '\0';
    return 0;
}

static int parse_bias(json_object *o, req_sampling_t *s, req_err_t *e)
{
    json_object *v = get(o, "logit_bias");
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_object))
        return bad(e, "logit_bias", NULL, "'logit_bias' must be an object mapping token ids to biases");
    int n = json_object_object_length(v);
    if (n > 300000)
        return bad(e, "logit_bias", NULL, "'logit_bias' has too many entries");
    if (n == 0)
        return 0;
    if (!(s->logit_bias = calloc((size_t)n, sizeof *s->logit_bias)))
        return oom(e);
    int i = 0;
    json_object_object_foreach(v, key, val)
    {
        char *end = NULL;
        long long id = strtoll(key, &end, 10);
        if (!*key || *end || id < 0 || id > INT32_MAX)
            return bad(e, "logit_bias", NULL, "'logit_bias' keys must be token ids, got '%.*s'",
                       (int)utf8_clip(key, strlen(key), 64), key);
        if (!is_num(val))
            return bad(e, "logit_bias", NULL, "'logit_bias' values must be numbers");
        double b = json_object_get_double(val);
        if (!(b >= -SAMPLER_LOGIT_BIAS_MAX && b <= SAMPLER_LOGIT_BIAS_MAX))
            return bad(e, "logit_bias", NULL, "'logit_bias' values must be between -100 and 100, got %.40s",
                       req_json_literal(val));
        s->logit_bias[i].token = (int32_t)id;
        s->logit_bias[i].bias = (float)b;
        i++;
    }
    s->n_logit_bias = i;
    return 0;
}

static int parse_logprobs(json_object *o, bool chat, bool stream, req_sampling_t *s, req_err_t *e)
{
    json_object *v = get(o, "logprobs");
    if (chat) {
        if (boolean(o, "logprobs", &s->logprobs, e) < 0)
            return -1;
        int has_top = integer(o, "top_logprobs", 0, LOGPROB_TOP_MAX, &s->top_logprobs, e);
        if (has_top < 0)
            return -1;
        if (has_top && !s->logprobs)
            return bad(e, "top_logprobs", NULL, "'top_logprobs' requires 'logprobs' to be true");
    } else if (v) {
        if (!json_object_is_type(v, json_type_int))
            return bad(e, "logprobs", NULL, "'logprobs' must be an integer (0..%d) for completions",
                       CMPL_LOGPROBS_MAX);
        if (integer(o, "logprobs", 0, CMPL_LOGPROBS_MAX, &s->top_logprobs, e) < 0)
            return -1;
        s->logprobs = true;
    }
    json_object *p = get(o, "prompt_logprobs");
    if (p) {
        if (integer(o, "prompt_logprobs", 0, LOGPROB_TOP_MAX, &s->prompt_logprobs, e) < 0)
            return -1;
        if (stream)
            return bad(e, "prompt_logprobs", NULL, "'prompt_logprobs' is not supported with 'stream'");
    }
    return 0;
}

int req_sampling_parse(json_object *o, bool chat, bool stream, const req_limits_t *lim, req_sampling_t *s,
                       req_err_t *e)
{
    memset(s, 0, sizeof *s);
    s->top_k = -1;
    s->top_p = 1.0f;
    s->repetition_penalty = 1.0f;
    s->skip_special_tokens = true;
    s->spaces_between_special_tokens = true;
    s->n = 1;
    s->prompt_logprobs = -1;
    s->mindie = -1;
    int r;
    if ((r = num(o, "top_p", 0.0, true, 1.0, &s->top_p, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_TOP_P : 0;
    if ((r = integer(o, "top_k", -1, INT32_MAX, &s->top_k, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_TOP_K : 0;
    if ((r = num(o, "min_p", 0.0, false, 1.0, &s->min_p, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_MIN_P : 0;
    if (num(o, "frequency_penalty", -SAMPLER_PENALTY_MAX, false, SAMPLER_PENALTY_MAX, &s->frequency_penalty, e) < 0 ||
        num(o, "presence_penalty", -SAMPLER_PENALTY_MAX, false, SAMPLER_PENALTY_MAX, &s->presence_penalty, e) < 0)
        return -1;
    if ((r = num(o, "repetition_penalty", 0.0, true, 1e6, &s->repetition_penalty, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_REP_PENALTY : 0;
    if (parse_bias(o, s, e) < 0 || parse_stop(o, s, e) < 0 || parse_prediction(o, s, e) < 0 ||
        parse_ids(o, "stop_token_ids", &s->stop_token_ids, &s->n_stop_token_ids, e) < 0)
        return -1;
    if (boolean(o, "ignore_eos", &s->ignore_eos, e) < 0 ||
        integer(o, "min_tokens", 0, INT32_MAX, &s->min_tokens, e) < 0 ||
        boolean(o, "skip_special_tokens", &s->skip_special_tokens, e) < 0 ||
        boolean(o, "spaces_between_special_tokens", &s->spaces_between_special_tokens, e) < 0 ||
        boolean(o, "include_stop_str_in_output", &s->include_stop_str_in_output, e) < 0)
        return -1;
    int32_t max_n = lim && lim->max_n > 0 ? lim->max_n : INT32_MAX;
    if (integer(o, "n", 1, max_n, &s->n, e) < 0)
        return -1;
    int32_t best_of = s->n;
    if (integer(o, "best_of", 1, max_n, &best_of, e) < 0)
        return -1;
    if (best_of != s->n)
        return bad(e, "best_of", "unsupported_parameter", "'best_of' is not supported (only best_of == n)");
    json_object *sf = get(o, "suffix");
    if (sf && !(json_object_is_type(sf, json_type_string) && json_object_get_string_len(sf) == 0))
        return bad(e, "suffix", "unsupported_parameter", "'suffix' is not supported");
    if (parse_logprobs(o, chat, stream, s, e) < 0)
        return -1;
    if (chat && get(o, "echo") && json_object_is_type(get(o, "echo"), json_type_boolean) &&
        json_object_get_boolean(get(o, "echo")))
        return bad(e, "echo", "unsupported_parameter", "'echo' is only supported by /v1/completions");
    if (!chat && boolean(o, "echo", &s->echo, e) < 0)
        return -1;
    bool md = false;
    if ((r = boolean(o, "mindie", &md, e)) < 0)
        return -1;
    if (r)
        s->mindie = md;
    if (s->min_tokens > 0 && get(o, "max_tokens") == NULL && get(o, "max_completion_tokens") == NULL)
        return 0;
    json_object *mt = get(o, "max_completion_tokens");
    if (!mt)
        mt = get(o, "max_tokens");
    if (mt && req_json_int_in(mt, 1, INT32_MAX) && s->min_tokens > json_object_get_int64(mt))
        return bad(e, "min_tokens", NULL, "'min_tokens' must not exceed 'max_tokens'");
    return 0;
}

void req_sampling_free(req_sampling_t *s)
{
    for (int32_t i = 0; i < s->n_stop; i++)
        free(s->stop[i]);
    free(s->stop);
    free(s->logit_bias);
    free(s->stop_token_ids);
    free(s->prediction);
    memset(s, 0, sizeof *s);
}
