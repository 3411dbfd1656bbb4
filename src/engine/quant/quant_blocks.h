/* quant_blocks.h - ggml's block layouts, byte for byte.
 *
 * These structs mirror ggml-common.h so that a GGUF tensor's bytes can be
 * read in place. Every struct is packed by construction (only uint8_t and
 * uint16_t members in an order without padding); the static asserts below
 * pin the sizes to the ones in qtype.c. fp16 values are stored as raw IEEE
 * half bits (uint16_t); see fp16.h for conversion.
 */
#ifndef LF_QUANT_BLOCKS_H
#define LF_QUANT_BLOCKS_H

#include <assert.h>
#include <stdint.h>

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

#endif
