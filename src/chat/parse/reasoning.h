/* reasoning.h - split generated text into reasoning and content.
 *
 * Reasoning models write their thinking inside markup ("<think>" ...
 * "</think>", "[THINK]" ... "[/THINK]", harmony's analysis channel ...);
 * the API returns it in message.reasoning_content (delta.reasoning_content
 * when streaming) and the rest in content. The parser is fed the decoded
 * text of each generated token (any split is fine: the server's incremental
 * detokenizer keeps UTF-8 characters whole) and returns, per push, the text
 * that is now decided, as an ordered list of segments (reasoning or
 * content). Markup never reaches either field: a possible marker prefix at
 * the end of the text ("</th") is held back until the next bytes decide it,
 * so the result never depends on how the text was split into pieces.
 *
 * Formats (names as vLLM's --reasoning-parser; reasoning_format() gives
 * each one's description, the table is in reasoning_formats.c):
 *   Marker formats - one reasoning block between an open and a close marker
 *   (each a set of alternatives):
 *     qwen3        <think> ... </think>
 *     deepseek_r1  <think> ... </think>, output starts inside (R1 templates
 *                  open the block in the prompt)
 *     deepseek_v3  <think> ... </think> when the prompt opened the block
 *                  (DeepSeek V3.1+ thinking on), else no reasoning at all
 *     glm45        <think> ... </think> (GLM-4.5 / 4.6 / 4.7)
 *     kimi_k2      <think> ... </think>, output starts inside; the tool
 *                  section <|tool_calls_section_begin|> also ends it (and
 *                  stays in the content for the tool-call parser)
 *     minimax_m2   <think> ... </think>, output starts inside
 *     seed_oss     <seed:think> ... </seed:think>
 *     mistral      [THINK] ... [/THINK] (Magistral, Ministral 3 Reasoning)
 *     granite      "Here is my thought process:" / "Here's my thought
 *                  process:" / <think> ... "Here is my response:" / "Here's
 *                  my response:" / </think>; <response> and </response>
 *                  are dropped from the content (Granite 3.2 / 3.3)
 *     generic      open and close markers given in the configuration
 *     gemma4       <|channel> [thought\n] ... <channel|>, several blocks; a
 *                  <|tool_call> also ends one (and stays content)
 *     kimi_k3      <|open|>think<|sep|> ... <|close|>think<|sep|> or
 *                  <|open|>response<|sep|>; the response markers and
 *                  <|close|>message<|sep|> are dropped; <|open|>tools<|sep|>
 *                  ends it and stays content
 *     cohere_command3  <|START_THINKING|> ... <|END_THINKING|>; the
 *                  <|START_RESPONSE|> / <|START_TEXT|> wrappers are dropped
 *     apertus      <|inner_prefix|> ... <|inner_suffix|>
 *     apriel       starts inside ("Here are my reasoning steps:\n" opens
 *                  it) ... [BEGIN FINAL RESPONSE]; [END FINAL RESPONSE] and
 *                  <|end|> dropped
 *     minimax_m3   <mm:think> ... </mm:think>
 *     hy_v3        <think:opensource> ... </think:opensource>
 *     solar_open   <|think|> ... <|end|>; <|begin|>assistant, <|content|>,
 *                  <|end|>, <|flush|> dropped (<|tool_calls|> stays content)
 *     deepseek_v3 also ends at the DSML tool block (V3.2 / V4), which stays
 *     content.
 *   The state machine of the marker formats:
 *     - the output starts in content, or inside the block when created with
 *       starts_in_reasoning (reasoning_starts_inside() on the prompt);
 *     - in content, an open marker opens the block (dropped); an orphan
 *       close marker before any block is dropped and ends the search (the
 *       model thought without the opening marker, which a stream cannot
 *       take back: the text before it stays content);
 *     - when starting inside, an open marker at the very start of the
 *       output is a redundant re-open and is dropped too;
 *     - inside, a close marker ends the block (dropped); an implicit close
 *       marker (kimi_k2's tool section) ends it and is content;
 *     - a format's open_label right after an open marker is dropped;
 *     - there is one block: after it, the rest is content verbatim except
 *       for the format's dropped markup (multi_block formats: another open
 *       marker opens another block, stray close markers are dropped);
 *     - text is not trimmed (content usually starts with "\n\n", as the
 *       model wrote it; vLLM does the same);
 *     - an unterminated block (max_tokens hit) is all reasoning.
 *   gpt-oss (harmony): the output is a sequence of messages, each a header
 *     (<|start|>ROLE, <|channel|>CHANNEL, to=RECIPIENT, <|constrain|>TYPE)
 *     ended by <|message|>, a body, and <|end|>, <|return|> or <|call|>.
 *     Bodies of the analysis channel are reasoning, of final and commentary
 *     content; headers and terminators are dropped. A message addressed to
 *     a function (to=functions.NAME) is a tool call: it goes to the content
 *     verbatim, markup included, for the gpt-oss tool-call parser
 *     (toolcall.h); a message to another recipient (a built-in tool:
 *     browser.*, python, container.*) is reasoning on the analysis channel
 *     and dropped on the others, as vLLM does. Text outside any message is
 *     content.
 *   muse_glimmer: the same message machine for Muse Glimmer's ATEM
 *     protocol: the prompt ends with "<|start|>assistant", each message is
 *     " to=RECIPIENT<|message|>BODY" ended by <|eom|> / <|eot|>; to=self is
 *     reasoning, to=user (or none) content, another recipient a tool call
 *     whose body (an <atem:function_calls> block) goes to the content for
 *     the muse_glimmer tool-call parser (headers and terminators dropped).
 *
 * Token accounting (usage.completion_tokens_details.reasoning_tokens): after
 * each push, out.token_in_reasoning says whether that piece belongs to the
 * reasoning: true when the parser was inside the reasoning at any point
 * while consuming the piece (so the pieces carrying the markers count as
 * reasoning, like the tokens between them).
 *
 * Ownership and threads: a reasoning_t belongs to one choice of one request
 * (one stream); it is not thread-safe. Segment texts point into the parser
 * and stay valid until the next push/finish/free on it. The descriptions
 * returned by reasoning_format() are static.
 */
#ifndef LF_REASONING_H
#define LF_REASONING_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef enum {
    REASONING_MODE_NONE = 0,
    REASONING_MODE_DEEPSEEK_R1,
    REASONING_MODE_QWEN3,
    REASONING_MODE_DEEPSEEK_V3,
    REASONING_MODE_GPT_OSS,
    REASONING_MODE_MISTRAL,
    REASONING_MODE_GRANITE,
    REASONING_MODE_GLM45,
    REASONING_MODE_KIMI_K2,
    REASONING_MODE_MINIMAX_M2,
    REASONING_MODE_SEED_OSS,
    REASONING_MODE_GENERIC,
    REASONING_MODE_GEMMA4,
    REASONING_MODE_KIMI_K3,
    REASONING_MODE_COHERE,
    REASONING_MODE_APERTUS,
    REASONING_MODE_APRIEL,
    REASONING_MODE_MINIMAX_M3,
    REASONING_MODE_HY_V3,
    REASONING_MODE_SOLAR_OPEN,
    REASONING_MODE_MUSE_GLIMMER,
    REASONING_MODE_COUNT
} reasoning_mode_t;

/* Where the output starts (marker formats). */
typedef enum {
    REASONING_START_CONTENT = 0, /* in content, unless the prompt opened the block */
    REASONING_START_INSIDE,      /* inside, unless the prompt closed the block */
    REASONING_START_TOGGLE,      /* inside when the prompt opened the block, else
                                  * no reasoning at all (the thinking switch) */
    REASONING_START_HARMONY      /* gpt-oss, muse_glimmer: addressed messages, not markers */
} reasoning_start_t;

/* What a format looks like (for parsing, detection, grammars and docs).
 * Marker lists are NULL-terminated alternatives, NULL when unused. */
typedef struct {
    reasoning_mode_t mode;
    const char *name;                   /* the --reasoning-parser name */
    const char *const *open;            /* open the block */
    const char *const *close;           /* close it (dropped) */
    const char *const *implicit_close;  /* close it and stay content */
    const char *const *drop;            /* markup dropped from the content */
    const char *open_label;             /* text right after an open marker that is
                                         * markup, dropped when present (gemma4's
                                         * "thought\n"); NULL: none */
    bool multi_block;                   /* after a block, an open marker opens another
                                         * one and stray close markers are dropped */
    reasoning_start_t start;
    const char *const *tokens;          /* texts of the control tokens the parser
                                         * must see (the detokenizer renders them) */
} reasoning_format_t;

/* The description of a mode; NULL for NONE, GENERIC (its markers are
 * configured) and unknown values. */
const reasoning_format_t *reasoning_format(reasoning_mode_t mode);

/* One parser's configuration. GENERIC needs open and close (non-empty,
 * at most REASONING_MARKER_MAX bytes each); the other modes ignore them. */
#define REASONING_MARKER_MAX 64
typedef struct {
    reasoning_mode_t mode;
    bool starts_in_reasoning;
    const char *open, *close;
} reasoning_config_t;

typedef enum {
    REASONING_SEG_REASONING = 0,
    REASONING_SEG_CONTENT
} reasoning_seg_kind_t;

typedef struct {
    reasoning_seg_kind_t kind;
    const char *text; /* not NUL-terminated; len > 0 */
    size_t len;
} reasoning_seg_t;

typedef struct {
    const reasoning_seg_t *segs; /* in output order; owned by the parser */
    int n;                       /* number of segments */
    bool token_in_reasoning;     /* see "Token accounting" */
} reasoning_out_t;

typedef struct reasoning reasoning_t;

/* Creates a parser. Returns NULL and fills err (LF_ERR_INVALID for an
 * unknown mode or GENERIC without valid markers, LF_ERR_NOMEM). */
reasoning_t *reasoning_create_cfg(const reasoning_config_t *cfg, lf_err_t *err);
/* The same for a mode other than GENERIC. */
reasoning_t *reasoning_create(reasoning_mode_t mode, bool starts_in_reasoning, lf_err_t *err);
void reasoning_free(reasoning_t *rp); /* accepts NULL */

/* Feeds len bytes (0 is fine) and fills *out with the decided text.
 * LF_ERR_NOMEM if a buffer cannot grow (out is then empty and the parser
 * must not be used further except for free). Pushing after finish releases
 * everything as content. */
lf_code_t reasoning_push(reasoning_t *rp, const char *piece, size_t len,
                         reasoning_out_t *out, lf_err_t *err);

/* End of generation: releases what is held back (a partial marker is text:
 * reasoning inside the block, content outside). out->token_in_reasoning is
 * false. LF_ERR_NOMEM as push. */
lf_code_t reasoning_finish(reasoning_t *rp, reasoning_out_t *out, lf_err_t *err);

/* True while the parser is inside the reasoning. */
bool reasoning_in_reasoning(const reasoning_t *rp);

/* Non-streaming convenience: splits a whole text. On success *reasoning and
 * *content are malloc'd NUL-terminated strings the caller frees, or NULL when
 * that part is empty (no reasoning / no content). Errors: as create,
 * LF_ERR_NOMEM. */
lf_code_t reasoning_split_cfg(const reasoning_config_t *cfg, const char *text, size_t len,
                              char **reasoning, char **content, lf_err_t *err);
lf_code_t reasoning_split(reasoning_mode_t mode, bool starts_in_reasoning,
                          const char *text, size_t len,
                          char **reasoning, char **content, lf_err_t *err);

/* Parser for a chat template text (tokenizer.chat_template, with what it
 * renders for a probe conversation appended: some templates build their
 * markup from variables), documented rules, first match wins:
 *   "<|channel|>" (harmony)                              -> GPT_OSS
 *   "<|channel>" and "<channel|>" (Gemma 4)              -> GEMMA4
 *   "<atem:function_calls>" and "to=self"                -> MUSE_GLIMMER
 *   "<|open|>", "<|close|>", "<|sep|>" and "think"        -> KIMI_K3
 *   "[THINK]"                                            -> MISTRAL
 *   "<seed:think>"                                       -> SEED_OSS
 *   "<|START_THINKING|>" (Cohere)                        -> COHERE
 *   "<|inner_prefix|>" and "<|inner_suffix|>"            -> APERTUS
 *   "[BEGIN FINAL RESPONSE]"                             -> APRIEL
 *   "<mm:think>"                                         -> MINIMAX_M3
 *   "<think:opensource>"                                 -> HY_V3
 *   "<|think|>" and "<|begin|>assistant"                 -> SOLAR_OPEN
 *   "thought process" with "<|start_of_role|>" (Granite) -> GRANITE
 *   no "<think>" and no "</think>" in it                 -> NONE
 *   "<minimax:tool_call>"                                -> MINIMAX_M2
 *   "<|tool_calls_section_begin|>" (Kimi)                -> KIMI_K2
 *   "<arg_key>" or "[gMASK]" (GLM)                       -> GLM45
 *   "<｜Assistant｜>" and a `thinking` switch             -> DEEPSEEK_V3
 *   "<｜Assistant｜>" (DeepSeek's full-width bars)        -> DEEPSEEK_R1
 *   "enable_thinking" in it (Qwen3's switch)             -> QWEN3
 *   "<|im_start|>" (ChatML: Qwen3, QwQ)                  -> QWEN3
 *   otherwise                                            -> DEEPSEEK_R1 */
reasoning_mode_t reasoning_mode_detect(const char *tmpl, size_t len);

/* Whether the output starts inside the reasoning, from the rendered prompt
 * (trailing whitespace ignored): NONE and gpt-oss: false. Marker formats:
 * true when the prompt ends with an open marker; START_INSIDE formats also
 * unless it ends with a close marker. prompt may be NULL (len 0). */
bool reasoning_starts_inside_cfg(const reasoning_config_t *cfg, const char *prompt, size_t len);
bool reasoning_starts_inside(reasoning_mode_t mode, const char *prompt, size_t len);

/* Whether a control token's text is markup this mode's parser needs to
 * see (generic: one of its markers). */
bool reasoning_is_marker(const reasoning_config_t *cfg, const char *text);

/* Names <-> modes ("none", "deepseek_r1", "qwen3", "deepseek_v3",
 * "gpt-oss", "mistral", "granite", "glm45", "kimi_k2", "minimax_m2",
 * "seed_oss", "generic", "gemma4", "kimi_k3", "cohere_command3", "apertus",
 * "apriel", "minimax_m3", "hy_v3", "solar_open", "muse_glimmer"; vLLM's other names are
 * accepted too: "openai_gptoss", "deepseek_v32" / "deepseek_v4" (deepseek_v3),
 * "cohere_command4", "glm47", "mimo", "nemotron" and "nemotron_v3" (qwen3)). from_name
 * returns LF_ERR_INVALID (message lists the names) for anything else. */
lf_code_t reasoning_mode_from_name(const char *name, reasoning_mode_t *mode, lf_err_t *err);
const char *reasoning_mode_name(reasoning_mode_t mode);

#endif
