/* request_chat.c - tools, tool_choice and the other chat-only fields (see
 * request_chat.h). */
#include "server/request/request_chat.h"

#include "common/utf8.h"
#include "server/request/req_json.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* req_json.h: a 400 naming the field, the message cut at a character */
#define fail(e, param, ...) req_err_set(e, 400, param, NULL, __VA_ARGS__)

static int oom(req_err_t *e)
{
    return req_err_set(e, 503, NULL, NULL, "out of memory");
}

/* Present and not null. */
static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

static bool is_str(json_object *v)
{
    return json_object_is_type(v, json_type_string);
}

#define get_flag(o, k, out, e) (req_json_flag(o, k, out, e) < 0 ? -1 : 0)

static int parse_tools(json_object *o, chat_ext_t *x, req_err_t *e)
{
    json_object *t = get(o, "tools");
    if (!t)
        return 0;
    if (!json_object_is_type(t, json_type_array))
        return fail(e, "tools", "'tools' must be an array");
    size_t n = json_object_array_length(t);
    if (n == 0)
        return fail(e, "tools", "'tools' must not be empty (leave it out instead)");
    for (size_t i = 0; i < n; i++) {
        json_object *tool = json_object_array_get_idx(t, i), *type, *fn, *name, *v;
        if (!json_object_is_type(tool, json_type_object))
            return fail(e, "tools", "tools[%zu] must be an object", i);
        if (!(type = get(tool, "type")) || !is_str(type) || strcmp(json_object_get_string(type), "function"))
            return fail(e, "tools", "tools[%zu].type must be \"function\" (the only tool type supported)", i);
        if (!(fn = get(tool, "function")) || !json_object_is_type(fn, json_type_object))
            return fail(e, "tools", "tools[%zu].function must be an object", i);
        if (!(name = get(fn, "name")) || !is_str(name) || json_object_get_string_len(name) == 0)
            return fail(e, "tools", "tools[%zu].function.name must be a non-empty string", i);
        if ((v = get(fn, "description")) && !is_str(v))
            return fail(e, "tools", "tools[%zu].function.description must be a string", i);
        if ((v = get(fn, "parameters")) && !json_object_is_type(v, json_type_object))
            return fail(e, "tools", "tools[%zu].function.parameters must be a JSON schema object", i);
    }
    x->n_tools = n;
    return 0;
}

static bool tool_known(json_object *o, const char *name)
{
    json_object *t = get(o, "tools");
    size_t n = t ? json_object_array_length(t) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *nm = get(get(json_object_array_get_idx(t, i), "function"), "name");
        if (nm && !strcmp(json_object_get_string(nm), name))
            return true;
    }
    return false;
}

static int parse_tool_choice(json_object *o, chat_ext_t *x, req_err_t *e)
{
    json_object *c = get(o, "tool_choice");
    x->tool_choice = x->n_tools ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
    if (!c)
        return 0;
    if (is_str(c)) {
        const char *s = json_object_get_string(c);
        if (!strcmp(s, "none"))
            x->tool_choice = TOOL_CHOICE_NONE;
        else if (!strcmp(s, "auto"))
            x->tool_choice = TOOL_CHOICE_AUTO;
        else if (!strcmp(s, "required"))
            x->tool_choice = TOOL_CHOICE_REQUIRED;
        else
            return fail(e, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}, got \"%.*s\"",
                        (int)utf8_clip(s, strlen(s), 100), s);
    } else if (json_object_is_type(c, json_type_object)) {
        json_object *type = get(c, "type"), *name = get(get(c, "function"), "name");
        if (!type || !is_str(type) || strcmp(json_object_get_string(type), "function") || !name || !is_str(name))
            return fail(e, "tool_choice", "a named 'tool_choice' must be {\"type\": \"function\", \"function\": "
                        "{\"name\": ...}}");
        x->tool_choice = TOOL_CHOICE_NAMED;
        if (!(x->tool_name = strdup(json_object_get_string(name))))
            return oom(e);
    } else {
        return fail(e, "tool_choice", "'tool_choice' must be a string or an object");
    }
    if (x->tool_choice != TOOL_CHOICE_NONE && !x->n_tools)
        return fail(e, "tool_choice", "'tool_choice' needs 'tools'");
    if (x->tool_choice == TOOL_CHOICE_NAMED && !tool_known(o, x->tool_name))
        return fail(e, "tool_choice", "'tool_choice' names the function '%.*s', which is not in 'tools'",
                    (int)utf8_clip(x->tool_name, strlen(x->tool_name), 100), x->tool_name);
    return 0;
}

/* One assistant tool call: validated. */
static int check_call(json_object *call, size_t mi, size_t ci, req_err_t *e)
{
    char param[48];
    snprintf(param, sizeof param, "messages[%zu].tool_calls", mi);
    json_object *fn, *name, *args, *v;
    if (!json_object_is_type(call, json_type_object))
        return fail(e, param, "%s[%zu] must be an object", param, ci);
    if ((v = get(call, "id")) && !is_str(v))
        return fail(e, param, "%s[%zu].id must be a string", param, ci);
    if ((v = get(call, "type")) && (!is_str(v) || strcmp(json_object_get_string(v), "function")))
        return fail(e, param, "%s[%zu].type must be \"function\"", param, ci);
    if (!(fn = get(call, "function")) || !json_object_is_type(fn, json_type_object))
        return fail(e, param, "%s[%zu].function must be an object", param, ci);
    if (!(name = get(fn, "name")) || !is_str(name))
        return fail(e, param, "%s[%zu].function.name must be a string", param, ci);
    if (!(args = get(fn, "arguments")) || !is_str(args))
        return fail(e, param, "%s[%zu].function.arguments must be a string (JSON text)", param, ci);
    return 0;
}

static int parse_msgs(json_object *o, req_err_t *e)
{
    json_object *m = get(o, "messages");
    size_t n = m ? json_object_array_length(m) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *msg = json_object_array_get_idx(m, i), *role = get(msg, "role"), *v;
        const char *r = role ? json_object_get_string(role) : "";
        char param[64];
        if (!strcmp(r, "tool")) {
            snprintf(param, sizeof param, "messages[%zu].tool_call_id", i);
            if (!(v = get(msg, "tool_call_id")) || !is_str(v))
                return fail(e, param, "a tool message needs '%s' (a string)", param);
        }
        if ((v = get(msg, "reasoning_content")) && !is_str(v)) {
            snprintf(param, sizeof param, "messages[%zu].reasoning_content", i);
            return fail(e, param, "'%s' must be a string", param);
        }
        json_object *calls = get(msg, "tool_calls");
        if (calls) {
            snprintf(param, sizeof param, "messages[%zu].tool_calls", i);
            if (strcmp(r, "assistant"))
                return fail(e, param, "only assistant messages may have 'tool_calls'");
            if (!json_object_is_type(calls, json_type_array))
                return fail(e, param, "'%s' must be an array", param);
            for (size_t c = 0; c < json_object_array_length(calls); c++)
                if (check_call(json_object_array_get_idx(calls, c), i, c, e) < 0)
                    return -1;
        }
    }
    return 0;
}

static int parse_effort(json_object *o, chat_ext_t *x, req_err_t *e)
{
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};
    json_object *v = get(o, "reasoning_effort");
    if (!v)
        return 0;
    for (size_t i = 0; is_str(v) && i < sizeof efforts / sizeof efforts[0]; i++)
        if (!strcmp(json_object_get_string(v), efforts[i]))
            return (x->reasoning_effort = strdup(efforts[i])) ? 0 : oom(e);
    return fail(e, "reasoning_effort", "'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\", "
                "\"high\" or \"xhigh\"");
}

int req_chat_ext_parse(json_object *o, chat_req_t *r, req_err_t *e)
{
    chat_ext_t *x = calloc(1, sizeof *x);
    if (!x)
        return oom(e);
    r->ext = x;
    x->parallel_tool_calls = true;
    x->add_generation_prompt = true;
    if (parse_tools(o, x, e) < 0 || parse_tool_choice(o, x, e) < 0 ||
        get_flag(o, "parallel_tool_calls", &x->parallel_tool_calls, e) < 0 ||
        get_flag(o, "add_generation_prompt", &x->add_generation_prompt, e) < 0 ||
        get_flag(o, "continue_final_message", &x->continue_final_message, e) < 0 || parse_effort(o, x, e) < 0)
        return -1;
    if (x->add_generation_prompt && x->continue_final_message)
        return fail(e, "continue_final_message",
                    "'continue_final_message' and 'add_generation_prompt' cannot both be true "
                    "(set add_generation_prompt to false to continue the last message)");
    if (x->continue_final_message) {
        json_object *m = get(o, "messages");
        size_t n = m ? json_object_array_length(m) : 0;
        json_object *role = n ? get(json_object_array_get_idx(m, n - 1), "role") : NULL;
        if (!role || strcmp(json_object_get_string(role), "assistant"))
            return fail(e, "continue_final_message",
                        "'continue_final_message' needs the last message to be from the assistant");
    }
    json_object *v = get(o, "chat_template_kwargs");
    if (v && !json_object_is_type(v, json_type_object))
        return fail(e, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    if ((v = get(o, "documents"))) {
        if (!json_object_is_type(v, json_type_array))
            return fail(e, "documents", "'documents' must be an array of objects");
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_object))
                return fail(e, "documents", "documents[%zu] must be an object", i);
    }
    return parse_msgs(o, e);
}

void req_chat_ext_free(chat_ext_t *x)
{
    if (!x)
        return;
    free(x->tool_name);
    free(x->reasoning_effort);
    free(x);
}

bool req_chat_wants_tools(const chat_ext_t *x)
{
    return x && x->n_tools > 0 && x->tool_choice != TOOL_CHOICE_NONE;
}
