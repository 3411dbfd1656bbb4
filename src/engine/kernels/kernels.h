/* kernels.h - the fast compute layer: dot products and matrix products.
 *
 * Weights stay in their GGUF type (wtype); activations are first converted
 * to wtype's vec_dot_type (qtype_info(wtype)->vec_dot_type) with
 * kern_quantize_act, exactly as ggml's CPU backend does, then multiplied.
 * Supported weight types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4 (kern_supports()).
 *
 * Row slices: W may point at any whole row of a tensor (rows are
 * qtype_row_size(wtype, k) bytes apart, no alignment assumed), so one
 * expert of a 3-D MoE tensor [k, n_rows, n_expert] is simply
 *   kern_matmul(pool, wtype, (const uint8_t *)data + e * n_rows * row_bytes,
 *               n_rows, k, act, n_tok, out)
 * with act from kern_quantize_act (tokens routed to an expert can be
 * gathered by copying their activation rows, kern_act_size(wtype, k, 1)
 * bytes each: a (row, token) value does not depend on the other tokens).
 *
 * Implementations are chosen once at run time from the CPU's features
 * (cpu_features.h: each level states every CPUID feature and OS register
 * state it needs, and a level is used only where all are present). The
 * environment variable LLM_FCGI_ISA=scalar|avx2|avxvnni|avx512 selects a
 * level instead of the best one; naming one the CPU cannot run is an error
 * (kern_isa_error), never a level that would fault. Integer block sums are exact (equal to the scalar reference
 * quant_vec_dot_ref); only float accumulation order differs between levels.
 *
 * Batch invariance (a product requirement): at a given ISA level, the value
 * kern_matmul computes for (row r, token t) is bitwise identical whatever
 * n_tok and whatever the thread count, and equal to kern_vec_dot of that
 * row and token. The tiled kernels keep one independent accumulator chain
 * per token with the same operation sequence as the single-token kernel.
 *
 * No function here allocates. Preconditions (programmer errors, not
 * checked): wtype satisfies kern_supports(); lengths (k, n) are multiples
 * of the type's block size (callers validate shapes when loading the
 * model); activation rows come from kern_quantize_act (the AVX2 Q4_0/Q5_0/
 * Q8_0 kernels rely on its int8 range [-127, 127], as ggml's do).
 */
#ifndef LF_KERNELS_H
#define LF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/quant/qtype.h"
#include "engine/kernels/tpool.h"

/* Levels in order of preference. AVX-VNNI and AVX-512 both build on AVX2
 * and need different features (cpu_features.h): an AVX-512 Xeon before
 * Sapphire Rapids lacks AVX-VNNI, an Alder Lake lacks AVX-512. */
typedef enum {
    KERN_ISA_SCALAR = 0,
    KERN_ISA_AVX2 = 1,    /* AVX + AVX2 + FMA + F16C, OS YMM state */
    KERN_ISA_AVXVNNI = 2, /* the AVX2 level + AVX-VNNI (VEX vpdpbusd: Intel
                           * client cores since Alder Lake, Zen 5): the packed
                           * kernels sum with vpdpbusd (the same values) */
    KERN_ISA_AVX512 = 3   /* the AVX2 level + AVX-512 F/DQ/BW/VL/VNNI, OS ZMM
                           * state (256/512-bit VNNI tiles) */
} kern_isa_t;

/* The ISA level in use (the first call detects it; reads LLM_FCGI_ISA and
 * LLM_FCGI_CPU_DISABLE). Where those ask for what cannot run, the best
 * level the CPU has, and kern_isa_error() says why. */
kern_isa_t kern_isa(void);

/* Why kern_isa() is what it is: the CPU (vendor, family, model and, where
 * known, micro-architecture) and the rule that chose the level. */
const char *kern_isa_reason(void);

/* The best level this CPU supports (ignores LLM_FCGI_ISA). */
kern_isa_t kern_isa_max(void);

/* True when this CPU (and OS) has every feature isa needs. */
bool kern_isa_runnable(kern_isa_t isa);

/* The features isa needs that this CPU lacks, comma-separated, in buf
 * (empty when it runs); returns buf. */
const char *kern_isa_missing(kern_isa_t isa, char *buf, size_t n);

/* NULL, or why LLM_FCGI_ISA / LLM_FCGI_CPU_DISABLE were refused (an
 * unknown name, or a level this CPU cannot run, with the missing
 * features). The command line refuses to start with it. */
const char *kern_isa_error(void);

/* Selects a level for tests and benchmarks: isa if this CPU can run it,
 * else the best runnable level below it. Returns the level actually
 * selected. Not thread-safe against running kernels: call it before
 * computing. */
kern_isa_t kern_isa_set(kern_isa_t isa);

/* "scalar", "avx2", "avxvnni" or "avx512". */
const char *kern_isa_name(kern_isa_t isa);

/* True if weights of type t can be multiplied by these kernels. */
bool kern_supports(qtype_t t);

/* Dot product of a row of n weights of type wtype with a row of n
 * activations already in wtype's vec_dot_type. */
float kern_vec_dot(qtype_t wtype, int64_t n, const void *w_row, const void *act_row);

/* Bytes kern_quantize_act needs for n_tok activation rows of length k
 * (n_tok rows of qtype_row_size(vec_dot_type, k) bytes); 0 if wtype is
 * unsupported or k is not a multiple of its block size. */
size_t kern_act_size(qtype_t wtype, int64_t k, int64_t n_tok);

/* Converts x (n_tok rows of k floats) to n_tok rows of wtype's
 * vec_dot_type in act (kern_act_size bytes). */
void kern_quantize_act(qtype_t wtype, const float *x, int64_t k, int64_t n_tok, void *act);

/* Same as kern_quantize_act (same bytes), with the token rows split across
 * the pool's threads (pool may be NULL). For prefill batches. */
void kern_quantize_act_pool(tpool_t *pool, qtype_t wtype, const float *x, int64_t k, int64_t n_tok,
                            void *act);

/* out[t * n_rows + r] = dot(W row r, act row t) for r < n_rows, t < n_tok.
 * W: n_rows rows of k weights of wtype (qtype_row_size(wtype, k) bytes
 * each); act: from kern_quantize_act. Rows are split across the pool's
 * threads (pool may be NULL: single-threaded). */
void kern_matmul(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_rows, int64_t k,
                 const void *act, int64_t n_tok, float *out);

/* One matrix product of a batch: out[t * n_rows + r] = dot(W row r, act
 * row t), as kern_matmul (act is ignored by kern_linear_multi, which sets
 * it). */
typedef struct {
    qtype_t wtype;
    const void *W;   /* n_rows rows of k weights of wtype */
    int64_t n_rows, k;
    const void *act; /* n_tok rows from kern_quantize_act(wtype, ., k, ...) */
    float *out;      /* n_tok x n_rows floats */
    const void *Wp;  /* NULL, or W packed by kern_pack (used where this level has packed kernels) */
} kern_mm_t;

/* Packed weights (kpack.h: rows interleaved 16 at a time so the decode
 * kernels stream them with no transposition or horizontal sum). Bytes of
 * the packed copy of an n_rows x k matrix of wtype, or 0 if this ISA level
 * has no packed kernels for wtype (then multiply the original rows). The
 * values are bitwise those of the VNNI level's kernels on the original
 * rows, at every level (kernels_x86_packed_avx2.h): at the AVX2 level they
 * differ from its own original-row kernels by rounding only. */
size_t kern_pack_size(qtype_t wtype, int64_t n_rows, int64_t k);

/* Writes the packed copy of W to dst (kern_pack_size bytes, 64-byte
 * aligned). Only for a wtype where kern_pack_size() > 0. */
void kern_pack(qtype_t wtype, const void *W, int64_t n_rows, int64_t k, void *dst);

/* Most jobs one pool run takes; more are done in further runs. */
#define KERN_MULTI_MAX 8

/* Runs n products over n_tok tokens in one tpool_run (per KERN_MULTI_MAX
 * jobs): the rows of all jobs are split across the threads together, so
 * Q/K/V or gate/up cost one synchronisation instead of three or two. Every
 * value is bitwise what kern_matmul gives for that job. */
void kern_matmul_multi(tpool_t *pool, int n, const kern_mm_t *jobs, int64_t n_tok);

/* Products of several matrices with the same float activations x (n_tok
 * rows of k floats; every job has this k): x is converted once per run of
 * consecutive jobs sharing a vec_dot_type (through the pool when n_tok is
 * large) into act (at least max over jobs of kern_act_size(wtype, k,
 * n_tok) bytes), jobs[i].act is set, then kern_matmul_multi runs. Values
 * equal kern_quantize_act + kern_matmul per job, bit for bit. */
void kern_linear_multi(tpool_t *pool, int n, kern_mm_t *jobs, const float *x, int64_t n_tok, void *act);

#endif
