/* model_hparams.h - reading an architecture's hyper-parameters from GGUF
 * metadata (internal to model.c).
 *
 * Reads <arch>.* keys as llama.cpp's loader does for that architecture
 * (defaults included), validates them (an inconsistent or unsupported
 * value is an error naming the file and the key, never an assert), and
 * decides the per-layer attention kind: which layers have the sliding
 * window and which skip rope; for hybrid families which layers are
 * recurrent, and the per-layer head counts, sizes and FFN widths.
 */
#ifndef LF_MODEL_HPARAMS_H
#define LF_MODEL_HPARAMS_H

#include <stdbool.h>

#include "common/status.h"
#include "engine/gguf/gguf.h"
#include "engine/model/arch.h"
#include "engine/model/model.h"

/* Per-layer kinds and shapes, malloc'd arrays of n_layer_all (caller
 * frees with model_layer_kinds_free). */
typedef struct {
    bool *swa;         /* sliding-window layer */
    bool *rope;        /* rope applied */
    uint8_t *kind;     /* model_layer_kind_t */
    int32_t *n_head_kv;
    int32_t *head_dim; /* attention layers */
    int32_t *n_rot;
    int32_t *n_ff;
    int32_t *kv_layer; /* the layer whose cache it attends (-1: not attention) */
} model_layer_kinds_t;

void model_layer_kinds_free(model_layer_kinds_t *k);

/* Fills hp (except n_vocab and n_params, which come from the tensors) and
 * *arch; kinds gets the per-layer flags. False + err (message names path)
 * on failure; then nothing is left allocated. */
bool model_hparams_read(const gguf_file_t *f, const char *path, const arch_desc_t **arch, model_hparams_t *hp,
                        model_layer_kinds_t *kinds, lf_err_t *err);

#endif
