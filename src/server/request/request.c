/* request.c - JSON -> typed requests (see request.h). */
#include "server/request/request.h"
#include "server/request/request_tgi.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "server/request/req_json.h"
#include "server/request/request_chat.h"

#define fail req_err_set /* req_json.h: UTF-8-safe message, status, param, code */

static json_object *parse_object(const char *body, size_t len, req_err_t *e)
{
    return req_json_parse_object(body, len, e);
}

/* Field present and not null? */
static json_object *field(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v))
        return NULL;
    return v;
}

static bool is_int(json_object *v)
{
    return json_object_is_type(v, json_type_int);
}

static bool is_num(json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

static int get_bool(json_object *o, const char *k, bool *out, req_err_t *e)
{
    json_object *v = field(o, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return fail(e, 400, k, NULL, "'%s' must be a boolean", k);
    *out = json_object_get_boolean(v);
    return 0;
}

static int get_string(json_object *o, const char *k, char **out, req_err_t *e)
{
    json_object *v = field(o, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return fail(e, 400, k, NULL, "'%s' must be a string", k);
    free(*out);
    *out = strdup(json_object_get_string(v));
    return *out ? 0 : fail(e, 503, NULL, NULL, "out of memory");
}

/* A parameter the engine does not implement yet: accepted only with its
 * neutral value. `neutral` is checked by kind: number equal to num, false,
 * null, empty array/string. */
typedef struct {
    const char *name;
    double num;          /* neutral numeric value, NAN: none */
} unsupported_t;

static const unsupported_t unsupported[] = {
    {"functions", NAN},       {"function_call", NAN},
};

static bool neutral(json_object *v, const unsupported_t *u)
{
    if (!v)
        return true;
    switch (json_object_get_type(v)) {
    case json_type_null: return true;
    case json_type_boolean: return !json_object_get_boolean(v);
    case json_type_int:
    case json_type_double:
        return !isnan(u->num) && (json_object_get_double(v) == u->num ||
                                  (u->num == -1.0 && json_object_get_double(v) == 0.0));
    case json_type_array: return json_object_array_length(v) == 0;
    case json_type_string: return json_object_get_string_len(v) == 0;
    case json_type_object: return json_object_object_length(v) == 0;
    }
    return false;
}

static int check_unsupported(json_object *o, req_err_t *e)
{
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        json_object *v = field(o, unsupported[i].name);
        if (!neutral(v, &unsupported[i]))
            return fail(e, 400, unsupported[i].name, "unsupported_parameter",
                        "'%s' is not supported by this server yet", unsupported[i].name);
    }
    return 0;
}

static int parse_gen(json_object *o, bool chat, const req_limits_t *lim, req_gen_t *g, req_err_t *e)
{
    g->max_tokens = -1;
    g->temperature = 1.0f;
    json_object *st = field(o, "stream");
    if (req_sampling_parse(o, chat, st && json_object_is_type(st, json_type_boolean) && json_object_get_boolean(st),
                           lim, &g->samp, e) < 0)
        return -1;
    if (get_string(o, "model", &g->model, e) < 0)
        return -1;
    json_object *v = field(o, "user");
    if (v && !json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_null))
        return fail(e, 400, "user", NULL, "'user' must be a string");
    const char *mt[] = {"max_tokens", "max_completion_tokens"};
    for (int i = 0; i < 2; i++) {
        int64_t n;
        /* 1..2^31-1; beyond the context is context_length_exceeded later */
        int r = req_json_int(o, mt[i], NULL, 1, INT32_MAX, &n, e);
        if (r < 0)
            return -1;
        if (r) {
            g->max_tokens = (int32_t)n;
            g->samp.has |= REQ_HAS_MAX_TOKENS;
        }
    }
    v = field(o, "temperature");
    if (v && !json_object_is_type(v, json_type_null)) {
        if (!is_num(v))
            return fail(e, 400, "temperature", NULL, "'temperature' must be a number");
        double t = json_object_get_double(v);
        if (!(t >= 0.0 && t <= 2.0))
            return fail(e, 400, "temperature", NULL, "'temperature' must be between 0 and 2, got %g", t);
        g->temperature = (float)t;
        g->samp.has |= REQ_HAS_TEMPERATURE;
    }
    int r = req_json_seed(o, "seed", &g->seed, e);
    if (r < 0)
        return -1;
    g->has_seed = r;
    v = field(o, "stream");
    if (v && !json_object_is_type(v, json_type_null) && get_bool(o, "stream", &g->stream, e) < 0)
        return -1;
    v = field(o, "stream_options");
    if (v && !json_object_is_type(v, json_type_null)) {
        if (!g->stream)
            return fail(e, 400, "stream_options", NULL, "'stream_options' is only allowed when 'stream' is true");
        if (!json_object_is_type(v, json_type_object))
            return fail(e, 400, "stream_options", NULL, "'stream_options' must be an object");
        json_object *u = field(v, "include_usage");
        if (u && !json_object_is_type(u, json_type_null)) {
            if (!json_object_is_type(u, json_type_boolean))
                return fail(e, 400, "stream_options", NULL, "'stream_options.include_usage' must be a boolean");
            g->include_usage = json_object_get_boolean(u);
        }
        u = field(v, "continuous_usage_stats");
        if (u && !json_object_is_type(u, json_type_null)) {
            if (!json_object_is_type(u, json_type_boolean))
                return fail(e, 400, "stream_options", NULL,
                            "'stream_options.continuous_usage_stats' must be a boolean");
            g->continuous_usage = json_object_get_boolean(u);
        }
    }
    if (req_format_parse(o, &g->constraint, e) < 0)
        return -1;
    return check_unsupported(o, e);
}

const char *chat_role_name(chat_role_t r)
{
    static const char *names[] = {"system", "developer", "user", "assistant", "tool"};
    return (unsigned)r < 5 ? names[r] : "user";
}

/* An image part: image_url as a string or {url, detail}; records it. */
static int parse_image_part(json_object *p, size_t idx, size_t j, chat_req_t *out, req_err_t *e)
{
    char param[64];
    snprintf(param, sizeof param, "messages[%zu].content[%zu]", idx, j);
    json_object *iu = field(p, "image_url"), *url = iu;
    if (iu && json_object_is_type(iu, json_type_object)) {
        url = field(iu, "url");
        json_object *d = field(iu, "detail");
        if (d && !json_object_is_type(d, json_type_null)) {
            const char *ds = json_object_is_type(d, json_type_string) ? json_object_get_string(d) : "";
            if (strcmp(ds, "auto") && strcmp(ds, "low") && strcmp(ds, "high"))
                return fail(e, 400, param, NULL, "'%s.image_url.detail' must be 'auto', 'low' or 'high'", param);
        }
    }
    if (!url || !json_object_is_type(url, json_type_string) || !json_object_get_string_len(url))
        return fail(e, 400, param, NULL, "'%s' needs 'image_url' with a non-empty 'url' (a data: URL, base64 data "
                    "or a URL)", param);
    chat_image_t *im = realloc(out->images, (out->n_images + 1) * sizeof *im);
    if (!im)
        return fail(e, 503, NULL, NULL, "out of memory");
    out->images = im;
    im[out->n_images].url = json_object_get_string(url);
    snprintf(im[out->n_images].param, sizeof im[out->n_images].param, "%s", param);
    out->n_images++;
    return 0;
}

/* Content: string, null, or an array of text and image parts. Text parts
 * are joined; an image part becomes CHAT_MEDIA_MARKER, and in a message
 * with images the text parts are joined with "\n" except next to an image
 * (llama-server's rule). */
static int parse_content(json_object *c, size_t idx, char **out, chat_req_t *req, req_err_t *e)
{
    char param[40];
    snprintf(param, sizeof param, "messages[%zu].content", idx);
    if (!c || json_object_is_type(c, json_type_null)) {
        *out = strdup("");
        return 0;
    }
    if (json_object_is_type(c, json_type_string)) {
        *out = strdup(json_object_get_string(c));
        return 0;
    }
    if (!json_object_is_type(c, json_type_array))
        return fail(e, 400, param, NULL, "'%s' must be a string or an array of content parts", param);
    size_t n = json_object_array_length(c), total = 0, n_img = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(c, i), *t = NULL, *tx = NULL;
        if (!json_object_is_type(p, json_type_object) || !(t = field(p, "type")) ||
            !json_object_is_type(t, json_type_string))
            return fail(e, 400, param, NULL, "each content part needs a string 'type'");
        const char *type = json_object_get_string(t);
        if (!strcmp(type, "image_url")) {
            if (parse_image_part(p, idx, i, req, e) < 0)
                return -1;
            n_img++;
            total += strlen(CHAT_MEDIA_MARKER) + 1;
            continue;
        }
        if (!strcmp(type, "image"))
            return fail(e, 400, param, NULL, "image parts are {\"type\": \"image_url\", \"image_url\": {\"url\": ...}}");
        if (!strcmp(type, "input_audio") || !strcmp(type, "audio_url"))
            return fail(e, 400, param, NULL, "this model does not accept audio input");
        if (!strcmp(type, "video_url") || !strcmp(type, "file"))
            return fail(e, 400, param, NULL, "this model does not accept %.*s input", (int)utf8_clip(type, strlen(type), 40),
                        type);
        if (strcmp(type, "text"))
            return fail(e, 400, param, NULL, "unknown content part type '%.*s'", (int)utf8_clip(type, strlen(type), 100),
                        type);
        if (!(tx = field(p, "text")) || !json_object_is_type(tx, json_type_string))
            return fail(e, 400, param, NULL, "a text content part needs a string 'text'");
        total += (size_t)json_object_get_string_len(tx) + 1;
    }
    char *s = malloc(total + 1);
    if (!s)
        return fail(e, 503, NULL, NULL, "out of memory");
    size_t w = 0;
    bool last_media = false;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(c, i);
        if (!strcmp(json_object_get_string(field(p, "type")), "image_url")) {
            memcpy(s + w, CHAT_MEDIA_MARKER, strlen(CHAT_MEDIA_MARKER));
            w += strlen(CHAT_MEDIA_MARKER);
            last_media = true;
            continue;
        }
        json_object *tx = field(p, "text");
        if (n_img && w && !last_media)
            s[w++] = '\n';
        last_media = false;
        size_t l = (size_t)json_object_get_string_len(tx);
        memcpy(s + w, json_object_get_string(tx), l);
        w += l;
    }
    s[w] = '\0';
    *out = s;
    return 0;
}

static int parse_messages(json_object *o, chat_req_t *out, req_err_t *e)
{
    json_object *m = field(o, "messages");
    if (!m || json_object_is_type(m, json_type_null))
        return fail(e, 400, "messages", NULL, "'messages' is required");
    if (!json_object_is_type(m, json_type_array))
        return fail(e, 400, "messages", NULL, "'messages' must be an array");
    size_t n = json_object_array_length(m);
    if (n == 0)
        return fail(e, 400, "messages", NULL, "'messages' must not be empty");
    out->msgs = calloc(n, sizeof *out->msgs);
    if (!out->msgs)
        return fail(e, 503, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_object *msg = json_object_array_get_idx(m, i), *role;
        char param[40];
        snprintf(param, sizeof param, "messages[%zu].role", i);
        if (!json_object_is_type(msg, json_type_object))
            return fail(e, 400, "messages", NULL, "messages[%zu] must be an object", i);
        if (!(role = field(msg, "role")) || !json_object_is_type(role, json_type_string))
            return fail(e, 400, param, NULL, "'%s' is required and must be a string", param);
        const char *r = json_object_get_string(role);
        chat_role_t cr;
        if (!strcmp(r, "system")) cr = CHAT_ROLE_SYSTEM;
        else if (!strcmp(r, "developer")) cr = CHAT_ROLE_DEVELOPER;
        else if (!strcmp(r, "user")) cr = CHAT_ROLE_USER;
        else if (!strcmp(r, "assistant")) cr = CHAT_ROLE_ASSISTANT;
        else if (!strcmp(r, "tool")) cr = CHAT_ROLE_TOOL;
        else
            return fail(e, 400, param, NULL, "unknown role '%.*s' (system, developer, user, assistant, tool)",
                        (int)utf8_clip(r, strlen(r), 200), r);
        out->msgs[i].role = cr;
        out->n_msgs = i + 1;
        json_object *c = field(msg, "content");
        if (!c && cr != CHAT_ROLE_ASSISTANT) {
            snprintf(param, sizeof param, "messages[%zu].content", i);
            return fail(e, 400, param, NULL, "'%s' is required", param);
        }
        if (parse_content(c, i, &out->msgs[i].content, out, e) < 0)
            return -1;
        if (!out->msgs[i].content)
            return fail(e, 503, NULL, NULL, "out of memory");
        json_object *nm = field(msg, "name");
        if (nm && json_object_is_type(nm, json_type_string))
            out->msgs[i].name = strdup(json_object_get_string(nm));
    }
    return 0;
}

int req_chat_parse(const char *body, size_t len, chat_req_t *out, req_err_t *e)
{
    return req_chat_parse_limited(body, len, NULL, out, e);
}

int req_chat_parse_limited(const char *body, size_t len, const req_limits_t *lim, chat_req_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = parse_object(body, len, e);
    if (!o)
        return -1;
    return req_chat_from_json(o, lim, out, e);
}

int req_chat_from_json(json_object *o, const req_limits_t *lim, chat_req_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    out->raw = o;
    int rc = parse_messages(o, out, e);
    if (rc == 0)
        rc = parse_gen(o, true, lim, &out->gen, e);
    if (rc == 0)
        rc = req_chat_ext_parse(o, out, e);
    if (rc < 0)
        req_chat_free(out);
    return rc;
}

void req_chat_free(chat_req_t *r)
{
    for (size_t i = 0; i < r->n_msgs; i++) {
        free(r->msgs[i].content);
        free(r->msgs[i].name);
    }
    free(r->msgs);
    free(r->images);
    free(r->gen.model);
    req_sampling_free(&r->gen.samp);
    req_format_free(&r->gen.constraint);
    req_chat_ext_free(r->ext);
    json_object_put(r->raw);
    memset(r, 0, sizeof *r);
}

/* Array of integers -> token ids. */
static int parse_ids(json_object *a, const char *param, int32_t **out, size_t *n, req_err_t *e)
{
    size_t len = json_object_array_length(a);
    *out = malloc((len ? len : 1) * sizeof **out);
    if (!*out)
        return fail(e, 503, NULL, NULL, "out of memory");
    for (size_t i = 0; i < len; i++) {
        json_object *v = json_object_array_get_idx(a, i);
        if (!is_int(v))
            return fail(e, 400, param, NULL, "'%s' must contain only integer token ids", param);
        if (!req_json_int_in(v, 0, INT32_MAX))
            return fail(e, 400, param, NULL, "token id %.80s is out of range (0 to %d)", req_json_literal(v),
                        INT32_MAX);
        (*out)[i] = (int32_t)json_object_get_int64(v);
    }
    *n = len;
    return 0;
}

static int parse_prompt(json_object *o, cmpl_req_t *out, req_err_t *e)
{
    json_object *p = field(o, "prompt");
    if (!p || json_object_is_type(p, json_type_null))
        return fail(e, 400, "prompt", NULL, "'prompt' is required");
    if (json_object_is_type(p, json_type_string)) {
        out->texts = calloc(1, sizeof *out->texts);
        if (!out->texts || !(out->texts[0] = strdup(json_object_get_string(p))))
            return fail(e, 503, NULL, NULL, "out of memory");
        out->n_prompts = 1;
        return 0;
    }
    if (!json_object_is_type(p, json_type_array))
        return fail(e, 400, "prompt", NULL, "'prompt' must be a string, an array of strings or token ids");
    size_t n = json_object_array_length(p);
    if (n == 0)
        return fail(e, 400, "prompt", NULL, "'prompt' must not be empty");
    json_object *first = json_object_array_get_idx(p, 0);
    if (is_int(first)) {
        out->toks = calloc(1, sizeof *out->toks);
        out->n_toks = calloc(1, sizeof *out->n_toks);
        if (!out->toks || !out->n_toks)
            return fail(e, 503, NULL, NULL, "out of memory");
        out->n_prompts = 1;
        return parse_ids(p, "prompt", &out->toks[0], &out->n_toks[0], e);
    }
    if (json_object_is_type(first, json_type_string)) {
        out->texts = calloc(n, sizeof *out->texts);
        if (!out->texts)
            return fail(e, 503, NULL, NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_object *s = json_object_array_get_idx(p, i);
            if (!json_object_is_type(s, json_type_string))
                return fail(e, 400, "prompt", NULL, "'prompt' mixes strings and other types");
            if (!(out->texts[i] = strdup(json_object_get_string(s))))
                return fail(e, 503, NULL, NULL, "out of memory");
            out->n_prompts = i + 1;
        }
        return 0;
    }
    if (json_object_is_type(first, json_type_array)) {
        out->toks = calloc(n, sizeof *out->toks);
        out->n_toks = calloc(n, sizeof *out->n_toks);
        if (!out->toks || !out->n_toks)
            return fail(e, 503, NULL, NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_object *a = json_object_array_get_idx(p, i);
            out->n_prompts = i + 1;
            if (!json_object_is_type(a, json_type_array))
                return fail(e, 400, "prompt", NULL, "'prompt' mixes token arrays and other types");
            if (parse_ids(a, "prompt", &out->toks[i], &out->n_toks[i], e) < 0)
                return -1;
        }
        return 0;
    }
    return fail(e, 400, "prompt", NULL, "'prompt' must be a string, an array of strings or token ids");
}

int req_cmpl_parse(const char *body, size_t len, cmpl_req_t *out, req_err_t *e)
{
    return req_cmpl_parse_limited(body, len, NULL, out, e);
}

int req_cmpl_parse_limited(const char *body, size_t len, const req_limits_t *lim, cmpl_req_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = parse_prompt(o, out, e);
    if (rc == 0)
        rc = parse_gen(o, false, lim, &out->gen, e);
    if (rc == 0) /* TGI parameters flattened by Hugging Face clients */
        rc = req_tgi_flat_apply(o, &out->gen, e);
    json_object_put(o);
    if (rc < 0)
        req_cmpl_free(out);
    return rc;
}

void req_cmpl_free(cmpl_req_t *r)
{
    for (size_t i = 0; i < r->n_prompts; i++) {
        if (r->texts)
            free(r->texts[i]);
        if (r->toks)
            free(r->toks[i]);
    }
    free(r->texts);
    free(r->toks);
    free(r->n_toks);
    free(r->gen.model);
    req_sampling_free(&r->gen.samp);
    req_format_free(&r->gen.constraint);
    memset(r, 0, sizeof *r);
}

req_kind_t req_sniff_kind(const char *body, size_t len)
{
    req_err_t e;
    json_object *o = parse_object(body, len, &e);
    if (!o)
        return REQ_KIND_NONE;
    req_kind_t k = field(o, "messages") ? REQ_KIND_CHAT
                   : field(o, "prompt") ? REQ_KIND_COMPLETION
                   : field(o, "inputs") ? REQ_KIND_TGI : REQ_KIND_NONE;
    json_object_put(o);
    return k;
}

int req_tokenize_parse(const char *body, size_t len, tokenize_req_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = get_string(o, "model", &out->model, e);
    if (rc == 0 && field(o, "messages")) {
        out->add_special = false;
        out->add_generation_prompt = true;
        out->chat.raw = json_object_get(o);
        rc = parse_messages(o, &out->chat, e);
        if (rc == 0)
            rc = get_bool(o, "add_generation_prompt", &out->add_generation_prompt, e);
        if (rc == 0) /* the same template view as chat (request_chat.h) */
            rc = req_chat_ext_parse(o, &out->chat, e);
    } else if (rc == 0) {
        out->add_special = true;
        json_object *p = field(o, "prompt");
        if (!p || !json_object_is_type(p, json_type_string))
            rc = fail(e, 400, "prompt", NULL, "'prompt' (a string) or 'messages' is required");
        else
            rc = get_string(o, "prompt", &out->prompt, e);
    }
    if (rc == 0)
        rc = get_bool(o, "add_special_tokens", &out->add_special, e);
    json_object_put(o);
    if (rc < 0)
        req_tokenize_free(out);
    return rc;
}

void req_tokenize_free(tokenize_req_t *r)
{
    free(r->model);
    free(r->prompt);
    req_chat_free(&r->chat);
    memset(r, 0, sizeof *r);
}

int req_detok_parse(const char *body, size_t len, detok_req_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = get_string(o, "model", &out->model, e);
    json_object *t = field(o, "tokens");
    if (rc == 0 && (!t || !json_object_is_type(t, json_type_array)))
        rc = fail(e, 400, "tokens", NULL, "'tokens' (an array of token ids) is required");
    if (rc == 0)
        rc = parse_ids(t, "tokens", &out->toks, &out->n_toks, e);
    json_object_put(o);
    if (rc < 0)
        req_detok_free(out);
    return rc;
}

void req_detok_free(detok_req_t *r)
{
    free(r->model);
    free(r->toks);
    memset(r, 0, sizeof *r);
}

json_object *req_json_object(const char *body, size_t len, req_err_t *e)
{
    return parse_object(body, len, e);
}
