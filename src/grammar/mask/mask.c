/* mask.c - token masks (see mask.h). */
#include "grammar/mask/mask.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/dlist.h"

/* ---- cache ---------------------------------------------------------------- */

typedef struct entry {
    uint64_t h1, h2;
    uint32_t *acc;
    uint32_t *exits;        /* trie node indexes, bit 31 set: the full trie
                               (else the rest trie) */
    int32_t *exit_lex;      /* lexer state at each exit, for the owner lexer */
    uint64_t owner;         /* gr_lexer_serial of the lexer that computed it */
    int32_t n_exits;
    int32_t refs;
    size_t bytes;
    dlist_node_t lru;       /* LRU order */
    struct entry *hnext;    /* hash chain */
} entry_t;

struct gr_mask_cache {
    pthread_mutex_t mu;
    entry_t **buckets;
    size_t n_buckets;
    dlist_t lru;            /* most recent first */
    size_t bytes, budget, entries;
    uint64_t hits, misses, evictions;
};

gr_mask_cache_t *gr_mask_cache_create(size_t budget_bytes)
{
    gr_mask_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n_buckets = 4096;
    c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->budget = budget_bytes ? budget_bytes : (size_t)256 << 20;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void entry_free(entry_t *e)
{
    free(e->acc);
    free(e->exits);
    free(e->exit_lex);
    free(e);
}

void gr_mask_cache_free(gr_mask_cache_t *c)
{
    if (!c)
        return;
    for (dlist_node_t *n = c->lru.head; n;) {
        entry_t *e = DLIST_ENTRY(n, entry_t, lru);
        n = n->next;
        entry_free(e);
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void gr_mask_cache_stats(gr_mask_cache_t *c, gr_mask_cache_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    out->hits = c->hits;
    out->misses = c->misses;
    out->evictions = c->evictions;
    out->bytes = c->bytes;
    out->entries = c->entries;
    pthread_mutex_unlock(&c->mu);
}

static void lru_unlink(gr_mask_cache_t *c, entry_t *e)
{
    dlist_unlink(&c->lru, &e->lru);
}

static void lru_front(gr_mask_cache_t *c, entry_t *e)
{
    dlist_push_front(&c->lru, &e->lru);
}

/* Under the lock. */
static entry_t *lookup(gr_mask_cache_t *c, uint64_t h1, uint64_t h2)
{
    for (entry_t *e = c->buckets[h1 % c->n_buckets]; e; e = e->hnext)
        if (e->h1 == h1 && e->h2 == h2)
            return e;
    return NULL;
}

static void evict(gr_mask_cache_t *c)
{
    entry_t *e = c->lru.tail ? DLIST_ENTRY(c->lru.tail, entry_t, lru) : NULL;
    while (e && c->bytes > c->budget) {
        entry_t *p = e->lru.prev ? DLIST_ENTRY(e->lru.prev, entry_t, lru) : NULL;
        if (e->refs == 0) {
            entry_t **pp = &c->buckets[e->h1 % c->n_buckets];
            while (*pp != e)
                pp = &(*pp)->hnext;
            *pp = e->hnext;
            lru_unlink(c, e);
            c->bytes -= e->bytes;
            c->entries--;
            c->evictions++;
            entry_free(e);
        }
        e = p;
    }
}

static void unpin(gr_mask_cache_t *c, entry_t *e)
{
    pthread_mutex_lock(&c->mu);
    e->refs--;
    if (c->bytes > c->budget)
        evict(c);
    pthread_mutex_unlock(&c->mu);
}

/* ---- scratch ------------------------------------------------------------------ */

typedef struct {
    uint64_t key;           /* hash of the completion list */
    int32_t off, n;         /* pairs in memo_pairs */
    int32_t set;            /* resulting set (-1: none) */
    gr_run_t run[2];        /* its runs */
    int32_t n_run;
    uint8_t flags;          /* its GR_SET_* flags */
    uint32_t gen;
} memo_t;

struct gr_mask_scratch {
    int32_t *lex_stack;     /* [max_len + 2] single-run walk */
    gr_run_t *runs;         /* walk levels: runs */
    int32_t *lvl_off;       /* [max_len + 2] offset of each level in runs */
    int32_t *lvl_n;
    int32_t *lvl_ok;        /* token at this level valid through a completion */
    int32_t cap_runs;
    gr_completion_t *comp;
    int32_t cap_comp;
    memo_t *memo;
    uint32_t memo_mask, gen;
    gr_completion_t *memo_pairs;
    int32_t n_memo_pairs, cap_memo_pairs;
    uint32_t *exits;
    int32_t *exit_lex;
    int32_t n_exits, cap_exits;
    bool oom, full;
};

gr_mask_scratch_t *gr_mask_scratch_create(const gr_vindex_t *vi)
{
    gr_mask_scratch_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    size_t levels = (size_t)vi->max_len + 2;
    s->lex_stack = malloc(levels * sizeof *s->lex_stack);
    s->lvl_off = malloc(levels * sizeof *s->lvl_off);
    s->lvl_n = malloc(levels * sizeof *s->lvl_n);
    s->lvl_ok = malloc(levels * sizeof *s->lvl_ok);
    s->cap_runs = 1024;
    s->runs = malloc((size_t)s->cap_runs * sizeof *s->runs);
    s->cap_comp = 64;
    s->comp = malloc((size_t)s->cap_comp * sizeof *s->comp);
    s->memo_mask = 255;
    s->memo = calloc(256, sizeof *s->memo);
    s->cap_memo_pairs = 256;
    s->memo_pairs = malloc((size_t)s->cap_memo_pairs * sizeof *s->memo_pairs);
    s->cap_exits = 1024;
    s->exits = malloc((size_t)s->cap_exits * sizeof *s->exits);
    s->exit_lex = malloc((size_t)s->cap_exits * sizeof *s->exit_lex);
    if (!s->lex_stack || !s->lvl_off || !s->lvl_n || !s->lvl_ok || !s->runs || !s->comp || !s->memo ||
        !s->memo_pairs || !s->exits || !s->exit_lex) {
        gr_mask_scratch_free(s);
        return NULL;
    }
    return s;
}

void gr_mask_scratch_free(gr_mask_scratch_t *s)
{
    if (!s)
        return;
    free(s->lex_stack);
    free(s->runs);
    free(s->lvl_off);
    free(s->lvl_n);
    free(s->lvl_ok);
    free(s->comp);
    free(s->memo);
    free(s->memo_pairs);
    free(s->exits);
    free(s->exit_lex);
    free(s);
}

static bool push_exit(gr_mask_scratch_t *s, uint32_t node, int32_t lex)
{
    if (s->n_exits == s->cap_exits) {
        int32_t cap = s->cap_exits * 2;
        uint32_t *e = realloc(s->exits, (size_t)cap * sizeof *e);
        if (e)
            s->exits = e;
        int32_t *l = realloc(s->exit_lex, (size_t)cap * sizeof *l);
        if (l)
            s->exit_lex = l;
        if (!e || !l) {
            s->oom = true;
            return false;
        }
        s->cap_exits = cap;
    }
    s->exits[s->n_exits] = node;
    s->exit_lex[s->n_exits++] = lex;
    return true;
}

static inline void set_token(const gr_vindex_t *vi, uint32_t *bits, int32_t t)
{
    for (; t >= 0; t = vi->dup_next[t])
        gr_bits_set(bits, t);
}

/* ---- context-free entry for one lexer state ------------------------------------ */

/* Walks trie t from the root with lexer state L, recording surviving tokens
 * into acc and accepting inner nodes with children into s->exits. */
/* Walks trie t (the full trie when full) from the root with lexer state L,
 * recording surviving tokens into acc and accepting inner nodes with
 * children into s->exits. first: NULL, or 256 flags: which first bytes to
 * walk (the other subtrees of the root are skipped). */
static void walk_single(const gr_trie_t *t, bool full, gr_lexer_t *lx, int32_t L, gr_mask_scratch_t *s, uint32_t *acc,
                        const gr_vindex_t *vi, const bool *first)
{
    int32_t *st = s->lex_stack;
    st[0] = L;
    const gr_tnode_t *nd = t->nodes;
    uint32_t n = t->n_nodes, i = 1;
    while (i < n) {
        const gr_tnode_t *x = &nd[i];
        if (first && x->depth == 1 && !first[x->byte]) {
            i += x->sub;
            continue;
        }
        int32_t l2 = gr_lexer_next(lx, st[x->depth - 1], x->byte);
        if (l2 < 0) {
            if (l2 == GR_LEXER_FULL)
                s->full = true;
            i += x->sub;
            continue;
        }
        st[x->depth] = l2;
        if (x->tok >= 0)
            set_token(vi, acc, x->tok);
        if (x->sub > 1 && gr_lexer_state(lx, l2)->n_acc > 0)
            push_exit(s, i | (full ? 1u << 31 : 0), l2);
        i++;
    }
}

/* UTF-8 automaton of string-safe code points: state 0 is a boundary;
 * returns the next state for byte b, -1 if b cannot continue. */
static int utf8_next(int u, uint8_t b)
{
    switch (u) {
    case 0:
        if (b >= 0x20 && b < 0x80)
            return b == '"' || b == '\\' ? -1 : 0;
        if (b >= 0xC2 && b <= 0xDF)
            return 1;
        if (b == 0xE0)
            return 4;
        if (b == 0xED)
            return 5;
        if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
            return 2;
        if (b == 0xF0)
            return 6;
        if (b >= 0xF1 && b <= 0xF3)
            return 3;
        if (b == 0xF4)
            return 7;
        return -1;
    case 1: return b >= 0x80 && b <= 0xBF ? 0 : -1;
    case 2: return b >= 0x80 && b <= 0xBF ? 1 : -1;
    case 3: return b >= 0x80 && b <= 0xBF ? 2 : -1;
    case 4: return b >= 0xA0 && b <= 0xBF ? 1 : -1;
    case 5: return b >= 0x80 && b <= 0x9F ? 1 : -1;
    case 6: return b >= 0x90 && b <= 0xBF ? 2 : -1;
    case 7: return b >= 0x80 && b <= 0x8F ? 2 : -1;
    }
    return -1;
}

/* Where every string-safe code point (only the non-ASCII ones when
 * skip_ascii) takes DFA state st: that state when it is the same for all
 * and no byte inside a code point reaches an accepting state; -1 when they
 * all die; -2 otherwise. A search over (UTF-8 state, DFA state) pairs: table
 * reads only, nothing is interned. */
static int32_t dfa_uniform(const gr_dfa_t *d, int32_t st, bool skip_ascii)
{
    enum { MAXP = 512 };
    int pu[MAXP];
    int32_t ps[MAXP];
    int np = 0, top = 0;
    int32_t result = -3; /* -3 unset */
    pu[np] = 0;
    ps[np++] = st;
    while (top < np) {
        int u = pu[top];
        int32_t q = ps[top++];
        for (int b = 0; b < 256; b++) {
            int u2 = utf8_next(u, (uint8_t)b);
            if (u2 < 0 || (skip_ascii && u == 0 && b < 0x80))
                continue;
            int32_t q2 = gr_dfa_step(d, q, (uint8_t)b);
            if (q2 < 0 || u2 == 0) { /* a code point ends (or dies) here */
                int32_t r = q2 < 0 ? -1 : q2;
                if (result == -3)
                    result = r;
                else if (result != r)
                    return -2;
                continue;
            }
            if (d->accept[q2])
                return -2;
            bool seen = false;
            for (int k = 0; k < np && !seen; k++)
                seen = pu[k] == u2 && ps[k] == q2;
            if (!seen) {
                if (np == MAXP)
                    return -2;
                pu[np] = u2;
                ps[np++] = q2;
            }
        }
    }
    return result == -3 ? -1 : result;
}

/* dfa_uniform through a per-thread memo keyed by the automaton's content
 * hash (a counted string asks the same state at every count). */
static int32_t dfa_uniform_memo(const gr_dfa_t *d, int32_t st, bool skip_ascii)
{
    enum { SLOTS = 256 };
    static __thread struct {
        uint64_t h1, h2;
        int32_t st, result;
        bool skip, used;
    } memo[SLOTS];
    uint64_t h = d->h1 ^ ((uint64_t)(uint32_t)st * 0x9E3779B97F4A7C15ull) ^ (skip_ascii ? 0x5555 : 0);
    size_t j = (size_t)(h ^ (h >> 29)) % SLOTS;
    if (memo[j].used && memo[j].h1 == d->h1 && memo[j].h2 == d->h2 && memo[j].st == st && memo[j].skip == skip_ascii)
        return memo[j].result;
    int32_t r = dfa_uniform(d, st, skip_ascii);
    memo[j].h1 = d->h1;
    memo[j].h2 = d->h2;
    memo[j].st = st;
    memo[j].skip = skip_ascii;
    memo[j].result = r;
    memo[j].used = true;
    return r;
}

/* The same for terminal state q of t (gr_term_step's states: a counted
 * string adds one code point to its count), with -2 also when the state
 * reached accepts (the terminal may end there: not "the same place"). */
static int32_t term_uniform(const gr_term_t *t, int32_t q, bool skip_ascii)
{
    const gr_dfa_t *d = t->dfa;
    if (t->kind == GR_TERM_DFA) {
        int32_t r = dfa_uniform_memo(d, q, skip_ascii);
        return r >= 0 && d->accept[r] ? -2 : r;
    }
    if (t->kind != GR_TERM_COUNTED)
        return -1;
    int32_t ns = d->n_states, s = q % ns;
    int32_t r = dfa_uniform_memo(d, s, skip_ascii);
    if (r < 0)
        return r;
    int32_t q2 = gr_term_counted_move(t, s, q / ns, r);
    return q2 >= 0 && gr_term_accepting(t, q2) ? -2 : q2;
}

enum { UNI_DIVERGE = 0, UNI_NEXT, UNI_DEAD };

/* The uniform step of the pairs in[0..n) into out[] (*n_out of them, in
 * the same order): UNI_NEXT, UNI_DEAD or UNI_DIVERGE as uniform_step's.
 * Decided pair by pair: a lexer state is one state per terminal, so the
 * whole is uniform exactly when every pair is. */
static int pairs_uniform(const gr_cfg_t *g, const gr_lpair_t *in, int32_t n, gr_lpair_t *out, int32_t *n_out,
                         bool skip_ascii)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t q2 = term_uniform(&g->terms[in[i].term], in[i].state, skip_ascii);
        if (q2 == -2)
            return UNI_DIVERGE;
        if (q2 >= 0)
            out[k++] = (gr_lpair_t){in[i].term, q2};
    }
    *n_out = k;
    return k ? UNI_NEXT : UNI_DEAD;
}

/* Whether every string-safe code point (the non-ASCII ones when skip_ascii)
 * takes L to the same place without any intermediate accepting state:
 * UNI_NEXT (*out = that state), UNI_DEAD (all of them die), UNI_DIVERGE
 * otherwise; only the result is interned. */
static int uniform_step(gr_lexer_t *lx, int32_t L, int32_t *out, bool *full, bool skip_ascii)
{
    const gr_lstate_t *ls = gr_lexer_state(lx, L);
    gr_lpair_t buf[64], *p = ls->n_pairs <= 64 ? buf : malloc((size_t)ls->n_pairs * sizeof *p);
    if (!p)
        return UNI_DIVERGE;
    int32_t k = 0;
    int r = pairs_uniform(gr_lexer_cfg(lx), ls->pairs, ls->n_pairs, p, &k, skip_ascii);
    if (r == UNI_NEXT) {
        int32_t n = gr_lexer_intern(lx, p, k);
        if (n == GR_LEXER_FULL) {
            *full = true;
            r = UNI_DIVERGE;
        } else {
            *out = n;
        }
    }
    if (p != buf)
        free(p);
    return r;
}

/* How many string-safe code points L absorbs uniformly: returns k (capped
 * at the slice's longest token) and *tail: 1 when longer slice tokens are
 * all rejected or all accepted as decided (*accept_longer), 0 when they
 * need a walk. */
static int32_t slice_chain(const gr_vindex_t *vi, gr_lexer_t *lx, int32_t L, bool *decided, bool *accept_longer)
{
    /* the chain runs on pair lists (nothing interned); the last SEEN lists
     * are kept to find a cycle */
    enum { SEEN = 64 };
    const gr_lstate_t *ls = gr_lexer_state(lx, L);
    int32_t n = ls->n_pairs, k = 0, n_seen = 0;
    gr_lpair_t *mem = malloc((size_t)(SEEN + 1) * (size_t)(n > 0 ? n : 1) * sizeof *mem);
    int32_t len[SEEN];
    *decided = false;
    *accept_longer = false;
    if (!mem)
        return 0;
    gr_lpair_t *cur = mem + (size_t)SEEN * (size_t)n; /* scratch for the next list */
    memcpy(mem, ls->pairs, (size_t)n * sizeof *mem);
    len[0] = n;
    n_seen = 1;
    int32_t last = 0; /* index of the current list in mem */
    while (k < vi->slice_max_cp) {
        int32_t m = 0;
        int r = pairs_uniform(gr_lexer_cfg(lx), mem + (size_t)last * n, len[last], cur, &m, false);
        if (r == UNI_DIVERGE)
            break;
        if (r == UNI_DEAD) {
            *decided = true;
            break;
        }
        bool cycle = false;
        for (int32_t i = 0; i < n_seen && !cycle; i++)
            cycle = len[i] == m && !memcmp(mem + (size_t)i * n, cur, (size_t)m * sizeof *cur);
        if (cycle) { /* every longer slice token too */
            *decided = true;
            *accept_longer = true;
            k = vi->slice_max_cp;
            break;
        }
        /* keep it (the oldest slot is reused once SEEN lists are kept: a
         * cycle longer than that is then found a lap later, or never,
         * which is only slower) */
        last = n_seen < SEEN ? n_seen++ : (last + 1) % SEEN;
        memcpy(mem + (size_t)last * n, cur, (size_t)m * sizeof *cur);
        len[last] = m;
        k++;
    }
    if (k >= vi->slice_max_cp) {
        *decided = true;
        *accept_longer = true;
    }
    free(mem);
    return k;
}

/* The slice shortcut when every string-safe code point takes L to one state
 * N except a few ASCII first bytes (a key that may still become one of the
 * object's names, a pattern with a fixed first character...): the slice
 * tokens that do not start with an exception byte are decided by N's
 * chain; *exc receives the exception bytes (their subtrees are walked).
 * Returns false when the shortcut does not apply. */
static bool slice_except(const gr_vindex_t *vi, gr_lexer_t *lx, int32_t L, uint32_t *acc, bool *exc, bool *full)
{
    int32_t N;
    if (uniform_step(lx, L, &N, full, true) != UNI_NEXT)
        return false;
    int n_exc = 0;
    for (int b = 0x20; b < 0x80; b++) {
        if (b == '"' || b == '\\')
            continue;
        int32_t lb = gr_lexer_next(lx, L, (uint8_t)b);
        if (lb == GR_LEXER_FULL) {
            *full = true;
            return false;
        }
        if (lb != N) {
            exc[b] = true;
            if (++n_exc > 24)
                return false;
        }
    }
    if (gr_lexer_state(lx, N)->n_acc > 0)
        return false;
    bool decided, accept_longer;
    int32_t k = slice_chain(vi, lx, N, &decided, &accept_longer);
    if (!decided)
        return false;
    /* slice tokens of at most k + 1 code points whose first byte is no exception */
    int32_t kk = k + 1 < vi->slice_max_cp ? k + 1 : vi->slice_max_cp;
    memcpy(acc, vi->slice_upto[kk], (size_t)vi->n_words * sizeof *acc);
    for (int b = 0; b < 128; b++)
        if (exc[b] && vi->slice_first[b])
            for (int32_t w = 0; w < vi->n_words; w++)
                acc[w] &= ~vi->slice_first[b][w];
    /* the exception subtrees are walked in the full trie; every other first
     * byte's non-slice tokens in the rest trie */
    for (int b = 0x80; b < 256; b++)
        exc[b] = false;
    for (int b = 0; b < 0x20; b++)
        exc[b] = false;
    exc['"'] = exc['\\'] = false;
    return true;
}

static entry_t *entry_compute(const gr_vindex_t *vi, gr_lexer_t *lx, int32_t L, gr_mask_scratch_t *s)
{
    entry_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->acc = calloc((size_t)vi->n_words, sizeof *e->acc);
    if (!e->acc) {
        free(e);
        return NULL;
    }
    s->n_exits = 0;
    bool decided = false, accept_longer = false, full = false;
    int32_t k = vi->slice_max_cp > 0 ? slice_chain(vi, lx, L, &decided, &accept_longer) : 0;
    bool exc[256] = {false};
    if (decided) {
        if (k > 0)
            memcpy(e->acc, vi->slice_upto[k < vi->slice_max_cp ? k : vi->slice_max_cp],
                   (size_t)vi->n_words * sizeof *e->acc);
        (void)accept_longer; /* k is already the longest slice token then */
        walk_single(&vi->rest, false, lx, L, s, e->acc, vi, NULL);
    } else if (slice_except(vi, lx, L, e->acc, exc, &full)) {
        /* all but a few first bytes behave alike: walk only those subtrees
         * and the tokens outside the slice */
        bool others[256];
        for (int b = 0; b < 256; b++)
            others[b] = !exc[b];
        walk_single(&vi->rest, false, lx, L, s, e->acc, vi, others);
        walk_single(&vi->full, true, lx, L, s, e->acc, vi, exc);
    } else {
        walk_single(&vi->full, true, lx, L, s, e->acc, vi, NULL);
    }
    if (full)
        s->full = true;
    if (s->oom || s->full) {
        entry_free(e);
        return NULL;
    }
    e->n_exits = s->n_exits;
    if (e->n_exits) {
        e->exits = malloc((size_t)e->n_exits * sizeof *e->exits);
        e->exit_lex = malloc((size_t)e->n_exits * sizeof *e->exit_lex);
        if (!e->exits || !e->exit_lex) {
            entry_free(e);
            return NULL;
        }
        memcpy(e->exits, s->exits, (size_t)e->n_exits * sizeof *e->exits);
        memcpy(e->exit_lex, s->exit_lex, (size_t)e->n_exits * sizeof *e->exit_lex);
    }
    e->owner = gr_lexer_serial(lx);
    e->bytes = sizeof *e + (size_t)vi->n_words * 4 + (size_t)e->n_exits * 8;
    return e;
}

static entry_t *entry_get(const gr_vindex_t *vi, gr_mask_cache_t *c, gr_lexer_t *lx, int32_t L,
                          gr_mask_scratch_t *s)
{
    const gr_lstate_t *ls = gr_lexer_state(lx, L);
    pthread_mutex_lock(&c->mu);
    entry_t *e = lookup(c, ls->h1, ls->h2);
    if (e) {
        e->refs++;
        c->hits++;
        lru_unlink(c, e);
        lru_front(c, e);
        pthread_mutex_unlock(&c->mu);
        return e;
    }
    c->misses++;
    pthread_mutex_unlock(&c->mu);
    entry_t *ne = entry_compute(vi, lx, L, s);
    if (!ne)
        return NULL;
    ne->h1 = ls->h1;
    ne->h2 = ls->h2;
    pthread_mutex_lock(&c->mu);
    e = lookup(c, ls->h1, ls->h2);
    if (e) { /* another thread was faster */
        entry_free(ne);
    } else {
        e = ne;
        e->hnext = c->buckets[e->h1 % c->n_buckets];
        c->buckets[e->h1 % c->n_buckets] = e;
        lru_front(c, e);
        c->bytes += e->bytes;
        c->entries++;
    }
    e->refs++;
    if (c->bytes > c->budget)
        evict(c);
    pthread_mutex_unlock(&c->mu);
    return e;
}

/* ---- context part ------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

static bool memo_grow(gr_mask_scratch_t *s)
{
    uint32_t cap = (s->memo_mask + 1) * 2;
    memo_t *nm = calloc(cap, sizeof *nm);
    if (!nm)
        return false;
    for (uint32_t i = 0; i <= s->memo_mask; i++)
        if (s->memo[i].gen == s->gen) {
            uint32_t j = (uint32_t)s->memo[i].key & (cap - 1);
            while (nm[j].gen == s->gen)
                j = (j + 1) & (cap - 1);
            nm[j] = s->memo[i];
        }
    free(s->memo);
    s->memo = nm;
    s->memo_mask = cap - 1;
    return true;
}

/* The set created by completing comp[0..n) (memoized for this call). */
static const memo_t *complete_memo(gr_mask_scratch_t *s, gr_matcher_t *m, gr_completion_t *comp, int32_t n,
                                   uint32_t *n_memo)
{
    /* canonical order: insertion sort by (origin, lex) */
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && (comp[j - 1].origin > comp[j].origin ||
                                      (comp[j - 1].origin == comp[j].origin && comp[j - 1].lex > comp[j].lex));
             j--) {
            gr_completion_t t = comp[j];
            comp[j] = comp[j - 1];
            comp[j - 1] = t;
        }
    uint64_t key = mix(0x51, (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        key = mix(mix(key, (uint64_t)comp[i].origin), (uint64_t)comp[i].lex);
    uint32_t j = (uint32_t)key & s->memo_mask;
    while (s->memo[j].gen == s->gen) {
        memo_t *me = &s->memo[j];
        if (me->key == key && me->n == n &&
            !memcmp(s->memo_pairs + me->off, comp, (size_t)n * sizeof *comp))
            return me;
        j = (j + 1) & s->memo_mask;
    }
    if (s->n_memo_pairs + n > s->cap_memo_pairs) {
        int32_t cap = s->cap_memo_pairs * 2;
        while (cap < s->n_memo_pairs + n)
            cap *= 2;
        gr_completion_t *np = realloc(s->memo_pairs, (size_t)cap * sizeof *np);
        if (!np) {
            s->oom = true;
            return NULL;
        }
        s->memo_pairs = np;
        s->cap_memo_pairs = cap;
    }
    memo_t *me = &s->memo[j];
    me->key = key;
    me->n = n;
    me->off = s->n_memo_pairs;
    memcpy(s->memo_pairs + s->n_memo_pairs, comp, (size_t)n * sizeof *comp);
    s->n_memo_pairs += n;
    me->gen = s->gen;
    me->set = gr_matcher_complete(m, comp, n, me->run, &me->n_run);
    if (m->failed) {
        s->oom = true;
        return NULL;
    }
    me->flags = me->set >= 0 ? m->set_flags[me->set] : 0;
    if (++*n_memo * 2 > s->memo_mask) {
        memo_t copy = *me;
        if (!memo_grow(s)) {
            s->oom = true;
            return NULL;
        }
        /* find it again after the rehash */
        j = (uint32_t)copy.key & s->memo_mask;
        while (!(s->memo[j].gen == s->gen && s->memo[j].key == copy.key && s->memo[j].off == copy.off))
            j = (j + 1) & s->memo_mask;
        return &s->memo[j];
    }
    return me;
}

static bool ensure_runs(gr_mask_scratch_t *s, int32_t need)
{
    if (need <= s->cap_runs)
        return true;
    int32_t cap = s->cap_runs * 2;
    while (cap < need)
        cap *= 2;
    gr_run_t *r = realloc(s->runs, (size_t)cap * sizeof *r);
    if (!r) {
        s->oom = true;
        return false;
    }
    s->runs = r;
    s->cap_runs = cap;
    return true;
}

static bool ensure_comp(gr_mask_scratch_t *s, int32_t need)
{
    if (need <= s->cap_comp)
        return true;
    int32_t cap = s->cap_comp * 2;
    while (cap < need)
        cap *= 2;
    gr_completion_t *c = realloc(s->comp, (size_t)cap * sizeof *c);
    if (!c) {
        s->oom = true;
        return false;
    }
    s->comp = c;
    s->cap_comp = cap;
    return true;
}

/* Walks the subtree of node x of trie t with the runs r0[0..n0) (and
 * whether a token ending at x itself is already valid is not our concern:
 * the caller handles x). General: several runs, completions memoized. */
static void walk_below(const gr_vindex_t *vi, const gr_trie_t *t, uint32_t x, gr_matcher_t *m, gr_mask_scratch_t *s,
                       const gr_run_t *r0, int32_t n0, uint32_t *mask, uint32_t *n_memo)
{
    gr_lexer_t *lx = m->lx;
    const gr_tnode_t *nd = t->nodes;
    int32_t base = nd[x].depth;
    if (!ensure_runs(s, n0))
        return;
    memcpy(s->runs, r0, (size_t)n0 * sizeof *r0);
    s->lvl_off[0] = 0;
    s->lvl_n[0] = n0;
    uint32_t end = x + nd[x].sub, i = x + 1;
    while (i < end && !s->oom && !s->full) {
        const gr_tnode_t *y = &nd[i];
        int32_t d = y->depth - base;
        int32_t poff = s->lvl_off[d - 1], pn = s->lvl_n[d - 1];
        int32_t off = poff + pn, nn = 0, nc = 0;
        if (!ensure_runs(s, off + pn + 2) || !ensure_comp(s, pn))
            return;
        for (int32_t k = 0; k < pn; k++) {
            gr_run_t r = s->runs[poff + k];
            int32_t l2 = gr_lexer_next(lx, r.lex, y->byte);
            if (l2 < 0) {
                if (l2 == GR_LEXER_FULL)
                    s->full = true;
                continue;
            }
            s->runs[off + nn++] = (gr_run_t){l2, r.origin};
            if (gr_lexer_state(lx, l2)->n_acc > 0)
                s->comp[nc++] = (gr_completion_t){r.origin, l2};
        }
        bool ok = nn > 0;
        if (nc > 0) {
            const memo_t *me = complete_memo(s, m, s->comp, nc, n_memo);
            if (!me)
                return;
            if (me->set >= 0) {
                for (int32_t q = 0; q < me->n_run; q++)
                    s->runs[off + nn++] = me->run[q];
                ok = ok || me->n_run > 0 || (me->flags & (GR_SET_ACCEPTS | GR_SET_TOKENS));
            }
        }
        if (ok && y->tok >= 0)
            set_token(vi, mask, y->tok);
        if (nn == 0) {
            i += y->sub;
            continue;
        }
        s->lvl_off[d] = off;
        s->lvl_n[d] = nn;
        i++;
    }
}

lf_code_t gr_mask_compute(const gr_vindex_t *vi, gr_mask_cache_t *c, gr_mask_scratch_t *s, gr_matcher_t *m,
                          uint32_t *mask, lf_err_t *err)
{
    memset(mask, 0, (size_t)vi->n_words * sizeof *mask);
    if (m->failed)
        return lf_err_set(err, m->fail_code == LF_ERR_UNSUPPORTED ? LF_ERR_UNSUPPORTED : LF_ERR_NOMEM,
                          "grammar matcher failed earlier (state limit or out of memory)");
    s->oom = s->full = false;
    if (++s->gen == 0) {
        memset(s->memo, 0, ((size_t)s->memo_mask + 1) * sizeof *s->memo);
        s->gen = 1;
    }
    s->n_memo_pairs = 0;
    uint32_t n_memo = 0;
    int32_t keep_sets = m->n_sets;
    size_t keep_items = m->n_items;
    gr_lexer_t *lx = m->lx;
    uint64_t serial = gr_lexer_serial(lx);
    for (int32_t r = 0; r < m->n_runs && !s->oom && !s->full; r++) {
        gr_run_t run = m->runs[r];
        entry_t *e = entry_get(vi, c, lx, run.lex, s);
        if (!e)
            break;
        for (int32_t w = 0; w < vi->n_words; w++)
            mask[w] |= e->acc[w];
        for (int32_t k = 0; k < e->n_exits && !s->oom && !s->full; k++) {
            const gr_trie_t *t = e->exits[k] >> 31 ? &vi->full : &vi->rest;
            uint32_t x = e->exits[k] & 0x7fffffffu;
            int32_t lx_at;
            if (e->owner == serial) {
                lx_at = e->exit_lex[k];
            } else { /* recompute the lexer state along the node's path */
                const gr_tnode_t *nd = &t->nodes[x];
                const uint8_t *path = vi->tok_bytes[nd->path_tok];
                lx_at = run.lex;
                for (uint16_t d = 0; d < nd->depth && lx_at >= 0; d++)
                    lx_at = gr_lexer_next(lx, lx_at, path[d]);
                if (lx_at < 0) {
                    if (lx_at == GR_LEXER_FULL)
                        s->full = true;
                    continue;
                }
            }
            gr_completion_t comp = {run.origin, lx_at};
            const memo_t *me = complete_memo(s, m, &comp, 1, &n_memo);
            if (!me)
                break;
            if (me->set < 0 || me->n_run == 0)
                continue;
            gr_run_t child[2] = {me->run[0], me->run[1]};
            walk_below(vi, t, x, m, s, child, me->n_run, mask, &n_memo);
        }
        unpin(c, e);
    }
    gr_matcher_truncate(m, keep_sets, keep_items);
    if (s->oom)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory computing a token mask");
    if (s->full)
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too complex: the lexer state limit was hit");
    int32_t sp[64];
    int32_t nsp = gr_matcher_special_allowed(m, sp, 64);
    for (int32_t i = 0; i < nsp && i < 64; i++)
        if (sp[i] >= 0 && sp[i] < vi->n_vocab)
            gr_bits_set(mask, sp[i]);
    if (gr_matcher_accepting(m))
        for (int32_t i = 0; i < vi->n_eog; i++)
            gr_bits_set(mask, vi->eog[i]);
    return LF_OK;
}
