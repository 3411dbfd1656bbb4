/* attn_flash_kern.h - the kernels of flash attention (internal to
 * attn_flash.c, which says what they are used for).
 *
 * A chunk is 16 consecutive positions of one KV head inside one cache
 * block, read transposed: X(d, l) is dimension d of the chunk's position
 * l. How it is stored (fa_chunk_t.kind):
 *  - FA_F32, FA_F16: x[d * stride + l] (the F16 cache layout of kv.h with
 *    stride = block_tokens, or a chunk converted to F32 with stride 16);
 *  - FA_Q8, FA_Q4: kv.h's quantized chunks, p at the head's first block
 *    of 32 dimensions: X(d, l) = scale * q, the exact float product of
 *    the F16 scale of (block d / 32, position l) and the integer (Q8: the
 *    int8; Q4: the nibble minus 8).
 * Every kernel computes with X(d, l) whatever the storage, so a chunk
 * converted to floats gives the same bits as the chunk read in place.
 *
 * Every kernel exists twice, portable C and AVX2 + FMA + F16C (also used
 * on AVX-512 machines), and both compute the same bits on every input:
 * each output element is the same chain of float operations (fmaf where
 * the vector code fuses), and the 8-lane sums (lanes8: lane j, then
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))) are spelled out. So
 * results do not depend on the CPU, and each row's arithmetic depends
 * only on that row.
 *
 * Nothing here allocates; all kernels are thread-safe.
 */
#ifndef LF_ATTN_FLASH_KERN_H
#define LF_ATTN_FLASH_KERN_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { FA_F32 = 0, FA_F16, FA_Q8, FA_Q4 } fa_kind_t;

typedef struct {
    const void *p;
    int64_t stride; /* FA_F32, FA_F16 */
    int kind;       /* fa_kind_t */
} fa_chunk_t;

typedef struct {
    /* s[r * ss + l] = sum over d in order of q[r * qs + d] * X(d, l) of
     * chunk k (one fused multiply-add per d, from +0), r < R, l < 16. */
    void (*qk)(const fa_chunk_t *k, const float *q, int64_t qs, int R, int hd, float *s, int64_t ss);
    /* o[r * os + d] += lanes8 of a, where lane j of a sums, from +0, one
     * fused multiply-add per (c, h) in order (c < nc, h < 2) of
     * p[r * ps + 16 c + 8 h + j] * X_c(d, 8 h + j), X_c of chunk v[c].
     * For r < R, d < hd. */
    void (*pv)(const fa_chunk_t *v, int nc, const float *p, int64_t ps, int R, int hd, float *o, int64_t os);
    /* out[d * 16 + l] = X(d, l) as floats, d < hd, l < 16. */
    void (*widen)(const fa_chunk_t *x, int hd, float *out);
    /* x[i] = fa_exp(x[i] - m) for i < n (n % 8 == 0); returns their sum:
     * lane j = i % 8 sums its values in order from +0, then
     * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). */
    float (*exp_sum)(float *x, int n, float m);
    /* The largest of x[0..n) (n % 8 == 0; -inf if all are -inf). */
    float (*max)(const float *x, int n);
    /* x[i] *= a for i < n. */
    void (*scale)(float *x, int n, float a);
} fa_kern_t;

/* Bytes of one 32-dimension block of a quantized chunk (kv.h). */
enum { FA_Q8_BLOCK = 16 * 2 + 32 * 16, FA_Q4_BLOCK = 16 * 2 + 16 * 16 };

/* The kernels for gx_level() (ggml_exact.h). */
const fa_kern_t *fa_kern(void);
/* The portable kernels (tests compare them with fa_kern()). */
const fa_kern_t *fa_kern_portable(void);

/* exp(x) for x <= 0 as the kernels compute it (ggml_v_expf's range
 * reduction and polynomial; 0 below -87.0, exactly 1 at 0). */
float fa_exp(float x);

#endif
