/* rope.c - ggml's rope (ggml-cpu ops.cpp rope_yarn / ggml_rope_cache_init /
 * rotate_pairs), in the same float operations.
 *
 * ggml is built with -ffp-contract=fast: gcc fuses the first product of
 * each "a*b +- c*d" into an FMA with the second product rounded; this file
 * is compiled without contraction (ISO C), so it writes those FMAs out
 * (checked against the goldens).
 */
#include "engine/model/rope.h"

#include <math.h>

static float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base)
{
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

void rope_init(rope_t *r, const model_hparams_t *hp, float base, float freq_scale, const float *freq_factors)
{
    rope_init_dims(r, hp, base, freq_scale, freq_factors, hp->n_rot, hp->head_dim);
}

void rope_init_dims(rope_t *r, const model_hparams_t *hp, float base, float freq_scale, const float *freq_factors,
                    int32_t n_rot, int32_t head_dim)
{
    r->n_rot = n_rot;
    r->head_dim = head_dim;
    r->neox = hp->rope_neox;
    r->theta_scale = powf(base, -2.0f / (float)n_rot);
    r->freq_scale = freq_scale;
    r->ext_factor = hp->yarn_ext_factor;
    r->attn_factor = hp->rope_attn_factor;
    r->freq_factors = freq_factors;
    /* ggml_rope_yarn_corr_dims */
    const float start = floorf(corr_dim(n_rot, hp->n_ctx_orig, hp->yarn_beta_fast, base));
    const float end = ceilf(corr_dim(n_rot, hp->n_ctx_orig, hp->yarn_beta_slow, base));
    r->corr[0] = start > 0.0f ? start : 0.0f;
    r->corr[1] = end < (float)(n_rot - 1) ? end : (float)(n_rot - 1);
    /* ggml_mrope_cache_init, IMROPE, text positions (p, p, p, 0): pair i
     * is in sector i % sum(sections); sectors 3j, 3j+1, 3j+2 take the t,
     * h, w positions while j < that section's size, the others the 4th */
    r->any_pos0 = false;
    const int32_t *sec = hp->rope_sections;
    const int sect = sec[0] + sec[1] + sec[2] + sec[3];
    for (int i = 0; i < n_rot / 2 && sect > 0; i++) {
        const int c = i % sect;
        const bool t = c % 3 == 0 && c < 3 * sec[0], h = c % 3 == 1 && c < 3 * sec[1], w = c % 3 == 2 && c < 3 * sec[2];
        r->pos0[i] = !(t || h || w);
        r->any_pos0 |= r->pos0[i];
    }
}

static float yarn_ramp(float low, float high, int i0)
{
    const float y = (float)(i0 / 2 - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

void rope_angles(const rope_t *r, int32_t pos, float *cs)
{
    float theta = (float)pos;
    for (int i0 = 0; i0 < r->n_rot; i0 += 2) {
        const float ff = r->freq_factors ? r->freq_factors[i0 / 2] : 1.0f;
        /* IMROPE's 4th section: position 0 (its theta stays 0) */
        const float theta_extrap = (r->any_pos0 && r->pos0[i0 / 2] ? 0.0f : theta) / ff;
        const float theta_interp = r->freq_scale * theta_extrap;
        float th = theta_interp, mscale = r->attn_factor;
        if (r->ext_factor != 0.0f) {
            const float ramp_mix = yarn_ramp(r->corr[0], r->corr[1], i0) * r->ext_factor;
            th = fmaf(theta_interp, 1 - ramp_mix, theta_extrap * ramp_mix);
            mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
        }
        cs[i0] = cosf(th) * mscale;
        cs[i0 + 1] = sinf(th) * mscale;
        theta *= r->theta_scale;
    }
}

void rope_rotate(const rope_t *r, const float *cs, float *vec, int32_t n_heads)
{
    const int n_rot = r->n_rot;
    for (int32_t h = 0; h < n_heads; h++) {
        float *x = vec + (int64_t)h * r->head_dim;
        for (int i0 = 0; i0 < n_rot; i0 += 2) {
            const float c = cs[i0], s = cs[i0 + 1];
            const int a = r->neox ? i0 / 2 : i0;
            const int b = r->neox ? i0 / 2 + n_rot / 2 : i0 + 1;
            const float x0 = x[a], x1 = x[b];
            /* gcc -O3 -ffp-contract=fast fuses ggml's x0*c - x1*s and
             * x0*s + x1*c like this (checked against the goldens) */
            x[a] = fmaf(x0, c, -(x1 * s));
            x[b] = fmaf(x0, s, x1 * c);
        }
    }
}
