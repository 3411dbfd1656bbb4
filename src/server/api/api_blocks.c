/* api_blocks.c - output blocks of a parsed choice (see api_blocks.h). */
#include "server/api/api_blocks.h"
#include "server/api/api_gen.h"

#include <stdlib.h>
#include <string.h>

static void buf_add(char **s, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        while (nc < *len + n + 1)
            nc *= 2;
        char *t = realloc(*s, nc);
        if (!t)
            return; /* keep what there is: the reply stays well-formed */
        *s = t;
        *cap = nc;
    }
    memcpy(*s + *len, p, n);
    *len += n;
    (*s)[*len] = '\0';
}

void blk_init(blk_list_t *l, const blk_sink_t *sink, void *ctx)
{
    memset(l, 0, sizeof *l);
    l->sink = sink;
    l->ctx = ctx;
}

const blk_t *blk_open_block(const blk_list_t *l)
{
    return l->n && !l->v[l->n - 1].closed ? &l->v[l->n - 1] : NULL;
}

static void close_open(blk_list_t *l)
{
    if (!l->n || l->v[l->n - 1].closed)
        return;
    blk_t *b = &l->v[l->n - 1];
    b->closed = true;
    if (l->sink)
        l->sink->close(l->ctx, l->n - 1, b);
}

static blk_t *push(blk_list_t *l, blk_kind_t kind)
{
    close_open(l);
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4;
        blk_t *v = realloc(l->v, nc * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = nc;
    }
    blk_t *b = &l->v[l->n++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->call = -1;
    return b;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\n' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

/* Text of a reasoning / text block: appended to the open block of that
 * kind, else held while blank, else a new block (with the held blanks). */
static void add_prose(blk_list_t *l, blk_kind_t kind, const char *p, size_t n)
{
    if (!n)
        return;
    blk_t *open = l->n && !l->v[l->n - 1].closed ? &l->v[l->n - 1] : NULL;
    if (open && open->kind == kind) {
        buf_add(&open->text, &open->len, &open->cap, p, n);
        if (l->sink)
            l->sink->delta(l->ctx, l->n - 1, open, p, n);
        return;
    }
    if (l->pend_len && l->pend_kind != kind)
        l->pend_len = 0; /* blanks of the other kind: never shown */
    l->pend_kind = kind;
    if (blank(p, n)) {
        buf_add(&l->pend, &l->pend_len, &l->pend_cap, p, n);
        return;
    }
    blk_t *b = push(l, kind);
    if (!b)
        return;
    if (l->pend_len)
        buf_add(&b->text, &b->len, &b->cap, l->pend, l->pend_len);
    buf_add(&b->text, &b->len, &b->cap, p, n);
    l->pend_len = 0;
    if (l->sink) {
        l->sink->open(l->ctx, l->n - 1, b);
        l->sink->delta(l->ctx, l->n - 1, b, b->text, b->len);
    }
}

void blk_text(blk_list_t *l, const char *p, size_t n)
{
    add_prose(l, BLK_TEXT, p, n);
}

void blk_reasoning(blk_list_t *l, const char *p, size_t n)
{
    add_prose(l, BLK_REASONING, p, n);
}

void blk_chat(blk_list_t *l, const chat_out_ev_t *ev)
{
    switch (ev->kind) {
    case CHAT_OUT_REASONING: blk_reasoning(l, ev->text, ev->len); return;
    case CHAT_OUT_CONTENT: blk_text(l, ev->text, ev->len); return;
    case CHAT_OUT_TOOL_START: {
        l->pend_len = 0;
        blk_t *b = push(l, BLK_TOOL);
        if (!b)
            return;
        b->call = ev->index;
        b->call_id = strdup(ev->id ? ev->id : "");
        b->name = strdup(ev->name ? ev->name : "");
        buf_add(&b->text, &b->len, &b->cap, "", 0);
        if (l->sink)
            l->sink->open(l->ctx, l->n - 1, b);
        return;
    }
    case CHAT_OUT_TOOL_ARGS:
        for (size_t i = l->n; i-- > 0;) {
            blk_t *b = &l->v[i];
            if (b->kind == BLK_TOOL && b->call == ev->index) {
                buf_add(&b->text, &b->len, &b->cap, ev->text, ev->len);
                if (l->sink && ev->len)
                    l->sink->delta(l->ctx, i, b, ev->text, ev->len);
                return;
            }
        }
        return;
    }
}

void blk_finish(blk_list_t *l)
{
    close_open(l);
    l->pend_len = 0;
}

void blk_free(blk_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].text);
        free(l->v[i].call_id);
        free(l->v[i].name);
    }
    free(l->v);
    free(l->pend);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------ the formats' runner hooks */

blk_run_t *blk_run_of(run_t *g)
{
    blk_run_t *b = g->fmt_ctx;
    b->run = g;
    if (!b->blk.sink)
        blk_init(&b->blk, b->sink, b);
    return b;
}

void blk_fmt_on_text(run_t *g, size_t idx, const char *p, size_t n)
{
    (void)idx;
    blk_text(&blk_run_of(g)->blk, p, n);
}

void blk_fmt_on_chat(run_t *g, size_t idx, const chat_out_ev_t *ev)
{
    (void)idx;
    blk_chat(&blk_run_of(g)->blk, ev);
}

void blk_fmt_on_end(run_t *g, size_t idx)
{
    (void)idx;
    blk_finish(&blk_run_of(g)->blk);
}
