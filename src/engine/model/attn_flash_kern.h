/* attn_flash_kern.h - the kernels of flash attention (internal to
 * attn_flash.c, which says what they are used for).
 *
 * A chunk is 16 consecutive positions of one KV head inside one cache
 * block, read transposed: X(d, l), dimension d of the chunk's position l,
 * is x[d * stride + l] (the F16 cache layout of kv.h with stride =
 * block_tokens, or a chunk converted to F32 with stride 16). Values are
 * F16 (converted exactly) or F32.
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

typedef struct {
    /* s[r * ss + l] = sum over d in order of q[r * qs + d] * K(d, l)
     * (one fused multiply-add per d, from +0), for r < R, l < 16. */
    void (*qk)(const void *kc, int64_t ks, bool f16, const float *q, int64_t qs, int R, int hd, float *s,
               int64_t ss);
    /* o[r * os + d] += lanes8 of a, where lane j of a sums, from +0, one
     * fused multiply-add per (c, h) in order (c < nc, h < 2) of
     * p[r * ps + 16 c + 8 h + j] * V_c(d, 8 h + j): chunk c is vc[c] with
     * stride vs[c], F16 if f16[c]. For r < R, d < hd. */
    void (*pv)(const void *const *vc, const int64_t *vs, const bool *f16, int nc, const float *p, int64_t ps,
               int R, int hd, float *o, int64_t os);
    /* out[d * 16 + l] = X(d, l) of an F16 chunk (stride), as floats. */
    void (*widen)(const uint16_t *x, int64_t stride, int hd, float *out);
    /* x[i] = fa_exp(x[i] - m) for i < n (n % 8 == 0); returns their sum:
     * lane j = i % 8 sums its values in order from +0, then
     * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). */
    float (*exp_sum)(float *x, int n, float m);
    /* The largest of x[0..n) (n % 8 == 0; -inf if all are -inf). */
    float (*max)(const float *x, int n);
    /* x[i] *= a for i < n. */
    void (*scale)(float *x, int n, float a);
    /* n (<= 16) rows of a Q8_0 or Q4_0 cache (row stride rb bytes, each
     * pointing at the head's first block) dequantized, hd values each:
     * transposed (out[d * 16 + l], a K chunk) or as rows (out[l * hd + d],
     * a V chunk). Rows n..15 are set to zero. */
    void (*deq)(bool q4, const uint8_t *rows, int64_t rb, int n, int hd, bool transpose, float *out);
} fa_kern_t;

/* The kernels for gx_level() (ggml_exact.h). */
const fa_kern_t *fa_kern(void);
/* The portable kernels (tests compare them with fa_kern()). */
const fa_kern_t *fa_kern_portable(void);

/* exp(x) for x <= 0 as the kernels compute it (ggml_v_expf's range
 * reduction and polynomial; 0 below -87.0, exactly 1 at 0). */
float fa_exp(float x);

#endif
