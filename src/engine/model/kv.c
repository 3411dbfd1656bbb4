/* kv.c - block pools, block tables and the prefix registry.
 *
 * Two pools of the same shape (pool 0: the full-attention layers, pool 1:
 * the sliding-window layers, absent without them). Block states in a pool:
 * FREE (never registered or evicted: on the free list), IN USE (ref > 0),
 * CACHED (ref == 0 but registered: on the LRU list, contents kept).
 *
 * Main pool registry: a registered block remembers its parent block and
 * the parent's generation; a block's generation changes whenever it is
 * evicted, so a child registered under the old contents can never match
 * under the new. Sequences release their blocks last-to-first, so on the
 * LRU list a child is always older than its parent and is evicted first.
 *
 * Window pool registry: a registered window block is keyed by the main
 * block of the same table index and that block's generation (its
 * `parent` fields), so it matches exactly when that main block (hence the
 * whole token chain up to it) is still the one registered.
 */
#include "engine/model/kv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"

typedef struct {
    int32_t ref;
    bool registered;
    uint32_t gen;          /* bumped on eviction */
    int32_t parent;        /* main: parent block or -1; window: its main block */
    uint32_t parent_gen;
    uint64_t hash;
    int32_t hnext;         /* hash chain */
    int32_t prev, next;    /* LRU list (CACHED) or free list (next only) */
} kv_block_t;

typedef struct {
    int32_t n_layer;       /* layers stored in this pool */
    int32_t n_blocks;
    size_t k_block, v_block; /* bytes of a block's K (V): the sum over its layers */
    uint8_t *k, *v;
    kv_block_t *blocks;
    int32_t free_head, n_free;
    int32_t lru_head, lru_tail, n_lru; /* head = least recently used */
    int32_t *buckets;
    uint32_t bucket_mask;
} kv_pool_t;

typedef struct {
    int32_t *blocks;       /* [max_seq_blocks] main pool */
    int32_t *wblocks;      /* [max_seq_blocks] window pool (-1: given back) */
    int32_t n_blocks;      /* table entries (both pools) */
    int32_t len;           /* computed positions */
    int32_t committed;     /* leading blocks registered or attached */
    int32_t w_lo;          /* window entries below are -1 */
} kv_seq_t;

struct kv_cache {
    kv_opts_t o;
    int32_t max_seq_blocks;
    bool has_window;
    int32_t w_per_seq;     /* kv_swa_blocks_per_seq */
    int8_t *layer_pool;    /* [n_layer] 0 or 1 */
    size_t *k_off, *v_off; /* [n_layer] byte offset of the layer's K (V) inside a block of its pool */
    int64_t *layer_dim;    /* [n_layer] K/V width (0: no cache) */
    kv_pool_t pool[2];
    int32_t *tokens;       /* [main n_blocks][block_tokens]: a registered block's tokens */
    kv_seq_t *seqs;
};

int32_t kv_swa_blocks_per_seq(const kv_opts_t *o)
{
    bool any = false;
    for (int32_t l = 0; o->layer_swa && l < o->n_layer; l++)
        any |= o->layer_swa[l];
    if (!any || o->n_swa <= 0 || o->block_tokens <= 0)
        return 0;
    const int64_t B = o->block_tokens, mb = o->max_batch > 0 ? o->max_batch : 512;
    const int64_t per = ((int64_t)o->n_swa - 1 + mb + B - 1) / B + 3;
    const int64_t cap = ((int64_t)o->max_seq_len + B - 1) / B;
    return (int32_t)(per < cap ? per : cap);
}

/* n zeroed elements of size bytes for K or V. Flash attention reads a
 * sequence's consecutive chunks from blocks far apart (a block holds every
 * layer): huge pages, where the kernel gives them (THP in "madvise" mode),
 * save it a TLB miss per chunk. */
static void *pool_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20, a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    const uintptr_t e = ((uintptr_t)p + n * size) & ~(huge - 1);
    if (p && e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE);
#endif
    return p;
}

static bool pool_init(kv_pool_t *p, int32_t n_layer, size_t k_block, size_t v_block, int32_t n_blocks)
{
    p->n_layer = n_layer;
    p->n_blocks = n_blocks;
    p->k_block = k_block;
    p->v_block = v_block;
    size_t n = (size_t)n_blocks;
    /* zeroed so that no read of a not yet written column is undefined */
    if (p->k_block) {
        p->k = pool_calloc(n, p->k_block);
        p->v = pool_calloc(n, p->v_block);
        if (!p->k || !p->v)
            return false;
    }
    p->blocks = calloc(n, sizeof *p->blocks);
    uint32_t nb = 16;
    while (nb < 2 * n)
        nb *= 2;
    p->bucket_mask = nb - 1;
    p->buckets = malloc(nb * sizeof(int32_t));
    if (!p->blocks || !p->buckets)
        return false;
    memset(p->buckets, 0xff, nb * sizeof(int32_t));
    for (int32_t b = 0; b < n_blocks; b++) {
        p->blocks[b].next = b + 1 < n_blocks ? b + 1 : -1;
        p->blocks[b].hnext = -1;
        p->blocks[b].parent = -1;
    }
    p->free_head = 0;
    p->n_free = n_blocks;
    p->lru_head = p->lru_tail = -1;
    return true;
}

static void pool_free(kv_pool_t *p)
{
    free(p->buckets);
    free(p->blocks);
    free(p->k);
    free(p->v);
}

/* Whether every layer's K/V width is a multiple of 32 (quantized types). */
static bool dims_of_32(const kv_opts_t *o)
{
    for (int32_t l = 0; l < o->n_layer; l++)
        if ((o->layer_kv_dim ? o->layer_kv_dim[l] : o->kv_dim) % 32)
            return false;
    return true;
}

kv_cache_t *kv_create(const kv_opts_t *o, lf_err_t *err)
{
    if (!o || o->n_layer <= 0 || (o->kv_dim <= 0 && !o->layer_kv_dim) || o->block_tokens <= 0 || o->block_tokens > 4096 ||
        o->n_blocks <= 0 || o->n_seq <= 0 || o->max_seq_len <= 0 || o->n_swa < 0) {
        lf_err_set(err, LF_ERR_INVALID, "invalid KV cache sizes");
        return NULL;
    }
    if ((unsigned)o->type_k >= KV_TYPE_COUNT || (unsigned)o->type_v >= KV_TYPE_COUNT ||
        ((o->type_k != KV_F16 || o->type_v != KV_F16) && (!dims_of_32(o) || o->block_tokens % 16))) {
        lf_err_set(err, LF_ERR_INVALID, "invalid KV cache type");
        return NULL;
    }
    kv_cache_t *kv = calloc(1, sizeof *kv);
    if (!kv) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the KV cache");
        return NULL;
    }
    kv->o = *o;
    kv->o.layer_swa = NULL;
    kv->max_seq_blocks = (o->max_seq_len + o->block_tokens - 1) / o->block_tokens;
    const int32_t per_seq = kv_swa_blocks_per_seq(o);
    kv->has_window = per_seq > 0;
    kv->w_per_seq = per_seq;
    kv->o.layer_kv_dim = NULL;
    kv->layer_pool = calloc((size_t)o->n_layer, sizeof *kv->layer_pool);
    kv->k_off = calloc((size_t)o->n_layer, sizeof *kv->k_off);
    kv->v_off = calloc((size_t)o->n_layer, sizeof *kv->v_off);
    kv->layer_dim = calloc((size_t)o->n_layer, sizeof *kv->layer_dim);
    bool ok = kv->layer_pool && kv->k_off && kv->v_off && kv->layer_dim;
    int32_t n_in[2] = {0, 0};
    size_t kb[2] = {0, 0}, vb[2] = {0, 0};
    for (int32_t l = 0; ok && l < o->n_layer; l++) {
        const int64_t d = o->layer_kv_dim ? o->layer_kv_dim[l] : o->kv_dim;
        const int pl = kv->layer_pool[l] = kv->has_window && o->layer_swa[l];
        kv->layer_dim[l] = d > 0 ? d : 0;
        kv->k_off[l] = kb[pl];
        kv->v_off[l] = vb[pl];
        kb[pl] += (size_t)o->block_tokens * qtype_row_size(kv_type_qtype(o->type_k), kv->layer_dim[l]);
        vb[pl] += (size_t)o->block_tokens * qtype_row_size(kv_type_qtype(o->type_v), kv->layer_dim[l]);
        n_in[pl] += d > 0;
    }
    int32_t n_w = 0;
    if (kv->has_window) {
        n_w = o->n_blocks_swa > 0 ? o->n_blocks_swa : (int32_t)((int64_t)o->n_seq * per_seq < o->n_blocks
                                                                    ? (int64_t)o->n_seq * per_seq
                                                                    : o->n_blocks);
        kv->o.n_blocks_swa = n_w;
    }
    ok = ok && pool_init(&kv->pool[0], n_in[0], kb[0], vb[0], o->n_blocks) &&
         (!kv->has_window || pool_init(&kv->pool[1], n_in[1], kb[1], vb[1], n_w));
    kv->tokens = ok ? malloc((size_t)o->n_blocks * (size_t)o->block_tokens * sizeof(int32_t)) : NULL;
    kv->seqs = ok ? calloc((size_t)o->n_seq, sizeof *kv->seqs) : NULL;
    ok = kv->tokens && kv->seqs;
    for (int32_t s = 0; ok && s < o->n_seq; s++) {
        ok = (kv->seqs[s].blocks = malloc((size_t)kv->max_seq_blocks * sizeof(int32_t))) != NULL;
        if (ok && kv->has_window)
            ok = (kv->seqs[s].wblocks = malloc((size_t)kv->max_seq_blocks * sizeof(int32_t))) != NULL;
    }
    if (!ok) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for a KV cache of %d blocks (%.1f MiB)", o->n_blocks,
                   ((double)o->n_blocks * (double)(kv->pool[0].k_block + kv->pool[0].v_block) +
                    (double)n_w * (double)(kv->pool[1].k_block + kv->pool[1].v_block)) / (1 << 20));
        kv_free(kv);
        return NULL;
    }
    return kv;
}

void kv_free(kv_cache_t *kv)
{
    if (!kv)
        return;
    if (kv->seqs)
        for (int32_t s = 0; s < kv->o.n_seq; s++) {
            free(kv->seqs[s].blocks);
            free(kv->seqs[s].wblocks);
        }
    free(kv->seqs);
    free(kv->tokens);
    pool_free(&kv->pool[0]);
    pool_free(&kv->pool[1]);
    free(kv->layer_pool);
    free(kv->k_off);
    free(kv->v_off);
    free(kv->layer_dim);
    free(kv);
}

static int32_t pool_available(const kv_pool_t *p) { return p->n_free + p->n_lru; }
static int32_t pool_in_use(const kv_pool_t *p) { return p->n_blocks - p->n_free - p->n_lru; }

int32_t kv_block_tokens(const kv_cache_t *kv) { return kv->o.block_tokens; }
int32_t kv_n_blocks(const kv_cache_t *kv) { return kv->o.n_blocks; }
int32_t kv_blocks_available(const kv_cache_t *kv) { return pool_available(&kv->pool[0]); }
int32_t kv_blocks_in_use(const kv_cache_t *kv) { return pool_in_use(&kv->pool[0]); }
int32_t kv_n_blocks_swa(const kv_cache_t *kv) { return kv->has_window ? kv->pool[1].n_blocks : 0; }
int32_t kv_blocks_in_use_swa(const kv_cache_t *kv) { return kv->has_window ? pool_in_use(&kv->pool[1]) : 0; }

uint64_t kv_bytes(const kv_cache_t *kv)
{
    return (uint64_t)kv->pool[0].n_blocks * (kv->pool[0].k_block + kv->pool[0].v_block) +
           (uint64_t)kv->pool[1].n_blocks * (kv->pool[1].k_block + kv->pool[1].v_block);
}

uint64_t kv_bytes_in_use(const kv_cache_t *kv)
{
    uint64_t b = (uint64_t)pool_in_use(&kv->pool[0]) * (kv->pool[0].k_block + kv->pool[0].v_block);
    if (kv->has_window)
        b += (uint64_t)pool_in_use(&kv->pool[1]) * (kv->pool[1].k_block + kv->pool[1].v_block);
    return b;
}

static const struct {
    const char *name;
    qtype_t qtype;
} kv_types[KV_TYPE_COUNT] = {{"f16", QTYPE_F16}, {"q8_0", QTYPE_Q8_0}, {"q4_0", QTYPE_Q4_0}};

const char *kv_type_name(kv_type_t t) { return (unsigned)t < KV_TYPE_COUNT ? kv_types[t].name : "?"; }

qtype_t kv_type_qtype(kv_type_t t) { return (unsigned)t < KV_TYPE_COUNT ? kv_types[t].qtype : QTYPE_F16; }

bool kv_type_parse(const char *s, kv_type_t *out)
{
    for (int t = 0; s && t < KV_TYPE_COUNT; t++)
        if (!strcmp(s, kv_types[t].name)) {
            *out = (kv_type_t)t;
            return true;
        }
    return false;
}

uint64_t kv_bytes_per_position(kv_type_t type_k, kv_type_t type_v, int64_t kv_dim)
{
    return (uint64_t)qtype_row_size(kv_type_qtype(type_k), kv_dim) +
           (uint64_t)qtype_row_size(kv_type_qtype(type_v), kv_dim);
}

kv_type_t kv_type_k(const kv_cache_t *kv) { return kv->o.type_k; }
kv_type_t kv_type_v(const kv_cache_t *kv) { return kv->o.type_v; }

bool kv_fits_new(const kv_cache_t *kv, int32_t n_tokens)
{
    const int32_t need = (n_tokens + kv->o.block_tokens) / kv->o.block_tokens;
    if (need > pool_available(&kv->pool[0]))
        return false;
    if (!kv->has_window)
        return true;
    return (need < kv->w_per_seq ? need : kv->w_per_seq) <= pool_available(&kv->pool[1]);
}

int32_t kv_layer_window(const kv_cache_t *kv, int32_t layer)
{
    return layer >= 0 && layer < kv->o.n_layer && kv->layer_pool[layer] ? kv->o.n_swa : 0;
}

static bool seq_ok(const kv_cache_t *kv, int32_t seq) { return seq >= 0 && seq < kv->o.n_seq; }

int32_t kv_seq_len(const kv_cache_t *kv, int32_t seq) { return seq_ok(kv, seq) ? kv->seqs[seq].len : 0; }

/* ---- lists ---- */

static void lru_remove(kv_pool_t *p, int32_t b)
{
    kv_block_t *k = &p->blocks[b];
    if (k->prev >= 0)
        p->blocks[k->prev].next = k->next;
    else
        p->lru_head = k->next;
    if (k->next >= 0)
        p->blocks[k->next].prev = k->prev;
    else
        p->lru_tail = k->prev;
    p->n_lru--;
}

static void lru_push(kv_pool_t *p, int32_t b)
{
    kv_block_t *k = &p->blocks[b];
    k->prev = p->lru_tail;
    k->next = -1;
    if (p->lru_tail >= 0)
        p->blocks[p->lru_tail].next = b;
    else
        p->lru_head = b;
    p->lru_tail = b;
    p->n_lru++;
}

static void free_push(kv_pool_t *p, int32_t b)
{
    p->blocks[b].next = p->free_head;
    p->free_head = b;
    p->n_free++;
}

/* Drops one reference; an unreferenced block goes to the LRU list if
 * registered (contents kept), else to the free list. */
static void block_unref(kv_pool_t *p, int32_t b)
{
    if (--p->blocks[b].ref > 0)
        return;
    if (p->blocks[b].registered)
        lru_push(p, b);
    else
        free_push(p, b);
}

/* Takes one more reference on a registered block (out of the LRU list). */
static void block_ref(kv_pool_t *p, int32_t b)
{
    if (p->blocks[b].ref++ == 0)
        lru_remove(p, b);
}

/* ---- registry ---- */

static uint64_t chain_hash(int32_t parent, uint32_t parent_gen, const int32_t *tokens, int32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)parent << 32 | parent_gen);
    for (int32_t i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)tokens[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h;
}

static void pool_register(kv_pool_t *p, int32_t b, int32_t parent, uint32_t parent_gen, uint64_t hash)
{
    kv_block_t *k = &p->blocks[b];
    k->registered = true;
    k->parent = parent;
    k->parent_gen = parent_gen;
    k->hash = hash;
    int32_t *head = &p->buckets[hash & p->bucket_mask];
    k->hnext = *head;
    *head = b;
}

static void unregister(kv_pool_t *p, int32_t b)
{
    kv_block_t *k = &p->blocks[b];
    int32_t *h = &p->buckets[k->hash & p->bucket_mask];
    while (*h != b)
        h = &p->blocks[*h].hnext;
    *h = k->hnext;
    k->hnext = -1;
    k->registered = false;
    k->gen++;
}

static int32_t lookup(const kv_cache_t *kv, int32_t parent, uint32_t parent_gen, const int32_t *tokens)
{
    const kv_pool_t *p = &kv->pool[0];
    const int32_t B = kv->o.block_tokens;
    uint64_t h = chain_hash(parent, parent_gen, tokens, B);
    for (int32_t b = p->buckets[h & p->bucket_mask]; b >= 0; b = p->blocks[b].hnext) {
        const kv_block_t *k = &p->blocks[b];
        if (k->hash == h && k->parent == parent && k->parent_gen == parent_gen &&
            !memcmp(kv->tokens + (size_t)b * B, tokens, (size_t)B * sizeof(int32_t)))
            return b;
    }
    return -1;
}

/* The registered window block of main block `main` at generation gen. */
static int32_t lookup_window(const kv_cache_t *kv, int32_t main, uint32_t gen)
{
    const kv_pool_t *p = &kv->pool[1];
    uint64_t h = chain_hash(main, gen, NULL, 0);
    for (int32_t b = p->buckets[h & p->bucket_mask]; b >= 0; b = p->blocks[b].hnext) {
        const kv_block_t *k = &p->blocks[b];
        if (k->parent == main && k->parent_gen == gen)
            return b;
    }
    return -1;
}

/* Takes a block for writing: a never-used one first, else the least
 * recently used cached one (its registration is dropped). */
static int32_t take_block(kv_pool_t *p)
{
    int32_t b;
    if (p->free_head >= 0) {
        b = p->free_head;
        p->free_head = p->blocks[b].next;
        p->n_free--;
    } else {
        b = p->lru_head;
        lru_remove(p, b);
        unregister(p, b);
    }
    p->blocks[b].ref = 1;
    return b;
}

/* ---- sequences ---- */

/* Gives back the window blocks seq no longer needs: those holding only
 * positions before floor(len / bt) * bt - n_swa + 1 (see kv.h). */
static void window_trim(kv_cache_t *kv, kv_seq_t *s)
{
    const int32_t B = kv->o.block_tokens;
    const int32_t keep = s->len / B * B - kv->o.n_swa + 1;
    const int32_t lo = keep > 0 ? keep / B : 0;
    for (int32_t i = s->w_lo; i < lo && i < s->n_blocks; i++) {
        if (s->wblocks[i] >= 0)
            block_unref(&kv->pool[1], s->wblocks[i]);
        s->wblocks[i] = -1;
    }
    if (lo > s->w_lo)
        s->w_lo = lo;
}

lf_code_t kv_seq_reserve(kv_cache_t *kv, int32_t seq, int32_t n_tokens, lf_err_t *err)
{
    if (!seq_ok(kv, seq) || n_tokens < 0)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (n_tokens > kv->o.max_seq_len)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d positions exceed the context of %d", n_tokens,
                          kv->o.max_seq_len);
    kv_seq_t *s = &kv->seqs[seq];
    if (kv->has_window)
        window_trim(kv, s);
    int32_t need = (n_tokens + kv->o.block_tokens - 1) / kv->o.block_tokens - s->n_blocks;
    if (need <= 0)
        return LF_OK;
    if (need > pool_available(&kv->pool[0]))
        return lf_err_set(err, LF_ERR_NOMEM, "KV cache full: %d blocks needed, %d available", need,
                          pool_available(&kv->pool[0]));
    if (kv->has_window && need > pool_available(&kv->pool[1]))
        return lf_err_set(err, LF_ERR_NOMEM, "KV cache full: %d sliding-window blocks needed, %d available", need,
                          pool_available(&kv->pool[1]));
    while (need-- > 0) {
        if (kv->has_window)
            s->wblocks[s->n_blocks] = take_block(&kv->pool[1]);
        s->blocks[s->n_blocks++] = take_block(&kv->pool[0]);
    }
    return LF_OK;
}

void kv_seq_set_len(kv_cache_t *kv, int32_t seq, int32_t len)
{
    if (!seq_ok(kv, seq))
        return;
    kv_seq_t *s = &kv->seqs[seq];
    int32_t cap = s->n_blocks * kv->o.block_tokens;
    s->len = len < 0 ? 0 : len > cap ? cap : len;
}

lf_code_t kv_seq_truncate(kv_cache_t *kv, int32_t seq, int32_t len, lf_err_t *err)
{
    if (!seq_ok(kv, seq))
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    kv_seq_t *s = &kv->seqs[seq];
    if (len < 0 || len > s->len)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d: cannot truncate %d positions to %d", seq, s->len, len);
    if (len < s->committed * kv->o.block_tokens)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d: position %d is in a shared block", seq, len);
    s->len = len;
    return LF_OK;
}

void kv_seq_release(kv_cache_t *kv, int32_t seq)
{
    if (!seq_ok(kv, seq))
        return;
    kv_seq_t *s = &kv->seqs[seq];
    for (int32_t i = s->n_blocks - 1; i >= 0; i--) {
        block_unref(&kv->pool[0], s->blocks[i]);
        if (kv->has_window && s->wblocks[i] >= 0)
            block_unref(&kv->pool[1], s->wblocks[i]);
    }
    s->n_blocks = s->len = s->committed = s->w_lo = 0;
}

/* Window entries [lo, k) of a prefix of k blocks: the blocks the next
 * position (k * bt) attends in the window layers. */
static int32_t window_lo(const kv_cache_t *kv, int32_t k)
{
    const int32_t first = k * kv->o.block_tokens - kv->o.n_swa + 1;
    return first > 0 ? first / kv->o.block_tokens : 0;
}

int32_t kv_seq_attach_prefix(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t n)
{
    return kv_seq_attach_prefix_if(kv, seq, tokens, n, NULL, NULL);
}

int32_t kv_seq_attach_prefix_if(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t n, kv_prefix_ok_fn ok,
                                void *ctx)
{
    if (!seq_ok(kv, seq) || kv->seqs[seq].n_blocks || n <= 1)
        return 0;
    kv_seq_t *s = &kv->seqs[seq];
    kv_pool_t *p = &kv->pool[0];
    const int32_t B = kv->o.block_tokens;
    int32_t max_blocks = (n - 1) / B;
    if (max_blocks > kv->max_seq_blocks)
        max_blocks = kv->max_seq_blocks;
    /* the longest matching main chain, found without taking references */
    int32_t k = 0, parent = -1;
    uint32_t parent_gen = 0;
    for (; k < max_blocks; k++) {
        int32_t b = lookup(kv, parent, parent_gen, tokens + (size_t)k * B);
        if (b < 0)
            break;
        s->blocks[k] = b;
        parent = b;
        parent_gen = p->blocks[b].gen;
    }
    /* with window layers: the longest prefix whose window is cached too (and
     * that the caller accepts) */
    for (; (kv->has_window || ok) && k > 0; k--) {
        if (ok && !ok(ctx, k, s->blocks[k - 1], p->blocks[s->blocks[k - 1]].gen))
            continue;
        if (!kv->has_window)
            break;
        bool all = true;
        for (int32_t i = window_lo(kv, k); all && i < k; i++)
            all = (s->wblocks[i] = lookup_window(kv, s->blocks[i], p->blocks[s->blocks[i]].gen)) >= 0;
        if (all)
            break;
    }
    for (int32_t i = 0; i < k; i++)
        block_ref(p, s->blocks[i]);
    if (kv->has_window) {
        s->w_lo = window_lo(kv, k);
        for (int32_t i = 0; i < k; i++)
            if (i < s->w_lo)
                s->wblocks[i] = -1;
            else
                block_ref(&kv->pool[1], s->wblocks[i]);
    }
    s->n_blocks = s->committed = k;
    s->len = k * B;
    return s->len;
}

void kv_seq_commit(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t len)
{
    if (!seq_ok(kv, seq))
        return;
    kv_seq_t *s = &kv->seqs[seq];
    kv_pool_t *p = &kv->pool[0];
    const int32_t B = kv->o.block_tokens;
    if (len > s->len)
        len = s->len;
    int32_t full = len / B;
    for (int32_t i = s->committed; i < full; i++) {
        int32_t b = s->blocks[i];
        int32_t parent = i ? s->blocks[i - 1] : -1;
        uint32_t parent_gen = i ? p->blocks[parent].gen : 0;
        const int32_t *t = tokens + (size_t)i * B;
        if (!p->blocks[b].registered) {
            /* the same chain may have been registered by another sequence
             * meanwhile: take that block instead of this private copy (the
             * same tokens after the same registered chain, computed in the
             * prompt order: the same bits), so the chain continues from it
             * and its window block can still be registered below */
            const int32_t r = lookup(kv, parent, parent_gen, t);
            if (r >= 0) {
                block_ref(p, r);
                block_unref(p, b);
                s->blocks[i] = b = r;
            } else {
                pool_register(p, b, parent, parent_gen, chain_hash(parent, parent_gen, t, B));
                memcpy(kv->tokens + (size_t)b * B, t, (size_t)B * sizeof(int32_t));
            }
        }
        /* the window block of the same index, while the sequence holds it,
         * unless one is already registered for that block */
        const kv_block_t *k = &p->blocks[b];
        const int32_t w = kv->has_window ? s->wblocks[i] : -1;
        if (w >= 0 && !kv->pool[1].blocks[w].registered && lookup_window(kv, b, k->gen) < 0)
            pool_register(&kv->pool[1], w, b, k->gen, chain_hash(b, k->gen, NULL, 0));
    }
    if (full > s->committed)
        s->committed = full;
}

/* Layer `layer` of block `block`: the bytes of its K (is_v false) or V. */
static uint8_t *block_part(const kv_cache_t *kv, int32_t layer, int32_t block, bool is_v)
{
    const kv_pool_t *p = &kv->pool[kv->layer_pool[layer]];
    const size_t bb = is_v ? p->v_block : p->k_block;
    return (is_v ? p->v : p->k) + (size_t)block * bb + (is_v ? kv->v_off : kv->k_off)[layer];
}

int64_t kv_layer_dim(const kv_cache_t *kv, int32_t layer)
{
    return layer >= 0 && layer < kv->o.n_layer ? kv->layer_dim[layer] : 0;
}

const uint16_t *kv_block_k(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return (const uint16_t *)(const void *)block_part(kv, layer, block, false);
}

const uint16_t *kv_block_v(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return (const uint16_t *)(const void *)block_part(kv, layer, block, true);
}

const void *kv_block_k_data(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return block_part(kv, layer, block, false);
}

const void *kv_block_v_data(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return block_part(kv, layer, block, true);
}

const int32_t *kv_seq_table(const kv_cache_t *kv, int32_t seq, int32_t layer)
{
    if (!seq_ok(kv, seq))
        return NULL;
    return kv->layer_pool[layer] ? kv->seqs[seq].wblocks : kv->seqs[seq].blocks;
}

/* Bytes of one 32-dimension block of a quantized chunk (kv.h): 16 F16
 * scales, then the values transposed (Q8_0: 32 x 16 int8; Q4_0: 16 x 16
 * bytes, byte [j][l] holding dimension j in its low nibble and j + 16 in
 * its high one, as block_q4_0.qs[j] does). */
static size_t chunk_block_bytes(kv_type_t t) { return t == KV_Q8_0 ? 16 * 2 + 32 * 16 : 16 * 2 + 16 * 16; }

enum { KV_CHUNK = 16, KV_PIECE = 64 }; /* positions per chunk; blocks converted at a time */

/* One part (K or V) of position pos: transposed F16 (a scatter over the
 * block's columns) or quantized into its chunk (a scatter over the lanes). */
static void store_part(kv_cache_t *kv, int32_t layer, int32_t block, int32_t col, bool is_v, const uint16_t *h,
                       const float *x)
{
    const int32_t B = kv->o.block_tokens;
    const int64_t D = kv->layer_dim[layer];
    const kv_type_t t = is_v ? kv->o.type_v : kv->o.type_k;
    uint8_t *base = block_part(kv, layer, block, is_v);
    if (t == KV_F16) {
        uint16_t *d = (uint16_t *)(void *)base + col;
        for (int64_t c = 0; c < D; c++)
            d[(size_t)c * (size_t)B] = h ? h[c] : fp16_from_fp32(x[c]);
        return;
    }
    const size_t cb = chunk_block_bytes(t), nb = (size_t)D / 32, lane = (size_t)(col % KV_CHUNK);
    uint8_t *chunk = base + (size_t)(col / KV_CHUNK) * nb * cb;
    uint8_t q[KV_PIECE * 34];
    float tmp[KV_PIECE * 32];
    for (size_t b0 = 0; b0 < nb; b0 += KV_PIECE) {
        const size_t n = nb - b0 < KV_PIECE ? nb - b0 : KV_PIECE;
        const float *src = x + b0 * 32;
        if (h) {
            for (size_t i = 0; i < n * 32; i++)
                tmp[i] = fp16_to_fp32(h[b0 * 32 + i]);
            src = tmp;
        }
        quant_quantize_row(kv_type_qtype(t), src, q, (int64_t)n * 32);
        const size_t qb = t == KV_Q8_0 ? 34 : 18;
        for (size_t b = 0; b < n; b++) {
            const uint8_t *blk = q + b * qb;
            uint8_t *dst = chunk + (b0 + b) * cb;
            memcpy(dst + lane * 2, blk, 2);
            for (int j = 0; j < (t == KV_Q8_0 ? 32 : 16); j++)
                dst[32 + (size_t)j * KV_CHUNK + lane] = blk[2 + j];
        }
    }
}

static void load_part(const kv_cache_t *kv, int32_t layer, int32_t block, int32_t col, bool is_v, uint16_t *h)
{
    const int32_t B = kv->o.block_tokens;
    const int64_t D = kv->layer_dim[layer];
    const kv_type_t t = is_v ? kv->o.type_v : kv->o.type_k;
    const uint8_t *base = block_part(kv, layer, block, is_v);
    if (t == KV_F16) {
        const uint16_t *d = (const uint16_t *)(const void *)base + col;
        for (int64_t c = 0; c < D; c++)
            h[c] = d[(size_t)c * (size_t)B];
        return;
    }
    const size_t cb = chunk_block_bytes(t), nb = (size_t)D / 32, lane = (size_t)(col % KV_CHUNK);
    const uint8_t *chunk = base + (size_t)(col / KV_CHUNK) * nb * cb;
    const size_t qb = t == KV_Q8_0 ? 34 : 18;
    uint8_t blk[34];
    float tmp[32];
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *src = chunk + b * cb;
        memcpy(blk, src + lane * 2, 2);
        for (size_t j = 0; j + 2 < qb; j++)
            blk[2 + j] = src[32 + j * KV_CHUNK + lane];
        quant_dequantize_row(kv_type_qtype(t), blk, tmp, 32);
        for (int j = 0; j < 32; j++)
            h[b * 32 + (size_t)j] = fp16_from_fp32(tmp[j]);
    }
}

void kv_store(kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, const uint16_t *k, const uint16_t *v)
{
    const int32_t B = kv->o.block_tokens, block = kv_seq_table(kv, seq, layer)[pos / B];
    store_part(kv, layer, block, pos % B, false, k, NULL);
    store_part(kv, layer, block, pos % B, true, v, NULL);
}

void kv_store_f32(kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, const float *k, const float *v)
{
    const int32_t B = kv->o.block_tokens, block = kv_seq_table(kv, seq, layer)[pos / B];
    store_part(kv, layer, block, pos % B, false, NULL, k);
    store_part(kv, layer, block, pos % B, true, NULL, v);
}

void kv_load(const kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, uint16_t *k, uint16_t *v)
{
    const int32_t B = kv->o.block_tokens, block = kv_seq_table(kv, seq, layer)[pos / B];
    if (k)
        load_part(kv, layer, block, pos % B, false, k);
    if (v)
        load_part(kv, layer, block, pos % B, true, v);
}

bool kv_seq_block_key(const kv_cache_t *kv, int32_t seq, int32_t idx, int32_t *block, uint32_t *gen)
{
    if (!seq_ok(kv, seq) || idx < 0 || idx >= kv->seqs[seq].n_blocks)
        return false;
    const int32_t b = kv->seqs[seq].blocks[idx];
    /* not registered (yet, or beyond the prompt order): no key */
    if (!kv->pool[0].blocks[b].registered)
        return false;
    *block = b;
    *gen = kv->pool[0].blocks[b].gen;
    return true;
}

const int32_t *kv_seq_blocks(const kv_cache_t *kv, int32_t seq)
{
    return seq_ok(kv, seq) ? kv->seqs[seq].blocks : NULL;
}
