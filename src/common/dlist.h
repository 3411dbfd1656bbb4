/* dlist.h - an intrusive doubly linked list, for the LRU orders of the
 * caches (the grammar's mask cache, the encoded-image cache): an element
 * embeds a dlist_node_t and DLIST_ENTRY gets the element back. The head is
 * the most recently used end. Header-only; no allocation; not thread-safe
 * (the caches hold their lock). */
#ifndef LF_DLIST_H
#define LF_DLIST_H

#include <stddef.h>

typedef struct dlist_node {
    struct dlist_node *prev, *next;
} dlist_node_t;

typedef struct {
    dlist_node_t *head, *tail;
} dlist_t;

#define DLIST_ENTRY(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

/* Takes e out of l (e must be in l). */
static inline void dlist_unlink(dlist_t *l, dlist_node_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

/* Puts e (in no list) at the head of l. */
static inline void dlist_push_front(dlist_t *l, dlist_node_t *e)
{
    e->next = l->head;
    e->prev = NULL;
    if (l->head)
        l->head->prev = e;
    l->head = e;
    if (!l->tail)
        l->tail = e;
}

#endif
