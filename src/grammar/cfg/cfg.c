/* cfg.c - expression rules -> productions and terminals (see cfg.h). */
#include "grammar/cfg/cfg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_MAX_SYMS 4000000
#define CFG_MAX_REPEAT 100000
/* pseudo-symbols of regular_symbol(): nothing at all / an empty language */
#define SYM_EPS INT32_MIN
#define SYM_DEAD (INT32_MIN + 1)

enum { MEMO_DONE = 1, MEMO_REGULAR = 2, MEMO_JSTR = 4 };

typedef struct {
    int32_t lhs;
    int32_t *sym;
    int32_t n, cap;
    bool dead;
} prod_t;

typedef struct {
    const gr_ex_t **key;    /* fused piece list */
    int32_t n;
    int32_t sym;            /* resulting symbol (terminal, nullable wrapper) or
                               SYM_EPS: nothing (the empty string); SYM_DEAD */
} memo_t;

typedef struct {
    const gr_limits_t *lim;
    lf_err_t *err;
    bool failed;
    prod_t *prods;
    int32_t n_prods, cap_prods;
    int32_t n_nts;
    gr_term_t *terms;
    int32_t n_terms, cap_terms;
    int64_t n_syms;
    memo_t *memo;
    int32_t n_memo, cap_memo;
    int32_t *memo_slot;     /* hash table over memo[] (-1 empty) */
    uint32_t memo_mask;
    int32_t *term_slot;     /* hash table over terms[] by content hash */
    uint32_t term_mask;
    gr_arena_t *arena;
} bld_t;

static bool bfail(bld_t *b, lf_code_t code, const char *msg)
{
    if (!b->failed) {
        b->failed = true;
        lf_err_set(b->err, code, "%s", msg);
    }
    return false;
}

static bool boom(bld_t *b)
{
    return bfail(b, LF_ERR_NOMEM, "out of memory building the grammar");
}

static uint8_t analyse(gr_ex_t *e)
{
    if (e->memo & MEMO_DONE)
        return e->memo;
    uint8_t m = MEMO_DONE | MEMO_REGULAR;
    switch (e->kind) {
    case GR_EX_REF:
    case GR_EX_TOKEN:
        m &= (uint8_t)~MEMO_REGULAR;
        break;
    case GR_EX_SEQ:
    case GR_EX_ALT:
        for (uint32_t i = 0; i < e->n; i++) {
            uint8_t k = analyse(e->kids[i]);
            if (!(k & MEMO_REGULAR))
                m &= (uint8_t)~MEMO_REGULAR;
            m |= k & MEMO_JSTR;
        }
        break;
    case GR_EX_REP: {
        uint8_t k = analyse(e->kid);
        if (!(k & MEMO_REGULAR))
            m &= (uint8_t)~MEMO_REGULAR;
        m |= k & MEMO_JSTR;
        break;
    }
    case GR_EX_JSTR:
        m |= MEMO_JSTR;
        break;
    case GR_EX_DFA:
        if (e->dfa_counted)
            m |= MEMO_JSTR;
        break;
    default:
        break;
    }
    e->memo = m;
    return m;
}

static bool fusable(gr_ex_t *e)
{
    uint8_t m = analyse(e);
    return (m & MEMO_REGULAR) && !(m & MEMO_JSTR);
}

static int32_t new_nt(bld_t *b)
{
    return b->n_nts++;
}

static prod_t *new_prod(bld_t *b, int32_t lhs)
{
    if (b->failed)
        return NULL;
    if (b->n_prods == b->cap_prods) {
        int32_t cap = b->cap_prods ? b->cap_prods * 2 : 64;
        prod_t *p = realloc(b->prods, (size_t)cap * sizeof *p);
        if (!p) {
            boom(b);
            return NULL;
        }
        b->prods = p;
        b->cap_prods = cap;
    }
    prod_t *p = &b->prods[b->n_prods++];
    memset(p, 0, sizeof *p);
    p->lhs = lhs;
    return p;
}

/* prods may move when new productions are added: address by index */
static void push_sym(bld_t *b, int32_t pi, int32_t s)
{
    if (b->failed)
        return;
    prod_t *p = &b->prods[pi];
    if (++b->n_syms > CFG_MAX_SYMS) {
        bfail(b, LF_ERR_UNSUPPORTED, "grammar too large: the limit of 4,000,000 grammar symbols was hit");
        return;
    }
    if (p->n == p->cap) {
        int32_t cap = p->cap ? p->cap * 2 : 8;
        int32_t *v = realloc(p->sym, (size_t)cap * sizeof *v);
        if (!v) {
            boom(b);
            return;
        }
        p->sym = v;
        p->cap = cap;
    }
    p->sym[p->n++] = s;
}

/* ---- terminals ---------------------------------------------------------- */

/* Open-addressing tables of indexes; grow at half load. */
static bool table_grow(int32_t **slot, uint32_t *mask, int32_t n, uint64_t (*key)(bld_t *, int32_t), bld_t *b)
{
    uint32_t cap = *mask ? (*mask + 1) * 2 : 256;
    while ((uint32_t)n * 2 >= cap)
        cap *= 2;
    int32_t *s = malloc((size_t)cap * sizeof *s);
    if (!s)
        return false;
    memset(s, 0xff, (size_t)cap * sizeof *s);
    for (int32_t i = 0; i < n; i++) {
        uint32_t j = (uint32_t)key(b, i) & (cap - 1);
        while (s[j] >= 0)
            j = (j + 1) & (cap - 1);
        s[j] = i;
    }
    free(*slot);
    *slot = s;
    *mask = cap - 1;
    return true;
}

static uint64_t term_key(bld_t *b, int32_t i)
{
    return b->terms[i].h1 ^ (uint64_t)b->terms[i].kind * 0x9E3779B97F4A7C15ull;
}

static int32_t intern_term(bld_t *b, gr_term_t *t)
{
    if (!b->term_slot && !table_grow(&b->term_slot, &b->term_mask, 0, term_key, b)) {
        gr_dfa_free(t->dfa);
        free(t->live);
        boom(b);
        return -1;
    }
    uint64_t k = t->h1 ^ (uint64_t)t->kind * 0x9E3779B97F4A7C15ull;
    uint32_t j = (uint32_t)k & b->term_mask;
    for (; b->term_slot[j] >= 0; j = (j + 1) & b->term_mask) {
        gr_term_t *o = &b->terms[b->term_slot[j]];
        if (o->kind != t->kind || o->h1 != t->h1 || o->h2 != t->h2)
            continue;
        if (t->kind == GR_TERM_TOKEN ? o->token == t->token
                                     : (o->min == t->min && o->max == t->max && gr_dfa_equal(o->dfa, t->dfa))) {
            gr_dfa_free(t->dfa);
            free(t->live);
            return b->term_slot[j];
        }
    }
    if (b->n_terms == b->cap_terms) {
        int32_t cap = b->cap_terms ? b->cap_terms * 2 : 32;
        gr_term_t *v = realloc(b->terms, (size_t)cap * sizeof *v);
        if (!v) {
            gr_dfa_free(t->dfa);
            free(t->live);
            boom(b);
            return -1;
        }
        b->terms = v;
        b->cap_terms = cap;
    }
    b->terms[b->n_terms] = *t;
    b->term_slot[j] = b->n_terms;
    int32_t id = b->n_terms++;
    if ((uint32_t)b->n_terms * 2 > b->term_mask && !table_grow(&b->term_slot, &b->term_mask, b->n_terms, term_key, b)) {
        boom(b);
        return -1;
    }
    return id;
}

static uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

/* Liveness of (state, count) pairs of a counted string (see cfg.h): a pair
 * is live when an accepting state with min <= count <= max is reachable.
 * Levels from cap down to 0; inside one level the non-counting edges
 * (within a code point, the quotes) form a DAG, solved by iteration. */
static bool counted_live(gr_term_t *t)
{
    const gr_dfa_t *d = t->dfa;
    int32_t ns = d->n_states, nc = d->n_classes, cap = t->cap;
    uint8_t *live = calloc((size_t)(cap + 1) * (size_t)ns, 1);
    if (!live)
        return false;
    for (int32_t c = cap; c >= 0; c--) {
        uint8_t *L = live + (size_t)c * ns;
        const uint8_t *up = c < cap ? live + (size_t)(c + 1) * ns : NULL;
        /* Level c is a function of level c + 1 that is the same for every c
         * with min <= c < cap, and for every c < min: once two levels of
         * one such run are equal, every lower level of the run is too. */
        if (c + 2 <= cap - 1 && (c >= t->min) == (c + 1 >= t->min) && (c + 1 >= t->min) == (c + 2 >= t->min) &&
            !memcmp(up, up + ns, (size_t)ns)) {
            int32_t lo = c >= t->min ? t->min : 0;
            for (; c >= lo; c--)
                memcpy(live + (size_t)c * ns, up, (size_t)ns);
            c++; /* the loop's c-- moves on to lo - 1 */
            continue;
        }
        for (int32_t s = 0; s < ns; s++)
            L[s] = d->accept[s] && c >= t->min;
        bool changed = true;
        while (changed) {
            changed = false;
            for (int32_t s = 0; s < ns; s++) {
                if (L[s])
                    continue;
                for (int32_t k = 0; k < nc && !L[s]; k++) {
                    int32_t s2 = d->next[(size_t)s * nc + k];
                    if (s2 < 0)
                        continue;
                    bool inc = d->tag[s] != GR_TAG_OUT && d->tag[s2] == GR_TAG_BOUND;
                    if (!inc)
                        L[s] = L[s2];
                    else if (c < cap)
                        L[s] = up[s2];
                    else if (t->max < 0)
                        L[s] = L[s2]; /* saturated count */
                    if (L[s])
                        changed = true;
                }
            }
        }
    }
    t->live = live;
    return true;
}

/* Terminal for a regular expression. Returns the symbol to use: a terminal,
 * a nonterminal N ::= e | T' for a nullable language, SYM_EPS for the
 * empty string alone, SYM_DEAD for the empty language. */
static int32_t regular_symbol(bld_t *b, gr_ex_t *x)
{
    if (b->failed)
        return SYM_DEAD;
    bool counted = (x->kind == GR_EX_JSTR && (x->min > 0 || x->max >= 0)) ||
                   (x->kind == GR_EX_DFA && x->dfa_counted && x->dfa->tag && (x->min > 0 || x->max >= 0));
    gr_dfa_t *d = x->kind == GR_EX_DFA ? gr_dfa_copy(x->dfa) : gr_dfa_from_expr(x, counted, b->lim, b->err);
    if (!d && x->kind == GR_EX_DFA)
        lf_err_set(b->err, LF_ERR_NOMEM, "out of memory");
    if (!d) {
        b->failed = true;
        return SYM_DEAD;
    }
    if (d->n_states == 0) {
        gr_dfa_free(d);
        return SYM_DEAD;
    }
    bool nullable = gr_dfa_nullable(d);
    if (nullable) {
        gr_dfa_t *ne = gr_dfa_nonempty(d, b->lim, b->err);
        gr_dfa_free(d);
        if (!ne) {
            b->failed = true;
            return SYM_DEAD;
        }
        d = ne;
        if (d->n_states == 0) { /* exactly the empty string */
            gr_dfa_free(d);
            return SYM_EPS;
        }
    }
    gr_term_t t = {.kind = GR_TERM_DFA, .dfa = d, .max = -1, .h1 = d->h1, .h2 = d->h2};
    if (counted) {
        if (x->max >= 0 && x->max < x->min) {
            gr_dfa_free(d);
            return SYM_DEAD;
        }
        int64_t cap = x->max >= 0 ? x->max : x->min;
        if ((cap + 1) * (int64_t)d->n_states > 16000000) {
            gr_dfa_free(d);
            bfail(b, LF_ERR_UNSUPPORTED,
                  "grammar too large: a string length bound (minLength/maxLength) is beyond the counted-string limit");
            return SYM_DEAD;
        }
        t.kind = GR_TERM_COUNTED;
        t.min = (int32_t)x->min;
        t.max = (int32_t)x->max;
        t.cap = (int32_t)cap;
        t.h1 = hmix(hmix(d->h1, (uint64_t)t.min), (uint64_t)(int64_t)t.max);
        t.h2 = hmix(hmix(d->h2, (uint64_t)t.max), (uint64_t)t.min + 17);
        if (!counted_live(&t)) {
            gr_dfa_free(d);
            boom(b);
            return SYM_DEAD;
        }
        if (!t.live[0]) {
            gr_dfa_free(d);
            free(t.live);
            return SYM_DEAD;
        }
    }
    if (t.kind == GR_TERM_DFA)
        t.narrow = gr_dfa_narrow(d);
    int32_t id = intern_term(b, &t);
    if (id < 0)
        return SYM_DEAD;
    if (!nullable)
        return GR_SYM_TERM(id);
    int32_t n = new_nt(b);
    int32_t p0 = b->n_prods;
    if (!new_prod(b, n) || !new_prod(b, n))
        return SYM_DEAD;
    push_sym(b, p0 + 1, GR_SYM_TERM(id));
    return n;
}

static uint64_t pieces_hash(const gr_ex_t *const *pieces, int32_t n)
{
    uint64_t h = hmix(0x5eed, (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        h = hmix(h, (uint64_t)(uintptr_t)pieces[i]);
    return h;
}

static uint64_t memo_key(bld_t *b, int32_t i)
{
    return pieces_hash(b->memo[i].key, b->memo[i].n);
}

/* Memoized by the list of fused pieces (pointer identity). */
static int32_t fused_symbol(bld_t *b, const gr_ex_t **pieces, int32_t n)
{
    if (!b->memo_slot && !table_grow(&b->memo_slot, &b->memo_mask, 0, memo_key, b)) {
        boom(b);
        return SYM_DEAD;
    }
    uint64_t h = pieces_hash(pieces, n);
    for (uint32_t j = (uint32_t)h & b->memo_mask; b->memo_slot[j] >= 0; j = (j + 1) & b->memo_mask) {
        memo_t *m = &b->memo[b->memo_slot[j]];
        if (m->n == n && !memcmp(m->key, pieces, (size_t)n * sizeof *pieces))
            return m->sym;
    }
    gr_ex_t *x = n == 1 ? (gr_ex_t *)pieces[0] : gr_ex_seq(b->arena, (gr_ex_t *const *)pieces, (size_t)n);
    if (!x) {
        bfail(b, b->arena->over ? LF_ERR_UNSUPPORTED : LF_ERR_NOMEM,
              b->arena->over ? "grammar too large: the compile memory limit was hit" : "out of memory");
        return SYM_DEAD;
    }
    int32_t sym = regular_symbol(b, x);
    if (b->failed)
        return SYM_DEAD;
    if (b->n_memo == b->cap_memo) {
        int32_t cap = b->cap_memo ? b->cap_memo * 2 : 64;
        memo_t *m = realloc(b->memo, (size_t)cap * sizeof *m);
        if (!m) {
            boom(b);
            return SYM_DEAD;
        }
        b->memo = m;
        b->cap_memo = cap;
    }
    const gr_ex_t **key = malloc((size_t)n * sizeof *key);
    if (!key) {
        boom(b);
        return SYM_DEAD;
    }
    memcpy(key, pieces, (size_t)n * sizeof *key);
    b->memo[b->n_memo++] = (memo_t){key, n, sym};
    if ((uint32_t)b->n_memo * 2 > b->memo_mask) {
        if (!table_grow(&b->memo_slot, &b->memo_mask, b->n_memo, memo_key, b)) {
            boom(b);
            return SYM_DEAD;
        }
    } else {
        uint32_t j = (uint32_t)h & b->memo_mask;
        while (b->memo_slot[j] >= 0)
            j = (j + 1) & b->memo_mask;
        b->memo_slot[j] = b->n_memo - 1;
    }
    return sym;
}

/* ---- productions ------------------------------------------------------- */

typedef struct {
    const gr_ex_t **v;
    int32_t n, cap;
} pend_t;

static void add_alternatives(bld_t *b, int32_t nt, gr_ex_t *x, int depth);

static void flush(bld_t *b, int32_t pi, pend_t *pd)
{
    if (pd->n == 0 || b->failed)
        return;
    int32_t s = fused_symbol(b, pd->v, pd->n);
    pd->n = 0;
    if (s == SYM_EPS)
        return;
    if (s == SYM_DEAD) {
        b->prods[pi].dead = true;
        return;
    }
    push_sym(b, pi, s);
}

static void pend_push(bld_t *b, pend_t *pd, const gr_ex_t *x)
{
    if (pd->n == pd->cap) {
        int32_t cap = pd->cap ? pd->cap * 2 : 8;
        const gr_ex_t **v = realloc(pd->v, (size_t)cap * sizeof *v);
        if (!v) {
            boom(b);
            return;
        }
        pd->v = v;
        pd->cap = cap;
    }
    pd->v[pd->n++] = x;
}

/* A single symbol standing for x. */
static int32_t symbol_for(bld_t *b, gr_ex_t *x, int depth)
{
    if (x->kind == GR_EX_REF)
        return x->ref;
    int32_t n = new_nt(b);
    add_alternatives(b, n, x, depth + 1);
    return n;
}

static void append(bld_t *b, int32_t pi, pend_t *pd, gr_ex_t *x, int depth)
{
    if (b->failed)
        return;
    if (depth > 2000) {
        bfail(b, LF_ERR_UNSUPPORTED, "grammar too deeply nested: the nesting limit of 2000 was hit");
        return;
    }
    if (x->kind == GR_EX_EMPTY)
        return;
    if (x->kind == GR_EX_NONE) {
        b->prods[pi].dead = true;
        return;
    }
    if (fusable(x)) {
        pend_push(b, pd, x);
        return;
    }
    switch (x->kind) {
    case GR_EX_SEQ:
        for (uint32_t i = 0; i < x->n; i++)
            append(b, pi, pd, x->kids[i], depth + 1);
        return;
    case GR_EX_REF:
        flush(b, pi, pd);
        push_sym(b, pi, x->ref);
        return;
    case GR_EX_TOKEN: {
        flush(b, pi, pd);
        gr_term_t t = {.kind = GR_TERM_TOKEN, .token = x->token, .max = -1,
                       .h1 = hmix(0x70C, (uint64_t)x->token), .h2 = hmix(0x70D, (uint64_t)x->token)};
        int32_t id = intern_term(b, &t);
        if (id >= 0)
            push_sym(b, pi, GR_SYM_TERM(id));
        return;
    }
    case GR_EX_DFA:
    case GR_EX_JSTR: {
        flush(b, pi, pd);
        const gr_ex_t *one = x;
        int32_t s = fused_symbol(b, &one, 1);
        if (s == SYM_DEAD)
            b->prods[pi].dead = true;
        else if (s != SYM_EPS)
            push_sym(b, pi, s);
        return;
    }
    case GR_EX_ALT: {
        flush(b, pi, pd);
        int32_t n = new_nt(b);
        add_alternatives(b, n, x, depth + 1);
        push_sym(b, pi, n);
        return;
    }
    case GR_EX_REP: {
        flush(b, pi, pd);
        int64_t min = x->min, max = x->max;
        if (min > CFG_MAX_REPEAT || max > CFG_MAX_REPEAT) {
            bfail(b, LF_ERR_UNSUPPORTED, "grammar too large: a repetition bound above 100000 (e.g. maxItems)");
            return;
        }
        int32_t k = symbol_for(b, x->kid, depth);
        int32_t r = new_nt(b);
        if (max < 0) {
            /* r ::= k^min | r k */
            int32_t p = b->n_prods;
            if (!new_prod(b, r))
                return;
            for (int64_t i = 0; i < min; i++)
                push_sym(b, p, k);
            p = b->n_prods;
            if (!new_prod(b, r))
                return;
            push_sym(b, p, r);
            push_sym(b, p, k);
        } else {
            /* r ::= k^min t0 ; t_i ::= e | k t_{i+1} ; last ::= e | k */
            int32_t p = b->n_prods;
            if (!new_prod(b, r))
                return;
            for (int64_t i = 0; i < min; i++)
                push_sym(b, p, k);
            int32_t prev = -1;
            for (int64_t i = max - min - 1; i >= 0 && !b->failed; i--) {
                int32_t t = new_nt(b);
                int32_t q = b->n_prods;
                if (!new_prod(b, t) || !new_prod(b, t))
                    return;
                push_sym(b, q + 1, k);
                if (prev >= 0)
                    push_sym(b, q + 1, prev);
                prev = t;
            }
            if (prev >= 0)
                push_sym(b, p, prev);
        }
        push_sym(b, pi, r);
        return;
    }
    default:
        pend_push(b, pd, x);
        return;
    }
}

static void add_alternatives(bld_t *b, int32_t nt, gr_ex_t *x, int depth)
{
    if (b->failed)
        return;
    if (depth > 2000) {
        bfail(b, LF_ERR_UNSUPPORTED, "grammar too deeply nested: the nesting limit of 2000 was hit");
        return;
    }
    if (x->kind == GR_EX_ALT && !fusable(x)) {
        for (uint32_t i = 0; i < x->n; i++)
            add_alternatives(b, nt, x->kids[i], depth + 1);
        return;
    }
    int32_t pi = b->n_prods;
    if (!new_prod(b, nt))
        return;
    pend_t pd = {0};
    append(b, pi, &pd, x, depth + 1);
    flush(b, pi, &pd);
    free(pd.v);
}

/* ---- finalize ------------------------------------------------------------ */

static void bld_free(bld_t *b)
{
    for (int32_t i = 0; i < b->n_prods; i++)
        free(b->prods[i].sym);
    free(b->prods);
    for (int32_t i = 0; i < b->n_memo; i++)
        free(b->memo[i].key);
    free(b->memo);
    free(b->memo_slot);
    free(b->term_slot);
}

void gr_cfg_free(gr_cfg_t *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_terms; i++) {
        gr_dfa_free(g->terms[i].dfa);
        free(g->terms[i].live);
    }
    free(g->terms);
    free(g->prod_start);
    free(g->prod_lhs);
    free(g->syms);
    free(g->dr_prod);
    free(g->nt_first);
    free(g->nt_prods);
    free(g->nullable);
    free(g);
}

gr_cfg_t *gr_cfg_build(gr_ex_t *const *rules, int32_t n_rules, int32_t start, const gr_limits_t *lim,
                       lf_err_t *err)
{
    bld_t b = {.lim = lim, .err = err};
    gr_arena_t scratch;
    gr_arena_init(&scratch, 64u << 20);
    b.arena = &scratch;
    gr_cfg_t *g = NULL;
    b.n_nts = n_rules + 1; /* n_rules: the augmented start S' */
    int32_t sprime = n_rules;
    int32_t p0 = b.n_prods;
    if (new_prod(&b, sprime))
        push_sym(&b, p0, start);
    for (int32_t r = 0; r < n_rules && !b.failed; r++)
        if (rules[r])
            add_alternatives(&b, r, rules[r], 0);
    if (b.failed)
        goto out;
    /* productive nonterminals (fixpoint); dead productions are unproductive */
    int32_t nn = b.n_nts, np = b.n_prods;
    bool *prod_ok = calloc((size_t)np + 1, 1), *nt_ok = calloc((size_t)nn + 1, 1);
    if (!prod_ok || !nt_ok) {
        free(prod_ok);
        free(nt_ok);
        boom(&b);
        goto out;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t p = 0; p < np; p++) {
            if (prod_ok[p] || b.prods[p].dead)
                continue;
            bool ok = true;
            for (int32_t i = 0; i < b.prods[p].n && ok; i++) {
                int32_t s = b.prods[p].sym[i];
                if (s >= 0 && !nt_ok[s])
                    ok = false;
            }
            if (ok) {
                prod_ok[p] = true;
                if (!nt_ok[b.prods[p].lhs]) {
                    nt_ok[b.prods[p].lhs] = true;
                    changed = true;
                }
            }
        }
    }
    if (!nt_ok[sprime]) {
        free(prod_ok);
        free(nt_ok);
        bfail(&b, LF_ERR_INVALID, "the grammar admits no output at all (no value satisfies every constraint)");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        free(prod_ok);
        free(nt_ok);
        boom(&b);
        goto out;
    }
    int32_t kept = 0, nsyms = 0;
    for (int32_t p = 0; p < np; p++)
        if (prod_ok[p]) {
            kept++;
            nsyms += b.prods[p].n + 1;
        }
    g->n_nts = nn;
    g->n_prods = kept;
    g->n_syms = nsyms;
    g->prod_start = malloc((size_t)kept * sizeof *g->prod_start);
    g->prod_lhs = malloc((size_t)kept * sizeof *g->prod_lhs);
    g->syms = malloc((size_t)nsyms * sizeof *g->syms);
    g->dr_prod = malloc((size_t)nsyms * sizeof *g->dr_prod);
    g->nt_first = calloc((size_t)nn + 1, sizeof *g->nt_first);
    g->nt_prods = malloc((size_t)kept * sizeof *g->nt_prods);
    g->nullable = calloc((size_t)nn, sizeof *g->nullable);
    if (!g->prod_start || !g->prod_lhs || !g->syms || !g->dr_prod || !g->nt_first || !g->nt_prods || !g->nullable) {
        free(prod_ok);
        free(nt_ok);
        boom(&b);
        goto out;
    }
    int32_t k = 0, w = 0;
    for (int32_t p = 0; p < np; p++) {
        if (!prod_ok[p])
            continue;
        g->prod_start[k] = w;
        g->prod_lhs[k] = b.prods[p].lhs;
        for (int32_t i = 0; i < b.prods[p].n; i++) {
            g->syms[w] = b.prods[p].sym[i];
            g->dr_prod[w++] = k;
        }
        g->syms[w] = GR_SYM_END;
        g->dr_prod[w++] = k;
        g->nt_first[b.prods[p].lhs + 1]++;
        k++;
    }
    for (int32_t i = 0; i < nn; i++)
        g->nt_first[i + 1] += g->nt_first[i];
    int32_t *fill = calloc((size_t)nn + 1, sizeof *fill);
    if (!fill) {
        free(prod_ok);
        free(nt_ok);
        boom(&b);
        goto out;
    }
    for (int32_t p = 0; p < kept; p++) {
        int32_t l = g->prod_lhs[p];
        g->nt_prods[g->nt_first[l] + fill[l]++] = p;
    }
    free(fill);
    free(prod_ok);
    free(nt_ok);
    /* nullable (fixpoint) */
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t p = 0; p < kept; p++) {
            int32_t l = g->prod_lhs[p];
            if (g->nullable[l])
                continue;
            bool nul = true;
            for (int32_t dr = g->prod_start[p]; g->syms[dr] != GR_SYM_END && nul; dr++)
                nul = g->syms[dr] >= 0 && g->nullable[g->syms[dr]];
            if (nul) {
                g->nullable[l] = true;
                changed = true;
            }
        }
    }
    g->start = sprime;
    g->accept_dr = g->prod_start[0] + 1; /* production 0 is S' -> start */
    g->terms = b.terms;
    g->n_terms = b.n_terms;
    b.terms = NULL;
    for (int32_t t = 0; t < g->n_terms; t++)
        if (g->terms[t].kind == GR_TERM_TOKEN)
            g->has_tokens = true;
out:
    if (b.failed) {
        gr_cfg_free(g);
        g = NULL;
        for (int32_t i = 0; i < b.n_terms; i++) {
            gr_dfa_free(b.terms[i].dfa);
            free(b.terms[i].live);
        }
        free(b.terms);
    }
    bld_free(&b);
    gr_arena_free(&scratch);
    return g;
}

/* ---- dump ------------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf_t;

static void sb_printf(sbuf_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *s, const char *fmt, ...)
{
    if (s->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(s->p ? s->p + s->n : NULL, s->p ? s->cap - s->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if (s->p && s->n + (size_t)w < s->cap) {
            s->n += (size_t)w;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->n + (size_t)w + 1)
            cap *= 2;
        char *np = realloc(s->p, cap);
        if (!np) {
            s->oom = true;
            return;
        }
        s->p = np;
        s->cap = cap;
    }
}

/* One shortest accepted string of a DFA (breadth-first), escaped. */
static void dfa_example(sbuf_t *s, const gr_dfa_t *d)
{
    int32_t n = d->n_states;
    int32_t *prev = malloc((size_t)n * sizeof *prev), *queue = malloc((size_t)n * sizeof *queue);
    uint8_t *via = malloc((size_t)n);
    if (!prev || !queue || !via) {
        free(prev);
        free(queue);
        free(via);
        return;
    }
    for (int32_t i = 0; i < n; i++)
        prev[i] = -2;
    prev[0] = -1;
    int32_t qh = 0, qt = 0, hit = -1;
    queue[qt++] = 0;
    while (qh < qt && hit < 0) {
        int32_t st = queue[qh++];
        if (d->accept[st]) {
            hit = st;
            break;
        }
        for (int by = 0; by < 256; by++) {
            int32_t t = gr_dfa_step(d, st, (uint8_t)by);
            if (t >= 0 && prev[t] == -2) {
                prev[t] = st;
                via[t] = (uint8_t)by;
                queue[qt++] = t;
            }
        }
    }
    char buf[256];
    int len = 0;
    for (int32_t st = hit; st > 0 && len < 255; st = prev[st])
        buf[len++] = (char)via[st];
    sb_printf(s, "e.g. \"");
    for (int i = len - 1; i >= 0; i--) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '"' || c == '\\')
            sb_printf(s, "\\%c", c);
        else if (c < 0x20 || c == 0x7F)
            sb_printf(s, "\\x%02X", c);
        else
            sb_printf(s, "%c", c);
    }
    sb_printf(s, "\"");
    free(prev);
    free(queue);
    free(via);
}

char *gr_cfg_dump(const gr_cfg_t *g)
{
    sbuf_t s = {0};
    sb_printf(&s, "# %d nonterminals, %d productions, %d terminals\n", g->n_nts, g->n_prods, g->n_terms);
    for (int32_t nt = 0; nt < g->n_nts; nt++) {
        if (g->nt_first[nt] == g->nt_first[nt + 1])
            continue;
        sb_printf(&s, "%s%d ::=", nt == g->start ? "start" : "r", nt == g->start ? 0 : nt);
        for (int32_t k = g->nt_first[nt]; k < g->nt_first[nt + 1]; k++) {
            int32_t p = g->nt_prods[k];
            if (k > g->nt_first[nt])
                sb_printf(&s, " |");
            if (g->syms[g->prod_start[p]] == GR_SYM_END)
                sb_printf(&s, " ()");
            for (int32_t dr = g->prod_start[p]; g->syms[dr] != GR_SYM_END; dr++) {
                int32_t sy = g->syms[dr];
                if (GR_SYM_IS_TERM(sy))
                    sb_printf(&s, " T%d", GR_SYM_TERM_ID(sy));
                else
                    sb_printf(&s, " r%d", sy);
            }
        }
        sb_printf(&s, "\n");
    }
    for (int32_t t = 0; t < g->n_terms; t++) {
        const gr_term_t *te = &g->terms[t];
        if (te->kind == GR_TERM_TOKEN) {
            sb_printf(&s, "T%d = <[%d]> (special token)\n", t, te->token);
            continue;
        }
        sb_printf(&s, "T%d = byte automaton, %d states", t, te->dfa->n_states);
        if (te->kind == GR_TERM_COUNTED) {
            if (te->max >= 0)
                sb_printf(&s, ", JSON string of %d..%d code points", te->min, te->max);
            else
                sb_printf(&s, ", JSON string of at least %d code points", te->min);
        }
        sb_printf(&s, ", ");
        dfa_example(&s, te->dfa);
        sb_printf(&s, "\n");
    }
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    return s.p;
}
