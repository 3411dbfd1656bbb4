/* lexer.c - interned combined lexer states (see lexer.h). */
#include "grammar/match/lexer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct gr_lexer {
    gr_lexer_chunks_t c;    /* first: gr_lexer_state() reads it */
    int32_t n_chunks;       /* chunk[0 .. n_chunks) are allocated */
    const gr_cfg_t *g;
    uint64_t serial;
    pthread_mutex_t mu;
    int32_t n;
    int32_t *slot;          /* hash table of ids */
    uint64_t *slot_h;
    size_t mask;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

gr_lexer_t *gr_lexer_create(const gr_cfg_t *g)
{
    /* the chunk table need not be cleared: chunks are made in order and
     * only chunk[0 .. n_chunks) is ever read */
    gr_lexer_t *lx = malloc(sizeof *lx);
    if (!lx)
        return NULL;
    memset((char *)lx + sizeof lx->c, 0, sizeof *lx - sizeof lx->c);
    static uint64_t next_serial;
    lx->g = g;
    lx->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
    lx->mask = 255;
    lx->slot = malloc((lx->mask + 1) * sizeof *lx->slot);
    lx->slot_h = malloc((lx->mask + 1) * sizeof *lx->slot_h);
    if (!lx->slot || !lx->slot_h) {
        free(lx->slot);
        free(lx->slot_h);
        free(lx);
        return NULL;
    }
    memset(lx->slot, 0xff, (lx->mask + 1) * sizeof *lx->slot);
    pthread_mutex_init(&lx->mu, NULL);
    return lx;
}

void gr_lexer_free(gr_lexer_t *lx)
{
    if (!lx)
        return;
    for (int32_t i = 0; i < lx->n; i++) {
        gr_lstate_t *s = gr_lexer_state(lx, i);
        free(s->pairs);
        free(s->acc);
    }
    for (int32_t c = 0; c < lx->n_chunks; c++)
        free(lx->c.chunk[c]);
    free(lx->slot);
    free(lx->slot_h);
    pthread_mutex_destroy(&lx->mu);
    free(lx);
}

int32_t gr_lexer_count(const gr_lexer_t *lx)
{
    return __atomic_load_n(&lx->n, __ATOMIC_ACQUIRE);
}

uint64_t gr_lexer_serial(const gr_lexer_t *lx)
{
    return lx->serial;
}

const gr_cfg_t *gr_lexer_cfg(const gr_lexer_t *lx)
{
    return lx->g;
}

static uint64_t pairs_hash(const gr_lpair_t *p, int32_t n)
{
    uint64_t h = mix(0x1e, (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        h = mix(mix(h, (uint64_t)p[i].term), (uint64_t)p[i].state);
    return h;
}

static bool grow(gr_lexer_t *lx)
{
    size_t cap = (lx->mask + 1) * 2;
    int32_t *s = malloc(cap * sizeof *s);
    uint64_t *h = malloc(cap * sizeof *h);
    if (!s || !h) {
        free(s);
        free(h);
        return false;
    }
    memset(s, 0xff, cap * sizeof *s);
    for (size_t i = 0; i <= lx->mask; i++)
        if (lx->slot[i] >= 0) {
            size_t j = lx->slot_h[i] & (cap - 1);
            while (s[j] >= 0)
                j = (j + 1) & (cap - 1);
            s[j] = lx->slot[i];
            h[j] = lx->slot_h[i];
        }
    free(lx->slot);
    free(lx->slot_h);
    lx->slot = s;
    lx->slot_h = h;
    lx->mask = cap - 1;
    return true;
}

/* Interns the sorted pairs; call with lx->mu held. */
static int32_t intern(gr_lexer_t *lx, const gr_lpair_t *p, int32_t n)
{
    if (n == 0)
        return GR_LEXER_DEAD;
    uint64_t h = pairs_hash(p, n);
    size_t j = h & lx->mask;
    while (lx->slot[j] >= 0) {
        gr_lstate_t *s = gr_lexer_state(lx, lx->slot[j]);
        if (lx->slot_h[j] == h && s->n_pairs == n && !memcmp(s->pairs, p, (size_t)n * sizeof *p))
            return lx->slot[j];
        j = (j + 1) & lx->mask;
    }
    if (lx->n >= GR_LEXER_MAX_STATES)
        return GR_LEXER_FULL;
    int32_t id = lx->n;
    int32_t c = id >> GR_LEXER_CHUNK_BITS;
    if (c == lx->n_chunks) {
        gr_lstate_t *chunk = malloc(((size_t)1 << GR_LEXER_CHUNK_BITS) * sizeof(gr_lstate_t));
        if (!chunk)
            return GR_LEXER_FULL;
        lx->c.chunk[c] = chunk;
        lx->n_chunks++;
    }
    gr_lstate_t *s = gr_lexer_state(lx, id);
    memset(s, 0, sizeof *s);
    s->pairs = malloc((size_t)n * sizeof *p);
    s->acc = malloc((size_t)n * sizeof *s->acc);
    if (!s->pairs || !s->acc) {
        free(s->pairs);
        free(s->acc);
        return GR_LEXER_FULL;
    }
    memcpy(s->pairs, p, (size_t)n * sizeof *p);
    s->n_pairs = n;
    uint64_t h1 = mix(0xC0FFEE, (uint64_t)n), h2 = mix(0xBEEF, (uint64_t)n);
    for (int32_t i = 0; i < n; i++) {
        const gr_term_t *t = &lx->g->terms[p[i].term];
        if (gr_term_accepting(t, p[i].state))
            s->acc[s->n_acc++] = p[i].term;
        h1 = mix(mix(h1, t->h1), (uint64_t)p[i].state);
        h2 = mix(mix(h2, t->h2), (uint64_t)p[i].state * 2654435761u);
    }
    s->h1 = h1;
    s->h2 = h2;
    for (int b = 0; b < 256; b++)
        s->next[b] = -2;
    lx->slot[j] = id;
    lx->slot_h[j] = h;
    __atomic_store_n(&lx->n, id + 1, __ATOMIC_RELEASE);
    if ((size_t)lx->n * 2 > lx->mask)
        grow(lx);
    return id;
}

static int cmp_pair(const void *a, const void *b)
{
    const gr_lpair_t *x = a, *y = b;
    return x->term != y->term ? (x->term > y->term) - (x->term < y->term) : (x->state > y->state) - (x->state < y->state);
}

int32_t gr_lexer_intern(gr_lexer_t *lx, const gr_lpair_t *p, int32_t n)
{
    pthread_mutex_lock(&lx->mu);
    int32_t id = intern(lx, p, n);
    pthread_mutex_unlock(&lx->mu);
    return id;
}

int32_t gr_lexer_start(gr_lexer_t *lx, const int32_t *terms, int32_t n)
{
    if (n <= 0)
        return GR_LEXER_DEAD;
    gr_lpair_t buf[64], *p = n <= 64 ? buf : malloc((size_t)n * sizeof *p);
    if (!p)
        return GR_LEXER_FULL;
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (lx->g->terms[terms[i]].kind != GR_TERM_TOKEN)
            p[k++] = (gr_lpair_t){terms[i], 0};
    qsort(p, (size_t)k, sizeof *p, cmp_pair);
    int32_t w = 0;
    for (int32_t i = 0; i < k; i++)
        if (w == 0 || p[w - 1].term != p[i].term)
            p[w++] = p[i];
    int32_t id = gr_lexer_intern(lx, p, w);
    if (p != buf)
        free(p);
    return id;
}

int32_t gr_lexer_next_slow(gr_lexer_t *lx, int32_t id, uint8_t b)
{
    gr_lstate_t *s = gr_lexer_state(lx, id);
    gr_lpair_t buf[64], *p = s->n_pairs <= 64 ? buf : malloc((size_t)s->n_pairs * sizeof *p);
    if (!p)
        return GR_LEXER_FULL;
    int32_t k = 0;
    for (int32_t i = 0; i < s->n_pairs; i++) {
        int32_t q = gr_term_step(&lx->g->terms[s->pairs[i].term], s->pairs[i].state, b);
        if (q >= 0)
            p[k++] = (gr_lpair_t){s->pairs[i].term, q};
    }
    /* pairs stay sorted: one per terminal, terminal order unchanged */
    pthread_mutex_lock(&lx->mu);
    int32_t nx = intern(lx, p, k);
    if (nx != GR_LEXER_FULL)
        __atomic_store_n(&s->next[b], nx, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lx->mu);
    if (p != buf)
        free(p);
    return nx;
}
