/* quant_dot.c - scalar reference dot products, weight row x activation row.
 *
 * Follows ggml's per-block integer arithmetic (the *_generic / scalar
 * branches of ggml-cpu-quants.c at c392e509): inside a block the products of
 * small integers are summed exactly in int, then scaled by the product of
 * the two block scales (dw * da, both fp16 -> fp32 except Q8_K's float d)
 * and accumulated in float, block by block. ggml's AVX2 kernels compute the
 * same integer sums; they only accumulate the floats in another order, so a
 * SIMD kernel must agree with this to float rounding, not to the bit.
 *
 * Types with min offsets use the activation's precomputed sums, as ggml:
 * Q4_1/Q5_1 add m * s (Q8_1's s = d * sum(q)), K-quants subtract
 * dmin * da * sum(bsums[k] * min[k]).
 * F32/F16/BF16 follow ggml_vec_dot_f16's scalar path: products in float,
 * accumulated in double (ggml_float), returned as float.
 *
 * Note for kernel authors: the reference build had LLAMAFILE=1, so for
 * batches its F32/F16/BF16/Q8_0/Q4_0/Q5_0 matmuls may run through tinyBLAS
 * instead of ggml_vec_dot_*: same activation rounding and the same integer
 * block products, only another float accumulation order.
 */
#include <assert.h>
#include <string.h>

#include "engine/quant/quant.h"
#include "engine/quant/quant_internal.h"

static float dot_f32(int64_t n, const float *x, const float *y)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * y[i]);
    return (float)sum;
}

static float dot_f16(int64_t n, const uint16_t *x, const uint16_t *y)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
    return (float)sum;
}

static float dot_bf16(int64_t n, const uint16_t *x, const uint16_t *y)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
    return (float)sum;
}

static float dot_q4_0(int64_t nb, const block_q4_0 *x, const block_q8_0 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int v0 = (x[i].qs[j] & 0x0F) - 8;
            const int v1 = (x[i].qs[j] >> 4) - 8;
            sumi += v0 * y[i].qs[j] + v1 * y[i].qs[j + QK4_0 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * (float)sumi;
    }
    return sumf;
}

static float dot_q4_1(int64_t nb, const block_q4_1 *x, const block_q8_1 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            const int v0 = x[i].qs[j] & 0x0F;
            const int v1 = x[i].qs[j] >> 4;
            sumi += v0 * y[i].qs[j] + v1 * y[i].qs[j + QK4_1 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * (float)sumi +
                fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sumf;
}

static float dot_q5_0(int64_t nb, const block_q5_0 *x, const block_q8_0 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        int sumi = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = ((qh >> j) & 1) << 4;
            const int h1 = ((qh >> (j + 16)) & 1) << 4;
            const int v0 = ((x[i].qs[j] & 0x0F) | h0) - 16;
            const int v1 = ((x[i].qs[j] >> 4) | h1) - 16;
            sumi += v0 * y[i].qs[j] + v1 * y[i].qs[j + QK5_0 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * (float)sumi;
    }
    return sumf;
}

static float dot_q5_1(int64_t nb, const block_q5_1 *x, const block_q8_1 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        int sumi = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = ((qh >> j) & 1) << 4;
            const int h1 = ((qh >> (j + 16)) & 1) << 4;
            const int v0 = (x[i].qs[j] & 0x0F) | h0;
            const int v1 = (x[i].qs[j] >> 4) | h1;
            sumi += v0 * y[i].qs[j] + v1 * y[i].qs[j + QK5_1 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * (float)sumi +
                fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sumf;
}

static float dot_q8_0(int64_t nb, const block_q8_0 *x, const block_q8_0 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++)
            sumi += x[i].qs[j] * y[i].qs[j];
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * (float)sumi;
    }
    return sumf;
}

static float dot_q2_K(int64_t nb, const block_q2_K *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *q2 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        const uint8_t *sc = x[i].scales;
        int summs = 0;
        for (int j = 0; j < 16; j++)
            summs += y[i].bsums[j] * (sc[j] >> 4);
        const float dall = y[i].d * fp16_to_fp32(x[i].d);
        const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
        int isum = 0, is = 0;
        for (int k = 0; k < QK_K / 128; k++) {
            int shift = 0;
            for (int j = 0; j < 4; j++) {
                int isuml = 0;
                for (int l = 0; l < 16; l++)
                    isuml += q8[l] * ((q2[l] >> shift) & 3);
                isum += (sc[is++] & 0xF) * isuml;
                isuml = 0;
                for (int l = 16; l < 32; l++)
                    isuml += q8[l] * ((q2[l] >> shift) & 3);
                isum += (sc[is++] & 0xF) * isuml;
                shift += 2;
                q8 += 32;
            }
            q2 += 32;
        }
        sumf += dall * (float)isum - dmin * (float)summs;
    }
    return sumf;
}

static float dot_q3_K(int64_t nb, const block_q3_K *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        int8_t scales[16];
        quant_q3k_scales(x[i].scales, scales);
        const uint8_t *q3 = x[i].qs;
        const uint8_t *hm = x[i].hmask;
        const int8_t *q8 = y[i].qs;
        uint8_t m = 1;
        int isum = 0, is = 0;
        for (int k = 0; k < QK_K / 128; k++) {
            int shift = 0;
            for (int j = 0; j < 4; j++) {
                for (int half = 0; half < 2; half++) {
                    int isuml = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        const int v = ((q3[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                        isuml += q8[l] * v;
                    }
                    isum += (scales[is++] - 32) * isuml;
                }
                shift += 2;
                m = (uint8_t)(m << 1);
                q8 += 32;
            }
            q3 += 32;
        }
        sumf += (fp16_to_fp32(x[i].d) * y[i].d) * (float)isum;
    }
    return sumf;
}

static float dot_q4_K(int64_t nb, const block_q4_K *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int isum = 0, summs = 0;
        for (int k = 0; k < QK_K / 64; k++) {
            uint8_t sc1, m1, sc2, m2;
            quant_k4_scale_min(2 * k, x[i].scales, &sc1, &m1);
            quant_k4_scale_min(2 * k + 1, x[i].scales, &sc2, &m2);
            int s1 = 0, s2 = 0;
            for (int l = 0; l < 32; l++) {
                s1 += q8[l] * (q4[l] & 0xF);
                s2 += q8[l + 32] * (q4[l] >> 4);
            }
            isum += sc1 * s1 + sc2 * s2;
            /* bsums come in groups of 16: 2 per 32-value sub-block */
            summs += m1 * (y[i].bsums[4 * k] + y[i].bsums[4 * k + 1]) +
                     m2 * (y[i].bsums[4 * k + 2] + y[i].bsums[4 * k + 3]);
            q4 += 32;
            q8 += 64;
        }
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
        sumf += d * (float)isum - dmin * (float)summs;
    }
    return sumf;
}

static float dot_q5_K(int64_t nb, const block_q5_K *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ql = x[i].qs;
        const uint8_t *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        int isum = 0, summs = 0;
        uint8_t u1 = 1, u2 = 2;
        for (int k = 0; k < QK_K / 64; k++) {
            uint8_t sc1, m1, sc2, m2;
            quant_k4_scale_min(2 * k, x[i].scales, &sc1, &m1);
            quant_k4_scale_min(2 * k + 1, x[i].scales, &sc2, &m2);
            int s1 = 0, s2 = 0;
            for (int l = 0; l < 32; l++) {
                s1 += q8[l] * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0));
                s2 += q8[l + 32] * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0));
            }
            isum += sc1 * s1 + sc2 * s2;
            summs += m1 * (y[i].bsums[4 * k] + y[i].bsums[4 * k + 1]) +
                     m2 * (y[i].bsums[4 * k + 2] + y[i].bsums[4 * k + 3]);
            ql += 32;
            q8 += 64;
            u1 = (uint8_t)(u1 << 2);
            u2 = (uint8_t)(u2 << 2);
        }
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
        sumf += d * (float)isum - dmin * (float)summs;
    }
    return sumf;
}

static float dot_q6_K(int64_t nb, const block_q6_K *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ql = x[i].ql;
        const uint8_t *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        const int8_t *q8 = y[i].qs;
        int isum = 0;
        for (int n = 0; n < QK_K; n += 128) {
            int s[8] = {0};
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                s[is + 0] += q1 * q8[l + 0];
                s[is + 2] += q2 * q8[l + 32];
                s[is + 4] += q3 * q8[l + 64];
                s[is + 6] += q4 * q8[l + 96];
            }
            for (int k = 0; k < 8; k++)
                isum += sc[k] * s[k];
            ql += 64;
            qh += 32;
            sc += 8;
            q8 += 128;
        }
        sumf += (fp16_to_fp32(x[i].d) * y[i].d) * (float)isum;
    }
    return sumf;
}

/* The codebook types: 32 values (16 nibble bytes, element j in the low
 * nibble of qs[j], element j + 16 in the high one) looked up in values[]
 * and multiplied by the 32 int8 activations at q8, summed exactly. */
static int lut32_sum(const uint8_t qs[16], const int8_t values[16], const int8_t *q8)
{
    int sumi = 0;
    for (int j = 0; j < 16; j++)
        sumi += q8[j] * values[qs[j] & 0xF] + q8[j + 16] * values[qs[j] >> 4];
    return sumi;
}

/* IQ4_NL and MXFP4 against Q8_0: Q4_0's arithmetic with the codebook
 * values (|v| <= 127) instead of q - 8; the block factor is dy * dx as in
 * ggml (MXFP4: dx = 2^(e-128), exact in float). */
static float dot_iq4_nl(int64_t nb, const block_iq4_nl *x, const block_q8_0 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const int sumi = lut32_sum(x[i].qs, quant_iq4nl_values, y[i].qs);
        sumf += (fp16_to_fp32(y[i].d) * fp16_to_fp32(x[i].d)) * (float)sumi;
    }
    return sumf;
}

static float dot_mxfp4(int64_t nb, const block_mxfp4 *x, const block_q8_0 *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const int sumi = lut32_sum(x[i].qs, quant_mxfp4_values, y[i].qs);
        sumf += (fp16_to_fp32(y[i].d) * quant_e8m0_half(x[i].e)) * (float)sumi;
    }
    return sumf;
}

/* IQ4_XS against Q8_K: the 8 sub-block sums times their scales (ls - 32)
 * summed exactly in int over the super-block, then one float step with
 * d * dy, as ggml's x86 (AVX2) kernel does. (ggml's portable generic code
 * adds a float per 32-value sub-block instead: same integers, another
 * float order.) |total| < 8 * 32 * 32 * 127 * 127, well inside int. */
static float dot_iq4_xs(int64_t nb, const block_iq4_xs *x, const block_q8_K *y)
{
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const int s = lut32_sum(x[i].qs + 16 * ib, quant_iq4nl_values, y[i].qs + 32 * ib);
            isum += (quant_iq4xs_scale(&x[i], ib) - 32) * s;
        }
        sumf += (fp16_to_fp32(x[i].d) * y[i].d) * (float)isum;
    }
    return sumf;
}

bool quant_can_vec_dot(qtype_t wtype)
{
    switch (wtype) {
    case QTYPE_F32: case QTYPE_F16: case QTYPE_BF16:
    case QTYPE_Q4_0: case QTYPE_Q4_1: case QTYPE_Q5_0: case QTYPE_Q5_1: case QTYPE_Q8_0:
    case QTYPE_Q2_K: case QTYPE_Q3_K: case QTYPE_Q4_K: case QTYPE_Q5_K: case QTYPE_Q6_K:
    case QTYPE_IQ4_NL: case QTYPE_IQ4_XS: case QTYPE_MXFP4:
        return true;
    default:
        return false;
    }
}

float quant_vec_dot_ref(qtype_t wtype, int64_t n, const void *w, const void *act)
{
    const qtype_info_t *info = qtype_info(wtype);
    assert(info && quant_can_vec_dot(wtype) && n >= 0 && n % info->block_size == 0);
    const int64_t nb = n / info->block_size;
    switch (wtype) {
    case QTYPE_F32: return dot_f32(n, w, act);
    case QTYPE_F16: return dot_f16(n, w, act);
    case QTYPE_BF16: return dot_bf16(n, w, act);
    case QTYPE_Q4_0: return dot_q4_0(nb, w, act);
    case QTYPE_Q4_1: return dot_q4_1(nb, w, act);
    case QTYPE_Q5_0: return dot_q5_0(nb, w, act);
    case QTYPE_Q5_1: return dot_q5_1(nb, w, act);
    case QTYPE_Q8_0: return dot_q8_0(nb, w, act);
    case QTYPE_Q2_K: return dot_q2_K(nb, w, act);
    case QTYPE_Q3_K: return dot_q3_K(nb, w, act);
    case QTYPE_Q4_K: return dot_q4_K(nb, w, act);
    case QTYPE_Q5_K: return dot_q5_K(nb, w, act);
    case QTYPE_Q6_K: return dot_q6_K(nb, w, act);
    case QTYPE_IQ4_NL: return dot_iq4_nl(nb, w, act);
    case QTYPE_IQ4_XS: return dot_iq4_xs(nb, w, act);
    case QTYPE_MXFP4: return dot_mxfp4(nb, w, act);
    default: assert(!"unsupported type"); return 0.0f;
    }
}
