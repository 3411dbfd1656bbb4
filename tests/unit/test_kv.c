/* test_kv.c - paged KV allocator: block tables, budget, prefix reuse, LRU. */
#include "engine/model/kv.h"
#include "tap.h"

#include <string.h>

static kv_cache_t *make(int32_t n_blocks, int32_t n_seq)
{
    kv_opts_t o = {.n_layer = 2, .kv_dim = 8, .block_tokens = 4, .n_blocks = n_blocks, .n_seq = n_seq,
                   .max_seq_len = 64};
    return kv_create(&o, NULL);
}

/* Writes a recognisable value into every position of seq in [a, b): K
 * element c of position p is tag + p + c, V element c is tag + p + 2c. */
static void fill(kv_cache_t *kv, int32_t seq, int32_t a, int32_t b, uint16_t tag)
{
    uint16_t k[8], v[8];
    for (int32_t p = a; p < b; p++)
        for (int l = 0; l < 2; l++) {
            for (int c = 0; c < 8; c++) {
                k[c] = (uint16_t)(tag + p + c + 1000 * l);
                v[c] = (uint16_t)(tag + p + 2 * c + 1000 * l);
            }
            kv_store(kv, l, seq, p, k, v);
        }
    kv_seq_set_len(kv, seq, b);
}

/* K element c of position pos (layer l), as read back. */
static uint16_t k_at(const kv_cache_t *kv, int l, int32_t seq, int32_t pos, int c)
{
    uint16_t k[8];
    kv_load(kv, l, seq, pos, k, NULL);
    return k[c];
}

static uint16_t v_at(const kv_cache_t *kv, int l, int32_t seq, int32_t pos, int c)
{
    uint16_t v[8];
    kv_load(kv, l, seq, pos, NULL, v);
    return v[c];
}

/* The transposed block layout of kv.h: element c of the position in
 * column r of block b at [c * block_tokens + r]. */
static int layout_ok(const kv_cache_t *kv, int32_t seq, int32_t pos)
{
    const int32_t bt = kv_block_tokens(kv), blk = kv_seq_blocks(kv, seq)[pos / bt];
    int ok = 1;
    for (int l = 0; l < 2; l++)
        for (int c = 0; c < 8; c++) {
            ok &= kv_block_k(kv, blk, l)[c * bt + pos % bt] == k_at(kv, l, seq, pos, c);
            ok &= kv_block_v(kv, blk, l)[c * bt + pos % bt] == v_at(kv, l, seq, pos, c);
        }
    return ok;
}

static void test_basics(void)
{
    kv_cache_t *kv = make(8, 2);
    lf_err_t err;
    tap_ok(kv && kv_blocks_available(kv) == 8 && kv_blocks_in_use(kv) == 0, "new cache: all blocks available");
    tap_ok(kv_seq_reserve(kv, 0, 10, &err) == LF_OK && kv_blocks_in_use(kv) == 3, "10 positions take 3 blocks");
    tap_ok(kv_seq_reserve(kv, 0, 12, &err) == LF_OK && kv_blocks_in_use(kv) == 3, "growing within a block is free");
    fill(kv, 0, 0, 12, 100);
    tap_ok(kv_seq_len(kv, 0) == 12, "length recorded");
    tap_ok(k_at(kv, 1, 0, 5, 3) == 1108 && v_at(kv, 0, 0, 11, 7) == 125 && k_at(kv, 0, 0, 0, 0) == 100,
           "positions hold what was written");
    tap_ok(layout_ok(kv, 0, 0) && layout_ok(kv, 0, 5) && layout_ok(kv, 0, 11), "blocks are stored transposed");
    tap_ok(kv_block_k(kv, 0, 0) != kv_block_k(kv, 0, 1) && kv_block_k(kv, 0, 0) != kv_block_v(kv, 0, 0),
           "layers and K/V have separate memory");
    tap_ok(kv_seq_reserve(kv, 1, 24, &err) == LF_ERR_NOMEM && kv_blocks_in_use(kv) == 3,
           "over budget: LF_ERR_NOMEM and nothing taken");
    tap_ok(kv_seq_reserve(kv, 1, 65, &err) == LF_ERR_CONTEXT, "beyond the context: LF_ERR_CONTEXT");
    tap_ok(kv_seq_reserve(kv, 2, 4, &err) == LF_ERR_INVALID, "bad sequence id");
    tap_ok(kv_seq_reserve(kv, 1, 20, &err) == LF_OK && kv_blocks_available(kv) == 0, "fill the budget exactly");
    kv_seq_release(kv, 0);
    tap_ok(kv_blocks_available(kv) == 3 && kv_seq_len(kv, 0) == 0, "release gives blocks back");
    kv_seq_release(kv, 1);
    tap_ok(kv_blocks_available(kv) == 8 && kv_blocks_in_use(kv) == 0, "all back");
    tap_ok(kv_bytes(kv) == 2ull * 8 * 2 * 4 * 8 * 2, "bytes = K+V of every block");
    kv_free(kv);
    kv_free(NULL);
    tap_ok(make(0, 1) == NULL, "zero blocks rejected");
}

static void test_prefix(void)
{
    kv_cache_t *kv = make(16, 3);
    int32_t toks[20];
    for (int i = 0; i < 20; i++)
        toks[i] = 1000 + i;
    kv_seq_reserve(kv, 0, 14, NULL);
    fill(kv, 0, 0, 14, 7);
    kv_seq_commit(kv, 0, toks, 14);
    /* same 14-token prompt: 3 full blocks are registered, reuse leaves one
     * token to compute, so 12 positions (3 blocks) */
    int32_t got = kv_seq_attach_prefix(kv, 1, toks, 14);
    tap_ok(got == 12 && kv_seq_len(kv, 1) == 12, "identical prompt reuses 3 full blocks (%d)", got);
    tap_ok(kv_seq_blocks(kv, 1)[2] == kv_seq_blocks(kv, 0)[2] && k_at(kv, 0, 1, 9, 2) == 18,
           "reused positions are the same blocks");
    tap_ok(kv_blocks_in_use(kv) == 4, "shared blocks are counted once");
    /* exactly 12 tokens: at least one must be computed -> 2 blocks */
    kv_seq_release(kv, 1);
    tap_ok(kv_seq_attach_prefix(kv, 1, toks, 12) == 8, "a prompt of exactly 3 blocks reuses 2");
    kv_seq_release(kv, 1);
    /* diverging in block 2 */
    int32_t other[20];
    memcpy(other, toks, sizeof other);
    other[9] = 5;
    tap_ok(kv_seq_attach_prefix(kv, 1, other, 20) == 8, "divergence inside block 2 reuses blocks 0-1");
    kv_seq_release(kv, 1);
    other[1] = 5;
    tap_ok(kv_seq_attach_prefix(kv, 1, other, 20) == 0, "divergence in block 0 reuses nothing");
    kv_seq_release(kv, 1);
    /* same tokens at a different place in the chain must not match */
    int32_t shifted[20];
    for (int i = 0; i < 20; i++)
        shifted[i] = toks[(i + 4) % 20];
    tap_ok(kv_seq_attach_prefix(kv, 1, shifted, 20) == 0, "a block matches only under its own parent");
    kv_seq_release(kv, 1);
    /* the owner goes away: its registered blocks stay cached */
    kv_seq_release(kv, 0);
    tap_ok(kv_blocks_in_use(kv) == 0 && kv_blocks_available(kv) == 16, "cached blocks count as available");
    got = kv_seq_attach_prefix(kv, 2, toks, 20);
    tap_ok(got == 12 && k_at(kv, 1, 2, 10, 0) == 1017, "cached blocks are reused after release with contents");
    kv_seq_release(kv, 2);
    kv_free(kv);
}

static void test_eviction(void)
{
    kv_cache_t *kv = make(6, 2);
    int32_t a[12], b[24];
    for (int i = 0; i < 12; i++)
        a[i] = i;
    for (int i = 0; i < 24; i++)
        b[i] = 500 + i;
    kv_seq_reserve(kv, 0, 12, NULL);
    fill(kv, 0, 0, 12, 1);
    kv_seq_commit(kv, 0, a, 12);
    kv_seq_release(kv, 0); /* 3 cached blocks */
    /* a 20-token sequence needs 5 blocks: 3 free + 2 evicted (the children
     * of chain `a` go first, so its first block survives) */
    tap_ok(kv_seq_reserve(kv, 1, 20, NULL) == LF_OK, "reservation evicts cached blocks when needed");
    fill(kv, 1, 0, 20, 9);
    kv_seq_commit(kv, 1, b, 20);
    int32_t got = kv_seq_attach_prefix(kv, 0, a, 12);
    tap_ok(got == 4, "the parent outlives its evicted children (reused %d)", got);
    kv_seq_release(kv, 0);
    kv_seq_release(kv, 1);
    /* after eviction and reuse of a block, an old child must not match */
    kv_seq_reserve(kv, 0, 24, NULL);
    fill(kv, 0, 0, 24, 3);
    kv_seq_release(kv, 0);
    tap_ok(kv_seq_attach_prefix(kv, 1, a, 12) == 0, "evicted chains no longer match");
    kv_seq_release(kv, 1);
    kv_free(kv);
}

/* ---- sliding-window layers ---- */

/* Layers 0 and 2 full, 1 and 3 with a window of 6 positions; blocks of 4;
 * max_batch 4: a sequence holds at most (6 - 1 + 4 + 3) / 4 + 3 = 6 window
 * blocks. */
static const bool swa4[4] = {false, true, false, true};

static kv_cache_t *make_swa(int32_t n_blocks, int32_t n_blocks_swa, int32_t n_seq)
{
    kv_opts_t o = {.n_layer = 4, .kv_dim = 8, .block_tokens = 4, .n_blocks = n_blocks, .n_seq = n_seq,
                   .max_seq_len = 64, .layer_swa = swa4, .n_swa = 6, .n_blocks_swa = n_blocks_swa, .max_batch = 4};
    return kv_create(&o, NULL);
}

/* Appends positions [a, b) to seq in steps of at most 4 (as the forward
 * pass does: reserve, write every layer, set the length), committing the
 * prompt's full blocks after each step when toks is given. */
static lf_code_t grow(kv_cache_t *kv, int32_t seq, int32_t a, int32_t b, uint16_t tag, const int32_t *toks)
{
    uint16_t k[8], v[8];
    for (int32_t p0 = a; p0 < b; p0 += 4) {
        const int32_t p1 = p0 + 4 < b ? p0 + 4 : b;
        lf_code_t rc = kv_seq_reserve(kv, seq, p1, NULL);
        if (rc != LF_OK)
            return rc;
        for (int32_t p = p0; p < p1; p++)
            for (int l = 0; l < 4; l++) {
                for (int c = 0; c < 8; c++)
                    k[c] = v[c] = (uint16_t)(tag + p + c + 1000 * l);
                kv_store(kv, l, seq, p, k, v);
            }
        kv_seq_set_len(kv, seq, p1);
        if (toks)
            kv_seq_commit(kv, seq, toks, p1);
    }
    return LF_OK;
}

/* Window blocks of seq held (table entries >= 0). */
static int held_window(const kv_cache_t *kv, int32_t seq)
{
    const int32_t *t = kv_seq_table(kv, seq, 1);
    int n = 0;
    for (int32_t i = 0; i < (kv_seq_len(kv, seq) + 3) / 4; i++)
        n += t[i] >= 0;
    return n;
}

static void test_window_pool(void)
{
    kv_opts_t o = {.n_layer = 4, .kv_dim = 8, .block_tokens = 4, .n_blocks = 40, .n_seq = 2, .max_seq_len = 64,
                   .layer_swa = swa4, .n_swa = 6, .max_batch = 4};
    tap_ok(kv_swa_blocks_per_seq(&o) == 6, "window blocks per sequence: (window - 1 + batch) / block + 3");
    o.layer_swa = NULL;
    tap_ok(kv_swa_blocks_per_seq(&o) == 0, "no window layers: no window pool");
    kv_cache_t *kv = make_swa(40, 0, 2);
    tap_ok(kv && kv_n_blocks_swa(kv) == 12, "default window pool: every sequence's window (%d blocks)",
           kv ? kv_n_blocks_swa(kv) : -1);
    tap_ok(kv_layer_window(kv, 1) == 6 && kv_layer_window(kv, 2) == 0, "layer windows");
    /* per block: 2 layers x 4 positions x 8 values, K and V, F16 */
    tap_ok(kv_bytes(kv) == 4ull * 2 * 4 * 8 * (40 + 12), "bytes: main pool of 2 layers + window pool of 2 layers");
    tap_ok(grow(kv, 0, 0, 40, 100, NULL) == LF_OK, "a 40-position sequence fits");
    tap_ok(kv_blocks_in_use(kv) == 10 && held_window(kv, 0) <= 3 && kv_blocks_in_use_swa(kv) == held_window(kv, 0),
           "the main pool holds 10 blocks, the window layers only %d", held_window(kv, 0));
    tap_ok(kv_bytes_in_use(kv) == 4ull * 2 * 4 * 8 * (uint64_t)(10 + held_window(kv, 0)), "bytes in use");
    /* what the next position (40) attends: 35..40; all still readable */
    int ok = 1;
    for (int32_t p = 35; p < 40; p++)
        ok &= k_at(kv, 1, 0, p, 3) == (uint16_t)(100 + p + 3 + 1000) && k_at(kv, 3, 0, p, 0) == (uint16_t)(100 + p + 3000);
    tap_ok(ok, "the window's positions keep their values in the window layers");
    tap_ok(k_at(kv, 2, 0, 1, 1) == (uint16_t)(100 + 1 + 1 + 2000), "full layers keep every position");
    const int32_t *t = kv_seq_table(kv, 0, 3);
    /* given back at the last reservation (length 36): blocks wholly before
     * 36 - 6 + 1 = 31, i.e. 0..6 */
    tap_ok(t[0] == -1 && t[6] == -1 && t[7] >= 0 && t[9] >= 0 && kv_seq_table(kv, 0, 0)[0] >= 0,
           "window tables: blocks behind the window given back (-1)");
    /* a second sequence in the same pool, then everything back */
    tap_ok(grow(kv, 1, 0, 64, 200, NULL) == LF_OK && kv_blocks_in_use_swa(kv) <= 6, "two long sequences share the pool");
    kv_seq_release(kv, 0);
    kv_seq_release(kv, 1);
    tap_ok(kv_blocks_in_use(kv) == 0 && kv_blocks_in_use_swa(kv) == 0 && kv_bytes_in_use(kv) == 0, "all back");
    kv_free(kv);

    /* a window pool too small for a second sequence: NOMEM, nothing taken */
    kv = make_swa(40, 4, 2);
    tap_ok(grow(kv, 0, 0, 8, 1, NULL) == LF_OK && kv_blocks_in_use_swa(kv) == 2, "first sequence: 2 window blocks");
    tap_ok(kv_fits_new(kv, 7) && !kv_fits_new(kv, 8), "fits_new counts the window pool (2 free blocks)");
    lf_err_t err;
    const int32_t before = kv_blocks_in_use(kv);
    tap_ok(kv_seq_reserve(kv, 1, 12, &err) == LF_ERR_NOMEM && kv_blocks_in_use(kv) == before &&
               kv_seq_len(kv, 1) == 0,
           "window pool full: LF_ERR_NOMEM, nothing taken (%s)", err.msg);
    kv_free(kv);
}

static void test_window_prefix(void)
{
    kv_cache_t *kv = make_swa(40, 0, 3);
    int32_t toks[40];
    for (int i = 0; i < 40; i++)
        toks[i] = 7000 + i;
    /* committed step by step (the scheduler commits after every prompt
     * chunk), so every window block is registered before it is given back */
    grow(kv, 0, 0, 26, 50, toks);
    int32_t got = kv_seq_attach_prefix(kv, 1, toks, 40);
    tap_ok(got == 24, "window layers: the whole committed prefix is reused (%d)", got);
    tap_ok(kv_seq_table(kv, 1, 1)[3] == -1 && kv_seq_table(kv, 1, 1)[4] == kv_seq_table(kv, 0, 1)[4] &&
               kv_seq_table(kv, 1, 1)[5] == kv_seq_table(kv, 0, 1)[5],
           "the attached window is positions 19..23: blocks 4 and 5, shared");
    tap_ok(k_at(kv, 3, 1, 21, 2) == (uint16_t)(50 + 21 + 2 + 3000) && k_at(kv, 0, 1, 2, 0) == (uint16_t)(50 + 2),
           "attached positions hold the owner's values");
    kv_seq_release(kv, 1);
    /* the owner goes on and gives its early window blocks back: they stay
     * cached (registered), so a prefix ending earlier is still reusable */
    grow(kv, 0, 26, 40, 50, toks);
    got = kv_seq_attach_prefix(kv, 1, toks, 13);
    tap_ok(got == 12, "a shorter prefix whose window blocks were given back but cached (%d)", got);
    kv_seq_release(kv, 1);
    kv_seq_release(kv, 0);
    /* committed only at the end: the early window blocks were never
     * registered, so only prefixes whose window was still held match */
    int32_t other[40];
    for (int i = 0; i < 40; i++)
        other[i] = 9000 + i;
    grow(kv, 2, 0, 40, 60, NULL);
    kv_seq_commit(kv, 2, other, 40);
    tap_ok(kv_seq_attach_prefix(kv, 1, other, 40) == 36, "commit at the end: the last window is reusable");
    kv_seq_release(kv, 1);
    tap_ok(kv_seq_attach_prefix(kv, 1, other, 20) == 0,
           "a prefix whose window was given back before the commit is recomputed (0 reused)");
    kv_seq_release(kv, 1);
    kv_seq_release(kv, 2);
    kv_free(kv);
}

/* Two sequences compute the same prompt at once: the one committing second
 * takes the first one's registered blocks (its copies are freed), so the
 * chain continues from them; and layers of different widths, or none. */
static void test_dedupe_and_widths(void)
{
    kv_cache_t *kv = make(16, 3);
    int32_t toks[20];
    for (int i = 0; i < 20; i++)
        toks[i] = 2000 + i;
    kv_seq_reserve(kv, 0, 14, NULL);
    kv_seq_reserve(kv, 1, 14, NULL);
    fill(kv, 0, 0, 14, 7);
    fill(kv, 1, 0, 14, 7);
    tap_ok(kv_blocks_in_use(kv) == 8, "two sequences, the same prompt computed twice: 8 blocks");
    kv_seq_commit(kv, 0, toks, 14);
    kv_seq_commit(kv, 1, toks, 14);
    int32_t b0, b1;
    uint32_t g0, g1;
    tap_ok(kv_seq_blocks(kv, 1)[2] == kv_seq_blocks(kv, 0)[2] && kv_blocks_in_use(kv) == 5 &&
               k_at(kv, 1, 1, 9, 2) == 1018 && kv_seq_block_key(kv, 1, 2, &b1, &g1) &&
               kv_seq_block_key(kv, 0, 2, &b0, &g0) && b0 == b1 && g0 == g1 && !kv_seq_block_key(kv, 1, 3, &b1, &g1),
           "the second commit takes the registered blocks (5 in use), keyed alike; the partial block has no key");
    kv_seq_release(kv, 0);
    kv_seq_release(kv, 1);
    tap_ok(kv_seq_attach_prefix(kv, 2, toks, 20) == 12, "the chain is reusable");
    kv_free(kv);
    /* per-layer widths: layer 1 without a cache of its own */
    const int32_t dims[3] = {8, 0, 4};
    kv_opts_t o = {.n_layer = 3, .kv_dim = 8, .layer_kv_dim = dims, .block_tokens = 4, .n_blocks = 4, .n_seq = 1,
                   .max_seq_len = 16};
    kv = kv_create(&o, NULL);
    uint16_t k[8] = {1, 2, 3, 4, 5, 6, 7, 8}, v[8] = {9, 9, 9, 9, 9, 9, 9, 9}, kb[8] = {0}, vb[8] = {0};
    bool ok = kv && kv_seq_reserve(kv, 0, 3, NULL) == LF_OK;
    if (ok) {
        kv_store(kv, 2, 0, 1, k, v);
        kv_load(kv, 2, 0, 1, kb, vb);
    }
    tap_ok(ok && kv_bytes(kv) == 2ull * 4 * 4 * (8 + 4) * 2 && kv_layer_dim(kv, 1) == 0 && kv_layer_dim(kv, 2) == 4 &&
               kb[3] == 4 && vb[3] == 9 && kb[4] == 0,
           "layers of widths 8, 0 and 4: only their K/V are stored");
    kv_free(kv);
}

int main(void)
{
    test_basics();
    test_dedupe_and_widths();
    test_prefix();
    test_eviction();
    test_window_pool();
    test_window_prefix();
    return tap_done();
}
