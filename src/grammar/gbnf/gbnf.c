/* gbnf.c - GBNF text -> expression rules (see gbnf.h). */
#include "grammar/gbnf/gbnf.h"

#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GBNF_MAX_DEPTH 500

typedef struct {
    gr_arena_t *a;
    const unsigned char *s;
    size_t n, i;
    int line;
    lf_err_t *err;
    bool failed;
    const gr_token_resolver_t *res;
    /* rules by name */
    char **names;
    gr_ex_t **rules;
    bool *defined;
    int32_t n_rules, cap;
    int depth;
} gp_t;

static bool gfail(gp_t *p, lf_code_t code, const char *what)
{
    if (!p->failed) {
        p->failed = true;
        lf_err_set(p->err, code, "grammar: %s (line %d)", what, p->line);
    }
    return false;
}

static bool goom(gp_t *p)
{
    if (!p->failed) {
        p->failed = true;
        lf_err_set(p->err, p->a->over ? LF_ERR_UNSUPPORTED : LF_ERR_NOMEM,
                   p->a->over ? "grammar too large: the compile memory limit was hit" : "out of memory");
    }
    return false;
}

static int peek(gp_t *p)
{
    return p->i < p->n ? p->s[p->i] : -1;
}

static void skip_space(gp_t *p, bool newlines)
{
    while (p->i < p->n) {
        int c = p->s[p->i];
        if (c == '#') {
            while (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r')
                p->i++;
        } else if (c == ' ' || c == '\t') {
            p->i++;
        } else if (newlines && (c == '\n' || c == '\r')) {
            if (c == '\n')
                p->line++;
            p->i++;
        } else {
            break;
        }
    }
}

static bool word_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int32_t rule_id(gp_t *p, const char *name, size_t len)
{
    for (int32_t i = 0; i < p->n_rules; i++)
        if (strlen(p->names[i]) == len && !memcmp(p->names[i], name, len))
            return i;
    if (p->n_rules == p->cap) {
        int32_t cap = p->cap ? p->cap * 2 : 32;
        char **nm = realloc(p->names, (size_t)cap * sizeof *nm);
        if (nm)
            p->names = nm;
        gr_ex_t **r = realloc(p->rules, (size_t)cap * sizeof *r);
        if (r)
            p->rules = r;
        bool *d = realloc(p->defined, (size_t)cap * sizeof *d);
        if (d)
            p->defined = d;
        if (!nm || !r || !d) {
            goom(p);
            return -1;
        }
        p->cap = cap;
    }
    p->names[p->n_rules] = gr_arena_strdup(p->a, name, len);
    if (!p->names[p->n_rules]) {
        goom(p);
        return -1;
    }
    p->rules[p->n_rules] = NULL;
    p->defined[p->n_rules] = false;
    return p->n_rules++;
}

static uint32_t utf8_cp(gp_t *p)
{
    unsigned char c = p->s[p->i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (p->i + (size_t)len > p->n)
        len = 1;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++)
        cp = cp << 6 | (p->s[p->i + (size_t)k] & 0x3F);
    p->i += (size_t)len;
    return cp;
}

static int hexv(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character of a literal or class (after an optional backslash). */
static bool read_char(gp_t *p, uint32_t *out)
{
    if (p->i >= p->n)
        return gfail(p, LF_ERR_INVALID, "unexpected end of grammar");
    if (p->s[p->i] != '\\') {
        *out = utf8_cp(p);
        return true;
    }
    p->i++;
    int c = peek(p);
    int digits = 0;
    switch (c) {
    case 'n': *out = '\n'; p->i++; return true;
    case 'r': *out = '\r'; p->i++; return true;
    case 't': *out = '\t'; p->i++; return true;
    case '0': *out = 0; p->i++; return true;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    case -1: return gfail(p, LF_ERR_INVALID, "unexpected end of grammar after \\");
    default:
        *out = utf8_cp(p); /* \\ \" \[ \] \- and any other: the character */
        return true;
    }
    p->i++;
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        int h = hexv(peek(p));
        if (h < 0)
            return gfail(p, LF_ERR_INVALID, "bad hex escape");
        v = v * 16 + (uint32_t)h;
        p->i++;
    }
    if (v > GR_CP_MAX)
        return gfail(p, LF_ERR_INVALID, "code point out of range");
    *out = v;
    return true;
}

static gr_ex_t *parse_alts(gp_t *p, bool nested);

static gr_ex_t *parse_token_ref(gp_t *p)
{
    /* at '<' */
    size_t start = ++p->i;
    while (p->i < p->n && p->s[p->i] != '>' && p->s[p->i] != '\n')
        p->i++;
    if (peek(p) != '>') {
        gfail(p, LF_ERR_INVALID, "unterminated <token>");
        return NULL;
    }
    const char *txt = (const char *)p->s + start;
    size_t len = p->i - start;
    p->i++;
    if (!p->res) {
        gfail(p, LF_ERR_INVALID, "token references need a vocabulary");
        return NULL;
    }
    int32_t id = -1;
    if (len >= 2 && txt[0] == '[' && txt[len - 1] == ']') {
        char *end;
        char num[32];
        if (len - 2 >= sizeof num) {
            gfail(p, LF_ERR_INVALID, "bad token id");
            return NULL;
        }
        memcpy(num, txt + 1, len - 2);
        num[len - 2] = '\0';
        long v = strtol(num, &end, 10);
        if (!*num || *end || v < 0 || v > INT32_MAX) {
            gfail(p, LF_ERR_INVALID, "bad token id");
            return NULL;
        }
        id = (int32_t)v;
    } else {
        char full[512];
        if (len + 2 >= sizeof full) {
            gfail(p, LF_ERR_INVALID, "token text too long");
            return NULL;
        }
        full[0] = '<';
        memcpy(full + 1, txt, len);
        full[len + 1] = '>';
        id = p->res->find(p->res->ctx, full, len + 2);
        if (id < 0) {
            gfail(p, LF_ERR_INVALID, "a <token> is not exactly one token of the vocabulary");
            return NULL;
        }
    }
    char buf[512];
    int special = 0;
    int pl = p->res->piece(p->res->ctx, id, buf, sizeof buf, &special);
    if (pl < 0) {
        gfail(p, LF_ERR_INVALID, "token id out of the vocabulary");
        return NULL;
    }
    if (special)
        return gr_ex_token(p->a, id);
    return gr_ex_bytes(p->a, buf, (size_t)(pl < (int)sizeof buf ? pl : (int)sizeof buf));
}

static gr_ex_t *parse_item(gp_t *p, bool nested)
{
    int c = peek(p);
    gr_ex_t *e = NULL;
    if (c == '"') {
        p->i++;
        char *buf = NULL;
        size_t n = 0, cap = 0;
        while (peek(p) != '"') {
            if (p->i >= p->n || peek(p) == '\n') {
                free(buf);
                gfail(p, LF_ERR_INVALID, "unterminated string literal");
                return NULL;
            }
            uint32_t cp;
            if (!read_char(p, &cp)) {
                free(buf);
                return NULL;
            }
            if (n + 4 > cap) {
                cap = cap ? cap * 2 : 32;
                char *nb = realloc(buf, cap);
                if (!nb) {
                    free(buf);
                    goom(p);
                    return NULL;
                }
                buf = nb;
            }
            n += utf8_encode(cp, (unsigned char *)buf + n);
        }
        p->i++;
        e = gr_ex_bytes(p->a, buf ? buf : "", n);
        free(buf);
    } else if (c == '[') {
        p->i++;
        bool neg = false;
        if (peek(p) == '^') {
            neg = true;
            p->i++;
        }
        gr_cset_t cs;
        gr_cset_init(&cs);
        while (peek(p) != ']') {
            if (p->i >= p->n) {
                gr_cset_free(&cs);
                gfail(p, LF_ERR_INVALID, "unterminated character class");
                return NULL;
            }
            uint32_t lo, hi;
            if (!read_char(p, &lo)) {
                gr_cset_free(&cs);
                return NULL;
            }
            hi = lo;
            if (peek(p) == '-' && p->i + 1 < p->n && p->s[p->i + 1] != ']') {
                p->i++;
                if (!read_char(p, &hi)) {
                    gr_cset_free(&cs);
                    return NULL;
                }
                if (hi < lo) {
                    gr_cset_free(&cs);
                    gfail(p, LF_ERR_INVALID, "range out of order in character class");
                    return NULL;
                }
            }
            if (!gr_cset_add(&cs, lo, hi)) {
                gr_cset_free(&cs);
                goom(p);
                return NULL;
            }
        }
        p->i++;
        if (neg && !gr_cset_negate(&cs)) {
            gr_cset_free(&cs);
            goom(p);
            return NULL;
        }
        e = gr_ex_chars(p->a, &cs);
        gr_cset_free(&cs);
    } else if (c == '.') {
        p->i++;
        e = gr_ex_range(p->a, 0, GR_CP_MAX);
    } else if (c == '(') {
        p->i++;
        if (++p->depth > GBNF_MAX_DEPTH) {
            gfail(p, LF_ERR_UNSUPPORTED, "groups nested too deeply");
            return NULL;
        }
        skip_space(p, true);
        e = parse_alts(p, true);
        p->depth--;
        if (!e)
            return NULL;
        skip_space(p, true);
        if (peek(p) != ')') {
            gfail(p, LF_ERR_INVALID, "expected ')'");
            return NULL;
        }
        p->i++;
    } else if (c == '<') {
        e = parse_token_ref(p);
    } else if (c == '!') {
        gfail(p, LF_ERR_UNSUPPORTED, "negated token references (!<...>) are not supported");
        return NULL;
    } else if (word_char(c)) {
        size_t start = p->i;
        while (word_char(peek(p)))
            p->i++;
        int32_t id = rule_id(p, (const char *)p->s + start, p->i - start);
        if (id < 0)
            return NULL;
        e = gr_ex_ref(p->a, id);
    } else {
        gfail(p, LF_ERR_INVALID, "expected a literal, class, rule name or group");
        return NULL;
    }
    (void)nested;
    if (!e) {
        if (!p->failed)
            goom(p);
        return NULL;
    }
    /* postfix operators */
    for (;;) {
        c = peek(p);
        if (c == '*' || c == '+' || c == '?') {
            p->i++;
            e = gr_ex_rep(p->a, e, c == '+' ? 1 : 0, c == '?' ? 1 : -1);
        } else if (c == '{') {
            p->i++;
            skip_space(p, false);
            int64_t lo = 0, hi;
            int nd = 0;
            while (peek(p) >= '0' && peek(p) <= '9') {
                if (lo < 10000000)
                    lo = lo * 10 + (peek(p) - '0');
                p->i++;
                nd++;
            }
            if (!nd) {
                gfail(p, LF_ERR_INVALID, "expected a number in {}");
                return NULL;
            }
            skip_space(p, false);
            hi = lo;
            if (peek(p) == ',') {
                p->i++;
                skip_space(p, false);
                hi = -1;
                if (peek(p) >= '0' && peek(p) <= '9') {
                    hi = 0;
                    while (peek(p) >= '0' && peek(p) <= '9') {
                        if (hi < 10000000)
                            hi = hi * 10 + (peek(p) - '0');
                        p->i++;
                    }
                }
                skip_space(p, false);
            }
            if (peek(p) != '}') {
                gfail(p, LF_ERR_INVALID, "expected '}'");
                return NULL;
            }
            p->i++;
            if (hi >= 0 && hi < lo) {
                gfail(p, LF_ERR_INVALID, "repetition bounds out of order");
                return NULL;
            }
            e = gr_ex_rep(p->a, e, lo, hi);
        } else {
            break;
        }
        if (!e) {
            goom(p);
            return NULL;
        }
    }
    return e;
}

static gr_ex_t *parse_seq(gp_t *p, bool nested)
{
    gr_exlist_t l = {0};
    for (;;) {
        skip_space(p, nested);
        int c = peek(p);
        if (c < 0 || c == '|' || c == ')' || c == '\n' || c == '\r')
            break;
        /* a new rule starts: "name ::=" on this line ends the sequence */
        if (word_char(c)) {
            size_t save = p->i;
            while (word_char(peek(p)))
                p->i++;
            skip_space(p, false);
            bool def = p->i + 3 <= p->n && !memcmp(p->s + p->i, "::=", 3);
            p->i = save;
            if (def)
                break;
        }
        gr_ex_t *it = parse_item(p, nested);
        if (!it)
            return NULL;
        gr_exlist_push(p->a, &l, it);
    }
    if (l.fail) {
        goom(p);
        return NULL;
    }
    gr_ex_t *e = gr_ex_seq(p->a, l.v, l.n);
    if (!e)
        goom(p);
    return e;
}

static gr_ex_t *parse_alts(gp_t *p, bool nested)
{
    gr_exlist_t l = {0};
    gr_ex_t *s = parse_seq(p, nested);
    if (!s)
        return NULL;
    gr_exlist_push(p->a, &l, s);
    for (;;) {
        skip_space(p, nested);
        if (peek(p) != '|')
            break;
        p->i++;
        skip_space(p, true);
        s = parse_seq(p, nested);
        if (!s)
            return NULL;
        gr_exlist_push(p->a, &l, s);
    }
    if (l.fail) {
        goom(p);
        return NULL;
    }
    gr_ex_t *e = gr_ex_alt(p->a, l.v, l.n);
    if (!e)
        goom(p);
    return e;
}

lf_code_t gr_gbnf_parse(gr_arena_t *a, const char *src, size_t len, const gr_token_resolver_t *resolver,
                        gr_gbnf_t *out, lf_err_t *err)
{
    gp_t p = {.a = a, .s = (const unsigned char *)src, .n = len, .line = 1, .err = err, .res = resolver};
    memset(out, 0, sizeof *out);
    for (;;) {
        skip_space(&p, true);
        if (p.i >= p.n || p.failed)
            break;
        size_t start = p.i;
        while (word_char(peek(&p)))
            p.i++;
        if (p.i == start) {
            gfail(&p, LF_ERR_INVALID, "expected a rule name");
            break;
        }
        int32_t id = rule_id(&p, (const char *)p.s + start, p.i - start);
        if (id < 0)
            break;
        skip_space(&p, false);
        if (p.i + 3 > p.n || memcmp(p.s + p.i, "::=", 3)) {
            gfail(&p, LF_ERR_INVALID, "expected '::='");
            break;
        }
        p.i += 3;
        skip_space(&p, true);
        gr_ex_t *body = parse_alts(&p, false);
        if (!body)
            break;
        if (p.defined[id]) {
            /* llama.cpp: a rule defined twice gets the later alternatives too */
            body = gr_ex_alt2(a, p.rules[id], body);
            if (!body) {
                goom(&p);
                break;
            }
        }
        p.rules[id] = body;
        p.defined[id] = true;
        skip_space(&p, false);
        if (p.i < p.n && p.s[p.i] != '\n' && p.s[p.i] != '\r') {
            gfail(&p, LF_ERR_INVALID, "expected the end of the rule");
            break;
        }
    }
    int32_t root = -1;
    if (!p.failed) {
        for (int32_t i = 0; i < p.n_rules; i++) {
            if (!p.defined[i]) {
                char msg[200];
                snprintf(msg, sizeof msg, "undefined rule '%.100s'", p.names[i]);
                gfail(&p, LF_ERR_INVALID, msg);
                break;
            }
            if (!strcmp(p.names[i], "root"))
                root = i;
        }
        if (!p.failed && root < 0)
            gfail(&p, LF_ERR_INVALID, "the grammar has no 'root' rule");
    }
    lf_code_t rc = LF_OK;
    if (p.failed) {
        rc = err ? err->code : LF_ERR_INVALID;
    } else {
        out->rules = gr_arena_alloc(a, (size_t)p.n_rules * sizeof *out->rules + 1);
        out->names = gr_arena_alloc(a, (size_t)p.n_rules * sizeof *out->names + 1);
        if (!out->rules || !out->names) {
            goom(&p);
            rc = err ? err->code : LF_ERR_NOMEM;
        } else {
            memcpy(out->rules, p.rules, (size_t)p.n_rules * sizeof *out->rules);
            memcpy(out->names, p.names, (size_t)p.n_rules * sizeof *out->names);
            out->n_rules = p.n_rules;
            out->root = root;
        }
    }
    free(p.names);
    free(p.rules);
    free(p.defined);
    return rc;
}
