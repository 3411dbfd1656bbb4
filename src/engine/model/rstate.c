/* rstate.c - live recurrent states and their snapshots (see rstate.h).
 *
 * Snapshot slots are few (tens to hundreds: each is a whole sequence's
 * state), so lookups scan the slot array and "least recently used" is the
 * smallest use stamp; no lists to keep consistent.
 */
#include "engine/model/rstate.h"

#include <stdlib.h>
#include <string.h>

enum { SLOT_FREE = 0, SLOT_PENDING, SLOT_CACHED };

typedef struct {
    int state;
    int32_t seq;        /* PENDING: owner */
    int32_t pos;        /* position the state is at */
    int32_t block;      /* CACHED: key */
    uint32_t gen;
    uint64_t used;      /* use stamp (LRU) */
    float *data;        /* seq_floats, allocated on first use */
} rs_slot_t;

struct rs {
    int32_t n_seq, n_layer, max_pending;
    int64_t *layer_off;  /* [n_layer] offset in a sequence's state, -1: none */
    int64_t *layer_n;    /* [n_layer] floats */
    int64_t seq_floats;
    float *live;         /* [n_seq][seq_floats] */
    float **ck;          /* [n_seq] rollback checkpoints, allocated on first use */
    int32_t *ck_pos;     /* [n_seq] position of the checkpoint, -1: none */
    rs_slot_t *slots;
    int32_t n_slots;
    uint64_t clock, restored;
};

rs_t *rs_create(const rs_opts_t *o, lf_err_t *err)
{
    if (!o || o->n_seq <= 0 || o->n_layer <= 0 || !o->layer_floats || o->n_snapshots < 0)
        return lf_err_set(err, LF_ERR_INVALID, "invalid recurrent state sizes"), NULL;
    rs_t *rs = calloc(1, sizeof *rs);
    if (!rs)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    rs->n_seq = o->n_seq;
    rs->n_layer = o->n_layer;
    rs->max_pending = o->max_pending > 0 ? o->max_pending : 8;
    rs->layer_off = malloc((size_t)o->n_layer * sizeof *rs->layer_off);
    rs->layer_n = malloc((size_t)o->n_layer * sizeof *rs->layer_n);
    if (!rs->layer_off || !rs->layer_n)
        goto nomem;
    for (int32_t l = 0; l < o->n_layer; l++) {
        const int64_t n = o->layer_floats[l] > 0 ? o->layer_floats[l] : 0;
        rs->layer_off[l] = n ? rs->seq_floats : -1;
        rs->layer_n[l] = n;
        rs->seq_floats += n;
    }
    rs->live = calloc((size_t)o->n_seq * (size_t)(rs->seq_floats ? rs->seq_floats : 1), sizeof(float));
    rs->n_slots = o->n_snapshots;
    rs->slots = calloc((size_t)(o->n_snapshots ? o->n_snapshots : 1), sizeof *rs->slots);
    rs->ck = calloc((size_t)o->n_seq, sizeof *rs->ck);
    rs->ck_pos = malloc((size_t)o->n_seq * sizeof *rs->ck_pos);
    if (!rs->live || !rs->slots || !rs->ck || !rs->ck_pos)
        goto nomem;
    for (int32_t i = 0; i < o->n_seq; i++)
        rs->ck_pos[i] = -1;
    return rs;
nomem:
    lf_err_set(err, LF_ERR_NOMEM, "out of memory for the recurrent state (%d sequences x %lld floats)", o->n_seq,
               (long long)rs->seq_floats);
    rs_free(rs);
    return NULL;
}

void rs_free(rs_t *rs)
{
    if (!rs)
        return;
    for (int32_t i = 0; rs->slots && i < rs->n_slots; i++)
        free(rs->slots[i].data);
    free(rs->slots);
    for (int32_t i = 0; rs->ck && i < rs->n_seq; i++)
        free(rs->ck[i]);
    free(rs->ck);
    free(rs->ck_pos);
    free(rs->live);
    free(rs->layer_off);
    free(rs->layer_n);
    free(rs);
}

int64_t rs_seq_floats(const rs_t *rs) { return rs->seq_floats; }

uint64_t rs_live_bytes(const rs_t *rs)
{
    uint64_t n = (uint64_t)rs->n_seq;
    for (int32_t i = 0; i < rs->n_seq; i++)
        n += rs->ck[i] != NULL;
    return n * (uint64_t)rs->seq_floats * sizeof(float);
}

uint64_t rs_snap_bytes(const rs_t *rs)
{
    uint64_t n = 0;
    for (int32_t i = 0; i < rs->n_slots; i++)
        n += rs->slots[i].data ? (uint64_t)rs->seq_floats * sizeof(float) : 0;
    return n;
}

int32_t rs_n_snapshots(const rs_t *rs) { return rs->n_slots; }

int32_t rs_snapshots_cached(const rs_t *rs)
{
    int32_t n = 0;
    for (int32_t i = 0; i < rs->n_slots; i++)
        n += rs->slots[i].state == SLOT_CACHED;
    return n;
}

uint64_t rs_snapshots_restored(const rs_t *rs) { return rs->restored; }

static bool seq_ok(const rs_t *rs, int32_t seq) { return seq >= 0 && seq < rs->n_seq; }

float *rs_state(rs_t *rs, int32_t seq, int32_t layer)
{
    if (!seq_ok(rs, seq) || layer < 0 || layer >= rs->n_layer || rs->layer_off[layer] < 0)
        return NULL;
    return rs->live + (size_t)seq * (size_t)rs->seq_floats + (size_t)rs->layer_off[layer];
}

void rs_seq_reset(rs_t *rs, int32_t seq)
{
    if (!seq_ok(rs, seq))
        return;
    memset(rs->live + (size_t)seq * (size_t)rs->seq_floats, 0, (size_t)rs->seq_floats * sizeof(float));
    rs->ck_pos[seq] = -1;
    for (int32_t i = 0; i < rs->n_slots; i++)
        if (rs->slots[i].state == SLOT_PENDING && rs->slots[i].seq == seq)
            rs->slots[i].state = SLOT_FREE;
}

void rs_seq_copy(rs_t *rs, int32_t dst, int32_t src)
{
    if (!seq_ok(rs, dst) || !seq_ok(rs, src) || dst == src)
        return;
    memcpy(rs->live + (size_t)dst * (size_t)rs->seq_floats, rs->live + (size_t)src * (size_t)rs->seq_floats,
           (size_t)rs->seq_floats * sizeof(float));
    rs->ck_pos[dst] = -1;
}

bool rs_seq_checkpoint(rs_t *rs, int32_t seq, int32_t pos)
{
    if (!seq_ok(rs, seq) || pos < 0)
        return false;
    const size_t bytes = (size_t)(rs->seq_floats ? rs->seq_floats : 1) * sizeof(float);
    if (!rs->ck[seq] && !(rs->ck[seq] = malloc(bytes)))
        return false;
    memcpy(rs->ck[seq], rs->live + (size_t)seq * (size_t)rs->seq_floats, (size_t)rs->seq_floats * sizeof(float));
    rs->ck_pos[seq] = pos;
    return true;
}

int32_t rs_seq_checkpoint_pos(const rs_t *rs, int32_t seq)
{
    return seq_ok(rs, seq) ? rs->ck_pos[seq] : -1;
}

int32_t rs_seq_rollback(rs_t *rs, int32_t seq)
{
    if (!seq_ok(rs, seq) || rs->ck_pos[seq] < 0)
        return -1;
    const int32_t pos = rs->ck_pos[seq];
    memcpy(rs->live + (size_t)seq * (size_t)rs->seq_floats, rs->ck[seq], (size_t)rs->seq_floats * sizeof(float));
    /* snapshots taken past the checkpoint hold states that are gone */
    for (int32_t i = 0; i < rs->n_slots; i++)
        if (rs->slots[i].state == SLOT_PENDING && rs->slots[i].seq == seq && rs->slots[i].pos > pos)
            rs->slots[i].state = SLOT_FREE;
    return pos;
}

int32_t rs_seq_n_pending(const rs_t *rs, int32_t seq)
{
    int32_t n = 0;
    for (int32_t i = 0; i < rs->n_slots; i++)
        n += rs->slots[i].state == SLOT_PENDING && rs->slots[i].seq == seq;
    return n;
}

int32_t rs_seq_pending_pos(const rs_t *rs, int32_t seq, int32_t k)
{
    for (int32_t i = 0; i < rs->n_slots; i++)
        if (rs->slots[i].state == SLOT_PENDING && rs->slots[i].seq == seq && k-- == 0)
            return rs->slots[i].pos;
    return -1;
}

int32_t rs_snap_take(rs_t *rs, int32_t seq, int32_t pos)
{
    if (!seq_ok(rs, seq) || rs->n_slots == 0 || !rs->seq_floats || rs_seq_n_pending(rs, seq) >= rs->max_pending)
        return -1;
    int32_t best = -1;
    for (int32_t i = 0; i < rs->n_slots; i++) {
        const rs_slot_t *s = &rs->slots[i];
        if (s->state == SLOT_FREE) {
            /* an allocated free slot first, then a never used one */
            if (best < 0 || rs->slots[best].state != SLOT_FREE || (!rs->slots[best].data && s->data))
                best = i;
        } else if (s->state == SLOT_CACHED && (best < 0 || (rs->slots[best].state == SLOT_CACHED &&
                                                             s->used < rs->slots[best].used))) {
            best = i;
        }
    }
    if (best < 0)
        return -1;
    rs_slot_t *s = &rs->slots[best];
    if (!s->data && !(s->data = malloc((size_t)rs->seq_floats * sizeof(float))))
        return -1;
    s->state = SLOT_PENDING;
    s->seq = seq;
    s->pos = pos;
    s->used = ++rs->clock;
    return best;
}

float *rs_snap_state(rs_t *rs, int32_t slot, int32_t layer)
{
    if (slot < 0 || slot >= rs->n_slots || !rs->slots[slot].data || layer < 0 || layer >= rs->n_layer ||
        rs->layer_off[layer] < 0)
        return NULL;
    return rs->slots[slot].data + rs->layer_off[layer];
}

void rs_snap_register(rs_t *rs, int32_t seq, int32_t pos, int32_t block, uint32_t gen)
{
    int32_t mine = -1, same = -1;
    for (int32_t i = 0; i < rs->n_slots; i++) {
        const rs_slot_t *s = &rs->slots[i];
        if (s->state == SLOT_PENDING && s->seq == seq && s->pos == pos)
            mine = i;
        else if (s->state == SLOT_CACHED && s->block == block && s->gen == gen && s->pos == pos)
            same = i;
    }
    if (mine < 0)
        return;
    if (same >= 0) { /* already cached (the same chain): keep that one */
        rs->slots[mine].state = SLOT_FREE;
        rs->slots[same].used = ++rs->clock;
        return;
    }
    rs_slot_t *s = &rs->slots[mine];
    s->state = SLOT_CACHED;
    s->block = block;
    s->gen = gen;
    s->used = ++rs->clock;
}

int32_t rs_snap_find(const rs_t *rs, int32_t block, uint32_t gen, int32_t pos)
{
    for (int32_t i = 0; i < rs->n_slots; i++) {
        const rs_slot_t *s = &rs->slots[i];
        if (s->state == SLOT_CACHED && s->block == block && s->gen == gen && s->pos == pos)
            return i;
    }
    return -1;
}

void rs_snap_restore(rs_t *rs, int32_t slot, int32_t seq)
{
    if (!seq_ok(rs, seq) || slot < 0 || slot >= rs->n_slots || rs->slots[slot].state != SLOT_CACHED)
        return;
    memcpy(rs->live + (size_t)seq * (size_t)rs->seq_floats, rs->slots[slot].data,
           (size_t)rs->seq_floats * sizeof(float));
    rs->slots[slot].used = ++rs->clock;
    rs->restored++;
}
