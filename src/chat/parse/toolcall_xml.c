/* toolcall_xml.c - the name + typed parameters family: qwen3_coder,
 * seed_oss, glm45 and minimax_m2 (see toolcall.h). Driven by the format's
 * description (toolcall_formats.c):
 *   [section_open] call_open NAME name_close
 *       (key_open KEY key_close [value_open] VALUE value_close)*
 *   call_close [section_close]
 * A value is raw text up to value_close (code may contain anything else);
 * toolcall_params.c turns it into JSON by the parameter's schema. The call
 * is announced when its name is complete; its arguments stream one
 * parameter at a time ({"k":v, then ,"k2":v2, then }).
 *
 * Leniencies: whitespace between the parts; a call without its section; a
 * missing call_close / section_close at the end of the output; quotes
 * around minimax's names are optional (name="x", name='x', name=x); a name
 * without name_close (glm45) ends at a newline or the first markup. An
 * unterminated value at the end of the output is taken as it is (vLLM does
 * the same); the call is then complete == false but its arguments are
 * valid JSON. Text that breaks the markup after the announcement ends the
 * call and is content.
 */
#include "chat/parse/toolcall_impl.h"

#define NAME_MAX_LEN 256

typedef enum {
    X_CONTENT, /* looking for section_open / call_open */
    X_SECTION, /* in the section, between calls */
    X_NAME,    /* the function name */
    X_PARAMS,  /* between parameters: key_open or call_close */
    X_KEY,     /* a parameter name, up to key_close */
    X_VOPEN,   /* before value_open */
    X_VALUE    /* a value, up to value_close */
} xstate_t;

static void xml_init(toolcall_t *tc)
{
    tc->u.xm.st = X_CONTENT;
}

static void xml_release(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    buf_free(&x->name);
    buf_free(&x->key);
    buf_free(&x->value);
}

/* A marker without its quote: "<invoke name=\"" matches "<invoke name="
 * and "\">" matches ">" (the quotes are stripped from the name). */
static const char *loose(const char *m, char *buf, size_t cap)
{
    if (!m)
        return NULL;
    size_t n = strlen(m);
    if (n >= cap)
        return m;
    if (n > 1 && (m[n - 1] == '"' || m[n - 1] == '\'')) {
        memcpy(buf, m, n - 1);
        buf[n - 1] = '\0';
        return buf;
    }
    if (n > 1 && (m[0] == '"' || m[0] == '\''))
        return m + 1;
    return m;
}

static void xml_step(toolcall_t *tc, unsigned char c);

static void not_a_call(toolcall_t *tc)
{
    tc->u.xm.st = X_CONTENT;
    tc_section_abandon(tc, &tc->u.xm.sec);
}

/* Strips whitespace and one pair of quotes. */
static size_t clean(const char **s, size_t n)
{
    n = tc_trim(s, n);
    if (n && (**s == '"' || **s == '\''))
        (*s)++, n--;
    if (n && ((*s)[n - 1] == '"' || (*s)[n - 1] == '\''))
        n--;
    return n;
}

static bool commit(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const char *name = x->name.p ? x->name.p : "";
    size_t n = clean(&name, x->name.len);
    for (size_t i = 0; i < n; i++)
        if (is_ws((unsigned char)name[i]) || name[i] == '<' || name[i] == '>')
            return false; /* a name is one word */
    if (!tc_call_start(tc, name, n, NULL))
        return false;
    /* keep the clean name for the schema lookups */
    memmove(x->name.p, name, n);
    x->name.len = n;
    x->name.p[n] = '\0';
    x->committed = true;
    x->nparams = 0;
    x->sec.sec_calls++;
    return true;
}

/* Ends the open call: closes the arguments object. */
static void end_call(toolcall_t *tc, bool done)
{
    tcxml_t *x = &tc->u.xm;
    tc_call_args(tc, x->nparams ? "}" : "{}", x->nparams ? 1 : 2);
    tc_call_end(tc, done);
    x->committed = false;
    x->sec.mk_len = 0;
    x->st = x->sec.in_section ? X_SECTION : X_CONTENT;
}

/* A complete parameter: typed and streamed. */
static void emit_param(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const char *k = x->key.p ? x->key.p : "";
    size_t kn = clean(&k, x->key.len);
    buf_t frag = {0};
    buf_addc(tc, &frag, x->nparams ? ',' : '{');
    tc_json_string(tc, &frag, k, kn);
    buf_addc(tc, &frag, ':');
    char key[NAME_MAX_LEN + 1];
    size_t kl = kn < NAME_MAX_LEN ? kn : NAME_MAX_LEN;
    memcpy(key, k, kl);
    key[kl] = '\0';
    tc_param_json(tc, &frag, x->name.p ? x->name.p : "", key, x->value.p ? x->value.p : "", x->value.len);
    tc_call_args(tc, frag.p, frag.len);
    buf_free(&frag);
    x->nparams++;
}

static bool ends_with(const buf_t *b, const char *m, size_t *ml)
{
    *ml = m ? strlen(m) : 0;
    return m && b->len >= *ml && !memcmp(b->p + b->len - *ml, m, *ml);
}

static void step_section(toolcall_t *tc, unsigned char c)
{
    tcxml_t *x = &tc->u.xm;
    char lb[64], held[sizeof x->sec.mk];
    size_t n;
    switch (tc_section_step(tc, &x->sec, c, loose(tc->desc->call_open, lb, sizeof lb), tc->desc->section_close, held,
                            &n)) {
    case TC_SEC_CALL:
        x->name.len = 0;
        x->st = X_NAME;
        return;
    case TC_SEC_MORE:
        return;
    default:
        x->st = X_CONTENT;
        tc_refeed(tc, held, n);
        return;
    }
}

static bool has_word(const buf_t *b)
{
    for (size_t i = 0; i < b->len; i++)
        if (!is_ws((unsigned char)b->p[i]))
            return true;
    return false;
}

static void step_name(toolcall_t *tc, unsigned char c)
{
    tcxml_t *x = &tc->u.xm;
    const toolcall_format_desc_t *d = tc->desc;
    char lb[64];
    const char *close = loose(d->name_close, lb, sizeof lb);
    tc_raw_add(tc, (const char *)&c, 1);
    bool done = false, refeed_lt = false;
    size_t ml;
    if (close) {
        buf_addc(tc, &x->name, (char)c);
        if (ends_with(&x->name, close, &ml) && x->name.len > ml) {
            x->name.len -= ml;
            done = true;
        }
    } else if ((c == '\n' || c == '<') && has_word(&x->name)) {
        done = true; /* glm45: the name runs to a newline or the first markup */
        refeed_lt = c == '<';
    } else {
        buf_addc(tc, &x->name, (char)c);
    }
    if (!done) {
        if (x->name.len > NAME_MAX_LEN)
            not_a_call(tc);
        return;
    }
    if (!commit(tc)) {
        not_a_call(tc);
        return;
    }
    x->sec.mk_len = 0;
    x->st = X_PARAMS;
    if (refeed_lt)
        xml_step(tc, '<');
}

static void xml_step(toolcall_t *tc, unsigned char c)
{
    tcxml_t *x = &tc->u.xm;
    const toolcall_format_desc_t *d = tc->desc;
    char lb[64];
    switch ((xstate_t)x->st) {
    case X_CONTENT: {
        char lc[64];
        const char *list[3] = {d->section_open ? d->section_open : loose(d->call_open, lc, sizeof lc),
                               d->section_open ? loose(d->call_open, lc, sizeof lc) : NULL, NULL};
        int m = tc_scan_markers(tc, c, list);
        if (m < 0)
            return;
        tc->raw.len = 0;
        tc_raw_add(tc, tc->tag, tc->tag_len);
        tc->tag_len = 0;
        x->sec.mk_len = 0;
        x->sec.sec_calls = 0;
        x->sec.in_section = d->section_open && m == 0;
        x->name.len = 0;
        x->st = x->sec.in_section ? X_SECTION : X_NAME;
        return;
    }
    case X_SECTION:
        step_section(tc, c);
        return;
    case X_NAME:
        step_name(tc, c);
        return;
    case X_PARAMS: {
        if (x->sec.mk_len == 0 && is_ws(c))
            return;
        const char *const cands[2] = {loose(d->key_open, lb, sizeof lb), d->call_close};
        int r = tc_mk_feed(x->sec.mk, &x->sec.mk_len, sizeof x->sec.mk, c, cands, 2);
        if (r == -1)
            return;
        if (r == 0) {
            x->key.len = 0;
            x->st = X_KEY;
            return;
        }
        if (r == 1) {
            end_call(tc, true);
            return;
        }
        /* neither: the markup broke; the call ends, these bytes are content */
        char held[sizeof x->sec.mk];
        size_t n = x->sec.mk_len;
        memcpy(held, x->sec.mk, n);
        end_call(tc, false);
        x->sec.in_section = false;
        x->st = X_CONTENT;
        tc_refeed(tc, held, n);
        return;
    }
    case X_KEY: {
        char kb[64];
        const char *close = loose(d->key_close, kb, sizeof kb);
        size_t ml;
        buf_addc(tc, &x->key, (char)c);
        if (ends_with(&x->key, close, &ml)) {
            x->key.len -= ml;
            x->value.len = 0;
            x->st = d->value_open ? X_VOPEN : X_VALUE;
        } else if (x->key.len > NAME_MAX_LEN) { /* not a parameter name */
            end_call(tc, false);
            x->sec.in_section = false;
            x->st = X_CONTENT;
            tc_content(tc, x->key.p, x->key.len);
        }
        return;
    }
    case X_VOPEN: {
        if (x->sec.mk_len == 0 && is_ws(c))
            return;
        const char *const cands[1] = {d->value_open};
        int r = tc_mk_feed(x->sec.mk, &x->sec.mk_len, sizeof x->sec.mk, c, cands, 1);
        if (r == -1)
            return;
        x->st = X_VALUE;
        if (r == -2) { /* no value_open: the bytes are the value */
            char held[sizeof x->sec.mk];
            size_t n = x->sec.mk_len;
            memcpy(held, x->sec.mk, n);
            x->sec.mk_len = 0;
            buf_add(tc, &x->value, held, n);
        }
        return;
    }
    case X_VALUE: {
        size_t ml;
        buf_addc(tc, &x->value, (char)c);
        if (ends_with(&x->value, d->value_close, &ml)) {
            x->value.len -= ml;
            emit_param(tc);
            x->st = X_PARAMS;
        }
        return;
    }
    }
}

static void xml_finish(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    if (x->committed) {
        if (x->st == X_VALUE)
            emit_param(tc); /* an unterminated last value, as it is */
        end_call(tc, false);
    } else if (x->st == X_SECTION && x->sec.sec_calls) {
        tc->raw.len = 0; /* an unterminated section after its calls: markup */
    }
    x->sec.mk_len = 0;
    x->st = X_CONTENT;
}

const toolcall_family_t toolcall_family_xml = {xml_init, xml_step, xml_finish, xml_release};
