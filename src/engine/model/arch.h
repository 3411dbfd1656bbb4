/* arch.h - what distinguishes one transformer architecture from another.
 *
 * The forward pass is one decoder-only, pre-norm transformer; an
 * architecture is a description of its differences (biases, rope style,
 * tied output, ...). Adding qwen3, phi3 or gemma2 means adding a row to the
 * table in arch.c (and, where the maths differs, a flag the forward pass
 * honours), not copying the forward pass.
 */
#ifndef LF_ARCH_H
#define LF_ARCH_H

#include <stdbool.h>

typedef struct {
    const char *name;      /* general.architecture */
    bool qkv_bias;         /* attn_{q,k,v}.bias may be present (qwen2) */
    bool rope_neox;        /* rotate pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    float default_rope_theta;
    float default_rms_eps;
} arch_desc_t;

/* The description of architecture `name` (NUL-terminated), or NULL. */
const arch_desc_t *arch_find(const char *name);

/* Comma-separated list of supported names, for error messages. */
const char *arch_supported_list(void);

#endif
