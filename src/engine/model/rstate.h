/* rstate.h - per-sequence recurrent state of hybrid models, and snapshots
 * of it for prefix caching.
 *
 * The recurrent layers of a hybrid model (Gated DeltaNet, short
 * convolutions: deltanet.h, shortconv.h) keep, per sequence, a fixed-size
 * state instead of a KV cache: it holds everything the sequence has seen,
 * so it has no per-position history and cannot be rolled back to an
 * earlier position. The store holds one live state per sequence id (zero
 * at sequence start), `layer_floats[l]` floats for layer l, allocated
 * once.
 *
 * Prefix caching with state: a state can only be reused at the exact
 * position it was taken. Snapshots are copies of a sequence's whole state
 * (every recurrent layer) at a block boundary P of the KV cache, taken
 * while the forward pass crosses P (pending: owned by the sequence), then
 * registered under the key of the KV block that ends at P (kv.h,
 * kv_seq_block_key: a registered block stands for its whole token chain,
 * compared token by token). A later sequence whose prompt attaches that
 * chain restores the snapshot into its live state and continues at P: the
 * same state the tokens before P produced, bit for bit. Snapshot memory is
 * bounded by a number of slots; registered snapshots no sequence is
 * taking are evicted least recently used first, as KV blocks are. A
 * snapshot whose block was evicted (its generation changed) is never found
 * again and is reused first.
 *
 * Rollback checkpoints (speculative decoding): one per sequence, a copy
 * of its live state at a position, taken before a step that may be partly
 * undone; rolling back restores it, and the caller evaluates the tokens
 * from that position again. Allocated on a sequence's first checkpoint and
 * counted in rs_live_bytes.
 *
 * Not thread-safe: owned by the forward context (the scheduler thread);
 * the compute threads only write live states and pending snapshots they
 * were handed during a step.
 */
#ifndef LF_RSTATE_H
#define LF_RSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

typedef struct {
    int32_t n_seq;               /* live states */
    int32_t n_layer;
    const int64_t *layer_floats; /* [n_layer] floats of state per sequence (0: none; copied) */
    int32_t n_snapshots;         /* snapshot slots (0: no prefix caching of state) */
    int32_t max_pending;         /* pending snapshots one sequence may hold (<= 0: 8) */
} rs_opts_t;

typedef struct rs rs_t;

/* The tokens of one sequence in a batch, as the recurrent layers see them
 * (forward.c builds these once per batch). Snapshot i is taken after the
 * first snap_end[i] of the group's tokens, into slot snap_slot[i]. */
enum { RS_MAX_SNAP = 4 };
typedef struct {
    int32_t seq;
    int32_t n;                     /* tokens of seq in the batch */
    const int32_t *rows;           /* [n] their batch rows, in position order */
    int32_t n_snap;
    int32_t snap_end[RS_MAX_SNAP];
    int32_t snap_slot[RS_MAX_SNAP];
} rs_group_t;

/* NULL + err (LF_ERR_INVALID, LF_ERR_NOMEM). Snapshot memory is allocated
 * when a slot is first used. */
rs_t *rs_create(const rs_opts_t *o, lf_err_t *err);
void rs_free(rs_t *rs); /* accepts NULL */

/* Floats of one sequence's state (all layers). */
int64_t rs_seq_floats(const rs_t *rs);
/* Bytes of the live states (with their rollback checkpoints), and of the
 * snapshot slots allocated so far. */
uint64_t rs_live_bytes(const rs_t *rs);
uint64_t rs_snap_bytes(const rs_t *rs);
int32_t rs_n_snapshots(const rs_t *rs);
int32_t rs_snapshots_cached(const rs_t *rs); /* registered */
uint64_t rs_snapshots_restored(const rs_t *rs); /* restores so far */

/* Live state of seq for layer (NULL if the layer has none). */
float *rs_state(rs_t *rs, int32_t seq, int32_t layer);
/* Zeroes seq's state and drops its pending snapshots. */
void rs_seq_reset(rs_t *rs, int32_t seq);
/* dst's state = src's (n > 1 choices sharing a prompt); dst has no
 * checkpoint afterwards. */
void rs_seq_copy(rs_t *rs, int32_t dst, int32_t src);

/* Keeps a copy of seq's live state as its checkpoint at position pos
 * (replacing the previous one). false: out of memory or bad arguments. */
bool rs_seq_checkpoint(rs_t *rs, int32_t seq, int32_t pos);
/* The position of seq's checkpoint, -1 if it has none. */
int32_t rs_seq_checkpoint_pos(const rs_t *rs, int32_t seq);
/* seq's live state = its checkpoint (kept, so it can be restored again);
 * pending snapshots past it are dropped. Returns the checkpoint's
 * position, -1 if there is none. rs_seq_reset forgets the checkpoint. */
int32_t rs_seq_rollback(rs_t *rs, int32_t seq);

/* A slot for a snapshot of seq at position pos, pending (owned by seq):
 * a free slot, else the least recently used registered one. -1 when none
 * can be taken (no slots, seq holds max_pending, or out of memory). */
int32_t rs_snap_take(rs_t *rs, int32_t seq, int32_t pos);
/* Slot `slot`'s part for layer (NULL if the layer has none). */
float *rs_snap_state(rs_t *rs, int32_t slot, int32_t layer);
/* Pending snapshots of seq: their number, and the position of the i-th. */
int32_t rs_seq_n_pending(const rs_t *rs, int32_t seq);
int32_t rs_seq_pending_pos(const rs_t *rs, int32_t seq, int32_t i);
/* Registers seq's pending snapshot at pos under (block, gen). */
void rs_snap_register(rs_t *rs, int32_t seq, int32_t pos, int32_t block, uint32_t gen);
/* The registered snapshot at pos keyed (block, gen), or -1. */
int32_t rs_snap_find(const rs_t *rs, int32_t block, uint32_t gen, int32_t pos);
/* seq's live state = snapshot slot's (marks it recently used). */
void rs_snap_restore(rs_t *rs, int32_t slot, int32_t seq);

#endif
