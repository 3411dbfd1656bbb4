/* vis_cache.c - the encoded-image cache (see vis_cache.h): a doubly linked
 * LRU list searched linearly (a server holds tens of images, not
 * thousands; the key compare is 36 bytes). */
#include "engine/vision/vis_cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct vis_embd {
    atomic_int refs;
    uint8_t hash[32];
    int32_t array;
    float *rows;
    int64_t bytes;
    struct vis_embd *prev, *next; /* LRU list (cache's reference) */
    bool cached;
};

struct vis_cache {
    pthread_mutex_t mu;
    int64_t max_bytes, bytes;
    vis_embd_t *head, *tail; /* head = most recent */
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

static void unlink_entry(vis_cache_t *c, vis_embd_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(vis_cache_t *c, vis_embd_t *e)
{
    e->next = c->head;
    e->prev = NULL;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

void vis_cache_free(vis_cache_t *c)
{
    if (!c)
        return;
    for (vis_embd_t *e = c->head, *n; e; e = n) {
        n = e->next;
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
    vis_embd_t *e = c->head;
    while (e && (e->array != array || memcmp(e->hash, hash, 32)))
        e = e->next;
    if (e) {
        atomic_fetch_add(&e->refs, 1);
        unlink_entry(c, e);
        push_front(c, e);
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
    push_front(c, e);
    c->bytes += e->bytes;
    while (c->bytes > c->max_bytes && c->tail && c->tail != e) {
        vis_embd_t *old = c->tail;
        unlink_entry(c, old);
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
    for (vis_embd_t *e = c->head; e; e = e->next)
        out->entries++;
    pthread_mutex_unlock(&c->mu);
}
