/* toolcall_tagged.c - the name + JSON arguments family: deepseek_v3,
 * deepseek_v31, kimi_k2, solar_open, functionary_v31, functionary_v32 and
 * gemma4 (see toolcall.h). Driven by the format's description
 * (toolcall_formats.c): an optional section, calls opened by call_open, a
 * header up to name_close that names the function (and, per format, holds
 * the call's id: kimi_k2's functions.N:I, solar_open's ID before id_close),
 * the JSON arguments object (inside args_open / args_close when the format
 * fences it; gemma4's own syntax turned into JSON by toolcall_gemma.c),
 * call_close.
 *
 * Leniencies: whitespace between the parts; a missing fence, call_close or
 * section_close (generation may stop there); a call without the section.
 * A call is announced when its header is complete; before that, the text
 * since the opening markup is held and released as content if it is not a
 * call. After the announcement, broken JSON ends the call (incomplete) and
 * the rest is content. functionary_v32's output starts with a header (its
 * prompt ends with ">>>"); a header naming the content recipient ("all")
 * starts plain content, its markup dropped.
 */
#include "chat/parse/toolcall_impl.h"

#define HEADER_MAX 256

typedef enum {
    T_CONTENT,    /* looking for section_open / call_open */
    T_SECTION,    /* in the section, between calls */
    T_HEADER,     /* the call's header, up to name_close */
    T_ARGS_OPEN,  /* before the arguments (fence or '{') */
    T_ARGS,       /* the arguments object */
    T_ARGS_CLOSE, /* after the object: the closing fence */
    T_CALL_CLOSE  /* after the arguments: call_close */
} tstate_t;

static void tagged_init(toolcall_t *tc)
{
    tc->u.tg.st = tc->desc->prompt_opens ? T_HEADER : T_CONTENT;
}

static void tagged_release(toolcall_t *tc)
{
    buf_free(&tc->u.tg.name);
}

static void tagged_step(toolcall_t *tc, unsigned char c);

static int mk_feed(tctag_t *t, unsigned char c, const char *const *cands, int n)
{
    return tc_mk_feed(t->sec.mk, &t->sec.mk_len, sizeof t->sec.mk, c, cands, n);
}

/* The text is not a call after all: release it, back to content. */
static void not_a_call(toolcall_t *tc)
{
    tc->u.tg.st = T_CONTENT;
    tc_section_abandon(tc, &tc->u.tg.sec);
}

/* Ends the committed call; the next state depends on the section. */
static void end_call(toolcall_t *tc, bool done)
{
    tctag_t *t = &tc->u.tg;
    tc_call_end(tc, done);
    t->committed = false;
    t->sec.mk_len = 0;
    t->st = t->sec.in_section ? T_SECTION : T_CONTENT;
}

/* Announces the call named by the header (see toolcall.h per format). */
static bool commit(toolcall_t *tc)
{
    tctag_t *t = &tc->u.tg;
    const char *h = t->name.p ? t->name.p : "";
    size_t n = tc_trim(&h, t->name.len);
    const char *name = h, *id = NULL;
    size_t nl = n;
    char idbuf[HEADER_MAX + 1];
    if (tc->cfg.format == TOOLCALL_FORMAT_KIMI_K2) { /* functions.NAME:INDEX */
        memcpy(idbuf, h, n);
        idbuf[n] = '\0';
        id = idbuf;
        const char *colon = memchr(h, ':', n);
        nl = colon ? (size_t)(colon - h) : n;
        for (size_t i = nl; i > 0; i--)
            if (h[i - 1] == '.') {
                name = h + i;
                nl -= i;
                break;
            }
    } else if (tc->desc->id_close) { /* solar_open: ID<id_close>NAME */
        const char *ic = tc->desc->id_close;
        const char *at = memmem(h, n, ic, strlen(ic));
        if (!at)
            return false;
        size_t il = (size_t)(at - h);
        const char *ih = h;
        il = tc_trim(&ih, il);
        bool id_ok = il > 0 && il < sizeof idbuf;
        for (size_t i = 0; id_ok && i < il; i++)
            id_ok = (ih[i] >= 'a' && ih[i] <= 'z') || (ih[i] >= 'A' && ih[i] <= 'Z') ||
                    (ih[i] >= '0' && ih[i] <= '9') || ih[i] == '_' || ih[i] == '-';
        if (id_ok) { /* the model's own id, which its template refers to */
            memcpy(idbuf, ih, il);
            idbuf[il] = '\0';
            id = idbuf;
        }
        name = at + strlen(ic);
        nl = n - (size_t)(name - h);
        nl = tc_trim(&name, nl);
    } else if (tc->desc->name_prefix && strchr(tc->desc->name_prefix, '<')) { /* deepseek_v3: TYPE<sep>NAME */
        const char *sep = strstr(tc->desc->name_prefix, "<");
        size_t sl = strlen(sep);
        for (size_t i = 0; i + sl <= n; i++)
            if (!memcmp(h + i, sep, sl)) {
                name = h + i + sl;
                nl = n - i - sl;
            }
    } else if (tc->desc->name_prefix) { /* gemma4: call:NAME */
        size_t pl = strlen(tc->desc->name_prefix);
        if (n < pl || memcmp(h, tc->desc->name_prefix, pl))
            return false;
        name = h + pl;
        nl = n - pl;
    }
    for (size_t i = 0; i < nl; i++)
        if (is_ws((unsigned char)name[i]) || name[i] == '<')
            return false; /* a name is one word */
    if (!tc_call_start(tc, name, nl, id))
        return false;
    t->committed = true;
    t->sec.sec_calls++;
    return true;
}

/* functionary_v32: a header naming the content recipient starts plain
 * content (the markup is dropped). */
static bool content_header(toolcall_t *tc)
{
    tctag_t *t = &tc->u.tg;
    const char *r = tc->desc->content_recipient;
    const char *h = t->name.p ? t->name.p : "";
    size_t n = tc_trim(&h, t->name.len);
    if (!r || n != strlen(r) || memcmp(h, r, n))
        return false;
    tc->raw.len = 0;
    t->sec.in_section = false;
    t->st = T_CONTENT;
    return true;
}

/* One JSON byte of the arguments (the scanner checks it; after the object
 * closes, the fence or call_close). False when the arguments broke. */
static bool args_json_byte(toolcall_t *tc, unsigned char c)
{
    tctag_t *t = &tc->u.tg;
    tcscan_res_t r = tcscan_byte(&t->scan, c);
    if (r == TCSCAN_R_ERR || r == TCSCAN_R_END_BEFORE)
        return false;
    if (r != TCSCAN_R_WS)
        tc_call_args(tc, (const char *)&c, 1);
    if (r == TCSCAN_R_END) {
        t->sec.mk_len = 0;
        t->st = tc->desc->args_close ? T_ARGS_CLOSE : T_CALL_CLOSE;
    }
    return true;
}

/* gemma4: a byte of its argument syntax, as the JSON bytes it stands for. */
static void args_gemma(toolcall_t *tc, unsigned char c)
{
    tctag_t *t = &tc->u.tg;
    char out[64];
    size_t n = 0;
    int r = tcgemma_byte(&t->gemma, c, out, &n);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (!args_json_byte(tc, (unsigned char)out[i]))
            r = -1;
    if (r < 0) { /* broken: the call ends, the rest is content */
        char held[sizeof t->gemma.mk];
        size_t hn = t->gemma.mk_len ? t->gemma.mk_len - 1 : 0; /* a delimiter prefix, before c */
        memcpy(held, t->gemma.mk, hn);
        t->gemma.mk_len = 0;
        end_call(tc, false);
        t->sec.in_section = false;
        t->st = T_CONTENT;
        tc_refeed(tc, held, hn);
        tagged_step(tc, c);
    }
}

static void step_section(toolcall_t *tc, unsigned char c)
{
    tctag_t *t = &tc->u.tg;
    char held[sizeof t->sec.mk];
    size_t n;
    switch (tc_section_step(tc, &t->sec, c, tc->desc->call_open, tc->desc->section_close, held, &n)) {
    case TC_SEC_CALL:
        t->name.len = 0;
        t->st = T_HEADER;
        return;
    case TC_SEC_MORE:
        return;
    default:
        t->st = T_CONTENT;
        tc_refeed(tc, held, n);
        return;
    }
}

/* After a part of the call, an optional marker (fence, call_close):
 * whitespace before it is skipped; if it does not come, the call goes on
 * (next) and the bytes start over there. Returns true when consumed. */
static bool optional_marker(toolcall_t *tc, unsigned char c, const char *marker, tstate_t next, bool end)
{
    tctag_t *t = &tc->u.tg;
    if (t->sec.mk_len == 0 && is_ws(c))
        return true;
    const char *const cands[1] = {marker};
    int r = mk_feed(t, c, cands, 1);
    if (r == -1)
        return true;
    char held[sizeof t->sec.mk];
    size_t n = r == -2 ? t->sec.mk_len : 0;
    memcpy(held, t->sec.mk, n);
    t->sec.mk_len = 0;
    if (end)
        end_call(tc, true);
    else
        t->st = next;
    if (n)
        tc_refeed(tc, held, n);
    return true;
}

static void tagged_step(toolcall_t *tc, unsigned char c)
{
    tctag_t *t = &tc->u.tg;
    const toolcall_format_desc_t *d = tc->desc;
    switch ((tstate_t)t->st) {
    case T_CONTENT: {
        const char *list[3] = {d->section_open, d->call_open, NULL};
        if (!list[0])
            list[0] = d->call_open, list[1] = NULL;
        int m = tc_scan_markers(tc, c, list);
        if (m < 0)
            return;
        tc->raw.len = 0;
        tc_raw_add(tc, tc->tag, tc->tag_len);
        tc->tag_len = 0;
        t->sec.mk_len = 0;
        if (list[m] == d->section_open) {
            t->sec.in_section = true;
            t->sec.sec_calls = 0;
            t->st = T_SECTION;
        } else {
            t->sec.in_section = false;
            t->sec.sec_calls = 0;
            t->name.len = 0;
            t->st = T_HEADER;
        }
        return;
    }
    case T_SECTION:
        step_section(tc, c);
        return;
    case T_HEADER: {
        if (!d->name_close && c == '{') { /* gemma4: the arguments follow the name */
            if (!commit(tc)) {
                not_a_call(tc);
                tagged_step(tc, c);
                return;
            }
            t->sec.mk_len = 0;
            t->st = T_ARGS;
            tcscan_init(&t->scan);
            tcgemma_init(&t->gemma, d->string_delim);
            tagged_step(tc, c);
            return;
        }
        tc_raw_add(tc, (const char *)&c, 1);
        buf_addc(tc, &t->name, (char)c);
        size_t cl = d->name_close ? strlen(d->name_close) : 0;
        if (cl && t->name.len > cl && !memcmp(t->name.p + t->name.len - cl, d->name_close, cl)) {
            t->name.len -= cl;
            if (content_header(tc))
                return;
            if (!commit(tc)) {
                not_a_call(tc);
                return;
            }
            t->sec.mk_len = 0;
            t->st = d->args_open ? T_ARGS_OPEN : T_ARGS;
            tcscan_init(&t->scan);
        } else if (t->name.len > HEADER_MAX) {
            not_a_call(tc);
        }
        return;
    }
    case T_ARGS_OPEN:
        optional_marker(tc, c, d->args_open, T_ARGS, false);
        return;
    case T_ARGS: {
        if (d->string_delim) {
            args_gemma(tc, c);
            return;
        }
        if (t->scan.st == TCSCAN_VALUE && t->scan.depth == 0 && !is_ws(c) && c != '{') {
            end_call(tc, false); /* arguments must be an object */
            t->sec.in_section = false;
            t->st = T_CONTENT;
            tagged_step(tc, c);
            return;
        }
        tcscan_res_t r = tcscan_byte(&t->scan, c);
        if (r == TCSCAN_R_ERR || r == TCSCAN_R_END_BEFORE) {
            end_call(tc, false);
            t->sec.in_section = false;
            t->st = T_CONTENT;
            tagged_step(tc, c);
            return;
        }
        if (r != TCSCAN_R_WS)
            tc_call_args(tc, (const char *)&c, 1);
        if (r == TCSCAN_R_END) {
            t->sec.mk_len = 0;
            t->st = d->args_close ? T_ARGS_CLOSE : T_CALL_CLOSE;
        }
        return;
    }
    case T_ARGS_CLOSE: { /* "\n```": the newline is whitespace, skipped */
        const char *fence = d->args_close;
        while (*fence && is_ws((unsigned char)*fence))
            fence++;
        optional_marker(tc, c, fence, T_CALL_CLOSE, false);
        return;
    }
    case T_CALL_CLOSE:
        if (!d->call_close) {
            end_call(tc, true);
            tagged_step(tc, c);
            return;
        }
        optional_marker(tc, c, d->call_close, T_CONTENT, true);
        return;
    }
}

static void tagged_finish(toolcall_t *tc)
{
    tctag_t *t = &tc->u.tg;
    if (t->committed) {
        tc_call_end(tc, t->st == T_ARGS_CLOSE || t->st == T_CALL_CLOSE);
        t->committed = false;
    } else if (t->st == T_SECTION && t->sec.sec_calls) {
        tc->raw.len = 0; /* an unterminated section after its calls: markup */
    }
    t->sec.mk_len = 0;
    t->st = T_CONTENT;
}

const toolcall_family_t toolcall_family_tagged = {tagged_init, tagged_step, tagged_finish, tagged_release};
