/* weights_pack.h - the decode layout of a model's weights, made at load.
 *
 * Every 2-D weight matrix the forward pass multiplies (attention q/k/v/o
 * or the fused qkv, the FFN gate/up/down, the output matrix) whose type
 * has packed kernels at the running ISA level (kern_pack_size) is copied
 * once into the x16 layout (kpack.h) and its model_tensor_t.packed set;
 * the matrix products then read the copy. Values are bitwise unchanged.
 * The original pages of a packed matrix are then released from memory
 * (madvise(MADV_DONTNEED) on the read-only file mapping), so resident
 * memory stays about the file size; a tied output matrix is also the
 * embedding table, whose lookup faults back only the pages of the rows it
 * reads. MoE expert tensors are packed expert by expert
 * (model_experts_t.packed, packed_expert_bytes apart).
 *
 * LLM_FCGI_PACK=0 in the environment turns packing off (for comparisons).
 */
#ifndef LF_WEIGHTS_PACK_H
#define LF_WEIGHTS_PACK_H

#include <stddef.h>

#include "common/status.h"
#include "engine/model/model.h"

typedef struct {
    void *mem;          /* the packed copies (one anonymous mapping), or NULL */
    size_t bytes;       /* its size */
    int n_packed;       /* matrices packed (an expert tensor counts once) */
    size_t orig_bytes;  /* their original size */
} weights_pack_t;

/* Packs the eligible matrices of w (n_layer layers, n_expert experts in
 * its MoE tensors). On failure (out of
 * memory) nothing is packed and the model runs on its original rows:
 * returns false with a message in err. */
bool weights_pack(model_weights_t *w, int n_layer, int n_expert, weights_pack_t *out, lf_err_t *err);

/* Releases the packed copies (accepts a zeroed p). */
void weights_pack_free(weights_pack_t *p);

#endif
