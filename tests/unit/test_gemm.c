/* test_gemm.c - the blocked float products (gemm.h) and the encoder
 * attention (enc_attn.h) against double-precision references, for every
 * implementation this CPU runs ("avx2x2" is the AVX-512 tiling on AVX2
 * registers, so its row/column/tail logic is checked on any AVX2 machine).
 *
 * gemm: the prepared activations are exactly ggml's values (F16 halves,
 * BF16, Q8_0 and Q8_K blocks: quant.h's quantizer and back); each output
 * within 1e-5 * sum |a w| of the double sum of the same products; shapes
 * with partial tiles, several k / row / column blocks, strides, bias; the
 * same bits with 1 or 3 threads and with each row alone (no batch
 * dependence); the epilogue (accumulate into the output, bias, post).
 * enc_attn: segments (one, several, ragged), head sizes that need a half
 * panel, more keys than one block (the online softmax rescales), rising
 * scores; within 2e-5 of the largest |value|; the same bits with 1 or 3
 * threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/enc_attn.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"
#include "tap.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static float rng_f(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 11) & 0xFFFFFF) / 16777216.0f;
}

/* weights as floats quantized to t, then stored in t */
static void *make_weights(qtype_t t, int64_t n_out, int64_t k, float *deq)
{
    const size_t rs = qtype_row_size(t, k);
    uint8_t *w = malloc(rs * (size_t)n_out);
    float *row = malloc((size_t)k * sizeof(float));
    for (int64_t r = 0; r < n_out; r++) {
        for (int64_t j = 0; j < k; j++)
            row[j] = rng_f(-1.0f, 1.0f);
        if (t == QTYPE_F32)
            memcpy(w + (size_t)r * rs, row, (size_t)k * sizeof(float));
        else if (t == QTYPE_F16)
            fp16_row_from_fp32(row, (uint16_t *)(void *)(w + (size_t)r * rs), k);
        else if (t == QTYPE_BF16)
            bf16_row_from_fp32(row, (uint16_t *)(void *)(w + (size_t)r * rs), k);
        else {
            /* random bytes with sane scales would do as well; quantizing a
             * row needs only the K-quant / legacy reference quantizers */
            for (size_t b = 0; b < rs; b++)
                w[(size_t)r * rs + b] = (uint8_t)(rng_f(0.0f, 256.0f));
            const qtype_info_t *qi = qtype_info(t);
            for (int64_t blk = 0; blk < k / qi->block_size; blk++) {
                uint8_t *bp = w + (size_t)r * rs + (size_t)blk * (size_t)qi->type_size;
                uint16_t d = fp16_from_fp32(rng_f(0.001f, 0.02f));
                memcpy(bp + (t == QTYPE_Q6_K ? 208 : t == QTYPE_Q3_K ? 108 : 0), &d, 2);
                if (t == QTYPE_Q4_K || t == QTYPE_Q5_K) {
                    uint16_t dm = fp16_from_fp32(rng_f(0.0f, 0.01f));
                    memcpy(bp + 2, &dm, 2);
                }
            }
        }
        quant_dequantize_row(t, w + (size_t)r * rs, deq + r * k, k);
    }
    free(row);
    return w;
}

/* ggml's activation rounding for t, the reference way */
static void ref_round(qtype_t t, const float *x, float *y, int64_t k)
{
    const qtype_t vt = qtype_info(t)->vec_dot_type;
    if (vt == QTYPE_F32) {
        memcpy(y, x, (size_t)k * sizeof(float));
        return;
    }
    void *buf = malloc(qtype_row_size(vt, k));
    quant_quantize_row(vt, x, buf, k);
    quant_dequantize_row(vt, buf, y, k);
    free(buf);
}

typedef struct {
    int64_t n_tok, n_out, k;
} shape_t;

static void post_half(float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] *= 0.5f;
}

static void check_gemm(tpool_t *pool1, tpool_t *pool3, const char *impl, qtype_t t, shape_t s, bool bias_on)
{
    const int64_t ldx = s.k + 3, ldc = s.n_out + 5;
    float *deq = malloc((size_t)(s.n_out * s.k) * sizeof(float));
    void *W = make_weights(t, s.n_out, s.k, deq);
    float *x = malloc((size_t)(s.n_tok * ldx) * sizeof(float));
    float *act = malloc(gemm_act_floats(s.n_tok, s.k) * sizeof(float));
    float *act1 = malloc(gemm_act_floats(1, s.k) * sizeof(float));
    float *ref_a = malloc((size_t)(s.n_tok * s.k) * sizeof(float));
    float *bias = malloc((size_t)s.n_out * sizeof(float));
    float *out1 = malloc((size_t)(s.n_tok * ldc) * sizeof(float));
    float *out3 = malloc((size_t)(s.n_tok * ldc) * sizeof(float));
    float *one = malloc((size_t)ldc * sizeof(float));
    void *scratch = malloc(gemm_scratch_size(3, s.k));
    for (int64_t i = 0; i < s.n_tok * ldx; i++)
        x[i] = rng_f(-2.0f, 2.0f);
    for (int64_t r = 0; r < s.n_out; r++)
        bias[r] = rng_f(-1.0f, 1.0f);
    /* rounding: bit-exact with the reference */
    gemm_prepare(pool3, t, x, ldx, s.n_tok, s.k, act, scratch);
    bool round_ok = true;
    for (int64_t i = 0; i < s.n_tok; i++) {
        ref_round(t, x + i * ldx, ref_a + i * s.k, s.k);
        for (int64_t j = 0; j < s.k; j++)
            round_ok &= gemm_act_at(act, s.k, i, j) == ref_a[i * s.k + j];
    }
    tap_ok(round_ok, "%s %s: activations rounded as ggml's (%ld x %ld)", impl, qtype_name(t), (long)s.n_tok,
           (long)s.k);
    for (int64_t i = 0; i < s.n_tok * ldc; i++)
        out1[i] = out3[i] = -7.0f;
    const gemm_epi_t epi = {bias_on ? bias : NULL, false, NULL};
    const float *b = epi.bias;
    gemm_run(pool1, t, W, s.n_out, s.k, act, s.n_tok, out1, ldc, &epi, scratch);
    gemm_run(pool3, t, W, s.n_out, s.k, act, s.n_tok, out3, ldc, &epi, scratch);
    double worst = 0.0;
    bool pad_ok = true;
    for (int64_t i = 0; i < s.n_tok; i++) {
        for (int64_t r = 0; r < s.n_out; r++) {
            double sum = b ? b[r] : 0.0, mag = b ? fabs(b[r]) : 0.0;
            for (int64_t j = 0; j < s.k; j++) {
                const double p = (double)ref_a[i * s.k + j] * deq[r * s.k + j];
                sum += p;
                mag += fabs(p);
            }
            const double e = fabs(out1[i * ldc + r] - sum) / (mag + 1e-30);
            worst = e > worst ? e : worst;
        }
        for (int64_t r = s.n_out; r < ldc; r++)
            pad_ok &= out1[i * ldc + r] == -7.0f;
    }
    tap_ok(worst <= 1e-5 && pad_ok, "%s %s %ldx%ldx%ld%s: within %.1e of the sum of |a w| (bound 1e-5)%s", impl,
           qtype_name(t), (long)s.n_tok, (long)s.n_out, (long)s.k, b ? " +bias" : "", worst,
           pad_ok ? "" : ", wrote past n_out");
    tap_ok(!memcmp(out1, out3, (size_t)(s.n_tok * ldc) * sizeof(float)), "%s %s %ldx%ldx%ld: 1 and 3 threads agree",
           impl, qtype_name(t), (long)s.n_tok, (long)s.n_out, (long)s.k);
    bool alone = true;
    for (int64_t i = 0; i < s.n_tok; i += 1 + s.n_tok / 5) {
        gemm_prepare(pool1, t, x + i * ldx, ldx, 1, s.k, act1, scratch);
        gemm_run(pool1, t, W, s.n_out, s.k, act1, 1, one, ldc, &epi, scratch);
        alone &= !memcmp(one, out1 + i * ldc, (size_t)s.n_out * sizeof(float));
    }
    tap_ok(alone, "%s %s %ldx%ldx%ld: a row alone gives the same bits", impl, qtype_name(t), (long)s.n_tok,
           (long)s.n_out, (long)s.k);
    /* the epilogue: accumulate into what is there, then post */
    for (int64_t i = 0; i < s.n_tok * ldc; i++)
        out3[i] = 0.5f;
    const gemm_epi_t acc = {bias, true, post_half};
    gemm_run(pool3, t, W, s.n_out, s.k, act, s.n_tok, out3, ldc, &acc, scratch);
    bool epi_ok = true;
    for (int64_t i = 0; i < s.n_tok; i++)
        for (int64_t r = 0; r < ldc; r++) {
            /* out1 had the bias when bias_on */
            const double want = r < s.n_out ? ((double)out1[i * ldc + r] + (bias_on ? 0.0 : bias[r]) + 0.5) * 0.5 : 0.5;
            epi_ok &= fabs(out3[i * ldc + r] - want) <= 1e-5 * (fabs(want) + 1.0);
        }
    tap_ok(epi_ok, "%s %s %ldx%ldx%ld: accumulate + bias + post", impl, qtype_name(t), (long)s.n_tok, (long)s.n_out,
           (long)s.k);
    free(deq), free(W), free(x), free(act), free(act1), free(ref_a), free(bias), free(out1), free(out3), free(one);
    free(scratch);
}

static void check_attn(tpool_t *pool1, tpool_t *pool3, const char *impl, int64_t n, const int32_t *seg, int n_seg,
                       int n_head, int d, bool rising)
{
    const int64_t ld = (int64_t)n_head * d + 4, ldo = (int64_t)n_head * d + 2;
    float *q = malloc((size_t)(n * ld) * sizeof(float)), *k = malloc((size_t)(n * ld) * sizeof(float));
    float *v = malloc((size_t)(n * ld) * sizeof(float));
    float *o1 = malloc((size_t)(n * ldo) * sizeof(float)), *o3 = malloc((size_t)(n * ldo) * sizeof(float));
    for (int64_t i = 0; i < n * ld; i++) {
        q[i] = rng_f(-1.0f, 1.0f);
        /* rising: later keys score higher, so the running max keeps moving */
        k[i] = rng_f(-1.0f, 1.0f) + (rising ? (float)(i / ld) * 0.003f : 0.0f);
        v[i] = rng_f(-3.0f, 3.0f);
    }
    for (int64_t i = 0; i < n * ld; i++)
        if (rising)
            q[i] = fabsf(q[i]);
    const float scale = 1.0f / sqrtf((float)d) * (rising ? 4.0f : 1.0f);
    void *scratch = malloc(enc_attn_scratch_size(n, n_seg, n_head, d, 3));
    for (int64_t i = 0; i < n * ldo; i++)
        o1[i] = o3[i] = -9.0f;
    enc_attn(pool1, q, k, v, ld, n, seg, n_seg, n_head, d, scale, o1, ldo, scratch);
    enc_attn(pool3, q, k, v, ld, n, seg, n_seg, n_head, d, scale, o3, ldo, scratch);
    double worst = 0.0;
    bool pad_ok = true;
    double *p = malloc((size_t)n * sizeof(double));
    for (int s = 0; s < n_seg; s++)
        for (int h = 0; h < n_head; h++)
            for (int64_t i = seg[s]; i < seg[s + 1]; i++) {
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = seg[s]; j < seg[s + 1]; j++) {
                    double dot = 0.0;
                    for (int c = 0; c < d; c++)
                        dot += (double)q[i * ld + h * d + c] * k[j * ld + h * d + c];
                    p[j] = dot * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int64_t j = seg[s]; j < seg[s + 1]; j++)
                    sum += p[j] = exp(p[j] - mx);
                for (int c = 0; c < d; c++) {
                    double acc = 0.0, vmax = 0.0;
                    for (int64_t j = seg[s]; j < seg[s + 1]; j++) {
                        acc += p[j] / sum * v[j * ld + h * d + c];
                        vmax = fabs(v[j * ld + h * d + c]) > vmax ? fabs(v[j * ld + h * d + c]) : vmax;
                    }
                    const double e = fabs(o1[i * ldo + h * d + c] - acc) / vmax;
                    worst = e > worst || isnan(e) ? e : worst;
                }
            }
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = (int64_t)n_head * d; c < ldo; c++)
            pad_ok &= o1[i * ldo + c] == -9.0f;
    tap_ok(worst <= 2e-5 && pad_ok, "%s attention n=%ld, %d segment(s), %d heads of %d%s: within %.1e (bound 2e-5)%s",
           impl, (long)n, n_seg, n_head, d, rising ? ", rising scores" : "", worst, pad_ok ? "" : ", wrote past");
    tap_ok(!memcmp(o1, o3, (size_t)(n * ldo) * sizeof(float)), "%s attention n=%ld d=%d: 1 and 3 threads agree", impl,
           (long)n, d);
    free(p), free(q), free(k), free(v), free(o1), free(o3), free(scratch);
}

int main(void)
{
    tpool_t *pool1 = NULL, *pool3 = NULL;
    lf_err_t err = {0};
    if (tpool_create(1, &pool1, &err) != LF_OK || tpool_create(3, &pool3, &err) != LF_OK) {
        tap_ok(0, "thread pools: %s", err.msg);
        return tap_done();
    }
    tap_ok(gemm_supports(QTYPE_F32) && gemm_supports(QTYPE_F16) && gemm_supports(QTYPE_Q8_0) &&
               gemm_supports(QTYPE_Q4_K) && !gemm_supports(QTYPE_Q8_K),
           "gemm_supports: F32, F16, Q8_0, Q4_K yes; Q8_K (an activation type) no");
    static const char *const impls[] = {"scalar", "avx2", "avx2x2", "avx512"};
    for (size_t ii = 0; ii < sizeof impls / sizeof impls[0]; ii++) {
        const char *impl = impls[ii];
        if (!gemm_impl_select(impl)) {
            tap_skip("%s: this CPU cannot run it", impl);
            continue;
        }
        tap_ok(!strcmp(gemm_impl_name(), impl), "%s selected", impl);
        const shape_t shapes[] = {{1, 1, 32}, {7, 33, 64}, {37, 70, 288}, {130, 100, 544}, {5, 1100, 256}};
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            check_gemm(pool1, pool3, impl, QTYPE_F32, shapes[si], si % 2 == 0);
            check_gemm(pool1, pool3, impl, QTYPE_F16, shapes[si], si % 2 == 1);
            check_gemm(pool1, pool3, impl, QTYPE_Q8_0, shapes[si], true);
        }
        check_gemm(pool1, pool3, impl, QTYPE_F16, (shape_t){29, 40, 588}, true); /* a 14x14x3 patch */
        check_gemm(pool1, pool3, impl, QTYPE_F32, (shape_t){13, 17, 3}, false);
        check_gemm(pool1, pool3, impl, QTYPE_BF16, (shape_t){20, 24, 96}, true);
        check_gemm(pool1, pool3, impl, QTYPE_Q4_K, (shape_t){25, 18, 512}, true);
        check_gemm(pool1, pool3, impl, QTYPE_Q4_0, (shape_t){9, 31, 96}, false);
        const int32_t one[] = {0, 1}, whole[] = {0, 50}, wins[] = {0, 64, 128, 140, 150, 300};
        const int32_t big[] = {0, 600}, ragged[] = {0, 3, 70, 71, 333}, hundred[] = {0, 100};
        check_attn(pool1, pool3, impl, 1, one, 1, 2, 8, false);
        check_attn(pool1, pool3, impl, 50, whole, 1, 3, 8, false);
        check_attn(pool1, pool3, impl, 300, wins, 5, 2, 72, false);
        check_attn(pool1, pool3, impl, 600, big, 1, 2, 80, true);
        check_attn(pool1, pool3, impl, 333, ragged, 4, 3, 20, true);
        check_attn(pool1, pool3, impl, 100, hundred, 1, 1, 36, false);
    }
    gemm_impl_select("auto");
    tpool_free(pool1);
    tpool_free(pool3);
    return tap_done();
}
