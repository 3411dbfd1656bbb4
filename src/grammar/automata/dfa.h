/* dfa.h - deterministic byte automata: the terminals of every grammar.
 *
 * A gr_dfa_t is trimmed and canonically numbered: state 0 is the start,
 * every state can still reach an accepting state (transitions that could
 * not are -1, "dead"), states are numbered in breadth-first order of the
 * byte classes. It is minimal too, except the DFA of a sequence whose
 * pieces join without ambiguity (a key with its quotes, comma, colon and
 * whitespace: gr_dfa_from_expr glues the pieces' automata instead of
 * determinizing and minimizing again), which may keep equivalent states.
 * Equal tables mean equal languages, not the converse; (h1, h2) is a
 * content hash of the table, usable as a cache key. The empty language has
 * n_states == 0.
 *
 * Bytes map to classes (cls[256]) of equivalent bytes; next[s * n_classes +
 * c] is the successor. tag[] (NULL when unused) marks, for JSON-string
 * terminals, where each state sits relative to the string's code points:
 * GR_TAG_OUT outside the quotes, GR_TAG_BOUND between two code points of the
 * content, GR_TAG_INNER inside the bytes of one code point (or escape). A
 * transition from a content state into a BOUND state completes one code
 * point: that is how minLength/maxLength are counted (term.h).
 *
 * Construction fails with LF_ERR_UNSUPPORTED naming the limit that was hit
 * (automaton states or the compile deadline) or LF_ERR_NOMEM. A DFA is
 * immutable after construction and may be shared between threads.
 */
#ifndef LF_GR_DFA_H
#define LF_GR_DFA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/core/expr.h"

enum { GR_TAG_OUT = 0, GR_TAG_BOUND = 1, GR_TAG_INNER = 2 };

typedef struct gr_dfa {
    int32_t n_states;
    int32_t n_classes;
    uint8_t cls[256];
    int32_t *next;      /* [n_states * n_classes], -1: dead */
    uint8_t *accept;    /* [n_states] */
    uint8_t *tag;       /* [n_states] or NULL */
    uint64_t h1, h2;    /* content hash */
    int32_t extra_refs; /* owners beyond the first (gr_dfa_copy / gr_dfa_free) */
    int8_t narrow;      /* cached gr_dfa_narrow: 0 not yet known, 1 yes, 2 no */
} gr_dfa_t;

/* Compile-time limits; a zero field means the default. */
typedef struct {
    int64_t max_nfa_states;   /* default 2,000,000 */
    int64_t max_dfa_states;   /* per automaton, default 200,000 */
    int64_t deadline_ns;      /* CLOCK_MONOTONIC; 0: none */
} gr_limits_t;

/* The DFA of a regular expression (gr_ex_is_regular). A top-level
 * GR_EX_JSTR with bounds has them ignored when `counted` is true (the caller
 * counts code points with the tags, term.h); otherwise bounds are expanded. */
gr_dfa_t *gr_dfa_from_expr(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err);
/* a AND b / a AND NOT b. */
gr_dfa_t *gr_dfa_intersect(const gr_dfa_t *a, const gr_dfa_t *b, const gr_limits_t *lim, lf_err_t *err);
gr_dfa_t *gr_dfa_subtract(const gr_dfa_t *a, const gr_dfa_t *b, const gr_limits_t *lim, lf_err_t *err);
/* The language without the empty string. */
gr_dfa_t *gr_dfa_nonempty(const gr_dfa_t *a, const gr_limits_t *lim, lf_err_t *err);
/* Another owner of the same immutable automaton (a reference count, no copy:
 * thread-safe, O(1)); each owner calls gr_dfa_free once. */
gr_dfa_t *gr_dfa_copy(const gr_dfa_t *a);
/* A DFA from a full table: next[s * 256 + b] (-1 dead), accept[s], start
 * state; minimized and canonicalized like every other. */
gr_dfa_t *gr_dfa_from_table(int32_t n_states, const int32_t *next, const uint8_t *accept, int32_t start,
                            const gr_limits_t *lim, lf_err_t *err);
/* Drops one owner; the last frees the automaton. */
void gr_dfa_free(gr_dfa_t *d);

bool gr_dfa_equal(const gr_dfa_t *a, const gr_dfa_t *b);
static inline bool gr_dfa_nullable(const gr_dfa_t *d)
{
    return d->n_states > 0 && d->accept[0];
}
static inline int32_t gr_dfa_step(const gr_dfa_t *d, int32_t s, uint8_t b)
{
    return d->next[(int64_t)s * d->n_classes + d->cls[b]];
}
/* Whether the DFA accepts the whole byte string. */
bool gr_dfa_matches(const gr_dfa_t *d, const void *p, size_t n);
/* Whether the language is small and finite: at most GR_DFA_NARROW_MAX
 * strings (literals, punctuation, short enums). Computed once per automaton
 * and kept in it; stops counting at the first cycle or past the bound. */
#define GR_DFA_NARROW_MAX 256
bool gr_dfa_narrow(const gr_dfa_t *d);

/* Nanoseconds on CLOCK_MONOTONIC (for deadlines and timings). */
int64_t gr_now_ns(void);

#endif
