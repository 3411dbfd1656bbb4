/* gbnf.h - GBNF grammars as llama.cpp writes them, parsed into expression
 * rules (expr.h).
 *
 * Syntax: `name ::= alternatives` rules (names of letters, digits, '-' and
 * '_'), "literals" and [classes] / [^classes] over code points with the
 * escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any code
 * point), ( groups ), the postfix operators * + ? {m} {m,} {m,n}, # comments;
 * a rule ends at a newline unless inside parentheses or after '|'. Special
 * tokens: <[ID]> and <text> (the text must be one token of the vocabulary).
 * A token that is an ordinary (non-control) token stands for its text.
 * Refused with LF_ERR_UNSUPPORTED: negated tokens !<...>.
 *
 * Errors (LF_ERR_INVALID) give the line and what was expected; an
 * undefined rule or a missing start rule is an error. The start rule is
 * "root".
 */
#ifndef LF_GR_GBNF_H
#define LF_GR_GBNF_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/core/expr.h"

/* Resolves a token reference: the token id of `text` (exactly one token),
 * or -1; and whether a token id is special (control) - ordinary tokens are
 * replaced by their text (piece written to buf, length returned, -1 bad). */
typedef struct {
    int32_t (*find)(void *ctx, const char *text, size_t len);
    int (*piece)(void *ctx, int32_t id, char *buf, size_t cap, int *is_special);
    void *ctx;
} gr_token_resolver_t;

typedef struct {
    gr_ex_t **rules;       /* in the arena */
    char **names;          /* in the arena */
    int32_t n_rules;
    int32_t root;
} gr_gbnf_t;

/* Parses src into out (everything in arena a). resolver may be NULL (then
 * token references are an error). */
lf_code_t gr_gbnf_parse(gr_arena_t *a, const char *src, size_t len, const gr_token_resolver_t *resolver,
                        gr_gbnf_t *out, lf_err_t *err);

#endif
