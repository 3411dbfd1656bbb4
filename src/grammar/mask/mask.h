/* mask.h - token masks: which tokens of the vocabulary keep a matcher's
 * text a prefix of some sentence of its grammar, plus the special tokens it
 * expects and end-of-generation when it is complete.
 *
 * Per active lexer run (earley.h) the work splits in two:
 *  - context-free part, cached per lexer-state *content* in a process-wide
 *    cache shared by every grammar: the tokens the run's terminals can read
 *    entirely while staying alive (acc), and the trie nodes where one of
 *    them may end inside a token (exits). Computing it walks the byte trie,
 *    skipping dead subtrees in one step; when the state treats every
 *    string-safe code point alike (a JSON string, with or without a length
 *    bound) the slice bitsets of vindex.h decide those tokens at once and
 *    only the other tokens are walked.
 *  - context part, per call: below each exit, the terminal is completed in
 *    the Earley chart (memoized per call) and the rest of the token is
 *    walked with the runs that follow.
 * So a mask costs one cache lookup and one bitset OR per run in the steady
 * state, plus the (short) walks below exits.
 *
 * The cache has a byte budget; entries in use are pinned and never
 * evicted. It is thread-safe; a gr_mask_scratch_t is per thread.
 */
#ifndef LF_GR_MASK_H
#define LF_GR_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/mask/vindex.h"
#include "grammar/match/earley.h"

typedef struct gr_mask_cache gr_mask_cache_t;
typedef struct gr_mask_scratch gr_mask_scratch_t;

typedef struct {
    uint64_t hits, misses, evictions;
    size_t bytes, entries;
} gr_mask_cache_stats_t;

gr_mask_cache_t *gr_mask_cache_create(size_t budget_bytes);
void gr_mask_cache_free(gr_mask_cache_t *c);
void gr_mask_cache_stats(gr_mask_cache_t *c, gr_mask_cache_stats_t *out);

gr_mask_scratch_t *gr_mask_scratch_create(const gr_vindex_t *vi);
void gr_mask_scratch_free(gr_mask_scratch_t *s);

/* Writes the mask of m into mask[vi->n_words] (end-of-generation tokens
 * included when m is accepting). LF_ERR_NOMEM, or LF_ERR_UNSUPPORTED when
 * the grammar hit its lexer-state limit. m is left as it was. */
lf_code_t gr_mask_compute(const gr_vindex_t *vi, gr_mask_cache_t *c, gr_mask_scratch_t *s, gr_matcher_t *m,
                          uint32_t *mask, lf_err_t *err);

#endif
