/* fp16.h - IEEE half (fp16) and bfloat16 <-> fp32 conversions, bit-exact
 * with ggml's CPU backend on x86.
 *
 * fp16 and bf16 values are raw 16-bit patterns (uint16_t), as stored in GGUF
 * tensors and in the block structs of quant_blocks.h.
 *
 * - fp16 -> fp32 is exact (every half is a float).
 * - fp32 -> fp16 rounds to nearest, ties to even, with IEEE subnormals,
 *   overflow to +-inf and NaN kept NaN (quiet, payload truncated), exactly
 *   like F16C `_cvtss_sh(x, 0)` / `_mm256_cvtps_ph(x, 0)` which ggml uses on
 *   x86. The F16C instruction is used when the CPU has it; a bit-exact
 *   software path is used otherwise (fp16_from_fp32_soft, exposed for tests).
 * - bf16 -> fp32 is exact (bf16 is the top half of a float).
 * - fp32 -> bf16 is ggml's GGML_FP32_TO_BF16: round to nearest even on the
 *   upper 16 bits; NaN becomes a quiet NaN (top bits | 0x40); subnormals are
 *   rounded like normals (NOT flushed). See bf16_from_fp32_avx512bf16 for the
 *   flushing variant ggml's row conversion uses on CPUs with AVX512_BF16.
 *
 * All functions are pure, thread-safe and allocate nothing. Row helpers take
 * n >= 0 elements; src and dst must not overlap.
 */
#ifndef LF_FP16_H
#define LF_FP16_H

#include <stdint.h>

float fp16_to_fp32(uint16_t h);
uint16_t fp16_from_fp32(float f);
/* Software reference of fp16_from_fp32 (same bits on every input). */
uint16_t fp16_from_fp32_soft(float f);

float bf16_to_fp32(uint16_t h);
uint16_t bf16_from_fp32(float f);
/* What VCVTNEPS2BF16 (AVX512_BF16) does: like bf16_from_fp32 except that
 * zero and subnormal inputs become a signed zero. */
uint16_t bf16_from_fp32_avx512bf16(float f);

void fp16_row_to_fp32(const uint16_t *src, float *dst, int64_t n);
void fp16_row_from_fp32(const float *src, uint16_t *dst, int64_t n);
/* h = src rounded to F16, r = the same values as F32 (exact), in one pass. */
void fp16_row_round_fp32(const float *src, uint16_t *h, float *r, int64_t n);
void bf16_row_to_fp32(const uint16_t *src, float *dst, int64_t n);
void bf16_row_from_fp32(const float *src, uint16_t *dst, int64_t n);

#endif
