/* reasoning.h - split generated text into reasoning and content.
 *
 * Reasoning models write their thinking between "<think>" and "</think>";
 * the API returns it in message.reasoning_content (delta.reasoning_content
 * when streaming) and the rest in content. The parser is fed the decoded
 * text of each generated token (any split is fine: the server's incremental
 * detokenizer already keeps UTF-8 characters whole, and the tags are ASCII)
 * and returns, per push, the text that is now decided, as an ordered list of
 * segments (reasoning or content). The tags never reach either field: a
 * possible tag prefix at the end of the text ("</th") is held back until the
 * next bytes decide it, so the result never depends on how the text was
 * split into pieces.
 *
 * Modes (names as vLLM's --reasoning-parser):
 *   REASONING_MODE_NONE         everything is content (the parser is a no-op).
 *   REASONING_MODE_DEEPSEEK_R1  and
 *   REASONING_MODE_QWEN3        one state machine for both:
 *     - the output starts in content, or inside the reasoning when created
 *       with starts_in_reasoning (the generation prompt already opened
 *       "<think>": DeepSeek-R1 distills, QwQ);
 *     - in content, "<think>" opens the reasoning block (the tag is dropped);
 *       an orphan "</think>" before any block is dropped too and ends the
 *       search (the model thought without the opening tag, which a stream
 *       cannot take back: the text before it stays content);
 *       when starting inside, a "<think>" at the very start of the output is
 *       a redundant re-open and is dropped too;
 *     - in the reasoning, "</think>" closes it (dropped);
 *     - there is one reasoning block: after it closes, the rest is content
 *       verbatim (like vLLM, which splits at the first "</think>"), so no
 *       more text is held back;
 *     - text is not trimmed: content usually starts with "\n\n" and
 *       reasoning with "\n", exactly as the model wrote them (vLLM does the
 *       same; see the seed stream);
 *     - an unterminated reasoning block (max_tokens hit) is all reasoning.
 *   The modes differ only in reasoning_starts_inside(): deepseek_r1 assumes
 *   the output starts inside the reasoning unless the prompt closed the block
 *   (vLLM's R1 parser treats text before "</think>" as reasoning even
 *   without "<think>", because R1 templates open it), qwen3 starts inside
 *   only when the prompt ends with an open "<think>".
 *
 * Token accounting (usage.completion_tokens_details.reasoning_tokens): after
 * each push, out.token_in_reasoning says whether that piece belongs to the
 * reasoning: true when the parser was inside the reasoning block at any
 * point while consuming the piece (so the pieces carrying "<think>" and
 * "</think>" count as reasoning, like the tokens between them).
 *
 * Ownership and threads: a reasoning_t belongs to one choice of one request
 * (one stream); it is not thread-safe. Segment texts point into the parser
 * and stay valid until the next push/finish/free on it.
 */
#ifndef LF_REASONING_H
#define LF_REASONING_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef enum {
    REASONING_MODE_NONE = 0,
    REASONING_MODE_DEEPSEEK_R1,
    REASONING_MODE_QWEN3
} reasoning_mode_t;

typedef enum {
    REASONING_SEG_REASONING = 0,
    REASONING_SEG_CONTENT
} reasoning_seg_kind_t;

typedef struct {
    reasoning_seg_kind_t kind;
    const char *text; /* not NUL-terminated; len > 0 */
    size_t len;
} reasoning_seg_t;

/* At most 3 segments per push: content before the block, the reasoning,
 * content after it (there is only one block). */
#define REASONING_MAX_SEGS 3

typedef struct {
    reasoning_seg_t segs[REASONING_MAX_SEGS]; /* in output order */
    int n;                                    /* number of segments */
    bool token_in_reasoning;                  /* see "Token accounting" */
} reasoning_out_t;

typedef struct reasoning reasoning_t;

/* Creates a parser. Returns NULL and fills err (LF_ERR_INVALID for an
 * unknown mode, LF_ERR_NOMEM). */
reasoning_t *reasoning_create(reasoning_mode_t mode, bool starts_in_reasoning, lf_err_t *err);
void reasoning_free(reasoning_t *rp); /* accepts NULL */

/* Feeds len bytes (0 is fine) and fills *out with the decided text.
 * LF_ERR_NOMEM if a buffer cannot grow (out is then empty and the parser
 * must not be used further except for free). Pushing after finish releases
 * everything as content. */
lf_code_t reasoning_push(reasoning_t *rp, const char *piece, size_t len,
                         reasoning_out_t *out, lf_err_t *err);

/* End of generation: releases what is held back (a partial tag is text:
 * reasoning inside the block, content outside). out->token_in_reasoning is
 * false. */
void reasoning_finish(reasoning_t *rp, reasoning_out_t *out);

/* True while the parser is inside the reasoning block. */
bool reasoning_in_reasoning(const reasoning_t *rp);

/* Non-streaming convenience: splits a whole text. On success *reasoning and
 * *content are malloc'd NUL-terminated strings the caller frees, or NULL when
 * that part is empty (no reasoning / no content). Errors: LF_ERR_NOMEM. */
lf_code_t reasoning_split(reasoning_mode_t mode, bool starts_in_reasoning,
                          const char *text, size_t len,
                          char **reasoning, char **content, lf_err_t *err);

/* Parser for a chat template text (tokenizer.chat_template), documented
 * rules, first match wins:
 *   no "<think>" and no "</think>" in it          -> NONE
 *   "enable_thinking" in it (Qwen3's switch)     -> QWEN3
 *   "<｜Assistant｜>" (DeepSeek's full-width bars) -> DEEPSEEK_R1
 *   "<|im_start|>" (ChatML: Qwen3, QwQ)          -> QWEN3
 *   otherwise                                    -> DEEPSEEK_R1 */
reasoning_mode_t reasoning_mode_detect(const char *tmpl, size_t len);

/* Whether the output starts inside the reasoning, from the rendered prompt:
 * NONE: false. Any mode: true when the prompt, trailing whitespace ignored,
 * ends with "<think>". DEEPSEEK_R1 also: true unless the prompt (trailing
 * whitespace ignored) ends with "</think>". prompt may be NULL (len 0). */
bool reasoning_starts_inside(reasoning_mode_t mode, const char *prompt, size_t len);

/* "none" / "deepseek_r1" / "qwen3" <-> mode. from_name returns
 * LF_ERR_INVALID (message lists the names) for anything else. */
lf_code_t reasoning_mode_from_name(const char *name, reasoning_mode_t *mode, lf_err_t *err);
const char *reasoning_mode_name(reasoning_mode_t mode);

#endif
