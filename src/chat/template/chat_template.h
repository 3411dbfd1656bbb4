/* chat_template.h - render Hugging Face chat templates (a Jinja2 subset).
 *
 * Renders exactly like transformers' apply_chat_template: Jinja2's
 * ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
 * loopcontrols, keep_trailing_newline off, the default Undefined, the globals
 * raise_exception / strftime_now / namespace / range, and tojson as
 * json.dumps(ensure_ascii=False) with Python's separators and key order.
 *
 * Usage: compile once, render per request. A compiled template is immutable,
 * so any number of threads may render it concurrently. Each render works in
 * its own arena; its only outputs are the malloc'ed text and the error.
 *
 * Context: a json-c object whose members become template variables
 * (messages, tools, add_generation_prompt, bos_token, eos_token, and any
 * extra variables). JSON null becomes Python None; objects keep their key
 * order. A variable that must be *undefined* (e.g. a missing bos_token) is
 * simply absent from the object.
 *
 * Supported Jinja2: {{ }}, {% %}, {# #}, whitespace control and raw blocks;
 * if/elif/else, for (else, loop filter, unpacking, loop.* incl. previtem/
 * nextitem/cycle), break/continue, set (incl. tuple, block set with filters,
 * namespace attributes), macros (defaults, keyword arguments, closures,
 * call blocks with caller()), filter blocks, {% generation %}; all Python
 * operators incl. chained comparisons, `%` string formatting, slicing;
 * the filters and tests chat templates use (see jinja_filters.c), str
 * methods (strip, split, replace, find, partition, removeprefix, zfill,
 * ...) and dict / list methods (jinja_builtins.c); dict keys of any
 * hashable type (Python's 1 == 1.0 == True). Values behave like Python's (str()/repr(),
 * == across numbers, dict views, generators from map/select are lazy and
 * refused by tojson/length). Not supported: include/extends/import, recursive
 * loops, dict/list mutation (the sandbox forbids it), the filters pprint/
 * urlize/xmlattr/filesizeformat/striptags/random/urlencode (they fail when
 * evaluated), and case mapping beyond Latin,
 * Greek and Cyrillic. Message content given as a list of parts is passed
 * through as is (transformers does the same); templates that expect a
 * string then fail or print the list.
 *
 * Clock: strftime_now formats the injected time (opts.now) or the current
 * time, in the local time zone, like transformers' datetime.now().
 *
 * Extensions (opts.extensions, off by default): transformers' sandbox
 * refuses list and dict mutation and has no from_json filter, so some real
 * templates cannot render there (Kimi K2's tool_response_queue.ids.append,
 * DeepSeek V3.2's `arguments | from_json`); llama.cpp's engine allows
 * them. With extensions: list.append / extend / insert / pop / remove /
 * clear, dict.update / pop / setdefault, and `s | from_json` (a JSON text
 * to a value). The server renders with them (a client must not fail where
 * llama.cpp serves it); `llm-fcgi chat-template` and the golden tests
 * without (transformers exactly).
 *
 * Errors: template syntax errors, runtime errors and raise_exception() all
 * return LF_ERR_INVALID. For raise_exception the message is exactly the
 * template's own message and the `raised` out-parameter is set. Runaway
 * templates (huge output, deep macro recursion, endless loops) fail with
 * LF_ERR_INVALID too; rendering never crashes or hangs.
 */
#ifndef LF_CHAT_TEMPLATE_H
#define LF_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include "common/status.h"

typedef struct chat_template chat_template_t;

/* Limits and clock of one render. Zero fields take the defaults. */
typedef struct {
    size_t max_output;   /* bytes of rendered text (default 4 MiB) */
    size_t max_depth;    /* macro call nesting (default 64) */
    uint64_t max_steps;  /* work budget: loop iterations, calls and elements
                            scanned by filters/`in` (default 20,000,000) */
    size_t max_memory;   /* bytes of working memory (default 256 MiB) */
    time_t now;          /* strftime_now clock; 0 = the real current time */
    bool extensions;     /* llama.cpp's additions to the sandbox, off by
                          * default (see "Extensions") */
} chat_render_opts_t;

/* Parses template source `src` (`len` bytes, need not be NUL-terminated).
 * On success *out owns a compiled template (free with chat_template_free).
 * Fails with LF_ERR_INVALID and a "template syntax error (line N): ..."
 * message, or LF_ERR_NOMEM. */
lf_code_t chat_template_compile(const char *src, size_t len, chat_template_t **out, lf_err_t *err);
void chat_template_free(chat_template_t *t); /* accepts NULL */

/* Renders `t` with the variables of `context` (a JSON object; NULL = none).
 * opts may be NULL. On success *out is a NUL-terminated malloc'ed string
 * (caller frees) and *out_len (if not NULL) its length; on failure *out is
 * NULL. *raised (if not NULL) tells whether the template called
 * raise_exception. */
lf_code_t chat_template_render(const chat_template_t *t, json_object *context, const chat_render_opts_t *opts,
                               char **out, size_t *out_len, bool *raised, lf_err_t *err);

/* Whether the template reads the variable `name` anywhere (a name in an
 * expression; text that merely contains the word does not count). For
 * callers that provide optional variables only to templates that use them
 * (firefunction's `functions` and `datetime`). */
bool chat_template_reads(const chat_template_t *t, const char *name);

/* compile + render + free, for one-off use (tests, the CLI). */
lf_code_t chat_template_render_string(const char *src, json_object *context, const chat_render_opts_t *opts,
                                      char **out, lf_err_t *err);

/* The fallback template for models without tokenizer.chat_template
 * (ChatML, as llama.cpp uses). */
extern const char chat_template_chatml[];

/* Builds the render context of an OpenAI chat request the way transformers
 * does: messages, tools and documents (null when absent), add_generation_prompt
 * (default true), bos_token / eos_token when not NULL, then the members of
 * request.chat_template_kwargs (they may override the others). Returns a new
 * json object (caller puts it) or NULL with err set (LF_ERR_INVALID when
 * messages is missing or not an array). */
json_object *chat_template_context(json_object *request, const char *bos_token, const char *eos_token,
                                   lf_err_t *err);

#endif
