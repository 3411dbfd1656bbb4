/* gemm_impl.h - internal interface between the blocked float products
 * (gemm.c, enc_attn.c) and their per-ISA kernels (gemm_scalar.c,
 * gemm_avx2.c, gemm_avx512.c; the shared body gemm_body.h).
 *
 * A micro-kernel computes one register tile: C[mr][nr] (ldc floats apart)
 * = (or += with acc) A[mr][kc] (rows lda floats apart, read one float at a
 * time and broadcast) times a packed B panel of kc rows of nr floats (nr =
 * 2 vw for `full`, vw for `half`, rows contiguous), plus bias[nr] when
 * bias is not NULL. A must have mr readable rows (callers pad the last
 * tile); every tile is full (callers handle edges through a scratch tile).
 */
#ifndef LF_GEMM_IMPL_H
#define LF_GEMM_IMPL_H

#include <stdint.h>

typedef void (*gemm_ukr_fn_t)(int64_t kc, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                              int acc, const float *bias);
/* full, with A packed: A[r][k] at a[k * mr + r] */
typedef void (*gemm_ukrp_fn_t)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc,
                               const float *bias);

typedef struct {
    const char *name;
    int mr, vw;          /* tile rows; lanes of one vector (the full tile is 2 vw wide) */
    gemm_ukr_fn_t full;  /* mr x 2 vw */
    gemm_ukr_fn_t half;  /* mr x vw */
    gemm_ukrp_fn_t packed; /* mr x 2 vw, A packed */
    /* max of x[0..n) (n >= 1) */
    float (*row_max)(const float *x, int64_t n);
    /* x[i] = exp(x[i] - m) for i < n; returns their sum */
    float (*row_exp)(float *x, int64_t n, float m);
    /* y[i] = x[i] * s for i < n (y may be x) */
    void (*row_scale)(const float *x, float *y, int64_t n, float s);
    /* dst[i] = src[i] (IEEE half -> float) */
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    /* dst[i] = (float)(half)src[i], round to nearest even (F16C's rounding) */
    void (*round_f16)(const float *src, float *dst, int64_t n);
} gemm_impl_t;

#define GEMM_MR_MAX 12
#define GEMM_VW_MAX 16

void gemm_impl_scalar(gemm_impl_t *t);
void gemm_impl_avx2(gemm_impl_t *t);
void gemm_impl_avx2x2(gemm_impl_t *t); /* the 16-lane body on AVX2 registers (tests the AVX-512 tiling) */
void gemm_impl_avx512(gemm_impl_t *t);

/* The implementation in use (see gemm.h: gemm_impl_select). */
const gemm_impl_t *gemm_impl(void);

#endif
