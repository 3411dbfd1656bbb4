/* test_quant_files.c - dequantize every quantized tensor of the shared
 * fixtures and compare with the same tensor of the F32 original.
 *
 * The tiny256-* files are llama-quantize outputs of tiny256-f32.gguf and the
 * stories260K-* files are ggml quantizations of stories260K.gguf (see
 * shared/models/PROVENANCE.txt), so every quantized value must lie within
 * what its type can represent. Bounds per element (d, m: the block's fp16
 * scale/min; 2^-11 = fp16 half ulp, which the stored d and m carry):
 *   F16/BF16: bit-exact = fp16/bf16 rounding of the f32 value.
 *   Q8_0: d*(1/2 + 128*2^-11)  (round to nearest; q*|d - fp16(d)|)
 *   Q4_1/Q5_1: d*(1/2 + (2^b+1)*2^-11) + |m|*2^-11  (min-max, nearest)
 *   Q4_0/Q5_0: |d|*(1 + (2^(b-1)+1)*2^-11)  (the clamped top code may be a
 *     whole step off: ggml maps -max to 2^b, clamps it to 2^b - 1)
 *   K and IQ4 types: search-based quantizers with 6/8-bit sub-scales (or a
 *     searched block scale) have no simple per-element bound; we bound the
 *     RMS error relative to the RMS weight (measured on these files: Q2_K
 *     0.296, Q3_K 0.151, Q4_K 0.071, Q5_K 0.036, Q6_K 0.0177, IQ4_NL 0.076,
 *     IQ4_XS 0.077) with ~40% margin, and every element error by a fraction
 *     of the max |x| of its block (super-block for the 256 types; measured
 *     worst: Q2_K 0.38, Q3_K 0.22, Q4_K 0.094, Q5_K 0.05, Q6_K 0.016,
 *     IQ4_NL 0.119, IQ4_XS 0.116; limits 0.5, 0.3, 0.15, 0.08, 0.04, 0.17,
 *     0.17).
 *   MXFP4: 4 * 2^(e-128) (the largest grid step is 8 -> 12 in doubled
 *     units, and values up to 16 of them clip to 12), and the bytes must be
 *     exactly ggml's quantize_row_mxfp4_ref of the f32 rows.
 *     A layout mistake gives errors of the order of the weights themselves.
 * Legacy types and MXFP4 are also re-quantized with ggml's ref formulas:
 * byte-identical (so our dequantization inverts llama-quantize's rounding).
 * Also: vec_dot_ref on real rows against the dot of the dequantized rows.
 */
#include "engine/quant/fp16.h"
#include "engine/gguf/gguf.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "quant_test_util.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t n, n_bad;
    double se, sx;   /* sum of squared errors, of squared weights */
    double worst;    /* max of err / bound (per-element types) or err / blockmax */
    int rows_dot, bad_dot;
    int64_t req_blocks, req_diff; /* legacy types: blocks re-quantized, differing */
} stats_t;

static const float two_m11 = 1.0f / 2048.0f;

/* K-type limits: RMS error / RMS weight, and per-element err / superblock amax */
static double k_rms_limit(qtype_t t)
{
    switch (t) {
    case QTYPE_Q2_K: return 0.42;
    case QTYPE_Q3_K: return 0.21;
    case QTYPE_Q4_K: return 0.10;
    case QTYPE_Q5_K: return 0.05;
    case QTYPE_Q6_K: return 0.025;
    case QTYPE_IQ4_NL: return 0.11;
    case QTYPE_IQ4_XS: return 0.11;
    default: return 0;
    }
}

static double k_elem_limit(qtype_t t)
{
    switch (t) {
    case QTYPE_Q2_K: return 0.5;
    case QTYPE_Q3_K: return 0.3;
    case QTYPE_Q4_K: return 0.15;
    case QTYPE_Q5_K: return 0.08;
    case QTYPE_Q6_K: return 0.04;
    case QTYPE_IQ4_NL: return 0.17;
    case QTYPE_IQ4_XS: return 0.17;
    default: return 0;
    }
}

/* Per-element bound for the legacy types, from block i's scales. */
static double legacy_bound(qtype_t t, const void *row, int64_t i)
{
    switch (t) {
    case QTYPE_Q8_0: {
        double d = fp16_to_fp32(((const block_q8_0 *)row)[i].d);
        return d * (0.5 + 128 * two_m11);
    }
    case QTYPE_Q4_0:
        return fabs(fp16_to_fp32(((const block_q4_0 *)row)[i].d)) * (1 + 9 * two_m11);
    case QTYPE_Q5_0:
        return fabs(fp16_to_fp32(((const block_q5_0 *)row)[i].d)) * (1 + 17 * two_m11);
    case QTYPE_Q4_1: {
        const block_q4_1 *b = (const block_q4_1 *)row + i;
        return fp16_to_fp32(b->d) * (0.5 + 17 * two_m11) + fabs(fp16_to_fp32(b->m)) * two_m11;
    }
    case QTYPE_Q5_1: {
        const block_q5_1 *b = (const block_q5_1 *)row + i;
        return fp16_to_fp32(b->d) * (0.5 + 33 * two_m11) + fabs(fp16_to_fp32(b->m)) * two_m11;
    }
    case QTYPE_MXFP4: /* largest grid step 4 * 2^(e-128) (8 -> 12); values up to 16 * that clip to 12 */
        return 4 * quant_e8m0_half(((const block_mxfp4 *)row)[i].e);
    default: return 0;
    }
}

/* Types whose quantizer searches for the scales (no per-element formula). */
static int is_k(qtype_t t)
{
    return t == QTYPE_Q2_K || t == QTYPE_Q3_K || t == QTYPE_Q4_K || t == QTYPE_Q5_K || t == QTYPE_Q6_K ||
           t == QTYPE_IQ4_NL || t == QTYPE_IQ4_XS;
}

static void check_row(qtype_t t, const void *qrow, const float *ref, float *deq, int64_t n, stats_t *st)
{
    const qtype_info_t *info = qtype_info(t);
    quant_dequantize_row(t, qrow, deq, n);
    if (t == QTYPE_F16 || t == QTYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            float want = t == QTYPE_F16 ? fp16_to_fp32(fp16_from_fp32(ref[i]))
                                        : bf16_to_fp32(bf16_from_fp32(ref[i]));
            st->n_bad += memcmp(&want, &deq[i], 4) != 0;
            st->se += (double)(ref[i] - deq[i]) * (ref[i] - deq[i]);
            st->sx += (double)ref[i] * ref[i];
        }
        st->n += n;
        return;
    }
    for (int64_t b = 0; b < n / info->block_size; b++) {
        const int bs = info->block_size;
        const float *x = ref + b * bs, *y = deq + b * bs;
        double limit;
        if (is_k(t)) {
            double amax = 0;
            for (int i = 0; i < bs; i++)
                amax = fmax(amax, fabs(x[i]));
            limit = k_elem_limit(t) * amax + 1e-7;
        } else {
            limit = legacy_bound(t, qrow, b) + 1e-7;
        }
        for (int i = 0; i < bs; i++) {
            double e = fabs((double)x[i] - y[i]);
            st->se += e * e;
            st->sx += (double)x[i] * x[i];
            if (e / limit > st->worst)
                st->worst = e / limit;
            st->n_bad += e > limit || !isfinite(y[i]);
        }
    }
    st->n += n;
}

/* vec_dot_ref of the row with a random activation vs the double dot of the
 * dequantized row and dequantized activation. */
static void check_dot(qtype_t t, const void *qrow, const float *deq, int64_t n, stats_t *st)
{
    const qtype_t at = qtype_info(t)->vec_dot_type;
    float *x = malloc((size_t)n * sizeof *x), *af = malloc((size_t)n * sizeof *af);
    void *act = malloc(qtype_row_size(at, n) + 4 * (size_t)n);
    if (!x || !af || !act) {
        st->bad_dot++;
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = qt_gauss();
    quant_quantize_row(at, x, act, n);
    quant_dequantize_row(at, act, af, n);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        exact += (double)deq[i] * af[i];
        mag += fabs((double)deq[i] * af[i]);
    }
    if (at == QTYPE_Q8_1) /* the min term uses the fp16 s (see test_quant.c) */
        for (int64_t b = 0; b < n / 32; b++) {
            const block_q8_1 *ab = (const block_q8_1 *)act + b;
            uint16_t m = t == QTYPE_Q4_1 ? ((const block_q4_1 *)qrow)[b].m : ((const block_q5_1 *)qrow)[b].m;
            mag += fabs(fp16_to_fp32(m) * fp16_to_fp32(ab->s)) * 0x1p-10 / 2e-6;
        }
    float got = quant_vec_dot_ref(t, n, qrow, act);
    st->rows_dot++;
    if (!(fabs(got - exact) <= 2e-6 * mag + 1e-30))
        st->bad_dot++;
out:
    free(x);
    free(af);
    free(act);
}

/* ---- llama-quantize reproduction (legacy types) ----------------------
 * Without an imatrix, llama-quantize stores exactly ggml's
 * quantize_row_*_ref output (these are the portable ref formulas, which use
 * roundf/truncation and id = 1/d, unlike the AVX2 activation code). Writing
 * them out again here and comparing bytes checks our block layouts (nibble
 * order, 5th-bit positions) and our fp16 rounding on every real block. */
static void ref_q8_0(const float *x, block_q8_0 *y)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
    y->d = fp16_from_fp32(d);
    for (int j = 0; j < 32; j++)
        y->qs[j] = (int8_t)roundf(x[j] * id);
}

static void ref_absmax(const float *x, float *max)
{
    float amax = 0;
    *max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            *max = x[j];
        }
}

static void ref_minmax(const float *x, float *min, float *max)
{
    *min = 3.4e38f;
    *max = -3.4e38f;
    for (int j = 0; j < 32; j++) {
        *min = fminf(*min, x[j]);
        *max = fmaxf(*max, x[j]);
    }
}

static void ref_q4_0(const float *x, block_q4_0 *y)
{
    float max;
    ref_absmax(x, &max);
    const float d = max / -8, id = d ? 1.0f / d : 0.0f;
    y->d = fp16_from_fp32(d);
    for (int j = 0; j < 16; j++) {
        const int8_t a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[16 + j] * id + 8.5f);
        y->qs[j] = (uint8_t)((a < 15 ? a : 15) | ((b < 15 ? b : 15) << 4));
    }
}

static void ref_q4_1(const float *x, block_q4_1 *y)
{
    float min, max;
    ref_minmax(x, &min, &max);
    const float d = (max - min) / 15, id = d ? 1.0f / d : 0.0f;
    y->d = fp16_from_fp32(d);
    y->m = fp16_from_fp32(min);
    for (int j = 0; j < 16; j++) {
        const int8_t a = (int8_t)((x[j] - min) * id + 0.5f), b = (int8_t)((x[16 + j] - min) * id + 0.5f);
        y->qs[j] = (uint8_t)((a < 15 ? a : 15) | ((b < 15 ? b : 15) << 4));
    }
}

static void ref_q5_0(const float *x, block_q5_0 *y)
{
    float max;
    ref_absmax(x, &max);
    const float d = max / -16, id = d ? 1.0f / d : 0.0f;
    y->d = fp16_from_fp32(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        int8_t a = (int8_t)(x[j] * id + 16.5f), b = (int8_t)(x[16 + j] * id + 16.5f);
        a = a < 31 ? a : 31;
        b = b < 31 ? b : 31;
        y->qs[j] = (uint8_t)((a & 15) | ((b & 15) << 4));
        qh |= (uint32_t)((a & 0x10) >> 4) << j;
        qh |= (uint32_t)((b & 0x10) >> 4) << (j + 16);
    }
    memcpy(y->qh, &qh, 4);
}

static void ref_q5_1(const float *x, block_q5_1 *y)
{
    float min, max;
    ref_minmax(x, &min, &max);
    const float d = (max - min) / 31, id = d ? 1.0f / d : 0.0f;
    y->d = fp16_from_fp32(d);
    y->m = fp16_from_fp32(min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        const uint8_t a = (uint8_t)((x[j] - min) * id + 0.5f), b = (uint8_t)((x[16 + j] - min) * id + 0.5f);
        y->qs[j] = (uint8_t)((a & 15) | ((b & 15) << 4));
        qh |= (uint32_t)((a & 0x10) >> 4) << j;
        qh |= (uint32_t)((b & 0x10) >> 4) << (j + 16);
    }
    memcpy(y->qh, &qh, 4);
}

/* ggml's quantize_row_mxfp4_ref: shared exponent e = floor(log2(amax)) - 2
 * + 127 (0 for an all-zero block), then each value takes the first code
 * whose doubled E2M1 value times 2^(e-128) is nearest. */
static void ref_mxfp4(const float *x, block_mxfp4 *y)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j]))
            amax = fabsf(x[j]);
    y->e = amax > 0 ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0;
    const float d = quant_e8m0_half(y->e);
    for (int j = 0; j < 16; j++) {
        int best[2] = {0, 0};
        for (int h = 0; h < 2; h++) {
            const float v = x[j + 16 * h];
            float best_err = fabsf(quant_mxfp4_values[0] * d - v);
            for (int c = 1; c < 16; c++) {
                const float err = fabsf(quant_mxfp4_values[c] * d - v);
                if (err < best_err) {
                    best[h] = c;
                    best_err = err;
                }
            }
        }
        y->qs[j] = (uint8_t)(best[0] | best[1] << 4);
    }
}

/* Returns the number of blocks of the row whose bytes differ from the ref
 * quantization of `ref`; -1 if t has no ref quantizer here. */
static int requant_row(qtype_t t, const void *qrow, const float *ref, int64_t n)
{
    uint8_t blk[64];
    const qtype_info_t *info = qtype_info(t);
    int diff = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *x = ref + 32 * b;
        switch (t) {
        case QTYPE_Q8_0: ref_q8_0(x, (block_q8_0 *)blk); break;
        case QTYPE_Q4_0: ref_q4_0(x, (block_q4_0 *)blk); break;
        case QTYPE_Q4_1: ref_q4_1(x, (block_q4_1 *)blk); break;
        case QTYPE_Q5_0: ref_q5_0(x, (block_q5_0 *)blk); break;
        case QTYPE_Q5_1: ref_q5_1(x, (block_q5_1 *)blk); break;
        case QTYPE_MXFP4: ref_mxfp4(x, (block_mxfp4 *)blk); break;
        default: return -1;
        }
        diff += memcmp(blk, (const uint8_t *)qrow + b * info->type_size, (size_t)info->type_size) != 0;
    }
    return diff;
}

static void check_file(const char *dir, const char *qname, const char *fname)
{
    char qpath[1024], fpath[1024];
    snprintf(qpath, sizeof qpath, "%s/%s", dir, qname);
    snprintf(fpath, sizeof fpath, "%s/%s", dir, fname);
    lf_err_t err;
    gguf_file_t *qf = gguf_open(qpath, &err);
    gguf_file_t *ff = qf ? gguf_open(fpath, &err) : NULL;
    if (!tap_ok(qf && ff, "%s and %s open", qname, fname)) {
        tap_diag("%s", err.msg);
        gguf_close(qf);
        return;
    }
    stats_t st[QTYPE_COUNT];
    memset(st, 0, sizeof st);
    int mismatched = 0, n_tensors = 0;
    for (uint64_t k = 0; k < gguf_n_tensors(qf); k++) {
        const gguf_tensor_t *qt = gguf_tensor_at(qf, k);
        if (qt->type == QTYPE_F32)
            continue;
        char *name = gguf_str_dup(qt->name);
        const gguf_tensor_t *ft = name ? gguf_find_tensor(ff, name) : NULL;
        free(name);
        if (!ft || ft->type != QTYPE_F32 || memcmp(ft->ne, qt->ne, sizeof qt->ne) ||
            !quant_can_dequantize(qt->type)) {
            mismatched++;
            continue;
        }
        n_tensors++;
        const int64_t n = qt->ne[0];
        const int64_t rows = qt->ne[1] * qt->ne[2] * qt->ne[3];
        const size_t rsz = qtype_row_size(qt->type, n);
        float *deq = malloc((size_t)n * sizeof *deq);
        if (!deq) {
            mismatched++;
            continue;
        }
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *qrow = (const uint8_t *)qt->data + (size_t)r * rsz;
            const float *ref = (const float *)ft->data + r * n;
            check_row(qt->type, qrow, ref, deq, n, &st[qt->type]);
            int rd = requant_row(qt->type, qrow, ref, n);
            if (rd >= 0) {
                st[qt->type].req_blocks += n / 32;
                st[qt->type].req_diff += rd;
            }
            if (r % 61 == 0 && quant_can_vec_dot(qt->type))
                check_dot(qt->type, qrow, deq, n, &st[qt->type]);
        }
        free(deq);
    }
    tap_ok(mismatched == 0 && n_tensors > 0, "%s: %d non-F32 tensors matched with %s (%d unmatched)",
           qname, n_tensors, fname, mismatched);
    for (int t = 0; t < QTYPE_COUNT; t++) {
        const stats_t *s = &st[t];
        if (!s->n)
            continue;
        const char *tn = qtype_name((uint32_t)t);
        double nrmse = sqrt(s->se / (s->sx + 1e-30));
        if (t == QTYPE_F16 || t == QTYPE_BF16) {
            tap_ok(s->n_bad == 0, "%s %s: %lld values bit-exact with the rounded f32 (%lld bad)", qname, tn,
                   (long long)s->n, (long long)s->n_bad);
        } else if (is_k((qtype_t)t)) {
            tap_ok(s->n_bad == 0 && nrmse <= k_rms_limit((qtype_t)t),
                   "%s %s: %lld values, rms err/rms w = %.4f (limit %.3f), worst err/(block max) %.3f of limit",
                   qname, tn, (long long)s->n, nrmse, k_rms_limit((qtype_t)t), s->worst);
        } else {
            tap_ok(s->n_bad == 0, "%s %s: %lld values within the per-element bound (worst %.3f of it, rms err/rms w %.4f)",
                   qname, tn, (long long)s->n, s->worst, nrmse);
        }
        if (s->req_blocks)
            tap_ok(s->req_diff == 0, "%s %s: all %lld blocks byte-identical to ggml's quantize_row_%s_ref of the f32 rows (%lld differ)",
                   qname, tn, (long long)s->req_blocks, tn, (long long)s->req_diff);
        if (s->rows_dot)
            tap_ok(s->bad_dot == 0, "%s %s: vec_dot_ref on %d real rows == dot of dequantized rows",
                   qname, tn, s->rows_dot);
    }
    gguf_close(qf);
    gguf_close(ff);
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    static const char *tiny[] = {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                 "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs"};
    static const char *stories[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
    char name[64];
    for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
        snprintf(name, sizeof name, "tiny256-%s.gguf", tiny[i]);
        check_file(dir, name, "tiny256-f32.gguf");
    }
    for (size_t i = 0; i < sizeof stories / sizeof stories[0]; i++) {
        snprintf(name, sizeof name, "stories260K-%s.gguf", stories[i]);
        check_file(dir, name, "stories260K.gguf");
    }
    /* gpt-oss: 3-D expert tensors in MXFP4, the other matrices Q8_0 */
    check_file(dir, "tinygptoss-mxfp4_moe.gguf", "tinygptoss-f32.gguf");
    return tap_done();
}
