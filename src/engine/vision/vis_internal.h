/* vis_internal.h - the loaded vision model, shared by the files of
 * engine/vision (not a public header).
 *
 * Matrices are model_tensor_t views (linear.h multiplies them: n_out rows
 * of n_in values); vectors are float arrays (F32 views into the file, or
 * converted copies owned by the model). Shapes in comments: E = n_embd,
 * F = n_ff, P = patch_size, T = proj_dim.
 */
#ifndef LF_VIS_INTERNAL_H
#define LF_VIS_INTERNAL_H

#include "engine/gguf/gguf.h"
#include "engine/kernels/gemm.h"
#include "engine/vision/vision.h"

typedef struct {
    const float *ln1_w, *ln1_b;    /* [E]; b NULL with RMSNorm */
    model_tensor_t wq, wk, wv;     /* E -> E (or wqkv E -> 3E) */
    model_tensor_t wqkv;
    const float *bq, *bk, *bv;     /* [E] */
    model_tensor_t wo;             /* E -> E */
    const float *bo;
    const float *ln2_w, *ln2_b;
    model_tensor_t up, gate, down; /* E -> F, E -> F (gate: data NULL when absent), F -> E */
    const float *b_up, *b_gate, *b_down;
    /* qwen3vl deepstack merger of this layer's output (norm.w NULL: none) */
    const float *ds_norm_w, *ds_norm_b; /* [4E] */
    model_tensor_t ds_fc1, ds_fc2;      /* 4E -> 4E, 4E -> T */
    const float *ds_fc1_b, *ds_fc2_b;
} vis_layer_t;

struct vis_model {
    gguf_file_t *gguf;
    vis_hparams_t hp;
    model_tensor_t patch[2];       /* 3 P P -> E, F16 (im2col is F16); [1] qwen's second temporal half */
    const float *patch_b;          /* [E] or NULL */
    const float *pos_embd;         /* [n_pos][E] or NULL */
    int32_t n_pos;                 /* rows of pos_embd */
    vis_layer_t *layers;
    const float *post_ln_w, *post_ln_b;
    /* projectors */
    const float *mm_soft_norm;     /* gemma3 [E] */
    model_tensor_t mm_proj;        /* gemma3 input_projection (transposed: E -> T);
                                      idefics3 fc (E n_merge^2 -> T) */
    model_tensor_t mm0, mm2;       /* qwen merger: 4E -> 4E, 4E -> T */
    const float *mm0_b, *mm2_b;
    /* owned buffers (converted vectors, F16 kernels, the transposed
     * projection) freed with the model */
    void **owned;
    int n_owned, cap_owned;
};

/* ---- the ViT (vis_vit.c) ---- */

/* Work buffers of one encode. */
typedef struct {
    int32_t n;                /* patches */
    int32_t gw, gh;           /* patch grid */
    float *x;                 /* [n][E] residual stream */
    float *xn;                /* [n][max(E, 4E)] */
    float *q, *k, *v;         /* [n][E] */
    float *att;               /* [n][E] */
    float *ff, *ff2;          /* [n][F] */
    float *cs;                /* [n][E] rope tables (qwen) */
    int32_t *win;             /* [n] window id of each patch (qwen2.5vl), or NULL */
    int32_t *perm;            /* [n] window order: row i holds patch perm[i] (qwen2.5vl), or NULL */
    int32_t *seg;             /* [n_seg + 1] first row of each window in window order (+ n_seg cursors) */
    int32_t n_seg;
    void *act;                /* activation scratch of linear.h (types gemm.h does not take), or NULL */
    uint8_t *order;           /* [max rows] all GX_ORDER_TINY */
    float *ds;                /* [n / 4][n_deepstack * T] qwen3vl deepstack outputs */
    float *xr;                /* gemm_act_floats(n, max n_in): activations prepared for gemm.h */
    void *gemm;               /* gemm.h scratch for n_threads */
    void *attn;               /* enc_attn.h scratch for n_threads */
    int n_threads;            /* threads the scratch is sized for (0: none yet) */
    float *cols;              /* [n][3 P P] im2col of the pixels (until embedded) */
} vis_work_t;

/* out = ln(x) with weight w and bias b (b NULL: no bias), LayerNorm or
 * RMS, rows split over the pool (out may be x). */
void vis_norm_rows(const vis_model_t *v, tpool_t *pool, const float *x, const float *w, const float *b, int64_t n,
                   int64_t width, float *out);
/* out = W x (+ bias) for n rows (gemm.h: ggml's activation rounding, the
 * tiles' summation order; linear.h for the types gemm.h does not take). */
void vis_linear(tpool_t *pool, vis_work_t *wk, const model_tensor_t *W, const float *bias, const float *x, int64_t n,
                float *out);
/* out[i] from W[i] x (i < cnt) with epilogue epi[i] (gemm.h: bias,
 * accumulate into out[i], post), x prepared once per activation type;
 * tmp (n x n_out floats) is needed only for accumulating with a weight
 * type gemm.h does not take (else NULL). */
void vis_linear_epi(tpool_t *pool, vis_work_t *wk, int cnt, const model_tensor_t *const *W, const float *x,
                    int64_t n, float *const *out, const gemm_epi_t *epi, float *tmp);
/* Qwen2.5-VL: wk->x (rows of width) back from window order to the
 * encoder's patch order (nothing when the rows were never reordered). */
void vis_unpermute(vis_work_t *wk, int64_t width);
/* One ViT layer on wk->x. */
void vis_layer(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, int il);
/* The patch embedding of a (normalised inside) into wk->x, positions
 * added, patches in the family's order (qwen: 2x2 merge groups). */
void vis_patch_embed(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, const img_rgb_t *px);
/* The projector: wk->x -> out (n_tokens x n_out). */
void vis_project(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, float *out);
/* qwen3vl: the deepstack merger of layer il into wk->ds. */
void vis_deepstack(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, int il, int ds_index);

/* Rope tables (wk->cs) of the Qwen encoders for each patch's row and column. */
void vis_rope_tables(const vis_model_t *v, vis_work_t *wk, const int32_t *pos_y, const int32_t *pos_x);

/* Output rows of a gw x gh patch grid. */
int32_t vis_tokens_for_grid(const vis_model_t *v, int32_t gw, int32_t gh);

#endif
