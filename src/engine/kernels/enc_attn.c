/* enc_attn.c - encoder attention (see enc_attn.h).
 *
 * The pool's threads take heads (repacking) and then (head, query block)
 * items from a shared counter, so a thread the OS puts aside holds up one
 * item. Scratch layout (64-byte aligned parts):
 *   off[n_seg + 1]   where each segment starts among the padded keys (each
 *                    segment padded to a whole number of 2 vw key panels)
 *   qbs[n_seg + 1]   the first query block of each segment
 *   Kp  [head][key panel][d][2 vw]         keys, transposed per panel
 *   Vp  [head][value panel][padded key][w] values; panels of w = 2 vw
 *                    columns, the last one vw wide where d needs it
 *   per thread: Q block [BQ][d] (times scale), scores [BQ][BK],
 *               output [BQ][dv], running max and sum [BQ] each
 * Padding keys have zero keys and values and their weights are set to 0;
 * padding query rows are zero and their outputs dropped.
 */
#include "engine/kernels/enc_attn.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/kernels/gemm_impl.h"

#ifndef BQ
#define BQ 48  /* queries per work item: a multiple of every mr */
#endif
#ifndef BK
#define BK 256 /* keys per step: a multiple of every 2 vw */
#endif

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

typedef struct {
    const gemm_impl_t *im;
    const float *q, *k, *v;
    int64_t ld, ldo, n;
    const int32_t *seg;
    int n_seg, n_head, d, dv;
    float scale;
    float *out;
    int64_t *off, *qbs;
    int64_t n_keys; /* padded keys per head */
    float *kp, *vp;
    uint8_t *thread_base;
    size_t thread_bytes;
    atomic_llong next; /* next head to pack, then next item */
} attn_t;

static size_t per_thread(int d, int dv)
{
    return up64((size_t)BQ * (size_t)d * sizeof(float)) + up64((size_t)BQ * BK * sizeof(float)) +
           up64((size_t)BQ * (size_t)dv * sizeof(float)) + up64(2 * BQ * sizeof(float));
}

size_t enc_attn_scratch_size(int64_t n, int n_seg, int n_head, int head_dim, int n_threads)
{
    const int nr = 2 * GEMM_VW_MAX;
    const int64_t keys = n + (int64_t)n_seg * nr;
    const int dv = (int)round_up(head_dim, GEMM_VW_MAX);
    return 64 + 2 * up64((size_t)(n_seg + 1) * sizeof(int64_t)) +
           up64((size_t)n_head * (size_t)keys * (size_t)head_dim * sizeof(float)) +
           up64((size_t)n_head * (size_t)keys * (size_t)dv * sizeof(float)) +
           (size_t)(n_threads > 0 ? n_threads : 1) * per_thread(head_dim, dv);
}

/* ---- repacking, one head per item ---- */

static void pack_worker(void *p, int ith, int nth)
{
    attn_t *a = p;
    const int nr = 2 * a->im->vw, vw = a->im->vw, d = a->d, dv = a->dv;
    const int n_full = dv / nr;
    (void)ith, (void)nth;
    for (int h; (h = (int)atomic_fetch_add(&a->next, 1)) < a->n_head;) {
        float *kp = a->kp + (int64_t)h * a->n_keys * d;
        float *vp = a->vp + (int64_t)h * a->n_keys * dv;
        for (int s = 0; s < a->n_seg; s++) {
            const int64_t len = a->seg[s + 1] - a->seg[s], padded = round_up(len, nr);
            /* keys: each panel of nr keys transposed to [d][nr] */
            for (int64_t j0 = 0; j0 < padded; j0 += nr) {
                float *panel = kp + (a->off[s] + j0) * d;
                const int64_t keys = len - j0 < nr ? len - j0 : nr;
                if (keys < nr)
                    memset(panel, 0, (size_t)d * (size_t)nr * sizeof(float));
                for (int64_t l = 0; l < keys; l++) {
                    const float *kr = a->k + (a->seg[s] + j0 + l) * a->ld + (int64_t)h * d;
                    for (int c = 0; c < d; c++)
                        panel[c * nr + l] = kr[c];
                }
            }
            /* values: [padded key][w] per panel of columns */
            for (int cp = 0; cp * nr < dv; cp++) {
                const int w = cp < n_full ? nr : vw, c0 = cp * nr;
                const int copy = d - c0 < w ? d - c0 : w;
                float *dst = vp + (int64_t)cp * nr * a->n_keys + a->off[s] * w;
                for (int64_t j = 0; j < len; j++) {
                    memcpy(dst + j * w, a->v + (a->seg[s] + j) * a->ld + (int64_t)h * d + c0,
                           (size_t)copy * sizeof(float));
                    if (copy < w)
                        memset(dst + j * w + copy, 0, (size_t)(w - copy) * sizeof(float));
                }
                memset(dst + len * w, 0, (size_t)((padded - len) * w) * sizeof(float));
            }
        }
    }
}

/* ---- one (head, query block) per item ---- */

static void block(const attn_t *a, float *qb, float *S, float *O, float *mx, float *sum, int h, int s, int64_t i0,
                  int bq)
{
    const gemm_impl_t *im = a->im;
    const int mr = im->mr, nr = 2 * im->vw, vw = im->vw, d = a->d, dv = a->dv;
    const int n_full = dv / nr;
    const int bqp = (int)round_up(bq, mr);
    for (int r = 0; r < bqp; r++) {
        if (r < bq)
            im->row_scale(a->q + (i0 + r) * a->ld + (int64_t)h * d, qb + r * d, d, a->scale);
        else
            memset(qb + r * d, 0, (size_t)d * sizeof(float));
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
    }
    memset(O, 0, (size_t)bqp * (size_t)dv * sizeof(float));
    const float *kp = a->kp + (int64_t)h * a->n_keys * d;
    const float *vp = a->vp + (int64_t)h * a->n_keys * dv;
    const int64_t len = a->seg[s + 1] - a->seg[s];
    for (int64_t kb = 0; kb < len; kb += BK) {
        const int nk = len - kb < BK ? (int)(len - kb) : BK;
        const int nkp = (int)round_up(nk, nr);
        const int64_t key0 = a->off[s] + kb; /* a multiple of nr */
        /* scores */
        for (int jr = 0; jr < nkp; jr += nr) {
            const float *panel = kp + (key0 + jr) / nr * d * nr;
            for (int ir = 0; ir < bqp; ir += mr)
                im->full(d, qb + ir * d, d, panel, S + ir * BK + jr, BK, 0, NULL);
        }
        /* online softmax */
        for (int r = 0; r < bq; r++) {
            float *row = S + r * BK;
            const float m_blk = im->row_max(row, nk);
            if (m_blk > mx[r]) {
                if (mx[r] != -INFINITY) {
                    const float alpha = expf(mx[r] - m_blk);
                    im->row_scale(O + r * dv, O + r * dv, dv, alpha);
                    sum[r] *= alpha;
                }
                mx[r] = m_blk;
            }
            sum[r] += im->row_exp(row, nk, mx[r]);
            for (int j = nk; j < nkp; j++)
                row[j] = 0.0f;
        }
        /* weighted values */
        for (int cp = 0; cp * nr < dv; cp++) {
            const bool full = cp < n_full;
            const float *panel = vp + (int64_t)cp * nr * a->n_keys + key0 * (full ? nr : vw);
            for (int ir = 0; ir < bqp; ir += mr)
                (full ? im->full : im->half)(nkp, S + ir * BK, BK, panel, O + ir * dv + cp * nr, dv, 1, NULL);
        }
    }
    for (int r = 0; r < bq; r++)
        im->row_scale(O + r * dv, a->out + (i0 + r) * a->ldo + (int64_t)h * d, d, 1.0f / sum[r]);
}

static void attn_worker(void *p, int ith, int nth)
{
    attn_t *a = p;
    (void)nth;
    uint8_t *t = a->thread_base + (size_t)ith * a->thread_bytes;
    float *qb = (float *)t;
    t += up64((size_t)BQ * (size_t)a->d * sizeof(float));
    float *S = (float *)t;
    t += up64((size_t)BQ * BK * sizeof(float));
    float *O = (float *)t;
    t += up64((size_t)BQ * (size_t)a->dv * sizeof(float));
    float *mx = (float *)t, *sum = mx + BQ;
    const int64_t n_qb = a->qbs[a->n_seg], items = n_qb * a->n_head;
    for (int64_t it; (it = atomic_fetch_add(&a->next, 1)) < items;) {
        const int h = (int)(it / n_qb);
        const int64_t g = it % n_qb;
        int s = 0;
        while (a->qbs[s + 1] <= g)
            s++;
        const int64_t i0 = a->seg[s] + (g - a->qbs[s]) * BQ;
        const int bq = a->seg[s + 1] - i0 < BQ ? (int)(a->seg[s + 1] - i0) : BQ;
        block(a, qb, S, O, mx, sum, h, s, i0, bq);
    }
}

void enc_attn(tpool_t *pool, const float *q, const float *k, const float *v, int64_t ld, int64_t n,
              const int32_t *seg, int n_seg, int n_head, int head_dim, float scale, float *out, int64_t ldo,
              void *scratch)
{
    const gemm_impl_t *im = gemm_impl();
    const int nr = 2 * im->vw;
    attn_t a = {.im = im, .q = q, .k = k, .v = v, .ld = ld, .ldo = ldo, .n = n, .seg = seg, .n_seg = n_seg,
                .n_head = n_head, .d = head_dim, .dv = (int)round_up(head_dim, im->vw), .scale = scale, .out = out};
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    a.off = (int64_t *)p;
    p += up64((size_t)(n_seg + 1) * sizeof(int64_t));
    a.qbs = (int64_t *)p;
    p += up64((size_t)(n_seg + 1) * sizeof(int64_t));
    a.off[0] = a.qbs[0] = 0;
    for (int s = 0; s < n_seg; s++) {
        const int64_t len = seg[s + 1] - seg[s];
        a.off[s + 1] = a.off[s] + round_up(len, nr);
        a.qbs[s + 1] = a.qbs[s] + (len + BQ - 1) / BQ;
    }
    a.n_keys = a.off[n_seg];
    a.kp = (float *)p;
    p += up64((size_t)n_head * (size_t)a.n_keys * (size_t)head_dim * sizeof(float));
    a.vp = (float *)p;
    p += up64((size_t)n_head * (size_t)a.n_keys * (size_t)a.dv * sizeof(float));
    a.thread_base = p;
    a.thread_bytes = per_thread(head_dim, a.dv);
    atomic_init(&a.next, 0);
    tpool_run(pool, pack_worker, &a);
    atomic_store(&a.next, 0);
    tpool_run(pool, attn_worker, &a);
}
