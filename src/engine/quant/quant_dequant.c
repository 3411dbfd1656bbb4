/* quant_dequant.c - weight rows -> floats, exactly ggml's dequantize_row_*.
 *
 * Each function repeats the float operations of ggml-quants.c (c392e509;
 * the IQ4 and MXFP4 ones as in the 2026 tree, which has not changed them) in
 * the same order, e.g. Q4_K is `d1 * q - m1` with d1 = d * sc, m1 = dmin * m,
 * so the results are the same bits. This matters because llama.cpp's
 * get_rows (token embedding lookup) goes through these functions. ggml-base
 * (where they live) is built without FMA, and this project builds with
 * -std=c11 (GCC: -ffp-contract=off), so neither side fuses `a * b - c`.
 */
#include <assert.h>
#include <string.h>

#include "engine/quant/quant.h"
#include "engine/quant/quant_internal.h"

static void deq_f32(const float *x, float *y, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

static void deq_q4_0(const block_q4_0 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int x0 = (x[i].qs[j] & 0x0F) - 8;
            const int x1 = (x[i].qs[j] >> 4) - 8;
            y[i * QK4_0 + j] = x0 * d;
            y[i * QK4_0 + j + QK4_0 / 2] = x1 * d;
        }
    }
}

static void deq_q4_1(const block_q4_1 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const int x0 = x[i].qs[j] & 0x0F;
            const int x1 = x[i].qs[j] >> 4;
            y[i * QK4_1 + j] = x0 * d + m;
            y[i * QK4_1 + j + QK4_1 / 2] = x1 * d + m;
        }
    }
}

/* The 5th bits: bit j of qh for element j, bit j+16 for element j+16. */
static void deq_q5_0(const block_q5_0 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
            const uint8_t xh_1 = (uint8_t)((qh >> (j + 12)) & 0x10);
            const int x0 = ((x[i].qs[j] & 0x0F) | xh_0) - 16;
            const int x1 = ((x[i].qs[j] >> 4) | xh_1) - 16;
            y[i * QK5_0 + j] = x0 * d;
            y[i * QK5_0 + j + QK5_0 / 2] = x1 * d;
        }
    }
}

static void deq_q5_1(const block_q5_1 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
            const uint8_t xh_1 = (uint8_t)((qh >> (j + 12)) & 0x10);
            const int x0 = (x[i].qs[j] & 0x0F) | xh_0;
            const int x1 = (x[i].qs[j] >> 4) | xh_1;
            y[i * QK5_1 + j] = x0 * d + m;
            y[i * QK5_1 + j + QK5_1 / 2] = x1 * d + m;
        }
    }
}

static void deq_q8_0(const block_q8_0 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_0; j++)
            y[i * QK8_0 + j] = x[i].qs[j] * d;
    }
}

/* Not a GGUF weight type; handy to inspect activations in tests. */
static void deq_q8_1(const block_q8_1 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_1; j++)
            y[i * QK8_1 + j] = x[i].qs[j] * d;
    }
}

/* 16 sub-blocks of 16; byte scales[k]: low nibble scale, high nibble min.
 * qs byte l of a 128-value half holds 4 values at shifts 0,2,4,6. */
static void deq_q2_K(const block_q2_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const float min = fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int n = 0; n < QK_K; n += 128) {
            int shift = 0;
            for (int j = 0; j < 4; j++) {
                uint8_t sc = x[i].scales[is++];
                float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((int8_t)((q[l] >> shift) & 3)) - ml;
                sc = x[i].scales[is++];
                dl = d * (sc & 0xF);
                ml = min * (sc >> 4);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3)) - ml;
                shift += 2;
            }
            q += 32;
        }
    }
}

/* 16 sub-blocks of 16 with 6-bit scales (offset 32); value = low 2 bits
 * from qs, minus 4 when the hmask bit is CLEAR. */
static void deq_q3_K(const block_q3_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d_all = fp16_to_fp32(x[i].d);
        int8_t scales[16];
        quant_q3k_scales(x[i].scales, scales);
        const uint8_t *q = x[i].qs;
        const uint8_t *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int n = 0; n < QK_K; n += 128) {
            int shift = 0;
            for (int j = 0; j < 4; j++) {
                float dl = d_all * (scales[is++] - 32);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((int8_t)((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
                dl = d_all * (scales[is++] - 32);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
                shift += 2;
                m = (uint8_t)(m << 1);
            }
            q += 32;
        }
    }
}

/* 8 sub-blocks of 32; low nibbles are sub-block 2k, high nibbles 2k+1. */
static void deq_q4_K(const block_q4_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *q = x[i].qs;
        const float d = fp16_to_fp32(x[i].d);
        const float min = fp16_to_fp32(x[i].dmin);
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < QK_K; j += 64) {
            quant_k4_scale_min(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            quant_k4_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
            is += 2;
        }
    }
}

/* As Q4_K plus a 5th bit: qh[l] bit 2k for sub-block 2k, bit 2k+1 for 2k+1. */
static void deq_q5_K(const block_q5_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ql = x[i].qs;
        const uint8_t *qh = x[i].qh;
        const float d = fp16_to_fp32(x[i].d);
        const float min = fp16_to_fp32(x[i].dmin);
        int is = 0;
        uint8_t sc, m;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < QK_K; j += 64) {
            quant_k4_scale_min(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            quant_k4_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            ql += 32;
            is += 2;
            u1 = (uint8_t)(u1 << 2);
            u2 = (uint8_t)(u2 << 2);
        }
    }
}

/* Two halves of 128; in each, 4 groups of 32 from ql low/high nibbles and
 * the 4 2-bit fields of qh; 16 int8 scales, one per 16 values. */
static void deq_q6_K(const block_q6_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *ql = x[i].ql;
        const uint8_t *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int n = 0; n < QK_K; n += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

/* The non-linear types: the codebook value (an int8, converted to float)
 * times the block's float scale, as ggml's dequantize_row_iq4_nl /
 * iq4_xs / mxfp4 (IQ4_XS: dl = d * (ls - 32) first). */
static void deq_iq4_nl(const block_iq4_nl *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, y += QK4_NL) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j] = d * quant_iq4nl_values[x[i].qs[j] & 0xF];
            y[j + QK4_NL / 2] = d * quant_iq4nl_values[x[i].qs[j] >> 4];
        }
    }
}

static void deq_iq4_xs(const block_iq4_xs *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_fp32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, y += 32, qs += 16) {
            const float dl = d * (quant_iq4xs_scale(&x[i], ib) - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * quant_iq4nl_values[qs[j] & 0xF];
                y[j + 16] = dl * quant_iq4nl_values[qs[j] >> 4];
            }
        }
    }
}

static void deq_mxfp4(const block_mxfp4 *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, y += QK_MXFP4) {
        const float d = quant_e8m0_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j] = quant_mxfp4_values[x[i].qs[j] & 0xF] * d;
            y[j + QK_MXFP4 / 2] = quant_mxfp4_values[x[i].qs[j] >> 4] * d;
        }
    }
}

static void deq_q8_K(const block_q8_K *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < QK_K; j++)
            *y++ = x[i].d * x[i].qs[j];
}

bool quant_can_dequantize(qtype_t t)
{
    switch (t) {
    case QTYPE_F32: case QTYPE_F16: case QTYPE_BF16:
    case QTYPE_Q4_0: case QTYPE_Q4_1: case QTYPE_Q5_0: case QTYPE_Q5_1:
    case QTYPE_Q8_0: case QTYPE_Q8_1:
    case QTYPE_Q2_K: case QTYPE_Q3_K: case QTYPE_Q4_K: case QTYPE_Q5_K:
    case QTYPE_Q6_K: case QTYPE_Q8_K:
    case QTYPE_IQ4_NL: case QTYPE_IQ4_XS: case QTYPE_MXFP4:
        return true;
    default:
        return false;
    }
}

void quant_dequantize_row(qtype_t t, const void *src, float *dst, int64_t n)
{
    const qtype_info_t *info = qtype_info(t);
    assert(info && quant_can_dequantize(t) && n >= 0 && n % info->block_size == 0);
    const int64_t nb = n / info->block_size;
    switch (t) {
    case QTYPE_F32: deq_f32(src, dst, n); break;
    case QTYPE_F16: fp16_row_to_fp32(src, dst, n); break;
    case QTYPE_BF16: bf16_row_to_fp32(src, dst, n); break;
    case QTYPE_Q4_0: deq_q4_0(src, dst, nb); break;
    case QTYPE_Q4_1: deq_q4_1(src, dst, nb); break;
    case QTYPE_Q5_0: deq_q5_0(src, dst, nb); break;
    case QTYPE_Q5_1: deq_q5_1(src, dst, nb); break;
    case QTYPE_Q8_0: deq_q8_0(src, dst, nb); break;
    case QTYPE_Q8_1: deq_q8_1(src, dst, nb); break;
    case QTYPE_Q2_K: deq_q2_K(src, dst, nb); break;
    case QTYPE_Q3_K: deq_q3_K(src, dst, nb); break;
    case QTYPE_Q4_K: deq_q4_K(src, dst, nb); break;
    case QTYPE_Q5_K: deq_q5_K(src, dst, nb); break;
    case QTYPE_Q6_K: deq_q6_K(src, dst, nb); break;
    case QTYPE_Q8_K: deq_q8_K(src, dst, nb); break;
    case QTYPE_IQ4_NL: deq_iq4_nl(src, dst, nb); break;
    case QTYPE_IQ4_XS: deq_iq4_xs(src, dst, nb); break;
    case QTYPE_MXFP4: deq_mxfp4(src, dst, nb); break;
    default: assert(!"unsupported type"); break;
    }
}
