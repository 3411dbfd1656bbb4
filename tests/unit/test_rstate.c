/* test_rstate.c - the recurrent state store (engine/model/rstate.h): live
 * states per sequence (zero at start, reset, copy), snapshot slots taken
 * while pending, registered under a KV block key, found only under the
 * exact key and position, restored bit for bit, evicted least recently
 * used first, the pending limit, sizes, and rollback checkpoints. */
#include "engine/model/rstate.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static const int64_t floats[4] = {6, 0, 10, 0}; /* layers 1 and 3 without state */

static rs_t *make(int32_t n_seq, int32_t n_snap, int32_t max_pending)
{
    rs_opts_t o = {.n_seq = n_seq, .n_layer = 4, .layer_floats = floats, .n_snapshots = n_snap,
                   .max_pending = max_pending};
    return rs_create(&o, NULL);
}

static void fill(rs_t *rs, int32_t seq, float v)
{
    for (int l = 0; l < 4; l++) {
        float *p = rs_state(rs, seq, l);
        for (int64_t i = 0; p && i < floats[l]; i++)
            p[i] = v + (float)i;
    }
}

static bool is(rs_t *rs, int32_t seq, float v)
{
    bool ok = true;
    for (int l = 0; l < 4; l++) {
        const float *p = rs_state(rs, seq, l);
        for (int64_t i = 0; p && i < floats[l]; i++)
            ok &= p[i] == (v == 0 ? 0.0f : v + (float)i);
    }
    return ok;
}

/* A snapshot of seq's live state into slot (as the forward pass writes it). */
static void snap_copy(rs_t *rs, int32_t seq, int32_t slot)
{
    for (int l = 0; l < 4; l++) {
        float *d = rs_snap_state(rs, slot, l);
        if (d)
            memcpy(d, rs_state(rs, seq, l), (size_t)floats[l] * sizeof(float));
    }
}

int main(void)
{
    tap_ok(make(0, 1, 0) == NULL, "no sequences: refused");
    rs_t *rs = make(3, 2, 2);
    if (!tap_ok(rs != NULL, "store of 3 sequences, 2 snapshot slots"))
        return tap_done();
    tap_ok(rs_seq_floats(rs) == 16 && rs_live_bytes(rs) == 3 * 16 * 4 && rs_snap_bytes(rs) == 0 &&
               rs_n_snapshots(rs) == 2,
           "16 floats per sequence, live memory at once, snapshot memory on first use");
    tap_ok(rs_state(rs, 0, 1) == NULL && rs_state(rs, 0, 0) && rs_state(rs, 3, 0) == NULL,
           "layers without state and sequences out of range have none");
    tap_ok(is(rs, 0, 0) && is(rs, 2, 0), "states start at zero");
    fill(rs, 0, 1);
    fill(rs, 1, 100);
    rs_seq_copy(rs, 2, 0);
    tap_ok(is(rs, 2, 1) && is(rs, 1, 100), "copy (n > 1 choices): the copy equals its source");
    rs_seq_reset(rs, 2);
    tap_ok(is(rs, 2, 0) && is(rs, 0, 1), "reset zeroes one sequence only");

    /* snapshots: pending, registered, found by (block, gen, pos) only */
    int32_t a = rs_snap_take(rs, 0, 16);
    snap_copy(rs, 0, a);
    tap_ok(a >= 0 && rs_seq_n_pending(rs, 0) == 1 && rs_seq_pending_pos(rs, 0, 0) == 16 &&
               rs_snap_find(rs, 7, 1, 16) < 0,
           "a taken snapshot is pending and not found");
    rs_snap_register(rs, 0, 16, 7, 1);
    const struct {
        int32_t block, pos;
        uint32_t gen;
        bool found;
    } keys[] = {{7, 16, 1, true}, {7, 16, 2, false}, {8, 16, 1, false}, {7, 32, 1, false}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        tap_ok((rs_snap_find(rs, keys[i].block, keys[i].gen, keys[i].pos) == a) == keys[i].found,
               "find block %d gen %u pos %d: %s", keys[i].block, keys[i].gen, keys[i].pos,
               keys[i].found ? "the snapshot" : "nothing");
    fill(rs, 0, 5);
    rs_snap_restore(rs, a, 2);
    tap_ok(is(rs, 2, 1) && is(rs, 0, 5) && rs_snapshots_restored(rs) == 1 && rs_snapshots_cached(rs) == 1,
           "restore gives the state at the snapshot, bit for bit");

    /* no free slot: a take evicts the cached snapshot; the pending limit;
     * reset drops pending snapshots */
    int32_t b = rs_snap_take(rs, 1, 32), c = rs_snap_take(rs, 1, 48);
    tap_ok(b >= 0 && b != a && c == a && rs_snap_find(rs, 7, 1, 16) < 0 && rs_seq_n_pending(rs, 1) == 2,
           "the free slot first, then the cached snapshot is evicted for a pending one");
    tap_ok(rs_snap_take(rs, 1, 64) < 0 && rs_snap_take(rs, 0, 64) < 0,
           "every slot pending (and seq 1 at its limit of 2): nothing taken");
    rs_seq_reset(rs, 1);
    tap_ok(rs_seq_n_pending(rs, 1) == 0 && rs_snapshots_cached(rs) == 0, "reset drops the sequence's pending snapshots");

    /* LRU among registered snapshots */
    int32_t x = rs_snap_take(rs, 0, 16);
    snap_copy(rs, 0, x);
    rs_snap_register(rs, 0, 16, 7, 1);
    int32_t y = rs_snap_take(rs, 1, 32);
    rs_snap_register(rs, 1, 32, 9, 0);
    rs_snap_restore(rs, x, 2); /* x is now the most recently used */
    int32_t z = rs_snap_take(rs, 2, 64);
    tap_ok(z == y && rs_snap_find(rs, 9, 0, 32) < 0 && rs_snap_find(rs, 7, 1, 16) == x,
           "the least recently used snapshot is evicted first");
    rs_free(rs);

    /* the same key registered twice: one kept */
    rs = make(2, 3, 4);
    x = rs_snap_take(rs, 0, 16);
    rs_snap_register(rs, 0, 16, 5, 0);
    y = rs_snap_take(rs, 1, 16);
    rs_snap_register(rs, 1, 16, 5, 0);
    tap_ok(rs_snapshots_cached(rs) == 1 && rs_snap_find(rs, 5, 0, 16) == x && rs_seq_n_pending(rs, 1) == 0,
           "a second snapshot of one key is dropped");
    rs_free(rs);

    rs = make(2, 0, 0);
    tap_ok(rs && rs_snap_take(rs, 0, 16) < 0 && rs_snapshots_cached(rs) == 0, "no slots: no snapshots");
    rs_free(rs);

    /* rollback checkpoints (speculative decoding) */
    rs = make(2, 2, 4);
    fill(rs, 0, 5);
    tap_ok(rs_seq_checkpoint_pos(rs, 0) < 0 && rs_seq_rollback(rs, 0) < 0 && is(rs, 0, 5),
           "no checkpoint: nothing to roll back to, the state untouched");
    tap_ok(rs_seq_checkpoint(rs, 0, 40) && rs_seq_checkpoint_pos(rs, 0) == 40 && rs_live_bytes(rs) == 3 * 16 * 4,
           "a checkpoint at 40, its memory counted with the live states");
    fill(rs, 0, 9);
    const int32_t late = rs_snap_take(rs, 0, 48), early = rs_snap_take(rs, 0, 32);
    tap_ok(rs_seq_rollback(rs, 0) == 40 && is(rs, 0, 5) && rs_seq_n_pending(rs, 0) == 1 &&
               rs_seq_pending_pos(rs, 0, 0) == 32 && late >= 0 && early >= 0,
           "rollback: the state at the checkpoint, bit for bit; a snapshot taken past it is dropped");
    fill(rs, 0, 11);
    tap_ok(rs_seq_rollback(rs, 0) == 40 && is(rs, 0, 5), "the checkpoint stays: a second rollback restores it again");
    tap_ok(rs_seq_checkpoint_pos(rs, 1) < 0 && !rs_seq_checkpoint(rs, 5, 0) && !rs_seq_checkpoint(rs, 1, -1),
           "checkpoints are per sequence; out of range refused");
    rs_seq_copy(rs, 1, 0);
    tap_ok(rs_seq_checkpoint_pos(rs, 1) < 0, "a copied sequence has no checkpoint");
    rs_seq_reset(rs, 0);
    tap_ok(rs_seq_checkpoint_pos(rs, 0) < 0 && rs_seq_rollback(rs, 0) < 0 && is(rs, 0, 0),
           "reset forgets the checkpoint");
    rs_free(rs);
    rs_free(NULL);
    return tap_done();
}
