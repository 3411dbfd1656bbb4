/* quant_act.c - float activations -> vec_dot types, as ggml's CPU backend
 * does it on x86 with AVX2 (llama.cpp c392e509, ggml-cpu-quants.c).
 *
 * The activation rounding decides which integers enter the dot products, so
 * it must be reproduced exactly, including where the AVX2 code differs from
 * the portable *_ref code:
 *
 *  Q8_0 (AVX2 branch of quantize_row_q8_0, not quantize_row_q8_0_ref):
 *    amax = max |x| over the block (MAXPS tree, see block_amax_avx2),
 *    d    = amax / 127.f                 stored as fp16 (F16C, RNE)
 *    id   = amax != 0 ? 127.f / amax : 0 (NOT 1/d as in the ref code)
 *    q    = _mm256_cvtps_epi32(_mm256_round_ps(x * id, _MM_ROUND_NEAREST))
 *           i.e. round half to EVEN (the ref code uses roundf: half away),
 *           then saturating packs to int8 (NaN/overflow -> INT32_MIN -> -128).
 *  Q8_1 (AVX2 branch of quantize_row_q8_1): as Q8_0, plus
 *    s = fp16(d * (float)sum_int32(q))  with the sum taken over the int32
 *    values BEFORE the int8 saturation (hsum_i32_8), d the float (not the
 *    fp16-rounded) scale.
 *  Q8_K: ggml-cpu's quantize_row_q8_K is a plain call of
 *    quantize_row_q8_K_ref on x86 at this commit (the "placeholder
 *    implementation" comment; only wasm has its own). So:
 *    max  = the signed value of largest magnitude (first one on ties),
 *    iscale = -127.f / max, q = MIN(127, nearest_int(iscale * x)) where
 *    nearest_int is the 1.5*2^23 magic-add trick (round half to even),
 *    d = 1 / iscale (a NEGATIVE d when max > 0), bsums = sums of 16 q.
 *    All-zero block: d = 0, q = 0 (ggml leaves bsums stale; we zero them,
 *    which cannot change a result since every use multiplies them by d = 0).
 *  F16: ggml_cpu_fp32_to_fp16, F16C round to nearest even (fp16.h).
 *  BF16: GGML_FP32_TO_BF16 (fp16.h).
 *  F32: copy.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "engine/quant/quant.h"
#include "engine/quant/quant_internal.h"

/* MAXPS semantics: returns b unless a > b (so NaN in either -> b). */
static inline float maxps(float a, float b)
{
    return a > b ? a : b;
}

/* The AVX2 reduction of quantize_row_q8_0/q8_1: four 8-lane vectors of |x|
 * folded lane-wise, then the 128-bit halves, then movehl, then movehdup.
 * For finite inputs this is simply max |x|; the order only matters for NaN. */
static float block_amax_avx2(const float *x)
{
    float lane[8];
    for (int l = 0; l < 8; l++)
        lane[l] = fabsf(x[l]);
    for (int v = 1; v < 4; v++)
        for (int l = 0; l < 8; l++)
            lane[l] = maxps(lane[l], fabsf(x[8 * v + l]));
    float m4[4];
    for (int l = 0; l < 4; l++)
        m4[l] = maxps(lane[4 + l], lane[l]);
    const float r0 = maxps(m4[0], m4[2]);
    const float r1 = maxps(m4[1], m4[3]);
    return maxps(r0, r1);
}

/* _mm256_round_ps(v, _MM_ROUND_NEAREST) then _mm256_cvtps_epi32: NaN and
 * values outside int32 give the "integer indefinite" INT32_MIN. */
static inline int32_t round_cvt_epi32(float v)
{
    float r = nearbyintf(v); /* default rounding mode: nearest, ties to even */
    if (!(r >= -2147483648.0f && r < 2147483648.0f))
        return INT32_MIN;
    return (int32_t)r;
}

/* packs_epi32 then packs_epi16: signed saturation to int8. */
static inline int8_t sat_i8(int32_t v)
{
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

static void quantize_q8_0(const float *x, block_q8_0 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK8_0) {
        const float amax = block_amax_avx2(x);
        const float d = amax / 127.f;
        y[i].d = fp16_from_fp32(d);
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        for (int j = 0; j < QK8_0; j++)
            y[i].qs[j] = sat_i8(round_cvt_epi32(x[j] * id));
    }
}

/* Q4_0: ggml's CPU backend uses quantize_row_q4_0_ref (no SIMD branch):
 * d = (the value of largest magnitude) / -8, q = min(15, (int8)(x / d + 8.5)).
 * Used for the KV cache (kv.h), where llama.cpp's ggml_cpy does the same. */
static void quantize_q4_0(const float *x, block_q4_0 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK4_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK4_0; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp16_from_fp32(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int8_t a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[QK4_0 / 2 + j] * id + 8.5f);
            const uint8_t x0 = (uint8_t)(a < 15 ? a : 15), x1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(x0 | x1 << 4);
        }
    }
}

static void quantize_q8_1(const float *x, block_q8_1 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK8_1) {
        const float amax = block_amax_avx2(x);
        const float d = amax / 127.f;
        y[i].d = fp16_from_fp32(d);
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        uint32_t sum = 0; /* int32 lanes wrap; unsigned avoids UB */
        for (int j = 0; j < QK8_1; j++) {
            const int32_t v = round_cvt_epi32(x[j] * id);
            sum += (uint32_t)v;
            y[i].qs[j] = sat_i8(v);
        }
        y[i].s = fp16_from_fp32(d * (float)(int32_t)sum);
    }
}

/* ggml's nearest_int: valid for |f| <= 4194303 (always true here: |q| is at
 * most ~127); the magic add rounds half to even in the default mode. */
static inline int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static void quantize_q8_K(const float *x, block_q8_K *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            y[i].d = 0;
            memset(y[i].qs, 0, sizeof y[i].qs);
            memset(y[i].bsums, 0, sizeof y[i].bsums);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++)
                sum += y[i].qs[j * 16 + l];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

bool quant_can_quantize(qtype_t t)
{
    switch (t) {
    case QTYPE_F32: case QTYPE_F16: case QTYPE_BF16:
    case QTYPE_Q8_0: case QTYPE_Q8_1: case QTYPE_Q8_K: case QTYPE_Q4_0:
        return true;
    default:
        return false;
    }
}

void quant_quantize_row(qtype_t t, const float *src, void *dst, int64_t n)
{
    const qtype_info_t *info = qtype_info(t);
    assert(info && quant_can_quantize(t) && n >= 0 && n % info->block_size == 0);
    const int64_t nb = n / info->block_size;
    switch (t) {
    case QTYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case QTYPE_F16: fp16_row_from_fp32(src, dst, n); break;
    case QTYPE_BF16: bf16_row_from_fp32(src, dst, n); break;
    case QTYPE_Q8_0: quantize_q8_0(src, dst, nb); break;
    case QTYPE_Q4_0: quantize_q4_0(src, dst, nb); break;
    case QTYPE_Q8_1: quantize_q8_1(src, dst, nb); break;
    case QTYPE_Q8_K: quantize_q8_K(src, dst, nb); break;
    default: assert(!"unsupported type"); break;
    }
}
