/* rope.h - rotary position embeddings as ggml computes them.
 *
 * One rope_t describes the rotation of one kind of layer (base, position
 * scaling, YaRN, per-dimension frequency factors, partial rotary): the
 * global layers and the sliding-window layers of a model may differ.
 * rope_angles() computes the cos/sin table of a position exactly as
 * ggml_rope_cache_init does (theta multiplied up by theta_scale in float,
 * YaRN's ramp and magnitude factor); rope_rotate() applies it to the first
 * n_rot dimensions of each head (NEOX pairs (i, i + n_rot/2) or adjacent
 * pairs), the other dimensions pass through.
 *
 * A rope_t is plain data, immutable after rope_init; thread-safe.
 */
#ifndef LF_ROPE_H
#define LF_ROPE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model/model.h"

#define ROPE_MAX_ROT 2048 /* largest n_rot (head size bound of model_hparams) */

typedef struct {
    int32_t n_rot, head_dim;
    bool neox;
    float theta_scale;         /* base^(-2 / n_rot) */
    float freq_scale;          /* position scale (1 / linear or YaRN factor) */
    float ext_factor;          /* YaRN extrapolation mix (0: off) */
    float attn_factor;         /* cos/sin multiplier before YaRN's own */
    float corr[2];             /* YaRN correction dimensions */
    const float *freq_factors; /* NULL, or [n_rot / 2] divisors of theta */
} rope_t;

/* The rope of layers with base `base` and position scale `freq_scale`
 * (hp gives the rest), with optional frequency factors. */
void rope_init(rope_t *r, const model_hparams_t *hp, float base, float freq_scale, const float *freq_factors);
/* The same for layers of their own rotary dims and head size (gemma4's
 * window layers). */
void rope_init_dims(rope_t *r, const model_hparams_t *hp, float base, float freq_scale, const float *freq_factors,
                    int32_t n_rot, int32_t head_dim);

/* cs[2 * i] = cos, cs[2 * i + 1] = sin of dimension pair i < n_rot / 2 at
 * position pos. */
void rope_angles(const rope_t *r, int32_t pos, float *cs);

/* The same for multi-section rope (ggml_rope_multi): pair k takes its angle
 * from one of the four position components pos[0..3] (t, h, w, e) by the
 * sections: contiguous [s0 | s1 | s2 | s3] (M-RoPE, qwen2vl) or, with
 * interleaved, k % 3 == 0 / 1 / 2 -> t / h / w while k < 3 * s of that
 * component (IMRoPE, qwen3vl); indep restarts the frequencies at each
 * section (the vision encoders' 2-D rope). */
void rope_angles_multi(const rope_t *r, const int32_t pos[4], const int32_t sections[4], bool interleaved,
                       bool indep, float *cs);

/* Rotates n_heads heads of head_dim values (contiguous) with table cs. */
void rope_rotate(const rope_t *r, const float *cs, float *vec, int32_t n_heads);

#endif
