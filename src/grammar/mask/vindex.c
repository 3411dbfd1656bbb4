/* vindex.c - byte tries and the string-safe slice (see vindex.h). */
#include "grammar/mask/vindex.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TOKEN_BYTES 1024

/* Code points of a slice token, or -1 if it is not one. */
static int32_t slice_cps(const uint8_t *p, size_t n)
{
    int32_t cps = 0;
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c;
            len = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            cp = c & 0x1F;
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            cp = c & 0x0F;
            len = 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            cp = c & 0x07;
            len = 4;
        } else {
            return -1;
        }
        if (i + len > n)
            return -1;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return -1;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return -1;
        if (cp < 0x20 || cp == '"' || cp == '\\')
            return -1;
        cps++;
        i += len;
    }
    return cps;
}

static int cmp_tok(const void *a, const void *b, void *ctx)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const gr_vindex_t *vi = ctx;
    size_t lx = vi->tok_len[x], ly = vi->tok_len[y], l = lx < ly ? lx : ly;
    int c = memcmp(vi->tok_bytes[x], vi->tok_bytes[y], l);
    if (c)
        return c;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return (x > y) - (x < y);
}

/* Builds a trie from tokens sorted by bytes (prefixes first). */
static bool trie_build(gr_vindex_t *vi, const int32_t *sorted, int32_t n, gr_trie_t *t)
{
    /* upper bound on nodes: total bytes + 1 */
    size_t cap = 1;
    for (int32_t i = 0; i < n; i++)
        cap += vi->tok_len[sorted[i]];
    t->nodes = malloc(cap * sizeof *t->nodes);
    uint32_t *open = malloc(((size_t)vi->max_len + 2) * sizeof *open); /* node index per depth */
    if (!t->nodes || !open) {
        free(open);
        return false;
    }
    t->nodes[0] = (gr_tnode_t){.sub = 1, .tok = -1, .path_tok = n ? sorted[0] : -1, .depth = 0};
    uint32_t nn = 1;
    open[0] = 0;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    int32_t prev_tok = -1;
    for (int32_t k = 0; k < n; k++) {
        int32_t tok = sorted[k];
        const uint8_t *b = vi->tok_bytes[tok];
        size_t len = vi->tok_len[tok];
        /* common prefix with the previous token */
        size_t cp = 0;
        while (prev && cp < prev_len && cp < len && prev[cp] == b[cp])
            cp++;
        if (prev && cp == len && len == prev_len) { /* same bytes: chain */
            vi->dup_next[tok] = vi->dup_next[prev_tok];
            vi->dup_next[prev_tok] = tok;
            continue;
        }
        for (size_t d = cp + 1; d <= len; d++) {
            gr_tnode_t *nd = &t->nodes[nn];
            *nd = (gr_tnode_t){.sub = 1, .tok = d == len ? tok : -1, .path_tok = tok, .depth = (uint16_t)d,
                               .byte = b[d - 1]};
            open[d] = nn++;
        }
        prev = b;
        prev_len = len;
        prev_tok = tok;
    }
    t->n_nodes = nn;
    /* subtree sizes: a node's subtree ends where the next node of depth <= its own starts */
    uint32_t *stack = malloc(((size_t)vi->max_len + 2) * sizeof *stack);
    if (!stack) {
        free(open);
        return false;
    }
    int sp = 0;
    for (uint32_t i = 0; i <= nn; i++) {
        uint16_t d = i < nn ? t->nodes[i].depth : 0;
        while (sp > 0 && (i == nn || t->nodes[stack[sp - 1]].depth >= d)) {
            uint32_t j = stack[--sp];
            t->nodes[j].sub = i - j;
        }
        if (i < nn)
            stack[sp++] = i;
    }
    free(stack);
    free(open);
    return true;
}

gr_vindex_t *gr_vindex_create(const vocab_t *v, lf_err_t *err)
{
    gr_vindex_t *vi = calloc(1, sizeof *vi);
    if (!vi) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory indexing the vocabulary");
        return NULL;
    }
    int32_t nv = vocab_n_tokens(v);
    vi->vocab = v;
    vi->n_vocab = nv;
    vi->n_words = (nv + 31) / 32;
    vi->tok_bytes = calloc((size_t)nv, sizeof *vi->tok_bytes);
    vi->tok_len = calloc((size_t)nv, sizeof *vi->tok_len);
    vi->dup_next = malloc((size_t)nv * sizeof *vi->dup_next);
    vi->eog = malloc((size_t)nv * sizeof *vi->eog);
    int32_t *sorted = malloc((size_t)nv * sizeof *sorted), *rest = malloc((size_t)nv * sizeof *rest);
    int32_t *cps = malloc((size_t)nv * sizeof *cps);
    char *buf = malloc(MAX_TOKEN_BYTES);
    if (!vi->tok_bytes || !vi->tok_len || !vi->dup_next || !vi->eog || !sorted || !rest || !cps || !buf)
        goto oom;
    int32_t n_in = 0, n_rest = 0, max_cp = 0;
    for (int32_t t = 0; t < nv; t++) {
        vi->dup_next[t] = -1;
        cps[t] = -1;
        if (vocab_is_eog(v, t))
            vi->eog[vi->n_eog++] = t;
        if (vocab_is_control(v, t))
            continue;
        int n = vocab_token_to_piece(v, t, false, buf, MAX_TOKEN_BYTES);
        if (n <= 0 || n > MAX_TOKEN_BYTES)
            continue;
        vi->tok_bytes[t] = malloc((size_t)n);
        if (!vi->tok_bytes[t])
            goto oom;
        memcpy(vi->tok_bytes[t], buf, (size_t)n);
        vi->tok_len[t] = (uint16_t)n;
        if (n > vi->max_len)
            vi->max_len = (uint16_t)n;
        sorted[n_in++] = t;
        cps[t] = slice_cps(vi->tok_bytes[t], (size_t)n);
        if (cps[t] > max_cp)
            max_cp = cps[t];
    }
    qsort_r(sorted, (size_t)n_in, sizeof *sorted, cmp_tok, vi);
    for (int32_t i = 0; i < n_in; i++)
        if (cps[sorted[i]] < 0)
            rest[n_rest++] = sorted[i];
    if (!trie_build(vi, sorted, n_in, &vi->full))
        goto oom;
    /* the rest trie must not chain duplicates again */
    int32_t *saved = malloc((size_t)nv * sizeof *saved);
    if (!saved)
        goto oom;
    memcpy(saved, vi->dup_next, (size_t)nv * sizeof *saved);
    bool ok = trie_build(vi, rest, n_rest, &vi->rest);
    memcpy(vi->dup_next, saved, (size_t)nv * sizeof *saved);
    free(saved);
    if (!ok)
        goto oom;
    vi->slice_max_cp = max_cp;
    vi->slice_upto = calloc((size_t)max_cp + 1, sizeof *vi->slice_upto);
    if (!vi->slice_upto)
        goto oom;
    for (int32_t k = 0; k <= max_cp; k++) {
        vi->slice_upto[k] = calloc((size_t)vi->n_words, sizeof(uint32_t));
        if (!vi->slice_upto[k])
            goto oom;
    }
    vi->slice_first = calloc(128, sizeof *vi->slice_first);
    if (!vi->slice_first)
        goto oom;
    for (int32_t t = 0; t < nv; t++)
        if (cps[t] > 0) {
            gr_bits_set(vi->slice_upto[cps[t]], t);
            uint8_t b0 = vi->tok_bytes[t][0];
            if (b0 < 128) {
                if (!vi->slice_first[b0] && !(vi->slice_first[b0] = calloc((size_t)vi->n_words, sizeof(uint32_t))))
                    goto oom;
                gr_bits_set(vi->slice_first[b0], t);
            }
        }
    for (int32_t k = 1; k <= max_cp; k++)
        for (int32_t w = 0; w < vi->n_words; w++)
            vi->slice_upto[k][w] |= vi->slice_upto[k - 1][w];
    free(sorted);
    free(rest);
    free(cps);
    free(buf);
    return vi;
oom:
    free(sorted);
    free(rest);
    free(cps);
    free(buf);
    gr_vindex_free(vi);
    lf_err_set(err, LF_ERR_NOMEM, "out of memory indexing the vocabulary");
    return NULL;
}

void gr_vindex_free(gr_vindex_t *vi)
{
    if (!vi)
        return;
    for (int32_t t = 0; vi->tok_bytes && t < vi->n_vocab; t++)
        free(vi->tok_bytes[t]);
    free(vi->tok_bytes);
    free(vi->tok_len);
    free(vi->dup_next);
    free(vi->eog);
    free(vi->full.nodes);
    free(vi->rest.nodes);
    for (int32_t k = 0; vi->slice_upto && k <= vi->slice_max_cp; k++)
        free(vi->slice_upto[k]);
    free(vi->slice_upto);
    for (int b = 0; vi->slice_first && b < 128; b++)
        free(vi->slice_first[b]);
    free(vi->slice_first);
    free(vi);
}
