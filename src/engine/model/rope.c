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
}

static float yarn_ramp(float low, float high, int i0)
{
    const float y = (float)(i0 / 2 - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

/* cos and sin of pair i0 / 2 at angle theta (ggml's rope_yarn). */
static void pair_angles(const rope_t *r, int i0, float theta, float *cs)
{
    const float ff = r->freq_factors ? r->freq_factors[i0 / 2] : 1.0f;
    const float theta_extrap = theta / ff;
    const float theta_interp = r->freq_scale * theta_extrap;
    float th = theta_interp, mscale = r->attn_factor;
    if (r->ext_factor != 0.0f) {
        const float ramp_mix = yarn_ramp(r->corr[0], r->corr[1], i0) * r->ext_factor;
        th = fmaf(theta_interp, 1 - ramp_mix, theta_extrap * ramp_mix);
        mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
    }
    cs[i0] = cosf(th) * mscale;
    cs[i0 + 1] = sinf(th) * mscale;
}

void rope_angles(const rope_t *r, int32_t pos, float *cs)
{
    float theta = (float)pos;
    for (int i0 = 0; i0 < r->n_rot; i0 += 2) {
        pair_angles(r, i0, theta, cs);
        theta *= r->theta_scale;
    }
}

void rope_angles_multi(const rope_t *r, const int32_t pos[4], const int32_t sections[4], bool interleaved,
                       bool indep, float *cs)
{
    float th[4] = {(float)pos[0], (float)pos[1], (float)pos[2], (float)pos[3]};
    const int s0 = sections[0], s1 = sections[1], s2 = sections[2];
    const int sect_dims = s0 + s1 + s2 + sections[3], sec_w = s0 + s1, sec_e = sec_w + s2;
    for (int i0 = 0; i0 < r->n_rot; i0 += 2) {
        const int sector = sect_dims > 0 ? (i0 / 2) % sect_dims : 0;
        if (indep) { /* each section restarts its frequencies (vision) */
            if (sector == 0)
                th[0] = (float)pos[0];
            else if (sector == s0)
                th[1] = (float)pos[1];
            else if (sector == sec_w)
                th[2] = (float)pos[2];
            else if (sector == sec_e)
                th[3] = (float)pos[3];
        }
        int c;
        if (interleaved) /* qwen3vl: t, h, w by pair index modulo 3 */
            c = sector % 3 == 1 && sector < 3 * s1   ? 1
                : sector % 3 == 2 && sector < 3 * s2 ? 2
                : sector % 3 == 0 && sector < 3 * s0 ? 0
                                                     : 3;
        else
            c = sector < s0 ? 0 : sector < sec_w ? 1 : sector < sec_e ? 2 : 3;
        pair_angles(r, i0, th[c], cs);
        for (int k = 0; k < 4; k++)
            th[k] *= r->theta_scale;
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
