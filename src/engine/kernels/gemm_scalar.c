/* gemm_scalar.c - the blocked float kernels (gemm_impl.h) for any CPU:
 * the shared body over GCC's portable 4-lane vectors (SSE2 on x86-64, NEON
 * elsewhere), 4 x 8 tiles, multiply and add (no FMA assumed). */
#include "engine/kernels/gemm_impl.h"

#include <math.h>
#include <string.h>

#include "engine/quant/fp16.h"

typedef float gv_t __attribute__((vector_size(16)));
#define GV_W 4
#define GEMM_MR 4
#define GEMM_SUFFIX scalar
static inline gv_t gv_zero(void) { return (gv_t){0.0f, 0.0f, 0.0f, 0.0f}; }
static inline gv_t gv_set1(float f) { return (gv_t){f, f, f, f}; }
static inline gv_t gv_load(const float *p)
{
    gv_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gv_store(float *p, gv_t v) { memcpy(p, &v, sizeof v); }
static inline gv_t gv_fma(gv_t a, gv_t b, gv_t c) { return a * b + c; }
static inline gv_t gv_add(gv_t a, gv_t b) { return a + b; }
static inline gv_t gv_mul(gv_t a, gv_t b) { return a * b; }
static inline gv_t gv_max(gv_t a, gv_t b)
{
    for (int i = 0; i < GV_W; i++)
        a[i] = a[i] > b[i] ? a[i] : b[i];
    return a;
}
static inline gv_t gv_min(gv_t a, gv_t b)
{
    for (int i = 0; i < GV_W; i++)
        a[i] = a[i] < b[i] ? a[i] : b[i];
    return a;
}
static inline gv_t gv_round(gv_t a)
{
    for (int i = 0; i < GV_W; i++)
        a[i] = nearbyintf(a[i]);
    return a;
}
static inline gv_t gv_pow2i(gv_t n)
{
    for (int i = 0; i < GV_W; i++) {
        const uint32_t bits = (uint32_t)((int32_t)n[i] + 127) << 23;
        memcpy(&n[i], &bits, sizeof bits);
    }
    return n;
}
static inline float gv_hmax(gv_t v)
{
    float m = v[0];
    for (int i = 1; i < GV_W; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}
static inline float gv_hsum(gv_t v) { return (v[0] + v[1]) + (v[2] + v[3]); }
#include "engine/kernels/gemm_body.h"

static void round_f16_scalar(const float *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = fp16_to_fp32(fp16_from_fp32(src[i]));
}

void gemm_impl_scalar(gemm_impl_t *t)
{
    *t = (gemm_impl_t){"scalar",           4,
                       4,                  gemm_ukr_full_scalar,
                       gemm_ukr_half_scalar, gemm_ukr_packed_scalar, gemm_row_max_scalar,
                       gemm_row_exp_scalar,  gemm_row_scale_scalar,
                       fp16_row_to_fp32,     round_f16_scalar};
}
