/* toolcall_json.c - the JSON-object family: hermes, llama3_json, mistral,
 * granite, phi4_mini_json, nemotron_json, cohere_command3, apriel,
 * minimax, gigachat3 / gigachat31 and apertus (see toolcall.h for the
 * rules). The format state (content / after the opening markup / in a list
 * / inside a call object / between calls) is kept here, driven by a small
 * per-format table (how calls open, what closes their block, whether a
 * list or several objects may follow); the call object itself is followed
 * by toolcall_obj.c, which finds the name and streams the arguments object
 * (whitespace outside strings dropped) as soon as the name is known.
 */
#include "chat/parse/toolcall_impl.h"

#define HERMES_OPEN "<tool_call>"
#define MISTRAL_ARGS "[ARGS]"
#define MISTRAL_CALL_ID "[CALL_ID]"

/* How a format's calls sit in the content. */
typedef struct {
    const char *const *open;  /* markers that open calls in content */
    const char *const *close; /* markers that close their block: dropped, but
                               * returned as content when the block was not a call */
    bool list;                /* '[' after the opening marker: a list of calls */
    bool object;              /* '{' after it: a call object */
    bool several;             /* after an object, another '{' is another call */
} jspec_t;

static const char *const hermes_open[] = {HERMES_OPEN, NULL}, *const hermes_close[] = {"</tool_call>", NULL};
static const char *const mistral_open[] = {"[TOOL_CALLS]", NULL};
static const char *const phi4_open[] = {"functools", NULL};
static const char *const nemotron_open[] = {"<TOOLCALL>", NULL}, *const nemotron_close[] = {"</TOOLCALL>", NULL};
static const char *const cohere_open[] = {"<|START_ACTION|>", NULL}, *const cohere_close[] = {"<|END_ACTION|>", NULL};
static const char *const tcs_open[] = {"<tool_calls>", NULL}, *const tcs_close[] = {"</tool_calls>", NULL};
static const char *const apertus_open[] = {"<|tools_prefix|>", NULL},
                         *const apertus_close[] = {"<|tools_suffix|>", NULL};
static const char *const giga_open[] = {"function call<|role_sep|>", "<|function_call|>", NULL},
                         *const giga_close[] = {"<|message_sep|>", NULL};

static jspec_t spec(const toolcall_t *tc)
{
    switch (tc->cfg.format) {
    case TOOLCALL_FORMAT_HERMES: return (jspec_t){hermes_open, hermes_close, false, true, true};
    case TOOLCALL_FORMAT_MISTRAL: return (jspec_t){mistral_open, NULL, true, true, false};
    case TOOLCALL_FORMAT_PHI4_MINI_JSON: return (jspec_t){phi4_open, NULL, true, false, false};
    case TOOLCALL_FORMAT_NEMOTRON: return (jspec_t){nemotron_open, nemotron_close, true, true, true};
    case TOOLCALL_FORMAT_COHERE: return (jspec_t){cohere_open, cohere_close, true, true, true};
    case TOOLCALL_FORMAT_APRIEL:
    case TOOLCALL_FORMAT_MINIMAX: return (jspec_t){tcs_open, tcs_close, true, true, true};
    case TOOLCALL_FORMAT_APERTUS: return (jspec_t){apertus_open, apertus_close, true, true, true};
    /* GigaChat: one call per message after its marker (3: a role header,
     * 3.1: a token); <|message_sep|> ends a message */
    case TOOLCALL_FORMAT_GIGACHAT3:
    case TOOLCALL_FORMAT_GIGACHAT31: return (jspec_t){giga_open, giga_close, false, true, false};
    default: return (jspec_t){NULL, NULL, false, false, false};
    }
}

static const char *const llama3_start[] = {"<|python_tag|>", NULL};
static const char *const granite_start[] = {"<|tool_call|>", HERMES_OPEN, NULL};

static toolcall_format_t fmt(const toolcall_t *tc)
{
    return tc->cfg.format;
}

/* The formats whose calls must start the message. */
static bool starts_message(const toolcall_t *tc)
{
    return fmt(tc) == TOOLCALL_FORMAT_LLAMA3_JSON || fmt(tc) == TOOLCALL_FORMAT_GRANITE;
}

static void json_init(toolcall_t *tc)
{
    tc->u.js.st = starts_message(tc) ? JS_START : JS_CONTENT;
}

static void json_release(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    buf_free(&j->key);
    buf_free(&j->name_raw);
    buf_free(&j->cur_args);
    buf_free(&j->args_str);
    buf_free(&j->m_name);
}

/* ---- calls ------------------------------------------------------------ */

static bool commit(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    char *name = tcobj_decode_name(tc);
    if (!name)
        return false;
    bool ok = tc_call_start(tc, name, strlen(name), NULL);
    free(name);
    if (!ok)
        return false;
    j->committed = true;
    j->args_emitted = 0;
    return true;
}

/* Sends the argument bytes not sent yet. */
static void flush_args(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    if (!j->committed || j->cur_args.len == j->args_emitted)
        return;
    tc_call_args(tc, j->cur_args.p + j->args_emitted, j->cur_args.len - j->args_emitted);
    j->args_emitted = j->cur_args.len;
}

/* Closes the committed call (object closed, broken or output ended). */
static void close_call(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    flush_args(tc);
    tc_call_end(tc, j->args_done);
    j->committed = false;
}

/* The state after the calls of a list (or a list that broke). */
static js_state_t after_list(const toolcall_t *tc)
{
    return fmt(tc) == TOOLCALL_FORMAT_GRANITE ? JS_DONE : JS_CONTENT;
}

/* State after a call object (closed or broken after the commit). */
static void after_object(toolcall_t *tc, bool closed)
{
    tcjson_t *j = &tc->u.js;
    switch (fmt(tc)) {
    case TOOLCALL_FORMAT_LLAMA3_JSON:
        j->st = closed ? JS_START : JS_DONE;
        j->pt_pos = 0;
        break;
    case TOOLCALL_FORMAT_MISTRAL:
    case TOOLCALL_FORMAT_PHI4_MINI_JSON:
    case TOOLCALL_FORMAT_GRANITE:
        j->st = closed && j->arr_mode ? JS_ARR_AFTER : after_list(tc);
        break;
    default:
        j->st = closed && j->arr_mode ? JS_ARR_AFTER : closed && spec(tc).several ? JS_H_AFTER : JS_CONTENT;
        break;
    }
    tc->raw.len = 0;
}

/* The held text was not a call: it becomes content, parsing resumes in
 * content (llama3_json, granite: content to the end). */
static void not_a_call(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    /* the block itself failed (not a later object of a block that held a
     * call): its closing markup will be content as well */
    j->failed_open = false;
    for (const char *const *o = spec(tc).close ? spec(tc).open : NULL; o && *o; o++)
        j->failed_open |= tc->raw.len >= strlen(*o) && memcmp(tc->raw.p, *o, strlen(*o)) == 0;
    tc_raw_release(tc);
    j->st = starts_message(tc) ? JS_DONE : JS_CONTENT;
}

static void json_step(toolcall_t *tc, unsigned char c);

static void step_obj(toolcall_t *tc, unsigned char c)
{
    tcjson_t *j = &tc->u.js;
    obj_res_t r = tcobj_byte(tc, c);
    if (r == OBJ_FAIL || r == OBJ_FAIL_CONSUMED) {
        if (j->committed) {
            close_call(tc);
            after_object(tc, false);
        } else {
            if (r == OBJ_FAIL_CONSUMED)
                tc_raw_add(tc, (const char *)&c, 1);
            not_a_call(tc);
        }
        if (r == OBJ_FAIL)
            json_step(tc, c); /* the byte that broke the JSON starts over */
        return;
    }
    if (!j->committed)
        tc_raw_add(tc, (const char *)&c, 1);
    if (!j->committed && j->name_done && j->args_started && !commit(tc)) {
        not_a_call(tc);
        return;
    }
    if (r == OBJ_DONE && !j->committed) {
        bool ok = j->name_done && !j->args_seen && fmt(tc) != TOOLCALL_FORMAT_LLAMA3_JSON;
        if (ok) {
            buf_add(tc, &j->cur_args, "{}", 2);
            j->args_done = true;
            ok = commit(tc);
        }
        if (!ok) {
            not_a_call(tc);
            return;
        }
    }
    flush_args(tc);
    if (r == OBJ_DONE) {
        close_call(tc);
        after_object(tc, true);
    }
}

/* ---- format states ---------------------------------------------------- */

static void step_content(toolcall_t *tc, unsigned char c)
{
    tcjson_t *j = &tc->u.js;
    jspec_t sp = spec(tc);
    if (j->st != JS_CONTENT || !sp.open) {
        tc_content(tc, (const char *)&c, 1);
        return;
    }
    const char *marks[8];
    int n = 0;
    for (const char *const *o = sp.open; *o && n < 7; o++)
        marks[n++] = *o;
    int n_open = n;
    for (const char *const *o = sp.close; o && *o && n < 7; o++)
        marks[n++] = *o;
    marks[n] = NULL;
    int m = tc_scan_markers(tc, c, marks);
    if (m < 0)
        return;
    if (m < n_open) { /* opening markup */
        tc->raw.len = 0; /* ws_pending stays: dropped only if a call commits */
        tc_raw_add(tc, tc->tag, tc->tag_len);
        tc->tag_len = 0;
        j->failed_open = false;
        j->st = JS_OPEN;
        return;
    }
    /* a closing marker: the close of a block that was not a call is
     * returned with it; any other stray closing markup is dropped */
    if (j->failed_open)
        tc_content(tc, tc->tag, tc->tag_len);
    j->failed_open = false;
    tc->tag_len = 0;
}

/* Message start (llama3_json, granite): whitespace, the optional marker,
 * then the first call ('{', granite: '[' of the list). */
static void step_start(toolcall_t *tc, unsigned char c)
{
    tcjson_t *j = &tc->u.js;
    const char *const *marks = fmt(tc) == TOOLCALL_FORMAT_GRANITE ? granite_start : llama3_start;
    if (j->pt_pos > 0 || c == '<') {
        /* the held marker prefix is the tail of raw */
        for (int i = 0; marks[i]; i++) {
            const char *m = marks[i];
            if (strlen(m) > j->pt_pos && (unsigned char)m[j->pt_pos] == c &&
                (j->pt_pos == 0 || !memcmp(tc->raw.p + tc->raw.len - j->pt_pos, m, j->pt_pos))) {
                tc_raw_add(tc, (const char *)&c, 1);
                if (++j->pt_pos == strlen(m))
                    j->pt_pos = 0;
                return;
            }
        }
    } else if (is_ws(c) || (c == ';' && tc->ncalls > 0 && fmt(tc) == TOOLCALL_FORMAT_LLAMA3_JSON)) {
        tc_raw_add(tc, (const char *)&c, 1);
        return;
    } else if (c == '{' && fmt(tc) == TOOLCALL_FORMAT_LLAMA3_JSON) {
        tcobj_start(tc);
        step_obj(tc, c);
        return;
    } else if (c == '[' && fmt(tc) == TOOLCALL_FORMAT_GRANITE) {
        tc_raw_add(tc, (const char *)&c, 1);
        j->arr_mode = true;
        j->st = JS_ARR;
        return;
    }
    /* Not a call: before any call the held text is content; after calls it
     * was only separators and markup. */
    if (tc->ncalls > 0)
        tc->raw.len = 0;
    j->pt_pos = 0;
    not_a_call(tc);
    json_step(tc, c);
}

/* Characters of a mistral v11 function name (before [ARGS]) and call id. */
static bool is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

/* mistral v11: NAME, an optional [CALL_ID]ID, [ARGS], then the object. */
static void step_m_name(toolcall_t *tc, unsigned char c)
{
    tcjson_t *j = &tc->u.js;
    if (j->m_args) { /* after [ARGS] */
        if (is_ws(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
        } else if (c == '{') {
            tcobj_start_bare(tc);
            step_obj(tc, c);
        } else {
            not_a_call(tc);
            json_step(tc, c);
        }
        return;
    }
    if (j->m_pos == 0 && is_name_char(c)) {
        tc_raw_add(tc, (const char *)&c, 1);
        if (!j->m_in_id)
            buf_addc(tc, &j->m_name, (char)c);
        return;
    }
    /* the m_pos bytes of a bracket marker matched so far end raw */
    const char *cands[] = {MISTRAL_ARGS, j->m_in_id ? NULL : MISTRAL_CALL_ID};
    for (int i = 0; i < 2; i++) {
        const char *m = cands[i];
        if (!m || strlen(m) <= j->m_pos || (unsigned char)m[j->m_pos] != c ||
            (j->m_pos && memcmp(tc->raw.p + tc->raw.len - j->m_pos, m, j->m_pos)))
            continue;
        tc_raw_add(tc, (const char *)&c, 1);
        if (++j->m_pos == strlen(m)) {
            j->m_pos = 0;
            if (i == 0)
                j->m_args = true;
            else
                j->m_in_id = true; /* the id's characters follow, then [ARGS] */
        }
        return;
    }
    not_a_call(tc);
    json_step(tc, c);
}

static void json_step(toolcall_t *tc, unsigned char c)
{
    tcjson_t *j = &tc->u.js;
    switch (j->st) {
    case JS_CONTENT:
    case JS_DONE:
        step_content(tc, c);
        return;
    case JS_START:
        step_start(tc, c);
        return;
    case JS_OPEN:
        if (is_ws(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
        } else if (c == '[' && spec(tc).list) {
            tc_raw_add(tc, (const char *)&c, 1);
            j->arr_mode = true;
            j->st = JS_ARR;
        } else if (c == '{' && spec(tc).object) {
            j->arr_mode = false;
            tcobj_start(tc);
            step_obj(tc, c);
        } else if (fmt(tc) == TOOLCALL_FORMAT_MISTRAL && is_name_char(c)) {
            tc_raw_add(tc, (const char *)&c, 1);
            j->m_name.len = 0;
            buf_addc(tc, &j->m_name, '"');
            buf_addc(tc, &j->m_name, (char)c);
            j->m_pos = 0;
            j->m_in_id = j->m_args = false;
            j->st = JS_M_NAME;
        } else {
            not_a_call(tc);
            json_step(tc, c);
        }
        return;
    case JS_M_NAME:
        step_m_name(tc, c);
        return;
    case JS_ARR:
        if (is_ws(c) || c == ',') {
            tc_raw_add(tc, (const char *)&c, 1);
        } else if (c == '{') {
            tcobj_start(tc);
            step_obj(tc, c);
        } else if (c == ']') {
            tc->raw.len = 0; /* empty list / trailing comma: markup */
            tc->after_call = true;
            j->st = after_list(tc);
        } else {
            not_a_call(tc);
            json_step(tc, c);
        }
        return;
    case JS_ARR_AFTER:
        if (is_ws(c)) {
            return;
        } else if (c == ',') {
            tc->raw.len = 0;
            tc_raw_add(tc, (const char *)&c, 1);
            j->st = JS_ARR;
        } else if (c == ']') {
            j->st = after_list(tc);
        } else {
            j->st = after_list(tc); /* list not closed: the rest is content */
            json_step(tc, c);
        }
        return;
    case JS_H_AFTER:
        /* Several objects inside one block (Qwen2.5 does this now and then
         * in <tool_call>, MiniMax-M1 writes one per line in <tool_calls>):
         * another '{' is another call. */
        if (is_ws(c))
            return;
        if (c == '{') {
            tcobj_start(tc);
            step_obj(tc, c);
            return;
        }
        j->st = JS_CONTENT;
        json_step(tc, c);
        return;
    case JS_OBJ:
        step_obj(tc, c);
        return;
    }
}

static void json_finish(toolcall_t *tc)
{
    tcjson_t *j = &tc->u.js;
    switch (j->st) {
    case JS_OBJ:
        if (j->committed) {
            close_call(tc);
            tc->raw.len = 0;
        } else {
            tc_raw_release(tc);
        }
        break;
    case JS_START:
        if (tc->ncalls > 0)
            tc->raw.len = 0;
        tc_raw_release(tc);
        break;
    case JS_OPEN:
    case JS_ARR:
    case JS_M_NAME:
        tc_raw_release(tc);
        break;
    default:
        break;
    }
    j->st = JS_DONE;
}

const toolcall_family_t toolcall_family_json = {json_init, json_step, json_finish, json_release};
