/* attention.c - attention in ggml's arithmetic order, 16 positions at a time.
 *
 * What llama.cpp c392e509 computes without flash attention (llm_build_kqv):
 *  - kq = mul_mat(K, q): q is a permuted view, so it is first rounded to
 *    F16 and every score is ggml_vec_dot_f16 over head_dim (gx_dot_f16_vec).
 *  - soft_max_ext(kq, mask, scale): scores * scale, then
 *    ggml_vec_soft_max_f32 (gx_softmax_row); masked and padding positions
 *    are exact zeros.
 *  - kqv = mul_mat(V^T, kq) over n_kv cache positions, n_kv being the used
 *    cells rounded up to a multiple of 32 (at least 32); the padding adds
 *    exact zeros, but n_kv decides which positions ggml_vec_dot_f16 sums in
 *    its 64-wide SIMD part and which in its double-precision leftovers.
 *    The probabilities are rounded to F16 (V's vec_dot_type) first. A single
 *    token (decode) takes that path (ATTN_ORDER_VEC); a batch of >= 2
 *    tokens takes llamafile's tinyBLAS<16> F16 x F16 kernel instead: one
 *    16-lane accumulator over the positions (ATTN_ORDER_TINY). The golden
 *    outputs are reproduced bit for bit with exactly these two orders.
 * The order is chosen per token by the caller (attn_job_t.order), never
 * from the batch, so results stay batch invariant.
 *
 * How: the cache stores each block transposed (kv.h), so 16 consecutive
 * positions of one dimension are one vector, and every kernel keeps
 * positions in SIMD lanes (attn_lanes.h). That is exact, not an
 * approximation: for P.V both orders already give position p the lane
 * p % 16, so the lane accumulators are literally theirs, and their final
 * horizontal sums are done with the very same pairs of adds; for K.q each
 * lane runs ggml_vec_dot_f16's own accumulators and reduction tree for its
 * position. The query heads sharing a KV head are processed together (up
 * to ATTN_GROUP), sharing the K and V loads; grouping changes no value.
 * tests/unit/test_attention.c compares all of it bitwise with the former
 * one-position-at-a-time implementation.
 */
#include "engine/model/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/attn_lanes.h"
#include "engine/model/ops.h"
#include "engine/kernels/ggml_exact.h"

/* Per-thread scratch, carved from job->scratch (see attn_scratch_floats). */
typedef struct {
    float *qf;             /* [ATTN_GROUP][hd]: q rounded to F16, as float */
    float *scores;         /* [ATTN_GROUP][n16]: then the probabilities,
                              rounded to F16 (zero past n_kv) */
    const uint16_t **kc;   /* [n16 / 16]: the chunks of the KV head */
    const uint16_t **vc;
    float *acc;            /* [4][ATTN_GROUP][hd][16] lane accumulators */
    float *prod;           /* [hd][16] */
    double *left;          /* [hd] */
} attn_scr_t;

static int64_t round16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* Lays the scratch out (each part 64-byte aligned relative to base) and
 * returns its size in bytes; base NULL only measures. */
static size_t scratch_layout(void *base, int32_t n_ctx, int32_t hd, attn_scr_t *s)
{
    const int64_t n16 = round16(n_ctx > 0 ? n_ctx : 1), h16 = round16(hd);
    const size_t sizes[7] = {
        (size_t)(ATTN_GROUP * h16) * sizeof(float),
        (size_t)(ATTN_GROUP * n16) * sizeof(float),
        (size_t)(n16 / 16) * sizeof(void *),                 (size_t)(n16 / 16) * sizeof(void *),
        (size_t)(4 * ATTN_GROUP * h16 * 16) * sizeof(float), (size_t)(h16 * 16) * sizeof(float),
        (size_t)h16 * sizeof(double),
    };
    void *parts[7];
    size_t off = 0;
    for (int i = 0; i < 7; i++) {
        parts[i] = base ? (char *)base + off : NULL;
        off += (sizes[i] + 63) & ~(size_t)63;
    }
    if (s)
        *s = (attn_scr_t){parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6]};
    return off;
}

int64_t attn_scratch_floats(int32_t n_ctx, int32_t head_dim, int32_t n_rep)
{
    (void)n_rep; /* groups are at most ATTN_GROUP heads whatever n_rep is */
    return round16((int64_t)(scratch_layout(NULL, n_ctx, head_dim, NULL) / sizeof(float)));
}

/* One work item: token t, KV head kvh, query heads h0 .. h0 + ng - 1;
 * positions start .. n_kv-1, in chunks c_lo .. nch-1. */
typedef struct {
    int32_t t, kvh, h0, ng, n_kv, nch, start, c_lo;
} attn_item_t;

static float *head_out(const attn_job_t *job, const attn_item_t *it, int g)
{
    return job->out + ((int64_t)it->t * job->n_head + it->h0 + g) * job->head_dim;
}

/* ggml_soft_max with sinks (ggml_soft_max_add_sinks) over s[0..n): the
 * maximum includes the sink, the sum gets expf(sink - max) in double after
 * the 16-lane blocks (ggml_vec_soft_max_f32 on a row padded with masked
 * cells, as ggml's is). */
static void softmax_sink(float *s, int64_t n, float sink)
{
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = s[i] > max ? s[i] : max;
    max = max > sink ? max : sink;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i += 16) {
        float in[16];
        const int64_t m = n - i < 16 ? n - i : 16;
        for (int64_t l = 0; l < 16; l++)
            in[l] = l < m ? s[i + l] - max : -INFINITY;
        float e[16];
        gx_expf16(in, e);
        memcpy(s + i, e, (size_t)m * sizeof(float));
        sum += (double)gx_hsum16(e);
    }
    sum += (double)expf(sink - max);
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++)
        s[i] *= inv;
}

/* Scores of the group's heads, softmax, and the probabilities rounded to
 * F16 (zero before start and past n_kv, to the chunk ends). */
static void attn_scores(const attn_job_t *job, const attn_lanes_t *L, const attn_item_t *it, const attn_scr_t *s,
                        int64_t n16)
{
    const int32_t hd = job->head_dim, bt = kv_block_tokens(job->kv);
    const int32_t lo = it->c_lo * ATTN_CHUNK;
    for (int g = 0; g < it->ng; g++) {
        const float *q = job->q + ((int64_t)it->t * job->n_head + it->h0 + g) * hd;
        L->round16(q, hd, s->qf + (int64_t)g * hd);
    }
    /* the 2026 reference scores prompt tokens with tinyBLAS (hd % 16 == 0) */
    const bool tiny = job->kq_tiny && hd % 16 == 0 && job->order && job->order[it->t] == ATTN_ORDER_TINY;
    for (int32_t c = it->c_lo; c < it->nch; c++)
        (tiny ? L->kq_tiny : L->kq)(s->kc[c], bt, s->qf, it->ng, hd, job->scale, s->scores + (int64_t)c * ATTN_CHUNK,
                                     n16);
    for (int g = 0; g < it->ng; g++) {
        float *sc = s->scores + g * n16;
        for (int32_t p = lo; p < it->start; p++)
            sc[p] = -INFINITY; /* outside the window: llama.cpp's mask */
        if (job->sinks)
            softmax_sink(sc + lo, it->n_kv - lo, job->sinks[it->h0 + g]);
        else
            gx_softmax_row(sc + lo, it->n_kv - lo);
        L->round16(sc + lo, it->n_kv - lo, sc + lo);
        memset(sc + it->n_kv, 0, (size_t)((int64_t)it->nch * ATTN_CHUNK - it->n_kv) * sizeof *sc);
    }
}

/* ggml_vec_dot_f16 over the positions: those below np (a multiple of 64,
 * or all of them) in four accumulators, chunk c going to accumulator c % 4,
 * reduced (0 + 2) + (1 + 3) and over the lanes; the rest added in double
 * in position order. */
static void attn_pv_vec(const attn_job_t *job, const attn_lanes_t *L, const attn_item_t *it, const attn_scr_t *s,
                        int64_t n16)
{
    const int32_t hd = job->head_dim, bt = kv_block_tokens(job->kv), n_kv = it->n_kv;
    const int64_t pad = job->vec_pad > 0 ? job->vec_pad : 32;
    int64_t n_pad = ((int64_t)n_kv + pad - 1) / pad * pad;
    if (n_pad < pad)
        n_pad = pad;
    const int32_t np = (int32_t)(n_pad & ~(int64_t)63) < n_kv ? (int32_t)(n_pad & ~(int64_t)63) : n_kv;
    const int64_t set = (int64_t)it->ng * hd * ATTN_CHUNK;
    if (np > it->c_lo * ATTN_CHUNK) {
        const int32_t c1 = (np + ATTN_CHUNK - 1) / ATTN_CHUNK;
        /* accumulator j takes the chunks c with c % 4 == j, from c_lo */
        for (int j = 0; j < 4; j++)
            L->pv(s->vc, bt, s->scores, n16, it->ng, it->c_lo + (j - it->c_lo % 4 + 4) % 4, c1, 4, np, hd,
                  s->acc + j * set);
        L->reduce4(s->acc, set);
    }
    for (int g = 0; g < it->ng; g++) {
        float *out = head_out(job, it, g);
        if (np > it->c_lo * ATTN_CHUNK) {
            L->hsum(s->acc + (int64_t)g * hd * ATTN_CHUNK, hd, out);
            for (int d = 0; d < hd; d++)
                s->left[d] = (double)out[d];
        } else {
            for (int d = 0; d < hd; d++)
                s->left[d] = 0.0;
        }
        if (np == n_kv)
            continue;
        for (int32_t c = np / ATTN_CHUNK > it->c_lo ? np / ATTN_CHUNK : it->c_lo; c < it->nch; c++) {
            L->prod(s->vc[c], bt, s->scores + g * n16 + (int64_t)c * ATTN_CHUNK, hd, s->prod);
            const int32_t valid = n_kv - c * ATTN_CHUNK < ATTN_CHUNK ? n_kv - c * ATTN_CHUNK : ATTN_CHUNK;
            for (int d = 0; d < hd; d++) {
                double x = s->left[d];
                for (int32_t l = 0; l < valid; l++)
                    x += (double)s->prod[d * ATTN_CHUNK + l];
                s->left[d] = x;
            }
        }
        for (int d = 0; d < hd; d++)
            out[d] = (float)s->left[d];
    }
}

static void attn_item(const attn_job_t *job, const attn_lanes_t *L, attn_item_t *it, const attn_scr_t *s)
{
    const int32_t hd = job->head_dim, bt = kv_block_tokens(job->kv);
    const int64_t n16 = round16(job->n_ctx);
    it->n_kv = job->n_kv[it->t];
    it->nch = (it->n_kv + ATTN_CHUNK - 1) / ATTN_CHUNK;
    it->start = job->kv_start ? job->kv_start[it->t] : 0;
    it->c_lo = it->start / ATTN_CHUNK;
    const int32_t *blocks = job->blocks[it->t];
    const int64_t head_off = (int64_t)it->kvh * hd * bt;
    for (int32_t c = it->c_lo; c < it->nch; c++) {
        const int32_t p = c * ATTN_CHUNK, b = blocks[p / bt];
        s->kc[c] = kv_block_k(job->kv, b, job->layer) + head_off + p % bt;
        s->vc[c] = kv_block_v(job->kv, b, job->layer) + head_off + p % bt;
    }
    attn_scores(job, L, it, s, n16);
    if (job->order && job->order[it->t] == ATTN_ORDER_TINY ) {
        /* tinyBLAS: lane p % 16 accumulates position p, one FMA each */
        L->pv(s->vc, bt, s->scores, n16, it->ng, it->c_lo, it->nch, 1, it->n_kv, hd, s->acc);
        for (int g = 0; g < it->ng; g++)
            L->hsum(s->acc + (int64_t)g * hd * ATTN_CHUNK, hd, head_out(job, it, g));
        return;
    }
    attn_pv_vec(job, L, it, s, n16);
}

/* ---- rows mode ---------------------------------------------------------- */

int64_t attn_rows_scratch_floats(int32_t max_batch, int32_t head_dim)
{
    const int64_t n32 = ((max_batch > 0 ? max_batch : 1) + 31) / 32 * 32;
    return n32 * head_dim + 3 * n32 + 16;
}

void attn_alibi_slopes(int32_t n_head, float max_bias, float *slopes)
{
    const uint32_t n_head_log2 = 1u << (uint32_t)floor(log2((double)n_head));
    const float m0 = powf(2.0f, -(max_bias) / (float)n_head_log2);
    const float m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n_head_log2);
    for (int32_t h = 0; h < n_head; h++)
        slopes[h] = (uint32_t)h < n_head_log2 ? powf(m0, (float)(h + 1))
                                              : powf(m1, (float)(2 * ((uint32_t)h - n_head_log2) + 1));
}

/* The rows mode keeps ggml's per-dot operation order exactly, but runs 32
 * dots at once, one in each SIMD lane of 4 vectors: K.q with the positions in the
 * lanes (K transposed), P.V with the dimensions in the lanes. Every lane
 * performs the scalar order of gx_dot_f32_vec_e4 / gx_dot_f32_tiny (16
 * accumulators of one tinyBLAS lane or 4 x 16 of ggml_vec_dot_f32, the
 * same reduction tree, the leftovers in order), so the values are those of
 * one dot at a time, bit for bit (test_attention checks it). */
enum { RL = 8 }; /* lanes */

/* RL * ng dots of n terms for each of nb vectors b[m] (nb 1 or 2): dot (m,
 * g, l) = sum_i a(i, 8g + l) * b[m][i] into out[m][8g + l], where a(i, j) =
 * a[i * a_stride + j] (ng groups of RL lanes side by side); tiny:
 * tinyBLAS's order (n % 16 == 0), else ggml_vec_dot_f32's as the 2026
 * build compiled it (gx_dot_f32_vec_e4). The groups (and the two vectors,
 * which share each load of a) are independent chains the core overlaps. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RA_AVX2 __attribute__((target("avx2,fma")))

/* gx_hsum16 of the 16 vectors v[0..16) lane by lane: its adds, vertical. */
RA_AVX2 static inline __m256 hsum16_v(const __m256 *v)
{
    __m256 t3[8], t6[4];
    for (int i = 0; i < 8; i++)
        t3[i] = _mm256_add_ps(v[i + 8], v[i]);
    for (int i = 0; i < 4; i++)
        t6[i] = _mm256_add_ps(t3[i + 4], t3[i]);
    return _mm256_add_ps(_mm256_add_ps(t6[0], t6[2]), _mm256_add_ps(t6[1], t6[3]));
}

RA_AVX2 static inline __attribute__((always_inline)) void dots_avx2(const float *a, int64_t a_stride,
                                                                     const float *const *b, int64_t n, bool tiny,
                                                                     float *const *out, const int ng, const int nb)
{
    /* accumulator j of a group is a chain over the blocks of i; the chains
     * feeding one reduced lane l are run together (4 groups x 1 or 4 chains
     * in registers), so nothing is spilled */
    __m256 v[16][4];
    if (tiny) {
        for (int m = 0; m < nb; m++) {
            for (int j = 0; j < 16; j++) {
                __m256 c[4];
                _Pragma("GCC unroll 4")
                for (int g = 0; g < ng; g++)
                    c[g] = _mm256_setzero_ps();
                for (int64_t i = 0; i < n; i += 16) {
                    const __m256 bv = _mm256_set1_ps(b[m][i + j]);
                    _Pragma("GCC unroll 4")
                    for (int g = 0; g < ng; g++)
                        c[g] = _mm256_fmadd_ps(_mm256_loadu_ps(a + (i + j) * a_stride + RL * g), bv, c[g]);
                }
                _Pragma("GCC unroll 4")
                for (int g = 0; g < ng; g++)
                    v[j][g] = c[g];
            }
            _Pragma("GCC unroll 4")
            for (int g = 0; g < ng; g++) {
                __m256 w[16];
                for (int j = 0; j < 16; j++)
                    w[j] = v[j][g];
                _mm256_storeu_ps(out[m] + RL * g, hsum16_v(w));
            }
        }
        return;
    }
    const int64_t np = n & ~(int64_t)63;
    __m256 sum[2][4];
    _Pragma("GCC unroll 2")
    for (int m = 0; m < nb; m++)
        _Pragma("GCC unroll 4")
        for (int g = 0; g < ng; g++)
            sum[m][g] = _mm256_setzero_ps();
    for (int m = 0; np && m < nb; m++) {
        /* GGML_F32x16_REDUCE: accumulator k is acc[16k .. 16k+15], lane l
         * of the result (acc[l] + acc[32 + l]) + (acc[16 + l] + acc[48 + l]) */
        for (int l = 0; l < 16; l++) {
            __m256 c[4][4];
            _Pragma("GCC unroll 4")
            for (int k = 0; k < 4; k++)
                _Pragma("GCC unroll 4")
                for (int g = 0; g < ng; g++)
                    c[k][g] = _mm256_setzero_ps();
            for (int64_t i = 0; i < np; i += 64)
                _Pragma("GCC unroll 4")
                for (int k = 0; k < 4; k++) {
                    const __m256 bv = _mm256_set1_ps(b[m][i + 16 * k + l]);
                    _Pragma("GCC unroll 4")
                    for (int g = 0; g < ng; g++)
                        c[k][g] = _mm256_fmadd_ps(_mm256_loadu_ps(a + (i + 16 * k + l) * a_stride + RL * g), bv,
                                                  c[k][g]);
                }
            _Pragma("GCC unroll 4")
            for (int g = 0; g < ng; g++)
                v[l][g] = _mm256_add_ps(_mm256_add_ps(c[0][g], c[2][g]), _mm256_add_ps(c[1][g], c[3][g]));
        }
        _Pragma("GCC unroll 4")
        for (int g = 0; g < ng; g++) {
            __m256 w[16];
            for (int l = 0; l < 16; l++)
                w[l] = v[l][g];
            sum[m][g] = hsum16_v(w);
        }
    }
    const int64_t nv = np + ((n - np) & ~(int64_t)7) + (((n - np) & 7) >= 4 ? 4 : 0);
    int64_t i = np;
    for (; i < nv; i++) { /* rounded products added in order */
        _Pragma("GCC unroll 4")
        for (int g = 0; g < ng; g++) {
            const __m256 av = _mm256_loadu_ps(a + i * a_stride + RL * g);
            _Pragma("GCC unroll 2")
            for (int m = 0; m < nb; m++)
                sum[m][g] = _mm256_add_ps(sum[m][g], _mm256_mul_ps(av, _mm256_set1_ps(b[m][i])));
        }
    }
    for (; i < n; i++) {
        _Pragma("GCC unroll 4")
        for (int g = 0; g < ng; g++) {
            const __m256 av = _mm256_loadu_ps(a + i * a_stride + RL * g);
            _Pragma("GCC unroll 2")
            for (int m = 0; m < nb; m++)
                sum[m][g] = _mm256_fmadd_ps(av, _mm256_set1_ps(b[m][i]), sum[m][g]);
        }
    }
    _Pragma("GCC unroll 2")
    for (int m = 0; m < nb; m++)
        _Pragma("GCC unroll 4")
        for (int g = 0; g < ng; g++)
            _mm256_storeu_ps(out[m] + RL * g, sum[m][g]);
}

#define RA_DOTS(NG, NB)                                                                                      \
    RA_AVX2 static void dots_avx2_##NG##_##NB(const float *a, int64_t s, const float *const *b, int64_t n,  \
                                              bool tiny, float *const *out)                                 \
    {                                                                                                        \
        dots_avx2(a, s, b, n, tiny, out, NG, NB);                                                            \
    }
RA_DOTS(1, 1)
RA_DOTS(4, 1)
RA_DOTS(1, 2)
RA_DOTS(4, 2)
#undef RA_DOTS
#endif

/* 8 * ng dots (ng 1 or 4) for nb vectors (1 or 2), as dots_avx2. */
static void dots(const float *a, int64_t a_stride, const float *const *b, int64_t n, bool tiny, float *const *out,
                 int ng, int nb)
{
#if defined(__x86_64__) || defined(__i386__)
    if (gx_level() >= GX_LEVEL_AVX2) {
        if (nb == 2)
            (ng == 4 ? dots_avx2_4_2 : dots_avx2_1_2)(a, a_stride, b, n, tiny, out);
        else
            (ng == 4 ? dots_avx2_4_1 : dots_avx2_1_1)(a, a_stride, b, n, tiny, out);
        return;
    }
#endif
    float *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    for (int m = 0; m < nb; m++)
        for (int l = 0; l < RL * ng; l++) {
            if (!c) { /* the portable level only, out of memory: zeros, never garbage */
                out[m][l] = 0.0f;
                continue;
            }
            for (int64_t i = 0; i < n; i++)
                c[i] = a[i * a_stride + l];
            out[m][l] = tiny ? gx_dot_f32_tiny(c, b[m], n) : gx_dot_f32_vec_e4(c, b[m], n);
        }
    free(c);
}

/* The scores of row t for positions [0, len) in place: scaled (+ ALiBi),
 * -inf outside the row's window [lo, hi). */
static void scale_scores(const attn_job_t *job, int32_t t, int32_t h, int32_t len, float *sc)
{
    const int32_t lo = job->kv_start[t] < len ? job->kv_start[t] : len, hi = job->n_kv[t] < len ? job->n_kv[t] : len,
                  pos = job->pos[t];
    const float scale = job->scale;
    int32_t p = 0;
    for (; p < lo; p++)
        sc[p] = -INFINITY;
    if (job->alibi) {
        const float slope = job->alibi[h];
        for (; p < hi; p++)
            sc[p] = fmaf(slope, (float)-(p > pos ? p - pos : pos - p), sc[p] * scale);
    } else {
        for (; p < hi; p++)
            sc[p] = sc[p] * scale;
    }
    for (; p < len; p++)
        sc[p] = -INFINITY;
}

/* Sequence whose position 0 is row t0, query head h. Scratch: K of the
 * sequence's KV head transposed ([hd][n8]), one row of scores. */
static void attn_rows_seq(const attn_job_t *job, int32_t t0, int32_t h, float *scr)
{
    const int32_t hd = job->head_dim, kvh = h / (job->n_head / job->n_head_kv);
    const int64_t qd = (int64_t)job->n_head * hd, kd = (int64_t)job->n_head_kv * hd;
    /* K is padded to groups of 4 x 8 positions (zeros), scores too */
    const int32_t len = job->seq_n[t0], n8 = (len + 4 * RL - 1) / (4 * RL) * (4 * RL);
    float *kt = scr, *sc = scr + (int64_t)hd * n8;
    const float *krows = job->k_rows + (int64_t)t0 * kd + (int64_t)kvh * hd;
    const float *vrows = job->v_rows + (int64_t)t0 * kd + (int64_t)kvh * hd;
    for (int32_t d = 0; d < hd; d++) {
        for (int32_t p = 0; p < len; p++)
            kt[(int64_t)d * n8 + p] = krows[(int64_t)p * kd + d];
        for (int32_t p = len; p < n8; p++)
            kt[(int64_t)d * n8 + p] = 0.0f;
    }
    /* with one head, q is contiguous and tinyBLAS takes K.q too */
    const bool one_head = job->n_head == 1 && hd % 16 == 0;
    float *sc2 = sc + n8, *col = sc + 2 * n8;
    for (int32_t t = t0; t < t0 + len;) {
        const bool tiny = job->order && job->order[t] == ATTN_ORDER_TINY;
        /* two rows at once (their chains interleaved, each load of K and V
         * feeding both) when they take the same orders */
        const int nb = t + 1 < t0 + len && (job->order && job->order[t + 1] == ATTN_ORDER_TINY) == tiny ? 2 : 1;
        const float *q[2] = {job->q + t * qd + (int64_t)h * hd, job->q + (t + nb - 1) * qd + (int64_t)h * hd};
        float *s2[2] = {sc, sc2};
        for (int32_t p = 0; p < n8; p += 4 * RL)
            dots(kt + p, n8, q, hd, tiny && one_head, (float *[]){sc + p, sc2 + p}, 4, nb);
        for (int m = 0; m < nb; m++) {
            scale_scores(job, t + m, h, len, s2[m]);
            ops_softmax(s2[m], len);
        }
        float *out[2] = {job->out + t * qd + (int64_t)h * hd, job->out + (t + nb - 1) * qd + (int64_t)h * hd};
        const bool pv_tiny = tiny && len % 16 == 0;
        int32_t d = 0;
        for (; d + 4 * RL <= hd; d += 4 * RL)
            dots(vrows + d, kd, (const float *const *)s2, len, pv_tiny, (float *[]){out[0] + d, out[1] + d}, 4, nb);
        for (; d + RL <= hd; d += RL)
            dots(vrows + d, kd, (const float *const *)s2, len, pv_tiny, (float *[]){out[0] + d, out[1] + d}, 1, nb);
        for (; d < hd; d++) { /* head sizes not a multiple of 8 */
            for (int32_t p = 0; p < len; p++)
                col[p] = vrows[(int64_t)p * kd + d];
            for (int m = 0; m < nb; m++)
                out[m][d] = pv_tiny ? gx_dot_f32_tiny(col, s2[m], len) : gx_dot_f32_vec_e4(col, s2[m], len);
        }
        t += nb;
    }
}

static void attn_rows_worker(const attn_job_t *job, int ith, int nth)
{
    float *scr = job->scratch + (int64_t)ith * job->scratch_stride;
    /* work items: (sequence, head), a sequence named by its first row */
    int32_t item = 0;
    for (int32_t t = 0; t < job->n_tok; t += job->seq_n[t])
        for (int32_t h = 0; h < job->n_head; h++, item++)
            if (item % nth == ith)
                attn_rows_seq(job, t, h, scr);
}

static void attn_worker(void *arg, int ith, int nth)
{
    const attn_job_t *job = arg;
    if (job->k_rows) {
        attn_rows_worker(job, ith, nth);
        return;
    }
    attn_scr_t s;
    scratch_layout(job->scratch + (int64_t)ith * job->scratch_stride, job->n_ctx, job->head_dim, &s);
    const attn_lanes_t *L = attn_lanes(gx_level());
    const int32_t n_rep = job->n_head / job->n_head_kv;
    const int32_t n_grp = (n_rep + ATTN_GROUP - 1) / ATTN_GROUP;
    const int32_t per_tok = job->n_head_kv * n_grp;
    const int32_t total = job->n_tok * per_tok;
    for (int32_t i = ith; i < total; i += nth) {
        const int32_t kvh = i % per_tok / n_grp, grp = i % n_grp;
        if (job->path && job->path[i / per_tok] != ATTN_PATH_EXACT)
            continue;
        attn_item_t it = {.t = i / per_tok, .kvh = kvh, .h0 = kvh * n_rep + grp * ATTN_GROUP};
        it.ng = n_rep - grp * ATTN_GROUP < ATTN_GROUP ? n_rep - grp * ATTN_GROUP : ATTN_GROUP;
        attn_item(job, L, &it, &s);
    }
}

void attn_run(tpool_t *pool, const attn_job_t *job)
{
    if (pool)
        tpool_run(pool, attn_worker, (void *)job);
    else
        attn_worker((void *)job, 0, 1);
}
