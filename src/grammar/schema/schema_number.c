/* schema_number.c - numbers under minimum / maximum / exclusive bounds and
 * multipleOf, exactly, as regular languages over JSON number text.
 *
 * Bounds are compared as decimals (never as doubles): a bound's JSON text
 * is normalised to sign, integer digits (no leading zeros) and fraction
 * digits (no trailing zeros); "x > D" for a non-negative magnitude D is
 * longer integer part | same length and larger | same integer part and
 * larger fraction, written as a regex (ECMAScript syntax, regex.h).
 * Bounded numbers are written without exponent (an exponent would make
 * the comparison depend on counting digits against the exponent, which is
 * not regular); unbounded ones may use one. Integers are the numbers whose
 * fraction is absent or 1 to 16 zeros ("2.0" is an integer in JSON Schema
 * from draft-06 on, not in draft-04, where an integer has no fraction; the
 * bound keeps a generated integer from running on in zeros).
 * multipleOf p/10^q: a remainder automaton over the digits (p up to 10^6).
 */
#include "grammar/schema/schema_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex.h"

typedef struct {
    bool neg;
    char ip[400];   /* integer digits, no leading zeros ("0" for zero) */
    char fp[400];   /* fraction digits, no trailing zeros */
    bool ok;
} dec_t;

static dec_t dec_parse(const json_object *v)
{
    dec_t d = {.ok = false};
    const char *s = json_object_to_json_string_ext((json_object *)v, JSON_C_TO_STRING_PLAIN);
    char digits[800];
    size_t nd = 0;
    long point = -1, exp = 0;
    const char *p = s;
    if (*p == '-') {
        d.neg = true;
        p++;
    } else if (*p == '+') {
        p++;
    }
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            point = (long)nd;
            continue;
        }
        if (*p < '0' || *p > '9' || nd >= sizeof digits - 1)
            return d;
        digits[nd++] = *p;
    }
    if (*p == 'e' || *p == 'E') {
        char *end;
        exp = strtol(p + 1, &end, 10);
        if (*end || exp > 300 || exp < -300)
            return d;
    }
    if (nd == 0)
        return d;
    if (point < 0)
        point = (long)nd;
    point += exp; /* position of the decimal point in digits[] */
    /* integer part: digits[0..point) (zero-padded when point > nd) */
    size_t ni = 0, nf = 0;
    for (long i = 0; i < point; i++) {
        char ch = i < (long)nd && i >= 0 ? digits[i] : '0';
        if (ni == 0 && ch == '0')
            continue;
        if (ni >= sizeof d.ip - 1)
            return d;
        d.ip[ni++] = ch;
    }
    if (ni == 0)
        d.ip[ni++] = '0';
    d.ip[ni] = '\0';
    for (long i = point < 0 ? point : point; i < (long)nd; i++) {
        char ch = i < 0 ? '0' : digits[i];
        if (nf >= sizeof d.fp - 1)
            return d;
        d.fp[nf++] = ch;
    }
    while (nf > 0 && d.fp[nf - 1] == '0')
        nf--;
    d.fp[nf] = '\0';
    if (!strcmp(d.ip, "0") && nf == 0)
        d.neg = false; /* -0 == 0 */
    d.ok = true;
    return d;
}

/* magnitude comparison of normalised decimals */
static int mag_cmp(const dec_t *a, const dec_t *b)
{
    size_t la = strlen(a->ip), lb = strlen(b->ip);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = strcmp(a->ip, b->ip);
    if (c)
        return c < 0 ? -1 : 1;
    c = strcmp(a->fp, b->fp); /* no trailing zeros: lexicographic works */
    return c < 0 ? -1 : c > 0;
}

int sc_num_cmp(const json_object *x, const json_object *y)
{
    dec_t a = dec_parse(x), b = dec_parse(y);
    if (!a.ok || !b.ok) {
        double p = json_object_get_double(x), q = json_object_get_double(y);
        return p < q ? -1 : p > q;
    }
    if (a.neg != b.neg)
        return a.neg ? -1 : 1;
    int m = mag_cmp(&a, &b);
    return a.neg ? -m : m;
}

/* ---- regex text --------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} rb_t;

static void rb_add(rb_t *r, const char *s)
{
    size_t l = strlen(s);
    if (r->oom)
        return;
    if (r->n + l + 1 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        while (cap < r->n + l + 1)
            cap *= 2;
        char *np = realloc(r->p, cap);
        if (!np) {
            r->oom = true;
            return;
        }
        r->p = np;
        r->cap = cap;
    }
    memcpy(r->p + r->n, s, l + 1);
    r->n += l;
}

static void rb_fmt(rb_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rb_fmt(rb_t *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    rb_add(r, buf);
}

static void rb_prefix(rb_t *r, const char *s, size_t n)
{
    char buf[1024];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    rb_add(r, buf);
}

#define FRAC "(\\.\\d+)?"
#define MAG_ANY "(0|[1-9]\\d*)" FRAC

/* Alternatives (each wrapped in a group, separated by '|') appended to r. */
static void alt(rb_t *r, bool *first)
{
    if (!*first)
        rb_add(r, "|");
    *first = false;
}

static void mag_eq(rb_t *r, const dec_t *d, bool *first)
{
    alt(r, first);
    if (d->fp[0])
        rb_fmt(r, "(%s\\.%s0*)", d->ip, d->fp);
    else
        rb_fmt(r, "(%s(\\.0{1,16})?)", d->ip);
}

static void mag_gt(rb_t *r, const dec_t *d, bool *first)
{
    size_t li = strlen(d->ip), lf = strlen(d->fp);
    alt(r, first);
    rb_fmt(r, "([1-9]\\d{%zu,}" FRAC ")", li);
    for (size_t p = 0; p < li; p++) {
        int dg = d->ip[p] - '0';
        if (dg >= 9)
            continue;
        alt(r, first);
        rb_add(r, "(");
        rb_prefix(r, d->ip, p);
        rb_fmt(r, "[%d-9]\\d{%zu}" FRAC ")", dg + 1, li - p - 1);
    }
    /* same integer part, larger fraction */
    alt(r, first);
    rb_fmt(r, "(%s\\.(", d->ip);
    bool f2 = true;
    for (size_t p = 0; p < lf; p++) {
        int dg = d->fp[p] - '0';
        if (dg >= 9)
            continue;
        alt(r, &f2);
        rb_prefix(r, d->fp, p);
        rb_fmt(r, "[%d-9]\\d*", dg + 1);
    }
    alt(r, &f2);
    rb_fmt(r, "%s0*[1-9]\\d*", d->fp);
    rb_add(r, "))");
}

static void mag_lt(rb_t *r, const dec_t *d, bool *first)
{
    size_t li = strlen(d->ip), lf = strlen(d->fp);
    if (li >= 2) {
        alt(r, first);
        rb_fmt(r, "((0|[1-9]\\d{0,%zu})" FRAC ")", li - 2);
    }
    for (size_t p = 0; p < li; p++) {
        int dg = d->ip[p] - '0', lo = p == 0 && li >= 2 ? 1 : 0;
        if (dg - 1 < lo)
            continue;
        alt(r, first);
        rb_add(r, "(");
        rb_prefix(r, d->ip, p);
        rb_fmt(r, "[%d-%d]\\d{%zu}" FRAC ")", lo, dg - 1, li - p - 1);
    }
    if (lf > 0) {
        alt(r, first);
        rb_fmt(r, "(%s(\\.(", d->ip);
        bool f2 = true;
        for (size_t p = 0; p < lf; p++) {
            int dg = d->fp[p] - '0';
            if (dg > 0) {
                alt(r, &f2);
                rb_prefix(r, d->fp, p);
                rb_fmt(r, "[0-%d]\\d*", dg - 1);
            }
            if (p >= 1) {
                alt(r, &f2);
                rb_prefix(r, d->fp, p);
            }
        }
        rb_add(r, "))?)");
    }
}

enum { OP_GE, OP_GT, OP_LE, OP_LT };

/* Regex of JSON numbers (no exponent) x with x OP B. */
static void bound_regex(rb_t *r, const dec_t *b, int op)
{
    bool first = true;
    dec_t c = *b;
    c.neg = false;
    bool zero = !strcmp(b->ip, "0") && !b->fp[0];
    switch (op) {
    case OP_GE:
        if (!b->neg) {
            mag_gt(r, &c, &first);
            mag_eq(r, &c, &first);
            if (zero) {
                alt(r, &first);
                rb_add(r, "(-0(\\.0{1,16})?)");
            }
        } else {
            alt(r, &first);
            rb_add(r, "(" MAG_ANY ")");
            alt(r, &first);
            rb_add(r, "(-(");
            bool f2 = true;
            mag_lt(r, &c, &f2);
            mag_eq(r, &c, &f2);
            rb_add(r, "))");
        }
        break;
    case OP_GT:
        if (!b->neg) {
            mag_gt(r, &c, &first);
        } else {
            alt(r, &first);
            rb_add(r, "(" MAG_ANY ")");
            alt(r, &first);
            rb_add(r, "(-(");
            bool f2 = true;
            mag_lt(r, &c, &f2);
            rb_add(r, "))");
        }
        break;
    case OP_LE:
        if (!b->neg) {
            alt(r, &first);
            rb_add(r, "(-" MAG_ANY ")");
            mag_lt(r, &c, &first);
            mag_eq(r, &c, &first);
        } else {
            alt(r, &first);
            rb_add(r, "(-(");
            bool f2 = true;
            mag_gt(r, &c, &f2);
            mag_eq(r, &c, &f2);
            rb_add(r, "))");
        }
        break;
    case OP_LT:
        if (!b->neg && !zero) {
            alt(r, &first);
            rb_add(r, "(-" MAG_ANY ")");
            mag_lt(r, &c, &first);
        } else {
            alt(r, &first);
            rb_add(r, "(-(");
            bool f2 = true;
            mag_gt(r, &c, &f2);
            rb_add(r, "))");
        }
        break;
    }
    if (first)
        rb_add(r, "[]"); /* nothing */
}

static gr_dfa_t *regex_dfa(sc_t *c, const char *re)
{
    gr_arena_t a;
    gr_arena_init(&a, 16u << 20);
    gr_ex_t *e = gr_regex_parse(&a, re, strlen(re), GR_REGEX_FULL, c->err);
    gr_dfa_t *d = e ? gr_dfa_from_expr(e, false, c->o->lim, c->err) : NULL;
    gr_arena_free(&a);
    if (!d)
        c->failed = true;
    return d;
}

static gr_dfa_t *and_dfa(sc_t *c, gr_dfa_t *a, gr_dfa_t *b)
{
    if (!a || !b) {
        gr_dfa_free(a);
        gr_dfa_free(b);
        return NULL;
    }
    gr_dfa_t *d = gr_dfa_intersect(a, b, c->o->lim, c->err);
    gr_dfa_free(a);
    gr_dfa_free(b);
    if (!d)
        c->failed = true;
    return d;
}

/* multipleOf p / 10^q over number text without exponent. */
static gr_dfa_t *multiple_dfa(sc_t *c, const json_object *m)
{
    dec_t d = dec_parse(m);
    if (!d.ok || d.neg || (!strcmp(d.ip, "0") && !d.fp[0])) {
        sc_fail(c, LF_ERR_INVALID, "'multipleOf' must be a number greater than 0");
        return NULL;
    }
    char num[820];
    snprintf(num, sizeof num, "%s%s", d.ip, d.fp);
    const char *z = num;
    while (*z == '0')
        z++;
    size_t q = strlen(d.fp);
    if (strlen(z) > 7 || q > 20) {
        sc_unsupported(c, "multipleOf", "a step with more than 7 significant digits or 20 decimals");
        return NULL;
    }
    int64_t p = strtoll(z, NULL, 10);
    if (p > 1000000 || p * ((int64_t)q + 4) > 400000) {
        sc_unsupported(c, "multipleOf", "a step whose digits exceed the automaton limit");
        return NULL;
    }
    /* states: 0 start, 1 minus, 2 int0, then int(r): 3 + r, dot(r): 3 + p + r,
     * frac(j, r) j=1..q: 3 + 2p + (j-1)p + r, tail: 3 + (2 + q)p */
    int64_t ns = 4 + (2 + (int64_t)q) * p;
    int32_t *next = malloc((size_t)ns * 256 * sizeof *next);
    uint8_t *acc = calloc((size_t)ns, 1);
    if (!next || !acc) {
        free(next);
        free(acc);
        sc_oom(c);
        return NULL;
    }
    for (int64_t i = 0; i < ns * 256; i++)
        next[i] = -1;
    int32_t INT = 3, DOT = (int32_t)(3 + p), FRACB = (int32_t)(3 + 2 * p), TAIL = (int32_t)(3 + (2 + q) * p);
    /* pow10 mod p for the acceptance test */
    int64_t *pw = malloc((q + 1) * sizeof *pw);
    if (!pw) {
        free(next);
        free(acc);
        sc_oom(c);
        return NULL;
    }
    pw[0] = 1 % p;
    for (size_t i = 1; i <= q; i++)
        pw[i] = pw[i - 1] * 10 % p;
    for (int s = 0; s < 2; s++) {
        if (s == 0)
            next[0 * 256 + '-'] = 1;
        next[s * 256 + '0'] = 2;
        for (int dg = 1; dg <= 9; dg++)
            next[s * 256 + '0' + dg] = INT + (int32_t)(dg % p);
    }
    acc[2] = 1;
    next[2 * 256 + '.'] = DOT + 0;
    for (int64_t r = 0; r < p; r++) {
        int32_t st = INT + (int32_t)r;
        acc[st] = (r * pw[q]) % p == 0;
        for (int dg = 0; dg <= 9; dg++)
            next[(size_t)st * 256 + '0' + dg] = INT + (int32_t)((r * 10 + dg) % p);
        next[(size_t)st * 256 + '.'] = DOT + (int32_t)r;
        int32_t dt = DOT + (int32_t)r;
        if (q >= 1) {
            for (int dg = 0; dg <= 9; dg++)
                next[(size_t)dt * 256 + '0' + dg] = FRACB + (int32_t)((r * 10 + dg) % p);
        } else if (r == 0) {
            next[(size_t)dt * 256 + '0'] = TAIL;
        }
        for (size_t j = 1; j <= q; j++) {
            int32_t fs = FRACB + (int32_t)((j - 1) * p + r);
            acc[fs] = (r * pw[q - j]) % p == 0;
            if (j < q) {
                for (int dg = 0; dg <= 9; dg++)
                    next[(size_t)fs * 256 + '0' + dg] = FRACB + (int32_t)(j * p + (r * 10 + dg) % p);
            } else if (r == 0) {
                next[(size_t)fs * 256 + '0'] = TAIL;
            }
        }
    }
    acc[TAIL] = 1;
    next[(size_t)TAIL * 256 + '0'] = TAIL;
    gr_dfa_t *dfa = gr_dfa_from_table((int32_t)ns, next, acc, 0, c->o->lim, c->err);
    free(next);
    free(acc);
    free(pw);
    if (!dfa)
        c->failed = true;
    return dfa;
}

gr_ex_t *sc_number_expr(sc_t *c, const sc_num_t *n)
{
    bool bounded = n->lo || n->hi || n->n_mult > 0;
    /* at most 64 integer and 64 fraction digits (and 4 exponent digits):
     * a generated number cannot run on digit by digit */
    const char *syntax = n->integer && c->draft == 4 ? "-?(0|[1-9]\\d{0,63})" /* draft-04: no "2.0" */
                         : n->integer ? "-?(0|[1-9]\\d{0,63})(\\.0{1,16})?"
                         : bounded  ? "-?(0|[1-9]\\d{0,63})(\\.\\d{1,64})?"
                                    : "-?(0|[1-9]\\d{0,63})(\\.\\d{1,64})?([eE][+-]?\\d{1,4})?";
    if (!bounded) {
        gr_ex_t *e = gr_regex_parse(c->a, syntax, strlen(syntax), GR_REGEX_FULL, c->err);
        if (!e)
            c->failed = true;
        return e;
    }
    gr_dfa_t *d = regex_dfa(c, syntax);
    const json_object *b[2] = {n->lo, n->hi};
    for (int k = 0; k < 2 && d; k++) {
        if (!b[k])
            continue;
        dec_t v = dec_parse(b[k]);
        if (!v.ok) {
            gr_dfa_free(d);
            sc_fail(c, LF_ERR_INVALID, "'%s': not a usable number", k ? "maximum" : "minimum");
            return NULL;
        }
        rb_t r = {0};
        rb_add(&r, "(");
        bound_regex(&r, &v, k == 0 ? (n->lo_excl ? OP_GT : OP_GE) : (n->hi_excl ? OP_LT : OP_LE));
        rb_add(&r, ")");
        if (r.oom) {
            free(r.p);
            gr_dfa_free(d);
            sc_oom(c);
            return NULL;
        }
        d = and_dfa(c, d, regex_dfa(c, r.p));
        free(r.p);
    }
    for (int32_t k = 0; k < n->n_mult && d; k++)
        d = and_dfa(c, d, multiple_dfa(c, n->mult[k]));
    if (!d)
        return NULL;
    if (!sc_keep_dfa(c, d))
        return NULL;
    return gr_ex_dfa(c->a, d, gr_dfa_nullable(d));
}
