/* vision.h - the vision encoder of a vision-language model: an mmproj GGUF
 * (arch "clip", keys clip.*, tensors v.* and mm.*) holding a ViT and a
 * projector, run on the engine's own kernels and thread pool.
 *
 * Projector families (vis_proj_t), as llama.cpp's libmtmd runs them:
 *   gemma3           SigLIP ViT (LayerNorm, GELU, learned positions) on a
 *                    fixed square image, n_merge x n_merge average pooling,
 *                    RMS norm x soft_emb_norm, projection;
 *   qwen2.5vl_merger Qwen2.5-VL: dynamic resolution, two Conv2D halves,
 *                    RMSNorm, 2-D rope, window attention every layer but
 *                    each n_wa_pattern-th, SiLU-gated FFN, 2x2 merger;
 *   qwen3vl_merger   Qwen3-VL: patch bias, resized learned positions,
 *                    LayerNorm, fused qkv, 2-D rope, 2x2 merger, deepstack
 *                    mergers after some layers (their outputs concatenated
 *                    after the main one in every output row);
 *   idefics3         SmolVLM: SigLIP ViT per 512-ish tile, pixel shuffle,
 *                    one linear; images tiled into a grid plus an overview.
 *
 * Flow: vis_preprocess turns decoded pixels into the pixel arrays the
 * encoder takes (resized, letterboxed or tiled as llama.cpp does) plus the
 * token layout; each array is encoded by a vis_enc_t, a resumable job that
 * the scheduler advances one stage (patch embedding, one ViT layer, the
 * projector) per step so a large image never freezes other streams; the
 * output rows (vis_hparams_t.n_out floats each) are the text model's input
 * embeddings (vis_layout.h says where they go in the prompt).
 *
 * Numerics follow ggml's CPU backend where they decide rounding: the patch
 * embedding's im2col is F16 (pixels and kernel rounded to F16), every
 * matrix converts its activations to the weight type's vec_dot_type, GELU
 * is ggml's F16 table; the ViT keeps F32 K/V (llama.cpp with flash
 * attention off).
 *
 * A vis_model_t is immutable after loading and may be shared by threads;
 * a vis_enc_t belongs to one thread at a time.
 */
#ifndef LF_VISION_H
#define LF_VISION_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/model.h"
#include "image/image.h"

typedef enum {
    VIS_PROJ_GEMMA3 = 0,
    VIS_PROJ_QWEN25VL,
    VIS_PROJ_QWEN3VL,
    VIS_PROJ_IDEFICS3,
} vis_proj_t;

typedef enum { VIS_ACT_GELU = 0, VIS_ACT_SILU, VIS_ACT_GELU_QUICK } vis_act_t;

typedef struct {
    vis_proj_t proj;
    char proj_name[32];        /* clip.projector_type as written */
    int32_t n_embd, n_ff, n_layer, n_head, head_dim;
    int32_t image_size;        /* gemma3: the square input; idefics3: the tile */
    int32_t patch_size;
    int32_t proj_dim;          /* width of the main output (the text model's n_embd) */
    int32_t n_deepstack;       /* qwen3vl: deepstack mergers */
    int32_t n_out;             /* floats per output row: proj_dim * (1 + n_deepstack) */
    float eps;
    float mean[3], std[3];     /* pixel normalisation */
    vis_act_t act;             /* FFN activation (clip.use_gelu / use_silu) */
    bool rms_norm;             /* RMSNorm instead of LayerNorm (qwen2.5vl) */
    int32_t n_merge;           /* gemma3: pool kernel; qwen: spatial merge; idefics3: shuffle */
    int32_t n_wa_pattern;      /* qwen2.5vl: layer il attends fully iff (il + 1) % n == 0 */
    int32_t window_px;         /* qwen2.5vl: attention window in pixels (112) */
    int32_t longest_edge;      /* idefics3: preproc_image_size */
    int32_t min_pixels, max_pixels; /* qwen: the dynamic-resolution bounds */
    int32_t n_pos_side;        /* qwen3vl: side of the learned position table */
    bool ds_layer[64];         /* qwen3vl: layer il has a deepstack merger (il < 64) */
} vis_hparams_t;

typedef struct vis_model vis_model_t;

/* Loads an mmproj GGUF. NULL + err (naming the file and the problem) for
 * a file that is not a supported vision projector, a missing or misshapen
 * tensor or key, or an unsupported weight type. */
vis_model_t *vis_model_load(const char *path, lf_err_t *err);
void vis_model_free(vis_model_t *v); /* accepts NULL */
const vis_hparams_t *vis_hparams(const vis_model_t *v);

/* Whether v can feed text model m: its output width must be m's input
 * width (n_embd, times 1 + n_deepstack for deepstack models), and the
 * family's marker tokens must be in m's vocabulary. LF_ERR_INVALID with a
 * message naming both files otherwise. */
lf_code_t vis_model_check_text(const vis_model_t *v, const char *vis_path, const model_t *m, const char *model_path,
                               lf_err_t *err);

/* One line describing the encoder (projector, sizes, tokens per image). */
void vis_model_describe(const vis_model_t *v, char *buf, size_t cap);

/* ---- preprocessing ---- */

/* One pixel array fed to the ViT and the rows it yields. */
typedef struct {
    img_rgb_t px;              /* resized / tiled 8-bit pixels (normalised by the encoder) */
    int32_t n_tokens;          /* output rows */
    int32_t nx, ny;            /* token grid (qwen: merged grid; others n_tokens x 1) */
} vis_array_t;

typedef struct {
    int32_t n;                 /* arrays (idefics3: tiles then the overview) */
    vis_array_t *a;
    int32_t grid_x, grid_y;    /* idefics3: tile grid (0 x 0: the overview only) */
} vis_prep_t;

/* Preprocesses a decoded image as llama.cpp does for this family. */
lf_code_t vis_preprocess(const vis_model_t *v, const img_rgb_t *img, vis_prep_t *out, lf_err_t *err);
void vis_prep_free(vis_prep_t *p); /* accepts a zeroed struct */

/* ---- encoding ---- */

typedef struct vis_enc vis_enc_t;

/* A resumable encode of one pixel array (copied). NULL + err on bad sizes
 * or memory. */
vis_enc_t *vis_enc_begin(const vis_model_t *v, const vis_array_t *a, lf_err_t *err);
/* Runs the next stage on pool (may be NULL); returns true when the output
 * is ready (then further calls do nothing). */
bool vis_enc_step(vis_enc_t *e, tpool_t *pool);
/* Stages in all and stages done (for progress and scheduling). */
int32_t vis_enc_stages(const vis_enc_t *e);
int32_t vis_enc_done(const vis_enc_t *e);
/* The output: n_tokens rows of n_out floats, once done; the caller takes
 * ownership (free()); further calls return NULL. */
float *vis_enc_take(vis_enc_t *e, int32_t *n_tokens);
void vis_enc_free(vis_enc_t *e); /* accepts NULL */

/* Encodes a in one go (tests, the CLI): *out = n_tokens x n_out floats. */
lf_code_t vis_encode(const vis_model_t *v, tpool_t *pool, const vis_array_t *a, float **out, int32_t *n_tokens,
                     lf_err_t *err);

#endif
