/* harmony.h - the message layout of OpenAI's harmony format (gpt-oss),
 * shared by the gpt-oss reasoning parser (reasoning_harmony.c) and tool-call
 * parser (toolcall_harmony.c).
 *
 * A message is a header, <|message|>, a body and a terminator:
 *   [<|start|>ROLE][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT]
 *       [ <|constrain|>TYPE | TYPE]<|message|>BODY(<|end|>|<|call|>|<|return|>)
 * The model's reply starts after the prompt's "<|start|>assistant", so its
 * first header usually begins with <|channel|>. A header or body may also
 * end where the next message's <|start|> or <|channel|> begins (a model
 * that forgot the terminator).
 *
 * harmony_header_parse reads the text of a header (from its first marker up
 * to, excluding, <|message|>): the channel and the recipient. Pure function,
 * no allocation; fields are truncated to their buffers.
 */
#ifndef LF_HARMONY_H
#define LF_HARMONY_H

#include <stdbool.h>
#include <stddef.h>

#define HARMONY_START "<|start|>"
#define HARMONY_CHANNEL "<|channel|>"
#define HARMONY_MESSAGE "<|message|>"
#define HARMONY_CONSTRAIN "<|constrain|>"
#define HARMONY_END "<|end|>"
#define HARMONY_CALL "<|call|>"
#define HARMONY_RETURN "<|return|>"
#define HARMONY_FUNCTIONS "functions."

typedef struct {
    char channel[32];    /* "analysis", "commentary", "final" or "" */
    char recipient[128]; /* "functions.get_weather", "browser.search" or "" */
} harmony_header_t;

void harmony_header_parse(const char *h, size_t n, harmony_header_t *out);

/* Markers that end a body: the three terminators and the two markers that
 * begin a new header. NULL-terminated. */
extern const char *const harmony_body_ends[];
/* Markers that begin a header. NULL-terminated. */
extern const char *const harmony_header_starts[];

#endif
