/* request_responses.c - OpenAI Responses requests: validation, normalized
 * input items, and the translation into a chat request (see
 * request_responses.h). */
#include "server/request/request_responses.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "server/request/req_json.h"

#define fail(e, param, ...) req_err_set(e, 400, param, NULL, __VA_ARGS__)

#define get req_json_get      /* present and not null */
#define str_of req_json_str   /* a string field or NULL */

static bool is_str(json_object *v)
{
    return v && json_object_is_type(v, json_type_string);
}

/* A quoted value in a message: at most 100 bytes, whole characters. */
#define CLIP(s) (int)utf8_clip((s), strlen(s), 100), (s)

/* o[k] must be absent, null or of type t (tname for the message). */
static int check_type(json_object *o, const char *k, json_type t, const char *tname, const char *param, req_err_t *e)
{
    json_object *v = get(o, k);
    if (v && !json_object_is_type(v, t) && !(t == json_type_double && json_object_is_type(v, json_type_int)))
        return fail(e, param ? param : k, "'%s' must be %s", param ? param : k, tname);
    return 0;
}

/* ---------------------------------------------------------------- items */

typedef struct {
    const char *base;
    int n;
} ids_t;

static void set_id(json_object *item, ids_t *ids, const char *prefix)
{
    if (is_str(get(item, "id")))
        return;
    char id[96];
    snprintf(id, sizeof id, "%s_%s%04x", prefix, ids->base, (unsigned)ids->n++ & 0xffff);
    json_object_object_add(item, "id", json_object_new_string(id));
}

/* A message part, validated; kept as given. */
static int check_part(json_object *p, const char *param, req_err_t *e)
{
    const char *type = str_of(p, "type");
    if (!json_object_is_type(p, json_type_object) || !type)
        return fail(e, param, "'%s' must be an object with a string 'type'", param);
    if (!strcmp(type, "input_text") || !strcmp(type, "output_text")) {
        if (!is_str(get(p, "text")))
            return fail(e, param, "'%s.text' must be a string", param);
        return 0;
    }
    if (!strcmp(type, "refusal"))
        return is_str(get(p, "refusal")) ? 0 : fail(e, param, "'%s.refusal' must be a string", param);
    if (!strcmp(type, "input_image")) {
        if (get(p, "file_id") && !get(p, "image_url"))
            return fail(e, param, "'%s': file ids are not supported by this server (send image_url)", param);
        if (!is_str(get(p, "image_url")))
            return fail(e, param, "'%s.image_url' must be a string (a URL or a data: URL)", param);
        return 0;
    }
    if (!strcmp(type, "input_file") || !strcmp(type, "input_audio"))
        return fail(e, param, "'%s': %s parts are not supported by this server", param, type);
    return fail(e, param, "'%s.type' must be input_text, output_text, refusal or input_image, got '%.*s'", param,
                CLIP(type));
}

/* A message item -> normalized copy (content as parts). */
static int norm_message(json_object *it, const char *param, ids_t *ids, json_object **out, req_err_t *e)
{
    static const char *const roles[] = {"user", "system", "developer", "assistant"};
    const char *role = str_of(it, "role");
    char p[96];
    snprintf(p, sizeof p, "%s.role", param);
    if (!role)
        return fail(e, p, "'%s' is required and must be a string", p);
    bool known = false;
    for (size_t i = 0; i < 4; i++)
        known = known || !strcmp(role, roles[i]);
    if (!known)
        return fail(e, p, "'%s' must be user, system, developer or assistant, got '%.*s'", p, CLIP(role));
    json_object *c = get(it, "content");
    snprintf(p, sizeof p, "%s.content", param);
    json_object *parts = json_object_new_array();
    *out = json_object_new_object();
    json_object_object_add(*out, "type", json_object_new_string("message"));
    json_object_object_add(*out, "role", json_object_new_string(role));
    json_object_object_add(*out, "content", parts);
    if (is_str(c)) {
        json_object *part = json_object_new_object();
        json_object_object_add(part, "type", json_object_new_string(strcmp(role, "assistant") ? "input_text"
                                                                                              : "output_text"));
        json_object_object_add(part, "text", json_object_get(c));
        if (!strcmp(role, "assistant"))
            json_object_object_add(part, "annotations", json_object_new_array());
        json_object_array_add(parts, part);
    } else if (c && json_object_is_type(c, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(c); i++) {
            char pp[128];
            snprintf(pp, sizeof pp, "%.96s[%zu]", p, i);
            json_object *part = json_object_array_get_idx(c, i);
            if (check_part(part, pp, e) < 0)
                return -1;
            json_object_array_add(parts, json_object_get(part));
        }
    } else {
        return fail(e, p, "'%s' must be a string or an array of content parts", p);
    }
    const char *id = str_of(it, "id");
    if (id)
        json_object_object_add(*out, "id", json_object_new_string(id));
    set_id(*out, ids, "msg");
    const char *st = str_of(it, "status");
    json_object_object_add(*out, "status", json_object_new_string(st ? st : "completed"));
    return 0;
}

/* A text field of an item: required string. */
static int need_str(json_object *it, const char *k, const char *param, req_err_t *e)
{
    if (is_str(get(it, k)))
        return 0;
    char p[112];
    snprintf(p, sizeof p, "%s.%s", param, k);
    return fail(e, p, "'%s' is required and must be a string", p);
}

/* An array of {type: t, text} parts (reasoning summary / content). */
static int check_texts(json_object *it, const char *k, const char *t, const char *param, req_err_t *e)
{
    json_object *a = get(it, k);
    if (!a)
        return 0;
    char p[112];
    snprintf(p, sizeof p, "%s.%s", param, k);
    if (!json_object_is_type(a, json_type_array))
        return fail(e, p, "'%s' must be an array", p);
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *x = json_object_array_get_idx(a, i);
        const char *type = str_of(x, "type");
        if (!type || strcmp(type, t) || !is_str(get(x, "text")))
            return fail(e, p, "'%s[%zu]' must be {\"type\": \"%s\", \"text\": string}", p, i, t);
    }
    return 0;
}

/* One input item -> normalized copy in *out. */
static int norm_item(json_object *it, size_t idx, ids_t *ids, json_object **out, req_err_t *e)
{
    char param[48];
    snprintf(param, sizeof param, "input[%zu]", idx);
    *out = NULL;
    if (!json_object_is_type(it, json_type_object))
        return fail(e, param, "'%s' must be an object", param);
    json_object *tv = get(it, "type");
    if (tv && !is_str(tv))
        return fail(e, param, "'%s.type' must be a string", param);
    const char *type = tv ? json_object_get_string(tv) : "message";
    if (!strcmp(type, "message"))
        return norm_message(it, param, ids, out, e);
    if (!strcmp(type, "function_call")) {
        if (need_str(it, "call_id", param, e) < 0 || need_str(it, "name", param, e) < 0 ||
            need_str(it, "arguments", param, e) < 0)
            return -1;
        *out = json_object_new_object();
        json_object_object_add(*out, "type", json_object_new_string("function_call"));
        const char *id = str_of(it, "id");
        if (id)
            json_object_object_add(*out, "id", json_object_new_string(id));
        set_id(*out, ids, "fc");
        json_object_object_add(*out, "call_id", json_object_get(get(it, "call_id")));
        json_object_object_add(*out, "name", json_object_get(get(it, "name")));
        json_object_object_add(*out, "arguments", json_object_get(get(it, "arguments")));
        json_object_object_add(*out, "status", json_object_new_string("completed"));
        return 0;
    }
    if (!strcmp(type, "function_call_output")) {
        if (need_str(it, "call_id", param, e) < 0)
            return -1;
        json_object *o = get(it, "output");
        if (json_object_is_type(o, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(o); i++) {
                char pp[96];
                snprintf(pp, sizeof pp, "%s.output[%zu]", param, i);
                if (check_part(json_object_array_get_idx(o, i), pp, e) < 0)
                    return -1;
            }
        } else if (!is_str(o)) {
            char pp[80];
            snprintf(pp, sizeof pp, "%s.output", param);
            return fail(e, pp, "'%s' is required: a string or an array of content parts", pp);
        }
        *out = json_object_new_object();
        json_object_object_add(*out, "type", json_object_new_string("function_call_output"));
        const char *id = str_of(it, "id");
        if (id)
            json_object_object_add(*out, "id", json_object_new_string(id));
        set_id(*out, ids, "fco");
        json_object_object_add(*out, "call_id", json_object_get(get(it, "call_id")));
        json_object_object_add(*out, "output", json_object_get(o));
        json_object_object_add(*out, "status", json_object_new_string("completed"));
        return 0;
    }
    if (!strcmp(type, "reasoning")) {
        if (check_texts(it, "summary", "summary_text", param, e) < 0 ||
            check_texts(it, "content", "reasoning_text", param, e) < 0)
            return -1;
        *out = json_object_new_object();
        json_object_object_add(*out, "type", json_object_new_string("reasoning"));
        const char *id = str_of(it, "id");
        if (id)
            json_object_object_add(*out, "id", json_object_new_string(id));
        set_id(*out, ids, "rs");
        json_object *sm = get(it, "summary"), *ct = get(it, "content");
        json_object_object_add(*out, "summary", sm ? json_object_get(sm) : json_object_new_array());
        if (ct)
            json_object_object_add(*out, "content", json_object_get(ct));
        return 0;
    }
    if (!strcmp(type, "item_reference"))
        return fail(e, param, "'%s': item_reference items are not supported by this server (continue a stored "
                    "response with previous_response_id)", param);
    return fail(e, param, "'%s.type' '%.*s' is not supported (message, function_call, function_call_output, "
                "reasoning)", param, CLIP(type));
}

static int parse_input(json_object *o, ids_t *ids, json_object **items, req_err_t *e)
{
    json_object *in = get(o, "input");
    *items = json_object_new_array();
    if (!in)
        return fail(e, "input", "'input' is required");
    if (is_str(in)) {
        json_object *m = json_object_new_object(), *w = NULL;
        json_object_object_add(m, "role", json_object_new_string("user"));
        json_object_object_add(m, "content", json_object_get(in));
        int rc = norm_message(m, "input", ids, &w, e);
        json_object_put(m);
        if (w)
            json_object_array_add(*items, w);
        return rc;
    }
    if (!json_object_is_type(in, json_type_array))
        return fail(e, "input", "'input' must be a string or an array of items");
    if (json_object_array_length(in) == 0)
        return fail(e, "input", "'input' must not be empty");
    for (size_t i = 0; i < json_object_array_length(in); i++) {
        json_object *w = NULL;
        int rc = norm_item(json_object_array_get_idx(in, i), i, ids, &w, e);
        if (w)
            json_object_array_add(*items, w);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* -------------------------------------------------------- other fields */

static int parse_tools(json_object *o, req_err_t *e)
{
    json_object *t = get(o, "tools");
    if (!t)
        return 0;
    if (!json_object_is_type(t, json_type_array))
        return fail(e, "tools", "'tools' must be an array");
    for (size_t i = 0; i < json_object_array_length(t); i++) {
        json_object *tool = json_object_array_get_idx(t, i), *v;
        char p[48];
        snprintf(p, sizeof p, "tools[%zu]", i);
        const char *type = str_of(tool, "type");
        if (!json_object_is_type(tool, json_type_object) || !type)
            return fail(e, p, "'%s' must be an object with a string 'type'", p);
        if (strcmp(type, "function"))
            return fail(e, p, "'%s.type' '%.*s' is not supported: this server runs function tools only", p,
                        CLIP(type));
        const char *name = str_of(tool, "name");
        if (!name || !*name)
            return fail(e, p, "'%s.name' must be a non-empty string", p);
        if ((v = get(tool, "description")) && !is_str(v))
            return fail(e, p, "'%s.description' must be a string", p);
        if ((v = get(tool, "parameters")) && !json_object_is_type(v, json_type_object))
            return fail(e, p, "'%s.parameters' must be a JSON schema object", p);
        if ((v = get(tool, "strict")) && !json_object_is_type(v, json_type_boolean))
            return fail(e, p, "'%s.strict' must be a boolean", p);
    }
    return 0;
}

static int parse_tool_choice(json_object *o, req_err_t *e)
{
    json_object *c = get(o, "tool_choice");
    if (!c)
        return 0;
    if (is_str(c)) {
        const char *s = json_object_get_string(c);
        if (strcmp(s, "none") && strcmp(s, "auto") && strcmp(s, "required"))
            return fail(e, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                        "\"function\", \"name\": ...}, got \"%.*s\"", CLIP(s));
        return 0;
    }
    const char *type = str_of(c, "type");
    if (!json_object_is_type(c, json_type_object) || !type || strcmp(type, "function") || !str_of(c, "name"))
        return fail(e, "tool_choice", "a named 'tool_choice' must be {\"type\": \"function\", \"name\": ...} (this "
                    "server runs function tools only)");
    return 0;
}

static int parse_text(json_object *o, req_err_t *e)
{
    json_object *t = get(o, "text");
    if (!t)
        return 0;
    if (!json_object_is_type(t, json_type_object))
        return fail(e, "text", "'text' must be an object");
    json_object *f = get(t, "format");
    if (!f)
        return 0;
    const char *type = str_of(f, "type");
    if (!json_object_is_type(f, json_type_object) || !type)
        return fail(e, "text.format", "'text.format' must be an object with a string 'type'");
    if (!strcmp(type, "text") || !strcmp(type, "json_object"))
        return 0;
    if (strcmp(type, "json_schema"))
        return fail(e, "text.format.type", "'text.format.type' must be text, json_object or json_schema, got '%.*s'",
                    CLIP(type));
    if (!str_of(f, "name"))
        return fail(e, "text.format.name", "'text.format.name' is required (a string)");
    json_object *s = get(f, "schema");
    if (!s || !json_object_is_type(s, json_type_object))
        return fail(e, "text.format.schema", "'text.format.schema' is required (a JSON schema object)");
    if (get(f, "strict") && !json_object_is_type(get(f, "strict"), json_type_boolean))
        return fail(e, "text.format.strict", "'text.format.strict' must be a boolean");
    return 0;
}

static int parse_reasoning(json_object *o, req_err_t *e)
{
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};
    json_object *r = get(o, "reasoning");
    if (!r)
        return 0;
    if (!json_object_is_type(r, json_type_object))
        return fail(e, "reasoning", "'reasoning' must be an object");
    json_object *ef = get(r, "effort");
    if (ef) {
        bool ok = false;
        for (size_t i = 0; is_str(ef) && i < sizeof efforts / sizeof efforts[0]; i++)
            ok = ok || !strcmp(json_object_get_string(ef), efforts[i]);
        if (!ok)
            return fail(e, "reasoning.effort", "'reasoning.effort' must be none, minimal, low, medium, high or xhigh");
    }
    json_object *sm = get(r, "summary");
    if (sm && (!is_str(sm) || (strcmp(json_object_get_string(sm), "auto") &&
                              strcmp(json_object_get_string(sm), "concise") &&
                              strcmp(json_object_get_string(sm), "detailed"))))
        return fail(e, "reasoning.summary", "'reasoning.summary' must be auto, concise or detailed");
    return 0;
}

static int parse_metadata(json_object *o, req_err_t *e)
{
    json_object *m = get(o, "metadata");
    if (!m)
        return 0;
    if (!json_object_is_type(m, json_type_object))
        return fail(e, "metadata", "'metadata' must be an object of strings");
    if (json_object_object_length(m) > 16)
        return fail(e, "metadata", "'metadata' has at most 16 keys");
    json_object_object_foreach(m, k, v) {
        if (strlen(k) > 64)
            return fail(e, "metadata", "'metadata' keys are at most 64 characters");
        if (!is_str(v) || json_object_get_string_len(v) > 512)
            return fail(e, "metadata", "'metadata.%.*s' must be a string of at most 512 characters", CLIP(k));
    }
    return 0;
}

#define get_flag(o, k, out, e) (req_json_flag(o, k, out, e) < 0 ? -1 : 0)

static int parse_fields(json_object *o, req_responses_t *q, req_err_t *e)
{
    static const char *const strs[] = {"model", "instructions", "previous_response_id", "user"};
    for (size_t i = 0; i < 4; i++)
        if (check_type(o, strs[i], json_type_string, "a string", NULL, e) < 0)
            return -1;
    q->model = str_of(o, "model");
    q->instructions = str_of(o, "instructions");
    q->previous_response_id = str_of(o, "previous_response_id");
    if (q->previous_response_id && !*q->previous_response_id)
        return fail(e, "previous_response_id", "'previous_response_id' must not be empty");
    q->store = true;
    if (get_flag(o, "store", &q->store, e) < 0 || get_flag(o, "stream", &q->stream, e) < 0 ||
        get_flag(o, "background", &q->background, e) < 0 ||
        check_type(o, "parallel_tool_calls", json_type_boolean, "a boolean", NULL, e) < 0)
        return -1;
    if (q->background && !q->store)
        return fail(e, "background", "'background' needs 'store' (a background response is fetched from the store)");
    if (q->background && q->stream)
        return fail(e, "background", "'background' with 'stream' is not supported by this server (poll GET "
                    "/v1/responses/{id} instead)");
    int64_t n;
    q->max_output_tokens = -1;
    int r = req_json_int(o, "max_output_tokens", NULL, 1, INT32_MAX, &n, e);
    if (r < 0)
        return -1;
    if (r)
        q->max_output_tokens = (int32_t)n;
    if (check_type(o, "temperature", json_type_double, "a number", NULL, e) < 0 ||
        check_type(o, "top_p", json_type_double, "a number", NULL, e) < 0)
        return -1;
    json_object *v = get(o, "truncation");
    if (v && (!is_str(v) || (strcmp(json_object_get_string(v), "auto") &&
                             strcmp(json_object_get_string(v), "disabled"))))
        return fail(e, "truncation", "'truncation' must be \"auto\" or \"disabled\"");
    if ((v = get(o, "include")) && !json_object_is_type(v, json_type_array))
        return fail(e, "include", "'include' must be an array of strings");
    r = req_json_int(o, "top_logprobs", NULL, 0, 0, &n, e);
    if (r < 0)
        return fail(e, "top_logprobs", "'top_logprobs' is not supported by this server (0 or leave it out)");
    if (get(o, "conversation"))
        return fail(e, "conversation", "'conversation' (the Conversations API) is not supported by this server: use "
                    "previous_response_id");
    if (get(o, "prompt"))
        return fail(e, "prompt", "'prompt' (stored prompt templates) is not supported by this server");
    if (parse_tools(o, e) < 0 || parse_tool_choice(o, e) < 0 || parse_text(o, e) < 0 || parse_reasoning(o, e) < 0 ||
        parse_metadata(o, e) < 0)
        return -1;
    return 0;
}

int req_responses_parse(const char *body, size_t len, const char *id_base, req_responses_t *out, req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = req_json_parse_object(body, len, e);
    if (!o)
        return -1;
    out->raw = o;
    ids_t ids = {id_base ? id_base : "", 0};
    int rc = parse_fields(o, out, e);
    if (rc == 0)
        rc = parse_input(o, &ids, &out->input, e);
    if (rc < 0)
        req_responses_free(out);
    return rc;
}

void req_responses_free(req_responses_t *q)
{
    json_object_put(q->input);
    json_object_put(q->raw);
    memset(q, 0, sizeof *q);
}

/* ------------------------------------------------------- to chat */

/* The text of parts joined: key of every part (of type key_type when
 * given), appended to *buf. */
static void join_texts(json_object *parts, const char *key_type, const char *key, char **buf, size_t *len)
{
    for (size_t i = 0; parts && i < json_object_array_length(parts); i++) {
        json_object *p = json_object_array_get_idx(parts, i);
        const char *type = str_of(p, "type"), *t = str_of(p, key);
        if (!t || (key_type && (!type || strcmp(type, key_type))))
            continue;
        size_t l = strlen(t);
        char *n = realloc(*buf, *len + l + 1);
        if (!n)
            return;
        memcpy(n + *len, t, l + 1);
        *buf = n;
        *len += l;
    }
}

/* The text of a message part: its text, or a refusal's. */
static const char *part_text(json_object *p)
{
    const char *t = str_of(p, "type");
    const char *s = str_of(p, t && !strcmp(t, "refusal") ? "refusal" : "text");
    return s ? s : "";
}

/* Message parts -> chat content: a string when all text, else parts. */
static json_object *chat_content(json_object *parts)
{
    size_t n = parts ? json_object_array_length(parts) : 0, total = 0;
    bool images = false;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(parts, i);
        const char *t = str_of(p, "type");
        images = images || (t && !strcmp(t, "input_image"));
        total += strlen(part_text(p));
    }
    if (!images) {
        char *s = malloc(total + 1);
        size_t l = 0;
        for (size_t i = 0; s && i < n; i++) {
            const char *t = part_text(json_object_array_get_idx(parts, i));
            memcpy(s + l, t, strlen(t));
            l += strlen(t);
        }
        json_object *c = json_object_new_string_len(s ? s : "", s ? (int)l : 0);
        free(s);
        return c;
    }
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(parts, i), *c = json_object_new_object();
        const char *t = str_of(p, "type");
        if (t && !strcmp(t, "input_image")) {
            json_object *u = json_object_new_object();
            json_object_object_add(u, "url", json_object_get(get(p, "image_url")));
            if (get(p, "detail"))
                json_object_object_add(u, "detail", json_object_get(get(p, "detail")));
            json_object_object_add(c, "type", json_object_new_string("image_url"));
            json_object_object_add(c, "image_url", u);
        } else {
            json_object_object_add(c, "type", json_object_new_string("text"));
            json_object_object_add(c, "text", json_object_new_string(part_text(p)));
        }
        json_object_array_add(a, c);
    }
    return a;
}

/* The assistant message being built from consecutive assistant-side items. */
typedef struct {
    json_object *msgs;
    json_object *cur;         /* open assistant message or NULL */
    char *reasoning;          /* reasoning waiting for its assistant message */
    size_t rlen;
} conv_t;

static json_object *assistant(conv_t *c)
{
    if (c->cur)
        return c->cur;
    c->cur = json_object_new_object();
    json_object_object_add(c->cur, "role", json_object_new_string("assistant"));
    json_object_object_add(c->cur, "content", NULL);
    json_object_array_add(c->msgs, c->cur);
    return c->cur;
}

static void take_reasoning(conv_t *c, json_object *m)
{
    if (!c->reasoning)
        return;
    json_object *prev = get(m, "reasoning_content");
    if (prev) {
        size_t pl = (size_t)json_object_get_string_len(prev);
        char *t = malloc(pl + c->rlen + 1);
        if (t) {
            memcpy(t, json_object_get_string(prev), pl);
            memcpy(t + pl, c->reasoning, c->rlen + 1);
            json_object_object_add(m, "reasoning_content", json_object_new_string_len(t, (int)(pl + c->rlen)));
            free(t);
        }
    } else {
        json_object_object_add(m, "reasoning_content", json_object_new_string_len(c->reasoning, (int)c->rlen));
    }
    free(c->reasoning);
    c->reasoning = NULL;
    c->rlen = 0;
}

static void conv_item(conv_t *c, json_object *it)
{
    const char *type = str_of(it, "type");
    if (!type)
        return;
    if (!strcmp(type, "message")) {
        const char *role = str_of(it, "role");
        json_object *content = chat_content(get(it, "content"));
        if (role && !strcmp(role, "assistant")) {
            json_object *m = assistant(c);
            json_object *prev = get(m, "content");
            if (prev && is_str(prev) && is_str(content)) { /* two text items of one turn */
                size_t a = (size_t)json_object_get_string_len(prev), b = (size_t)json_object_get_string_len(content);
                char *t = malloc(a + b + 1);
                if (t) {
                    memcpy(t, json_object_get_string(prev), a);
                    memcpy(t + a, json_object_get_string(content), b + 1);
                    json_object_put(content);
                    content = json_object_new_string_len(t, (int)(a + b));
                    free(t);
                }
            }
            json_object_object_add(m, "content", content);
            take_reasoning(c, m);
            return;
        }
        c->cur = NULL;
        json_object *m = json_object_new_object();
        json_object_object_add(m, "role", json_object_new_string(role ? role : "user"));
        json_object_object_add(m, "content", content);
        json_object_array_add(c->msgs, m);
        return;
    }
    if (!strcmp(type, "reasoning")) {
        /* the reasoning text (content), else its summary */
        json_object *ct = get(it, "content");
        size_t before = c->rlen;
        join_texts(ct, "reasoning_text", "text", &c->reasoning, &c->rlen);
        if (c->rlen == before)
            join_texts(get(it, "summary"), "summary_text", "text", &c->reasoning, &c->rlen);
        if (c->cur && (get(c->cur, "content") || get(c->cur, "tool_calls")))
            c->cur = NULL; /* reasoning after an answer starts the next turn */
        return;
    }
    if (!strcmp(type, "function_call")) {
        json_object *m = assistant(c);
        take_reasoning(c, m);
        json_object *calls = get(m, "tool_calls");
        if (!calls) {
            calls = json_object_new_array();
            json_object_object_add(m, "tool_calls", calls);
        }
        json_object *call = json_object_new_object(), *fn = json_object_new_object();
        json_object_object_add(call, "id", json_object_get(get(it, "call_id")));
        json_object_object_add(call, "type", json_object_new_string("function"));
        json_object_object_add(fn, "name", json_object_get(get(it, "name")));
        json_object_object_add(fn, "arguments", json_object_get(get(it, "arguments")));
        json_object_object_add(call, "function", fn);
        json_object_array_add(calls, call);
        return;
    }
    if (!strcmp(type, "function_call_output")) {
        c->cur = NULL;
        json_object *m = json_object_new_object(), *o = get(it, "output");
        json_object_object_add(m, "role", json_object_new_string("tool"));
        json_object_object_add(m, "tool_call_id", json_object_get(get(it, "call_id")));
        json_object_object_add(m, "content", is_str(o) ? json_object_get(o) : chat_content(o));
        json_object_array_add(c->msgs, m);
    }
}

/* Copies o[k] into c when present. */
static void pass(json_object *c, json_object *o, const char *k, const char *as)
{
    json_object *v = get(o, k);
    if (v)
        json_object_object_add(c, as ? as : k, json_object_get(v));
}

static json_object *chat_tools(json_object *tools)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        json_object *t = json_object_array_get_idx(tools, i), *w = json_object_new_object(),
                    *fn = json_object_new_object();
        json_object_object_add(w, "type", json_object_new_string("function"));
        pass(fn, t, "name", NULL);
        pass(fn, t, "description", NULL);
        pass(fn, t, "parameters", NULL);
        json_object *st = get(t, "strict");
        json_object_object_add(fn, "strict", json_object_new_boolean(st ? json_object_get_boolean(st) : true));
        json_object_object_add(w, "function", fn);
        json_object_array_add(a, w);
    }
    return a;
}

int req_responses_chat(const req_responses_t *q, json_object *items, const req_limits_t *lim, chat_req_t *out,
                       req_err_t *e)
{
    json_object *o = q->raw, *c = json_object_new_object();
    conv_t cv = {.msgs = json_object_new_array()};
    if (q->instructions) {
        json_object *m = json_object_new_object();
        json_object_object_add(m, "role", json_object_new_string("system"));
        json_object_object_add(m, "content", json_object_new_string(q->instructions));
        json_object_array_add(cv.msgs, m);
    }
    for (size_t i = 0; i < json_object_array_length(items); i++)
        conv_item(&cv, json_object_array_get_idx(items, i));
    free(cv.reasoning);
    json_object_object_add(c, "messages", cv.msgs);
    pass(c, o, "model", NULL);
    if (q->max_output_tokens > 0)
        json_object_object_add(c, "max_completion_tokens", json_object_new_int(q->max_output_tokens));
    pass(c, o, "temperature", NULL);
    pass(c, o, "top_p", NULL);
    pass(c, o, "user", NULL);
    pass(c, o, "parallel_tool_calls", NULL);
    if (q->stream)
        json_object_object_add(c, "stream", json_object_new_boolean(true));
    json_object *tools = get(o, "tools");
    if (tools && json_object_array_length(tools))
        json_object_object_add(c, "tools", chat_tools(tools));
    json_object *tc = get(o, "tool_choice");
    if (is_str(tc) && (!tools || !json_object_array_length(tools)) && !strcmp(json_object_get_string(tc), "auto"))
        ; /* "auto" without tools: nothing to choose from (OpenAI accepts it) */
    else if (is_str(tc))
        json_object_object_add(c, "tool_choice", json_object_get(tc));
    else if (tc) {
        json_object *w = json_object_new_object(), *fn = json_object_new_object();
        json_object_object_add(w, "type", json_object_new_string("function"));
        pass(fn, tc, "name", NULL);
        json_object_object_add(w, "function", fn);
        json_object_object_add(c, "tool_choice", w);
    }
    json_object *f = get(get(o, "text"), "format");
    const char *ft = str_of(f, "type");
    if (ft && strcmp(ft, "text")) {
        json_object *rf = json_object_new_object();
        json_object_object_add(rf, "type", json_object_new_string(ft));
        if (!strcmp(ft, "json_schema")) {
            json_object *js = json_object_new_object();
            pass(js, f, "name", NULL);
            pass(js, f, "description", NULL);
            pass(js, f, "schema", NULL);
            pass(js, f, "strict", NULL);
            json_object_object_add(rf, "json_schema", js);
        }
        json_object_object_add(c, "response_format", rf);
    }
    pass(c, get(o, "reasoning"), "effort", "reasoning_effort");
    /* the vLLM-style extras the chat endpoint takes */
    static const char *const extras[] = {"seed", "top_k", "min_p", "repetition_penalty", "frequency_penalty",
                                         "presence_penalty", "stop", "chat_template_kwargs", "ignore_eos",
                                         "min_tokens"};
    for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++)
        pass(c, o, extras[i], NULL);
    if (req_chat_from_json(c, lim, out, e) < 0) {
        if (!strncmp(e->param, "messages", 8)) /* names the translated conversation: the input's */
            snprintf(e->param, sizeof e->param, "input");
        else if (!strcmp(e->param, "response_format"))
            snprintf(e->param, sizeof e->param, "text.format");
        else if (!strcmp(e->param, "max_completion_tokens"))
            snprintf(e->param, sizeof e->param, "max_output_tokens");
        return -1;
    }
    return 0;
}
