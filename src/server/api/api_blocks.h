/* api_blocks.h - one choice's parsed output as a sequence of blocks:
 * reasoning, answer text, tool calls, in output order. It is the shape of
 * the OpenAI Responses `output` items and of the Anthropic Messages
 * `content` blocks alike, so both formats are built from it: the runner's
 * hooks (gen_fmt_t.on_text / on_chat, api_gen.h) feed it, and a sink hears
 * each block open, grow and close, so the streamed events and the final
 * object come from the same sequence (the non-streamed object is the sum of
 * the streamed events).
 *
 * Rules: a block of another kind (or a new tool call) closes the open one;
 * a reasoning or text block opens only once it has a non-blank character
 * (leading blanks are kept in it), so markup-separating newlines never
 * make empty blocks; tool arguments go to their call's block.
 *
 * Ownership: the list owns its blocks' strings; blk_free releases them.
 */
#ifndef LF_API_BLOCKS_H
#define LF_API_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/chat/chat_output.h"

typedef enum { BLK_REASONING, BLK_TEXT, BLK_TOOL } blk_kind_t;

typedef struct {
    blk_kind_t kind;
    char *text;            /* reasoning, text, or the tool call's arguments (JSON text) */
    size_t len, cap;
    char *call_id, *name;  /* BLK_TOOL */
    int32_t call;          /* BLK_TOOL: the parser's call index */
    bool closed;
} blk_t;

typedef struct blk_sink {
    void (*open)(void *ctx, size_t i, const blk_t *b);  /* b->text holds what it opened with */
    void (*delta)(void *ctx, size_t i, const blk_t *b, const char *p, size_t n);
    void (*close)(void *ctx, size_t i, const blk_t *b);
} blk_sink_t;

typedef struct {
    blk_t *v;
    size_t n, cap;
    const blk_sink_t *sink;   /* NULL: collect only */
    void *ctx;
    blk_kind_t pend_kind;     /* blanks waiting for a block of this kind */
    char *pend;
    size_t pend_len, pend_cap;
} blk_list_t;

void blk_init(blk_list_t *l, const blk_sink_t *sink, void *ctx);
void blk_text(blk_list_t *l, const char *p, size_t n);
void blk_reasoning(blk_list_t *l, const char *p, size_t n);
/* A chat_out event (reasoning, content, tool start, tool arguments). */
void blk_chat(blk_list_t *l, const chat_out_ev_t *ev);
/* End of output: closes the open block, drops pending blanks. */
void blk_finish(blk_list_t *l);
void blk_free(blk_list_t *l);
/* The open (last, not closed) block or NULL. */
const blk_t *blk_open_block(const blk_list_t *l);

#endif
