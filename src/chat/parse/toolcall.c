/* toolcall.c - byte-wise tool-call parser for hermes, llama3_json and mistral
 * output (see toolcall.h for the contract).
 *
 * Everything is decided one byte at a time, so the result cannot depend on
 * how the text was split into pieces. Three pieces of state matter:
 *   - the format state (content / after opening markup / inside a call
 *     object / between calls);
 *   - raw: the bytes held since the opening markup of a call that is not
 *     committed yet; released verbatim as content if it is not a call;
 *   - the call object parser (toolcall_obj.c): a JSON scanner plus a little
 *     bookkeeping of the top-level keys, to find the name, and to stream the
 *     arguments object (whitespace outside strings dropped) as soon as the
 *     name is known.
 */
#include "chat/parse/toolcall_impl.h"

/* ---- ids -------------------------------------------------------------- */

static uint64_t splitmix64(void *ctx)
{
    uint64_t *s = ctx;
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* "call_" + 24 alphanumerics; mistral: 9 alphanumerics, because Mistral's
 * templates reject any other tool_call id when the call comes back in the
 * conversation (vLLM makes the same choice). */
static void make_id(toolcall_t *tc, char *id)
{
    static const char alnum[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    bool mistral = tc->cfg.format == TOOLCALL_FORMAT_MISTRAL;
    size_t pre = mistral ? 0 : 5, n = mistral ? TOOLCALL_ID_LEN_MISTRAL : 24;
    memcpy(id, "call_", pre);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tc->cfg.rng ? tc->cfg.rng(tc->cfg.rng_ctx) : splitmix64(&tc->rng_state);
        id[pre + i] = alnum[r % 62];
    }
    id[pre + n] = '\0';
}

/* ---- events ----------------------------------------------------------- */

static void ev_text(toolcall_t *tc, toolcall_ev_kind_t kind, int32_t index, const char *s, size_t n)
{
    if (tc->nomem || n == 0)
        return;
    if (tc->nev > 0) {
        ev_rec_t *last = &tc->evs[tc->nev - 1];
        if (last->kind == kind && last->index == index) {
            buf_add(tc, &tc->evtext, s, n);
            last->len += n;
            return;
        }
    }
    if (tc->nev == tc->cap_ev) {
        size_t ncap = tc->cap_ev ? tc->cap_ev * 2 : 16;
        ev_rec_t *ne = realloc(tc->evs, ncap * sizeof *ne);
        if (!ne) {
            tc->nomem = true;
            return;
        }
        tc->evs = ne;
        tc->cap_ev = ncap;
    }
    tc->evs[tc->nev++] = (ev_rec_t){kind, index, tc->evtext.len, n};
    buf_add(tc, &tc->evtext, s, n);
}

static void ev_start(toolcall_t *tc, int32_t index)
{
    if (tc->nomem)
        return;
    if (tc->nev == tc->cap_ev) {
        size_t ncap = tc->cap_ev ? tc->cap_ev * 2 : 16;
        ev_rec_t *ne = realloc(tc->evs, ncap * sizeof *ne);
        if (!ne) {
            tc->nomem = true;
            return;
        }
        tc->evs = ne;
        tc->cap_ev = ncap;
    }
    tc->evs[tc->nev++] = (ev_rec_t){TOOLCALL_EV_START, index, tc->evtext.len, 0};
}

/* ---- content ---------------------------------------------------------- */

static void content_add(toolcall_t *tc, const char *s, size_t n)
{
    buf_add(tc, &tc->content, s, n);
    ev_text(tc, TOOLCALL_EV_CONTENT, -1, s, n);
}

/* One content byte, with the whitespace rules of toolcall.h. */
static void emit_content_byte(toolcall_t *tc, char c)
{
    if (is_ws((unsigned char)c)) {
        if (!tc->after_call)
            buf_addc(tc, &tc->ws_pending, c);
        return;
    }
    if (tc->ws_pending.len) {
        content_add(tc, tc->ws_pending.p, tc->ws_pending.len);
        tc->ws_pending.len = 0;
    }
    content_add(tc, &c, 1);
    tc->after_call = false;
}

static void release_raw(toolcall_t *tc)
{
    for (size_t i = 0; i < tc->raw.len; i++)
        emit_content_byte(tc, tc->raw.p[i]);
    tc->raw.len = 0;
}

static bool commit(toolcall_t *tc)
{
    char *name = tcobj_decode_name(tc);
    if (!name)
        return false;
    if (tc->ncalls == tc->cap_calls) {
        size_t ncap = tc->cap_calls ? tc->cap_calls * 2 : 4;
        call_t *nc = realloc(tc->calls, ncap * sizeof *nc);
        if (!nc) {
            free(name);
            tc->nomem = true;
            return false;
        }
        tc->calls = nc;
        tc->cap_calls = ncap;
    }
    call_t *call = &tc->calls[tc->ncalls];
    memset(call, 0, sizeof *call);
    make_id(tc, call->id);
    call->name = name;
    tc->ncalls++;
    tc->ws_pending.len = 0; /* whitespace before a call is dropped */
    tc->raw.len = 0;
    tc->committed = true;
    tc->args_emitted = 0;
    ev_start(tc, (int32_t)(tc->ncalls - 1));
    return true;
}

/* Sends the argument bytes not sent yet. */
static void flush_args(toolcall_t *tc)
{
    if (!tc->committed || tc->cur_args.len == tc->args_emitted)
        return;
    call_t *call = &tc->calls[tc->ncalls - 1];
    const char *s = tc->cur_args.p + tc->args_emitted;
    size_t n = tc->cur_args.len - tc->args_emitted;
    buf_add(tc, &call->args, s, n);
    ev_text(tc, TOOLCALL_EV_ARGS, (int32_t)(tc->ncalls - 1), s, n);
    tc->args_emitted = tc->cur_args.len;
}

/* Closes the committed call (object closed, broken or output ended). */
static void close_call(toolcall_t *tc)
{
    flush_args(tc);
    call_t *call = &tc->calls[tc->ncalls - 1];
    if (!call->args.p)
        buf_add(tc, &call->args, "", 0);
    call->complete = tc->args_done && tcobj_args_valid(&call->args);
    tc->committed = false;
    tc->after_call = true;
}

/* State after a call object (closed or broken after the commit). */
static void after_object(toolcall_t *tc, bool closed)
{
    switch (tc->cfg.format) {
    case TOOLCALL_FORMAT_LLAMA3_JSON:
        tc->st = closed ? ST_L3_START : ST_CONTENT;
        tc->pt_pos = 0;
        break;
    case TOOLCALL_FORMAT_MISTRAL:
        tc->st = closed && tc->arr_mode ? ST_ARR_AFTER : ST_CONTENT;
        break;
    default:
        tc->st = closed ? ST_H_AFTER : ST_CONTENT;
        break;
    }
    tc->raw.len = 0;
}

/* The held text was not a call: it becomes content, parsing resumes in
 * content (llama3_json: content to the end). */
static void not_a_call(toolcall_t *tc)
{
    /* the block itself failed (not a later object of a block that held a
     * call): its closing markup will be content as well */
    tc->failed_open = tc->cfg.format == TOOLCALL_FORMAT_HERMES && tc->raw.len >= strlen(HERMES_OPEN) &&
                      memcmp(tc->raw.p, HERMES_OPEN, strlen(HERMES_OPEN)) == 0;
    release_raw(tc);
    tc->st = ST_CONTENT;
}

static void step(toolcall_t *tc, unsigned char c);

static void step_obj(toolcall_t *tc, unsigned char c)
{
    obj_res_t r = tcobj_byte(tc, c);
    if (r == OBJ_FAIL || r == OBJ_FAIL_CONSUMED) {
        if (tc->committed) {
            close_call(tc);
            after_object(tc, false);
        } else {
            if (r == OBJ_FAIL_CONSUMED)
                buf_addc(tc, &tc->raw, (char)c);
            not_a_call(tc);
        }
        if (r == OBJ_FAIL)
            step(tc, c); /* the byte that broke the JSON starts over */
        return;
    }
    if (!tc->committed)
        buf_addc(tc, &tc->raw, (char)c);
    if (!tc->committed && tc->name_done && tc->args_started && !commit(tc)) {
        not_a_call(tc);
        return;
    }
    if (r == OBJ_DONE && !tc->committed) {
        bool ok = tc->name_done && !tc->args_seen &&
                  tc->cfg.format != TOOLCALL_FORMAT_LLAMA3_JSON;
        if (ok) {
            buf_add(tc, &tc->cur_args, "{}", 2);
            tc->args_done = true;
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

static bool tag_prefix(const char *s, size_t n, const char *tag)
{
    return n <= strlen(tag) && memcmp(s, tag, n) == 0;
}

static void step_content(toolcall_t *tc, unsigned char c)
{
    const char *open = NULL, *close = NULL;
    if (tc->st == ST_CONTENT && tc->cfg.format == TOOLCALL_FORMAT_HERMES) {
        open = HERMES_OPEN;
        close = HERMES_CLOSE;
    } else if (tc->st == ST_CONTENT && tc->cfg.format == TOOLCALL_FORMAT_MISTRAL) {
        open = MISTRAL_OPEN;
    }
    if (!open) {
        emit_content_byte(tc, (char)c);
        return;
    }
    tc->tag[tc->tag_len++] = (char)c;
    if (tc->tag_len == strlen(open) && memcmp(tc->tag, open, tc->tag_len) == 0) {
        tc->raw.len = 0; /* ws_pending stays: dropped only if a call commits */
        buf_add(tc, &tc->raw, tc->tag, tc->tag_len);
        tc->tag_len = 0;
        tc->failed_open = false;
        tc->st = ST_OPEN;
        return;
    }
    if (close && tc->tag_len == strlen(close) && memcmp(tc->tag, close, tc->tag_len) == 0) {
        /* the close of a block that was not a call is returned with it;
         * any other stray closing markup is dropped */
        if (tc->failed_open)
            for (size_t i = 0; i < tc->tag_len; i++)
                emit_content_byte(tc, tc->tag[i]);
        tc->failed_open = false;
        tc->tag_len = 0;
        return;
    }
    while (tc->tag_len > 0 && !tag_prefix(tc->tag, tc->tag_len, open) &&
           !(close && tag_prefix(tc->tag, tc->tag_len, close))) {
        emit_content_byte(tc, tc->tag[0]);
        memmove(tc->tag, tc->tag + 1, --tc->tag_len);
    }
}

static void step_l3_start(toolcall_t *tc, unsigned char c)
{
    static const char pt[] = PYTHON_TAG;
    if (tc->pt_pos > 0 || (c == '<' && tc->pt_pos == 0)) {
        if (c == (unsigned char)pt[tc->pt_pos]) {
            buf_addc(tc, &tc->raw, (char)c);
            if (++tc->pt_pos == sizeof pt - 1)
                tc->pt_pos = 0;
            return;
        }
    } else if (is_ws(c) || (c == ';' && tc->ncalls > 0)) {
        buf_addc(tc, &tc->raw, (char)c);
        return;
    } else if (c == '{') {
        tcobj_start(tc);
        step_obj(tc, c);
        return;
    }
    /* Not a call: before any call the held text is content; after calls it
     * was only separators and markup. */
    if (tc->ncalls > 0)
        tc->raw.len = 0;
    tc->pt_pos = 0;
    not_a_call(tc);
    step(tc, c);
}

/* Characters of a mistral v11 function name (before [ARGS]). */
static bool is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

static void step(toolcall_t *tc, unsigned char c)
{
    switch (tc->st) {
    case ST_CONTENT:
    case ST_DONE:
        step_content(tc, c);
        return;
    case ST_L3_START:
        step_l3_start(tc, c);
        return;
    case ST_OPEN:
        if (is_ws(c)) {
            buf_addc(tc, &tc->raw, (char)c);
        } else if (c == '[' && tc->cfg.format == TOOLCALL_FORMAT_MISTRAL) {
            buf_addc(tc, &tc->raw, (char)c);
            tc->arr_mode = true;
            tc->st = ST_ARR;
        } else if (c == '{') {
            tc->arr_mode = false;
            tcobj_start(tc);
            step_obj(tc, c);
        } else if (tc->cfg.format == TOOLCALL_FORMAT_MISTRAL && is_name_char(c)) {
            buf_addc(tc, &tc->raw, (char)c);
            tc->m_name.len = 0;
            buf_addc(tc, &tc->m_name, '"');
            buf_addc(tc, &tc->m_name, (char)c);
            tc->m_pos = 0;
            tc->st = ST_M_NAME;
        } else {
            not_a_call(tc);
            step(tc, c);
        }
        return;
    case ST_M_NAME:
        if (tc->m_pos == sizeof MISTRAL_ARGS - 1) { /* after [ARGS] */
            if (is_ws(c)) {
                buf_addc(tc, &tc->raw, (char)c);
            } else if (c == '{') {
                tcobj_start_bare(tc);
                step_obj(tc, c);
            } else {
                not_a_call(tc);
                step(tc, c);
            }
        } else if (tc->m_pos == 0 && is_name_char(c)) {
            buf_addc(tc, &tc->raw, (char)c);
            buf_addc(tc, &tc->m_name, (char)c);
        } else if (c == (unsigned char)MISTRAL_ARGS[tc->m_pos]) {
            buf_addc(tc, &tc->raw, (char)c);
            tc->m_pos++;
        } else {
            not_a_call(tc);
            step(tc, c);
        }
        return;
    case ST_ARR:
        if (is_ws(c) || c == ',') {
            buf_addc(tc, &tc->raw, (char)c);
        } else if (c == '{') {
            tcobj_start(tc);
            step_obj(tc, c);
        } else if (c == ']') {
            tc->raw.len = 0; /* empty list / trailing comma: markup */
            tc->after_call = true;
            tc->st = ST_CONTENT;
        } else {
            not_a_call(tc);
            step(tc, c);
        }
        return;
    case ST_ARR_AFTER:
        if (is_ws(c)) {
            return;
        } else if (c == ',') {
            tc->raw.len = 0;
            buf_addc(tc, &tc->raw, (char)c);
            tc->st = ST_ARR;
        } else if (c == ']') {
            tc->st = ST_CONTENT;
        } else {
            tc->st = ST_CONTENT; /* list not closed: the rest is content */
            step(tc, c);
        }
        return;
    case ST_H_AFTER:
        /* Several objects inside one <tool_call> block (Qwen2.5 does this
         * now and then): another '{' is another call. */
        if (is_ws(c))
            return;
        if (c == '{') {
            tcobj_start(tc);
            step_obj(tc, c);
            return;
        }
        tc->st = ST_CONTENT;
        step(tc, c);
        return;
    case ST_OBJ:
        step_obj(tc, c);
        return;
    }
}

/* ---- public API ------------------------------------------------------- */

toolcall_t *toolcall_create(const toolcall_config_t *cfg, lf_err_t *err)
{
    if (!cfg || (unsigned)cfg->format > TOOLCALL_FORMAT_MISTRAL) {
        lf_err_set(err, LF_ERR_INVALID, "unknown tool-call parser format");
        return NULL;
    }
    toolcall_t *tc = calloc(1, sizeof *tc);
    if (!tc) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory (tool-call parser)");
        return NULL;
    }
    tc->cfg = *cfg;
    tc->rng_state = cfg->seed;
    tc->st = cfg->format == TOOLCALL_FORMAT_LLAMA3_JSON ? ST_L3_START : ST_CONTENT;
    return tc;
}

void toolcall_free(toolcall_t *tc)
{
    if (!tc)
        return;
    for (size_t i = 0; i < tc->ncalls; i++) {
        free(tc->calls[i].name);
        buf_free(&tc->calls[i].args);
    }
    free(tc->calls);
    buf_free(&tc->content);
    buf_free(&tc->ws_pending);
    buf_free(&tc->raw);
    buf_free(&tc->key);
    buf_free(&tc->name_raw);
    buf_free(&tc->cur_args);
    buf_free(&tc->args_str);
    buf_free(&tc->m_name);
    buf_free(&tc->evtext);
    free(tc->evs);
    free(tc->out);
    free(tc);
}

static void begin(toolcall_t *tc)
{
    tc->nev = 0;
    tc->evtext.len = 0;
}

static lf_code_t end(toolcall_t *tc, toolcall_out_t *out, lf_err_t *err)
{
    out->events = NULL;
    out->n = 0;
    if (!tc->nomem && tc->nev > tc->cap_out) {
        toolcall_event_t *no = realloc(tc->out, tc->nev * sizeof *no);
        if (!no)
            tc->nomem = true;
        else {
            tc->out = no;
            tc->cap_out = tc->nev;
        }
    }
    if (tc->nomem)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory (tool-call parser)");
    for (size_t i = 0; i < tc->nev; i++) {
        const ev_rec_t *e = &tc->evs[i];
        toolcall_event_t *o = &tc->out[i];
        memset(o, 0, sizeof *o);
        o->kind = e->kind;
        o->index = e->index;
        if (e->kind == TOOLCALL_EV_START) {
            o->id = tc->calls[e->index].id;
            o->name = tc->calls[e->index].name;
        } else {
            o->text = tc->evtext.p + e->off;
            o->len = e->len;
        }
    }
    out->events = tc->out;
    out->n = tc->nev;
    return LF_OK;
}

lf_code_t toolcall_push(toolcall_t *tc, const char *piece, size_t len,
                        toolcall_out_t *out, lf_err_t *err)
{
    begin(tc);
    for (size_t i = 0; i < len && !tc->nomem; i++)
        step(tc, (unsigned char)piece[i]);
    return end(tc, out, err);
}

lf_code_t toolcall_finish(toolcall_t *tc, toolcall_out_t *out, lf_err_t *err)
{
    begin(tc);
    switch (tc->st) {
    case ST_OBJ:
        if (tc->committed) {
            close_call(tc);
            tc->raw.len = 0;
        } else {
            release_raw(tc);
        }
        break;
    case ST_L3_START:
        if (tc->ncalls > 0)
            tc->raw.len = 0;
        release_raw(tc);
        break;
    case ST_OPEN:
    case ST_ARR:
    case ST_M_NAME:
        release_raw(tc);
        break;
    default:
        break;
    }
    for (size_t i = 0; i < tc->tag_len; i++)
        emit_content_byte(tc, tc->tag[i]);
    tc->tag_len = 0;
    if (tc->ws_pending.len) {
        content_add(tc, tc->ws_pending.p, tc->ws_pending.len);
        tc->ws_pending.len = 0;
    }
    tc->st = ST_DONE;
    return end(tc, out, err);
}

size_t toolcall_count(const toolcall_t *tc)
{
    return tc ? tc->ncalls : 0;
}

bool toolcall_get(const toolcall_t *tc, size_t i, toolcall_call_t *call)
{
    if (!tc || i >= tc->ncalls)
        return false;
    const call_t *c = &tc->calls[i];
    call->id = c->id;
    call->name = c->name;
    call->arguments = c->args.p ? c->args.p : "";
    call->arguments_len = c->args.len;
    call->complete = c->complete;
    return true;
}

const char *toolcall_content(const toolcall_t *tc, size_t *len)
{
    if (len)
        *len = tc && tc->content.p ? tc->content.len : 0;
    return tc && tc->content.len ? tc->content.p : NULL;
}

toolcall_t *toolcall_parse(const toolcall_config_t *cfg, const char *text, size_t len,
                           lf_err_t *err)
{
    toolcall_t *tc = toolcall_create(cfg, err);
    if (!tc)
        return NULL;
    toolcall_out_t out;
    if (toolcall_push(tc, text, len, &out, err) != LF_OK ||
        toolcall_finish(tc, &out, err) != LF_OK) {
        toolcall_free(tc);
        return NULL;
    }
    return tc;
}

static bool contains(const char *hay, size_t len, const char *needle)
{
    return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

toolcall_format_t toolcall_format_detect(const char *tmpl, size_t len)
{
    if (contains(tmpl, len, HERMES_OPEN))
        return TOOLCALL_FORMAT_HERMES;
    if (contains(tmpl, len, MISTRAL_OPEN))
        return TOOLCALL_FORMAT_MISTRAL;
    /* Formats we do not parse, whose templates would otherwise look like
     * Llama 3.1's: functionary v3.1 (<function=...>) and v3.2 (>>>name),
     * firefunction v2 (functools[...]). */
    if (contains(tmpl, len, "<function=") || contains(tmpl, len, ">>>") ||
        contains(tmpl, len, "functools"))
        return TOOLCALL_FORMAT_NONE;
    if (contains(tmpl, len, PYTHON_TAG))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    if (contains(tmpl, len, "<|start_header_id|>") && contains(tmpl, len, "parameters"))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    return TOOLCALL_FORMAT_NONE;
}

static const char *const format_names[] = {"none", "hermes", "llama3_json", "mistral"};

lf_code_t toolcall_format_from_name(const char *name, toolcall_format_t *fmt, lf_err_t *err)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, format_names[i]) == 0) {
            *fmt = (toolcall_format_t)i;
            return LF_OK;
        }
    return lf_err_set(err, LF_ERR_INVALID,
                      "unknown tool-call parser '%s' (expected none, hermes, llama3_json or mistral)",
                      name ? name : "(null)");
}

const char *toolcall_format_name(toolcall_format_t fmt)
{
    return (unsigned)fmt < 4 ? format_names[fmt] : "unknown";
}
