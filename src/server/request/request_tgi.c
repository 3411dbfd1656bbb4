/* request_tgi.c - the TGI / LMI text-generation body (see request_tgi.h). */
#include "server/request/request_tgi.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sample/sampler.h"

#define bad(e, status, param, ...) req_err_set((e), (status), (param), NULL, __VA_ARGS__)

static int oom(req_err_t *e)
{
    return bad(e, 503, NULL, "out of memory");
}

/* The member, or NULL when absent or null. */
static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!o || !json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

static bool is_num(json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* A number in the range; 1 present, 0 absent, -1 error. `range` is the
 * wording of the error ("> 0.0 and <= 1.0"). */
static int num(json_object *p, const char *k, double lo, bool lo_open, double hi, const char *range, float *out,
               req_err_t *e)
{
    json_object *v = get(p, k);
    if (!v)
        return 0;
    if (!is_num(v))
        return bad(e, 422, k, "`%s` must be a number", k);
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < lo || (lo_open && d == lo) || d > hi)
        return bad(e, 422, k, "`%s` must be %s. Given: %g", k, range, d);
    *out = (float)d;
    return 1;
}

static int integer(json_object *p, const char *k, int64_t lo, int64_t hi, int64_t *out, req_err_t *e)
{
    json_object *v = get(p, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return bad(e, 422, k, "`%s` must be an integer", k);
    int64_t d = json_object_get_int64(v);
    if (d < lo || d > hi)
        return bad(e, 422, k, "`%s` must be >= %lld and <= %lld. Given: %lld", k, (long long)lo, (long long)hi,
                   (long long)d);
    *out = d;
    return 1;
}

static int boolean(json_object *p, const char *k, bool *out, req_err_t *e)
{
    json_object *v = get(p, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(e, 422, k, "`%s` must be a boolean", k);
    *out = json_object_get_boolean(v);
    return 1;
}

static int parse_inputs(json_object *o, tgi_dialect_t d, tgi_req_t *q, req_err_t *e)
{
    json_object *in = get(o, "inputs");
    if (!in)
        return bad(e, 422, "inputs", "missing field `inputs`");
    size_t n = 1;
    if (json_object_is_type(in, json_type_array)) {
        if (d != TGI_DIALECT_LMI)
            return bad(e, 422, "inputs", "`inputs` must be a string");
        n = json_object_array_length(in);
        if (n == 0)
            return bad(e, 422, "inputs", "`inputs` cannot be empty");
        if (n > TGI_MAX_INPUTS)
            return bad(e, 422, "inputs", "`inputs` may hold at most %d prompts. Given: %zu", TGI_MAX_INPUTS, n);
        q->inputs_list = true;
    } else if (!json_object_is_type(in, json_type_string)) {
        return bad(e, 422, "inputs", d == TGI_DIALECT_LMI ? "`inputs` must be a string or an array of strings"
                                                          : "`inputs` must be a string");
    }
    if (!(q->inputs = calloc(n, sizeof *q->inputs)))
        return oom(e);
    for (size_t i = 0; i < n; i++) {
        json_object *s = q->inputs_list ? json_object_array_get_idx(in, i) : in;
        if (!json_object_is_type(s, json_type_string))
            return bad(e, 422, "inputs", "`inputs` must be a string or an array of strings");
        if (json_object_get_string_len(s) == 0)
            return bad(e, 422, "inputs", "`inputs` cannot be empty");
        if (!(q->inputs[i] = strdup(json_object_get_string(s))))
            return oom(e);
        q->n_inputs = i + 1;
    }
    return 0;
}

/* `stop` (TGI) and `stop_sequences` (LMI): a string or an array of
 * non-empty strings each, merged in that order. */
static int parse_stop(json_object *p, req_sampling_t *s, req_err_t *e)
{
    static const char *const keys[] = {"stop", "stop_sequences"};
    size_t total = 0;
    for (int k = 0; k < 2; k++) {
        json_object *v = get(p, keys[k]);
        if (!v)
            continue;
        if (json_object_is_type(v, json_type_string))
            total++;
        else if (json_object_is_type(v, json_type_array))
            total += json_object_array_length(v);
        else
            return bad(e, 422, keys[k], "`%s` must be an array of strings", keys[k]);
    }
    if (total > 1024)
        return bad(e, 422, "stop", "`stop` supports up to 1024 stop sequences. Given: %zu", total);
    if (total == 0)
        return 0;
    if (!(s->stop = calloc(total, sizeof *s->stop)))
        return oom(e);
    for (int k = 0; k < 2; k++) {
        json_object *v = get(p, keys[k]);
        if (!v)
            continue;
        size_t n = json_object_is_type(v, json_type_string) ? 1 : json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
            json_object *it = json_object_is_type(v, json_type_string) ? v : json_object_array_get_idx(v, i);
            if (!json_object_is_type(it, json_type_string))
                return bad(e, 422, keys[k], "`%s` must be an array of strings", keys[k]);
            if (json_object_get_string_len(it) == 0)
                return bad(e, 422, keys[k], "`%s` entries must not be empty", keys[k]);
            if (!(s->stop[s->n_stop] = strdup(json_object_get_string(it))))
                return oom(e);
            s->n_stop++;
        }
    }
    return 0;
}

static int parse_stop_ids(json_object *p, req_sampling_t *s, req_err_t *e)
{
    json_object *v = get(p, "stop_token_ids");
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 4096)
        return bad(e, 422, "stop_token_ids", "`stop_token_ids` must be an array of at most 4096 token ids");
    size_t n = json_object_array_length(v);
    if (n == 0)
        return 0;
    if (!(s->stop_token_ids = malloc(n * sizeof *s->stop_token_ids)))
        return oom(e);
    for (size_t i = 0; i < n; i++) {
        json_object *it = json_object_array_get_idx(v, i);
        if (!json_object_is_type(it, json_type_int) || json_object_get_int64(it) < 0 ||
            json_object_get_int64(it) > INT32_MAX)
            return bad(e, 422, "stop_token_ids", "`stop_token_ids` must contain token ids (non-negative integers)");
        s->stop_token_ids[i] = (int32_t)json_object_get_int64(it);
    }
    s->n_stop_token_ids = (int32_t)n;
    return 0;
}

/* {"type": T, "value": V}: checks the shape per type and keeps V. */
static int parse_grammar(json_object *p, tgi_grammar_t *g, req_err_t *e)
{
    json_object *v = get(p, "grammar");
    if (!v)
        return 0;
    json_object *t = get(v, "type"), *val = get(v, "value");
    if (!json_object_is_type(v, json_type_object) || !t || !json_object_is_type(t, json_type_string) || !val)
        return bad(e, 422, "grammar", "`grammar` must be an object {\"type\": \"json\" | \"json_schema\" | "
                                      "\"regex\", \"value\": ...}");
    const char *type = json_object_get_string(t);
    if (!strcmp(type, "json") || !strcmp(type, "json_object")) {
        json_object *schema = val;
        if (json_object_is_type(val, json_type_string)) { /* a schema given as JSON text */
            schema = json_tokener_parse(json_object_get_string(val));
            if (!schema || !json_object_is_type(schema, json_type_object)) {
                json_object_put(schema);
                return bad(e, 422, "grammar", "grammar is not valid: the `json` value is not a JSON object");
            }
        } else if (!json_object_is_type(val, json_type_object)) {
            return bad(e, 422, "grammar", "grammar is not valid: the `json` value must be a JSON Schema object");
        } else {
            json_object_get(schema);
        }
        g->kind = TGI_GRAMMAR_JSON;
        g->value = schema;
        return 0;
    }
    if (!strcmp(type, "json_schema")) {
        json_object *schema = get(val, "schema");
        if (!json_object_is_type(val, json_type_object) || !schema || !json_object_is_type(schema, json_type_object))
            return bad(e, 422, "grammar", "grammar is not valid: `json_schema` needs {\"schema\": {...}}");
        g->kind = TGI_GRAMMAR_JSON_SCHEMA;
        g->value = json_object_get(val);
        return 0;
    }
    if (!strcmp(type, "regex")) {
        if (!json_object_is_type(val, json_type_string))
            return bad(e, 422, "grammar", "grammar is not valid: the `regex` value must be a string");
        g->kind = TGI_GRAMMAR_REGEX;
        g->value = json_object_get(val);
        return 0;
    }
    return bad(e, 422, "grammar", "unknown grammar type '%.40s' (json, json_object, json_schema, regex)", type);
}

/* Parameters that only have one accepted value here. */
static int parse_refusals(json_object *p, req_err_t *e)
{
    bool wm = false;
    if (boolean(p, "watermark", &wm, e) < 0)
        return -1;
    if (wm)
        return bad(e, 422, "watermark", "`watermark` is not supported by this server");
    static const char *const counts[] = {"best_of", "n", "num_beams"};
    for (int i = 0; i < 3; i++) {
        int64_t n = 1;
        if (integer(p, counts[i], 1, INT32_MAX, &n, e) < 0)
            return -1;
        if (n != 1)
            return bad(e, 422, counts[i], "`%s` != 1 is not allowed for this endpoint", counts[i]);
    }
    if (get(p, "adapter_id"))
        return bad(e, 422, "adapter_id", "`adapter_id`: LoRA adapters are not supported by this server");
    return 0;
}

/* Sampling controls -> q->gen / q->gen.samp, and the do_sample decision. */
static int parse_sampling(json_object *p, tgi_req_t *q, req_err_t *e)
{
    req_sampling_t *s = &q->gen.samp;
    float temp = 1.0f;
    int r, warpers = 0;
    if ((r = num(p, "temperature", 0.0, false, SAMPLER_TEMPERATURE_MAX, ">= 0.0 and <= 2.0", &temp, e)) < 0)
        return -1;
    warpers += r;
    int64_t k = -1;
    if ((r = integer(p, "top_k", -1, INT32_MAX, &k, e)) < 0)
        return -1;
    warpers += r;
    s->top_k = (int32_t)k;
    s->has |= r ? REQ_HAS_TOP_K : 0;
    if ((r = num(p, "top_p", 0.0, true, 1.0, "> 0.0 and <= 1.0", &s->top_p, e)) < 0)
        return -1;
    warpers += r;
    s->has |= r ? REQ_HAS_TOP_P : 0;
    if ((r = num(p, "typical_p", 0.0, true, 1.0, "> 0.0 and <= 1.0", &s->typical_p, e)) < 0)
        return -1;
    warpers += r;
    if ((r = num(p, "min_p", 0.0, false, 1.0, ">= 0.0 and <= 1.0", &s->min_p, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_MIN_P : 0;
    if ((r = num(p, "repetition_penalty", 0.0, true, 1e6, "strictly positive", &s->repetition_penalty, e)) < 0)
        return -1;
    s->has |= r ? REQ_HAS_REP_PENALTY : 0;
    if (num(p, "frequency_penalty", -SAMPLER_PENALTY_MAX, false, SAMPLER_PENALTY_MAX, ">= -2.0 and <= 2.0",
            &s->frequency_penalty, e) < 0 ||
        num(p, "presence_penalty", -SAMPLER_PENALTY_MAX, false, SAMPLER_PENALTY_MAX, ">= -2.0 and <= 2.0",
            &s->presence_penalty, e) < 0)
        return -1;
    bool do_sample = false;
    if ((r = boolean(p, "do_sample", &do_sample, e)) < 0)
        return -1;
    q->sampling = r ? do_sample : warpers > 0;
    if (!q->sampling) {
        q->gen.temperature = 0.0f;
        s->has |= REQ_HAS_TEMPERATURE;
    } else if (get(p, "temperature")) {
        q->gen.temperature = temp;
        s->has |= REQ_HAS_TEMPERATURE;
    }
    json_object *v = get(p, "seed");
    if (v) {
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
            return bad(e, 422, "seed", "`seed` must be a non-negative integer");
        q->gen.has_seed = true;
        q->gen.seed = json_object_get_uint64(v);
    }
    return 0;
}

static int parse_parameters(json_object *o, tgi_dialect_t d, tgi_req_t *q, req_err_t *e)
{
    json_object *p = get(o, "parameters");
    if (p && !json_object_is_type(p, json_type_object))
        return bad(e, 422, "parameters", "`parameters` must be an object");
    req_sampling_t *s = &q->gen.samp;
    if (parse_refusals(p, e) < 0 || parse_sampling(p, q, e) < 0)
        return -1;
    int64_t n = 0;
    json_object *mt = get(p, "max_new_tokens");
    if (mt && (!json_object_is_type(mt, json_type_int) || json_object_get_int64(mt) < 1))
        return bad(e, 422, "max_new_tokens", "`max_new_tokens` must be strictly positive");
    if (integer(p, "max_new_tokens", 1, INT32_MAX, &n, e) < 0)
        return -1;
    if (mt) {
        q->gen.max_tokens = (int32_t)n;
        s->has |= REQ_HAS_MAX_TOKENS;
    }
    n = 0;
    if (integer(p, "min_tokens", 0, INT32_MAX, &n, e) < 0)
        return -1;
    s->min_tokens = (int32_t)n;
    if (mt && s->min_tokens > q->gen.max_tokens)
        return bad(e, 422, "min_tokens", "`min_tokens` must not exceed `max_new_tokens`");
    if (parse_stop(p, s, e) < 0 || parse_stop_ids(p, s, e) < 0)
        return -1;
    bool ie = false;
    if (boolean(p, "ignore_eos", &ie, e) < 0 || boolean(p, "ignore_eos_token", &s->ignore_eos, e) < 0)
        return -1;
    s->ignore_eos = s->ignore_eos || ie;
    s->include_stop_str_in_output = d == TGI_DIALECT_TGI; /* TGI keeps the stop sequence in the text */
    if (boolean(p, "include_stop_str_in_output", &s->include_stop_str_in_output, e) < 0)
        return -1;
    bool rft = false;
    int r = boolean(p, "return_full_text", &rft, e);
    if (r < 0)
        return -1;
    q->return_full_text = r ? rft : -1;
    if (boolean(p, "details", &q->details, e) < 0 ||
        boolean(p, "decoder_input_details", &q->decoder_input_details, e) < 0)
        return -1;
    q->details = q->details || q->decoder_input_details; /* TGI: either one asks for details */
    n = 0;
    if (integer(p, "top_n_tokens", 0, TGI_TOP_N_MAX, &n, e) < 0)
        return -1;
    q->top_n_tokens = (int32_t)n;
    n = 0;
    json_object *tr = get(p, "truncate");
    if (tr && (!json_object_is_type(tr, json_type_int) || json_object_get_int64(tr) < 1))
        return bad(e, 422, "truncate", "`truncate` must be strictly positive");
    if (integer(p, "truncate", 1, INT32_MAX, &n, e) < 0)
        return -1;
    q->truncate = (int32_t)n;
    /* token logprobs (and the top N) are computed when something reports
     * them: details, or every stream event (req_tgi_set_stream); prompt
     * logprobs only for decoder_input_details */
    s->top_logprobs = q->top_n_tokens;
    s->prompt_logprobs = q->decoder_input_details ? 0 : -1;
    return parse_grammar(p, &q->grammar, e);
}

int req_tgi_parse(const char *body, size_t len, tgi_dialect_t d, tgi_req_t *q, req_err_t *e)
{
    memset(q, 0, sizeof *q);
    q->gen.max_tokens = -1;
    q->gen.temperature = 1.0f;
    req_sampling_t *s = &q->gen.samp;
    s->top_k = -1;
    s->top_p = 1.0f;
    s->typical_p = 1.0f;
    s->repetition_penalty = 1.0f;
    s->skip_special_tokens = true;
    s->spaces_between_special_tokens = true;
    s->n = 1;
    s->prompt_logprobs = -1;
    s->mindie = -1;
    q->return_full_text = -1;
    json_object *o = req_json_object(body, len, e);
    if (!o)
        return -1;
    int rc = parse_inputs(o, d, q, e);
    if (rc == 0)
        rc = parse_parameters(o, d, q, e);
    if (rc == 0 && boolean(o, "stream", &q->stream, e) < 0)
        rc = -1;
    if (rc == 0)
        rc = req_tgi_set_stream(q, q->stream, e);
    json_object_put(o);
    if (rc < 0)
        req_tgi_free(q);
    return rc;
}

int req_tgi_flat_apply(json_object *o, req_gen_t *g, req_err_t *e)
{
    bool b = false;
    int r;
    if ((r = boolean(o, "do_sample", &b, e)) < 0)
        goto fail;
    if (r && !b) { /* greedy whatever the temperature, as on /generate */
        g->temperature = 0.0f;
        g->samp.has |= REQ_HAS_TEMPERATURE;
    }
    if (num(o, "typical_p", 0.0, true, 1.0, "> 0.0 and <= 1.0", &g->samp.typical_p, e) < 0)
        goto fail;
    b = false;
    if ((r = boolean(o, "return_full_text", &b, e)) < 0)
        goto fail;
    if (r && b)
        g->samp.echo = true;
    b = false;
    if (boolean(o, "watermark", &b, e) < 0)
        goto fail;
    if (b) {
        bad(e, 400, "watermark", "'watermark' is not supported by this server");
        goto unsupported;
    }
    return 0;
unsupported:
    snprintf(e->code, sizeof e->code, "unsupported_parameter");
    return -1;
fail:
    e->status = 400; /* an OpenAI endpoint: 400, not TGI's 422 */
    return -1;
}

int req_tgi_set_stream(tgi_req_t *q, bool stream, req_err_t *e)
{
    q->gen.stream = stream;
    q->gen.samp.logprobs = stream || q->details;
    if (stream && q->decoder_input_details)
        return bad(e, 422, "decoder_input_details",
                   "`decoder_input_details` == true is not supported when streaming tokens");
    if (stream && q->inputs_list)
        return bad(e, 422, "stream", "streaming is not supported with a list of `inputs`");
    return 0;
}

void req_tgi_free(tgi_req_t *q)
{
    for (size_t i = 0; q->inputs && i < q->n_inputs; i++)
        free(q->inputs[i]);
    free(q->inputs);
    req_sampling_free(&q->gen.samp);
    free(q->gen.model);
    json_object_put(q->grammar.value);
    memset(q, 0, sizeof *q);
}
