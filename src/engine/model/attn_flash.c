/* attn_flash.c - flash attention: query tiles, KV tiles, segments, items.
 *
 * A row is one (token, query head). An item is a set of rows (up to
 * FA_QTOK tokens of one sequence, consecutive in the batch, times heads
 * h0 .. h0 + nh - 1 of one KV head) and a range of segments. For each
 * segment the item starts every row from m = -inf, l = 0, o = 0 and walks
 * the segment's tiles of FA_TILE positions: scores of all rows against the
 * tile's chunks (qk), per row the mask, maximum, rescale and exp (rows for
 * which the tile holds none of their positions are left alone: their
 * probabilities are zeros), then o += P.V (pv). A segment's result is
 * folded into the row's total in segment order (fold), or, when segments
 * are items of their own (split), stored and folded by a second pass in
 * the same order with the same function: the bits are the same.
 */
#include "engine/model/attn_flash.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/attn_flash_kern.h"
#include "engine/model/kv.h"
#include "engine/quant/fp16.h"

/* Whether token t is this file's to compute (attn_job_t.path). */
#define FLASH_TOK(job, t) (!(job)->path || (job)->path[t] == ATTN_PATH_FLASH)

enum {
    FA_CHUNK = 16,
    FA_TCH = FA_TILE / FA_CHUNK, /* chunks per tile */
    FA_ROWS = 64,                /* target rows of a query tile */
    FA_QTOK = 32,                /* most tokens of a query tile */
    FA_GROUP = 4,                /* most query tiles of an item */
};

typedef struct {
    int32_t t0, nt;   /* batch tokens t0 .. t0 + nt - 1 (one sequence; up to FA_GROUP query tiles) */
    int32_t kvh;      /* KV head */
    int32_t h0, nh;   /* query heads */
    int32_t seg;      /* split: the one segment; -1: all of them */
    int64_t cost;
} fa_item_t;

/* Per-thread scratch (floats unless said otherwise); rows: of a query
 * tile, grows: of an item (FA_GROUP query tiles). */
typedef struct {
    float *q;         /* [grows][hd] q * scale */
    float *s;         /* [rows][FA_TILE] one query tile's scores, then probabilities */
    float *o, *ot;    /* [grows][hd] segment output, total */
    float *m, *l, *mt, *lt; /* [grows] */
    int32_t *lo, *hi; /* [grows] positions attended */
    float *mn, *al;   /* [grows] a tile's new maximum, rescale factor */
    float *kbuf;      /* [FA_TCH][hd][16] K chunks as floats */
    float *vbuf;      /* [FA_TCH][hd][16] V chunks as floats */
} fa_scr_t;

struct attn_flash {
    int32_t n_head, n_head_kv, hd, rows, qtok;
    int32_t n_threads;
    fa_item_t *items;
    int32_t items_cap;
    float *split;     /* partials: [token][head][segment][hd + 2] */
    int64_t split_cap;
    float *scratch;
    int64_t scr_stride;
    float *zeros;     /* a chunk of zeros (a block given back by a window) */
    /* the running job */
    const attn_job_t *job;
    const fa_kern_t *K;
    int32_t n_items, n_seg_max;
    bool use_split;
    atomic_int next;
};

static int64_t al16(int64_t n) { return (n + 15) & ~(int64_t)15; }

static int64_t scratch_floats(int32_t rows, int32_t hd, fa_scr_t *s, float *base)
{
    const int64_t g = (int64_t)rows * FA_GROUP;
    const int64_t sz[] = {g * hd, rows * FA_TILE, g * hd, g * hd, g, g, g, g, g, g,
                          FA_TCH * 16 * hd, FA_TCH * 16 * hd, g + 8, g + 8};
    enum { N = sizeof sz / sizeof sz[0] };
    float *p[N];
    int64_t off = 0;
    for (int i = 0; i < N; i++) {
        p[i] = base ? base + off : NULL;
        off += al16(sz[i]);
    }
    if (s)
        *s = (fa_scr_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], (int32_t *)(void *)p[8],
                        (int32_t *)(void *)p[9], p[12], p[13], p[10], p[11]};
    return off;
}

/* Tokens of a query tile when n_rep query heads share a KV head. */
static int32_t qtok_for(int32_t n_rep)
{
    return FA_ROWS / n_rep < 1 ? 1 : FA_ROWS / n_rep > FA_QTOK ? FA_QTOK : FA_ROWS / n_rep;
}

attn_flash_t *attn_flash_create(int32_t n_threads, int32_t max_batch, int32_t n_head, int32_t n_head_kv,
                                int32_t head_dim, int32_t n_ctx, lf_err_t *err)
{
    attn_flash_t *fa = calloc(1, sizeof *fa);
    if (!fa) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for attention");
        return NULL;
    }
    /* layers may differ in KV heads and head size (each job sets its own,
     * attn_flash_run): room for the most rows of any grouping */
    int32_t rows_cap = 0;
    for (int32_t n_rep = 1; n_rep <= n_head; n_rep++) {
        const int32_t r = qtok_for(n_rep) * n_rep;
        rows_cap = r > rows_cap ? r : rows_cap;
    }
    (void)n_head_kv;
    fa->n_head = n_head;
    fa->n_head_kv = n_head;
    fa->hd = head_dim;
    fa->rows = rows_cap;
    fa->n_threads = n_threads < 1 ? 1 : n_threads;
    /* partials for a few decode tokens at full context */
    const int64_t n_seg = (n_ctx + FA_SEG - 1) / FA_SEG;
    fa->split_cap = (int64_t)4 * n_head * n_seg * (head_dim + 2);
    if (fa->split_cap < (1 << 18))
        fa->split_cap = 1 << 18;
    fa->items_cap = max_batch * n_head + (int32_t)(fa->split_cap / (head_dim + 2)) + 1;
    fa->scr_stride = al16(scratch_floats(fa->rows, head_dim, NULL, NULL));
    fa->items = malloc((size_t)fa->items_cap * sizeof *fa->items);
    fa->split = malloc((size_t)fa->split_cap * sizeof(float));
    fa->scratch = aligned_alloc(64, (size_t)(fa->scr_stride * fa->n_threads) * sizeof(float));
    fa->zeros = calloc((size_t)FA_CHUNK * (size_t)head_dim, sizeof(float));
    if (!fa->items || !fa->split || !fa->scratch || !fa->zeros) {
        attn_flash_free(fa);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for attention");
        return NULL;
    }
    return fa;
}

void attn_flash_free(attn_flash_t *fa)
{
    if (!fa)
        return;
    free(fa->items);
    free(fa->split);
    free(fa->scratch);
    free(fa->zeros);
    free(fa);
}

/* ---- one row's bookkeeping -------------------------------------------- */

/* Folds a segment's (m, l, o) into the total (mt, lt, ot); an empty total
 * (mt = -inf) takes it as it is. */
static void fold(float *mt, float *lt, float *ot, float m, float l, const float *o, int hd)
{
    if (*mt == -INFINITY) {
        *mt = m;
        *lt = l;
        memcpy(ot, o, (size_t)hd * sizeof *ot);
        return;
    }
    const float M = m > *mt ? m : *mt;
    const float a = fa_exp(*mt - M), b = fa_exp(m - M);
    *lt = *lt * a + l * b;
    for (int d = 0; d < hd; d++)
        ot[d] = ot[d] * a + o[d] * b;
    *mt = M;
}

/* out = ot / lt, with the sink as one more softmax term of no value. */
static void finish(float mt, float lt, const float *ot, const float *sink, int hd, float *out)
{
    if (mt == -INFINITY) {
        memset(out, 0, (size_t)hd * sizeof *out);
        return;
    }
    float a = 1.0f;
    if (sink) {
        const float M = *sink > mt ? *sink : mt;
        a = fa_exp(mt - M);
        lt = lt * a + fa_exp(*sink - M);
    }
    const float f = a / lt;
    for (int d = 0; d < hd; d++)
        out[d] = ot[d] * f;
}

/* ---- one item ------------------------------------------------------------ */

typedef struct {
    fa_chunk_t k[FA_TCH], v[FA_TCH];
} fa_chunks_t;

/* Rows of a query tile from which chunks are converted to floats once
 * rather than at every use. */
enum { FA_WIDEN_ROWS = 8 };

/* Chunk c (positions 16 c ..) of KV head kvh, K (part 0) or V (part 1), as
 * the cache stores it; *bytes: how far it extends from p (F16 with
 * block_tokens > 16: rows of 32 bytes block_tokens * 2 bytes apart). */
static fa_chunk_t chunk_at(const attn_flash_t *fa, const attn_job_t *job, const int32_t *blocks, int32_t kvh,
                           int32_t c, int part, int64_t *bytes)
{
    const kv_cache_t *kv = job->kv;
    const int32_t hd = fa->hd, bt = kv_block_tokens(kv);
    const int32_t p = c * FA_CHUNK, b = blocks[p / bt], col = p % bt;
    if (b < 0) {
        /* given back by a window: no row attends it */
        *bytes = 0;
        return (fa_chunk_t){fa->zeros, 16, FA_F32};
    }
    const kv_type_t t = part ? kv_type_v(kv) : kv_type_k(kv);
    const uint8_t *data = part ? kv_block_v_data(kv, b, job->layer) : kv_block_k_data(kv, b, job->layer);
    if (t == KV_F16) {
        *bytes = ((int64_t)(hd - 1) * bt + 16) * 2;
        return (fa_chunk_t){(const uint16_t *)(const void *)data + (int64_t)kvh * hd * bt + col, bt, FA_F16};
    }
    const int64_t bb = t == KV_Q8_0 ? FA_Q8_BLOCK : FA_Q4_BLOCK, nb = (int64_t)job->n_head_kv * hd / 32;
    *bytes = hd / 32 * bb;
    return (fa_chunk_t){data + (col / FA_CHUNK) * nb * bb + (int64_t)kvh * (hd / 32) * bb, 0,
                        t == KV_Q8_0 ? FA_Q8 : FA_Q4};
}

/* Asks the CPU to bring chunks ca .. cb - 1 (K and V) towards the core
 * while the current tile is computed: consecutive chunks of a sequence
 * lie in different cache blocks, far apart, which the hardware
 * prefetchers do not follow. Changes no value. */
static void prefetch_chunks(const attn_flash_t *fa, const attn_job_t *job, const int32_t *blocks, int32_t kvh,
                            int32_t ca, int32_t cb)
{
    for (int32_t c = ca; c < cb; c++)
        for (int part = 0; part < 2; part++) {
            int64_t n;
            const fa_chunk_t x = chunk_at(fa, job, blocks, kvh, c, part, &n);
            const char *p = x.p;
            for (int64_t i = 0; i < n; i += 64)
                __builtin_prefetch(p + i, 0, 2);
            if (n)
                __builtin_prefetch(p + n - 1, 0, 2);
        }
}

/* Chunks ca .. cb - 1 of KV head kvh (attn_flash_kern.h): read in place,
 * or converted to floats for R >= FA_WIDEN_ROWS rows (the same values).
 * V's positions from `end` on (attended by no row: not written yet, or
 * left by an earlier sequence) read as zeros, so that whatever they hold
 * (even Inf or NaN) cannot reach a row through P = 0 times V. */
static void load_chunks(const attn_flash_t *fa, const attn_job_t *job, const int32_t *blocks, int32_t kvh,
                        int32_t ca, int32_t cb, int32_t end, int32_t R, const fa_scr_t *s, fa_chunks_t *ch)
{
    const fa_kern_t *K = fa->K;
    const int32_t hd = fa->hd;
    for (int32_t c = ca; c < cb; c++) {
        const int32_t p = c * FA_CHUNK, i = c - ca;
        const int32_t n_valid = end - p < 16 ? end - p : 16;
        for (int part = 0; part < 2; part++) {
            fa_chunk_t *x = part ? &ch->v[i] : &ch->k[i];
            float *buf = (part ? s->vbuf : s->kbuf) + (int64_t)i * 16 * hd;
            int64_t bytes;
            *x = chunk_at(fa, job, blocks, kvh, c, part, &bytes);
            if (!bytes)
                continue;
            const int32_t n = part ? n_valid : 16;
            if (n < 16 || R >= FA_WIDEN_ROWS) {
                K->widen(x, hd, buf);
                for (int32_t d = 0; n < 16 && d < hd; d++)
                    memset(buf + d * 16 + n, 0, (size_t)(16 - n) * sizeof(float));
                *x = (fa_chunk_t){buf, 16, FA_F32};
            }
        }
    }
}

/* The positions [*ua, *ub) of the tile [a, b) some row of [0, R) attends;
 * false if none. */
static bool attended(const fa_scr_t *s, int32_t R, int32_t a, int32_t b, int32_t *ua, int32_t *ub)
{
    *ua = b, *ub = a;
    for (int32_t r = 0; r < R; r++) {
        const int32_t lo = s->lo[r] > a ? s->lo[r] : a, hi = s->hi[r] < b ? s->hi[r] : b;
        if (lo < hi) {
            *ua = lo < *ua ? lo : *ua;
            *ub = hi > *ub ? hi : *ub;
        }
    }
    return *ua < *ub;
}

/* One tile [a, b) for rows [0, R) of the item (one query tile: s->q,
 * s->o, ... point at its first row), whose chunks ca .. ca + nc - 1 are
 * ch (loaded for the whole item). Chunks of the next tile, pa .. pz - 1,
 * are prefetched along the way. */
static void run_tile(const attn_flash_t *fa, const attn_job_t *job, const fa_item_t *it, const fa_scr_t *s,
                     int32_t R, int32_t a, int32_t b, const fa_chunks_t *ch, int32_t ca, int32_t pa, int32_t pz)
{
    const fa_kern_t *K = fa->K;
    const int32_t hd = fa->hd;
    int32_t ua, ub;
    if (!attended(s, R, a, b, &ua, &ub))
        return;
    const int32_t c0 = ua / FA_CHUNK, nc = (ub + FA_CHUNK - 1) / FA_CHUNK - c0, n = nc * FA_CHUNK;
    const int32_t base = c0 * FA_CHUNK;
    for (int32_t i = 0; i < nc; i++) {
        if (pa + i < pz)
            prefetch_chunks(fa, job, job->blocks[it->t0], it->kvh, pa + i, i + 1 < nc ? pa + i + 1 : pz);
        K->qk(&ch->k[c0 - ca + i], s->q, hd, R, hd, s->s + i * FA_CHUNK, FA_TILE);
    }
    /* per row: the mask and the new maximum; then the rescale factors
     * alpha = fa_exp(m_old - m_new) of all rows at once (an empty
     * row's m_old is -inf: alpha 0); then the probabilities */
    for (int32_t r = 0; r < R; r++) {
        float *sr = s->s + (int64_t)r * FA_TILE;
        const int32_t lo = s->lo[r] > a ? s->lo[r] : a, hi = s->hi[r] < b ? s->hi[r] : b;
        s->al[r] = 0.0f;
        if (lo >= hi) {
            memset(sr, 0, (size_t)n * sizeof *sr);
            continue;
        }
        for (int32_t j = 0; j < lo - base; j++)
            sr[j] = -INFINITY;
        for (int32_t j = hi - base; j < n; j++)
            sr[j] = -INFINITY;
        const float mx = K->max(sr, n);
        s->mn[r] = mx > s->m[r] ? mx : s->m[r];
        s->al[r] = s->m[r] == -INFINITY ? -INFINITY : s->m[r] - s->mn[r];
    }
    for (int32_t r = R; r % 8; r++)
        s->al[r] = 0.0f;
    K->exp_sum(s->al, (R + 7) / 8 * 8, 0.0f);
    for (int32_t r = 0; r < R; r++) {
        if ((s->lo[r] > a ? s->lo[r] : a) >= (s->hi[r] < b ? s->hi[r] : b))
            continue; /* none of the row's positions in this tile */
        const float alpha = s->al[r];
        const float sum = K->exp_sum(s->s + (int64_t)r * FA_TILE, n, s->mn[r]);
        s->l[r] = s->l[r] * alpha + sum;
        if (alpha != 1.0f)
            K->scale(s->o + (int64_t)r * hd, hd, alpha);
        s->m[r] = s->mn[r];
    }
    K->pv(&ch->v[c0 - ca], nc, s->s, FA_TILE, R, hd, s->o, hd);
}

/* The scratch of query tile g of an item: its rows' arrays. */
static fa_scr_t group_scr(const fa_scr_t *s, int32_t row0, int32_t hd)
{
    fa_scr_t g = *s;
    g.q += (int64_t)row0 * hd;
    g.o += (int64_t)row0 * hd;
    g.ot += (int64_t)row0 * hd;
    g.m += row0, g.l += row0, g.mt += row0, g.lt += row0, g.mn += row0, g.al += row0;
    g.lo += row0, g.hi += row0;
    return g;
}

/* Rows [0, R) of the item over positions [p0, p1) (one segment), from a
 * fresh start: s->m, s->l, s->o. Each tile's chunks are loaded (and
 * converted) once for all the item's query tiles, which take it one after
 * the other (fa->rows rows each): a row's arithmetic does not depend on
 * which rows share its item, so this changes no bit. The item's
 * positions end at pend (for prefetching across segments). */
static void run_segment(const attn_flash_t *fa, const attn_job_t *job, const fa_item_t *it, const fa_scr_t *s,
                        int32_t R, int32_t p0, int32_t p1, int32_t pend)
{
    const int32_t hd = fa->hd, QR = fa->rows;
    const int32_t *blocks = job->blocks[it->t0];
    for (int32_t r = 0; r < R; r++) {
        s->m[r] = -INFINITY;
        s->l[r] = 0.0f;
    }
    memset(s->o, 0, (size_t)R * (size_t)hd * sizeof(float));
    for (int32_t t0 = p0 / FA_TILE * FA_TILE; t0 < p1; t0 += FA_TILE) {
        const int32_t a = t0 > p0 ? t0 : p0, b = t0 + FA_TILE < p1 ? t0 + FA_TILE : p1;
        int32_t ua, ub;
        if (!attended(s, R, a, b, &ua, &ub))
            continue;
        const int32_t ca = ua / FA_CHUNK, cb = (ub + FA_CHUNK - 1) / FA_CHUNK;
        fa_chunks_t ch;
        load_chunks(fa, job, blocks, it->kvh, ca, cb, ub, R, s, &ch);
        /* the next tile's chunks, prefetched during the first query tile */
        int32_t pa = (t0 + FA_TILE) / FA_CHUNK;
        const int32_t pz = t0 + FA_TILE >= pend ? pa : ((t0 + 2 * FA_TILE < pend ? t0 + 2 * FA_TILE : pend) + FA_CHUNK - 1) / FA_CHUNK;
        for (int32_t r0 = 0; r0 < R; r0 += QR) {
            const fa_scr_t g = group_scr(s, r0, hd);
            run_tile(fa, job, it, &g, R - r0 < QR ? R - r0 : QR, a, b, &ch, ca, pa, pz);
            pa = pz;
        }
    }
}

/* fold() of every row of the item (those with positions in the segment)
 * into its total, the exponentials of all rows in two vector calls: the
 * same bits as fold(). */
static void fold_rows(const attn_flash_t *fa, const fa_scr_t *s, int32_t R)
{
    const int32_t hd = fa->hd, R8 = (R + 7) / 8 * 8;
    float *ea = s->al, *eb = s->mn;
    for (int32_t r = 0; r < R8; r++) {
        ea[r] = eb[r] = 0.0f;
        if (r >= R || s->m[r] == -INFINITY || s->mt[r] == -INFINITY)
            continue;
        const float M = s->m[r] > s->mt[r] ? s->m[r] : s->mt[r];
        ea[r] = s->mt[r] - M;
        eb[r] = s->m[r] - M;
    }
    fa->K->exp_sum(ea, R8, 0.0f);
    fa->K->exp_sum(eb, R8, 0.0f);
    for (int32_t r = 0; r < R; r++) {
        if (s->m[r] == -INFINITY)
            continue; /* none of the row's positions in this segment */
        float *ot = s->ot + (int64_t)r * hd;
        const float *o = s->o + (int64_t)r * hd;
        if (s->mt[r] == -INFINITY) {
            s->mt[r] = s->m[r];
            s->lt[r] = s->l[r];
            memcpy(ot, o, (size_t)hd * sizeof *ot);
            continue;
        }
        const float a = ea[r], b = eb[r];
        s->lt[r] = s->lt[r] * a + s->l[r] * b;
        for (int d = 0; d < hd; d++)
            ot[d] = ot[d] * a + o[d] * b;
        s->mt[r] = s->m[r] > s->mt[r] ? s->m[r] : s->mt[r];
    }
}

static float *partial(const attn_flash_t *fa, int32_t t, int32_t h, int32_t seg)
{
    return fa->split + (((int64_t)t * fa->n_head + h) * fa->n_seg_max + seg) * (fa->hd + 2);
}

static void run_item(const attn_flash_t *fa, const fa_item_t *it, const fa_scr_t *s)
{
    const attn_job_t *job = fa->job;
    const int32_t hd = fa->hd, R = it->nt * it->nh;
    int32_t ulo = INT32_MAX, uhi = 0;
    for (int32_t r = 0; r < R; r++) {
        const int32_t t = it->t0 + r / it->nh, h = it->h0 + r % it->nh;
        s->lo[r] = job->kv_start ? job->kv_start[t] : 0;
        s->hi[r] = job->n_kv[t];
        ulo = s->lo[r] < ulo ? s->lo[r] : ulo;
        uhi = s->hi[r] > uhi ? s->hi[r] : uhi;
        const float *q = job->q + ((int64_t)t * job->n_head + h) * hd;
        float *qr = s->q + (int64_t)r * hd;
        uint16_t *q16 = (uint16_t *)(void *)s->o; /* free until run_segment */
        fp16_row_from_fp32(q, q16, hd);
        fp16_row_to_fp32(q16, qr, hd);
        for (int32_t d = 0; d < hd; d++)
            qr[d] *= job->scale;
        s->mt[r] = -INFINITY;
        s->lt[r] = 0.0f;
    }
    const int32_t sg0 = it->seg >= 0 ? it->seg : ulo / FA_SEG;
    const int32_t sg1 = it->seg >= 0 ? it->seg + 1 : (uhi + FA_SEG - 1) / FA_SEG;
    for (int32_t sg = sg0; sg < sg1; sg++) {
        const int32_t p0 = sg * FA_SEG > ulo ? sg * FA_SEG : ulo;
        const int32_t p1 = (sg + 1) * FA_SEG < uhi ? (sg + 1) * FA_SEG : uhi;
        run_segment(fa, job, it, s, R, p0, p1, uhi);
        if (it->seg < 0) {
            fold_rows(fa, s, R);
            continue;
        }
        for (int32_t r = 0; r < R; r++) {
            if (s->m[r] == -INFINITY)
                continue; /* none of the row's positions in this segment */
            float *pp = partial(fa, it->t0 + r / it->nh, it->h0 + r % it->nh, sg);
            pp[0] = s->m[r];
            pp[1] = s->l[r];
            memcpy(pp + 2, s->o + (int64_t)r * hd, (size_t)hd * sizeof(float));
        }
    }
    if (it->seg >= 0)
        return;
    for (int32_t r = 0; r < R; r++) {
        const int32_t t = it->t0 + r / it->nh, h = it->h0 + r % it->nh;
        finish(s->mt[r], s->lt[r], s->ot + (int64_t)r * hd, job->sinks ? &job->sinks[h] : NULL, hd,
               job->out + ((int64_t)t * job->n_head + h) * hd);
    }
}

static void worker(void *arg, int ith, int nth)
{
    attn_flash_t *fa = arg;
    (void)nth;
    fa_scr_t s;
    if (ith >= fa->n_threads)
        return;
    scratch_floats(fa->rows, fa->hd, &s, fa->scratch + (int64_t)ith * fa->scr_stride);
    for (;;) {
        const int i = atomic_fetch_add_explicit(&fa->next, 1, memory_order_relaxed);
        if (i >= fa->n_items)
            break;
        run_item(fa, &fa->items[i], &s);
    }
}

/* The second pass of split items: each (token, head) folds its segments. */
static void merge_worker(void *arg, int ith, int nth)
{
    attn_flash_t *fa = arg;
    const attn_job_t *job = fa->job;
    const int32_t hd = fa->hd;
    fa_scr_t s;
    scratch_floats(fa->rows, hd, &s, fa->scratch + (int64_t)ith * fa->scr_stride);
    for (int32_t i = ith; i < job->n_tok * job->n_head; i += nth) {
        const int32_t t = i / job->n_head, h = i % job->n_head;
        if (!FLASH_TOK(job, t))
            continue;
        const int32_t lo = job->kv_start ? job->kv_start[t] : 0, hi = job->n_kv[t];
        float mt = -INFINITY, lt = 0.0f;
        for (int32_t sg = lo / FA_SEG; sg < (hi + FA_SEG - 1) / FA_SEG; sg++) {
            const float *pp = partial(fa, t, h, sg);
            fold(&mt, &lt, s.ot, pp[0], pp[1], pp + 2, hd);
        }
        finish(mt, lt, s.ot, job->sinks ? &job->sinks[h] : NULL, hd, job->out + ((int64_t)t * job->n_head + h) * hd);
    }
}

static int cmp_cost(const void *a, const void *b)
{
    const int64_t x = ((const fa_item_t *)a)->cost, y = ((const fa_item_t *)b)->cost;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The items of the job: query tiles x KV heads; for few of them (decode)
 * also heads one by one and segments one by one, if the partials fit. */
static void plan(attn_flash_t *fa, const attn_job_t *job, int nth)
{
    const int32_t n_rep = job->n_head / job->n_head_kv;
    int32_t n_tiles = 0, max_kv = 0, n_qt = 0, run = 0, span = 0;
    for (int32_t t = 0; t < job->n_tok; t++) {
        if (!FLASH_TOK(job, t))
            continue;
        const int32_t segs = (job->n_kv[t] + FA_SEG - 1) / FA_SEG - (job->kv_start ? job->kv_start[t] : 0) / FA_SEG;
        span = segs > span ? segs : span; /* most segments of a token */
        if (t == 0 || job->blocks[t] != job->blocks[t - 1] || !FLASH_TOK(job, t - 1)) {
            n_tiles++;
            run = 0;
        }
        n_qt += run++ % fa->qtok == 0; /* query tiles */
        max_kv = job->n_kv[t] > max_kv ? job->n_kv[t] : max_kv;
    }
    fa->n_seg_max = (max_kv + FA_SEG - 1) / FA_SEG;
    const int64_t base = (int64_t)n_tiles * job->n_head_kv;
    fa->use_split = nth > 1 && base < 3 * nth &&
                    (int64_t)job->n_tok * job->n_head * fa->n_seg_max * (fa->hd + 2) <= fa->split_cap;
    /* a KV head's query heads share its items (each K/V chunk is read
     * once for all of them) unless the segments are too few to keep the
     * threads busy: then a head per item */
    const int32_t nh = fa->use_split && base * span < 2 * nth ? 1 : n_rep;
    /* query tiles per item: up to FA_GROUP while that leaves 4 items per thread */
    int64_t group = fa->use_split ? 1 : (int64_t)n_qt * job->n_head_kv / (4 * nth);
    group = group < 1 ? 1 : group > FA_GROUP ? FA_GROUP : group;
    const int32_t max_nt = fa->qtok * (int32_t)group;
    fa->n_items = 0;
    for (int32_t t0 = 0; t0 < job->n_tok;) {
        if (!FLASH_TOK(job, t0)) {
            t0++;
            continue;
        }
        int32_t nt = 1;
        while (t0 + nt < job->n_tok && nt < max_nt && job->blocks[t0 + nt] == job->blocks[t0] &&
               FLASH_TOK(job, t0 + nt))
            nt++;
        int32_t lo = INT32_MAX, hi = 0;
        for (int32_t t = t0; t < t0 + nt; t++) {
            const int32_t l = job->kv_start ? job->kv_start[t] : 0;
            lo = l < lo ? l : lo;
            hi = job->n_kv[t] > hi ? job->n_kv[t] : hi;
        }
        /* one item per (rows, segment) when split, else one for all the
         * segments: each (token, head, segment) is in exactly one item */
        for (int32_t kvh = 0; kvh < job->n_head_kv; kvh++)
            for (int32_t h0 = 0; h0 < n_rep; h0 += nh) {
                if (!fa->use_split) {
                    fa->items[fa->n_items++] = (fa_item_t){t0, nt, kvh, kvh * n_rep + h0, nh, -1,
                                                           (int64_t)nt * nh * (hi - lo)};
                    continue;
                }
                for (int32_t sg = lo / FA_SEG; sg < (hi + FA_SEG - 1) / FA_SEG; sg++) {
                    const int32_t a = sg * FA_SEG > lo ? sg * FA_SEG : lo;
                    const int32_t b = (sg + 1) * FA_SEG < hi ? (sg + 1) * FA_SEG : hi;
                    fa->items[fa->n_items++] = (fa_item_t){t0, nt, kvh, kvh * n_rep + h0, nh, sg,
                                                           (int64_t)nt * nh * (b - a)};
                }
            }
        t0 += nt;
    }
    qsort(fa->items, (size_t)fa->n_items, sizeof *fa->items, cmp_cost);
}

void attn_flash_run(attn_flash_t *fa, tpool_t *pool, const attn_job_t *job)
{
    const int nth = pool ? tpool_size(pool) : 1;
    fa->job = job;
    fa->K = fa_kern();
    /* this layer's shape (within what attn_flash_create sized) */
    fa->hd = job->head_dim;
    fa->qtok = qtok_for(job->n_head / job->n_head_kv);
    fa->rows = fa->qtok * (job->n_head / job->n_head_kv);
    plan(fa, job, nth < fa->n_threads ? nth : fa->n_threads);
    atomic_store(&fa->next, 0);
    if (pool && fa->n_threads > 1)
        tpool_run(pool, worker, fa);
    else
        worker(fa, 0, 1);
    if (fa->use_split) {
        if (pool && fa->n_threads > 1)
            tpool_run(pool, merge_worker, fa);
        else
            merge_worker(fa, 0, 1);
    }
}

int32_t attn_flash_plan_view(const attn_flash_t *fa, attn_flash_span_t *out, int32_t cap)
{
    for (int32_t i = 0; i < fa->n_items && i < cap; i++)
        out[i] = (attn_flash_span_t){fa->items[i].t0, fa->items[i].nt, fa->items[i].h0, fa->items[i].nh,
                                     fa->items[i].seg};
    return fa->n_items;
}
