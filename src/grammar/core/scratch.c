/* scratch.c - per-thread scratch buffers (see scratch.h). */
#include "grammar/core/scratch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *p[GR_SCRATCH_SLOTS];
    size_t cap[GR_SCRATCH_SLOTS];
    void *pool[GR_SCRATCH_POOL];
    int n_pool;
} scratch_t;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread scratch_t *mine;

static void scratch_free(void *v)
{
    scratch_t *s = v;
    for (int i = 0; i < GR_SCRATCH_SLOTS; i++)
        free(s->p[i]);
    for (int i = 0; i < s->n_pool; i++)
        free(s->pool[i]);
    free(s);
}

static void make_key(void)
{
    pthread_key_create(&key, scratch_free);
}

static scratch_t *get(void)
{
    if (mine)
        return mine;
    pthread_once(&once, make_key);
    scratch_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pthread_setspecific(key, s) != 0) {
        free(s);
        return NULL;
    }
    return mine = s;
}

void *gr_scratch(int slot, size_t bytes)
{
    scratch_t *s = get();
    if (!s || slot < 0 || slot >= GR_SCRATCH_SLOTS)
        return NULL;
    if (bytes == 0)
        bytes = 1;
    if (bytes > s->cap[slot]) {
        size_t cap = s->cap[slot] ? s->cap[slot] : 4096;
        while (cap < bytes)
            cap *= 2;
        free(s->p[slot]); /* the old content is not kept */
        s->p[slot] = malloc(cap);
        s->cap[slot] = s->p[slot] ? cap : 0;
    }
    return s->p[slot];
}

void *gr_scratch_zero(int slot, size_t bytes)
{
    void *p = gr_scratch(slot, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void gr_scratch_trim(void)
{
    scratch_t *s = mine;
    if (!s)
        return;
    for (int i = 0; i < GR_SCRATCH_SLOTS; i++)
        if (s->cap[i] > GR_SCRATCH_KEEP) {
            free(s->p[i]);
            s->p[i] = NULL;
            s->cap[i] = 0;
        }
}

void *gr_scratch_block_get(void)
{
    scratch_t *s = get();
    if (s && s->n_pool > 0)
        return s->pool[--s->n_pool];
    return malloc(GR_SCRATCH_BLOCK);
}

void gr_scratch_block_put(void *block)
{
    if (!block)
        return;
    scratch_t *s = get();
    if (s && s->n_pool < GR_SCRATCH_POOL)
        s->pool[s->n_pool++] = block;
    else
        free(block);
}
