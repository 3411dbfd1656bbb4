/* vocab_spm.c - SentencePiece-style BPE over token scores (llama.cpp's
 * llm_tokenizer_spm_session).
 *
 * The text (already space-escaped to U+2581) is split into UTF-8 characters;
 * adjacent pairs whose concatenation is a token go into a max-heap ordered by
 * that token's score (ties: leftmost first); merges are applied until the
 * heap is empty. Symbols that are not tokens fall back to <0xNN> byte tokens.
 */
#include "engine/vocab/vocab_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int prev, next;
    size_t off, n;
} sym_t;

typedef struct {
    int left, right;
    float score;
    size_t size;
} bigram_t;

typedef struct {
    bigram_t *a;
    size_t n, cap;
    bool oom;
} heap_t;

/* true if x should come out before y */
static bool before(const bigram_t *x, const bigram_t *y)
{
    return x->score > y->score || (x->score == y->score && x->left < y->left);
}

static void heap_push(heap_t *h, bigram_t b)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        bigram_t *p = realloc(h->a, cap * sizeof *p);
        if (!p) {
            h->oom = true;
            return;
        }
        h->a = p;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &h->a[parent]))
            break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = b;
}

static bigram_t heap_pop(heap_t *h)
{
    bigram_t top = h->a[0];
    bigram_t last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c]))
            c++;
        if (!before(&h->a[c], &last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = last;
    return top;
}

static void try_add(const vocab_t *v, const char *text, const sym_t *syms, heap_t *h, int left, int right)
{
    if (left < 0 || right < 0)
        return;
    size_t n = syms[left].n + syms[right].n;
    int32_t id = vocab_find(v, text + syms[left].off, n);
    if (id < 0)
        return;
    heap_push(h, (bigram_t){left, right, v->toks[id].score, n});
}

void vocab_spm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out)
{
    if (len == 0)
        return;
    sym_t *syms = malloc(len * sizeof *syms);
    heap_t h = {0};
    if (!syms) {
        out->oom = true;
        return;
    }
    int count = 0;
    for (size_t off = 0; off < len;) {
        size_t l = vocab_utf8_len((unsigned char)text[off]);
        if (l > len - off)
            l = len - off;
        syms[count] = (sym_t){count - 1, off + l == len ? -1 : count + 1, off, l};
        off += l;
        count++;
    }
    for (int i = 1; i < count; i++)
        try_add(v, text, syms, &h, i - 1, i);
    while (h.n > 0 && !h.oom) {
        bigram_t b = heap_pop(&h);
        sym_t *l = &syms[b.left], *r = &syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            syms[r->next].prev = b.left;
        try_add(v, text, syms, &h, l->prev, b.left);
        try_add(v, text, syms, &h, b.left, l->next);
    }
    if (h.oom)
        out->oom = true;
    for (int i = 0; i != -1 && !out->oom; i = syms[i].next) {
        const sym_t *s = &syms[i];
        int32_t id = vocab_find(v, text + s->off, s->n);
        if (id >= 0) {
            vocab_out_push(out, id);
            continue;
        }
        /* Only merged symbols (always tokens) and single characters remain,
         * so llama.cpp's rev_merge resegmentation reduces to byte fallback. */
        for (size_t j = 0; j < s->n; j++) {
            int32_t bt = v->byte_tok[(unsigned char)text[s->off + j]];
            if (bt >= 0)
                vocab_out_push(out, bt);
        }
    }
    free(h.a);
    free(syms);
}
