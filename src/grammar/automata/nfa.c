/* nfa.c - regular expressions of the IR to byte NFAs (see nfa.h). */
#include "grammar/automata/nfa.h"

#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

#define NFA_DEFAULT_MAX 2000000

static int64_t nfa_max(const gr_nfa_t *n)
{
    return n->lim && n->lim->max_nfa_states > 0 ? n->lim->max_nfa_states : NFA_DEFAULT_MAX;
}

static int32_t st_new(gr_nfa_t *n, uint8_t tag)
{
    if (n->failed)
        return -1;
    if (n->n >= nfa_max(n)) {
        n->failed = true;
        lf_err_set(n->err, LF_ERR_UNSUPPORTED,
                   "grammar too large: the automaton limit of %lld states was hit", (long long)nfa_max(n));
        return -1;
    }
    if ((++n->checks & 4095) == 0 && n->lim && n->lim->deadline_ns && gr_now_ns() > n->lim->deadline_ns) {
        n->failed = true;
        lf_err_set(n->err, LF_ERR_UNSUPPORTED, "grammar too complex: the compile time limit was hit");
        return -1;
    }
    if (n->n == n->cap) {
        int32_t cap = n->cap ? n->cap * 2 : 256;
        int32_t *f = realloc(n->first, (size_t)cap * sizeof *f);
        if (f)
            n->first = f;
        uint8_t *t = realloc(n->tag, (size_t)cap);
        if (t)
            n->tag = t;
        if (!f || !t) {
            n->failed = true;
            lf_err_set(n->err, LF_ERR_NOMEM, "out of memory building an automaton");
            return -1;
        }
        n->cap = cap;
    }
    n->first[n->n] = -1;
    n->tag[n->n] = tag;
    return n->n++;
}

static void edge(gr_nfa_t *n, int32_t from, int32_t to, uint8_t lo, uint8_t hi)
{
    if (n->failed || from < 0 || to < 0)
        return;
    if (n->ne == n->ecap) {
        int32_t cap = n->ecap ? n->ecap * 2 : 512;
        gr_nfa_edge_t *e = realloc(n->e, (size_t)cap * sizeof *e);
        if (!e) {
            n->failed = true;
            lf_err_set(n->err, LF_ERR_NOMEM, "out of memory building an automaton");
            return;
        }
        n->e = e;
        n->ecap = cap;
    }
    n->e[n->ne] = (gr_nfa_edge_t){.to = to, .next = n->first[from], .lo = lo, .hi = hi};
    n->first[from] = n->ne++;
}

static void eps(gr_nfa_t *n, int32_t from, int32_t to)
{
    edge(n, from, to, 1, 0);
}

/* ---- UTF-8 ---------------------------------------------------------- */

/* Byte-range sequence from `from` to `to`; intermediate states get `inner`. */
static void add_seq(gr_nfa_t *n, int32_t from, int32_t to, const uint8_t *lo, const uint8_t *hi, int len,
                    uint8_t inner)
{
    int32_t cur = from;
    for (int i = 0; i < len; i++) {
        int32_t nx = i == len - 1 ? to : st_new(n, inner);
        edge(n, cur, nx, lo[i], hi[i]);
        cur = nx;
    }
}

/* UTF-8 sequences of [lo, hi] (one encoded length, no surrogates inside):
 * splits until each piece is a product of byte ranges. */
static void utf8_split(gr_nfa_t *n, int32_t from, int32_t to, uint32_t lo, uint32_t hi, uint8_t inner)
{
    if (n->failed)
        return;
    uint8_t a[4], b[4];
    int la = (int)utf8_encode(lo, a), lb = (int)utf8_encode(hi, b);
    if (la != lb) {
        uint32_t cut = la == 1 ? 0x7F : la == 2 ? 0x7FF : 0xFFFF;
        utf8_split(n, from, to, lo, cut, inner);
        utf8_split(n, from, to, cut + 1, hi, inner);
        return;
    }
    for (int i = 1; i < la; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_split(n, from, to, lo, lo | m, inner);
                utf8_split(n, from, to, (lo | m) + 1, hi, inner);
                return;
            }
            if ((hi & m) != m) {
                utf8_split(n, from, to, lo, (hi & ~m) - 1, inner);
                utf8_split(n, from, to, hi & ~m, hi, inner);
                return;
            }
        }
    }
    add_seq(n, from, to, a, b, la, inner);
}

static void utf8_range(gr_nfa_t *n, int32_t from, int32_t to, uint32_t lo, uint32_t hi, uint8_t inner)
{
    if (hi > GR_CP_MAX)
        hi = GR_CP_MAX;
    if (lo > hi)
        return;
    /* no surrogates */
    if (lo <= 0xDFFF && hi >= 0xD800) {
        if (lo < 0xD800)
            utf8_range(n, from, to, lo, 0xD7FF, inner);
        if (hi > 0xDFFF)
            utf8_range(n, from, to, 0xE000, hi, inner);
        return;
    }
    utf8_split(n, from, to, lo, hi, inner);
}

/* ---- JSON string encodings ------------------------------------------- */

static void hex_digit(gr_nfa_t *n, int32_t from, int32_t to, unsigned v)
{
    static const char *lc = "0123456789abcdef", *uc = "0123456789ABCDEF";
    edge(n, from, to, (uint8_t)lc[v], (uint8_t)lc[v]);
    if (uc[v] != lc[v])
        edge(n, from, to, (uint8_t)uc[v], (uint8_t)uc[v]);
}

static void json_chars(gr_nfa_t *n, int32_t from, int32_t to, const gr_cset_t *cs)
{
    static const struct {
        uint32_t c;
        char esc;
    } shorts[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'},
                  {'\t', 't'}};
    for (size_t i = 0; i < cs->n; i++) {
        uint32_t lo = cs->r[i].lo, hi = cs->r[i].hi;
        /* raw: >= 0x20 except '"', '\\' (and '<' under esc_lt), in order */
        uint32_t rl = lo < 0x20 ? 0x20 : lo;
        while (rl <= hi && !n->failed) {
            uint32_t rh = hi;
            if (rl <= '"' && rh >= '"') {
                if (rl < '"')
                    utf8_range(n, from, to, rl, '"' - 1, GR_TAG_INNER);
                rl = '"' + 1;
                continue;
            }
            if (n->esc_lt && rl <= '<' && rh >= '<') {
                if (rl < '<')
                    utf8_range(n, from, to, rl, '<' - 1, GR_TAG_INNER);
                rl = '<' + 1;
                continue;
            }
            if (rl <= '\\' && rh >= '\\') {
                if (rl < '\\')
                    utf8_range(n, from, to, rl, '\\' - 1, GR_TAG_INNER);
                rl = '\\' + 1;
                continue;
            }
            utf8_range(n, from, to, rl, rh, GR_TAG_INNER);
            break;
        }
    }
    /* escapes */
    int32_t bs = -1;
    for (size_t k = 0; k < sizeof shorts / sizeof shorts[0]; k++)
        if (gr_cset_has(cs, shorts[k].c)) {
            if (bs < 0) {
                bs = st_new(n, GR_TAG_INNER);
                edge(n, from, bs, '\\', '\\');
            }
            edge(n, bs, to, (uint8_t)shorts[k].esc, (uint8_t)shorts[k].esc);
        }
    int32_t u0 = -1;
    /* \u00XX: the control characters, and '<' under esc_lt */
    for (uint32_t c = 0; c <= 0x20; c++) {
        if (c == 0x20 && !n->esc_lt)
            break;
        if (c == 0x20)
            c = '<';
        if (!gr_cset_has(cs, c))
            continue;
        if (u0 < 0) {
            if (bs < 0) {
                bs = st_new(n, GR_TAG_INNER);
                edge(n, from, bs, '\\', '\\');
            }
            int32_t u = st_new(n, GR_TAG_INNER), z1 = st_new(n, GR_TAG_INNER);
            u0 = st_new(n, GR_TAG_INNER);
            edge(n, bs, u, 'u', 'u');
            edge(n, u, z1, '0', '0');
            edge(n, z1, u0, '0', '0');
        }
        int32_t d = st_new(n, GR_TAG_INNER);
        hex_digit(n, u0, d, c >> 4);
        hex_digit(n, d, to, c & 15);
    }
}

/* ---- expressions ------------------------------------------------------ */

typedef struct {
    int32_t s, e;
} frag_t;

static frag_t build(gr_nfa_t *n, const gr_ex_t *x, int mode);

enum { MODE_RAW = 0, MODE_JSON = 1 };

static uint8_t mode_tag(int mode)
{
    return mode == MODE_JSON ? GR_TAG_BOUND : GR_TAG_OUT;
}

static frag_t embed_dfa(gr_nfa_t *n, const gr_dfa_t *d, int mode)
{
    frag_t f = {st_new(n, mode_tag(mode)), st_new(n, mode_tag(mode))};
    if (d->n_states == 0 || n->failed)
        return f;
    int32_t base = n->n;
    for (int32_t s = 0; s < d->n_states; s++)
        st_new(n, d->tag ? d->tag[s] : mode_tag(mode));
    if (n->failed)
        return f;
    eps(n, f.s, base);
    for (int32_t s = 0; s < d->n_states; s++) {
        if (d->accept[s])
            eps(n, base + s, f.e);
        for (int b = 0; b < 256;) {
            int32_t t = gr_dfa_step(d, s, (uint8_t)b);
            int e = b;
            while (e + 1 < 256 && gr_dfa_step(d, s, (uint8_t)(e + 1)) == t)
                e++;
            if (t >= 0)
                edge(n, base + s, base + t, (uint8_t)b, (uint8_t)e);
            b = e + 1;
        }
    }
    return f;
}

static frag_t build_rep(gr_nfa_t *n, const gr_ex_t *x, int mode)
{
    uint8_t t = mode_tag(mode);
    frag_t f = {st_new(n, t), -1};
    int32_t cur = f.s;
    for (int64_t i = 0; i < x->min && !n->failed; i++) {
        frag_t k = build(n, x->kid, mode);
        eps(n, cur, k.s);
        cur = k.e;
    }
    if (x->max < 0) {
        frag_t k = build(n, x->kid, mode);
        int32_t end = st_new(n, t);
        eps(n, cur, k.s);
        eps(n, k.e, k.s);
        eps(n, k.e, end);
        eps(n, cur, end);
        f.e = end;
        return f;
    }
    int32_t end = st_new(n, t);
    for (int64_t i = x->min; i < x->max && !n->failed; i++) {
        eps(n, cur, end);
        frag_t k = build(n, x->kid, mode);
        eps(n, cur, k.s);
        cur = k.e;
    }
    eps(n, cur, end);
    f.e = end;
    return f;
}

static frag_t build(gr_nfa_t *n, const gr_ex_t *x, int mode)
{
    uint8_t t = mode_tag(mode);
    frag_t f = {-1, -1};
    if (n->failed)
        return f;
    switch (x->kind) {
    case GR_EX_NONE:
        f.s = st_new(n, t);
        f.e = st_new(n, t);
        return f;
    case GR_EX_EMPTY:
        f.s = st_new(n, t);
        f.e = st_new(n, t);
        eps(n, f.s, f.e);
        return f;
    case GR_EX_BYTES: {
        f.s = st_new(n, t);
        int32_t cur = f.s;
        for (uint32_t i = 0; i < x->n; i++) {
            int32_t nx = st_new(n, mode == MODE_JSON && i + 1 < x->n ? GR_TAG_INNER : t);
            edge(n, cur, nx, x->bytes[i], x->bytes[i]);
            cur = nx;
        }
        f.e = cur;
        return f;
    }
    case GR_EX_CHARS:
        f.s = st_new(n, t);
        f.e = st_new(n, t);
        if (mode == MODE_JSON)
            json_chars(n, f.s, f.e, &x->cs);
        else
            for (size_t i = 0; i < x->cs.n; i++)
                utf8_range(n, f.s, f.e, x->cs.r[i].lo, x->cs.r[i].hi, GR_TAG_OUT);
        return f;
    case GR_EX_SEQ: {
        f.s = st_new(n, t);
        int32_t cur = f.s;
        for (uint32_t i = 0; i < x->n; i++) {
            frag_t k = build(n, x->kids[i], mode);
            eps(n, cur, k.s);
            cur = k.e;
        }
        f.e = cur;
        return f;
    }
    case GR_EX_ALT:
        f.s = st_new(n, t);
        f.e = st_new(n, t);
        for (uint32_t i = 0; i < x->n; i++) {
            frag_t k = build(n, x->kids[i], mode);
            eps(n, f.s, k.s);
            eps(n, k.e, f.e);
        }
        return f;
    case GR_EX_REP:
        return build_rep(n, x, mode);
    case GR_EX_JSTR: {
        if (mode == MODE_JSON) {
            n->failed = true;
            lf_err_set(n->err, LF_ERR_INTERNAL, "a JSON string nested in a JSON string");
            return f;
        }
        bool counted = n->counted_top == x; /* bounds counted by the caller */
        bool bounded = x->min > 0 || x->max >= 0;
        if (bounded && !counted && x->kid) {
            n->failed = true;
            lf_err_set(n->err, LF_ERR_INTERNAL, "a length-bounded JSON string with a pattern inside a terminal");
            return f;
        }
        f.s = st_new(n, GR_TAG_OUT);
        int32_t c0 = st_new(n, GR_TAG_BOUND);
        edge(n, f.s, c0, '"', '"');
        gr_range_t all = {0, GR_CP_MAX};
        gr_ex_t any = {.kind = GR_EX_CHARS, .cs = {&all, 1, 1}};
        gr_ex_t rep = {.kind = GR_EX_REP, .kid = &any, .min = 0, .max = -1};
        if (bounded && !counted) {
            rep.min = x->min;
            rep.max = x->max;
        }
        bool esc_lt = n->esc_lt;
        n->esc_lt = x->esc_lt;
        frag_t k = build(n, x->kid ? x->kid : &rep, MODE_JSON);
        n->esc_lt = esc_lt;
        int32_t ce = st_new(n, GR_TAG_OUT);
        eps(n, c0, k.s);
        edge(n, k.e, ce, '"', '"');
        f.e = ce;
        return f;
    }
    case GR_EX_DFA:
        return embed_dfa(n, x->dfa, mode);
    case GR_EX_REF:
    case GR_EX_TOKEN:
        n->failed = true;
        lf_err_set(n->err, LF_ERR_INTERNAL, "a rule reference inside a terminal");
        return f;
    }
    return f;
}

lf_code_t gr_nfa_build(gr_nfa_t *nfa, const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err)
{
    memset(nfa, 0, sizeof *nfa);
    nfa->lim = lim;
    nfa->err = err;
    nfa->counted_top = counted && e->kind == GR_EX_JSTR ? e : NULL;
    frag_t f = build(nfa, e, MODE_RAW);
    if (nfa->failed)
        return err ? err->code : LF_ERR_INVALID;
    nfa->start = f.s;
    nfa->accept = f.e;
    return LF_OK;
}

void gr_nfa_free(gr_nfa_t *nfa)
{
    free(nfa->first);
    free(nfa->tag);
    free(nfa->e);
    memset(nfa, 0, sizeof *nfa);
}
