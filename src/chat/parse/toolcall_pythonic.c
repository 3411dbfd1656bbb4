/* toolcall_pythonic.c - the pythonic format (Llama 3.2 / Llama 4, LFM2,
 * vLLM's "pythonic"): a Python list of calls with keyword arguments,
 * [get_weather(city="Paris"), get_time(tz="UTC")], at the start of the
 * message, or anywhere after a marker: <|python_start|> ... <|python_end|>
 * (Llama 4), <|tool_call_start|> ... <|tool_call_end|> (LFM2),
 * <|python_tag|>. Argument values are Python literals, turned into JSON by
 * toolcall_params.c. A call is announced at its '('; its arguments stream
 * one keyword at a time. A list that does not begin with an identifier
 * followed by '(' is content; text around the lists is content; after a
 * call was announced, broken syntax ends it (incomplete) and what follows is
 * content.
 */
#include "chat/parse/toolcall_impl.h"

#include <ctype.h>

#define IDENT_MAX 256

typedef enum {
    P_START,      /* message start: whitespace, the marker, '[' */
    P_LIST,       /* in the list, before a call */
    P_NAME,       /* the function name, up to '(' */
    P_ARGS,       /* before a keyword or ')' */
    P_KEY,        /* a keyword, up to '=' */
    P_VALUE,      /* a value, up to ',' or ')' at depth 0 */
    P_AFTER_CALL, /* after ')': ',' or ']' */
    P_END,        /* after ']': the optional end marker */
    P_TEXT,       /* content; a start marker begins a list */
    P_MARKED      /* after a start marker: '[' */
} pstate_t;

static const char *const start_marks[] = {"<|python_start|>", "<|tool_call_start|>", "<|python_tag|>", NULL};
static const char *const end_marks[] = {"<|python_end|>", "<|tool_call_end|>", NULL};

static void py_init(toolcall_t *tc)
{
    tc->u.py.st = P_START;
}

static void py_release(toolcall_t *tc)
{
    tcpy_t *p = &tc->u.py;
    buf_free(&p->name);
    buf_free(&p->key);
    buf_free(&p->value);
}

static bool ident_start(unsigned char c)
{
    return isalpha(c) || c == '_';
}

static bool ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '.';
}

static void py_step(toolcall_t *tc, unsigned char c);

/* Not a call (before one of this list was announced) or broken after
 * one: the held text is content, and parsing goes on in text. */
static void give_up(toolcall_t *tc)
{
    tcpy_t *p = &tc->u.py;
    if (p->committed) {
        tc_call_args(tc, p->nparams ? "}" : "{}", p->nparams ? 1 : 2);
        tc_call_end(tc, false);
        p->committed = false;
    }
    if (p->list_calls)
        tc->raw.len = 0; /* after calls, what was held is markup */
    tc_raw_release(tc);
    p->list_calls = 0;
    p->m_pos = 0;
    p->st = P_TEXT;
}

static void end_call(toolcall_t *tc)
{
    tcpy_t *p = &tc->u.py;
    tc_call_args(tc, p->nparams ? "}" : "{}", p->nparams ? 1 : 2);
    tc_call_end(tc, true);
    p->committed = false;
    p->st = P_AFTER_CALL;
}

/* The value ended: type it and stream the keyword. */
static bool emit_param(toolcall_t *tc)
{
    tcpy_t *p = &tc->u.py;
    buf_t frag = {0};
    buf_addc(tc, &frag, p->nparams ? ',' : '{');
    tc_json_string(tc, &frag, p->key.p ? p->key.p : "", p->key.len);
    buf_addc(tc, &frag, ':');
    bool ok = tc_pyliteral_json(tc, &frag, p->value.p ? p->value.p : "", p->value.len);
    if (ok) {
        tc_call_args(tc, frag.p, frag.len);
        p->nparams++;
    }
    buf_free(&frag);
    return ok;
}

static void step_value(toolcall_t *tc, unsigned char c)
{
    tcpy_t *p = &tc->u.py;
    if (p->quote) {
        buf_addc(tc, &p->value, (char)c);
        if (p->esc)
            p->esc = false;
        else if (c == '\\')
            p->esc = true;
        else if (c == (unsigned char)p->quote)
            p->quote = 0;
        return;
    }
    if (p->depth == 0 && (c == ',' || c == ')')) {
        if (!emit_param(tc)) { /* not a literal: it and the rest are content */
            give_up(tc);
            tc_content(tc, p->value.p ? p->value.p : "", p->value.len);
            py_step(tc, c);
            return;
        }
        if (c == ',')
            p->st = P_ARGS;
        else
            end_call(tc);
        return;
    }
    if (c == '\'' || c == '"')
        p->quote = (char)c;
    else if (c == '[' || c == '(' || c == '{')
        p->depth++;
    else if (c == ']' || c == ')' || c == '}') {
        if (p->depth == 0) {
            give_up(tc);
            tc_content(tc, p->value.p ? p->value.p : "", p->value.len);
            py_step(tc, c);
            return;
        }
        p->depth--;
    }
    buf_addc(tc, &p->value, (char)c);
    if (p->value.len > (1u << 20)) { /* bounded like everything else */
        give_up(tc);
        tc_content(tc, p->value.p, p->value.len);
    }
}

static void py_step(toolcall_t *tc, unsigned char c)
{
    tcpy_t *p = &tc->u.py;
    switch ((pstate_t)p->st) {
    case P_START:
        if (p->m_pos == 0 && is_ws(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
            return;
        }
        if (c == '[' && p->m_pos == 0) {
            tc_raw_add(tc, "[", 1);
            p->st = P_LIST;
            return;
        }
        for (int i = 0; start_marks[i]; i++) { /* the held prefix ends raw */
            const char *m = start_marks[i];
            if (strlen(m) > p->m_pos && (unsigned char)m[p->m_pos] == c &&
                (!p->m_pos || !memcmp(tc->raw.p + tc->raw.len - p->m_pos, m, p->m_pos))) {
                tc_raw_add(tc, (const char *)&c, 1);
                if (++p->m_pos == strlen(m))
                    p->m_pos = 0;
                return;
            }
        }
        p->m_pos = 0;
        give_up(tc);
        py_step(tc, c);
        return;
    case P_LIST:
        if (is_ws(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
        } else if (ident_start(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
            p->name.len = 0;
            buf_addc(tc, &p->name, (char)c);
            p->st = P_NAME;
        } else if (c == ']' && p->list_calls) {
            tc->raw.len = 0;
            p->st = P_END;
        } else {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    case P_NAME:
        if (ident_char(c) && p->name.len < IDENT_MAX) {
            tc_raw_add(tc, (const char *)&c, 1);
            buf_addc(tc, &p->name, (char)c);
        } else if (c == '(' && tc_call_start(tc, p->name.p, p->name.len, NULL)) {
            p->committed = true;
            p->list_calls++;
            p->nparams = 0;
            p->st = P_ARGS;
        } else {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    case P_ARGS:
        if (is_ws(c))
            return;
        if (c == ')') {
            end_call(tc);
        } else if (ident_start(c)) {
            p->key.len = 0;
            buf_addc(tc, &p->key, (char)c);
            p->st = P_KEY;
        } else {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    case P_KEY:
        if (ident_char(c) && c != '.' && p->key.len < IDENT_MAX) {
            buf_addc(tc, &p->key, (char)c);
        } else if (c == '=') {
            p->value.len = 0;
            p->depth = 0;
            p->quote = 0;
            p->esc = false;
            p->st = P_VALUE;
        } else if (!is_ws(c)) {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    case P_VALUE:
        step_value(tc, c);
        return;
    case P_AFTER_CALL:
        if (is_ws(c))
            return;
        if (c == ',') {
            tc->raw.len = 0;
            p->st = P_LIST;
        } else if (c == ']') {
            p->st = P_END;
        } else {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    case P_END: {
        if (is_ws(c) && !tc->tag_len)
            return;
        p->list_calls = 0;
        int m = tc_scan_markers(tc, c, end_marks);
        if (m >= 0) {
            tc->tag_len = 0;
            p->st = P_TEXT;
        } else if (!tc->tag_len) {
            p->st = P_TEXT; /* the byte went to the content */
        }
        return;
    }
    case P_TEXT: {
        int m = tc_scan_markers(tc, c, start_marks);
        if (m >= 0) {
            tc->raw.len = 0;
            tc_raw_add(tc, tc->tag, tc->tag_len);
            tc->tag_len = 0;
            p->st = P_MARKED;
        }
        return;
    }
    case P_MARKED:
        if (is_ws(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
        } else if (c == '[') {
            tc_raw_add(tc, "[", 1);
            p->st = P_LIST;
        } else {
            give_up(tc);
            py_step(tc, c);
        }
        return;
    }
}

static void py_finish(toolcall_t *tc)
{
    tcpy_t *p = &tc->u.py;
    if (p->committed) {
        if (p->st == P_VALUE && emit_param(tc))
            p->st = P_ARGS;
        tc_call_args(tc, p->nparams ? "}" : "{}", p->nparams ? 1 : 2);
        tc_call_end(tc, false); /* the list was not closed */
        p->committed = false;
    }
    if (p->list_calls || p->st == P_END)
        tc->raw.len = 0;
    p->st = P_TEXT;
}

const toolcall_family_t toolcall_family_pythonic = {py_init, py_step, py_finish, py_release};
