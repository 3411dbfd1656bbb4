/* qtype.h - the ggml tensor types found in GGUF files.
 *
 * The numeric values are ggml's (they are stored in GGUF tensor infos).
 * A type is either a plain scalar (F32, F16, BF16) or a block format: every
 * `block_size` consecutive values of a row are stored in `type_size` bytes.
 * Row lengths must be a multiple of block_size. `vec_dot_type` is the type
 * the activations are converted to before a dot product with a row of this
 * type, exactly as ggml's CPU backend does (it decides rounding, so it
 * decides whether we agree with llama.cpp).
 */
#ifndef LF_QTYPE_H
#define LF_QTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    QTYPE_F32 = 0,
    QTYPE_F16 = 1,
    QTYPE_Q4_0 = 2,
    QTYPE_Q4_1 = 3,
    QTYPE_Q5_0 = 6,
    QTYPE_Q5_1 = 7,
    QTYPE_Q8_0 = 8,
    QTYPE_Q8_1 = 9,
    QTYPE_Q2_K = 10,
    QTYPE_Q3_K = 11,
    QTYPE_Q4_K = 12,
    QTYPE_Q5_K = 13,
    QTYPE_Q6_K = 14,
    QTYPE_Q8_K = 15,
    QTYPE_IQ4_NL = 20,
    QTYPE_IQ4_XS = 23,
    QTYPE_BF16 = 30,
    QTYPE_MXFP4 = 39,
    QTYPE_COUNT = 43 /* one past the largest id ggml defines */
} qtype_t;

#define QK_K 256 /* super-block size of the K-quants */

typedef struct {
    const char *name;     /* ggml's name, e.g. "q4_K" */
    int block_size;       /* values per block (1 for scalar types) */
    int type_size;        /* bytes per block */
    bool supported;       /* weights of this type can be used by the engine */
    qtype_t vec_dot_type; /* activation type for dot products */
} qtype_info_t;

/* Traits of type id `t`, or NULL if `t` is not a type ggml knows (ids that
 * ggml retired, such as 4..5 and 31..33, have no traits). */
const qtype_info_t *qtype_info(uint32_t t);

/* Name of type id t, "unknown(N)" style names are not produced: returns
 * "unknown" for ids without traits. */
const char *qtype_name(uint32_t t);

/* Bytes of a row of n values of type t; 0 if n is not a multiple of the
 * block size or t is unknown. */
size_t qtype_row_size(qtype_t t, int64_t n);

/* Writes the names of the weight types the engine computes with
 * ("f32, f16, ..."), in id order, into buf (always NUL-terminated when cap
 * > 0, truncated if cap is too small). For load-time error messages. */
void qtype_supported_names(char *buf, size_t cap);

#endif
