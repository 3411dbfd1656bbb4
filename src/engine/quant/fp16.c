/* fp16.c - fp16/bf16 conversions (see fp16.h for the contract).
 *
 * Why two fp32->fp16 paths: ggml's CPU backend on x86 converts with F16C
 * (`_cvtss_sh(x, 0)` / `_mm256_cvtps_ph(x, 0)`: round to nearest even). The
 * software path below produces the same bits for every float (the unit test
 * compares both on edge cases and millions of random patterns), so builds or
 * CPUs without F16C still agree with the goldens.
 *
 * NaN: F16C keeps the sign and the top 10 payload bits and sets the quiet
 * bit; fp16->fp32 (VCVTPH2PS) likewise sets the quiet bit. The software paths
 * do the same.
 */
#include "engine/quant/fp16.h"

#include "engine/kernels/cpu_features.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FP16_HAVE_X86 1
#endif

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- fp16 -> fp32 (exact) ---------------------------------------------- */

static float fp16_to_fp32_soft(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * 0x1p-24f;
        return f32_from_bits(f32_bits(v) | sign);
    }
    if (exp == 31) /* inf, or NaN made quiet */
        return f32_from_bits(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0));
    return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

float fp16_to_fp32(uint16_t h)
{
    return fp16_to_fp32_soft(h);
}

/* ---- fp32 -> fp16 (round to nearest even) ------------------------------ */

uint16_t fp16_from_fp32_soft(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;

    if (ax > 0x7f800000u) /* NaN: quiet, top payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520 (halfway past 65504) and inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* result normal (>= 2^-14) */
        uint32_t m = ax - 0x38000000u; /* rebias exponent 127 -> 15 */
        m += 0xfffu + ((m >> 13) & 1u);  /* ties to even; carry may bump exp */
        return (uint16_t)(sign | (m >> 13));
    }
    if (ax < 0x33000000u) /* < 2^-25 (2^-25 itself ties to 0 too) */
        return sign;
    /* result subnormal: count units of 2^-24 */
    uint32_t e = ax >> 23;                  /* 102..112 */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;              /* 14..24 */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

#ifdef FP16_HAVE_X86
__attribute__((target("f16c"))) static uint16_t fp16_from_fp32_f16c(float f)
{
    return (uint16_t)_cvtss_sh(f, 0);
}

__attribute__((target("avx,f16c"))) static void fp16_row_from_fp32_f16c(const float *src,
                                                                        uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    for (; i < n; i++)
        dst[i] = fp16_from_fp32_f16c(src[i]);
}

__attribute__((target("avx,f16c"))) static void fp16_row_to_fp32_f16c(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    for (; i < n; i++)
        dst[i] = fp16_to_fp32_soft(src[i]);
}

__attribute__((target("avx,f16c"))) static void fp16_row_round_fp32_f16c(const float *src, uint16_t *h, float *r,
                                                                         int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0);
        _mm_storeu_si128((__m128i *)(void *)(h + i), v);
        _mm256_storeu_ps(r + i, _mm256_cvtph_ps(v));
    }
    for (; i < n; i++) {
        h[i] = fp16_from_fp32_f16c(src[i]);
        r[i] = fp16_to_fp32_soft(h[i]);
    }
}

static int fp16_cpu_has_f16c(void)
{
    static int cached = -1; /* benign race: every thread computes the same */
    if (cached < 0) {
        const cpuf_t need = CPUF_AVX | CPUF_F16C | CPUF_OS_YMM;
        cached = (cpuf_detect() & need) == need;
    }
    return cached;
}
#endif

uint16_t fp16_from_fp32(float f)
{
#ifdef FP16_HAVE_X86
    if (fp16_cpu_has_f16c())
        return fp16_from_fp32_f16c(f);
#endif
    return fp16_from_fp32_soft(f);
}

/* ---- bf16 -------------------------------------------------------------- */

float bf16_to_fp32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

/* ggml_compute_fp32_to_bf16 (ggml-impl.h at c392e509): NaN -> quiet NaN,
 * everything else rounds to nearest even by integer add; subnormals are not
 * flushed (older ggml versions did flush; this one does not). */
uint16_t bf16_from_fp32(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 64u);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

/* Intel SDM convert_fp32_to_bfloat16 (VCVTNEPS2BF16): DAZ/FTZ forced. */
uint16_t bf16_from_fp32_avx512bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7f800000u) == 0)
        return (uint16_t)((u >> 16) & 0x8000u);
    return bf16_from_fp32(f);
}

/* ---- rows -------------------------------------------------------------- */

void fp16_row_to_fp32(const uint16_t *src, float *dst, int64_t n)
{
#ifdef FP16_HAVE_X86
    if (fp16_cpu_has_f16c()) {
        fp16_row_to_fp32_f16c(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = fp16_to_fp32(src[i]);
}

void fp16_row_from_fp32(const float *src, uint16_t *dst, int64_t n)
{
#ifdef FP16_HAVE_X86
    if (fp16_cpu_has_f16c()) {
        fp16_row_from_fp32_f16c(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = fp16_from_fp32_soft(src[i]);
}

void fp16_row_round_fp32(const float *src, uint16_t *h, float *r, int64_t n)
{
#ifdef FP16_HAVE_X86
    if (fp16_cpu_has_f16c()) {
        fp16_row_round_fp32_f16c(src, h, r, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        h[i] = fp16_from_fp32_soft(src[i]);
        r[i] = fp16_to_fp32_soft(h[i]);
    }
}

void bf16_row_to_fp32(const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = bf16_to_fp32(src[i]);
}

/* ggml's BF16 activation conversion (from_float of GGML_TYPE_BF16) is the
 * scalar GGML_FP32_TO_BF16 loop in the CPU backend of that commit. */
void bf16_row_from_fp32(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = bf16_from_fp32(src[i]);
}
