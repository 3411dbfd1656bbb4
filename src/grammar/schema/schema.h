/* schema.h - JSON Schema (draft 2020-12, 2019-09, 07, 06, 04) compiled to
 * expression rules (expr.h) that generate exactly the JSON texts valid for
 * the schema.
 *
 * Enforced: type (arrays of types, null), enum, const, properties,
 * required, additionalProperties (false / true / a schema),
 * patternProperties, propertyNames, minProperties/maxProperties, items
 * (schema; array form of drafts <= 2019-09 with additionalItems),
 * prefixItems, minItems/maxItems, minLength/maxLength (code points),
 * pattern (ECMAScript, regex.h), minimum/maximum/exclusiveMinimum/
 * exclusiveMaximum (exact decimal comparison; integers exactly), multipleOf
 * (integers and decimal steps), anyOf, oneOf (when the alternatives are
 * provably disjoint), allOf (merged), not (of required / const / enum /
 * type), $ref to local pointers, anchors and embedded $id resources
 * (recursion included), $defs/definitions, boolean schemas, and the
 * formats date-time, date, time, email, uuid, ipv4, ipv6, uri, hostname.
 * Other formats are annotations (the 2020-12 default), as are title,
 * description, default, examples, unknown keywords.
 *
 * Anything else that asserts (uniqueItems: true, contains, if/then/else,
 * dependentRequired/dependentSchemas/dependencies, unevaluated*, other `not`
 * forms, oneOf with overlapping alternatives, remote $ref) fails with
 * LF_ERR_UNSUPPORTED and a message that starts with the keyword in quotes,
 * unless opts.strict is false: then such a keyword is ignored (best effort;
 * oneOf becomes anyOf).
 *
 * Output shape: objects list the schema's properties in the order of
 * `properties` (merged allOf schemas: first schema's order, then new ones),
 * additional properties after them; whitespace between tokens is optional
 * and bounded (a space, or one or two newlines and up to 20 spaces/tabs),
 * so a run never grows without limit; compact JSON is always accepted.
 * Numbers likewise: at most 64 integer and 64 fraction digits, 4 exponent
 * digits, and an integer's fraction (JSON Schema's "2.0") at most 16
 * zeros.
 */
#ifndef LF_GR_SCHEMA_H
#define LF_GR_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "grammar/automata/dfa.h"
#include "grammar/core/expr.h"

struct json_object;

typedef struct {
    bool strict;               /* default true: unenforceable keyword -> error */
    bool no_whitespace;        /* compact output only (no optional spaces) */
    const gr_limits_t *lim;
    /* NULL: JSON text. Else the delimited raw syntax of Gemma 4's tool-call
     * arguments: every string (values and keys) is the delimiter, its text
     * unescaped and never containing the delimiter, the delimiter again;
     * a key may also be bare (not starting with a space or the delimiter's
     * first byte, none of ":,{}[" in it) with its ':' right after it;
     * numbers, literals, arrays and objects as in JSON. str_delim_ex: how
     * the delimiter may be written (e.g. its control token or its text);
     * NULL: its text. */
    const char *str_delim;
    gr_ex_t *str_delim_ex;
    /* JSON text only: no raw '<' inside strings (written \u003c, the same
     * value), so a value inside markup (an XML-style tool-call parameter)
     * can never contain the markup's closing tag */
    bool escape_lt;
    /* The document the schema is a part of ($ref, $id and anchors resolve
     * in it: a tool parameter's schema referring to the parameters'
     * $defs); NULL: the schema itself. */
    const struct json_object *doc;
} gr_schema_opts_t;

/* Compiles `schema` (a JSON value: object or boolean), appending its rules
 * to R (expressions in arena a). *value receives the expression of one
 * value valid for the schema (no surrounding whitespace). On failure R may
 * hold partial rules: the caller frees R. */
lf_code_t gr_schema_compile(const struct json_object *schema, const gr_schema_opts_t *opts, gr_arena_t *a,
                            gr_rules_t *R, gr_ex_t **value, lf_err_t *err);

/* Optional bounded whitespace as the schema compiler writes it. */
gr_ex_t *gr_schema_ws(gr_arena_t *a, const gr_schema_opts_t *opts);

/* The regular expression (ECMAScript subset, whole string) of a `format`
 * the compiler enforces (date-time, date, time, email, uuid, ipv4, ipv6,
 * uri, hostname); NULL for the others (annotations). */
const char *gr_schema_format_regex(const char *name);

#endif
