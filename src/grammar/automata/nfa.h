/* nfa.h - Thompson NFAs over bytes, built from regular expressions of the
 * IR (expr.h). Internal to the automata folder: dfa_build.c determinizes them.
 *
 * Code point sets become UTF-8 byte sequences (only valid UTF-8: no
 * surrogates, no overlongs); inside JSON string content they become the
 * JSON encodings (raw UTF-8 for characters JSON allows raw, the short
 * escapes \" \\ \/ \b \f \n \r \t, and \u00XX in either hex case for the
 * other control characters; with a JSTR's esc_lt, '<' only as \u003c in
 * either case). States carry the tags of dfa.h.
 */
#ifndef LF_GR_NFA_H
#define LF_GR_NFA_H

#include <stdint.h>

#include "common/status.h"
#include "grammar/automata/dfa.h"

typedef struct {
    int32_t to, next;   /* target, next edge of the same state (-1 end) */
    uint8_t lo, hi;     /* byte range; lo > hi: epsilon */
} gr_nfa_edge_t;

typedef struct {
    int32_t *first;     /* [n] first edge, -1 none */
    uint8_t *tag;       /* [n] */
    int32_t n, cap;
    gr_nfa_edge_t *e;
    int32_t ne, ecap;
    int32_t start, accept;
    const gr_limits_t *lim;
    lf_err_t *err;
    bool failed;
    const gr_ex_t *counted_top; /* JSTR whose bounds the caller counts */
    bool esc_lt;                /* inside a JSTR with esc_lt */
    int64_t checks;
} gr_nfa_t;

/* Builds the NFA of e into nfa (zeroed before). LF_OK or an error. */
lf_code_t gr_nfa_build(gr_nfa_t *nfa, const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err);
void gr_nfa_free(gr_nfa_t *nfa);

#endif
