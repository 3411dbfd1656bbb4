/* dfa_build.c - automata from expressions (gr_dfa_from_expr, dfa.h): a
 * process-wide cache keyed by the expression's structural hash, then the
 * cheapest construction that applies:
 *  - a prebuilt piece is used as it is;
 *  - literals and alternations of literals (enums, an object's known
 *    property names) from their trie;
 *  - sequences whose pieces join without ambiguity glued from the pieces'
 *    cached automata;
 *  - anything else: Thompson NFA (nfa.h), subset construction, Hopcroft.
 */
#include "grammar/automata/dfa_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "grammar/automata/nfa.h"

static gr_dfa_t *dfa_build(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err);

/* ---- subset construction --------------------------------------------- */

typedef struct {
    int32_t *pool;       /* concatenated sorted sets */
    size_t npool, cappool;
    size_t *off;         /* per DFA state */
    int32_t *len;
    int32_t n, cap;
    idmap_t map;
} sets_t;

static uint64_t set_hash(const int32_t *v, int32_t n)
{
    uint64_t h = dfa_mix(0x77, (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        h = dfa_mix(h, (uint64_t)v[i]);
    return h;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Returns the id of the set (inserting it), -1 on OOM. *fresh set when new. */
static int32_t sets_get(sets_t *S, const int32_t *v, int32_t n, bool *fresh)
{
    uint64_t h = set_hash(v, n);
    size_t j = h & S->map.mask;
    while (S->map.slot[j] >= 0) {
        int32_t id = S->map.slot[j];
        if (S->map.hash[j] == h && S->len[id] == n && !memcmp(S->pool + S->off[id], v, (size_t)n * sizeof *v)) {
            *fresh = false;
            return id;
        }
        j = (j + 1) & S->map.mask;
    }
    if (S->n == S->cap) {
        int32_t cap = S->cap ? S->cap * 2 : 64;
        size_t *o = realloc(S->off, (size_t)cap * sizeof *o);
        if (o)
            S->off = o;
        int32_t *l = realloc(S->len, (size_t)cap * sizeof *l);
        if (l)
            S->len = l;
        if (!o || !l)
            return -1;
        S->cap = cap;
    }
    if (S->npool + (size_t)n > S->cappool) {
        size_t cap = S->cappool ? S->cappool * 2 : 1024;
        while (cap < S->npool + (size_t)n)
            cap *= 2;
        int32_t *p = realloc(S->pool, cap * sizeof *p);
        if (!p)
            return -1;
        S->pool = p;
        S->cappool = cap;
    }
    memcpy(S->pool + S->npool, v, (size_t)n * sizeof *v);
    S->off[S->n] = S->npool;
    S->len[S->n] = n;
    S->npool += (size_t)n;
    S->map.slot[j] = S->n;
    S->map.hash[j] = h;
    *fresh = true;
    int32_t id = S->n++;
    if (++S->map.n * 2 > S->map.mask && !dfa_idmap_grow(&S->map))
        return -1;
    return id;
}

/* Epsilon closure of v[0..n) in place (grows into buf, sorted). */
static int32_t closure(const gr_nfa_t *nfa, int32_t *buf, int32_t n, uint32_t *stamp, uint32_t mark)
{
    int32_t top = n;
    for (int32_t i = 0; i < n; i++)
        stamp[buf[i]] = mark;
    for (int32_t i = 0; i < top; i++) {
        int32_t s = buf[i];
        for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
            const gr_nfa_edge_t *ed = &nfa->e[e];
            if (ed->lo > ed->hi && stamp[ed->to] != mark) {
                stamp[ed->to] = mark;
                buf[top++] = ed->to;
            }
        }
    }
    qsort(buf, (size_t)top, sizeof *buf, cmp_i32);
    return top;
}

static gr_dfa_t *determinize(const gr_nfa_t *nfa, bool keep_tags, const gr_limits_t *lim, lf_err_t *err)
{
    raw_t r = {0};
    sets_t S = {0};
    int32_t nn = nfa->n;
    int32_t *buf = gr_scratch(SL_DET, ((size_t)nn + 1) * sizeof *buf);
    uint32_t *stamp = gr_scratch_zero(SL_DET + 1, ((size_t)nn + 1) * sizeof *stamp);
    int32_t *cstart = NULL, *ccount = NULL, *cbuf = NULL;
    gr_dfa_t *out = NULL;
    uint32_t mark = 0;
    if (!buf || !stamp || !dfa_idmap_init(&S.map, 256))
        goto oom;
    /* byte classes from edge boundaries */
    uint8_t cut[257] = {0};
    cut[0] = 1;
    for (int32_t e = 0; e < nfa->ne; e++)
        if (nfa->e[e].lo <= nfa->e[e].hi) {
            cut[nfa->e[e].lo] = 1;
            cut[nfa->e[e].hi + 1] = 1;
        }
    int ncls = -1;
    for (int b = 0; b < 256; b++) {
        if (cut[b])
            ncls++;
        r.cls[b] = (uint8_t)ncls;
    }
    r.ncls = ++ncls;
    r.has_tag = keep_tags;
    cstart = gr_scratch(SL_DET + 2, (size_t)ncls * sizeof *cstart);
    ccount = gr_scratch(SL_DET + 3, (size_t)ncls * sizeof *ccount);
    if (!cstart || !ccount)
        goto oom;
    buf[0] = nfa->start;
    int32_t n0 = closure(nfa, buf, 1, stamp, ++mark);
    bool fresh;
    if (sets_get(&S, buf, n0, &fresh) < 0)
        goto oom;
    size_t cbcap = 1024;
    cbuf = gr_scratch(SL_DET + 4, cbcap * sizeof *cbuf);
    if (!cbuf)
        goto oom;
    for (int32_t id = 0; id < S.n; id++) {
        if (!dfa_within_limits(S.n, id, lim, err))
            goto fail;
        if (!dfa_raw_grow(&r, id + 1))
            goto oom;
        /* gather targets per class */
        size_t need = 0;
        const int32_t *set = S.pool + S.off[id];
        int32_t sn = S.len[id];
        bool acc = false;
        int tag = -1;
        for (int c = 0; c < ncls; c++)
            ccount[c] = 0;
        for (int32_t i = 0; i < sn; i++) {
            int32_t s = set[i];
            if (s == nfa->accept)
                acc = true;
            int t = nfa->tag[s];
            tag = tag < 0 ? t : tag == t ? tag : GR_TAG_OUT;
            for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
                const gr_nfa_edge_t *ed = &nfa->e[e];
                if (ed->lo <= ed->hi)
                    for (int c = r.cls[ed->lo]; c <= r.cls[ed->hi]; c++)
                        ccount[c]++;
            }
        }
        r.accept[id] = acc;
        r.tag[id] = (uint8_t)(tag < 0 ? GR_TAG_OUT : tag);
        for (int c = 0; c < ncls; c++) {
            cstart[c] = (int32_t)need;
            need += (size_t)ccount[c];
            ccount[c] = 0;
        }
        if (need > cbcap) {
            while (cbcap < need)
                cbcap *= 2;
            if (!(cbuf = gr_scratch(SL_DET + 4, cbcap * sizeof *cbuf)))
                goto oom; /* (its content is rebuilt below) */
        }
        for (int32_t i = 0; i < sn; i++) {
            int32_t s = set[i];
            for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
                const gr_nfa_edge_t *ed = &nfa->e[e];
                if (ed->lo <= ed->hi)
                    for (int c = r.cls[ed->lo]; c <= r.cls[ed->hi]; c++)
                        cbuf[cstart[c] + ccount[c]++] = ed->to;
            }
        }
        for (int c = 0; c < ncls; c++) {
            int32_t k = 0;
            ++mark;
            for (int32_t i = 0; i < ccount[c]; i++) {
                int32_t t = cbuf[cstart[c] + i];
                if (stamp[t] != mark) {
                    stamp[t] = mark;
                    buf[k++] = t;
                }
            }
            int32_t tid = -1;
            if (k > 0) {
                k = closure(nfa, buf, k, stamp, ++mark);
                tid = sets_get(&S, buf, k, &fresh);
                if (tid < 0)
                    goto oom;
            }
            /* set pointer may have moved: re-read through S.off */
            set = S.pool + S.off[id];
            r.next[(size_t)id * ncls + c] = tid;
        }
    }
    r.n = S.n;
    r.start = 0;
    out = dfa_finalize(&r, keep_tags, true, lim, err);
    goto done;
oom:
    lf_err_set(err, LF_ERR_NOMEM, "out of memory building an automaton");
fail:
    out = NULL;
done:
    dfa_raw_free(&r);
    free(S.pool);
    free(S.off);
    free(S.len);
    dfa_idmap_free(&S.map);
    return out;
}

/* ---- process-wide cache of expression DFAs ------------------------------------ */

/* Structural hash of a regular expression (two independent 64-bit hashes). */
static void ex_hash(gr_ex_t *e, uint64_t *a, uint64_t *b)
{
    if (e->hashed) {
        *a = e->h1;
        *b = e->h2;
        return;
    }
    uint64_t h1 = dfa_mix(0x1000 + (uint64_t)e->kind, 0x77), h2 = dfa_mix(0x2000 + (uint64_t)e->kind, 0x99);
    uint64_t x, y;
    switch (e->kind) {
    case GR_EX_BYTES:
        for (uint32_t i = 0; i < e->n; i++) {
            h1 = dfa_mix(h1, e->bytes[i]);
            h2 = dfa_mix(h2, (uint64_t)e->bytes[i] * 131u + 7u);
        }
        break;
    case GR_EX_CHARS:
        for (size_t i = 0; i < e->cs.n; i++) {
            h1 = dfa_mix(dfa_mix(h1, e->cs.r[i].lo), e->cs.r[i].hi);
            h2 = dfa_mix(dfa_mix(h2, e->cs.r[i].hi + 5u), e->cs.r[i].lo + 3u);
        }
        break;
    case GR_EX_SEQ:
    case GR_EX_ALT:
        h1 = dfa_mix(h1, e->n);
        for (uint32_t i = 0; i < e->n; i++) {
            ex_hash(e->kids[i], &x, &y);
            h1 = dfa_mix(h1, x);
            h2 = dfa_mix(h2, y);
        }
        break;
    case GR_EX_REP:
    case GR_EX_JSTR:
        h1 = dfa_mix(dfa_mix(dfa_mix(h1, (uint64_t)e->min), (uint64_t)e->max), e->esc_lt);
        h2 = dfa_mix(dfa_mix(h2, (uint64_t)e->max + 11u), (uint64_t)e->min + 13u);
        if (e->kid) {
            ex_hash(e->kid, &x, &y);
            h1 = dfa_mix(h1, x);
            h2 = dfa_mix(h2, y);
        }
        break;
    case GR_EX_DFA:
        h1 = dfa_mix(dfa_mix(dfa_mix(dfa_mix(h1, e->dfa->h1), e->dfa_counted), (uint64_t)e->min), (uint64_t)e->max);
        h2 = dfa_mix(dfa_mix(dfa_mix(dfa_mix(h2, e->dfa->h2), e->dfa_nullable), (uint64_t)e->max + 11u), (uint64_t)e->min + 13u);
        break;
    default:
        h1 = dfa_mix(h1, (uint64_t)e->ref * 17u + (uint64_t)e->token);
        break;
    }
    e->h1 = h1;
    e->h2 = h2;
    e->hashed = true;
    *a = h1;
    *b = h2;
}

typedef struct dcache_ent {
    uint64_t h1, h2;
    bool counted;
    gr_dfa_t *dfa;
    uint64_t used;
} dcache_ent_t;

#define DCACHE_SLOTS 4096
#define DCACHE_MAX_STATES 4000000
static dcache_ent_t dcache[DCACHE_SLOTS];
static int64_t dcache_states;
static uint64_t dcache_tick;
static pthread_mutex_t dcache_mu = PTHREAD_MUTEX_INITIALIZER;

static gr_dfa_t *dcache_get(uint64_t h1, uint64_t h2, bool counted)
{
    gr_dfa_t *d = NULL;
    pthread_mutex_lock(&dcache_mu);
    size_t j = (size_t)(h1 % DCACHE_SLOTS);
    for (int probe = 0; probe < 8; probe++, j = (j + 1) % DCACHE_SLOTS)
        if (dcache[j].dfa && dcache[j].h1 == h1 && dcache[j].h2 == h2 && dcache[j].counted == counted) {
            dcache[j].used = ++dcache_tick;
            d = gr_dfa_copy(dcache[j].dfa);
            break;
        }
    pthread_mutex_unlock(&dcache_mu);
    return d;
}

static void dcache_put(uint64_t h1, uint64_t h2, bool counted, const gr_dfa_t *d)
{
    if (d->n_states > 100000)
        return;
    gr_dfa_t *copy = gr_dfa_copy(d);
    if (!copy)
        return;
    pthread_mutex_lock(&dcache_mu);
    size_t j = (size_t)(h1 % DCACHE_SLOTS), victim = j;
    for (int probe = 0; probe < 8; probe++, j = (j + 1) % DCACHE_SLOTS) {
        if (!dcache[j].dfa) {
            victim = j;
            break;
        }
        if (dcache[j].used < dcache[victim].used)
            victim = j;
    }
    if (dcache[victim].dfa) {
        dcache_states -= dcache[victim].dfa->n_states;
        gr_dfa_free(dcache[victim].dfa);
    }
    dcache[victim] = (dcache_ent_t){h1, h2, counted, copy, ++dcache_tick};
    dcache_states += copy->n_states;
    /* over the budget: drop the least recently used until under it */
    while (dcache_states > DCACHE_MAX_STATES) {
        size_t lru = SIZE_MAX;
        for (size_t k = 0; k < DCACHE_SLOTS; k++)
            if (dcache[k].dfa && (lru == SIZE_MAX || dcache[k].used < dcache[lru].used))
                lru = k;
        if (lru == SIZE_MAX)
            break;
        dcache_states -= dcache[lru].dfa->n_states;
        gr_dfa_free(dcache[lru].dfa);
        dcache[lru].dfa = NULL;
    }
    pthread_mutex_unlock(&dcache_mu);
}

/* The concatenation p[0] p[1] ... p[n-1] glued without subset
 * construction: each piece keeps its states, and where a piece may end,
 * its accepting states also take the start transitions of the next piece
 * (and of the ones after it, while the pieces in between may be empty).
 * That is deterministic as long as no reachable state has two ways on one
 * byte (then where a piece ends is never in doubt); returns false when that
 * does not hold. On success (or OOM / a limit: *out NULL, err set) returns
 * true. One breadth-first pass numbers the reachable states canonically
 * (classes in order of their first byte) and fills the table; the result is
 * trimmed (every piece is) but neither minimized nor class-merged. */
static bool glue(gr_dfa_t *const *p, int np, const gr_limits_t *lim, lf_err_t *err, gr_dfa_t **out)
{
    *out = NULL;
    int32_t total = 0, off[17];
    bool empty = false;
    for (int i = 0; i < np; i++) {
        if (p[i]->tag)
            return false;
        empty = empty || p[i]->n_states == 0;
        off[i] = total;
        total += p[i]->n_states;
    }
    off[np] = total;
    if (empty) {
        if ((*out = calloc(1, sizeof **out)))
            (*out)->n_classes = 1;
        else
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return true;
    }
    /* combined byte classes (bytes alike in every piece), refined piece by
     * piece, then numbered in order of their first byte */
    uint8_t cls[256], rep[256];
    int ncls = p[0]->n_classes;
    memcpy(cls, p[0]->cls, 256);
    for (int i = 1; i < np; i++) {
        int16_t pair[256 * 16];
        int pc = p[i]->n_classes;
        if ((int64_t)ncls * pc > (int64_t)(sizeof pair / sizeof *pair))
            return false;
        memset(pair, 0xff, (size_t)ncls * (size_t)pc * sizeof *pair);
        int n2 = 0;
        for (int by = 0; by < 256; by++) {
            int16_t *q = &pair[cls[by] * pc + p[i]->cls[by]];
            if (*q < 0)
                *q = (int16_t)n2++;
            cls[by] = (uint8_t)*q;
        }
        ncls = n2;
    }
    {
        int16_t order[256];
        memset(order, 0xff, sizeof order);
        int n2 = 0;
        for (int by = 0; by < 256; by++) {
            if (order[cls[by]] < 0) {
                order[cls[by]] = (int16_t)n2;
                rep[n2++] = (uint8_t)by;
            }
            cls[by] = (uint8_t)order[cls[by]];
        }
    }
    /* the pieces an end of piece i may continue into: i + 1 .. last[i] */
    int last[16];
    bool ends[16]; /* piece i may end the whole (the pieces after it are nullable) */
    for (int i = 0; i < np; i++) {
        int l = i + 1;
        while (l < np && gr_dfa_nullable(p[l]))
            l++;
        last[i] = l < np ? l : np - 1;
        ends[i] = l >= np;
    }
    int32_t *newid = gr_scratch(SL_GLUE, ((size_t)total + 1) * sizeof *newid);
    int32_t *queue = gr_scratch(SL_GLUE + 1, ((size_t)total + 1) * sizeof *queue);
    int32_t *next = malloc(((size_t)total * (size_t)ncls + 1) * sizeof *next);
    uint8_t *accept = malloc((size_t)total + 1);
    gr_dfa_t *d = calloc(1, sizeof *d);
    bool ok = false;
    if (!newid || !queue || !next || !accept || !d) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        ok = true;
        goto out;
    }
    for (int32_t g = 0; g < total; g++)
        newid[g] = -1;
    /* per piece: its class of each combined class, and where an end of it
     * goes on each class (the start transitions of the pieces it may
     * continue into; two of them on one class: not gluable) */
    uint8_t *pcls = gr_scratch(SL_GLUE + 2, (size_t)np * (size_t)ncls);
    int32_t *cont = gr_scratch(SL_GLUE + 3, (size_t)np * (size_t)ncls * sizeof *cont);
    if (!pcls || !cont) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        ok = true;
        goto out;
    }
    for (int i = 0; i < np; i++)
        for (int c = 0; c < ncls; c++) {
            pcls[(size_t)i * ncls + c] = p[i]->cls[rep[c]];
            int32_t to = -1;
            for (int j = i + 1; j <= last[i]; j++) {
                int32_t u = gr_dfa_step(p[j], 0, rep[c]);
                if (u < 0)
                    continue;
                if (to >= 0)
                    goto out;
                to = off[j] + u;
            }
            cont[(size_t)i * ncls + c] = to;
        }
    int32_t qh = 0, qt = 0;
    newid[0] = qt;
    queue[qt++] = 0;
    while (qh < qt) {
        int32_t g = queue[qh], at = qh++;
        int i = 0;
        while (g >= off[i + 1])
            i++;
        const gr_dfa_t *x = p[i];
        int32_t s = g - off[i];
        bool acc = x->accept[s];
        int32_t *row = next + (size_t)at * ncls;
        const int32_t *xrow = x->next + (size_t)s * x->n_classes, *crow = cont + (size_t)i * ncls;
        const uint8_t *pc = pcls + (size_t)i * ncls;
        for (int c = 0; c < ncls; c++) {
            int32_t t = xrow[pc[c]];
            int32_t to = t >= 0 ? off[i] + t : -1;
            if (acc && crow[c] >= 0) {
                if (to >= 0) /* two ways on this byte */
                    goto out;
                to = crow[c];
            }
            if (to >= 0) {
                if (newid[to] < 0) {
                    newid[to] = qt;
                    queue[qt++] = to;
                }
                to = newid[to];
            }
            row[c] = to;
        }
        accept[at] = acc && ends[i];
    }
    ok = true;
    if (qt > dfa_max_states(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max_states(lim));
        goto out;
    }
    d->n_states = qt;
    d->n_classes = ncls;
    memcpy(d->cls, cls, 256);
    d->next = next;
    d->accept = accept;
    next = NULL;
    accept = NULL;
    dfa_content_hash(d);
    *out = d;
    d = NULL;
out:
    free(next);
    free(accept);
    gr_dfa_free(d);
    return ok;
}

/* Appends the only spelling of a code point inside a JSON string (what
 * the NFA's json_chars accepts) when it has one: printable, not '"', '\\'
 * or '/' (which may also be written escaped), not a surrogate. */
static bool single_spelling(uint32_t cp, uint8_t *out, int *len)
{
    if (cp < 0x20 || cp == '"' || cp == '\\' || cp == '/' || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return false;
    *len += (int)utf8_encode(cp, out + *len);
    return true;
}

enum { LIT_MAX = 4096 };

/* The byte string x stands for when its language is one string: literal
 * bytes, the empty string, or a JSON string of literal code points that
 * have a single spelling each. Writes it to out[LIT_MAX]; -1 otherwise. */
static int literal_of(const gr_ex_t *x, uint8_t *out)
{
    if (x->kind == GR_EX_EMPTY)
        return 0;
    if (x->kind == GR_EX_BYTES) {
        if (x->n > LIT_MAX)
            return -1;
        memcpy(out, x->bytes, x->n);
        return (int)x->n;
    }
    if (x->kind != GR_EX_JSTR || !x->kid || x->min > 0 || x->max >= 0)
        return -1;
    const bool esc_lt = x->esc_lt;
    const gr_ex_t *const *cps = (const gr_ex_t *const *)&x->kid;
    uint32_t n = 1;
    if (x->kid->kind == GR_EX_SEQ) {
        cps = (const gr_ex_t *const *)x->kid->kids;
        n = x->kid->n;
    } else if (x->kid->kind == GR_EX_EMPTY) {
        n = 0;
    }
    if ((int64_t)n * 4 + 2 > LIT_MAX)
        return -1;
    int len = 0;
    out[len++] = '"';
    for (uint32_t i = 0; i < n; i++)
        if (cps[i]->kind != GR_EX_CHARS || cps[i]->cs.n != 1 || cps[i]->cs.r[0].lo != cps[i]->cs.r[0].hi ||
            (esc_lt && cps[i]->cs.r[0].lo == '<') || !single_spelling(cps[i]->cs.r[0].lo, out, &len))
            return -1;
    out[len++] = '"';
    return len;
}

/* A literal or an alternation of literals (an enum, the known property
 * names of an object): their trie is already deterministic, so only
 * Hopcroft (suffixes the trie repeats) and the canonical numbering remain.
 * NULL with *fallback when e is not of that form or too large for this
 * path. */
static gr_dfa_t *literals_dfa(const gr_ex_t *e, const gr_limits_t *lim, lf_err_t *err, bool *fallback)
{
    *fallback = true;
    const gr_ex_t *const *lits = (const gr_ex_t *const *)&e;
    uint32_t n = 1;
    if (e->kind == GR_EX_ALT) {
        lits = (const gr_ex_t *const *)e->kids;
        n = e->n;
    }
    if (n > 4096)
        return NULL;
    uint8_t buf[LIT_MAX];
    int64_t total = 1;
    bool seen[256] = {false};
    for (uint32_t k = 0; k < n; k++) {
        int len = literal_of(lits[k], buf);
        if (len < 0)
            return NULL;
        total += len;
        for (int i = 0; i < len; i++)
            seen[buf[i]] = true;
    }
    if (total > 100000)
        return NULL;
    *fallback = false;
    /* one class per byte that occurs, one more for the others if any */
    raw_t r = {0};
    int ncls = 0;
    bool others = false;
    for (int by = 0; by < 256; by++)
        others = others || !seen[by];
    if (others)
        ncls = 1;
    for (int by = 0; by < 256; by++)
        r.cls[by] = seen[by] ? (uint8_t)ncls++ : 0;
    r.ncls = ncls;
    if (!dfa_raw_grow(&r, (int32_t)total)) {
        dfa_raw_free(&r);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    r.n = 1;
    for (int c = 0; c < ncls; c++)
        r.next[c] = -1;
    r.accept[0] = 0;
    r.tag[0] = GR_TAG_OUT;
    for (uint32_t k = 0; k < n; k++) {
        int len = literal_of(lits[k], buf);
        int32_t st = 0;
        for (int i = 0; i < len; i++) {
            int32_t *to = &r.next[(size_t)st * ncls + r.cls[buf[i]]];
            if (*to < 0) {
                int32_t ns = r.n++;
                for (int c = 0; c < ncls; c++)
                    r.next[(size_t)ns * ncls + c] = -1;
                r.accept[ns] = 0;
                r.tag[ns] = GR_TAG_OUT;
                *to = ns;
            }
            st = *to;
        }
        r.accept[st] = 1;
    }
    r.start = 0;
    gr_dfa_t *d = dfa_finalize(&r, false, n > 1, lim, err);
    dfa_raw_free(&r);
    return d;
}

/* A sequence whose pieces glue (above): each piece's automaton comes from
 * the cache or is built on its own. NULL with *fallback when they do not
 * glue. */
static gr_dfa_t *seq_glued(const gr_ex_t *e, const gr_limits_t *lim, lf_err_t *err, bool *fallback)
{
    enum { MAX_PIECES = 16 };
    *fallback = e->n > MAX_PIECES;
    if (*fallback)
        return NULL;
    gr_dfa_t *p[MAX_PIECES];
    uint32_t n = 0;
    for (; n < e->n; n++)
        if (!(p[n] = gr_dfa_from_expr(e->kids[n], false, lim, err)))
            break;
    gr_dfa_t *d = NULL;
    if (n == e->n && !glue(p, (int)n, lim, err, &d))
        *fallback = true;
    for (uint32_t i = 0; i < n; i++)
        gr_dfa_free(p[i]);
    return d;
}

gr_dfa_t *gr_dfa_from_expr(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err)
{
    if (e->kind == GR_EX_DFA && !e->dfa_counted && !e->dfa->tag) /* already built */
        return gr_dfa_copy(e->dfa);
    uint64_t h1, h2;
    ex_hash((gr_ex_t *)e, &h1, &h2);
    gr_dfa_t *hit = dcache_get(h1, h2, counted);
    if (hit)
        return hit;
    bool fallback = true;
    gr_dfa_t *d = NULL;
    if (e->kind == GR_EX_SEQ && e->n >= 2)
        d = seq_glued(e, lim, err, &fallback);
    else if (e->kind == GR_EX_BYTES || e->kind == GR_EX_ALT || (e->kind == GR_EX_JSTR && !counted))
        d = literals_dfa(e, lim, err, &fallback);
    if (fallback)
        d = dfa_build(e, counted, lim, err);
    gr_scratch_trim();
    if (d)
        dcache_put(h1, h2, counted, d);
    return d;
}

static gr_dfa_t *dfa_build(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err)
{
    gr_nfa_t nfa;
    if (gr_nfa_build(&nfa, e, counted, lim, err) != LF_OK) {
        gr_nfa_free(&nfa);
        return NULL;
    }
    gr_dfa_t *d = determinize(&nfa, counted && e->kind == GR_EX_JSTR, lim, err);
    gr_nfa_free(&nfa);
    return d;
}
