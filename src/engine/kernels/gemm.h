/* gemm.h - blocked float matrix products for batches of many rows (the
 * vision encoder's matrices, thousands of patches at once).
 *
 * Unlike kernels.h, no fixed summation order and no batch invariance: the
 * weights are unpacked (F16 halves, BF16, Q8_0 blocks, ...) into F32 panels
 * and multiplied with register tiles of FMAs (gemm_impl.h), summed in K
 * blocks of GEMM_KC. What stays as ggml computes it is the rounding of the
 * activations: gemm_round_act gives the values ggml's CPU backend
 * multiplies for that weight type (its vec_dot_type: F16 rounds to halves,
 * Q8_0 to Q8_0 blocks, F32 keeps them), so every product is ggml's and only
 * the order of the sums differs. For a given implementation the result of
 * an element depends on nothing but its own row and column (neither the
 * thread count nor the batch).
 *
 * Implementations are chosen at run time from kern_isa() (kernels.h: the
 * avx512 level takes the AVX-512F kernels, avx2 and avxvnni the AVX2 ones,
 * scalar a portable body); gemm_impl_select overrides it for tests.
 *
 * No function here allocates; scratch comes from the caller.
 */
#ifndef LF_GEMM_H
#define LF_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/tpool.h"
#include "engine/quant/qtype.h"

/* True when weights of wtype can be multiplied here: F32, F16, BF16 and
 * every type whose rows and whose vec_dot_type rows can be converted to
 * floats (quant.h): Q8_0, Q4_0, Q4_K, ... */
bool gemm_supports(qtype_t wtype);

/* Bytes of scratch gemm_round_act and gemm_run need with a pool of
 * n_threads threads and rows of at most k_max floats. */
size_t gemm_scratch_size(int n_threads, int64_t k_max);

/* The activations as ggml rounds them for wtype: n rows of k floats from
 * x into xr (n * k floats); returns xr, or x itself where wtype multiplies
 * float activations as they are (F32; xr is then untouched). Rows are
 * split across the pool (NULL: this thread). */
const float *gemm_round_act(tpool_t *pool, qtype_t wtype, const float *x, int64_t n, int64_t k, float *xr,
                            void *scratch);

/* out[t * ldc + r] = sum_j a[t * lda + j] W[r][j] (+ bias[r]) for t < n_tok,
 * r < n_out, j < k. W: n_out rows of k weights of wtype (qtype_row_size
 * bytes apart); a: from gemm_round_act for wtype; bias may be NULL. The
 * columns are split across the pool's threads. */
void gemm_run(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_out, int64_t k, const float *a, int64_t lda,
              int64_t n_tok, const float *bias, float *out, int64_t ldc, void *scratch);

/* Selects the implementation by name: "auto" (from kern_isa()), "scalar",
 * "avx2", "avx2x2" (the AVX-512 tiling on AVX2 registers, for tests) or
 * "avx512". False (nothing changes) for an unknown name or one this CPU
 * cannot run. Not thread-safe against running products. */
bool gemm_impl_select(const char *name);

/* The name of the implementation in use. */
const char *gemm_impl_name(void);

#endif
