/* chat_render_caps.c - probing a chat template's expectations and shaping
 * a request's messages for it (see chat_render_caps.h). */
#include "server/chat/chat_render_caps.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request/request_chat.h"

#define NEEDLE "argument_needle"
#define NEEDLE_VALUE "print('Hello, World!')"

/* ---- probing ------------------------------------------------------------ */

/* The probe conversation: a call with the needle argument, its result, a
 * follow-up turn. The tool's schema names another parameter, so a template
 * that prints the tools cannot show the needle by itself. */
static json_object *probe_context(const chat_template_t *t, bool args_string, bool null_content, const char *bos,
                                  const char *eos)
{
    static const char head[] =
        "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"tool_probe\", \"description\": \"Probe\","
        " \"parameters\": {\"type\": \"object\", \"properties\": {\"code\": {\"type\": \"string\"}},"
        " \"required\": [\"code\"]}}}],"
        " \"messages\": [{\"role\": \"user\", \"content\": \"Run it.\"},"
        " {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"call12345\", \"type\": \"function\","
        " \"function\": {\"name\": \"tool_probe\", \"arguments\": ";
    static const char tail[] =
        "}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call12345\", \"name\": \"tool_probe\", \"content\": \"ok\"},"
        " {\"role\": \"assistant\", \"content\": \"Done.\"}, {\"role\": \"user\", \"content\": \"Thanks.\"}],"
        " \"add_generation_prompt\": true}";
    static const char args_obj[] = "{\"" NEEDLE "\": \"" NEEDLE_VALUE "\"}";
    static const char args_str[] = "\"{\\\"" NEEDLE "\\\": \\\"" NEEDLE_VALUE "\\\"}\"";
    size_t n = sizeof head + sizeof tail + sizeof args_str;
    char *text = malloc(n);
    if (!text)
        return NULL;
    snprintf(text, n, "%s%s%s", head, args_string ? args_str : args_obj, tail);
    json_object *o = json_tokener_parse(text);
    free(text);
    if (o) {
        json_object *msgs, *call_msg;
        if (null_content && json_object_object_get_ex(o, "messages", &msgs) &&
            (call_msg = json_object_array_get_idx(msgs, 1)))
            json_object_object_add(call_msg, "content", NULL);
        json_object_object_add(o, "documents", NULL);
        if (bos)
            json_object_object_add(o, "bos_token", json_object_new_string(bos));
        if (eos)
            json_object_object_add(o, "eos_token", json_object_new_string(eos));
        if (chat_template_reads(t, "functions"))
            json_object_object_add(o, "functions", json_object_new_string(""));
        if (chat_template_reads(t, "datetime"))
            json_object_object_add(o, "datetime", json_object_new_string("Jan 01 2025 00:00:00 GMT"));
        if (chat_template_reads(t, "date_string"))
            json_object_object_add(o, "date_string", json_object_new_string("01 Jan 2025"));
    }
    return o;
}

/* The probe rendered in one form (malloc'd), NULL when it fails. */
static char *render_probe(const chat_template_t *t, bool args_string, bool null_content, const char *bos,
                          const char *eos)
{
    json_object *ctx = probe_context(t, args_string, null_content, bos, eos);
    char *out = NULL;
    chat_render_opts_t opts = {.now = 1, .extensions = true}; /* as the server renders */
    if (!ctx || chat_template_render(t, ctx, &opts, &out, NULL, NULL, NULL) != LF_OK) {
        free(out);
        out = NULL;
    }
    json_object_put(ctx);
    return out;
}

char *chat_caps_probe_text(const chat_template_t *t, const char *bos, const char *eos)
{
    char *out = NULL;
    for (int k = 0; t && !out && k < 4; k++)
        out = render_probe(t, (k & 1) != 0, (k & 2) != 0, bos, eos);
    return out;
}

/* Does the rendered probe show the argument as a model would read it? */
static bool shows_needle(const chat_template_t *t, bool args_string, bool null_content, const char *bos,
                         const char *eos)
{
    static const char *const forms[] = {
        "\"" NEEDLE "\"",  /* JSON key, name="..." attributes */
        NEEDLE ">",        /* <parameter=argument_needle> */
        NEEDLE "<",        /* <arg_key>argument_needle</arg_key> */
        NEEDLE ":",        /* gemma's call:f{argument_needle:...} */
        NEEDLE "=",        /* pythonic */
    };
    char *out = render_probe(t, args_string, null_content, bos, eos);
    bool shown = false;
    for (size_t i = 0; out && i < sizeof forms / sizeof forms[0] && !shown; i++)
        shown = strstr(out, forms[i]) != NULL;
    free(out);
    return shown;
}

/* A `for` statement whose iterable mentions content: the template walks
 * content parts itself (vLLM's "openai" content format). */
static bool iterates_content(const char *src)
{
    for (const char *p = src; (p = strstr(p, "{%")); p += 2) {
        const char *end = strstr(p, "%}");
        if (!end)
            break;
        const char *f = p + 2;
        while (f < end && (*f == '-' || *f == '+' || isspace((unsigned char)*f)))
            f++;
        if (end - f < 4 || strncmp(f, "for", 3) || !isspace((unsigned char)f[3]))
            continue;
        const char *in = NULL;
        for (const char *q = f + 3; q + 4 <= end; q++)
            if (isspace((unsigned char)q[0]) && !strncmp(q + 1, "in", 2) && isspace((unsigned char)q[3])) {
                in = q + 3;
                break;
            }
        if (!in)
            continue;
        for (const char *q = in; q + 7 <= end; q++)
            if (!strncmp(q, "content", 7))
                return true;
    }
    return false;
}

/* What the template writes for an image part between two text parts
 * (trimmed), into marker ("" when nothing or the probe fails). */
static void probe_image_marker(const chat_template_t *t, const char *bos, const char *eos, char *marker, size_t cap)
{
    static const char ctx_text[] =
        "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Probe one.\"},"
        " {\"type\": \"image\"}, {\"type\": \"text\", \"text\": \"Probe two.\"}]}], \"add_generation_prompt\": true}";
    marker[0] = '\0';
    json_object *ctx = json_tokener_parse(ctx_text);
    if (!ctx)
        return;
    if (bos)
        json_object_object_add(ctx, "bos_token", json_object_new_string(bos));
    if (eos)
        json_object_object_add(ctx, "eos_token", json_object_new_string(eos));
    char *out = NULL;
    chat_render_opts_t opts = {.now = 1, .extensions = true};
    if (chat_template_render(t, ctx, &opts, &out, NULL, NULL, NULL) == LF_OK && out) {
        const char *a = strstr(out, "Probe one."), *b = a ? strstr(a, "Probe two.") : NULL;
        if (a && b) {
            a += strlen("Probe one.");
            while (a < b && isspace((unsigned char)*a))
                a++;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            if (b > a && (size_t)(b - a) < cap)
                snprintf(marker, cap, "%.*s", (int)(b - a), a);
        }
    }
    free(out);
    json_object_put(ctx);
}

void chat_caps_probe(const chat_template_t *t, const char *src, const char *bos, const char *eos, chat_caps_t *caps)
{
    memset(caps, 0, sizeof *caps);
    if (!t || !src)
        return;
    bool shown[2][2]; /* [arguments as a string][content null] */
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < 2; c++)
            shown[a][c] = shows_needle(t, a, c, bos, eos);
    bool obj = shown[0][0] || shown[0][1], str = shown[1][0] || shown[1][1];
    caps->args_as_string = str && !obj;
    int a = caps->args_as_string;
    caps->null_content = shown[a][1] && !shown[a][0];
    caps->content_parts = iterates_content(src);
    if (caps->content_parts)
        probe_image_marker(t, bos, eos, caps->image_marker, sizeof caps->image_marker);
    caps->knows_developer = strstr(src, "developer") != NULL;
    caps->reads_thinking = strstr(src, ".thinking") || strstr(src, "'thinking'") || strstr(src, "\"thinking\"");
    caps->reads_effort = strstr(src, "reasoning_effort") != NULL;
    caps->reads_functions = chat_template_reads(t, "functions");
    caps->reads_datetime = chat_template_reads(t, "datetime");
    caps->reads_date_string = chat_template_reads(t, "date_string");
}

/* ---- the view ----------------------------------------------------------- */

static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

/* A tool call with its arguments in the form the template expects. */
static json_object *view_call(const chat_caps_t *caps, json_object *call)
{
    json_object *copy = NULL;
    if (json_object_deep_copy(call, &copy, NULL) != 0)
        return NULL;
    json_object *fn = get(copy, "function"), *args = get(fn, "arguments");
    if (!caps->args_as_string && args && json_object_is_type(args, json_type_string)) {
        json_object *parsed = json_tokener_parse(json_object_get_string(args));
        if (parsed && json_object_is_type(parsed, json_type_object))
            json_object_object_add(fn, "arguments", parsed);
        else
            json_object_put(parsed);
    }
    return copy;
}

static bool is_image_part(json_object *p)
{
    json_object *t = get(p, "type");
    return t && json_object_is_type(t, json_type_string) && !strcmp(json_object_get_string(t), "image_url");
}

/* Text parts joined with "\n" (vLLM's string content format); image parts
 * as CHAT_MEDIA_MARKER with no "\n" next to them (llama-server's rule). */
static json_object *joined_parts(json_object *parts)
{
    size_t n = json_object_array_length(parts), total = 1;
    for (size_t i = 0; i < n; i++)
        total += (size_t)json_object_get_string_len(get(json_object_array_get_idx(parts, i), "text")) + 1 +
                 strlen(CHAT_MEDIA_MARKER);
    char *s = malloc(total), *w = s;
    if (!s)
        return NULL;
    bool last_media = false;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(parts, i);
        if (is_image_part(p)) {
            memcpy(w, CHAT_MEDIA_MARKER, strlen(CHAT_MEDIA_MARKER));
            w += strlen(CHAT_MEDIA_MARKER);
            last_media = true;
            continue;
        }
        json_object *tx = get(p, "text");
        if (w > s && !last_media)
            *w++ = '\n';
        last_media = false;
        size_t l = (size_t)json_object_get_string_len(tx);
        memcpy(w, json_object_get_string(tx), l);
        w += l;
    }
    *w = '\0';
    json_object *o = json_object_new_string_len(s, (int)(w - s));
    free(s);
    return o;
}

static bool has_images(json_object *parts)
{
    for (size_t i = 0; i < json_object_array_length(parts); i++)
        if (is_image_part(json_object_array_get_idx(parts, i)))
            return true;
    return false;
}

/* The parts as templates take them: image parts become {"type": "image"}
 * (the data stays out of the template's context). */
static json_object *typed_parts(json_object *parts)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < json_object_array_length(parts); i++) {
        json_object *p = json_object_array_get_idx(parts, i);
        if (is_image_part(p)) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "type", json_object_new_string("image"));
            json_object_array_add(a, o);
        } else {
            json_object_array_add(a, json_object_get(p));
        }
    }
    return a;
}

static json_object *view_message(const chat_caps_t *caps, json_object *m)
{
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    json_object *reasoning = get(m, "reasoning_content");
    if (!reasoning || !json_object_is_type(reasoning, json_type_string))
        reasoning = get(m, "reasoning");
    if (reasoning && !json_object_is_type(reasoning, json_type_string))
        reasoning = NULL;
    json_object_object_foreach(m, k, v) {
        json_object *nv;
        if (!strcmp(k, "role") && v && !caps->knows_developer && !strcmp(json_object_get_string(v), "developer"))
            nv = json_object_new_string("system");
        else if (!strcmp(k, "content") && !v)
            nv = caps->null_content ? NULL : json_object_new_string("");
        else if (!strcmp(k, "content") && json_object_is_type(v, json_type_array) &&
                 (!caps->content_parts || (has_images(v) && !caps->image_marker[0])))
            nv = joined_parts(v);
        else if (!strcmp(k, "content") && json_object_is_type(v, json_type_array) && has_images(v))
            nv = typed_parts(v);
        else if (!strcmp(k, "tool_calls") && json_object_is_type(v, json_type_array)) {
            nv = json_object_new_array();
            for (size_t i = 0; nv && i < json_object_array_length(v); i++)
                json_object_array_add(nv, view_call(caps, json_object_array_get_idx(v, i)));
        } else
            nv = json_object_get(v);
        json_object_object_add(out, k, nv);
    }
    if (!json_object_object_get_ex(out, "content", NULL))
        json_object_object_add(out, "content", caps->null_content ? NULL : json_object_new_string(""));
    if (reasoning) {
        const char *names[] = {"reasoning_content", "reasoning", caps->reads_thinking ? "thinking" : NULL};
        for (size_t i = 0; i < 3; i++)
            if (names[i] && !get(out, names[i]))
                json_object_object_add(out, names[i], json_object_get(reasoning));
    }
    return out;
}

/* json.dumps(tools, indent=2) (Python's defaults: ASCII escapes, ", "
 * / ": " separators), "" without tools: what llama.cpp gives firefunction
 * v2 as `functions`. Rendered by the interpreter's tojson, which follows
 * json.dumps exactly. */
static json_object *functions_text(json_object *tools)
{
    if (!tools || !json_object_is_type(tools, json_type_array))
        return json_object_new_string("");
    json_object *ctx = json_object_new_object();
    char *out = NULL;
    if (ctx)
        json_object_object_add(ctx, "tools", json_object_get(tools));
    lf_code_t rc = ctx ? chat_template_render_string("{{ tools | tojson(ensure_ascii=true, indent=2) }}", ctx, NULL,
                                                     &out, NULL)
                       : LF_ERR_NOMEM;
    json_object_put(ctx);
    json_object *s = rc == LF_OK ? json_object_new_string(out) : NULL;
    free(out);
    return s;
}

/* Adds the clock variables llama.cpp gives templates (UTC). */
static void add_clock(const chat_caps_t *caps, json_object *kw, time_t now)
{
    time_t t = now ? now : time(NULL);
    struct tm tm;
    char buf[64];
    if (!gmtime_r(&t, &tm))
        return;
    if (caps->reads_datetime && !json_object_object_get_ex(kw, "datetime", NULL) &&
        strftime(buf, sizeof buf, "%b %d %Y %H:%M:%S GMT", &tm))
        json_object_object_add(kw, "datetime", json_object_new_string(buf));
    if (caps->reads_date_string && !json_object_object_get_ex(kw, "date_string", NULL) &&
        strftime(buf, sizeof buf, "%d %b %Y", &tm))
        json_object_object_add(kw, "date_string", json_object_new_string(buf));
}

json_object *chat_caps_view(const chat_caps_t *caps, const chat_req_t *req, bool agp, time_t now)
{
    json_object *view = json_object_new_object(), *v;
    if (!view)
        return NULL;
    json_object *msgs = json_object_new_array();
    json_object *raw = req->raw ? get(req->raw, "messages") : NULL;
    for (size_t i = 0; msgs && raw && i < json_object_array_length(raw); i++)
        json_object_array_add(msgs, view_message(caps, json_object_array_get_idx(raw, i)));
    json_object_object_add(view, "messages", msgs);
    static const char *const keep[] = {"tools", "documents"};
    for (size_t i = 0; i < 2; i++)
        if ((v = get(req->raw, keep[i])))
            json_object_object_add(view, keep[i], json_object_get(v));
    json_object *kw = json_object_new_object(), *given = get(req->raw, "chat_template_kwargs");
    if (given && json_object_is_type(given, json_type_object)) {
        json_object_object_foreach(given, k, x) {
            json_object_object_add(kw, k, json_object_get(x));
        }
    }
    const char *effort = req->ext ? req->ext->reasoning_effort : NULL;
    if (kw && effort && caps->reads_effort && !json_object_object_get_ex(kw, "reasoning_effort", NULL))
        json_object_object_add(kw, "reasoning_effort", json_object_new_string(effort));
    if (kw && caps->reads_functions && !json_object_object_get_ex(kw, "functions", NULL))
        json_object_object_add(kw, "functions", functions_text(get(req->raw, "tools")));
    if (kw)
        add_clock(caps, kw, now);
    json_object_object_add(view, "chat_template_kwargs", kw);
    json_object_object_add(view, "add_generation_prompt", json_object_new_boolean(agp));
    return view;
}
