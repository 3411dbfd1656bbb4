/* gen_media.h - images for `llm-fcgi generate --mmproj FILE --image FILE`:
 * loads the projector, reads and preprocesses the images, lays the prompt
 * out (each "<__media__>" replaced by the next image, the images in front
 * when the prompt has none), encodes the images and prefills the prompt.
 */
#ifndef LF_GEN_MEDIA_H
#define LF_GEN_MEDIA_H

#include <json-c/json.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"

typedef struct gen_media gen_media_t;

/* The bytes of an image file (malloc'd, *n set); NULL + err. */
uint8_t *gen_media_read(const char *path, size_t *n, lf_err_t *err);
/* NULL + err on any failure (files, formats, marker count, sizes). */
gen_media_t *gen_media_open(const char *mmproj, const char *const *images, int n_images, const model_t *m,
                            const char *model_path, const char *prompt, bool add_special, lf_err_t *err);
void gen_media_free(gen_media_t *g); /* accepts NULL */
/* Prompt cells (text tokens + image rows). */
int32_t gen_media_n_cells(const gen_media_t *g);
/* The text token ids of the prompt (for the sampler's penalties); *n set. */
const int32_t *gen_media_text_tokens(const gen_media_t *g, int32_t *n);
/* Encodes the images on f's pool and evaluates the prompt into sequence 0. */
lf_code_t gen_media_prefill(gen_media_t *g, fwd_t *f, lf_err_t *err);
/* The multimodal row of a generated token (its rope offset). */
void gen_media_next_row(const gen_media_t *g, fwd_mm_t *mm);
/* prompt_tokens for --json: ids, and one object per image span
 * ({"image": i, "array": k, "n_tokens": n, "nx": x, "ny": y}). */
json_object *gen_media_prompt_json(const gen_media_t *g);

#endif
