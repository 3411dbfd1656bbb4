/* request_messages.c - Anthropic Messages requests: validation and the
 * translation into a chat request (see request_messages.h). */
#include "server/request/request_messages.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "server/request/req_json.h"

#define fail(e, param, ...) req_err_set(e, 400, param, NULL, __VA_ARGS__)
#define CLIP(s) (int)utf8_clip((s), strlen(s), 100), (s)

#define get req_json_get      /* present and not null */
#define str_of req_json_str   /* a string field or NULL */

static bool is_str(json_object *v)
{
    return v && json_object_is_type(v, json_type_string);
}

static bool is_num(json_object *v)
{
    return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

/* ------------------------------------------------------------ validate */

/* An image block's source -> its URL (data: URL for base64); NULL after
 * filling *e. The result is malloc'd. */
static char *image_url(json_object *b, const char *param, req_err_t *e)
{
    json_object *src = get(b, "source");
    const char *type = str_of(src, "type");
    if (!type) {
        fail(e, param, "'%s.source' must be an object with a string 'type'", param);
        return NULL;
    }
    if (!strcmp(type, "url")) {
        const char *u = str_of(src, "url");
        if (!u) {
            fail(e, param, "'%s.source.url' must be a string", param);
            return NULL;
        }
        return strdup(u);
    }
    if (!strcmp(type, "base64")) {
        const char *mt = str_of(src, "media_type"), *d = str_of(src, "data");
        if (!mt || !d) {
            fail(e, param, "'%s.source' needs string 'media_type' and 'data'", param);
            return NULL;
        }
        size_t n = strlen(mt) + strlen(d) + 16;
        char *u = malloc(n);
        if (u)
            snprintf(u, n, "data:%s;base64,%s", mt, d);
        return u;
    }
    fail(e, param, "'%s.source.type' must be base64 or url, got '%.*s'", param, CLIP(type));
    return NULL;
}

/* Checks one content block of a message with role (user / assistant). */
static int check_block(json_object *b, const char *role, const char *param, req_err_t *e)
{
    const char *type = str_of(b, "type");
    if (!json_object_is_type(b, json_type_object) || !type)
        return fail(e, param, "'%s' must be an object with a string 'type'", param);
    bool user = !strcmp(role, "user");
    if (!strcmp(type, "text"))
        return is_str(get(b, "text")) ? 0 : fail(e, param, "'%s.text' must be a string", param);
    if (!strcmp(type, "image")) {
        char *u = image_url(b, param, e);
        free(u);
        return u ? 0 : -1;
    }
    if (!strcmp(type, "tool_use")) {
        if (user)
            return fail(e, param, "'%s': tool_use blocks belong to assistant messages", param);
        if (!str_of(b, "id") || !str_of(b, "name"))
            return fail(e, param, "'%s' needs string 'id' and 'name'", param);
        json_object *in = get(b, "input");
        if (!in || !json_object_is_type(in, json_type_object))
            return fail(e, param, "'%s.input' must be an object", param);
        return 0;
    }
    if (!strcmp(type, "tool_result")) {
        if (!user)
            return fail(e, param, "'%s': tool_result blocks belong to user messages", param);
        if (!str_of(b, "tool_use_id"))
            return fail(e, param, "'%s.tool_use_id' must be a string", param);
        json_object *c = get(b, "content");
        if (c && !is_str(c)) {
            if (!json_object_is_type(c, json_type_array))
                return fail(e, param, "'%s.content' must be a string or an array of blocks", param);
            for (size_t i = 0; i < json_object_array_length(c); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s.content[%zu]", param, i);
                json_object *x = json_object_array_get_idx(c, i);
                const char *t = str_of(x, "type");
                if (!t || (strcmp(t, "text") && strcmp(t, "image")))
                    return fail(e, p, "'%s' must be a text or image block", p);
                if (check_block(x, "user", p, e) < 0)
                    return -1;
            }
        }
        json_object *err = get(b, "is_error");
        if (err && !json_object_is_type(err, json_type_boolean))
            return fail(e, param, "'%s.is_error' must be a boolean", param);
        return 0;
    }
    if (!strcmp(type, "thinking")) {
        if (user)
            return fail(e, param, "'%s': thinking blocks belong to assistant messages", param);
        return is_str(get(b, "thinking")) ? 0 : fail(e, param, "'%s.thinking' must be a string", param);
    }
    if (!strcmp(type, "redacted_thinking"))
        return user ? fail(e, param, "'%s': redacted_thinking blocks belong to assistant messages", param) : 0;
    return fail(e, param, "'%s.type' '%.*s' is not supported (text, image, tool_use, tool_result, thinking)", param,
                CLIP(type));
}

static int check_messages(json_object *o, req_err_t *e)
{
    json_object *m = get(o, "messages");
    if (!m)
        return fail(e, "messages", "messages: Field required");
    if (!json_object_is_type(m, json_type_array))
        return fail(e, "messages", "'messages' must be an array");
    if (json_object_array_length(m) == 0)
        return fail(e, "messages", "'messages' must not be empty");
    for (size_t i = 0; i < json_object_array_length(m); i++) {
        json_object *msg = json_object_array_get_idx(m, i);
        char p[64];
        snprintf(p, sizeof p, "messages.%zu", i);
        if (!json_object_is_type(msg, json_type_object))
            return fail(e, p, "'%s' must be an object", p);
        const char *role = str_of(msg, "role");
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant")))
            return fail(e, p, "'%s.role' must be \"user\" or \"assistant\"", p);
        json_object *c = get(msg, "content");
        if (is_str(c))
            continue;
        if (!c || !json_object_is_type(c, json_type_array))
            return fail(e, p, "'%s.content' must be a string or an array of content blocks", p);
        for (size_t k = 0; k < json_object_array_length(c); k++) {
            char pb[96];
            snprintf(pb, sizeof pb, "%s.content.%zu", p, k);
            if (check_block(json_object_array_get_idx(c, k), role, pb, e) < 0)
                return -1;
        }
    }
    return 0;
}

static int check_tools(json_object *o, req_err_t *e)
{
    json_object *t = get(o, "tools");
    if (!t)
        return 0;
    if (!json_object_is_type(t, json_type_array))
        return fail(e, "tools", "'tools' must be an array");
    for (size_t i = 0; i < json_object_array_length(t); i++) {
        json_object *tool = json_object_array_get_idx(t, i), *v;
        char p[48];
        snprintf(p, sizeof p, "tools.%zu", i);
        if (!json_object_is_type(tool, json_type_object))
            return fail(e, p, "'%s' must be an object", p);
        const char *type = str_of(tool, "type");
        if (type && strcmp(type, "custom"))
            return fail(e, p, "'%s.type' '%.*s' is not supported: this server runs custom tools only", p, CLIP(type));
        const char *name = str_of(tool, "name");
        if (!name || !*name)
            return fail(e, p, "'%s.name' must be a non-empty string", p);
        if ((v = get(tool, "description")) && !is_str(v))
            return fail(e, p, "'%s.description' must be a string", p);
        v = get(tool, "input_schema");
        if (!v || !json_object_is_type(v, json_type_object))
            return fail(e, p, "'%s.input_schema' is required (a JSON schema object)", p);
    }
    return 0;
}

static int check_tool_choice(json_object *o, req_err_t *e)
{
    json_object *c = get(o, "tool_choice");
    if (!c)
        return 0;
    const char *type = str_of(c, "type");
    if (!json_object_is_type(c, json_type_object) || !type ||
        (strcmp(type, "auto") && strcmp(type, "any") && strcmp(type, "tool") && strcmp(type, "none")))
        return fail(e, "tool_choice", "'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    if (!strcmp(type, "tool") && !str_of(c, "name"))
        return fail(e, "tool_choice", "'tool_choice' of type tool needs a string 'name'");
    json_object *d = get(c, "disable_parallel_tool_use");
    if (d && !json_object_is_type(d, json_type_boolean))
        return fail(e, "tool_choice", "'tool_choice.disable_parallel_tool_use' must be a boolean");
    return 0;
}

static int check_fields(json_object *o, bool count, req_messages_t *q, int64_t *max_tokens, int64_t *budget,
                        req_err_t *e)
{
    json_object *v;
    if ((v = get(o, "model")) && !is_str(v))
        return fail(e, "model", "'model' must be a string");
    if (!count) {
        if (!get(o, "max_tokens"))
            return fail(e, "max_tokens", "max_tokens: Field required");
        if (req_json_int(o, "max_tokens", NULL, 1, INT32_MAX, max_tokens, e) < 0)
            return -1;
    }
    if ((v = get(o, "stream"))) {
        if (!json_object_is_type(v, json_type_boolean))
            return fail(e, "stream", "'stream' must be a boolean");
        q->stream = !count && json_object_get_boolean(v);
    }
    v = get(o, "system");
    if (v && !is_str(v)) {
        if (!json_object_is_type(v, json_type_array))
            return fail(e, "system", "'system' must be a string or an array of text blocks");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *b = json_object_array_get_idx(v, i);
            const char *t = str_of(b, "type");
            if (!t || strcmp(t, "text") || !str_of(b, "text"))
                return fail(e, "system", "'system.%zu' must be {\"type\": \"text\", \"text\": string}", i);
        }
    }
    v = get(o, "temperature");
    if (v && (!is_num(v) || json_object_get_double(v) < 0 || json_object_get_double(v) > 1))
        return fail(e, "temperature", "'temperature' must be a number from 0 to 1");
    v = get(o, "top_p");
    if (v && (!is_num(v) || json_object_get_double(v) <= 0 || json_object_get_double(v) > 1))
        return fail(e, "top_p", "'top_p' must be a number in (0, 1]");
    int64_t k;
    if (req_json_int(o, "top_k", NULL, 0, INT32_MAX, &k, e) < 0)
        return -1;
    v = get(o, "stop_sequences");
    if (v) {
        if (!json_object_is_type(v, json_type_array))
            return fail(e, "stop_sequences", "'stop_sequences' must be an array of strings");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *s = json_object_array_get_idx(v, i);
            if (!is_str(s) || !json_object_get_string_len(s))
                return fail(e, "stop_sequences", "'stop_sequences.%zu' must be a non-empty string", i);
        }
    }
    v = get(o, "metadata");
    if (v && (!json_object_is_type(v, json_type_object) || (get(v, "user_id") && !str_of(v, "user_id"))))
        return fail(e, "metadata", "'metadata' must be an object with an optional string 'user_id'");
    v = get(o, "thinking");
    if (v) {
        const char *t = str_of(v, "type");
        if (!t || (strcmp(t, "enabled") && strcmp(t, "disabled")))
            return fail(e, "thinking", "'thinking' must be {\"type\": \"enabled\", \"budget_tokens\": N} or "
                        "{\"type\": \"disabled\"}");
        if (!strcmp(t, "enabled")) {
            if (!get(v, "budget_tokens"))
                return fail(e, "thinking.budget_tokens", "thinking.budget_tokens: Field required");
            if (req_json_int(v, "budget_tokens", "thinking.budget_tokens", 1024, INT32_MAX, budget, e) < 0)
                return -1;
            if (!count && *budget >= *max_tokens)
                return fail(e, "thinking.budget_tokens", "`max_tokens` must be greater than "
                            "`thinking.budget_tokens`");
            q->thinking = true;
        }
    }
    v = get(o, "mcp_servers");
    if (v && (!json_object_is_type(v, json_type_array) || json_object_array_length(v)))
        return fail(e, "mcp_servers", "'mcp_servers' is not supported by this server");
    if (check_messages(o, e) < 0 || check_tools(o, e) < 0 || check_tool_choice(o, e) < 0)
        return -1;
    return 0;
}

/* ----------------------------------------------------------- translate */

/* Appends s (len n) to a growing buffer. */
static void cat(char **buf, size_t *len, const char *s, size_t n)
{
    char *t = realloc(*buf, *len + n + 1);
    if (!t)
        return;
    memcpy(t + *len, s, n);
    t[*len + n] = '\0';
    *buf = t;
    *len += n;
}

/* Text and image blocks -> chat content (a string when all text). */
static json_object *content_of(json_object *blocks)
{
    bool images = false;
    size_t n = json_object_array_length(blocks);
    for (size_t i = 0; i < n; i++) {
        const char *t = str_of(json_object_array_get_idx(blocks, i), "type");
        images = images || (t && !strcmp(t, "image"));
    }
    if (!images) {
        char *s = NULL;
        size_t l = 0;
        for (size_t i = 0; i < n; i++) {
            const char *t = str_of(json_object_array_get_idx(blocks, i), "text");
            if (t)
                cat(&s, &l, t, strlen(t));
        }
        json_object *c = json_object_new_string_len(s ? s : "", (int)l);
        free(s);
        return c;
    }
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(blocks, i), *p = json_object_new_object();
        const char *t = str_of(b, "type");
        if (t && !strcmp(t, "image")) {
            req_err_t e;
            char *u = image_url(b, "", &e);
            json_object *iu = json_object_new_object();
            json_object_object_add(iu, "url", json_object_new_string(u ? u : ""));
            free(u);
            json_object_object_add(p, "type", json_object_new_string("image_url"));
            json_object_object_add(p, "image_url", iu);
        } else {
            json_object_object_add(p, "type", json_object_new_string("text"));
            json_object_object_add(p, "text", json_object_new_string(str_of(b, "text") ? str_of(b, "text") : ""));
        }
        json_object_array_add(a, p);
    }
    return a;
}

static void add_msg(json_object *msgs, const char *role, json_object *content)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "role", json_object_new_string(role));
    json_object_object_add(m, "content", content);
    json_object_array_add(msgs, m);
}

static void user_msg(json_object *msgs, json_object *c)
{
    if (is_str(c)) {
        add_msg(msgs, "user", json_object_get(c));
        return;
    }
    json_object *rest = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(c); i++) {
        json_object *b = json_object_array_get_idx(c, i);
        const char *t = str_of(b, "type");
        if (t && !strcmp(t, "tool_result")) {
            json_object *rc = get(b, "content"), *m = json_object_new_object();
            json_object_object_add(m, "role", json_object_new_string("tool"));
            json_object_object_add(m, "tool_call_id", json_object_new_string(str_of(b, "tool_use_id")));
            json_object_object_add(m, "content", !rc ? json_object_new_string("")
                                                 : is_str(rc) ? json_object_get(rc) : content_of(rc));
            json_object_array_add(msgs, m);
        } else {
            json_object_array_add(rest, json_object_get(b));
        }
    }
    if (json_object_array_length(rest))
        add_msg(msgs, "user", content_of(rest));
    json_object_put(rest);
}

static void assistant_msg(json_object *msgs, json_object *c)
{
    if (is_str(c)) {
        add_msg(msgs, "assistant", json_object_get(c));
        return;
    }
    char *text = NULL, *think = NULL;
    size_t tl = 0, kl = 0;
    json_object *calls = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(c); i++) {
        json_object *b = json_object_array_get_idx(c, i);
        const char *t = str_of(b, "type");
        if (!strcmp(t, "text")) {
            cat(&text, &tl, str_of(b, "text"), strlen(str_of(b, "text")));
        } else if (!strcmp(t, "thinking")) {
            cat(&think, &kl, str_of(b, "thinking"), strlen(str_of(b, "thinking")));
        } else if (!strcmp(t, "tool_use")) {
            json_object *call = json_object_new_object(), *fn = json_object_new_object();
            json_object_object_add(call, "id", json_object_new_string(str_of(b, "id")));
            json_object_object_add(call, "type", json_object_new_string("function"));
            json_object_object_add(fn, "name", json_object_new_string(str_of(b, "name")));
            json_object_object_add(fn, "arguments",
                                   json_object_new_string(json_object_to_json_string_ext(
                                       get(b, "input"), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
            json_object_object_add(call, "function", fn);
            json_object_array_add(calls, call);
        }
    }
    json_object *m = json_object_new_object();
    json_object_object_add(m, "role", json_object_new_string("assistant"));
    json_object_object_add(m, "content", text || !json_object_array_length(calls)
                                             ? json_object_new_string_len(text ? text : "", (int)tl) : NULL);
    if (think)
        json_object_object_add(m, "reasoning_content", json_object_new_string_len(think, (int)kl));
    if (json_object_array_length(calls))
        json_object_object_add(m, "tool_calls", calls);
    else
        json_object_put(calls);
    json_object_array_add(msgs, m);
    free(text);
    free(think);
}

static void pass(json_object *c, json_object *o, const char *k, const char *as)
{
    json_object *v = get(o, k);
    if (v)
        json_object_object_add(c, as ? as : k, json_object_get(v));
}

static json_object *translate(json_object *o, const req_messages_t *q, int64_t max_tokens, int64_t budget, bool count,
                              bool *prefill)
{
    json_object *c = json_object_new_object(), *msgs = json_object_new_array(), *sys = get(o, "system");
    if (sys)
        add_msg(msgs, "system", is_str(sys) ? json_object_get(sys) : content_of(sys));
    json_object *m = get(o, "messages");
    size_t n = json_object_array_length(m);
    for (size_t i = 0; i < n; i++) {
        json_object *msg = json_object_array_get_idx(m, i);
        if (!strcmp(str_of(msg, "role"), "user"))
            user_msg(msgs, get(msg, "content"));
        else
            assistant_msg(msgs, get(msg, "content"));
    }
    json_object_object_add(c, "messages", msgs);
    /* Anthropic's prefill: a last assistant message (with text and no tool
     * call) is continued, not answered */
    json_object *last = json_object_array_get_idx(msgs, json_object_array_length(msgs) - 1);
    *prefill = !strcmp(str_of(last, "role"), "assistant") && !get(last, "tool_calls") && is_str(get(last, "content"));
    if (*prefill) {
        json_object_object_add(c, "continue_final_message", json_object_new_boolean(true));
        json_object_object_add(c, "add_generation_prompt", json_object_new_boolean(false));
    }
    pass(c, o, "model", NULL);
    if (!count)
        json_object_object_add(c, "max_tokens", json_object_new_int64(max_tokens));
    pass(c, o, "temperature", NULL);
    pass(c, o, "top_p", NULL);
    pass(c, o, "top_k", NULL);
    pass(c, o, "stop_sequences", "stop");
    pass(c, get(o, "metadata"), "user_id", "user");
    if (q->stream)
        json_object_object_add(c, "stream", json_object_new_boolean(true));
    json_object *tools = get(o, "tools");
    if (tools && json_object_array_length(tools)) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(tools); i++) {
            json_object *t = json_object_array_get_idx(tools, i), *w = json_object_new_object(),
                        *fn = json_object_new_object();
            json_object_object_add(w, "type", json_object_new_string("function"));
            pass(fn, t, "name", NULL);
            pass(fn, t, "description", NULL);
            pass(fn, t, "input_schema", "parameters");
            pass(fn, t, "strict", NULL);
            json_object_object_add(w, "function", fn);
            json_object_array_add(a, w);
        }
        json_object_object_add(c, "tools", a);
    }
    json_object *tc = get(o, "tool_choice");
    const char *tt = str_of(tc, "type");
    if (tt && tools && json_object_array_length(tools)) {
        if (!strcmp(tt, "tool")) {
            json_object *w = json_object_new_object(), *fn = json_object_new_object();
            json_object_object_add(w, "type", json_object_new_string("function"));
            pass(fn, tc, "name", NULL);
            json_object_object_add(w, "function", fn);
            json_object_object_add(c, "tool_choice", w);
        } else {
            json_object_object_add(c, "tool_choice",
                                   json_object_new_string(!strcmp(tt, "any") ? "required" : tt));
        }
        json_object *d = get(tc, "disable_parallel_tool_use");
        if (d && json_object_get_boolean(d))
            json_object_object_add(c, "parallel_tool_calls", json_object_new_boolean(false));
    } else if (tt && (!strcmp(tt, "tool") || !strcmp(tt, "any"))) {
        json_object_object_add(c, "tool_choice", json_object_new_string("required")); /* the chat parser's 400 */
    }
    json_object *kw = json_object_new_object();
    json_object_object_add(kw, "enable_thinking", json_object_new_boolean(q->thinking));
    json_object_object_add(c, "chat_template_kwargs", kw);
    if (q->thinking)
        json_object_object_add(c, "reasoning_effort", json_object_new_string(budget < 4096 ? "low"
                                                                             : budget < 16384 ? "medium" : "high"));
    return c;
}

int req_messages_parse(const char *body, size_t len, bool count, const req_limits_t *lim, req_messages_t *out,
                       req_err_t *e)
{
    memset(out, 0, sizeof *out);
    json_object *o = req_json_parse_object(body, len, e);
    if (!o)
        return -1;
    int64_t max_tokens = 0, budget = 0;
    if (check_fields(o, count, out, &max_tokens, &budget, e) < 0) {
        json_object_put(o);
        return -1;
    }
    json_object *c = translate(o, out, max_tokens, budget, count, &out->prefill);
    json_object_put(o);
    if (req_chat_from_json(c, lim, &out->chat, e) < 0) {
        if (!strcmp(e->param, "stop"))
            snprintf(e->param, sizeof e->param, "stop_sequences");
        return -1;
    }
    return 0;
}

void req_messages_free(req_messages_t *q)
{
    req_chat_free(&q->chat);
    memset(q, 0, sizeof *q);
}
