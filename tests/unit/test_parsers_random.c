/* test_parsers_random.c - randomized differential test of the output
 * parsers: random texts built from markup, JSON and text fragments must give
 * the same result whether pushed whole, byte by byte or cut at random
 * places; the streamed events must rebuild that result; complete calls must
 * carry valid JSON objects. Fixed seeds: the run is reproducible. */
#include "chat/parse/reasoning.h"
#include "chat/parse/toolcall.h"
#include "tap.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static const char *const frags[] = {
    "<tool_call>", "</tool_call>", "<tool_", "[TOOL_CALLS]", "[TOOL_", "<|python_tag|>",
    "<think>", "</think>", "</th", "{", "}", "[", "]", ",", ":", ";", "\"", "\\", "\\\"",
    "\"name\"", "\"arguments\"", "\"parameters\"", "\"type\"", "\"f\"", "\"g\\u0041\"", "1",
    "-2.5", "true", "null", " ", "\n", "x", "hello", "\xc3\xa9", "\xf0\x9f\x98\x80",
    "{\"name\": \"f\", \"arguments\": {", "{\"name\":\"g\",\"parameters\":{\"a\":", "}}",
    "\"</tool_call>\"", "\"]\"", "\"a b\"", "[ARGS]", "fn",
    /* the newer formats' markup */
    "<function=", "<parameter=", "</parameter>", "</function>", "<arg_key>", "</arg_key>", "<arg_value>",
    "</arg_value>", "<invoke name=\"", "\">", "</invoke>", "<minimax:tool_call>", "<seed:tool_call>",
    "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
    "functions.f:0", "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>", "```json\n", "\n```", "functools[", "<|tool_call|>",
    "<|channel|>", "<|message|>", "<|start|>", "<|end|>", "<|call|>", "analysis", "final",
    "commentary to=functions.f", "[THINK]", "[/THINK]", "<seed:think>", "</seed:think>", "Here is my response:",
    "(", ")", "=", "'", "True", "None", "[f(", "a=1", "<|python_start|>",
    /* the 2026 formats' markup */
    "<\xef\xbd\x9c" "DSML\xef\xbd\x9c", "invoke name=\"", "parameter name=\"", "\" string=\"true\">",
    "<|tool_call>call:", "<tool_call|>", "<|\"|>", "<TOOLCALL>", "</TOOLCALL>", "<|open|>", "<|close|>", "<|sep|>",
    "tools", "call tool=\"", "argument key=\"", "<|START_ACTION|>", "\"tool_name\"", "<tool_calls>",
    "<|function_call|>", "<|message_sep|>", "<|tools_prefix|>", "]<]minimax[>[", "<item>", "<tool_call:opensource>",
    "<tool_sep:opensource>", "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>", "<function name=\"",
    "<param name=\"", "<![CDATA[", "]]>", ">>>", "all\n", "<|channel>", "<channel|>", "thought\n",
    "<|START_THINKING|>", "<|END_THINKING|>", "<mm:think>", "</mm:think>", "<|think|>", "[BEGIN FINAL RESPONSE]",
};
#define NFRAGS (sizeof frags / sizeof frags[0])

static size_t random_text(char *buf, size_t cap)
{
    size_t len = 0;
    int n = (int)rnd(14);
    for (int i = 0; i < n; i++) {
        const char *f = frags[rnd(NFRAGS)];
        size_t fl = strlen(f);
        if (len + fl + 1 > cap)
            break;
        memcpy(buf + len, f, fl);
        len += fl;
    }
    buf[len] = '\0';
    return len;
}

static void add(char *buf, size_t *len, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > cap)
        return;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

static const char *const values[] = {
    "1", "\"Paris\"", "\"a </tool_call> \\\" ]\"", "[1, {\"b\": null}]", "{}", "true",
    "\"\xe6\x97\xa5\\u00e9\"", "-0.5e2", "\"\\\\\"",
};
#define NVALUES (sizeof values / sizeof values[0])

static const char *const pyvalues[] = {
    "1", "'Paris'", "\"a ) ] \\\" x\"", "[1, {'b': None}]", "{}", "True", "(1, 2.5)", "-0.5e2",
};
#define NPYVALUES (sizeof pyvalues / sizeof pyvalues[0])

static void add_opt(char *buf, size_t *len, size_t cap, const char *s)
{
    if (s)
        add(buf, len, cap, s);
}

/* One to three calls of a format that is not a JSON-object one, written
 * from its description (toolcall_format_desc_t). */
static void desc_calls(toolcall_format_t fmt, char *buf, size_t *len, size_t cap, int ncalls)
{
    const toolcall_format_desc_t *d = toolcall_format_desc(fmt);
    if (rnd(3) == 0 && !d->whole_message)
        add(buf, len, cap, "Sure. ");
    add_opt(buf, len, cap, d->layout == TOOLCALL_LAYOUT_PYTHONIC ? "[" : d->section_open);
    for (int c = 0; c < ncalls; c++) {
        const char *name = rnd(2) ? "fn" : "get_weather";
        int nargs = (int)rnd(4);
        char kv[64];
        switch (d->layout) {
        case TOOLCALL_LAYOUT_PYTHONIC:
            if (c)
                add(buf, len, cap, ", ");
            add(buf, len, cap, name);
            add(buf, len, cap, "(");
            for (int a = 0; a < nargs; a++) {
                snprintf(kv, sizeof kv, "%sk%d=", a ? ", " : "", a);
                add(buf, len, cap, kv);
                add(buf, len, cap, pyvalues[rnd(NPYVALUES)]);
            }
            add(buf, len, cap, ")");
            break;
        case TOOLCALL_LAYOUT_JSON_OBJECT:
        case TOOLCALL_LAYOUT_JSON_NAMED:
            if (c)
                add_opt(buf, len, cap, d->call_sep);
            add_opt(buf, len, cap, d->call_open);
            add(buf, len, cap, "{\"");
            if (d->layout == TOOLCALL_LAYOUT_JSON_NAMED) {
                add(buf, len, cap, name);
                add(buf, len, cap, "\": {");
            } else {
                add(buf, len, cap, d->name_key ? d->name_key : "name");
                add(buf, len, cap, "\": \"");
                add(buf, len, cap, name);
                add(buf, len, cap, "\", \"");
                add(buf, len, cap, d->args_key ? d->args_key : "arguments");
                add(buf, len, cap, "\": {");
            }
            for (int a = 0; a < nargs; a++) {
                snprintf(kv, sizeof kv, "%s\"k%d\": ", a ? ", " : "", a);
                add(buf, len, cap, kv);
                add(buf, len, cap, values[rnd(NVALUES)]);
            }
            add(buf, len, cap, "}}");
            add_opt(buf, len, cap, d->call_close);
            break;
        case TOOLCALL_LAYOUT_NAME_PARAMS:
            add(buf, len, cap, d->call_open);
            add(buf, len, cap, name);
            add(buf, len, cap, d->name_close ? d->name_close : "\n");
            if (d->name_attr) {
                add(buf, len, cap, d->name_attr);
                add(buf, len, cap, c ? "2\"" : "1\"");
            }
            add_opt(buf, len, cap, d->name_end);
            for (int a = 0; a < nargs; a++) {
                add(buf, len, cap, d->key_open);
                snprintf(kv, sizeof kv, "k%d", a);
                add(buf, len, cap, kv);
                add(buf, len, cap, d->key_close);
                bool str = rnd(2);
                if (d->value_attr) {
                    add(buf, len, cap, d->value_attr);
                    add(buf, len, cap, str ? d->value_attr_string : d->value_attr_json ? d->value_attr_json : "object");
                    add(buf, len, cap, "\"");
                }
                add_opt(buf, len, cap, d->key_end);
                add_opt(buf, len, cap, d->value_open);
                add(buf, len, cap, str ? "Paris </x> \" ]" : rnd(2) ? values[rnd(NVALUES)] : pyvalues[rnd(NPYVALUES)]);
                if (d->value_close) {
                    add(buf, len, cap, d->value_close);
                } else { /* an element */
                    add(buf, len, cap, d->key_open);
                    snprintf(kv, sizeof kv, "/k%d", a);
                    add(buf, len, cap, kv);
                    add(buf, len, cap, d->key_close);
                }
                add(buf, len, cap, rnd(2) ? "\n" : "");
            }
            add(buf, len, cap, d->call_close);
            break;
        default: /* NAME_JSON, HARMONY */
            if (!d->prompt_opens || c)
                add_opt(buf, len, cap, d->call_open);
            if (d->id_close) {
                add(buf, len, cap, c ? "id2" : "id1");
                add(buf, len, cap, d->id_close);
            }
            if (d->layout == TOOLCALL_LAYOUT_HARMONY || fmt == TOOLCALL_FORMAT_DEEPSEEK_V3 ||
                fmt == TOOLCALL_FORMAT_KIMI_K2 || fmt == TOOLCALL_FORMAT_GEMMA4)
                add(buf, len, cap, d->name_prefix);
            add(buf, len, cap, name);
            if (fmt == TOOLCALL_FORMAT_KIMI_K2)
                add(buf, len, cap, ":0");
            add_opt(buf, len, cap, d->name_close);
            add_opt(buf, len, cap, d->args_open);
            add(buf, len, cap, "{");
            for (int a = 0; a < nargs; a++) {
                if (d->string_delim) { /* gemma4's syntax */
                    snprintf(kv, sizeof kv, "%sk%d:", a ? "," : "", a);
                    add(buf, len, cap, kv);
                    static const char *const gvalues[] = {"1", "<|\"|>Pa\"ris }<|\"|>", "[true,null,{x:2}]", "{}",
                                                          "-0.5e2", "<|\"|><|<|\"|>"};
                    add(buf, len, cap, gvalues[rnd(sizeof gvalues / sizeof gvalues[0])]);
                    continue;
                }
                snprintf(kv, sizeof kv, "%s\"k%d\": ", a ? ", " : "", a);
                add(buf, len, cap, kv);
                add(buf, len, cap, values[rnd(NVALUES)]);
            }
            add(buf, len, cap, "}");
            add_opt(buf, len, cap, d->args_close);
            add_opt(buf, len, cap, d->call_close);
            add_opt(buf, len, cap, d->call_sep);
            break;
        }
    }
    add_opt(buf, len, cap, d->layout == TOOLCALL_LAYOUT_PYTHONIC ? "]" : d->section_close);
    if (rnd(3) == 0 && d->layout != TOOLCALL_LAYOUT_PYTHONIC)
        add(buf, len, cap, " Done.");
}

/* A text shaped like one to three calls of the format, with content around
 * them, then maybe damaged (a fragment inserted, a range deleted, or cut). */
static size_t call_text(toolcall_format_t fmt, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    int ncalls = 1 + (int)rnd(3);
    const toolcall_format_desc_t *d = toolcall_format_desc(fmt);
    bool legacy = fmt == TOOLCALL_FORMAT_HERMES || fmt == TOOLCALL_FORMAT_LLAMA3_JSON || fmt == TOOLCALL_FORMAT_MISTRAL ||
                  fmt == TOOLCALL_FORMAT_GRANITE || fmt == TOOLCALL_FORMAT_PHI4_MINI_JSON;
    if (d && !legacy) {
        desc_calls(fmt, buf, &len, cap, ncalls);
        goto damage;
    }
    if (fmt == TOOLCALL_FORMAT_GRANITE)
        add(buf, &len, cap, rnd(2) ? "<|tool_call|>[" : "[");
    if (fmt == TOOLCALL_FORMAT_PHI4_MINI_JSON)
        add(buf, &len, cap, "functools[");
    if (fmt == TOOLCALL_FORMAT_MISTRAL && rnd(3) == 0) { /* v11: name[ARGS]{...} */
        for (int c = 0; c < ncalls; c++) {
            add(buf, &len, cap, c ? "[TOOL_CALLS]fn_2[ARGS]" : "[TOOL_CALLS]get.x[ARGS]");
            add(buf, &len, cap, rnd(2) ? "{\"k\": " : "{}");
            if (buf[len - 1] == ' ') {
                add(buf, &len, cap, values[rnd(NVALUES)]);
                add(buf, &len, cap, "}");
            }
        }
        goto damage;
    }
    if (rnd(3) == 0 && fmt != TOOLCALL_FORMAT_LLAMA3_JSON && fmt != TOOLCALL_FORMAT_GRANITE)
        add(buf, &len, cap, "Sure. ");
    if (fmt == TOOLCALL_FORMAT_MISTRAL)
        add(buf, &len, cap, "[TOOL_CALLS][");
    if (fmt == TOOLCALL_FORMAT_LLAMA3_JSON && rnd(2))
        add(buf, &len, cap, "<|python_tag|>");
    for (int c = 0; c < ncalls; c++) {
        bool list = fmt == TOOLCALL_FORMAT_MISTRAL || fmt == TOOLCALL_FORMAT_GRANITE ||
                    fmt == TOOLCALL_FORMAT_PHI4_MINI_JSON;
        if (c > 0)
            add(buf, &len, cap, list ? ", " : rnd(2) ? "\n" : "; ");
        if (fmt == TOOLCALL_FORMAT_HERMES)
            add(buf, &len, cap, "<tool_call>\n");
        add(buf, &len, cap, rnd(2) ? "{\"name\": \"fn\", " : "{\"name\":\"g\",");
        add(buf, &len, cap, fmt == TOOLCALL_FORMAT_LLAMA3_JSON ? "\"parameters\": {" : "\"arguments\": {");
        int nargs = (int)rnd(4);
        for (int a = 0; a < nargs; a++) {
            char kv[64];
            snprintf(kv, sizeof kv, "%s\"k%d\": ", a ? ", " : "", a);
            add(buf, &len, cap, kv);
            add(buf, &len, cap, values[rnd(NVALUES)]);
        }
        add(buf, &len, cap, "}}");
        if (fmt == TOOLCALL_FORMAT_HERMES)
            add(buf, &len, cap, "\n</tool_call>");
    }
    if (fmt == TOOLCALL_FORMAT_MISTRAL || fmt == TOOLCALL_FORMAT_GRANITE || fmt == TOOLCALL_FORMAT_PHI4_MINI_JSON)
        add(buf, &len, cap, "]");
    if (rnd(3) == 0 && fmt != TOOLCALL_FORMAT_LLAMA3_JSON)
        add(buf, &len, cap, " Done.");
damage:
    switch (rnd(4)) {
    case 0: { /* insert a fragment */
        const char *f = frags[rnd(NFRAGS)];
        size_t fl = strlen(f), at = rnd((uint32_t)len + 1);
        if (len + fl + 1 <= cap) {
            memmove(buf + at + fl, buf + at, len - at + 1);
            memcpy(buf + at, f, fl);
            len += fl;
        }
        break;
    }
    case 1: { /* delete a range */
        size_t at = rnd((uint32_t)len + 1), n = rnd(4);
        if (at + n > len)
            n = len - at;
        memmove(buf + at, buf + at + n, len - at - n + 1);
        len -= n;
        break;
    }
    case 2: /* cut (max_tokens) */
        len = rnd((uint32_t)len + 1);
        buf[len] = '\0';
        break;
    default:
        break;
    }
    return len;
}

/* ---- tool calls ---- */

typedef struct {
    char content[4096];
    size_t clen;
    int nstart;
    char args[8][1024];
    size_t alen[8];
    bool ok;
} rebuild_t;

static void take(rebuild_t *r, const toolcall_out_t *o)
{
    for (size_t i = 0; i < o->n; i++) {
        const toolcall_event_t *e = &o->events[i];
        if (e->kind == TOOLCALL_EV_CONTENT) {
            if (r->clen + e->len >= sizeof r->content) {
                r->ok = false;
                continue;
            }
            memcpy(r->content + r->clen, e->text, e->len);
            r->clen += e->len;
        } else if (e->kind == TOOLCALL_EV_START) {
            if (e->index != r->nstart)
                r->ok = false;
            r->nstart++;
        } else if (e->index >= 0 && e->index < r->nstart && e->index < 8 &&
                   r->alen[e->index] + e->len < 1024) {
            memcpy(r->args[e->index] + r->alen[e->index], e->text, e->len);
            r->alen[e->index] += e->len;
        } else {
            r->ok = false;
        }
    }
}

/* Serialises a finished parser's result into one comparable string, and
 * checks the stream rebuild against it. */
static bool summarize(toolcall_t *p, const rebuild_t *r, char *out, size_t cap)
{
    size_t clen = 0;
    const char *c = toolcall_content(p, &clen);
    int w = snprintf(out, cap, "C[%s]", c ? c : "(null)");
    bool ok = r->ok && r->clen == (c ? clen : 0) && (!c || !memcmp(c, r->content, clen));
    ok = ok && r->nstart == (int)toolcall_count(p);
    for (size_t i = 0; i < toolcall_count(p) && w > 0 && (size_t)w < cap; i++) {
        toolcall_call_t call;
        toolcall_get(p, i, &call);
        w += snprintf(out + w, cap - (size_t)w, " CALL %s:%s(%s)%d", call.id, call.name, call.arguments,
                      call.complete);
        if (i < 8)
            ok = ok && r->alen[i] == call.arguments_len && !memcmp(r->args[i], call.arguments, r->alen[i]);
        if (call.complete) {
            json_object *o = json_tokener_parse(call.arguments);
            ok = ok && o && json_object_is_type(o, json_type_object);
            json_object_put(o);
        }
    }
    return ok;
}

static json_object *tools;

static bool run_tc(toolcall_format_t fmt, const char *text, size_t n, int mode, char *sum, size_t cap)
{
    toolcall_config_t cfg = {fmt, NULL, NULL, 99, tools};
    toolcall_t *p = toolcall_create(&cfg, NULL);
    rebuild_t *r = calloc(1, sizeof *r);
    r->ok = true;
    toolcall_out_t o;
    size_t i = 0;
    while (i < n) {
        size_t step = mode == 0 ? n : mode == 1 ? 1 : 1 + rnd(6);
        if (step > n - i)
            step = n - i;
        toolcall_push(p, text + i, step, &o, NULL);
        take(r, &o);
        i += step;
    }
    toolcall_finish(p, &o, NULL);
    take(r, &o);
    bool ok = summarize(p, r, sum, cap);
    free(r);
    toolcall_free(p);
    return ok;
}

static void test_toolcall(toolcall_format_t fmt, int iters)
{
    char text[1024];
    static char s0[8192], s1[8192], s2[8192];
    int bad = 0, with_calls = 0;
    for (int it = 0; it < iters; it++) {
        size_t n = rnd(2) ? random_text(text, sizeof text) : call_text(fmt, text, sizeof text);
        bool ok = run_tc(fmt, text, n, 0, s0, sizeof s0) && run_tc(fmt, text, n, 1, s1, sizeof s1) &&
                  run_tc(fmt, text, n, 2, s2, sizeof s2) && !strcmp(s0, s1) && !strcmp(s0, s2);
        if (!ok && bad++ < 3)
            tap_diag("text [%s]\n#  whole %s\n#  bytes %s\n#  rand  %s", text, s0, s1, s2);
        with_calls += strstr(s0, " CALL ") != NULL;
    }
    tap_diag("%d of %d texts gave calls", with_calls, iters);
    tap_ok(bad == 0, "%s: %d random texts, any split gives the same result", toolcall_format_name(fmt),
           iters);
}

/* ---- reasoning ---- */

static bool run_rs(reasoning_mode_t mode, bool inside, const char *text, size_t n, int how,
                   char *sum, size_t cap)
{
    reasoning_config_t cfg = {mode, inside, "<r>", "</r>"};
    reasoning_t *rp = reasoning_create_cfg(&cfg, NULL);
    char r[2048] = "", c[2048] = "";
    size_t rl = 0, cl = 0, i = 0;
    reasoning_out_t o;
    bool ok = true, fin = false;
    while (!fin) {
        if (i < n) {
            size_t step = how == 0 ? n : how == 1 ? 1 : 1 + rnd(6);
            if (step > n - i)
                step = n - i;
            reasoning_push(rp, text + i, step, &o, NULL);
            i += step;
        } else {
            reasoning_finish(rp, &o, NULL);
            fin = true;
        }
        for (int k = 0; k < o.n; k++) {
            char *d = o.segs[k].kind == REASONING_SEG_REASONING ? r : c;
            size_t *dl = o.segs[k].kind == REASONING_SEG_REASONING ? &rl : &cl;
            if (o.segs[k].len == 0 || *dl + o.segs[k].len >= 2048) {
                ok = false;
                continue;
            }
            memcpy(d + *dl, o.segs[k].text, o.segs[k].len);
            *dl += o.segs[k].len;
            d[*dl] = '\0';
        }
    }
    reasoning_free(rp);
    snprintf(sum, cap, "R[%s] C[%s]", r, c);
    /* the close markers never leak into the reasoning */
    const reasoning_format_t *f = reasoning_format(mode);
    for (const char *const *m = f ? f->close : NULL; m && *m; m++)
        ok = ok && !strstr(r, *m);
    return ok;
}

static void test_reasoning(reasoning_mode_t mode, bool inside, int iters)
{
    char text[1024];
    static char s0[8192], s1[8192], s2[8192];
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        size_t n = random_text(text, sizeof text);
        bool ok = run_rs(mode, inside, text, n, 0, s0, sizeof s0) &&
                  run_rs(mode, inside, text, n, 1, s1, sizeof s1) &&
                  run_rs(mode, inside, text, n, 2, s2, sizeof s2) && !strcmp(s0, s1) && !strcmp(s0, s2);
        if (!ok && bad++ < 3)
            tap_diag("text [%s]\n#  whole %s\n#  bytes %s\n#  rand  %s", text, s0, s1, s2);
    }
    tap_ok(bad == 0, "reasoning %s%s: %d random texts, any split gives the same result",
           reasoning_mode_name(mode), inside ? " (inside)" : "", iters);
}

int main(void)
{
    rng_state = 0x5eed5eed12345ull;
    test_toolcall(TOOLCALL_FORMAT_HERMES, 3000);
    test_toolcall(TOOLCALL_FORMAT_LLAMA3_JSON, 3000);
    test_toolcall(TOOLCALL_FORMAT_MISTRAL, 3000);
    test_toolcall(TOOLCALL_FORMAT_NONE, 300);
    tools = json_tokener_parse("[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\":"
                               " {\"type\": \"object\", \"properties\": {\"k0\": {\"type\": \"string\"},"
                               " \"k1\": {\"type\": \"integer\"}, \"k2\": {\"type\": \"object\"}}}}}]");
    for (int f = TOOLCALL_FORMAT_GRANITE; f < TOOLCALL_FORMAT_COUNT; f++)
        test_toolcall((toolcall_format_t)f, 1500);
    json_object_put(tools);
    for (int m = REASONING_MODE_DEEPSEEK_R1; m < REASONING_MODE_COUNT; m++) {
        test_reasoning((reasoning_mode_t)m, false, 800);
        test_reasoning((reasoning_mode_t)m, true, 800);
    }
    return tap_done();
}
