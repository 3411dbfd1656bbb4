/* jinja_arena.c - bump allocator for one parse or one render.
 *
 * Everything a render creates dies with its arena, which keeps the evaluator
 * free of ownership bookkeeping. The budget turns runaway templates (string
 * doubling in a loop) into an error instead of an out-of-memory kill. */
#include "chat/template/jinja.h"

#include <stdlib.h>
#include <string.h>

typedef struct jchunk {
    struct jchunk *next;
    size_t used, cap;
    max_align_t data[];
} jchunk_t;

struct jarena {
    jchunk_t *head;
    size_t total, budget;
};

jarena_t *jarena_new(size_t budget)
{
    jarena_t *a = calloc(1, sizeof *a);
    if (a)
        a->budget = budget;
    return a;
}

void jarena_free(jarena_t *a)
{
    if (!a)
        return;
    jchunk_t *c = a->head;
    while (c) {
        jchunk_t *n = c->next;
        free(c);
        c = n;
    }
    free(a);
}

void *jarena_alloc(jarena_t *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    jchunk_t *c = a->head;
    if (!c || c->cap - c->used < n) {
        /* chunks grow geometrically (4 KiB .. 1 MiB): small renders touch
         * little fresh memory, big ones make few allocations */
        size_t want = c ? c->cap * 2 : 4096;
        if (want > ((size_t)1 << 20))
            want = (size_t)1 << 20;
        size_t cap = n > want ? n : want;
        if (a->budget && a->total + cap > a->budget)
            return NULL;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
        a->total += cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *jarena_strndup(jarena_t *a, const char *s, size_t n)
{
    char *p = jarena_alloc(a, n + 1);
    if (p) {
        if (n)
            memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}
