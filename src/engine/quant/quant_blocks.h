/* quant_blocks.h - ggml's block layouts, byte for byte, and what the bytes
 * of the non-linear types mean (their 16-value codebooks, the E8M0 scale).
 *
 * These structs mirror ggml-common.h so that a GGUF tensor's bytes can be
 * read in place. Every struct is packed by construction (only uint8_t and
 * uint16_t members in an order without padding); the static asserts below
 * pin the sizes to the ones in qtype.c. fp16 values are stored as raw IEEE
 * half bits (uint16_t); see fp16.h for conversion. Multi-byte fields are
 * little-endian, as in the file (x86 only reads them in place).
 */
#ifndef LF_QUANT_BLOCKS_H
#define LF_QUANT_BLOCKS_H

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "engine/quant/qtype.h"

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define K_SCALE_SIZE 12

typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;            /* x = d * (q - 8) */
typedef struct { uint16_t d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;         /* x = d * q + m */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;   /* 5th bit in qh */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;                 /* x = d * q */
typedef struct { uint16_t d, s; int8_t qs[QK8_1]; } block_q8_1;              /* s = d * sum(q) */

typedef struct {           /* 2.625 bits per weight */
    uint8_t scales[QK_K / 16]; /* 4-bit scales and mins */
    uint8_t qs[QK_K / 4];      /* 2-bit quants */
    uint16_t d, dmin;          /* super-block scales */
} block_q2_K;

typedef struct {           /* 3.4375 bits per weight */
    uint8_t hmask[QK_K / 8];   /* high bit */
    uint8_t qs[QK_K / 4];      /* low 2 bits */
    uint8_t scales[12];        /* 6-bit scales */
    uint16_t d;
} block_q3_K;

typedef struct {           /* 4.5 bits per weight */
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE]; /* 6-bit scales and mins */
    uint8_t qs[QK_K / 2];
} block_q4_K;

typedef struct {           /* 5.5 bits per weight */
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;

typedef struct {           /* 6.5625 bits per weight */
    uint8_t ql[QK_K / 2];      /* low 4 bits */
    uint8_t qh[QK_K / 4];      /* high 2 bits */
    int8_t scales[QK_K / 16];  /* 8-bit scales */
    uint16_t d;
} block_q6_K;

typedef struct {           /* activations for K-quant dot products */
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];  /* sums of groups of 16 quants */
} block_q8_K;

/* ---- non-linear 4-bit types: a nibble indexes a 16-entry codebook ----- */

#define QK4_NL 32
#define QK_MXFP4 32

/* IQ4_NL / IQ4_XS codebook (ggml's kvalues_iq4nl): x = d * value. */
static const int8_t quant_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                              1,    13,   25,  38,  53,  69,  89,  113};

/* MXFP4's E2M1 values, doubled so they are integers (ggml's kvalues_mxfp4:
 * 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, times 2; code 8 is -0).
 * The block scale is halved to match: x = value * 2^(e - 128). */
static const int8_t quant_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* 32 values: element j (j < 16) is the low nibble of qs[j], element j + 16
 * the high nibble, as in Q4_0. */
typedef struct { uint16_t d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;        /* x = d * iq4nl[q] */

/* 256 values in 8 sub-blocks of 32, each laid out as one IQ4_NL block's
 * nibbles (qs[16 * ib ..]); sub-block ib has the 6-bit scale
 * ls = (scales_l[ib / 2] >> 4 * (ib % 2) & 15) | (scales_h >> 2 * ib & 3) << 4
 * and x = d * (ls - 32) * iq4nl[q]. */
typedef struct {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;

/* OCP microscaling FP4: an E8M0 shared exponent e (a power of two, no
 * mantissa, no sign) and 32 E2M1 values in Q4_0's nibble order. */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;      /* x = mxfp4[q] * 2^(e-128) */

/* 2^(e - 128) as a float: half of the E8M0 scale, which the doubled
 * codebook needs (ggml's ggml_e8m0_to_fp32_half). e = 0 and 1 give the
 * subnormals 2^-128 and 2^-127; e = 255 (NaN in E8M0) gives 2^127 (ggml
 * does not special-case it either; its validator rejects such rows). */
static inline float quant_e8m0_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The 6-bit scale (0..63, offset 32 not applied) of sub-block ib (0..7)
 * of an IQ4_XS super-block. */
static inline int quant_iq4xs_scale(const block_iq4_xs *b, int ib)
{
    return ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((b->scales_h >> (2 * ib)) & 3) << 4);
}

static_assert(sizeof(block_q4_0) == 18, "q4_0 layout");
static_assert(sizeof(block_q4_1) == 20, "q4_1 layout");
static_assert(sizeof(block_q5_0) == 22, "q5_0 layout");
static_assert(sizeof(block_q5_1) == 24, "q5_1 layout");
static_assert(sizeof(block_q8_0) == 34, "q8_0 layout");
static_assert(sizeof(block_q8_1) == 36, "q8_1 layout");
static_assert(sizeof(block_q2_K) == 84, "q2_K layout");
static_assert(sizeof(block_q3_K) == 110, "q3_K layout");
static_assert(sizeof(block_q4_K) == 144, "q4_K layout");
static_assert(sizeof(block_q5_K) == 176, "q5_K layout");
static_assert(sizeof(block_q6_K) == 210, "q6_K layout");
static_assert(sizeof(block_q8_K) == 292, "q8_K layout");
static_assert(sizeof(block_iq4_nl) == 18, "iq4_nl layout");
static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs layout");
static_assert(sizeof(block_mxfp4) == 17, "mxfp4 layout");

#endif
