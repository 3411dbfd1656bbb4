/* vis_cache.c - the encoded-image cache (see vis_cache.h): a doubly linked
 * LRU list searched linearly (a server holds tens of images, not
 * thousands; the key compare is 36 bytes). */
#include "engine/vision/vis_cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/dlist.h"

struct vis_embd {
    atomic_int refs;
    uint8_t hash[32];
    int32_t array;
    float *rows;
    int64_t bytes;
    dlist_node_t lru;            /* LRU order (the cache's reference) */
    bool cached;
};

struct vis_cache {
    pthread_mutex_t mu;
    int64_t max_bytes, bytes;
    dlist_t lru;             /* most recent first */
    vis_cache_stats_t st;
};

vis_cache_t *vis_cache_create(int64_t max_bytes)
{
    vis_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes > 0 ? max_bytes : 0;
    return c;
}

void vis_embd_release(vis_embd_t *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
        free(e->rows);
        free(e);
    }
}

#define NODE_EMBD(n) DLIST_ENTRY(n, vis_embd_t, lru)

void vis_cache_free(vis_cache_t *c)
{
    if (!c)
        return;
    for (dlist_node_t *n = c->lru.head; n;) {
        vis_embd_t *e = NODE_EMBD(n);
        n = n->next;
        vis_embd_release(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

vis_embd_t *vis_cache_get(vis_cache_t *c, const uint8_t hash[32], int32_t array)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->mu);
    vis_embd_t *e = NULL;
    for (dlist_node_t *n = c->lru.head; n && !e; n = n->next)
        if (NODE_EMBD(n)->array == array && !memcmp(NODE_EMBD(n)->hash, hash, 32))
            e = NODE_EMBD(n);
    if (e) {
        atomic_fetch_add(&e->refs, 1);
        dlist_unlink(&c->lru, &e->lru);
        dlist_push_front(&c->lru, &e->lru);
        c->st.hits++;
    } else {
        c->st.misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

vis_embd_t *vis_cache_put(vis_cache_t *c, const uint8_t hash[32], int32_t array, float *rows, int64_t n_floats)
{
    vis_embd_t *e = calloc(1, sizeof *e);
    if (!e) {
        free(rows);
        return NULL;
    }
    atomic_init(&e->refs, 1);
    memcpy(e->hash, hash, 32);
    e->array = array;
    e->rows = rows;
    e->bytes = n_floats * (int64_t)sizeof(float);
    if (!c || c->max_bytes <= 0 || e->bytes > c->max_bytes)
        return e;
    pthread_mutex_lock(&c->mu);
    atomic_fetch_add(&e->refs, 1); /* the cache's reference */
    e->cached = true;
    dlist_push_front(&c->lru, &e->lru);
    c->bytes += e->bytes;
    while (c->bytes > c->max_bytes && c->lru.tail && c->lru.tail != &e->lru) {
        vis_embd_t *old = NODE_EMBD(c->lru.tail);
        dlist_unlink(&c->lru, &old->lru);
        c->bytes -= old->bytes;
        c->st.evictions++;
        old->cached = false;
        vis_embd_release(old);
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

const float *vis_embd_rows(const vis_embd_t *e) { return e->rows; }

void vis_cache_stats(vis_cache_t *c, vis_cache_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    out->bytes = (uint64_t)c->bytes;
    out->max_bytes = (uint64_t)c->max_bytes;
    for (dlist_node_t *n = c->lru.head; n; n = n->next)
        out->entries++;
    pthread_mutex_unlock(&c->mu);
}
