/* ggml_exact.h - float arithmetic in exactly the order of ggml's CPU backend.
 *
 * Purpose: the reference outputs (golden/README.md) come from llama.cpp
 * c392e509 built by gcc 12 with GGML_NATIVE on an AVX-512 machine and
 * LLAMAFILE=1. Summation order decides float roundings, and a rounding that
 * flips an F16 K/V cache entry moves logits by ~1e-2, so the F32 path
 * reproduces that build's operation order bit for bit:
 *
 *  - gx_dot_f32_vec: ggml_vec_dot_f32 (GGML_F32_STEP 64: four 16-lane FMA
 *    accumulators; reduced x0+x2, x1+x3, then x0+x1, then the 16 lanes as
 *    GCC's _mm512_reduce_add_ps does (halves 8+8, 4+4, {0,2}+{1,3}, 0+1);
 *    the n % 64 leftovers are summed in float in order, the leading
 *    multiple of 8 of them as rounded products (gcc -O3 vectorises that
 *    part of the loop: vmulps then in-order adds) and the last n % 8 with
 *    fused multiply-adds (the scalar epilogue, contracted by
 *    -ffp-contract=fast)). This is what ggml uses for single-token
 *    matrix products and for every k % 16 != 0.
 *  - gx_dot_f32_tiny: llamafile's tinyBLAS<16, __m512> (one 16-lane FMA
 *    accumulator over k, k % 16 == 0, then the same 16-lane reduction):
 *    what ggml uses for F32 matrix products of batches of >= 2 tokens.
 *  - gx_dot_f16_vec: ggml_vec_dot_f16 (four 16-lane accumulators of exact
 *    F16 products, reduced as above, leftovers added in double), and
 *    gx_dot_f16_tiny: tinyBLAS on F16 x F16 (one 16-lane accumulator):
 *    ggml's orders for F16 weights and for K.q / V.softmax.
 *  - gx_expf16 / gx_silu_row / gx_softmax_row: ggml_v_expf (the AVX-512
 *    vscalefps variant), ggml_vec_silu_f32 (16-lane ggml_v_silu, leftovers
 *    x / (1 + expf(-x))) and ggml_vec_soft_max_f32 (16-lane blocks, each
 *    block's sum reduced in float and added in double).
 *
 * Every function has an AVX-512 implementation, an AVX2+FMA+F16C one (16
 * lanes as two halves) and a portable one using fmaf where ggml fuses; the
 * level follows kern_isa() (LLM_FCGI_ISA caps it). All give identical bits
 * on every input.
 *
 * Batch invariance: each value depends only on its own row and token.
 * Nothing here allocates; all functions are thread-safe.
 */
#ifndef LF_GGML_EXACT_H
#define LF_GGML_EXACT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/kernels/tpool.h"

/* Order of an F32 matrix product, per token: GX_ORDER_VEC is ggml's
 * single-token (decode) order, GX_ORDER_TINY llamafile's batched (prompt)
 * order; TINY falls back to VEC when k % 16 != 0, as ggml does. */
typedef enum { GX_ORDER_VEC = 0, GX_ORDER_TINY = 1 } gx_order_t;

/* 16-lane sum in the order of GCC's _mm512_reduce_add_ps. */
float gx_hsum16(const float v[16]);

float gx_dot_f32_vec(const float *x, const float *y, int64_t n);
float gx_dot_f32_tiny(const float *x, const float *y, int64_t n); /* n % 16 == 0 */
/* gx_dot_f32_vec as the 2026 reference build (the encoders' goldens)
 * compiled it: its leftover loop also has a 4-wide vectorised epilogue
 * (4 more rounded products after the multiples of 8 when at least 4
 * remain, the last n % 4 fused). Bert's attention over 4..7 or 12..15
 * positions shows it; with it every F32 embedding golden is bit-exact. */
float gx_dot_f32_vec_e4(const float *x, const float *y, int64_t n);
float gx_dot_f16_vec(const uint16_t *x, const uint16_t *y, int64_t n);
/* llamafile's tinyBLAS<16> on F16 x F16 (n % 16 == 0). */
float gx_dot_f16_tiny(const uint16_t *x, const uint16_t *y, int64_t n);
/* out[p] = gx_dot_f16_vec(x + p * stride, y, n) * scale for p < n_rows. */
void gx_dot_f16_rows(const uint16_t *x, int64_t stride, int64_t n_rows, const uint16_t *y, int64_t n, float scale,
                     float *out);

/* out[16] = ggml_v_expf(in[16]) (in and out may alias). */
void gx_expf16(const float *in, float *out);

/* y[i] = silu(x[i]) as ggml_vec_silu_f32 (x and y may alias). */
void gx_silu_row(float *y, const float *x, int64_t n);

/* In place: s[0..n) = softmax(s) as ggml_soft_max's row loop does for a
 * row whose masked tail is -inf (positions >= n are taken as masked and not
 * read). Returns nothing; s[i] becomes e_i * (float)(1 / sum). */
void gx_softmax_row(float *s, int64_t n);

/* y[i] = a[i] + b[i] (one rounding each; y may alias a or b). */
void gx_add_row(float *y, const float *a, const float *b, int64_t n);

/* In place: s[0..n) = softmax(s) with ggml_v_expf on whole blocks of 16
 * (sums of each block's exps by gx_hsum16, added in double), libm expf on
 * the n % 16 tail, then s[i] *= (float)(1 / sum) (ops_softmax's order). */
void gx_softmax_blocks16(float *s, int64_t n);

/* out[t * n_rows + r] = dot(W row r, x row t) [+ bias[r], one rounding as
 * ggml's add] for F32 weights W (n_rows x k) and activations x (n_tok x
 * k), in order[t] per token (order NULL: all GX_ORDER_VEC). Rows are split
 * over the pool. */
void gx_matmul_f32(tpool_t *pool, const float *W, int64_t n_rows, int64_t k, const float *x, int64_t n_tok,
                   const uint8_t *order, const float *bias, float *out);

/* The same for F16 weights and activations already rounded to F16 (F16's
 * vec_dot_type): ggml_vec_dot_f16 per token, or tinyBLAS F16 x F16 (the
 * products are exact; one 16-lane accumulator) for GX_ORDER_TINY tokens
 * when k % 16 == 0. xr (or NULL) holds the same activations as F32 (the
 * F16 values, exactly): the AVX2 level multiplies runs of TINY tokens from
 * it in register tiles (no conversion per product). */
void gx_matmul_f16(tpool_t *pool, const uint16_t *W, int64_t n_rows, int64_t k, const uint16_t *x, const float *xr,
                   int64_t n_tok, const uint8_t *order, const float *bias, float *out);

/* Up to GX_MATMUL_MAX products of the same activations (F16 weights: x
 * and xr as for gx_matmul_f16; F32: x as float, xr unused) in one hand-off
 * to the pool, each exactly as gx_matmul_f16 / gx_matmul_f32 computes it. */
enum { GX_MATMUL_MAX = 4 };
typedef struct {
    const void *W;
    int64_t n_rows;
    const float *bias; /* or NULL */
    float *out;
} gx_mat_t;
void gx_matmul_n(tpool_t *pool, int n, const gx_mat_t *mats, bool f16, int64_t k, const void *x, const float *xr,
                 int64_t n_tok, const uint8_t *order);

enum { GX_LEVEL_PORTABLE = 0, GX_LEVEL_AVX2 = 1, GX_LEVEL_AVX512 = 2 };

/* The implementation level in use: min(kern_isa(), the cap below). */
int gx_level(void);
bool gx_use_avx512(void);

/* Caps the level (tests compare the levels); returns the previous cap.
 * Not thread-safe against running kernels. */
int gx_set_level(int level);

#endif
