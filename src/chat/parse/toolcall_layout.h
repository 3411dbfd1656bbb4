/* toolcall_layout.h - how each tool-call format writes its calls, as a
 * small description the grammar engine uses to FORCE a call (tool_choice
 * "required" or a named function) or to constrain the arguments of calls
 * the model starts on its own ("auto" with strict functions).
 *
 * A format writes
 *   open CALL (call_sep CALL)* close
 *   CALL = call_prefix NAME name_suffix ARGUMENTS call_suffix
 * NAME is the function name as JSON string content, ARGUMENTS the JSON
 * object of the function's parameters, or, in the XML-style formats
 * (param_open set), one element per parameter:
 *   param_open KEY param_mid VALUE param_close, param_sep between them,
 * VALUE raw text when the parser reads the parameter as a raw string
 * (toolcall_param_raw_string) and the format has raw values, a JSON value
 * otherwise (pythonic: key=value, every value a literal); param_mid is
 * param_mid_raw or param_mid_json accordingly (they differ where the format
 * types the value with an attribute: DeepSeek's string="true|false"). The pieces may contain the format's
 * control tokens (markers[], e.g. "<tool_call>"): the grammar accepts such
 * a marker as the special token or as its text. auto_trigger is the text
 * whose appearance starts the calls in "auto" mode (NULL: the format has no
 * unambiguous start, so "auto" cannot constrain it).
 *
 * Spaces and newlines of the pieces: a run between two non-word characters
 * (JSON punctuation, markup) is free, the grammar takes 0 to
 * TOOLCALL_LAYOUT_FREE_MAX of them in any mix, so `<tool_call>{"name":` and
 * `<tool_call>\n{"name": ` are both calls; a run next to a word (deepseek's
 * "NAME\n```json", gigachat's "function call") is written as it is,
 * because it is the format's syntax (toolcall_layout_space_free).
 *
 * TOOLCALL_LAYOUT_NUMBER in a piece stands for a call number (one or more
 * digits): Cohere's "tool_call_id", Kimi K2's functions.NAME:INDEX;
 * TOOLCALL_LAYOUT_ID for a call id the model makes up (1 to 32 of
 * [A-Za-z0-9_-]): Solar Open's header. TOOLCALL_LAYOUT_JSON_TYPE for the
 * name of a JSON value's type other than string (number, integer,
 * boolean, array, object, null): Kimi K3's type="T", which makes the
 * parser read the value as JSON.
 *
 * The layouts come from the formats' descriptions (toolcall.h) for the
 * families JSON_OBJECT, JSON_NAMED, NAME_JSON (Gemma 4's object syntax
 * included), NAME_PARAMS (Kimi K3's call indices and typed values, and
 * MiniMax M3's element values, included), PYTHONIC and HARMONY, plus the
 * hermes, llama3_json and cohere_command3 rows
 * written by hand (the newlines their templates show, Cohere's call ids).
 * Formats without a layout (those variants) cannot force calls: the server
 * answers 400 for tool_choice "required" / named then.
 *
 * The returned layout is static and immutable (thread-safe).
 */
#ifndef LF_TOOLCALL_LAYOUT_H
#define LF_TOOLCALL_LAYOUT_H

#include <stdbool.h>

#include "chat/parse/toolcall.h"

#define TOOLCALL_LAYOUT_FREE_MAX 8
#define TOOLCALL_LAYOUT_NUMBER "\x01"
#define TOOLCALL_LAYOUT_ID "\x02"
#define TOOLCALL_LAYOUT_JSON_TYPE "\x03"

typedef struct {
    const char *open, *close;
    const char *call_prefix, *name_suffix, *call_suffix;
    const char *call_sep;
    const char *auto_trigger;
    const char *const *markers; /* NULL-terminated */
    /* XML-style parameters; param_open NULL: JSON arguments */
    const char *param_open, *param_mid_raw, *param_mid_json, *param_close, *param_sep;
    bool raw_newlines; /* one newline at each end of a raw value is markup (the
                        * parser drops it); false: the value is taken as it is */
    bool json_values;  /* every value a literal (pythonic: the parser reads
                        * Python literals, JSON ones included), none raw */
    bool at_once;      /* the output starts with the first call, no leading
                        * whitespace (functionary_v32: the prompt opened it) */
    const char *elem_close; /* element values (minimax_m3, param_close NULL):
                             * a parameter ends with elem_close KEY
                             * param_mid_raw, and a raw value never
                             * contains param_open; objects and arrays may
                             * nest as elements, array items named item_tag */
    const char *item_tag;
    const char *value_delim; /* NULL: JSON arguments; else Gemma 4's object
                              * syntax, strings between this delimiter (a
                              * marker), keys bare or delimited
                              * (gr_schema_opts_t.str_delim) */
} toolcall_force_layout_t;

/* The layout of fmt; NULL when the format has none. */
const toolcall_force_layout_t *toolcall_force_layout(toolcall_format_t fmt);

/* Whether the run of spaces / newlines piece[i..j) is free (above).
 * word_left / word_right: the piece's neighbour at that edge is a word
 * (the function name: name_suffix starts after it, call_prefix ends
 * before it). */
bool toolcall_layout_space_free(const char *piece, size_t i, size_t j, bool word_left, bool word_right);

/* Whether a free run of spaces / newlines may also come between two
 * adjacent pieces (the last character of left, the first of right, both
 * non-word): between the calls and their separator, after the opening
 * text, before the closing text, and between the arguments and call_suffix
 * (the JSON formats' `}, {` and `}\n</tool_call>`). Empty pieces: false. */
bool toolcall_layout_gap(const char *left, const char *right);

#endif
