/* toolcall.c - the core of the tool-call parser (see toolcall.h and
 * toolcall_impl.h): events, call ids, content with its whitespace rules,
 * the calls, and the public API that drives a family back-end one byte at
 * a time. Everything is decided byte by byte, so the result cannot depend on
 * how the text was split into pieces.
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
static char *make_id(toolcall_t *tc)
{
    static const char alnum[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    bool mistral = tc->cfg.format == TOOLCALL_FORMAT_MISTRAL;
    size_t pre = mistral ? 0 : 5, n = mistral ? TOOLCALL_ID_LEN_MISTRAL : 24;
    char *id = malloc(pre + n + 1);
    if (!id)
        return NULL;
    memcpy(id, "call_", pre);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tc->cfg.rng ? tc->cfg.rng(tc->cfg.rng_ctx) : splitmix64(&tc->rng_state);
        id[pre + i] = alnum[r % 62];
    }
    id[pre + n] = '\0';
    return id;
}

/* ---- events ----------------------------------------------------------- */

static bool ev_room(toolcall_t *tc)
{
    if (tc->nomem)
        return false;
    if (tc->nev < tc->cap_ev)
        return true;
    size_t ncap = tc->cap_ev ? tc->cap_ev * 2 : 16;
    ev_rec_t *ne = realloc(tc->evs, ncap * sizeof *ne);
    if (!ne) {
        tc->nomem = true;
        return false;
    }
    tc->evs = ne;
    tc->cap_ev = ncap;
    return true;
}

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
    if (!ev_room(tc))
        return;
    tc->evs[tc->nev++] = (ev_rec_t){kind, index, tc->evtext.len, n};
    buf_add(tc, &tc->evtext, s, n);
}

/* ---- content ---------------------------------------------------------- */

static void content_add(toolcall_t *tc, const char *s, size_t n)
{
    buf_add(tc, &tc->content, s, n);
    ev_text(tc, TOOLCALL_EV_CONTENT, -1, s, n);
}

/* One content byte, with the whitespace rules of toolcall.h. */
static void content_byte(toolcall_t *tc, char c)
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

void tc_content(toolcall_t *tc, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        content_byte(tc, s[i]);
}

void tc_raw_add(toolcall_t *tc, const char *s, size_t n)
{
    buf_add(tc, &tc->raw, s, n);
}

void tc_raw_release(toolcall_t *tc)
{
    size_t n = tc->raw.len;
    tc->raw.len = 0;
    if (n)
        tc_content(tc, tc->raw.p, n); /* raw.p stays valid: nothing appends to raw meanwhile */
}

static bool is_prefix_of(const char *s, size_t n, const char *m)
{
    return m && n <= strlen(m) && memcmp(s, m, n) == 0;
}

int tc_scan_markers(toolcall_t *tc, unsigned char c, const char *const *list)
{
    if (tc->tag_len == TC_TAG_MAX) { /* not reached: markers are shorter */
        tc_content(tc, tc->tag, tc->tag_len);
        tc->tag_len = 0;
    }
    tc->tag[tc->tag_len++] = (char)c;
    for (;;) {
        if (tc->tag_len == 0)
            return -1;
        bool prefix = false;
        for (int i = 0; list[i]; i++) {
            if (tc->tag_len == strlen(list[i]) && memcmp(tc->tag, list[i], tc->tag_len) == 0)
                return i;
            prefix = prefix || is_prefix_of(tc->tag, tc->tag_len, list[i]);
        }
        if (prefix)
            return -1;
        content_byte(tc, tc->tag[0]);
        memmove(tc->tag, tc->tag + 1, --tc->tag_len);
    }
}

void tc_scan_flush(toolcall_t *tc)
{
    size_t n = tc->tag_len;
    tc->tag_len = 0;
    tc_content(tc, tc->tag, n);
}

tcsec_res_t tc_section_step(toolcall_t *tc, tcsec_t *sec, unsigned char c, const char *call_open,
                            const char *section_close, char *held, size_t *n_held)
{
    *n_held = 0;
    if (sec->mk_len == 0 && is_ws(c)) {
        if (!sec->sec_calls)
            tc_raw_add(tc, (const char *)&c, 1);
        return TC_SEC_MORE;
    }
    const char *const cands[2] = {call_open, section_close};
    int r = tc_mk_feed(sec->mk, &sec->mk_len, sizeof sec->mk, c, cands, 2);
    if (r == -1)
        return TC_SEC_MORE;
    if (r == 0) { /* another call: held until its header is known */
        if (sec->sec_calls)
            tc->raw.len = 0;
        tc_raw_add(tc, call_open, strlen(call_open));
        return TC_SEC_CALL;
    }
    sec->in_section = false;
    if (r == 1) {
        tc->raw.len = 0;
        tc->after_call = true;
        return TC_SEC_CLOSED;
    }
    size_t n = sec->mk_len;
    sec->mk_len = 0;
    if (!sec->sec_calls) {
        tc_raw_add(tc, sec->mk, n);
        tc_raw_release(tc);
        return TC_SEC_NOT_CALLS;
    }
    tc->raw.len = 0;
    memcpy(held, sec->mk, n);
    *n_held = n;
    return TC_SEC_LEFT;
}

void tc_section_abandon(toolcall_t *tc, tcsec_t *sec)
{
    sec->in_section = false;
    sec->mk_len = 0;
    tc_raw_release(tc);
}

void tc_refeed(toolcall_t *tc, const char *s, size_t n)
{
    char tmp[256];
    if (n > sizeof tmp)
        n = sizeof tmp; /* callers hold at most a marker */
    memcpy(tmp, s, n);
    for (size_t i = 0; i < n; i++)
        tc->fam->step(tc, (unsigned char)tmp[i]);
}

/* ---- calls ------------------------------------------------------------ */

bool tc_call_start(toolcall_t *tc, const char *name, size_t n, const char *id)
{
    if (tc->nomem || n == 0)
        return false;
    if (tc->ncalls == tc->cap_calls) {
        size_t ncap = tc->cap_calls ? tc->cap_calls * 2 : 4;
        call_t *nc = realloc(tc->calls, ncap * sizeof *nc);
        if (!nc) {
            tc->nomem = true;
            return false;
        }
        tc->calls = nc;
        tc->cap_calls = ncap;
    }
    call_t *call = &tc->calls[tc->ncalls];
    memset(call, 0, sizeof *call);
    call->name = strndup(name, n);
    call->id = id ? strdup(id) : make_id(tc);
    if (!call->name || !call->id || !ev_room(tc)) {
        free(call->name);
        free(call->id);
        tc->nomem = true;
        return false;
    }
    tc->ncalls++;
    tc->call_open = true;
    tc->ws_pending.len = 0; /* whitespace before a call is dropped */
    tc->raw.len = 0;
    tc->evs[tc->nev++] = (ev_rec_t){TOOLCALL_EV_START, (int32_t)(tc->ncalls - 1), tc->evtext.len, 0};
    return true;
}

void tc_call_args(toolcall_t *tc, const char *s, size_t n)
{
    if (!tc->call_open || n == 0)
        return;
    call_t *call = &tc->calls[tc->ncalls - 1];
    buf_add(tc, &call->args, s, n);
    ev_text(tc, TOOLCALL_EV_ARGS, (int32_t)(tc->ncalls - 1), s, n);
}

void tc_call_end(toolcall_t *tc, bool done)
{
    if (!tc->call_open)
        return;
    call_t *call = &tc->calls[tc->ncalls - 1];
    if (!call->args.p)
        buf_add(tc, &call->args, "", 0);
    call->complete = done && tcobj_args_valid(call->args.p, call->args.len);
    tc->call_open = false;
    tc->after_call = true;
}

/* ---- public API ------------------------------------------------------- */

/* TOOLCALL_FORMAT_NONE: everything is content. */
static void none_init(toolcall_t *tc) { (void)tc; }
static void none_step(toolcall_t *tc, unsigned char c) { tc_content(tc, (const char *)&c, 1); }
static void none_finish(toolcall_t *tc) { (void)tc; }
static const toolcall_family_t family_none = {none_init, none_step, none_finish, none_init};

/* The family back-end of each format (mistral's canonical form is name +
 * arguments, but it also writes JSON lists: the JSON family reads both). */
static const toolcall_family_t *family_of(toolcall_format_t f)
{
    switch (f) {
    case TOOLCALL_FORMAT_HERMES:
    case TOOLCALL_FORMAT_LLAMA3_JSON:
    case TOOLCALL_FORMAT_MISTRAL:
    case TOOLCALL_FORMAT_GRANITE:
    case TOOLCALL_FORMAT_PHI4_MINI_JSON:
    case TOOLCALL_FORMAT_NEMOTRON:
    case TOOLCALL_FORMAT_COHERE:
    case TOOLCALL_FORMAT_APRIEL:
    case TOOLCALL_FORMAT_MINIMAX:
    case TOOLCALL_FORMAT_GIGACHAT3:
    case TOOLCALL_FORMAT_GIGACHAT31:
    case TOOLCALL_FORMAT_APERTUS: return &toolcall_family_json;
    case TOOLCALL_FORMAT_DEEPSEEK_V3:
    case TOOLCALL_FORMAT_DEEPSEEK_V31:
    case TOOLCALL_FORMAT_KIMI_K2:
    case TOOLCALL_FORMAT_GEMMA4:
    case TOOLCALL_FORMAT_SOLAR_OPEN:
    case TOOLCALL_FORMAT_FUNCTIONARY_V31:
    case TOOLCALL_FORMAT_FUNCTIONARY_V32: return &toolcall_family_tagged;
    case TOOLCALL_FORMAT_QWEN3_CODER:
    case TOOLCALL_FORMAT_SEED_OSS:
    case TOOLCALL_FORMAT_GLM45:
    case TOOLCALL_FORMAT_MINIMAX_M2:
    case TOOLCALL_FORMAT_DEEPSEEK_V32:
    case TOOLCALL_FORMAT_DEEPSEEK_V4:
    case TOOLCALL_FORMAT_KIMI_K3:
    case TOOLCALL_FORMAT_MINIMAX_M3:
    case TOOLCALL_FORMAT_HY_V3:
    case TOOLCALL_FORMAT_MINICPM5:
    case TOOLCALL_FORMAT_MUSE_GLIMMER: return &toolcall_family_xml;
    case TOOLCALL_FORMAT_PYTHONIC: return &toolcall_family_pythonic;
    case TOOLCALL_FORMAT_GPT_OSS: return &toolcall_family_harmony;
    case TOOLCALL_FORMAT_NONE: return &family_none;
    default: return NULL;
    }
}

toolcall_t *toolcall_create(const toolcall_config_t *cfg, lf_err_t *err)
{
    const toolcall_format_desc_t *d = cfg ? toolcall_format_desc(cfg->format) : NULL;
    if (!cfg || !family_of(cfg->format)) {
        lf_err_set(err, LF_ERR_INVALID, "unknown tool-call parser format");
        return NULL;
    }
    toolcall_t *tc = calloc(1, sizeof *tc);
    if (!tc) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory (tool-call parser)");
        return NULL;
    }
    tc->cfg = *cfg;
    tc->desc = d;
    tc->fam = family_of(cfg->format);
    tc->rng_state = cfg->seed;
    tc->fam->init(tc);
    return tc;
}

void toolcall_free(toolcall_t *tc)
{
    if (!tc)
        return;
    tc->fam->release(tc);
    for (size_t i = 0; i < tc->ncalls; i++) {
        free(tc->calls[i].id);
        free(tc->calls[i].name);
        buf_free(&tc->calls[i].args);
    }
    free(tc->calls);
    buf_free(&tc->content);
    buf_free(&tc->ws_pending);
    buf_free(&tc->raw);
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
    if (tc->finished)
        tc_content(tc, piece, len);
    else
        for (size_t i = 0; i < len && !tc->nomem; i++)
            tc->fam->step(tc, (unsigned char)piece[i]);
    return end(tc, out, err);
}

lf_code_t toolcall_finish(toolcall_t *tc, toolcall_out_t *out, lf_err_t *err)
{
    begin(tc);
    if (!tc->finished) {
        tc->fam->finish(tc);
        tc_call_end(tc, false);
        tc_raw_release(tc);
        tc_scan_flush(tc);
        tc->finished = true;
    }
    if (tc->ws_pending.len) {
        content_add(tc, tc->ws_pending.p, tc->ws_pending.len);
        tc->ws_pending.len = 0;
    }
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
