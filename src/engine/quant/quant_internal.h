/* quant_internal.h - helpers shared by the quant_*.c files (not public).
 *
 * Small inline decoders of the K-quant scale packings, written once so that
 * dequantization and dot products read the bytes the same way.
 */
#ifndef LF_QUANT_INTERNAL_H
#define LF_QUANT_INTERNAL_H

#include <stdint.h>

#include "engine/quant/fp16.h"
#include "engine/quant/quant_blocks.h"

/* ggml's get_scale_min_k4: scale and min (6 bits each) of sub-block j (0..7)
 * of a Q4_K/Q5_K super-block, packed in 12 bytes:
 *   j < 4: scale = q[j] & 63, min = q[j+4] & 63
 *   j >= 4: low 4 bits in q[j+4] (scale: low nibble, min: high nibble),
 *           high 2 bits in the top bits of q[j-4] (scale) and q[j] (min). */
static inline void quant_k4_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* The 16 6-bit scales of a Q3_K super-block, as signed values (raw - 32
 * NOT applied: returns raw 0..63), decoded exactly as ggml's kmask shuffle:
 * scale i has low 4 bits in byte (i % 8) (low nibble for i < 8, high nibble
 * for i >= 8) and high 2 bits in byte 8 + (i % 4) at bit 2 * (i / 4). */
static inline void quant_q3k_scales(const uint8_t *packed, int8_t out[16])
{
    for (int i = 0; i < 16; i++) {
        int low = i < 8 ? (packed[i] & 0xF) : (packed[i - 8] >> 4);
        int high = (packed[8 + (i % 4)] >> (2 * (i / 4))) & 3;
        out[i] = (int8_t)(low | (high << 4));
    }
}

#endif
