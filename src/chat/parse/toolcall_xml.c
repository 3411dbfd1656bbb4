/* toolcall_xml.c - the name + typed parameters family: qwen3_coder,
 * seed_oss, glm45, minimax_m2, deepseek_v32 / deepseek_v4 (DSML), kimi_k3,
 * minimax_m3, hy_v3 and minicpm5 (see toolcall.h). Driven by the format's
 * description (toolcall_formats.c):
 *   [section_open] call_open NAME name_close [name_attr N"] [name_end]
 *       (key_open KEY key_close [value_attr T"] [key_end]
 *        [value_open] VALUE value_close
 *        | args_open {JSON} args_close)*
 *   call_close [section_close]
 * A value is raw text up to value_close (code may contain anything else;
 * a value wrapped in <![CDATA[ ... ]]> may contain value_close too); its
 * type comes from its attribute when the format writes one (DSML's
 * string="true|false", Kimi K3's type="..."), else from the parameter's
 * schema (toolcall_params.c). minimax_m3 writes values as XML elements
 * (no value_close: the value ends at key_open "/" KEY key_close, objects
 * and arrays nest as elements; toolcall_params.c converts them). The call
 * is announced when its name is complete; its arguments stream one
 * parameter at a time ({"k":v, then ,"k2":v2, then }).
 *
 * Leniencies: whitespace between the parts; a call without its section; a
 * missing call_close / section_close at the end of the output; quotes
 * around names are optional (name="x", name='x', name=x) and attributes
 * after them are ignored (&quot; and &amp; decoded); a name without
 * name_close (glm45) ends at a newline or the first markup. An
 * unterminated value at the end of the output is taken as it is (vLLM does
 * the same); the call is then complete == false but its arguments are
 * valid JSON. Text that breaks the markup after the announcement ends the
 * call and is content.
 */
#include "chat/parse/toolcall_impl.h"

#define NAME_MAX_LEN 256
#define CDATA_OPEN "<![CDATA["
#define CDATA_CLOSE "]]>"

typedef enum {
    X_CONTENT, /* looking for section_open / call_open */
    X_SECTION, /* in the section, between calls */
    X_NAME,    /* the call header: the function name (and attributes) */
    X_PARAMS,  /* between parameters: key_open, args_open or call_close */
    X_KEY,     /* a parameter header, up to key_end / key_close */
    X_VOPEN,   /* before value_open */
    X_VALUE,   /* a value, up to value_close */
    X_JSON     /* the arguments as one JSON object, up to args_close */
} xstate_t;

/* How a parameter's value is typed. */
typedef enum { V_SCHEMA, V_STRING, V_JSON } vkind_t;

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
    buf_free(&x->vclose);
    buf_free(&x->vopen);
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

/* The marker that ends a header: its end marker, else its close marker
 * without the quote. */
static const char *header_end(const char *end, const char *close, char *buf, size_t cap)
{
    return end ? end : loose(close, buf, cap);
}

static void xml_step(toolcall_t *tc, unsigned char c);

static void not_a_call(toolcall_t *tc)
{
    tc->u.xm.st = X_CONTENT;
    tc_section_abandon(tc, &tc->u.xm.sec);
}

/* The word of a header (a name or a key): whitespace trimmed; a leading
 * quote is matched by the next one, else the word ends at the first quote
 * (attributes follow). Returns its length, *s moved to its start. */
static size_t header_word(const char **s, size_t n)
{
    n = tc_trim(s, n);
    if (n && (**s == '"' || **s == '\'')) {
        char q = **s;
        (*s)++, n--;
        const char *e = memchr(*s, q, n);
        return e ? (size_t)(e - *s) : n;
    }
    const char *e = memchr(*s, '"', n);
    if (e)
        n = (size_t)(e - *s);
    return tc_trim(s, n);
}

/* Decodes the XML entities of attribute values (&quot; &amp; &lt; &gt;
 * &apos;) in place; returns the new length. */
static size_t unescape_attr(char *s, size_t n)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&quot;", '"'}, {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&apos;", '\''}};
    size_t w = 0;
    for (size_t r = 0; r < n;) {
        size_t i = 0;
        for (; i < sizeof ents / sizeof ents[0]; i++) {
            size_t l = strlen(ents[i].ent);
            if (r + l <= n && !memcmp(s + r, ents[i].ent, l))
                break;
        }
        if (i < sizeof ents / sizeof ents[0]) {
            s[w++] = ents[i].c;
            r += strlen(ents[i].ent);
        } else {
            s[w++] = s[r++];
        }
    }
    return w;
}

static bool commit(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const char *name = x->name.p ? x->name.p : "";
    size_t n = header_word(&name, x->name.len);
    for (size_t i = 0; i < n; i++)
        if (is_ws((unsigned char)name[i]) || name[i] == '<' || name[i] == '>')
            return false; /* a name is one word */
    if (!x->name.p || !n)
        return false;
    /* keep the clean name for the schema lookups */
    memmove(x->name.p, name, n);
    n = unescape_attr(x->name.p, n);
    if (!tc_call_start(tc, x->name.p, n, NULL))
        return false;
    x->name.len = n;
    x->name.p[n] = '\0';
    x->committed = true;
    x->nparams = 0;
    x->args_closed = false;
    x->sec.sec_calls++;
    return true;
}

/* Ends the open call: closes the arguments object. */
static void end_call(toolcall_t *tc, bool done)
{
    tcxml_t *x = &tc->u.xm;
    if (!x->args_closed)
        tc_call_args(tc, x->nparams ? "}" : "{}", x->nparams ? 1 : 2);
    tc_call_end(tc, done);
    x->committed = false;
    x->sec.mk_len = 0;
    x->st = x->sec.in_section ? X_SECTION : X_CONTENT;
}

/* The markup broke after the announcement: the call ends (incomplete) and
 * the n bytes at s are content. */
static void broken(toolcall_t *tc, const char *s, size_t n)
{
    tcxml_t *x = &tc->u.xm;
    char held[sizeof x->sec.mk];
    if (n > sizeof held)
        n = sizeof held;
    memcpy(held, s, n);
    end_call(tc, false);
    x->sec.in_section = false;
    x->st = X_CONTENT;
    tc_refeed(tc, held, n);
}

/* A value marked as a JSON value, compacted; else typed by the schema. */
static void value_json(toolcall_t *tc, buf_t *out, const char *fn, const char *key, const char *raw, size_t n)
{
    const char *v = raw;
    size_t vl = tc_trim(&v, n);
    if (!tc_json_value(tc, out, v, vl))
        tc_param_json(tc, out, fn, key, raw, n);
}

/* A complete parameter: typed and streamed. */
static void emit_param(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const char *k = x->key.p ? x->key.p : "";
    size_t kn = header_word(&k, x->key.len);
    char key[NAME_MAX_LEN + 1];
    size_t kl = kn < NAME_MAX_LEN ? kn : NAME_MAX_LEN;
    memcpy(key, k, kl);
    kl = unescape_attr(key, kl);
    key[kl] = '\0';
    const char *raw = x->value.p ? x->value.p : "";
    size_t n = x->value.len;
    size_t cl = strlen(CDATA_OPEN);
    if (n >= cl && !memcmp(raw, CDATA_OPEN, cl)) { /* <![CDATA[ ... ]]> */
        raw += cl, n -= cl;
        const char *e = n >= strlen(CDATA_CLOSE) ? raw + n - strlen(CDATA_CLOSE) : NULL;
        for (; e && e >= raw; e--)
            if (!memcmp(e, CDATA_CLOSE, strlen(CDATA_CLOSE))) {
                n = (size_t)(e - raw);
                break;
            }
    }
    buf_t frag = {0};
    buf_addc(tc, &frag, x->nparams ? ',' : '{');
    tc_json_string(tc, &frag, key, kl);
    buf_addc(tc, &frag, ':');
    const char *fn = x->name.p ? x->name.p : "";
    if (x->vkind == V_STRING)
        tc_json_string(tc, &frag, raw, n);
    else if (x->vkind == V_JSON)
        value_json(tc, &frag, fn, key, raw, n);
    else if (!tc->desc->value_close && tc->desc->key_open)
        tc_element_json(tc, &frag, fn, key, raw, n);
    else
        tc_param_json(tc, &frag, fn, key, raw, n);
    tc_call_args(tc, frag.p, frag.len);
    buf_free(&frag);
    x->nparams++;
}

/* The arguments written as one JSON object (kimi_k3's json block). */
static void emit_json_block(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    buf_t obj = {0};
    const char *v = x->value.p ? x->value.p : "";
    size_t vl = tc_trim(&v, x->value.len);
    if (!tc_json_value(tc, &obj, v, vl) || !obj.len || obj.p[0] != '{') {
        /* not an object: the call ends, the block is content */
        buf_t t = {0};
        buf_add(tc, &t, tc->desc->args_open, strlen(tc->desc->args_open));
        buf_add(tc, &t, x->value.p ? x->value.p : "", x->value.len);
        buf_add(tc, &t, tc->desc->args_close, strlen(tc->desc->args_close));
        end_call(tc, false);
        x->sec.in_section = false;
        x->st = X_CONTENT;
        tc_content(tc, t.p ? t.p : "", t.len);
        buf_free(&t);
        buf_free(&obj);
        return;
    }
    if (!x->nparams) {
        tc_call_args(tc, obj.p, obj.len);
        x->args_closed = true;
    } else if (obj.len > 2) { /* after parameters: its members join them */
        tc_call_args(tc, ",", 1);
        tc_call_args(tc, obj.p + 1, obj.len - 2);
    }
    x->nparams++;
    buf_free(&obj);
}

static bool ends_with(const buf_t *b, const char *m, size_t *ml)
{
    *ml = m ? strlen(m) : 0;
    return m && *ml && b->len >= *ml && !memcmp(b->p + b->len - *ml, m, *ml);
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
    const char *close = header_end(d->name_end, d->name_close, lb, sizeof lb);
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

/* The parameter header is complete: its name, the value's type from its
 * attribute, and (element values) the tags that nest and end it. */
static void key_done(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const toolcall_format_desc_t *d = tc->desc;
    x->vkind = V_SCHEMA;
    if (d->value_attr) {
        const char *attr = d->value_attr;
        while (*attr == ' ')
            attr++;
        const char *a = x->key.p ? x->key.p : "";
        const char *at = memmem(a, x->key.len, attr, strlen(attr));
        if (at) {
            const char *v = at + strlen(attr), *e = memchr(v, '"', x->key.len - (size_t)(v - a));
            size_t vl = e ? (size_t)(e - v) : 0;
            bool str = strlen(d->value_attr_string) == vl && !memcmp(v, d->value_attr_string, vl);
            x->vkind = str ? V_STRING : e ? V_JSON : V_SCHEMA;
        }
    }
    x->value.len = 0;
    x->depth = 0;
    x->in_cdata = false;
    if (!d->value_close) { /* element values: <K> nests, </K> ends */
        const char *k = x->key.p ? x->key.p : "";
        size_t kn = header_word(&k, x->key.len);
        x->vopen.len = x->vclose.len = 0;
        buf_add(tc, &x->vopen, d->key_open, strlen(d->key_open));
        buf_add(tc, &x->vopen, k, kn);
        buf_add(tc, &x->vopen, d->key_close, strlen(d->key_close));
        buf_add(tc, &x->vclose, d->key_open, strlen(d->key_open));
        buf_addc(tc, &x->vclose, '/');
        buf_add(tc, &x->vclose, k, kn);
        buf_add(tc, &x->vclose, d->key_close, strlen(d->key_close));
    }
    x->st = d->value_open ? X_VOPEN : X_VALUE;
}

/* A closing tag where a parameter was expected (element formats, whose
 * call_close starts like key_open): the call's end, or broken markup. */
static bool closing_tag(toolcall_t *tc)
{
    tcxml_t *x = &tc->u.xm;
    const toolcall_format_desc_t *d = tc->desc;
    if (d->value_close || !x->key.len || x->key.p[0] != '/')
        return false;
    size_t ol = strlen(d->key_open), cl = strlen(d->call_close);
    bool is_close = cl == ol + x->key.len + strlen(d->key_close) && !memcmp(d->call_close, d->key_open, ol) &&
                    !memcmp(d->call_close + ol, x->key.p, x->key.len);
    if (is_close) {
        end_call(tc, true);
    } else {
        buf_t t = {0};
        buf_add(tc, &t, d->key_open, ol);
        buf_add(tc, &t, x->key.p, x->key.len);
        buf_add(tc, &t, d->key_close, strlen(d->key_close));
        end_call(tc, false);
        x->sec.in_section = false;
        x->st = X_CONTENT;
        tc_content(tc, t.p, t.len);
        buf_free(&t);
    }
    return true;
}

static void step_value(toolcall_t *tc, unsigned char c)
{
    tcxml_t *x = &tc->u.xm;
    const toolcall_format_desc_t *d = tc->desc;
    size_t ml;
    buf_addc(tc, &x->value, (char)c);
    size_t cl = strlen(CDATA_OPEN);
    if (x->value.len == cl && !memcmp(x->value.p, CDATA_OPEN, cl)) {
        x->in_cdata = true;
        return;
    }
    if (x->in_cdata) {
        if (ends_with(&x->value, CDATA_CLOSE, &ml))
            x->in_cdata = false;
        return;
    }
    if (!d->value_close) { /* element value */
        if (ends_with(&x->value, x->vopen.p, &ml)) {
            x->depth++;
        } else if (ends_with(&x->value, x->vclose.p, &ml)) {
            if (x->depth > 0) {
                x->depth--;
                return;
            }
            x->value.len -= ml;
            emit_param(tc);
            x->st = X_PARAMS;
        }
        return;
    }
    if (ends_with(&x->value, d->value_close, &ml)) {
        x->value.len -= ml;
        emit_param(tc);
        x->st = X_PARAMS;
    }
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
        const char *const cands[3] = {loose(d->key_open, lb, sizeof lb), d->call_close, d->args_open};
        int r = tc_mk_feed(x->sec.mk, &x->sec.mk_len, sizeof x->sec.mk, c, cands, 3);
        if (r == -1)
            return;
        if (r == 0) {
            x->key.len = 0;
            x->st = X_KEY;
        } else if (r == 1) {
            end_call(tc, true);
        } else if (r == 2) {
            x->value.len = 0;
            x->st = X_JSON;
        } else { /* neither: the markup broke; the call ends, these bytes are content */
            char held[sizeof x->sec.mk];
            size_t n = x->sec.mk_len;
            memcpy(held, x->sec.mk, n);
            x->sec.mk_len = 0;
            broken(tc, held, n);
        }
        return;
    }
    case X_KEY: {
        char kb[64];
        const char *close = header_end(d->key_end, d->key_close, kb, sizeof kb);
        size_t ml;
        buf_addc(tc, &x->key, (char)c);
        if (ends_with(&x->key, close, &ml)) {
            x->key.len -= ml;
            if (!closing_tag(tc))
                key_done(tc);
        } else if (x->key.len > NAME_MAX_LEN) { /* not a parameter name */
            end_call(tc, false);
            x->sec.in_section = false;
            x->st = X_CONTENT;
            tc_content(tc, d->key_open, strlen(d->key_open));
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
            for (size_t i = 0; i < n && x->st == X_VALUE; i++)
                step_value(tc, (unsigned char)held[i]);
        }
        return;
    }
    case X_VALUE:
        step_value(tc, c);
        return;
    case X_JSON: {
        size_t ml;
        buf_addc(tc, &x->value, (char)c);
        if (ends_with(&x->value, d->args_close, &ml)) {
            x->value.len -= ml;
            emit_json_block(tc);
            if (x->committed)
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
