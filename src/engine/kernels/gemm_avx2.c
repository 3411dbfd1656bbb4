/* gemm_avx2.c - the blocked float kernels (gemm_impl.h) for AVX2 + FMA +
 * F16C: 6 x 16 register tiles, and the same body over 16-lane pairs of
 * AVX2 registers (12 x 32 tiles: the AVX-512 level's tiling, run here so
 * the tests check it on any AVX2 machine). F16 weights are widened by
 * fp16_row_to_fp32 (F16C). The target pragma applies to this file only;
 * gemm.c calls these after checking the CPU. */
#include "engine/kernels/gemm_impl.h"

#include "engine/quant/fp16.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

static void round_f16_avx2(const float *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0)));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(_cvtss_sh(src[i], 0));
}

static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline __m256 pow2i8(__m256 n)
{
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

/* ---- 8 lanes, 6 x 16 tiles ---- */
typedef __m256 gv_t;
#define GV_W 8
#define GEMM_MR 6
#define GEMM_SUFFIX avx2
static inline gv_t gv_zero(void) { return _mm256_setzero_ps(); }
static inline gv_t gv_set1(float f) { return _mm256_set1_ps(f); }
static inline gv_t gv_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void gv_store(float *p, gv_t v) { _mm256_storeu_ps(p, v); }
static inline gv_t gv_fma(gv_t a, gv_t b, gv_t c) { return _mm256_fmadd_ps(a, b, c); }
static inline gv_t gv_add(gv_t a, gv_t b) { return _mm256_add_ps(a, b); }
static inline gv_t gv_mul(gv_t a, gv_t b) { return _mm256_mul_ps(a, b); }
static inline gv_t gv_max(gv_t a, gv_t b) { return _mm256_max_ps(a, b); }
static inline gv_t gv_min(gv_t a, gv_t b) { return _mm256_min_ps(a, b); }
static inline gv_t gv_round(gv_t a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline gv_t gv_pow2i(gv_t n) { return pow2i8(n); }
static inline float gv_hmax(gv_t v) { return hmax8(v); }
static inline float gv_hsum(gv_t v) { return hsum8(v); }
#include "engine/kernels/gemm_body.h"
#undef GV_W
#undef GEMM_MR
#undef GEMM_SUFFIX

void gemm_impl_avx2(gemm_impl_t *t)
{
    *t = (gemm_impl_t){"avx2",           6,
                       8,                gemm_ukr_full_avx2,
                       gemm_ukr_half_avx2, gemm_ukr_packed_avx2, gemm_row_max_avx2,
                       gemm_row_exp_avx2,  gemm_row_scale_avx2,
                       fp16_row_to_fp32,   round_f16_avx2};
}

/* ---- 16 lanes as two AVX2 registers, 12 x 32 tiles ---- */
typedef struct {
    __m256 lo, hi;
} gv2_t;
#define gv_t gv2_t
#define gv_zero gv2_zero
#define gv_set1 gv2_set1
#define gv_load gv2_load
#define gv_store gv2_store
#define gv_fma gv2_fma
#define gv_add gv2_add
#define gv_mul gv2_mul
#define gv_max gv2_max
#define gv_min gv2_min
#define gv_round gv2_round
#define gv_pow2i gv2_pow2i
#define gv_hmax gv2_hmax
#define gv_hsum gv2_hsum
#define GV_W 16
#define GEMM_MR 12
#define GEMM_SUFFIX avx2x2
static inline gv2_t gv2_zero(void) { return (gv2_t){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static inline gv2_t gv2_set1(float f) { return (gv2_t){_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
static inline gv2_t gv2_load(const float *p) { return (gv2_t){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
static inline void gv2_store(float *p, gv2_t v)
{
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
static inline gv2_t gv2_fma(gv2_t a, gv2_t b, gv2_t c)
{
    return (gv2_t){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
static inline gv2_t gv2_add(gv2_t a, gv2_t b) { return (gv2_t){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
static inline gv2_t gv2_mul(gv2_t a, gv2_t b) { return (gv2_t){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
static inline gv2_t gv2_max(gv2_t a, gv2_t b) { return (gv2_t){_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
static inline gv2_t gv2_min(gv2_t a, gv2_t b) { return (gv2_t){_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
static inline gv2_t gv2_round(gv2_t a)
{
    return (gv2_t){_mm256_round_ps(a.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                   _mm256_round_ps(a.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
static inline gv2_t gv2_pow2i(gv2_t n) { return (gv2_t){pow2i8(n.lo), pow2i8(n.hi)}; }
static inline float gv2_hmax(gv2_t v) { return hmax8(_mm256_max_ps(v.lo, v.hi)); }
static inline float gv2_hsum(gv2_t v) { return hsum8(_mm256_add_ps(v.lo, v.hi)); }
#include "engine/kernels/gemm_body.h"

void gemm_impl_avx2x2(gemm_impl_t *t)
{
    *t = (gemm_impl_t){"avx2x2",           12,
                       16,                 gemm_ukr_full_avx2x2,
                       gemm_ukr_half_avx2x2, gemm_ukr_packed_avx2x2, gemm_row_max_avx2x2,
                       gemm_row_exp_avx2x2,  gemm_row_scale_avx2x2,
                       fp16_row_to_fp32,     round_f16_avx2};
}
#endif
