/* vindex.h - the vocabulary seen by the grammar engine: every token's bytes
 * in byte tries, plus the "slice" of JSON-string-safe tokens.
 *
 * Built once per vocabulary (a few hundred ms for 128k tokens) and shared
 * read-only by every grammar and thread. Tokens that render as nothing
 * without special output (control and unknown tokens) are not in the
 * tries: grammars reach them only as explicit special-token terminals.
 *
 * Tries: nodes in depth-first preorder (node 0 is the root), each with its
 * byte, depth, subtree size (so a dead subtree is skipped in one step) and
 * the token ending there (-1 none; tokens with identical bytes are chained
 * through dup_next). `full` holds every token; `rest` only the tokens that
 * are not in the slice.
 *
 * Slice: tokens that are valid UTF-8 whose code points are all >= U+0020
 * and neither '"' nor '\' - text that can sit raw inside a JSON string.
 * slice_upto[k] is the bitset of slice tokens of at most k code points
 * (k = 0..slice_max_cp), slice_first[b] those that start with ASCII byte
 * b. When a lexer state treats every such code point alike for k steps
 * (perhaps except a few first bytes), these tokens are decided without
 * walking (mask.c).
 *
 * Bitsets are n_words uint32 words, bit t of word t / 32.
 */
#ifndef LF_GR_VINDEX_H
#define LF_GR_VINDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/vocab/vocab.h"

typedef struct {
    uint32_t sub;      /* nodes in the subtree, this one included */
    int32_t tok;       /* token ending here, -1 none */
    int32_t path_tok;  /* a token whose bytes start with this node's path */
    uint16_t depth;
    uint8_t byte;
} gr_tnode_t;

typedef struct {
    gr_tnode_t *nodes;
    uint32_t n_nodes;
} gr_trie_t;

typedef struct gr_vindex {
    const vocab_t *vocab;
    int32_t n_vocab;
    int32_t n_words;
    uint8_t **tok_bytes;     /* [n_vocab] (NULL: not in the tries) */
    uint16_t *tok_len;
    int32_t *dup_next;       /* [n_vocab] next token with the same bytes, -1 */
    gr_trie_t full, rest;
    uint32_t **slice_upto;   /* [slice_max_cp + 1] bitsets */
    uint32_t **slice_first;  /* [128]: slice tokens starting with that ASCII byte (NULL: none) */
    int32_t slice_max_cp;
    int32_t *eog;            /* end-of-generation tokens */
    int32_t n_eog;
    uint16_t max_len;
} gr_vindex_t;

gr_vindex_t *gr_vindex_create(const vocab_t *v, lf_err_t *err);
void gr_vindex_free(gr_vindex_t *vi);

static inline void gr_bits_set(uint32_t *bits, int32_t t)
{
    bits[t >> 5] |= 1u << (t & 31);
}
static inline bool gr_bits_has(const uint32_t *bits, int32_t t)
{
    return (bits[t >> 5] >> (t & 31)) & 1u;
}

#endif
