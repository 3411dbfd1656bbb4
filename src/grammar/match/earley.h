/* earley.h - the grammar matcher: an Earley parser over terminals whose
 * ends are found by the lexer (lexer.h), fed byte by byte.
 *
 * State: Earley sets E_0..E_k (one per parse position where some terminal
 * ended; items are (dotted position, origin set)), and "runs": for each
 * set that expects byte terminals, the combined lexer state of the bytes
 * read since that set. Feeding a byte advances every run; a run whose
 * lexer state accepts completes its terminals, which creates a new set
 * (scan, then prediction and completion, with the nullable rule of Aycock
 * and Horspool) and a new run. A terminal may end and go on at once (a
 * number after "1" may continue with "2"): both paths are kept, which makes
 * the matcher exact for any context-free grammar - no longest-match rule.
 *
 * The matcher is accepting when a set created at the current byte holds
 * "S' -> S .". Special tokens (GR_TERM_TOKEN) are fed as tokens, valid only
 * where the current set expects them.
 *
 * A closed set's items are sorted by the symbol after their dot, so a
 * completion or a scan finds the items waiting for a symbol in an origin set
 * by binary search: its cost does not grow with the set (an object of
 * hundreds of optional properties predicts them all at each position).
 *
 * Memory grows with the text (sets are kept for completion); nothing is
 * allocated per byte once the arrays are large enough. Rollback:
 * gr_matcher_save / gr_matcher_restore (constant time). A matcher is used
 * by one thread at a time; it shares the grammar's lexer (lexer.h).
 */
#ifndef LF_GR_EARLEY_H
#define LF_GR_EARLEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/cfg/cfg.h"
#include "grammar/match/lexer.h"

typedef struct {
    uint32_t dr, origin;
} gr_item_t;

typedef struct {
    int32_t lex;     /* lexer state id */
    int32_t origin;  /* set the terminals started from */
} gr_run_t;

enum { GR_SET_ACCEPTS = 1, GR_SET_TOKENS = 2 };

typedef struct gr_matcher {
    const gr_cfg_t *g;
    gr_lexer_t *lx;
    gr_item_t *items;
    size_t n_items, cap_items;
    uint32_t *set_start;     /* [n_sets + 1] */
    int64_t *set_pos;        /* byte position of each set */
    uint8_t *set_flags;      /* GR_SET_ACCEPTS | GR_SET_TOKENS */
    int32_t n_sets, cap_sets;
    gr_run_t *runs;
    int32_t n_runs, cap_runs;
    gr_run_t *runs_tmp;      /* scratch of the same capacity */
    int64_t pos;             /* bytes consumed */
    bool failed;             /* out of memory / lexer full: unusable */
    lf_code_t fail_code;
    /* closure scratch: dedup table over (dr, origin) of the set being built */
    uint64_t *dedup;
    uint32_t dedup_mask;
    uint32_t *dedup_gen;
    uint32_t gen;
    uint32_t *pred_gen;      /* [n_nts]: generation stamp of predicted nts */
    uint32_t *term_gen;      /* [n_terms]: stamp of expected terminals */
    int32_t *expect;         /* [n_terms] scratch: terminals expected by a set */
    uint64_t *sort_keys;     /* scratch of set_close's sort */
    gr_item_t *sort_items;
    size_t cap_sort;
} gr_matcher_t;

typedef struct {
    int32_t n_sets;
    size_t n_items;
    int32_t n_runs;
    int64_t pos;
    gr_run_t runs[8];        /* inline copy when n_runs <= 8 */
    gr_run_t *heap;          /* else malloc'd (restore frees it) */
} gr_mcheck_t;

/* NULL on allocation failure. The matcher starts at the beginning of the
 * text (E_0 = prediction of the start symbol). */
gr_matcher_t *gr_matcher_create(const gr_cfg_t *g, gr_lexer_t *lx);
void gr_matcher_free(gr_matcher_t *m);
/* Feeds one byte: false if no parse can continue with it (the matcher is
 * then in an undefined state: restore a checkpoint). */
bool gr_matcher_feed_byte(gr_matcher_t *m, uint8_t b);
/* Feeds bytes; on failure restores the state before the call. */
bool gr_matcher_feed_bytes(gr_matcher_t *m, const uint8_t *p, size_t n);
/* Feeds a special token (a GR_TERM_TOKEN terminal). false: not expected
 * here (state unchanged). */
bool gr_matcher_feed_special(gr_matcher_t *m, int32_t token);
/* Whether the text so far is a complete sentence of the grammar. */
bool gr_matcher_accepting(const gr_matcher_t *m);
/* Whether any byte or special token can follow. */
bool gr_matcher_can_continue(const gr_matcher_t *m);
/* Special tokens allowed now (those the newest set, if created at the
 * current byte, expects); writes up to cap ids, returns the count. */
int32_t gr_matcher_special_allowed(const gr_matcher_t *m, int32_t *out, int32_t cap);

void gr_matcher_save(const gr_matcher_t *m, gr_mcheck_t *c);
void gr_matcher_restore(gr_matcher_t *m, gr_mcheck_t *c);
void gr_mcheck_drop(gr_mcheck_t *c); /* frees a checkpoint not restored */

/* ---- for the mask computation (mask.c) ---- */
typedef struct {
    int32_t origin;
    int32_t lex;     /* the accepting lexer state (its acc terminals complete) */
} gr_completion_t;
/* Appends a new set from completions (scan + closure) at the current
 * position; returns its index, or -1 when it is empty / on failure. Its
 * runs (0..2: narrow terminals, the others) go to run[0..*n_run). */
int32_t gr_matcher_complete(gr_matcher_t *m, const gr_completion_t *c, int32_t n, gr_run_t *run, int32_t *n_run);
/* Truncates sets and items (undo of gr_matcher_complete in a walk). */
void gr_matcher_truncate(gr_matcher_t *m, int32_t n_sets, size_t n_items);
/* Whether set k holds the accepting item. */
bool gr_matcher_set_accepts(const gr_matcher_t *m, int32_t k);

#endif
