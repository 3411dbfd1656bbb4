/* quant.h - scalar reference of every GGUF tensor type the engine computes
 * with, bit-exact with ggml's CPU backend on x86 (llama.cpp c392e509 built
 * with AVX2/AVX512/F16C, which produced the goldens).
 *
 * Three operations, all on one row of n values:
 *  - dequantize: weight row of type t -> floats, exactly ggml's
 *    dequantize_row_* formulas (same float operations in the same order, so
 *    the same bits).
 *  - quantize: float activations -> an activation ("vec_dot") type: F32
 *    (copy), F16, BF16, Q8_0, Q8_1, Q8_K, reproducing what ggml's CPU backend
 *    does on x86 with AVX2 (which is NOT always the *_ref code: see
 *    quant_act.c for each choice and the reason).
 *  - vec_dot_ref: dot product of one weight row (type wtype) with one
 *    activation row already quantized to qtype_info(wtype)->vec_dot_type,
 *    following ggml's per-block integer arithmetic. Integer block sums are
 *    exact; only the order of the float accumulation may differ from a SIMD
 *    kernel, so SIMD kernels agree with this to float rounding, not bits.
 *
 * Preconditions (programmer errors, asserted, never input-dependent: the
 * loader validates types and shapes first): the type is one that
 * quant_can_dequantize / quant_can_quantize / quant_can_vec_dot accepts,
 * n >= 0 and n is a multiple of the type's block size (and of the
 * activation type's block size), buffers hold qtype_row_size(t, n) bytes or
 * n floats, and do not overlap. No allocation; thread-safe.
 */
#ifndef LF_QUANT_H
#define LF_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/quant/qtype.h"

/* F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL,
 * IQ4_XS, MXFP4 (also Q8_1 and Q8_K, handy for tests). Works on any run of
 * whole blocks, e.g. one row of one expert of a 3-D tensor. */
bool quant_can_dequantize(qtype_t t);
void quant_dequantize_row(qtype_t t, const void *src, float *dst, int64_t n);

/* F32, F16, BF16, Q8_0, Q8_1, Q8_K, Q4_0 (the KV cache type). */
bool quant_can_quantize(qtype_t t);
void quant_quantize_row(qtype_t t, const float *src, void *dst, int64_t n);

/* Weight types with a reference dot product: F32, F16, BF16, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4. */
bool quant_can_vec_dot(qtype_t wtype);
/* sum_i w[i] * a[i] where a is in qtype_info(wtype)->vec_dot_type. */
float quant_vec_dot_ref(qtype_t wtype, int64_t n, const void *w, const void *act);

#endif
