/* ops.h - the small element-wise operations of the model families, in the
 * float operations of ggml's CPU backend (ops.cpp / vec.h of the reference).
 *
 * Everything works on one row at a time, so a token's values never depend
 * on the rest of its batch. No allocation (the GELU table is built once,
 * thread-safely, on first use); all functions are thread-safe.
 */
#ifndef LF_OPS_H
#define LF_OPS_H

#include <stdint.h>

/* y = x / sqrt(mean(x^2) + eps) * w, the sum in double as ggml does
 * (x == y allowed; w NULL: no weight, ggml_rms_norm alone). */
void ops_rms_norm(const float *x, const float *w, float *y, int64_t n, float eps);

/* y = LayerNorm(x) * w + b as ggml_norm, ggml_mul, ggml_add: the mean
 * from a double sum, the variance from 16-value blocks of squares (each
 * block summed as _mm512_reduce_add_ps, the blocks and the rest added in
 * double), y = (x - mean) / sqrt(var + eps) (x == y allowed; w, b NULL:
 * none). */
void ops_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps);
/* ops_layer_norm in place on n_rows rows of n floats (the rows' sums
 * interleaved; the same bits as one row at a time). */
void ops_layer_norm_rows(float *x, int64_t n_rows, const float *w, const float *b, int64_t n, float eps);

/* y[i] = gelu_tanh(x[i]) with ggml's F16 table (ggml_vec_gelu_f32: 0 below
 * -10, identity above 10); y may alias x. */
void ops_gelu_row(float *y, const float *x, int64_t n);

/* ops_rms_norm of each of n_heads consecutive heads of head_dim values, in
 * place, with the same head_dim weights (per-head q/k norm). */
void ops_rms_norm_heads(float *x, const float *w, int32_t n_heads, int32_t head_dim, float eps);

/* y[i] = gelu_tanh(g[i]) * u[i] with ggml's GELU: its F16 table (input and
 * output rounded to F16), 0 below -10, identity above 10 (y may alias g). */
void ops_geglu_row(float *y, const float *g, const float *u, int64_t n);

/* gpt-oss's clamped SwiGLU: x = min(g, limit), u' = clamp(u, -limit,
 * limit), y = x / (1 + exp(-alpha x)) * (u' + 1) (y may alias g). */
void ops_swiglu_oai_row(float *y, const float *g, const float *u, int64_t n, float alpha, float limit);

/* In place: s = softmax(s) as ggml_soft_max of an unmasked row of n values:
 * blocks of 16 through ggml_v_expf (gx_expf16), each block's sum added in
 * double, the n % 16 rest through expf; then times (float)(1 / sum). */
void ops_softmax(float *s, int64_t n);

/* One output row of ggml_ssm_conv (a causal depthwise convolution): y[c]
 * = the sum over taps i < K of in[i * C + c] * wt[i * C + c], from 0.0f in
 * tap order (in: K consecutive time-major rows; wt: the kernel made
 * tap-major), as gcc compiled ggml's loop: taps in groups of four as
 * rounded products added in order (its vectorised part), the K % 4 last
 * ones with fused multiply-adds (the scalar epilogue, contracted). Checked
 * against the goldens with K = 4 (qwen35) and K = 3 (lfm2). Channels are
 * independent: any vector width gives these bits. */
void ops_ssm_conv_row(const float *in, const float *wt, int64_t C, int32_t K, float *y);

/* wt[i * C + c] = w[c * K + i]: a [C][K] kernel made tap-major. */
void ops_conv_transpose(const float *w, int64_t C, int32_t K, float *wt);

/* x = cap * tanh(x / cap) (final logit soft-capping). */
void ops_softcap_row(float *x, int64_t n, float cap);

#endif
