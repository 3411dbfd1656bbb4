/* gemm.h - blocked float matrix products for batches of many rows (the
 * vision encoder's matrices, thousands of patches at once).
 *
 * Unlike kernels.h, no fixed summation order: the weights are unpacked
 * (F16 halves, BF16, Q8_0 blocks, ...) into F32 panels and multiplied with
 * register tiles of FMAs (gemm_impl.h), summed in K blocks of GEMM_KC.
 * What stays as ggml computes it is the rounding of the activations:
 * gemm_prepare gives the values ggml's CPU backend
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

/* Bytes of scratch gemm_prepare and gemm_run need with a pool of n_threads
 * threads and rows of at most k_max floats. */
size_t gemm_scratch_size(int n_threads, int64_t k_max);

/* Floats of prepared activations for n rows of k (any implementation). */
size_t gemm_act_floats(int64_t n, int64_t k);

/* Prepares n rows of k floats (x, ldx floats apart) for gemm_run with
 * weights of wtype, into act (gemm_act_floats): the values ggml multiplies
 * (rounded for wtype's vec_dot_type), laid out in the kernels' row tiles
 * (mr rows interleaved, the last tile padded with zero rows). Prepared
 * activations serve every weight type with the same vec_dot_type, under
 * the same implementation. Rows are split across the pool (NULL: this
 * thread). */
void gemm_prepare(tpool_t *pool, qtype_t wtype, const float *x, int64_t ldx, int64_t n, int64_t k, float *act,
                  void *scratch);

/* Row j, element i of prepared activations of rows of k (for tests). */
float gemm_act_at(const float *act, int64_t k, int64_t j, int64_t i);

/* What happens to a product's results: out = (or, with accumulate, out +=)
 * the product (+ bias[r]); then post, when not NULL, on every finished run
 * of an output row (in place; it must work element by element, e.g. an
 * activation function: it sees runs of any length). */
typedef struct {
    const float *bias;
    bool accumulate;
    void (*post)(float *y, int64_t n);
} gemm_epi_t;

/* out[t * ldc + r] (=/+=) sum_j a[t][j] W[r][j] (+ bias[r]) for t < n_tok,
 * r < n_out, j < k. W: n_out rows of k weights of wtype (qtype_row_size
 * bytes apart); act: gemm_prepare'd for wtype, n_tok rows of k; epi may be
 * NULL (store, no bias). Units of columns (and rows) are taken by the
 * pool's threads. */
void gemm_run(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_out, int64_t k, const float *act,
              int64_t n_tok, float *out, int64_t ldc, const gemm_epi_t *epi, void *scratch);

/* Selects the implementation by name: "auto" (from kern_isa()), "scalar",
 * "avx2", "avx2x2" (the AVX-512 tiling on AVX2 registers, for tests) or
 * "avx512". False (nothing changes) for an unknown name or one this CPU
 * cannot run. Not thread-safe against running products. */
bool gemm_impl_select(const char *name);

/* The name of the implementation in use. */
const char *gemm_impl_name(void);

#endif
