/* gemm_avx512.c - the blocked float kernels (gemm_impl.h) with AVX-512F:
 * 12 x 32 register tiles (24 accumulators of the 32 registers). The same
 * body runs on pairs of AVX2 registers in gemm_avx2.c (gemm_impl_avx2x2),
 * which is how the tests check this tiling on CPUs without AVX-512. The
 * target pragma applies to this file only; gemm.c calls these after
 * checking the CPU (kernels.h's avx512 level). */
#include "engine/kernels/gemm_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c,avx512f")
#include <immintrin.h>

static void f16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(src[i]);
}

static void round_f16_avx512(const float *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(src + i), 0)));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(_cvtss_sh(src[i], 0));
}

typedef __m512 gv_t;
#define GV_W 16
#define GEMM_MR 12
#define GEMM_SUFFIX avx512
static inline gv_t gv_zero(void) { return _mm512_setzero_ps(); }
static inline gv_t gv_set1(float f) { return _mm512_set1_ps(f); }
static inline gv_t gv_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void gv_store(float *p, gv_t v) { _mm512_storeu_ps(p, v); }
static inline gv_t gv_fma(gv_t a, gv_t b, gv_t c) { return _mm512_fmadd_ps(a, b, c); }
static inline gv_t gv_add(gv_t a, gv_t b) { return _mm512_add_ps(a, b); }
static inline gv_t gv_mul(gv_t a, gv_t b) { return _mm512_mul_ps(a, b); }
static inline gv_t gv_max(gv_t a, gv_t b) { return _mm512_max_ps(a, b); }
static inline gv_t gv_min(gv_t a, gv_t b) { return _mm512_min_ps(a, b); }
static inline gv_t gv_round(gv_t a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline gv_t gv_pow2i(gv_t n)
{
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}
static inline float gv_hmax(gv_t v) { return _mm512_reduce_max_ps(v); }
static inline float gv_hsum(gv_t v) { return _mm512_reduce_add_ps(v); }
#include "engine/kernels/gemm_body.h"

void gemm_impl_avx512(gemm_impl_t *t)
{
    *t = (gemm_impl_t){"avx512",           12,
                       16,                 gemm_ukr_full_avx512,
                       gemm_ukr_half_avx512, gemm_ukr_packed_avx512, gemm_row_max_avx512,
                       gemm_row_exp_avx512,  gemm_row_scale_avx512,
                       f16_to_f32_avx512,    round_f16_avx512};
}
#endif
