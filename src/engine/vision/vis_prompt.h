/* vis_prompt.h - a prompt with images: where each image's rows go among
 * the text tokens, as llama.cpp's libmtmd lays them out, and how such a
 * prompt is fed to the forward pass.
 *
 * Layout (vis_prompt_build): the text is split around the images; every
 * text piece and every marker string is tokenized on its own (no special
 * tokens added, special tokens parsed), BOS goes in front (and EOS at the
 * end) when the vocabulary adds them. Each image becomes:
 *   gemma3   <start_of_image> rows <end_of_image>   (rows attended
 *            bidirectionally among themselves)
 *   qwen     <|vision_start|> rows <|vision_end|>   (rows in raster order
 *            of the merged grid; multi-section rope positions)
 *   idefics3 for each tile row r, column c: <fake_token_around_image>
 *            <row_r_col_c> tile rows, "\n" after each row of tiles but the
 *            last, then "\n\n" <fake_token_around_image> <global-img>
 *            overview rows <fake_token_around_image>
 * A span is one pixel array's rows (a whole image for gemma3 and qwen, one
 * tile or the overview for idefics3).
 *
 * Positions: text and image rows take one KV cell each. With multi-section
 * rope an image starting at rope position p0 gives row i (grid row y,
 * column x) the position (p0, p0 + y, p0 + x) and the next token p0 +
 * max(nx, ny); fwd_mm_t.dpos carries the difference between rope
 * position and cell.
 *
 * Placeholders: the tokens array holds, at image rows, negative ids made
 * from the image's content hash and the row index (vis_prompt_is_image),
 * so a prefix cache keyed on token ids keys on the image content too.
 */
#ifndef LF_VIS_PROMPT_H
#define LF_VIS_PROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/forward.h"
#include "engine/vision/vision.h"
#include "engine/vocab/vocab.h"

typedef struct {
    int32_t start, n;        /* cells [start, start + n) hold the rows */
    int32_t nx, ny;          /* grid (nx * ny == n) */
    int32_t n_pos;           /* rope positions it advances (max(nx, ny) with multi-section rope, else n) */
    bool bidir;              /* rows attend each other (gemma3) */
    int32_t image, array;    /* source image (request order) and its pixel array */
} vis_span_t;

typedef struct {
    int32_t *tokens;         /* [n]: text ids, negative placeholders at image rows */
    int32_t n;
    vis_span_t *spans;       /* in order */
    int32_t n_spans;
    int32_t n_pos;           /* rope positions of the whole prompt */
    bool mrope;
} vis_prompt_t;

typedef struct vis_layout vis_layout_t;

/* The marker tokens of v's family looked up in voc (by their text, as
 * libmtmd's lookup_token does). NULL + err when one is missing. */
vis_layout_t *vis_layout_create(const vis_model_t *v, const vocab_t *voc, bool mrope, lf_err_t *err);
void vis_layout_free(vis_layout_t *L);

/* Builds the prompt of text pieces[0..n_images] around n_images images
 * (preps[i] their preprocessed arrays, hashes[i] 32-byte content hashes
 * or NULL). add_special: BOS/EOS as the vocabulary says. */
lf_code_t vis_prompt_build(const vis_layout_t *L, const char *const *pieces, const size_t *lens, int32_t n_images,
                           const vis_prep_t *preps, const uint8_t (*hashes)[32], bool add_special,
                           vis_prompt_t *out, lf_err_t *err);
void vis_prompt_free(vis_prompt_t *p); /* accepts a zeroed struct */

/* vis_prompt_build from a text with `marker` where each image goes (in
 * order; llama.cpp's "<__media__>"). A text without any marker gets the
 * images in front when images_first, else that is an error; a marker count
 * other than n_images is LF_ERR_INVALID ("N markers for M images"). */
lf_code_t vis_prompt_from_text(const vis_layout_t *L, const char *text, size_t len, const char *marker,
                               const vis_prep_t *preps, const uint8_t (*hashes)[32], int32_t n_images,
                               bool images_first, bool add_special, vis_prompt_t *out, lf_err_t *err);

/* Whether token id t is an image-row placeholder. */
static inline bool vis_prompt_is_image(int32_t t) { return t < 0; }

/* The span holding cell pos, or -1. */
int32_t vis_prompt_span_at(const vis_prompt_t *p, int32_t pos);

/* The chunk llama-server decodes on its own around cell pos: an image span,
 * or the text between two spans. */
void vis_prompt_chunk(const vis_prompt_t *p, int32_t pos, int32_t *start, int32_t *end, bool *text);

/* The multimodal row of cell pos (span_embd[s]: span s's rows, n_out floats
 * each; NULL for a span not encoded yet is an error of the caller). */
void vis_prompt_row(const vis_prompt_t *p, int32_t pos, const float *const *span_embd, int32_t n_out, fwd_mm_t *mm);

/* dpos of the tokens after the prompt (generated tokens). */
int32_t vis_prompt_dpos_end(const vis_prompt_t *p);

/* Evaluates the whole prompt into sequence seq (empty) chunk by chunk, as
 * llama-server does (each chunk its own batches; prompt-order flags per
 * chunk; a bidirectional span in one batch), keeping the logits of the
 * last cell (fwd_logits(f, 0)). */
lf_code_t vis_prompt_eval(fwd_t *f, int32_t seq, const vis_prompt_t *p, const float *const *span_embd,
                          int32_t n_out, lf_err_t *err);

#endif
