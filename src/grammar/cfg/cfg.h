/* cfg.h - a compiled grammar: terminals (byte automata, counted JSON
 * strings, special tokens) and productions over them, built from rules in
 * the expression IR.
 *
 * Building (gr_cfg_build): each rule is an expression; alternatives become
 * productions, repetition of non-regular parts becomes left-recursive
 * helper rules (Earley parses left recursion in linear time), and maximal
 * runs of regular pieces are fused into one terminal DFA - except JSON
 * strings, which are always terminals of their own (their lexer states are
 * then shared with every other grammar that has the same string, so their
 * token masks are cached once per process, mask.h). Terminals never match
 * the empty string: a nullable piece becomes N ::= e | T'. Unproductive
 * productions are dropped; a grammar whose start matches nothing is an
 * error ("admits no value").
 *
 * Symbols: a value >= 0 is a nonterminal, GR_SYM_TERM(t) = -(t + 2) a
 * terminal, GR_SYM_END (-1) ends a production. Dotted positions ("dr") index
 * syms[]; dr_prod[dr] is the production of that position. Production 0 is
 * the augmented start S' -> start.
 *
 * A gr_cfg_t is immutable after building and shared by every matcher of
 * the grammar (threads included). Free with gr_cfg_free.
 */
#ifndef LF_GR_CFG_H
#define LF_GR_CFG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/automata/dfa.h"
#include "grammar/core/expr.h"

typedef enum { GR_TERM_DFA = 0, GR_TERM_COUNTED, GR_TERM_TOKEN } gr_term_kind_t;

typedef struct {
    gr_term_kind_t kind;
    gr_dfa_t *dfa;          /* DFA, COUNTED (owned) */
    int32_t min, max;       /* COUNTED: code points, max < 0 unbounded */
    int32_t cap;            /* COUNTED: counts saturate here (max, or min) */
    uint8_t *live;          /* COUNTED: [(cap + 1) * n_states] */
    int32_t token;          /* TOKEN */
    bool narrow;            /* DFA of a small finite language (literals, punctuation,
                               enums): lexed in its own run, see earley.h */
    uint64_t h1, h2;        /* content hash (language identity) */
} gr_term_t;

#define GR_SYM_END (-1)
#define GR_SYM_TERM(t) (-(t) - 2)
#define GR_SYM_IS_TERM(s) ((s) <= -2)
#define GR_SYM_TERM_ID(s) (-(s) - 2)

typedef struct {
    int32_t n_terms;
    gr_term_t *terms;
    int32_t n_nts;          /* nonterminals */
    int32_t n_prods;
    int32_t *prod_start;    /* [n_prods]: dr of the first symbol */
    int32_t *prod_lhs;      /* [n_prods] */
    int32_t n_syms;
    int32_t *syms;          /* [n_syms] */
    int32_t *dr_prod;       /* [n_syms] */
    int32_t *nt_first;      /* [n_nts + 1]: productions of nt in nt_prods[] */
    int32_t *nt_prods;
    bool *nullable;         /* [n_nts] */
    int32_t start;          /* the augmented start nonterminal */
    int32_t accept_dr;      /* dr of "S' -> start ." */
    bool has_tokens;        /* some terminal is a special token */
} gr_cfg_t;

/* rules[0..n_rules) are expressions referring to rules by number; `start`
 * is the start rule. Limits as in dfa.h (plus max_dfa_states per terminal).
 * NULL + err: LF_ERR_UNSUPPORTED (a limit, named), LF_ERR_INVALID (the
 * grammar matches nothing), LF_ERR_NOMEM. */
gr_cfg_t *gr_cfg_build(gr_ex_t *const *rules, int32_t n_rules, int32_t start, const gr_limits_t *lim,
                       lf_err_t *err);
void gr_cfg_free(gr_cfg_t *g);

/* A counted terminal's state (s, count c) moving to automaton state s2: a
 * move from the content into a BOUND state completes one code point
 * (counted up to cap; past max the string dies). -1 when dead. */
static inline int32_t gr_term_counted_move(const gr_term_t *t, int32_t s, int32_t c, int32_t s2)
{
    const gr_dfa_t *d = t->dfa;
    if (d->tag[s] != GR_TAG_OUT && d->tag[s2] == GR_TAG_BOUND) {
        if (c < t->cap)
            c++;
        else if (t->max >= 0)
            return -1;
    }
    int32_t q2 = c * d->n_states + s2;
    return t->live[q2] ? q2 : -1;
}

/* Terminal stepping: state 0 is the start; -1 is dead. */
static inline int32_t gr_term_step(const gr_term_t *t, int32_t q, uint8_t b)
{
    const gr_dfa_t *d = t->dfa;
    if (t->kind == GR_TERM_DFA)
        return gr_dfa_step(d, q, b);
    if (t->kind != GR_TERM_COUNTED)
        return -1;
    int32_t ns = d->n_states, s = q % ns;
    int32_t s2 = gr_dfa_step(d, s, b);
    return s2 < 0 ? -1 : gr_term_counted_move(t, s, q / ns, s2);
}

static inline bool gr_term_accepting(const gr_term_t *t, int32_t q)
{
    if (t->kind == GR_TERM_DFA)
        return t->dfa->accept[q];
    if (t->kind != GR_TERM_COUNTED)
        return false;
    int32_t ns = t->dfa->n_states;
    return t->dfa->accept[q % ns] && q / ns >= t->min;
}

/* A human-readable dump (--print): rules with terminals as regex-like
 * summaries. Returns a malloc'd string (caller frees) or NULL. */
char *gr_cfg_dump(const gr_cfg_t *g);

#endif
