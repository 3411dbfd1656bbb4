/* quant_test_util.h - shared helpers of the quant unit tests: a
 * deterministic RNG, random blocks with sane fp16 scales, and independent
 * per-element decoders written from the format description (element index
 * -> byte and bit), used to cross-check quant_dequantize_row. */
#ifndef LF_QUANT_TEST_UTIL_H
#define LF_QUANT_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

static uint64_t qt_rng = 0x243F6A8885A308D3ull;

static inline uint32_t qt_rand(void)
{
    qt_rng ^= qt_rng >> 12;
    qt_rng ^= qt_rng << 25;
    qt_rng ^= qt_rng >> 27;
    return (uint32_t)((qt_rng * 2685821657736338717ull) >> 32);
}

/* uniform in [-1, 1) */
static inline float qt_unif(void)
{
    return (float)((double)qt_rand() / 2147483648.0 - 1.0);
}

/* approximately normal (sum of uniforms) */
static inline float qt_gauss(void)
{
    float s = 0;
    for (int i = 0; i < 4; i++)
        s += qt_unif();
    return s * 0.866f;
}

static inline void qt_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)qt_rand();
}

/* a positive fp16 scale in [lo, hi) */
static inline uint16_t qt_scale(float lo, float hi)
{
    return fp16_from_fp32(lo + (hi - lo) * (qt_unif() * 0.5f + 0.5f));
}

/* Fills nb random blocks of type t (random quants, sane fp16 scales). */
static inline void qt_random_blocks(qtype_t t, void *dst, int64_t nb)
{
    const qtype_info_t *info = qtype_info(t);
    qt_bytes(dst, (size_t)nb * (size_t)info->type_size);
    for (int64_t i = 0; i < nb; i++) {
        switch (t) {
        case QTYPE_Q4_0: ((block_q4_0 *)dst)[i].d = qt_scale(0.001f, 0.1f); break;
        case QTYPE_Q4_1:
            ((block_q4_1 *)dst)[i].d = qt_scale(0.001f, 0.1f);
            ((block_q4_1 *)dst)[i].m = fp16_from_fp32(-qt_unif() * 0.5f);
            break;
        case QTYPE_Q5_0: ((block_q5_0 *)dst)[i].d = qt_scale(0.001f, 0.1f); break;
        case QTYPE_Q5_1:
            ((block_q5_1 *)dst)[i].d = qt_scale(0.001f, 0.1f);
            ((block_q5_1 *)dst)[i].m = fp16_from_fp32(-qt_unif() * 0.5f);
            break;
        case QTYPE_Q8_0: ((block_q8_0 *)dst)[i].d = qt_scale(0.0001f, 0.01f); break;
        case QTYPE_Q2_K:
            ((block_q2_K *)dst)[i].d = qt_scale(0.001f, 0.05f);
            ((block_q2_K *)dst)[i].dmin = qt_scale(0.001f, 0.05f);
            break;
        case QTYPE_Q3_K: ((block_q3_K *)dst)[i].d = qt_scale(0.0001f, 0.005f); break;
        case QTYPE_Q4_K:
            ((block_q4_K *)dst)[i].d = qt_scale(0.0001f, 0.005f);
            ((block_q4_K *)dst)[i].dmin = qt_scale(0.0001f, 0.005f);
            break;
        case QTYPE_Q5_K:
            ((block_q5_K *)dst)[i].d = qt_scale(0.0001f, 0.005f);
            ((block_q5_K *)dst)[i].dmin = qt_scale(0.0001f, 0.005f);
            break;
        case QTYPE_Q6_K: ((block_q6_K *)dst)[i].d = qt_scale(0.00001f, 0.0005f); break;
        case QTYPE_IQ4_NL: ((block_iq4_nl *)dst)[i].d = qt_scale(0.0001f, 0.01f); break;
        case QTYPE_IQ4_XS: ((block_iq4_xs *)dst)[i].d = qt_scale(0.00001f, 0.001f); break;
        case QTYPE_MXFP4: ((block_mxfp4 *)dst)[i].e = (uint8_t)(118 + qt_rand() % 12); break; /* 2^-10..2^1 */
        case QTYPE_F16: {
            uint16_t *h = dst;
            h[i] = fp16_from_fp32(qt_gauss());
            break;
        }
        case QTYPE_BF16: {
            uint16_t *h = dst;
            h[i] = bf16_from_fp32(qt_gauss());
            break;
        }
        case QTYPE_F32: ((float *)dst)[i] = qt_gauss(); break;
        default: break;
        }
    }
}

/* ---- independent decoders: value of element e (0..block_size-1) ---- */

static inline float qt_el_q4_0(const block_q4_0 *b, int e)
{
    int q = e < 16 ? (b->qs[e] & 15) : (b->qs[e - 16] >> 4);
    return (float)(q - 8) * fp16_to_fp32(b->d);
}

static inline float qt_el_q4_1(const block_q4_1 *b, int e)
{
    int q = e < 16 ? (b->qs[e] & 15) : (b->qs[e - 16] >> 4);
    return (float)q * fp16_to_fp32(b->d) + fp16_to_fp32(b->m);
}

static inline int qt_q5(const uint8_t *qs, const uint8_t qh[4], int e)
{
    int lo = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
    int hi = (qh[e / 8] >> (e % 8)) & 1; /* bit e of the little-endian u32 */
    return lo | (hi << 4);
}

static inline float qt_el_q5_0(const block_q5_0 *b, int e)
{
    return (float)(qt_q5(b->qs, b->qh, e) - 16) * fp16_to_fp32(b->d);
}

static inline float qt_el_q5_1(const block_q5_1 *b, int e)
{
    return (float)qt_q5(b->qs, b->qh, e) * fp16_to_fp32(b->d) + fp16_to_fp32(b->m);
}

static inline float qt_el_q8_0(const block_q8_0 *b, int e)
{
    return (float)b->qs[e] * fp16_to_fp32(b->d);
}

/* Q2_K/Q3_K: element e: half h = e/128, r = e%128, shift pair j = r/32,
 * byte l = r%32 of the half's 32 qs bytes; sub-block (scale) = e/16. */
static inline float qt_el_q2_K(const block_q2_K *b, int e)
{
    int h = e / 128, r = e % 128, j = r / 32, l = r % 32;
    int q = (b->qs[h * 32 + l] >> (2 * j)) & 3;
    uint8_t sc = b->scales[e / 16];
    float dl = fp16_to_fp32(b->d) * (float)(sc & 15);
    float ml = fp16_to_fp32(b->dmin) * (float)(sc >> 4);
    return dl * (float)q - ml;
}

/* Q3_K scales exactly as ggml unpacks them (kmask shuffle on u32 words). */
static inline int qt_q3k_scale(const uint8_t packed[12], int i)
{
    uint32_t aux[4];
    memcpy(aux, packed, 12);
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t s[16];
    memcpy(s, aux, 16);
    return s[i] - 32;
}

static inline float qt_el_q3_K(const block_q3_K *b, int e)
{
    int h = e / 128, r = e % 128, j = r / 32, l = r % 32;
    int q = (b->qs[h * 32 + l] >> (2 * j)) & 3;
    int hbit = (b->hmask[l] >> (h * 4 + j)) & 1;
    float dl = fp16_to_fp32(b->d) * (float)qt_q3k_scale(b->scales, e / 16);
    return dl * (float)(q - (hbit ? 0 : 4));
}

static inline void qt_k4(const uint8_t s[12], int sb, int *sc, int *m)
{
    if (sb < 4) {
        *sc = s[sb] & 63;
        *m = s[sb + 4] & 63;
    } else {
        *sc = (s[sb + 4] & 15) | ((s[sb - 4] >> 6) << 4);
        *m = (s[sb + 4] >> 4) | ((s[sb] >> 6) << 4);
    }
}

/* Q4_K/Q5_K: 64-value chunk c = e/64 uses qs bytes c*32..c*32+31: low
 * nibbles are sub-block 2c, high nibbles 2c+1. */
static inline float qt_el_q4_K(const block_q4_K *b, int e)
{
    int c = e / 64, r = e % 64, sc, m;
    uint8_t byte = b->qs[c * 32 + r % 32];
    int q = r < 32 ? (byte & 15) : (byte >> 4);
    qt_k4(b->scales, e / 32, &sc, &m);
    return (fp16_to_fp32(b->d) * (float)sc) * (float)q - fp16_to_fp32(b->dmin) * (float)m;
}

static inline float qt_el_q5_K(const block_q5_K *b, int e)
{
    int c = e / 64, r = e % 64, sc, m;
    uint8_t byte = b->qs[c * 32 + r % 32];
    int q = r < 32 ? (byte & 15) : (byte >> 4);
    q |= ((b->qh[r % 32] >> (2 * c + (r >= 32))) & 1) << 4;
    qt_k4(b->scales, e / 32, &sc, &m);
    return (fp16_to_fp32(b->d) * (float)sc) * (float)q - fp16_to_fp32(b->dmin) * (float)m;
}

/* Q6_K: half h = e/128, group g = r/32 of 4, l = r%32: low 4 bits from
 * ql[h*64 + l + 32*(g&1)] (low nibble for g<2), high 2 bits from
 * qh[h*32 + l] at bit 2g; scale index h*8 + 2g + l/16. */
static inline float qt_el_q6_K(const block_q6_K *b, int e)
{
    int h = e / 128, r = e % 128, g = r / 32, l = r % 32;
    uint8_t lb = b->ql[h * 64 + l + 32 * (g & 1)];
    int lo = g < 2 ? (lb & 15) : (lb >> 4);
    int hi = (b->qh[h * 32 + l] >> (2 * g)) & 3;
    int q = (lo | (hi << 4)) - 32;
    return fp16_to_fp32(b->d) * (float)b->scales[h * 8 + 2 * g + l / 16] * (float)q;
}

/* The codebook types, from the format description: nibble of element e
 * (e < 16: low nibble of qs[e], else high nibble of qs[e - 16]) indexes
 * the table; IQ4_XS sub-block e / 32 has the 6-bit scale whose low 4 bits
 * are nibble (e / 32) % 2 of scales_l[e / 64] and high 2 bits are bits
 * 2 * (e / 32) of scales_h. MXFP4's scale is 2^(e - 127) times the E2M1
 * value (the table holds doubled values, hence 2^(e - 128)), computed here
 * with ldexpf. */
static inline int qt_nib(const uint8_t *qs, int e)
{
    return e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
}

static inline float qt_el_iq4_nl(const block_iq4_nl *b, int e)
{
    static const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return fp16_to_fp32(b->d) * (float)kv[qt_nib(b->qs, e)];
}

static inline float qt_el_iq4_xs(const block_iq4_xs *b, int e)
{
    static const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const int ib = e / 32;
    const int ls = ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((b->scales_h >> (2 * ib)) & 3) << 4);
    return (fp16_to_fp32(b->d) * (float)(ls - 32)) * (float)kv[qt_nib(b->qs + 16 * ib, e % 32)];
}

static inline float qt_el_mxfp4(const block_mxfp4 *b, int e)
{
    /* code 8 is E2M1's -0; ggml's integer table makes it +0 */
    static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    return e2m1[qt_nib(b->qs, e)] * ldexpf(1.0f, (int)b->e - 127);
}

/* Element e of block i of a row of type t (t a weight type). */
static inline float qt_el(qtype_t t, const void *row, int64_t idx)
{
    const qtype_info_t *info = qtype_info(t);
    int64_t i = idx / info->block_size;
    int e = (int)(idx % info->block_size);
    switch (t) {
    case QTYPE_F32: return ((const float *)row)[idx];
    case QTYPE_F16: return fp16_to_fp32(((const uint16_t *)row)[idx]);
    case QTYPE_BF16: return bf16_to_fp32(((const uint16_t *)row)[idx]);
    case QTYPE_Q4_0: return qt_el_q4_0((const block_q4_0 *)row + i, e);
    case QTYPE_Q4_1: return qt_el_q4_1((const block_q4_1 *)row + i, e);
    case QTYPE_Q5_0: return qt_el_q5_0((const block_q5_0 *)row + i, e);
    case QTYPE_Q5_1: return qt_el_q5_1((const block_q5_1 *)row + i, e);
    case QTYPE_Q8_0: return qt_el_q8_0((const block_q8_0 *)row + i, e);
    case QTYPE_Q2_K: return qt_el_q2_K((const block_q2_K *)row + i, e);
    case QTYPE_Q3_K: return qt_el_q3_K((const block_q3_K *)row + i, e);
    case QTYPE_Q4_K: return qt_el_q4_K((const block_q4_K *)row + i, e);
    case QTYPE_Q5_K: return qt_el_q5_K((const block_q5_K *)row + i, e);
    case QTYPE_Q6_K: return qt_el_q6_K((const block_q6_K *)row + i, e);
    case QTYPE_IQ4_NL: return qt_el_iq4_nl((const block_iq4_nl *)row + i, e);
    case QTYPE_IQ4_XS: return qt_el_iq4_xs((const block_iq4_xs *)row + i, e);
    case QTYPE_MXFP4: return qt_el_mxfp4((const block_mxfp4 *)row + i, e);
    default: return NAN;
    }
}

#endif
