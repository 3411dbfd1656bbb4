/* attn_lanes.h - attention kernels with sequence positions in SIMD lanes
 * (internal to attention.c; see there for the arithmetic they reproduce).
 *
 * A chunk is ATTN_CHUNK (16) consecutive positions of one KV head inside one
 * cache block. kv.h stores blocks transposed, so dimension d of a chunk's
 * positions is 16 consecutive F16 values at base + d * stride (stride =
 * block_tokens): one vector load. Position p of a sequence sits in lane
 * p % 16 of its chunk p / 16.
 *
 * Every kernel exists three times (portable C, AVX2 + FMA + F16C, AVX-512)
 * and the three compute the same bits on every input: they perform, per
 * lane, the same float operations in the same order (products of two F16
 * values are exact in float, so fused or not does not matter for them).
 * Lanes are independent except in hsum, which adds them in the pairing of
 * _mm512_reduce_add_ps (gx_hsum16).
 *
 * Nothing here allocates; all kernels are thread-safe.
 */
#ifndef LF_ATTN_LANES_H
#define LF_ATTN_LANES_H

#include <stdint.h>

#include "engine/model/attention.h"

/* Query heads processed together (they share each K and V load). */
enum { ATTN_GROUP = 3 };

typedef struct {
    /* y[i] = x[i] rounded to F16 (to nearest even), as float; x == y is
     * allowed. */
    void (*round16)(const float *x, int n, float *y);
    /* K.q for the 16 positions of chunk kc and ng (1..ATTN_GROUP) query
     * heads: out[g * out_stride + l] = ggml_vec_dot_f16(K row of lane l,
     * q_g, hd) * scale, where qf[g * hd + d] is q_g rounded to F16 (as
     * float). All 16 lanes are computed; lanes past the sequence hold
     * whatever the block holds there and their scores are to be ignored. */
    void (*kq)(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale, float *out,
               int64_t out_stride);
    /* The same in llamafile's tinyBLAS<16> order (hd % 16 == 0): one
     * 16-lane accumulator over head_dim, then gx_hsum16 (ggml's K.q order
     * for batches of >= 2 tokens in the 2026 reference build). */
    void (*kq_tiny)(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale, float *out,
                    int64_t out_stride);
    /* P.V lane accumulators of ng heads: acc[(g * hd + d) * 16 + l] = the
     * sum, from +0, over chunks c = c0, c0 + step, ... < c1 in that order,
     * of w_g[16c + l] * V(16c + l, d), one add per chunk; positions
     * >= n_valid are left out. w_g = pw + g * p_stride (values of F16s),
     * vc[c] is chunk c of the V head. */
    void (*pv)(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride, int ng,
               int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, float *acc);
    /* GGML_F32x16_REDUCE's first steps over four sets of n floats:
     * acc[i] = (acc[i] + acc[i + 2n]) + (acc[i + n] + acc[i + 3n]). */
    void (*reduce4)(float *acc, int64_t n);
    /* out[d] = gx_hsum16(acc + 16 * d) for d < hd. */
    void (*hsum)(const float *acc, int hd, float *out);
    /* prod[d * 16 + l] = w[l] * V(l, d) of chunk vc (w: values of F16s, so
     * the products are exact). */
    void (*prod)(const uint16_t *vc, int64_t stride, const float *w, int hd, float *prod);
} attn_lanes_t;

/* The kernels of level lv (GX_LEVEL_*; levels the CPU lacks are never
 * asked for: the caller passes gx_level()). */
const attn_lanes_t *attn_lanes(int lv);

#endif
