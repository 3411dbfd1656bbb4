/* kv.c - block allocator, block tables and the prefix registry.
 *
 * Block states: FREE (never registered or evicted: on the free list), IN USE
 * (ref > 0), CACHED (ref == 0 but registered: on the LRU list, contents
 * kept). A registered block remembers its parent block and the parent's
 * generation; a block's generation changes whenever it is evicted, so a
 * child registered under the old contents can never match under the new.
 * Sequences release their blocks last-to-first, so on the LRU list a child
 * is always older than its parent and is evicted first.
 */
#include "engine/model/kv.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t ref;
    bool registered;
    uint32_t gen;          /* bumped on eviction */
    int32_t parent;        /* registered: parent block or -1 */
    uint32_t parent_gen;
    uint64_t hash;
    int32_t hnext;         /* hash chain */
    int32_t prev, next;    /* LRU list (CACHED) or free list (next only) */
} kv_block_t;

typedef struct {
    int32_t *blocks;       /* [max_seq_blocks] */
    int32_t n_blocks;      /* allocated */
    int32_t len;           /* computed positions */
    int32_t committed;     /* leading blocks registered or attached */
} kv_seq_t;

struct kv_cache {
    kv_opts_t o;
    int32_t max_seq_blocks;
    size_t block_elems;    /* n_layer * block_tokens * kv_dim */
    uint16_t *k, *v;
    kv_block_t *blocks;
    int32_t *tokens;       /* [n_blocks][block_tokens]: a registered block's tokens */
    int32_t free_head, n_free;
    int32_t lru_head, lru_tail, n_lru; /* head = least recently used */
    int32_t *buckets;
    uint32_t bucket_mask;
    kv_seq_t *seqs;
};

kv_cache_t *kv_create(const kv_opts_t *o, lf_err_t *err)
{
    if (!o || o->n_layer <= 0 || o->kv_dim <= 0 || o->block_tokens <= 0 || o->block_tokens > 4096 ||
        o->n_blocks <= 0 || o->n_seq <= 0 || o->max_seq_len <= 0) {
        lf_err_set(err, LF_ERR_INVALID, "invalid KV cache sizes");
        return NULL;
    }
    kv_cache_t *kv = calloc(1, sizeof *kv);
    if (!kv) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the KV cache");
        return NULL;
    }
    kv->o = *o;
    kv->max_seq_blocks = (o->max_seq_len + o->block_tokens - 1) / o->block_tokens;
    kv->block_elems = (size_t)o->n_layer * (size_t)o->block_tokens * (size_t)o->kv_dim;
    size_t n = (size_t)o->n_blocks;
    /* zeroed so that no read of a not yet written column is undefined */
    kv->k = calloc(n * kv->block_elems, sizeof(uint16_t));
    kv->v = calloc(n * kv->block_elems, sizeof(uint16_t));
    kv->blocks = calloc(n, sizeof *kv->blocks);
    kv->tokens = malloc(n * (size_t)o->block_tokens * sizeof(int32_t));
    uint32_t nb = 16;
    while (nb < 2 * n)
        nb *= 2;
    kv->bucket_mask = nb - 1;
    kv->buckets = malloc(nb * sizeof(int32_t));
    kv->seqs = calloc((size_t)o->n_seq, sizeof *kv->seqs);
    bool ok = kv->k && kv->v && kv->blocks && kv->tokens && kv->buckets && kv->seqs;
    for (int32_t s = 0; ok && s < o->n_seq; s++)
        ok = (kv->seqs[s].blocks = malloc((size_t)kv->max_seq_blocks * sizeof(int32_t))) != NULL;
    if (!ok) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for a KV cache of %d blocks (%.1f MiB)", o->n_blocks,
                   (double)n * (double)kv->block_elems * 4.0 / (1 << 20));
        kv_free(kv);
        return NULL;
    }
    memset(kv->buckets, 0xff, nb * sizeof(int32_t));
    for (int32_t b = 0; b < o->n_blocks; b++) {
        kv->blocks[b].next = b + 1 < o->n_blocks ? b + 1 : -1;
        kv->blocks[b].hnext = -1;
        kv->blocks[b].parent = -1;
    }
    kv->free_head = 0;
    kv->n_free = o->n_blocks;
    kv->lru_head = kv->lru_tail = -1;
    return kv;
}

void kv_free(kv_cache_t *kv)
{
    if (!kv)
        return;
    if (kv->seqs)
        for (int32_t s = 0; s < kv->o.n_seq; s++)
            free(kv->seqs[s].blocks);
    free(kv->seqs);
    free(kv->buckets);
    free(kv->tokens);
    free(kv->blocks);
    free(kv->k);
    free(kv->v);
    free(kv);
}

int32_t kv_block_tokens(const kv_cache_t *kv) { return kv->o.block_tokens; }
int32_t kv_n_blocks(const kv_cache_t *kv) { return kv->o.n_blocks; }
int32_t kv_blocks_available(const kv_cache_t *kv) { return kv->n_free + kv->n_lru; }
int32_t kv_blocks_in_use(const kv_cache_t *kv) { return kv->o.n_blocks - kv->n_free - kv->n_lru; }
uint64_t kv_bytes(const kv_cache_t *kv) { return 2ull * (uint64_t)kv->o.n_blocks * kv->block_elems * 2u; }

static bool seq_ok(const kv_cache_t *kv, int32_t seq) { return seq >= 0 && seq < kv->o.n_seq; }

int32_t kv_seq_len(const kv_cache_t *kv, int32_t seq) { return seq_ok(kv, seq) ? kv->seqs[seq].len : 0; }

/* ---- lists ---- */

static void lru_remove(kv_cache_t *kv, int32_t b)
{
    kv_block_t *k = &kv->blocks[b];
    if (k->prev >= 0)
        kv->blocks[k->prev].next = k->next;
    else
        kv->lru_head = k->next;
    if (k->next >= 0)
        kv->blocks[k->next].prev = k->prev;
    else
        kv->lru_tail = k->prev;
    kv->n_lru--;
}

static void lru_push(kv_cache_t *kv, int32_t b)
{
    kv_block_t *k = &kv->blocks[b];
    k->prev = kv->lru_tail;
    k->next = -1;
    if (kv->lru_tail >= 0)
        kv->blocks[kv->lru_tail].next = b;
    else
        kv->lru_head = b;
    kv->lru_tail = b;
    kv->n_lru++;
}

static void free_push(kv_cache_t *kv, int32_t b)
{
    kv->blocks[b].next = kv->free_head;
    kv->free_head = b;
    kv->n_free++;
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

static void unregister(kv_cache_t *kv, int32_t b)
{
    kv_block_t *k = &kv->blocks[b];
    int32_t *p = &kv->buckets[k->hash & kv->bucket_mask];
    while (*p != b)
        p = &kv->blocks[*p].hnext;
    *p = k->hnext;
    k->hnext = -1;
    k->registered = false;
    k->gen++;
}

static int32_t lookup(const kv_cache_t *kv, int32_t parent, uint32_t parent_gen, const int32_t *tokens)
{
    const int32_t B = kv->o.block_tokens;
    uint64_t h = chain_hash(parent, parent_gen, tokens, B);
    for (int32_t b = kv->buckets[h & kv->bucket_mask]; b >= 0; b = kv->blocks[b].hnext) {
        const kv_block_t *k = &kv->blocks[b];
        if (k->hash == h && k->parent == parent && k->parent_gen == parent_gen &&
            !memcmp(kv->tokens + (size_t)b * B, tokens, (size_t)B * sizeof(int32_t)))
            return b;
    }
    return -1;
}

/* Takes a block for writing: a never-used one first, else the least
 * recently used cached one (its registration is dropped). */
static int32_t take_block(kv_cache_t *kv)
{
    int32_t b;
    if (kv->free_head >= 0) {
        b = kv->free_head;
        kv->free_head = kv->blocks[b].next;
        kv->n_free--;
    } else {
        b = kv->lru_head;
        lru_remove(kv, b);
        unregister(kv, b);
    }
    kv->blocks[b].ref = 1;
    return b;
}

/* ---- sequences ---- */

lf_code_t kv_seq_reserve(kv_cache_t *kv, int32_t seq, int32_t n_tokens, lf_err_t *err)
{
    if (!seq_ok(kv, seq) || n_tokens < 0)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (n_tokens > kv->o.max_seq_len)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d positions exceed the context of %d", n_tokens,
                          kv->o.max_seq_len);
    kv_seq_t *s = &kv->seqs[seq];
    int32_t need = (n_tokens + kv->o.block_tokens - 1) / kv->o.block_tokens - s->n_blocks;
    if (need <= 0)
        return LF_OK;
    if (need > kv_blocks_available(kv))
        return lf_err_set(err, LF_ERR_NOMEM, "KV cache full: %d blocks needed, %d available", need,
                          kv_blocks_available(kv));
    while (need-- > 0)
        s->blocks[s->n_blocks++] = take_block(kv);
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

void kv_seq_release(kv_cache_t *kv, int32_t seq)
{
    if (!seq_ok(kv, seq))
        return;
    kv_seq_t *s = &kv->seqs[seq];
    for (int32_t i = s->n_blocks - 1; i >= 0; i--) {
        int32_t b = s->blocks[i];
        if (--kv->blocks[b].ref > 0)
            continue;
        if (kv->blocks[b].registered)
            lru_push(kv, b);
        else
            free_push(kv, b);
    }
    s->n_blocks = s->len = s->committed = 0;
}

int32_t kv_seq_attach_prefix(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t n)
{
    if (!seq_ok(kv, seq) || kv->seqs[seq].n_blocks || n <= 1)
        return 0;
    kv_seq_t *s = &kv->seqs[seq];
    const int32_t B = kv->o.block_tokens;
    int32_t max_blocks = (n - 1) / B;
    if (max_blocks > kv->max_seq_blocks)
        max_blocks = kv->max_seq_blocks;
    int32_t parent = -1;
    uint32_t parent_gen = 0;
    for (int32_t i = 0; i < max_blocks; i++) {
        int32_t b = lookup(kv, parent, parent_gen, tokens + (size_t)i * B);
        if (b < 0)
            break;
        if (kv->blocks[b].ref++ == 0)
            lru_remove(kv, b);
        s->blocks[s->n_blocks++] = b;
        parent = b;
        parent_gen = kv->blocks[b].gen;
    }
    s->committed = s->n_blocks;
    s->len = s->n_blocks * B;
    return s->len;
}

void kv_seq_commit(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t len)
{
    if (!seq_ok(kv, seq))
        return;
    kv_seq_t *s = &kv->seqs[seq];
    const int32_t B = kv->o.block_tokens;
    if (len > s->len)
        len = s->len;
    int32_t full = len / B;
    for (int32_t i = s->committed; i < full; i++) {
        int32_t b = s->blocks[i];
        kv_block_t *k = &kv->blocks[b];
        int32_t parent = i ? s->blocks[i - 1] : -1;
        uint32_t parent_gen = i ? kv->blocks[parent].gen : 0;
        const int32_t *t = tokens + (size_t)i * B;
        /* the same chain may have been registered by another sequence
         * meanwhile: then this copy simply stays private */
        if (k->registered || lookup(kv, parent, parent_gen, t) >= 0)
            continue;
        k->registered = true;
        k->parent = parent;
        k->parent_gen = parent_gen;
        k->hash = chain_hash(parent, parent_gen, t, B);
        memcpy(kv->tokens + (size_t)b * B, t, (size_t)B * sizeof(int32_t));
        int32_t *head = &kv->buckets[k->hash & kv->bucket_mask];
        k->hnext = *head;
        *head = b;
    }
    if (full > s->committed)
        s->committed = full;
}

static size_t layer_offset(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return (size_t)block * kv->block_elems + (size_t)layer * (size_t)kv->o.block_tokens * (size_t)kv->o.kv_dim;
}

const uint16_t *kv_block_k(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return kv->k + layer_offset(kv, block, layer);
}

const uint16_t *kv_block_v(const kv_cache_t *kv, int32_t block, int32_t layer)
{
    return kv->v + layer_offset(kv, block, layer);
}

void kv_store(kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, const uint16_t *k, const uint16_t *v)
{
    const int32_t B = kv->o.block_tokens;
    const size_t off = layer_offset(kv, kv->seqs[seq].blocks[pos / B], layer) + (size_t)(pos % B);
    uint16_t *kd = kv->k + off, *vd = kv->v + off;
    for (int64_t c = 0; c < kv->o.kv_dim; c++) {
        kd[(size_t)c * (size_t)B] = k[c];
        vd[(size_t)c * (size_t)B] = v[c];
    }
}

void kv_load(const kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, uint16_t *k, uint16_t *v)
{
    const int32_t B = kv->o.block_tokens;
    const size_t off = layer_offset(kv, kv->seqs[seq].blocks[pos / B], layer) + (size_t)(pos % B);
    for (int64_t c = 0; c < kv->o.kv_dim; c++) {
        if (k)
            k[c] = kv->k[off + (size_t)c * (size_t)B];
        if (v)
            v[c] = kv->v[off + (size_t)c * (size_t)B];
    }
}

const int32_t *kv_seq_blocks(const kv_cache_t *kv, int32_t seq)
{
    return seq_ok(kv, seq) ? kv->seqs[seq].blocks : NULL;
}
