/* regex.c - ECMAScript regex subset -> expression IR (see regex.h).
 *
 * Anchors are resolved while parsing: every parsed piece is a small list of
 * "variants", each an expression plus whether it must start at the text's
 * start (sa) and/or end at its end (ea). Sequences combine variants
 * pairwise (an anchor may only touch the text's edge: "^" after something
 * that consumed text, or text after "$", is refused), alternatives
 * concatenate the lists. At the top, SEARCH mode wraps each variant in
 * ANY* on its unanchored sides.
 */
#include "grammar/regex/regex.h"

#include <stdio.h>
#include <string.h>

#define RX_MAX_VARIANTS 64
#define RX_MAX_DEPTH 200
#define RX_MAX_REPEAT 100000

typedef struct {
    bool sa, ea;    /* anchored at the start / end of the text */
    bool eps;       /* the expression is exactly the empty string */
    gr_ex_t *e;
} var_t;

typedef struct {
    var_t *v;
    size_t n;
} vars_t;

typedef struct {
    gr_arena_t *a;
    const unsigned char *s;
    size_t n, i;
    lf_err_t *err;
    bool failed;
    int depth;
} rp_t;

static bool rx_fail(rp_t *p, lf_code_t code, const char *fmt, const char *what)
{
    if (!p->failed) {
        p->failed = true;
        lf_err_set(p->err, code, fmt, what, (int)p->i);
    }
    return false;
}

static bool syntax(rp_t *p, const char *what)
{
    return rx_fail(p, LF_ERR_INVALID, "invalid regular expression: %s at offset %d", what);
}

static bool unsupported(rp_t *p, const char *what)
{
    return rx_fail(p, LF_ERR_UNSUPPORTED, "regular expression feature not supported: %s (offset %d)", what);
}

static bool oom(rp_t *p)
{
    if (!p->failed) {
        p->failed = true;
        lf_err_set(p->err, p->a->over ? LF_ERR_UNSUPPORTED : LF_ERR_NOMEM,
                   p->a->over ? "grammar too large: the compile memory limit was hit" : "out of memory");
    }
    return false;
}

static vars_t one(rp_t *p, gr_ex_t *e, bool sa, bool ea, bool eps)
{
    vars_t r = {gr_arena_alloc(p->a, sizeof(var_t)), 1};
    if (!r.v || !e) {
        oom(p);
        r.n = 0;
        return r;
    }
    r.v[0] = (var_t){sa, ea, eps, e};
    return r;
}

static int peek(rp_t *p)
{
    return p->i < p->n ? p->s[p->i] : -1;
}

/* UTF-8 decoding of the pattern text (invalid bytes are taken as Latin-1). */
static uint32_t next_cp(rp_t *p)
{
    unsigned char c = p->s[p->i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (p->i + (size_t)len > p->n)
        len = 1;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++) {
        unsigned char d = p->s[p->i + (size_t)k];
        if ((d & 0xC0) != 0x80) {
            len = 1;
            cp = c;
            break;
        }
        cp = cp << 6 | (d & 0x3F);
    }
    p->i += (size_t)len;
    return cp;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_hex(rp_t *p, int digits, uint32_t *out)
{
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        int h = hexval(peek(p));
        if (h < 0)
            return false;
        v = v * 16 + (uint32_t)h;
        p->i++;
    }
    *out = v;
    return true;
}

static void add_class_escape(gr_cset_t *cs, int which, bool *ok)
{
    gr_cset_t t;
    gr_cset_init(&t);
    bool neg = which == 'D' || which == 'W' || which == 'S';
    switch (which | 0x20) {
    case 'd':
        *ok = gr_cset_add(&t, '0', '9');
        break;
    case 'w':
        *ok = gr_cset_add(&t, '0', '9') && gr_cset_add(&t, 'A', 'Z') && gr_cset_add(&t, 'a', 'z') &&
              gr_cset_add(&t, '_', '_');
        break;
    case 's':
        *ok = gr_cset_add(&t, 9, 13) && gr_cset_add(&t, ' ', ' ') && gr_cset_add(&t, 0xA0, 0xA0) &&
              gr_cset_add(&t, 0x1680, 0x1680) && gr_cset_add(&t, 0x2000, 0x200A) &&
              gr_cset_add(&t, 0x2028, 0x2029) && gr_cset_add(&t, 0x202F, 0x202F) &&
              gr_cset_add(&t, 0x205F, 0x205F) && gr_cset_add(&t, 0x3000, 0x3000) &&
              gr_cset_add(&t, 0xFEFF, 0xFEFF);
        break;
    }
    if (*ok && neg)
        *ok = gr_cset_negate(&t);
    if (*ok)
        *ok = gr_cset_add_set(cs, &t);
    gr_cset_free(&t);
}

/* \p{...} / \P{...} after the 'p' or 'P' (at '{'). */
static bool parse_property(rp_t *p, bool neg, gr_cset_t *cs)
{
    if (peek(p) != '{')
        return syntax(p, "\\p needs {name}");
    size_t start = ++p->i;
    while (p->i < p->n && p->s[p->i] != '}')
        p->i++;
    if (p->i >= p->n)
        return syntax(p, "unterminated \\p{...}");
    const char *name = (const char *)p->s + start;
    size_t len = p->i - start;
    p->i++;
    /* General_Category=X / gc=X */
    const char *eq = memchr(name, '=', len);
    if (eq) {
        size_t klen = (size_t)(eq - name);
        if (!((klen == 16 && !memcmp(name, "General_Category", 16)) || (klen == 2 && !memcmp(name, "gc", 2))))
            return unsupported(p, "\\p{...} other than general categories");
        len -= klen + 1;
        name = eq + 1;
    }
    gr_cset_t t;
    gr_cset_init(&t);
    if (!gr_unicode_category(name, len, &t)) {
        gr_cset_free(&t);
        return unsupported(p, "this \\p{...} property");
    }
    bool ok = (!neg || gr_cset_negate(&t)) && gr_cset_add_set(cs, &t);
    gr_cset_free(&t);
    return ok ? true : oom(p);
}

/* One escape after the backslash. Class escapes go into *cls (returns 2),
 * a single character into *cp (returns 1); 0 on error. in_class: inside
 * [...] (\b is backspace there, '-' may be escaped). */
static int parse_escape(rp_t *p, bool in_class, uint32_t *cp, gr_cset_t *cls)
{
    if (p->i >= p->n) {
        syntax(p, "\\ at end of pattern");
        return 0;
    }
    int c = p->s[p->i];
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
        p->i++;
        bool ok = true;
        add_class_escape(cls, c, &ok);
        return ok ? 2 : (oom(p), 0);
    }
    case 'p': case 'P':
        p->i++;
        return parse_property(p, c == 'P', cls) ? 2 : 0;
    case 't': p->i++; *cp = '\t'; return 1;
    case 'n': p->i++; *cp = '\n'; return 1;
    case 'v': p->i++; *cp = '\v'; return 1;
    case 'f': p->i++; *cp = '\f'; return 1;
    case 'r': p->i++; *cp = '\r'; return 1;
    case 'b':
        if (in_class) {
            p->i++;
            *cp = '\b';
            return 1;
        }
        unsupported(p, "\\b word boundary");
        return 0;
    case 'B':
        unsupported(p, "\\B word boundary");
        return 0;
    case '0':
        p->i++;
        if (peek(p) >= '0' && peek(p) <= '9') {
            unsupported(p, "octal escapes");
            return 0;
        }
        *cp = 0;
        return 1;
    case 'c': {
        p->i++;
        int l = peek(p);
        if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
            p->i++;
            *cp = (uint32_t)(l % 32);
            return 1;
        }
        *cp = '\\';
        p->i--; /* Annex B: "\c" is a literal backslash, then 'c' */
        return 1;
    }
    case 'x': {
        p->i++;
        uint32_t v;
        if (read_hex(p, 2, &v)) {
            *cp = v;
            return 1;
        }
        *cp = 'x';
        return 1;
    }
    case 'u': {
        p->i++;
        uint32_t v;
        if (peek(p) == '{') {
            p->i++;
            v = 0;
            int nd = 0;
            while (hexval(peek(p)) >= 0 && nd < 8) {
                v = v * 16 + (uint32_t)hexval(peek(p));
                p->i++;
                nd++;
            }
            if (peek(p) != '}' || nd == 0 || v > GR_CP_MAX) {
                syntax(p, "bad \\u{...} escape");
                return 0;
            }
            p->i++;
            *cp = v;
            return 1;
        }
        if (!read_hex(p, 4, &v)) {
            *cp = 'u';
            return 1;
        }
        if (v >= 0xD800 && v <= 0xDBFF && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
            size_t save = p->i;
            p->i += 2;
            uint32_t lo;
            if (read_hex(p, 4, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                *cp = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                return 1;
            }
            p->i = save;
        }
        *cp = v;
        return 1;
    }
    case 'k':
        unsupported(p, "named backreferences");
        return 0;
    case 'A':
    case 'Z':
    case 'z':
        if (!in_class) {
            /* handled by the caller as anchors */
            return 3;
        }
        p->i++;
        *cp = (uint32_t)c;
        return 1;
    default:
        if (c >= '1' && c <= '9') {
            if (in_class) {
                unsupported(p, "octal escapes");
                return 0;
            }
            unsupported(p, "backreferences");
            return 0;
        }
        *cp = next_cp(p); /* identity escape */
        return 1;
    }
}

static bool parse_class(rp_t *p, gr_cset_t *out)
{
    /* at '[' */
    p->i++;
    bool neg = false;
    if (peek(p) == '^') {
        neg = true;
        p->i++;
    }
    gr_cset_t cs;
    gr_cset_init(&cs);
    bool first = true;
    for (;;) {
        if (p->i >= p->n) {
            gr_cset_free(&cs);
            return syntax(p, "unterminated character class");
        }
        int c = p->s[p->i];
        if (c == ']' && !first) {
            p->i++;
            break;
        }
        if (c == ']' && first) { /* ECMAScript: [] matches nothing, [^] anything */
            p->i++;
            break;
        }
        first = false;
        uint32_t lo;
        int kind;
        if (c == '\\') {
            p->i++;
            kind = parse_escape(p, true, &lo, &cs);
            if (kind == 0) {
                gr_cset_free(&cs);
                return false;
            }
            if (kind == 2)
                continue;
        } else {
            lo = next_cp(p);
        }
        if (peek(p) == '-' && p->i + 1 < p->n && p->s[p->i + 1] != ']') {
            size_t save = p->i;
            p->i++;
            uint32_t hi;
            int k2;
            if (p->s[p->i] == '\\') {
                p->i++;
                gr_cset_t tmp;
                gr_cset_init(&tmp);
                k2 = parse_escape(p, true, &hi, &tmp);
                if (k2 == 0) {
                    gr_cset_free(&tmp);
                    gr_cset_free(&cs);
                    return false;
                }
                if (k2 == 2) { /* [a-\d]: literal '-' (Annex B) */
                    bool ok = gr_cset_add(&cs, lo, lo) && gr_cset_add(&cs, '-', '-') && gr_cset_add_set(&cs, &tmp);
                    gr_cset_free(&tmp);
                    if (!ok) {
                        gr_cset_free(&cs);
                        return oom(p);
                    }
                    continue;
                }
                gr_cset_free(&tmp);
            } else {
                hi = next_cp(p);
            }
            if (hi < lo) {
                p->i = save;
                gr_cset_free(&cs);
                return syntax(p, "range out of order in character class");
            }
            if (!gr_cset_add(&cs, lo, hi)) {
                gr_cset_free(&cs);
                return oom(p);
            }
            continue;
        }
        if (!gr_cset_add(&cs, lo, lo)) {
            gr_cset_free(&cs);
            return oom(p);
        }
    }
    if (neg && !gr_cset_negate(&cs)) {
        gr_cset_free(&cs);
        return oom(p);
    }
    *out = cs;
    return true;
}

static vars_t parse_disj(rp_t *p);

/* Combines a and b in sequence. */
static vars_t seq_vars(rp_t *p, vars_t a, vars_t b)
{
    vars_t r = {0};
    if (p->failed)
        return r;
    if (a.n * b.n > RX_MAX_VARIANTS) {
        unsupported(p, "too many anchored alternatives");
        return r;
    }
    r.v = gr_arena_alloc(p->a, (a.n * b.n + 1) * sizeof *r.v);
    if (!r.v) {
        oom(p);
        return r;
    }
    for (size_t i = 0; i < a.n; i++)
        for (size_t j = 0; j < b.n; j++) {
            var_t x = a.v[i], y = b.v[j];
            if (x.ea && !y.eps) {
                if (y.sa) { /* "$^" style: both anchors around nothing */
                    unsupported(p, "anchors in the middle of a pattern");
                    return (vars_t){0};
                }
                /* text after "$" can never match: drop the variant */
                continue;
            }
            if (y.sa && !x.eps) {
                continue; /* "^" after consumed text can never match */
            }
            gr_ex_t *e = x.eps ? y.e : y.eps ? x.e : gr_ex_seq2(p->a, x.e, y.e);
            if (!e) {
                oom(p);
                return (vars_t){0};
            }
            r.v[r.n++] = (var_t){x.sa || y.sa, x.ea || y.ea, x.eps && y.eps, e};
        }
    return r;
}

/* Merges variants with the same anchors into one alternative each, so the
 * list never holds more than four. */
static vars_t merge_vars(rp_t *p, vars_t v)
{
    if (p->failed || v.n <= 1)
        return v;
    vars_t r = {gr_arena_alloc(p->a, 4 * sizeof(var_t)), 0};
    if (!r.v) {
        oom(p);
        return (vars_t){0};
    }
    for (int k = 0; k < 4; k++) {
        bool sa = k & 1, ea = k & 2;
        gr_exlist_t l = {0};
        bool eps = true;
        for (size_t i = 0; i < v.n; i++)
            if (v.v[i].sa == sa && v.v[i].ea == ea) {
                gr_exlist_push(p->a, &l, v.v[i].e);
                eps = eps && v.v[i].eps;
            }
        if (l.n == 0)
            continue;
        gr_ex_t *e = l.fail ? NULL : gr_ex_alt(p->a, l.v, l.n);
        if (!e) {
            oom(p);
            return (vars_t){0};
        }
        r.v[r.n++] = (var_t){sa, ea, eps, e};
    }
    return r;
}

/* Quantifier after an atom: sets min and max; false if none here. */
static bool parse_quant(rp_t *p, int64_t *min, int64_t *max)
{
    int c = peek(p);
    if (c == '*' || c == '+' || c == '?') {
        p->i++;
        *min = c == '+' ? 1 : 0;
        *max = c == '?' ? 1 : -1;
    } else if (c == '{') {
        size_t save = p->i++;
        int64_t lo = 0, hi;
        int nd = 0;
        while (peek(p) >= '0' && peek(p) <= '9') {
            if (lo < RX_MAX_REPEAT * 10)
                lo = lo * 10 + (peek(p) - '0');
            p->i++;
            nd++;
        }
        if (!nd) {
            p->i = save;
            return false;
        }
        hi = lo;
        if (peek(p) == ',') {
            p->i++;
            hi = -1;
            if (peek(p) >= '0' && peek(p) <= '9') {
                hi = 0;
                while (peek(p) >= '0' && peek(p) <= '9') {
                    if (hi < RX_MAX_REPEAT * 10)
                        hi = hi * 10 + (peek(p) - '0');
                    p->i++;
                }
            }
        }
        if (peek(p) != '}') {
            p->i = save;
            return false;
        }
        p->i++;
        if (hi >= 0 && hi < lo) {
            syntax(p, "numbers out of order in {} quantifier");
            return false;
        }
        if (lo > RX_MAX_REPEAT || hi > RX_MAX_REPEAT) {
            unsupported(p, "a repetition count above 100000");
            return false;
        }
        *min = lo;
        *max = hi;
    } else {
        return false;
    }
    if (peek(p) == '?' || peek(p) == '+') /* lazy (and Python's possessive) */
        p->i++;
    return true;
}

static vars_t parse_term(rp_t *p)
{
    vars_t r = {0};
    int c = peek(p);
    gr_arena_t *a = p->a;
    if (c == '^') {
        p->i++;
        return one(p, gr_ex_empty(a), true, false, true);
    }
    if (c == '$') {
        p->i++;
        return one(p, gr_ex_empty(a), false, true, true);
    }
    gr_ex_t *atom = NULL;
    vars_t group = {0};
    bool is_group = false;
    if (c == '(') {
        p->i++;
        if (peek(p) == '?') {
            p->i++;
            int k = peek(p);
            if (k == ':') {
                p->i++;
            } else if (k == '=' || k == '!') {
                unsupported(p, "lookahead");
                return r;
            } else if (k == '<' && p->i + 1 < p->n && (p->s[p->i + 1] == '=' || p->s[p->i + 1] == '!')) {
                unsupported(p, "lookbehind");
                return r;
            } else if (k == '<' || (k == 'P' && p->i + 1 < p->n && p->s[p->i + 1] == '<')) {
                while (p->i < p->n && p->s[p->i] != '>')
                    p->i++;
                if (p->i >= p->n) {
                    syntax(p, "unterminated group name");
                    return r;
                }
                p->i++;
            } else {
                unsupported(p, "inline flags or this group syntax");
                return r;
            }
        }
        if (++p->depth > RX_MAX_DEPTH) {
            unsupported(p, "groups nested deeper than 200");
            return r;
        }
        group = parse_disj(p);
        p->depth--;
        if (p->failed)
            return r;
        if (peek(p) != ')') {
            syntax(p, "missing )");
            return r;
        }
        p->i++;
        is_group = true;
    } else if (c == ')') {
        syntax(p, "unmatched )");
        return r;
    } else if (c == '[') {
        gr_cset_t cs;
        if (!parse_class(p, &cs))
            return r;
        atom = gr_ex_chars(a, &cs);
        gr_cset_free(&cs);
    } else if (c == '.') {
        p->i++;
        gr_cset_t cs;
        gr_cset_init(&cs);
        bool ok = gr_cset_add(&cs, '\n', '\n') && gr_cset_add(&cs, '\r', '\r') && gr_cset_add(&cs, 0x2028, 0x2029) &&
                  gr_cset_negate(&cs);
        atom = ok ? gr_ex_chars(a, &cs) : NULL;
        gr_cset_free(&cs);
    } else if (c == '*' || c == '+' || c == '?') {
        syntax(p, "nothing to repeat");
        return r;
    } else if (c == '\\') {
        p->i++;
        uint32_t cp = 0;
        gr_cset_t cs;
        gr_cset_init(&cs);
        int kind = parse_escape(p, false, &cp, &cs);
        if (kind == 0) {
            gr_cset_free(&cs);
            return r;
        }
        if (kind == 3) { /* \A \Z \z */
            int k = p->s[p->i++];
            gr_cset_free(&cs);
            return one(p, gr_ex_empty(a), k == 'A', k != 'A', true);
        }
        atom = kind == 2 ? gr_ex_chars(a, &cs) : gr_ex_range(a, cp, cp);
        gr_cset_free(&cs);
    } else {
        uint32_t cp = next_cp(p);
        atom = gr_ex_range(a, cp, cp);
    }
    if (p->failed)
        return r;
    if (!is_group) {
        if (!atom) {
            oom(p);
            return r;
        }
        group = one(p, atom, false, false, false);
    }
    int64_t min, max;
    if (!parse_quant(p, &min, &max))
        return p->failed ? r : group;
    if (p->failed)
        return r;
    /* quantified: anchors inside are only allowed if the group is exactly
     * one unanchored variant */
    gr_exlist_t alts = {0};
    for (size_t i = 0; i < group.n; i++) {
        if (group.v[i].sa || group.v[i].ea) {
            unsupported(p, "anchors inside a repeated group");
            return r;
        }
        gr_exlist_push(a, &alts, group.v[i].e);
    }
    gr_ex_t *e = gr_ex_rep(a, alts.fail ? NULL : gr_ex_alt(a, alts.v, alts.n), min, max);
    return one(p, e, false, false, false);
}

static vars_t parse_alt(rp_t *p)
{
    vars_t acc = one(p, gr_ex_empty(p->a), false, false, true);
    while (!p->failed && p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        vars_t t = parse_term(p);
        if (p->failed)
            break;
        acc = merge_vars(p, seq_vars(p, acc, t));
    }
    return acc;
}

static vars_t parse_disj(rp_t *p)
{
    vars_t acc = parse_alt(p);
    while (!p->failed && peek(p) == '|') {
        p->i++;
        vars_t b = parse_alt(p);
        if (p->failed)
            break;
        if (acc.n + b.n > RX_MAX_VARIANTS) {
            unsupported(p, "too many anchored alternatives");
            break;
        }
        var_t *v = gr_arena_alloc(p->a, (acc.n + b.n + 1) * sizeof *v);
        if (!v) {
            oom(p);
            break;
        }
        memcpy(v, acc.v, acc.n * sizeof *v);
        memcpy(v + acc.n, b.v, b.n * sizeof *v);
        acc.v = v;
        acc.n += b.n;
        acc = merge_vars(p, acc);
    }
    return acc;
}

gr_ex_t *gr_regex_parse(gr_arena_t *a, const char *src, size_t len, gr_regex_mode_t mode, lf_err_t *err)
{
    rp_t p = {.a = a, .s = (const unsigned char *)src, .n = len, .err = err};
    vars_t v = parse_disj(&p);
    if (!p.failed && p.i < p.n)
        syntax(&p, "unmatched )");
    if (p.failed)
        return NULL;
    gr_ex_t *any = gr_ex_rep(a, gr_ex_range(a, 0, GR_CP_MAX), 0, -1);
    gr_exlist_t alts = {0};
    for (size_t i = 0; i < v.n; i++) {
        gr_ex_t *e = v.v[i].e;
        if (mode == GR_REGEX_SEARCH) {
            if (!v.v[i].sa)
                e = gr_ex_seq2(a, any, e);
            if (!v.v[i].ea)
                e = gr_ex_seq2(a, e, any);
        }
        gr_exlist_push(a, &alts, e);
    }
    gr_ex_t *r = alts.fail ? NULL : gr_ex_alt(a, alts.v, alts.n);
    if (!r) {
        oom(&p);
        return NULL;
    }
    return r;
}
