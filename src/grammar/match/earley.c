/* earley.c - the byte-fed Earley matcher (see earley.h). */
#include "grammar/match/earley.h"

#include <stdlib.h>
#include <string.h>

static bool mfail(gr_matcher_t *m, lf_code_t code)
{
    m->failed = true;
    m->fail_code = code;
    return false;
}

static bool grow_items(gr_matcher_t *m, size_t need)
{
    if (need <= m->cap_items)
        return true;
    size_t cap = m->cap_items ? m->cap_items * 2 : 256;
    while (cap < need)
        cap *= 2;
    gr_item_t *v = realloc(m->items, cap * sizeof *v);
    if (!v)
        return mfail(m, LF_ERR_NOMEM);
    m->items = v;
    m->cap_items = cap;
    return true;
}

static bool grow_sets(gr_matcher_t *m, int32_t need)
{
    if (need <= m->cap_sets)
        return true;
    int32_t cap = m->cap_sets ? m->cap_sets * 2 : 64;
    while (cap < need)
        cap *= 2;
    uint32_t *s = realloc(m->set_start, ((size_t)cap + 1) * sizeof *s);
    if (s)
        m->set_start = s;
    int64_t *p = realloc(m->set_pos, (size_t)cap * sizeof *p);
    if (p)
        m->set_pos = p;
    uint8_t *f = realloc(m->set_flags, (size_t)cap);
    if (f)
        m->set_flags = f;
    if (!s || !p || !f)
        return mfail(m, LF_ERR_NOMEM);
    m->cap_sets = cap;
    return true;
}

static bool grow_runs(gr_matcher_t *m, int32_t need)
{
    if (need <= m->cap_runs)
        return true;
    int32_t cap = m->cap_runs ? m->cap_runs * 2 : 16;
    while (cap < need)
        cap *= 2;
    gr_run_t *a = realloc(m->runs, (size_t)cap * sizeof *a);
    if (a)
        m->runs = a;
    gr_run_t *b = realloc(m->runs_tmp, (size_t)cap * sizeof *b);
    if (b)
        m->runs_tmp = b;
    if (!a || !b)
        return mfail(m, LF_ERR_NOMEM);
    m->cap_runs = cap;
    return true;
}

/* ---- set construction ------------------------------------------------- */

static bool dedup_rehash(gr_matcher_t *m, uint32_t cap, size_t from)
{
    uint64_t *d = malloc((size_t)cap * sizeof *d);
    uint32_t *g = calloc((size_t)cap, sizeof *g);
    if (!d || !g) {
        free(d);
        free(g);
        return mfail(m, LF_ERR_NOMEM);
    }
    free(m->dedup);
    free(m->dedup_gen);
    m->dedup = d;
    m->dedup_gen = g;
    m->dedup_mask = cap - 1;
    for (size_t i = from; i < m->n_items; i++) {
        uint64_t key = (uint64_t)m->items[i].dr << 32 | m->items[i].origin;
        uint32_t j = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->dedup_mask;
        while (m->dedup_gen[j] == m->gen)
            j = (j + 1) & m->dedup_mask;
        m->dedup_gen[j] = m->gen;
        m->dedup[j] = key;
    }
    return true;
}

/* Adds an item to the set being built (starting at `from`), unless present. */
static bool add_item(gr_matcher_t *m, size_t from, uint32_t dr, uint32_t origin)
{
    uint64_t key = (uint64_t)dr << 32 | origin;
    uint32_t j = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->dedup_mask;
    while (m->dedup_gen[j] == m->gen) {
        if (m->dedup[j] == key)
            return true;
        j = (j + 1) & m->dedup_mask;
    }
    if (!grow_items(m, m->n_items + 1))
        return false;
    m->items[m->n_items++] = (gr_item_t){dr, origin};
    size_t in_set = m->n_items - from;
    if (in_set * 2 > m->dedup_mask)
        return dedup_rehash(m, (m->dedup_mask + 1) * 4, from);
    m->dedup_gen[j] = m->gen;
    m->dedup[j] = key;
    return true;
}

/* Sorts a[0..n) ascending (quicksort, insertion sort for short ranges). */
static void sort_u64(uint64_t *a, size_t n)
{
    while (n > 16) {
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
        uint64_t piv = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        size_t i = 0, j = n - 1;
        for (;;) {
            while (a[i] < piv)
                i++;
            while (a[j] > piv)
                j--;
            if (i >= j)
                break;
            uint64_t t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
        /* [0, j] <= piv <= [j + 1, n): recurse on the smaller part */
        if (j + 1 < n - j - 1) {
            sort_u64(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            sort_u64(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

/* Orders the items of the closed set [from, n_items) by the symbol after
 * their dot (then by position, so the order is deterministic). */
static bool sort_set(gr_matcher_t *m, size_t from)
{
    size_t n = m->n_items - from;
    if (n < 2)
        return true;
    if (n > m->cap_sort) {
        size_t cap = m->cap_sort ? m->cap_sort : 256;
        while (cap < n)
            cap *= 2;
        uint64_t *k = realloc(m->sort_keys, cap * sizeof *k);
        if (k)
            m->sort_keys = k;
        gr_item_t *it = realloc(m->sort_items, cap * sizeof *it);
        if (it)
            m->sort_items = it;
        if (!k || !it)
            return mfail(m, LF_ERR_NOMEM);
        m->cap_sort = cap;
    }
    const int32_t *syms = m->g->syms;
    gr_item_t *items = m->items + from;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        m->sort_keys[i] = (uint64_t)((uint32_t)syms[items[i].dr] ^ 0x80000000u) << 32 | i;
        sorted = sorted && (i == 0 || m->sort_keys[i - 1] < m->sort_keys[i]);
    }
    if (sorted)
        return true;
    sort_u64(m->sort_keys, n);
    for (size_t i = 0; i < n; i++)
        m->sort_items[i] = items[(uint32_t)m->sort_keys[i]];
    memcpy(items, m->sort_items, n * sizeof *items);
    return true;
}

/* The first item of the sorted set [a, e) whose dot is before sym. */
static size_t first_waiting(const gr_matcher_t *m, size_t a, size_t e, int32_t sym)
{
    const int32_t *syms = m->g->syms;
    while (a < e) {
        size_t mid = a + (e - a) / 2;
        if (syms[m->items[mid].dr] < sym)
            a = mid + 1;
        else
            e = mid;
    }
    return a;
}

/* Starts set k at the current position: returns false on OOM. */
static bool set_begin(gr_matcher_t *m)
{
    if (!grow_sets(m, m->n_sets + 1))
        return false;
    int32_t k = m->n_sets;
    m->set_start[k] = (uint32_t)m->n_items;
    m->set_pos[k] = m->pos;
    m->set_flags[k] = 0;
    m->n_sets++;
    if (++m->gen == 0) { /* stamps wrapped: clear them */
        memset(m->dedup_gen, 0, ((size_t)m->dedup_mask + 1) * sizeof *m->dedup_gen);
        memset(m->pred_gen, 0, (size_t)m->g->n_nts * sizeof *m->pred_gen);
        memset(m->term_gen, 0, ((size_t)m->g->n_terms + 1) * sizeof *m->term_gen);
        m->gen = 1;
    }
    return true;
}

/* Prediction and completion over set k (its scanned items are in place);
 * then the set's runs: narrow terminals (literals) lexed together in one,
 * the others in another, so each run's lexer states recur across
 * positions and their token masks stay cached. Returns false on failure;
 * an empty set is removed. */
static bool set_close(gr_matcher_t *m, gr_run_t *run, int32_t *n_run)
{
    const gr_cfg_t *g = m->g;
    int32_t k = m->n_sets - 1;
    size_t from = m->set_start[k];
    int32_t n_exp = 0;
    uint8_t flags = 0;
    *n_run = 0;
    for (size_t i = from; i < m->n_items; i++) {
        gr_item_t it = m->items[i];
        int32_t s = g->syms[it.dr];
        if (s == GR_SYM_END) {
            if (it.dr == (uint32_t)g->accept_dr && it.origin == 0)
                flags |= GR_SET_ACCEPTS;
            if ((int32_t)it.origin == k)
                continue; /* nullable completions were advanced at prediction */
            int32_t lhs = g->prod_lhs[g->dr_prod[it.dr]];
            size_t e = m->set_start[it.origin + 1];
            for (size_t j = first_waiting(m, m->set_start[it.origin], e, lhs);
                 j < e && g->syms[m->items[j].dr] == lhs; j++)
                if (!add_item(m, from, m->items[j].dr + 1, m->items[j].origin))
                    return false;
        } else if (s >= 0) {
            if (m->pred_gen[s] != m->gen) {
                m->pred_gen[s] = m->gen;
                for (int32_t q = g->nt_first[s]; q < g->nt_first[s + 1]; q++)
                    if (!add_item(m, from, (uint32_t)g->prod_start[g->nt_prods[q]], (uint32_t)k))
                        return false;
            }
            if (g->nullable[s] && !add_item(m, from, it.dr + 1, it.origin))
                return false;
        } else {
            int32_t t = GR_SYM_TERM_ID(s);
            if (m->term_gen[t] != m->gen) {
                m->term_gen[t] = m->gen;
                if (g->terms[t].kind == GR_TERM_TOKEN)
                    flags |= GR_SET_TOKENS;
                else
                    m->expect[n_exp++] = t;
            }
        }
    }
    m->set_start[k + 1] = (uint32_t)m->n_items;
    if (m->n_items == from) {
        m->n_sets--;
        return true;
    }
    if (!sort_set(m, from))
        return false;
    m->set_flags[k] = flags;
    /* narrow terminals first (stable partition of expect[]) */
    int32_t nn = 0;
    for (int32_t i = 0; i < n_exp; i++)
        if (g->terms[m->expect[i]].narrow) {
            int32_t t = m->expect[i];
            m->expect[i] = m->expect[nn];
            m->expect[nn++] = t;
        }
    int32_t parts[2][2] = {{0, nn}, {nn, n_exp}};
    for (int p = 0; p < 2; p++) {
        if (parts[p][1] <= parts[p][0])
            continue;
        int32_t l = gr_lexer_start(m->lx, m->expect + parts[p][0], parts[p][1] - parts[p][0]);
        if (l == GR_LEXER_FULL)
            return mfail(m, LF_ERR_UNSUPPORTED);
        if (l >= 0)
            run[(*n_run)++] = (gr_run_t){l, k};
    }
    return true;
}

gr_matcher_t *gr_matcher_create(const gr_cfg_t *g, gr_lexer_t *lx)
{
    gr_matcher_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->g = g;
    m->lx = lx;
    m->dedup_mask = 255;
    m->dedup = malloc(256 * sizeof *m->dedup);
    m->dedup_gen = calloc(256, sizeof *m->dedup_gen);
    m->pred_gen = calloc((size_t)g->n_nts + 1, sizeof *m->pred_gen);
    m->term_gen = calloc((size_t)g->n_terms + 1, sizeof *m->term_gen);
    m->expect = malloc(((size_t)g->n_terms + 1) * sizeof *m->expect);
    if (!m->dedup || !m->dedup_gen || !m->pred_gen || !m->term_gen || !m->expect || !grow_runs(m, 16) ||
        !grow_sets(m, 64) || !grow_items(m, 256)) {
        gr_matcher_free(m);
        return NULL;
    }
    /* E_0: predict S' */
    gr_run_t run[2];
    int32_t nr = 0;
    if (!set_begin(m) || !add_item(m, 0, (uint32_t)g->prod_start[0], 0) || !set_close(m, run, &nr) || m->n_sets == 0) {
        gr_matcher_free(m);
        return NULL;
    }
    for (int32_t i = 0; i < nr; i++)
        m->runs[m->n_runs++] = run[i];
    return m;
}

void gr_matcher_free(gr_matcher_t *m)
{
    if (!m)
        return;
    free(m->items);
    free(m->set_start);
    free(m->set_pos);
    free(m->set_flags);
    free(m->runs);
    free(m->runs_tmp);
    free(m->dedup);
    free(m->dedup_gen);
    free(m->pred_gen);
    free(m->term_gen);
    free(m->expect);
    free(m->sort_keys);
    free(m->sort_items);
    free(m);
}

int32_t gr_matcher_complete(gr_matcher_t *m, const gr_completion_t *c, int32_t n, gr_run_t *run, int32_t *n_run)
{
    const gr_cfg_t *g = m->g;
    *n_run = 0;
    if (!set_begin(m))
        return -1;
    size_t from = m->set_start[m->n_sets - 1];
    for (int32_t i = 0; i < n; i++) {
        const gr_lstate_t *ls = gr_lexer_state(m->lx, c[i].lex);
        size_t a = m->set_start[c[i].origin], e = m->set_start[c[i].origin + 1];
        for (int32_t t = 0; t < ls->n_acc; t++) {
            int32_t sym = GR_SYM_TERM(ls->acc[t]);
            for (size_t j = first_waiting(m, a, e, sym); j < e && g->syms[m->items[j].dr] == sym; j++)
                if (!add_item(m, from, m->items[j].dr + 1, m->items[j].origin))
                    return -1;
        }
    }
    if (!set_close(m, run, n_run))
        return -1;
    return m->n_items > from ? m->n_sets - 1 : -1;
}

bool gr_matcher_feed_byte(gr_matcher_t *m, uint8_t b)
{
    if (m->failed)
        return false;
    gr_completion_t comp[16], *cp = comp;
    gr_completion_t *heap = NULL;
    if (m->n_runs > 16) {
        heap = malloc((size_t)m->n_runs * sizeof *heap);
        if (!heap)
            return mfail(m, LF_ERR_NOMEM);
        cp = heap;
    }
    int32_t nn = 0, nc = 0;
    for (int32_t i = 0; i < m->n_runs; i++) {
        int32_t l = gr_lexer_next(m->lx, m->runs[i].lex, b);
        if (l == GR_LEXER_FULL) {
            free(heap);
            return mfail(m, LF_ERR_UNSUPPORTED);
        }
        if (l < 0)
            continue;
        m->runs_tmp[nn++] = (gr_run_t){l, m->runs[i].origin};
        if (gr_lexer_state(m->lx, l)->n_acc > 0)
            cp[nc++] = (gr_completion_t){m->runs[i].origin, l};
    }
    m->pos++;
    bool alive = nn > 0;
    if (nc > 0) {
        gr_run_t run[2];
        int32_t nr = 0;
        int32_t k = gr_matcher_complete(m, cp, nc, run, &nr);
        if (m->failed) {
            free(heap);
            return false;
        }
        if (k >= 0) {
            if (!grow_runs(m, nn + 2)) {
                free(heap);
                return false;
            }
            for (int32_t i = 0; i < nr; i++)
                m->runs_tmp[nn++] = run[i];
            alive = alive || nr > 0 || (m->set_flags[k] & (GR_SET_ACCEPTS | GR_SET_TOKENS));
        }
    }
    free(heap);
    gr_run_t *t = m->runs;
    m->runs = m->runs_tmp;
    m->runs_tmp = t;
    m->n_runs = nn;
    return alive;
}

bool gr_matcher_feed_bytes(gr_matcher_t *m, const uint8_t *p, size_t n)
{
    gr_mcheck_t c;
    gr_matcher_save(m, &c);
    for (size_t i = 0; i < n; i++)
        if (!gr_matcher_feed_byte(m, p[i])) {
            if (!m->failed)
                gr_matcher_restore(m, &c);
            else
                gr_mcheck_drop(&c);
            return false;
        }
    gr_mcheck_drop(&c);
    return true;
}

static bool current_set(const gr_matcher_t *m, int32_t *k)
{
    *k = m->n_sets - 1;
    return *k >= 0 && m->set_pos[*k] == m->pos;
}

bool gr_matcher_accepting(const gr_matcher_t *m)
{
    int32_t k;
    return !m->failed && current_set(m, &k) && (m->set_flags[k] & GR_SET_ACCEPTS);
}

bool gr_matcher_set_accepts(const gr_matcher_t *m, int32_t k)
{
    return (m->set_flags[k] & GR_SET_ACCEPTS) != 0;
}

bool gr_matcher_can_continue(const gr_matcher_t *m)
{
    int32_t k;
    return !m->failed && (m->n_runs > 0 || (current_set(m, &k) && (m->set_flags[k] & GR_SET_TOKENS)));
}

int32_t gr_matcher_special_allowed(const gr_matcher_t *m, int32_t *out, int32_t cap)
{
    int32_t k, n = 0;
    if (m->failed || !current_set(m, &k) || !(m->set_flags[k] & GR_SET_TOKENS))
        return 0;
    const gr_cfg_t *g = m->g;
    for (uint32_t j = m->set_start[k]; j < m->set_start[k + 1]; j++) {
        int32_t s = g->syms[m->items[j].dr];
        if (!GR_SYM_IS_TERM(s) || g->terms[GR_SYM_TERM_ID(s)].kind != GR_TERM_TOKEN)
            continue;
        int32_t tok = g->terms[GR_SYM_TERM_ID(s)].token;
        bool dup = false;
        for (int32_t i = 0; i < n && i < cap; i++)
            dup = dup || out[i] == tok;
        if (!dup) {
            if (n < cap)
                out[n] = tok;
            n++;
        }
    }
    return n;
}

bool gr_matcher_feed_special(gr_matcher_t *m, int32_t token)
{
    int32_t k;
    if (m->failed || !current_set(m, &k) || !(m->set_flags[k] & GR_SET_TOKENS))
        return false;
    const gr_cfg_t *g = m->g;
    gr_mcheck_t c;
    gr_matcher_save(m, &c);
    if (!set_begin(m)) {
        gr_mcheck_drop(&c);
        return false;
    }
    size_t from = m->set_start[m->n_sets - 1];
    for (uint32_t j = m->set_start[k]; j < m->set_start[k + 1]; j++) {
        int32_t s = g->syms[m->items[j].dr];
        if (GR_SYM_IS_TERM(s) && g->terms[GR_SYM_TERM_ID(s)].kind == GR_TERM_TOKEN &&
            g->terms[GR_SYM_TERM_ID(s)].token == token && !add_item(m, from, m->items[j].dr + 1, m->items[j].origin)) {
            gr_mcheck_drop(&c);
            return false;
        }
    }
    gr_run_t run[2];
    int32_t nr = 0;
    if (m->n_items == from || !set_close(m, run, &nr) || m->n_sets - 1 < k + 1) {
        if (m->failed)
            gr_mcheck_drop(&c);
        else
            gr_matcher_restore(m, &c);
        return false;
    }
    gr_mcheck_drop(&c);
    m->n_runs = 0;
    for (int32_t i = 0; i < nr; i++)
        m->runs[m->n_runs++] = run[i];
    return true;
}

void gr_matcher_save(const gr_matcher_t *m, gr_mcheck_t *c)
{
    c->n_sets = m->n_sets;
    c->n_items = m->n_items;
    c->n_runs = m->n_runs;
    c->pos = m->pos;
    c->heap = NULL;
    if (m->n_runs <= 8) {
        memcpy(c->runs, m->runs, (size_t)m->n_runs * sizeof *c->runs);
    } else {
        c->heap = malloc((size_t)m->n_runs * sizeof *c->heap);
        if (c->heap)
            memcpy(c->heap, m->runs, (size_t)m->n_runs * sizeof *c->heap);
        else
            c->n_runs = -1;
    }
}

void gr_matcher_restore(gr_matcher_t *m, gr_mcheck_t *c)
{
    m->n_sets = c->n_sets;
    m->n_items = c->n_items;
    m->pos = c->pos;
    if (c->n_runs < 0) {
        mfail(m, LF_ERR_NOMEM);
        return;
    }
    if (!grow_runs(m, c->n_runs)) {
        gr_mcheck_drop(c);
        return;
    }
    memcpy(m->runs, c->heap ? c->heap : c->runs, (size_t)c->n_runs * sizeof *c->runs);
    m->n_runs = c->n_runs;
    gr_mcheck_drop(c);
}

void gr_mcheck_drop(gr_mcheck_t *c)
{
    free(c->heap);
    c->heap = NULL;
}

void gr_matcher_truncate(gr_matcher_t *m, int32_t n_sets, size_t n_items)
{
    m->n_sets = n_sets;
    m->n_items = n_items;
}
