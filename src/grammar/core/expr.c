/* expr.c - the expression IR and its arena (see expr.h). */
#include "grammar/core/expr.h"

#include "grammar/automata/dfa.h"
#include "grammar/core/scratch.h"

#include <stdlib.h>
#include <string.h>

struct gr_arena_block {
    gr_arena_block_t *next;
    size_t size, used;
    max_align_t data[];
};

/* data bytes of a pooled block (scratch.h) */
#define GR_ARENA_BLOCK (GR_SCRATCH_BLOCK - sizeof(gr_arena_block_t))

void gr_arena_init(gr_arena_t *a, size_t budget)
{
    memset(a, 0, sizeof *a);
    a->budget = budget;
}

void gr_arena_free(gr_arena_t *a)
{
    gr_arena_block_t *b = a->head;
    while (b) {
        gr_arena_block_t *n = b->next;
        if (b->size == GR_ARENA_BLOCK)
            gr_scratch_block_put(b);
        else
            free(b);
        b = n;
    }
    a->head = NULL;
    a->used = 0;
}

void *gr_arena_alloc(gr_arena_t *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (a->budget && a->used + n > a->budget) {
        a->over = true;
        return NULL;
    }
    gr_arena_block_t *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = n > GR_ARENA_BLOCK ? n : GR_ARENA_BLOCK;
        b = size == GR_ARENA_BLOCK ? gr_scratch_block_get() : malloc(sizeof *b + size);
        if (!b) {
            a->oom = true;
            return NULL;
        }
        b->size = size;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *gr_arena_strdup(gr_arena_t *a, const char *s, size_t n)
{
    char *p = gr_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static gr_ex_t *node(gr_arena_t *a, gr_ex_kind_t k)
{
    gr_ex_t *e = gr_arena_alloc(a, sizeof *e);
    if (e)
        e->kind = k;
    return e;
}

gr_ex_t *gr_ex_none(gr_arena_t *a)
{
    return node(a, GR_EX_NONE);
}

gr_ex_t *gr_ex_empty(gr_arena_t *a)
{
    return node(a, GR_EX_EMPTY);
}

gr_ex_t *gr_ex_bytes(gr_arena_t *a, const void *p, size_t n)
{
    if (n == 0)
        return gr_ex_empty(a);
    gr_ex_t *e = node(a, GR_EX_BYTES);
    uint8_t *b = e ? gr_arena_alloc(a, n) : NULL;
    if (!b)
        return NULL;
    memcpy(b, p, n);
    e->bytes = b;
    e->n = (uint32_t)n;
    return e;
}

gr_ex_t *gr_ex_str(gr_arena_t *a, const char *s)
{
    return gr_ex_bytes(a, s, strlen(s));
}

gr_ex_t *gr_ex_chars(gr_arena_t *a, const gr_cset_t *cs)
{
    if (!cs || cs->n == 0)
        return gr_ex_none(a);
    gr_ex_t *e = node(a, GR_EX_CHARS);
    gr_range_t *r = e ? gr_arena_alloc(a, cs->n * sizeof *r) : NULL;
    if (!r)
        return NULL;
    memcpy(r, cs->r, cs->n * sizeof *r);
    e->cs.r = r;
    e->cs.n = e->cs.cap = cs->n;
    return e;
}

gr_ex_t *gr_ex_range(gr_arena_t *a, uint32_t lo, uint32_t hi)
{
    gr_range_t r = {lo, hi};
    gr_cset_t cs = {&r, 1, 1};
    return gr_ex_chars(a, &cs);
}

static gr_ex_t *list_node(gr_arena_t *a, gr_ex_kind_t k, gr_ex_t *const *kids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!kids[i])
            return NULL;
    if (n == 1)
        return kids[0];
    if (n == 0)
        return k == GR_EX_SEQ ? gr_ex_empty(a) : gr_ex_none(a);
    gr_ex_t *e = node(a, k);
    gr_ex_t **v = e ? gr_arena_alloc(a, n * sizeof *v) : NULL;
    if (!v)
        return NULL;
    memcpy(v, kids, n * sizeof *v);
    e->kids = v;
    e->n = (uint32_t)n;
    return e;
}

gr_ex_t *gr_ex_seq(gr_arena_t *a, gr_ex_t *const *kids, size_t n)
{
    return list_node(a, GR_EX_SEQ, kids, n);
}

gr_ex_t *gr_ex_alt(gr_arena_t *a, gr_ex_t *const *kids, size_t n)
{
    return list_node(a, GR_EX_ALT, kids, n);
}

gr_ex_t *gr_ex_seq2(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y)
{
    gr_ex_t *k[2] = {x, y};
    return gr_ex_seq(a, k, 2);
}

gr_ex_t *gr_ex_seq3(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y, gr_ex_t *z)
{
    gr_ex_t *k[3] = {x, y, z};
    return gr_ex_seq(a, k, 3);
}

gr_ex_t *gr_ex_alt2(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y)
{
    gr_ex_t *k[2] = {x, y};
    return gr_ex_alt(a, k, 2);
}

gr_ex_t *gr_ex_rep(gr_arena_t *a, gr_ex_t *kid, int64_t min, int64_t max)
{
    if (!kid)
        return NULL;
    if (max >= 0 && max < min)
        return gr_ex_none(a);
    if (min == 1 && max == 1)
        return kid;
    if (max == 0)
        return gr_ex_empty(a);
    gr_ex_t *e = node(a, GR_EX_REP);
    if (!e)
        return NULL;
    e->kid = kid;
    e->min = min;
    e->max = max;
    return e;
}

gr_ex_t *gr_ex_opt(gr_arena_t *a, gr_ex_t *kid)
{
    return gr_ex_rep(a, kid, 0, 1);
}

gr_ex_t *gr_ex_ref(gr_arena_t *a, int32_t rule)
{
    gr_ex_t *e = node(a, GR_EX_REF);
    if (e)
        e->ref = rule;
    return e;
}

gr_ex_t *gr_ex_token(gr_arena_t *a, int32_t token)
{
    gr_ex_t *e = node(a, GR_EX_TOKEN);
    if (e)
        e->token = token;
    return e;
}

gr_ex_t *gr_ex_jstr(gr_arena_t *a, gr_ex_t *content, int64_t min, int64_t max)
{
    gr_ex_t *e = node(a, GR_EX_JSTR);
    if (!e)
        return NULL;
    e->kid = content;
    e->min = min < 0 ? 0 : min;
    e->max = max;
    return e;
}

gr_ex_t *gr_ex_dfa(gr_arena_t *a, const struct gr_dfa *d, bool nullable)
{
    gr_ex_t *e = node(a, GR_EX_DFA);
    if (e) {
        e->dfa = d;
        e->dfa_nullable = nullable;
    }
    return e;
}

gr_ex_t *gr_ex_dfa_string(gr_arena_t *a, const struct gr_dfa *d, int64_t min, int64_t max)
{
    gr_ex_t *e = node(a, GR_EX_DFA);
    if (e) {
        e->dfa = d;
        e->dfa_counted = true;
        e->min = min < 0 ? 0 : min;
        e->max = max;
    }
    return e;
}

void gr_exlist_push(gr_arena_t *a, gr_exlist_t *l, gr_ex_t *e)
{
    if (!e) {
        l->fail = true;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        gr_ex_t **v = gr_arena_alloc(a, cap * sizeof *v);
        if (!v) {
            l->fail = true;
            return;
        }
        if (l->n)
            memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
}

bool gr_ex_is_regular(const gr_ex_t *e)
{
    switch (e->kind) {
    case GR_EX_REF:
    case GR_EX_TOKEN:
        return false;
    case GR_EX_SEQ:
    case GR_EX_ALT:
        for (uint32_t i = 0; i < e->n; i++)
            if (!gr_ex_is_regular(e->kids[i]))
                return false;
        return true;
    case GR_EX_REP:
        return gr_ex_is_regular(e->kid);
    case GR_EX_JSTR:
        return !e->kid || gr_ex_is_regular(e->kid);
    default:
        return true;
    }
}

bool gr_ex_nullable(const gr_ex_t *e, const bool *nullable_rule)
{
    switch (e->kind) {
    case GR_EX_EMPTY:
        return true;
    case GR_EX_SEQ:
        for (uint32_t i = 0; i < e->n; i++)
            if (!gr_ex_nullable(e->kids[i], nullable_rule))
                return false;
        return true;
    case GR_EX_ALT:
        for (uint32_t i = 0; i < e->n; i++)
            if (gr_ex_nullable(e->kids[i], nullable_rule))
                return true;
        return false;
    case GR_EX_REP:
        return e->min == 0 || gr_ex_nullable(e->kid, nullable_rule);
    case GR_EX_REF:
        return nullable_rule && nullable_rule[e->ref];
    case GR_EX_DFA:
        return e->dfa_nullable;
    default:
        return false;
    }
}

int32_t gr_rules_add(gr_rules_t *r)
{
    if (r->n == r->cap) {
        int32_t cap = r->cap ? r->cap * 2 : 64;
        gr_ex_t **v = realloc(r->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n] = NULL;
    return r->n++;
}

bool gr_rules_keep_dfa(gr_rules_t *r, struct gr_dfa *d)
{
    if (r->n_dfas == r->cap_dfas) {
        int32_t cap = r->cap_dfas ? r->cap_dfas * 2 : 32;
        struct gr_dfa **v = realloc(r->dfas, (size_t)cap * sizeof *v);
        if (!v) {
            gr_dfa_free(d);
            return false;
        }
        r->dfas = v;
        r->cap_dfas = cap;
    }
    r->dfas[r->n_dfas++] = d;
    return true;
}

void gr_rules_free(gr_rules_t *r)
{
    for (int32_t i = 0; i < r->n_dfas; i++)
        gr_dfa_free(r->dfas[i]);
    free(r->dfas);
    free(r->v);
    memset(r, 0, sizeof *r);
}
