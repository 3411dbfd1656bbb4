/* regex.h - ECMAScript regular expressions (the subset a grammar can
 * enforce) compiled into the expression IR over code points.
 *
 * Supported: alternation, groups ((...), (?:...), (?<name>...), Python's
 * (?P<name>...)), the quantifiers * + ? {n} {n,} {n,m} and their lazy forms
 * (same language), classes [...] / [^...] with ranges, ., \d \D \w \W \s \S,
 * \t \n \v \f \r \0 \cX \xHH \uHHHH \u{H...} (surrogate pairs joined),
 * identity escapes, \p{...}/\P{...} for the general categories L, Lu, Ll,
 * Lt, Lm, Lo, N, Nd, Nl, No, P, S, Z, C and their long names (Letter,
 * Number, ...), and the anchors ^ $ (\A \Z \z) where they can be resolved
 * statically (at the start / end of an alternative). A brace that does not
 * form a quantifier is a literal (ECMAScript Annex B, as browsers do).
 *
 * Refused (LF_ERR_UNSUPPORTED, the message names the construct):
 * backreferences, lookahead / lookbehind, \b \B word boundaries, anchors in
 * the middle of a pattern, inline flags.
 *
 * Modes: GR_REGEX_FULL - the whole text must match (vLLM guided_regex);
 * GR_REGEX_SEARCH - JSON Schema `pattern`: the text must contain a match
 * (unanchored ends match anything).
 *
 * The result lives in the arena; code point sets (GR_EX_CHARS) are encoded
 * by whoever embeds the expression (raw UTF-8, or JSON string content).
 */
#ifndef LF_GR_REGEX_H
#define LF_GR_REGEX_H

#include <stddef.h>

#include "common/status.h"
#include "grammar/core/expr.h"

typedef enum { GR_REGEX_FULL = 0, GR_REGEX_SEARCH = 1 } gr_regex_mode_t;

gr_ex_t *gr_regex_parse(gr_arena_t *a, const char *src, size_t len, gr_regex_mode_t mode, lf_err_t *err);

/* Code point sets of Unicode general categories ("L", "Letter", "Nd", ...)
 * built once per process (thread-safe); false if the name is unknown. */
bool gr_unicode_category(const char *name, size_t len, gr_cset_t *out);

#endif
