/* test_deltanet.c - dn_state_step (deltanet.h): one token of the gated
 * delta rule on one head gives, at every kernel level, bitwise what
 * ggml_gated_delta_net's two passes over the state give: all rows scaled
 * by exp(g) and their deltas from ggml_vec_dot_f32, then the rank-1
 * updates (fused multiply-adds) and the outputs. Head sizes cover the
 * fixtures' 32, the real checkpoints' 128 and the leftover paths (n % 64,
 * n % 8 != 0). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/deltanet.h"
#include "tap.h"

static uint32_t rng = 12345u;

static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/* The reference: ggml's order, written out (two passes, delta[] between). */
static void ref_step(float *M, int S, const float *q, const float *k, const float *v, float beta, float g, float *o)
{
    const float eg = expf(g), scale = 1.0f / sqrtf((float)S);
    float *delta = malloc((size_t)S * sizeof(float));
    for (int j = 0; j < S; j++) {
        float *mj = M + (size_t)j * S;
        for (int i = 0; i < S; i++)
            mj[i] *= eg;
        delta[j] = (v[j] - gx_dot_f32_vec(mj, k, S)) * beta;
    }
    for (int j = 0; j < S; j++) {
        float *mj = M + (size_t)j * S;
        for (int i = 0; i < S; i++)
            mj[i] = fmaf(k[i], delta[j], mj[i]);
        o[j] = gx_dot_f32_vec(mj, q, S) * scale;
    }
    free(delta);
}

static void fill(float *x, int n, float s)
{
    for (int i = 0; i < n; i++)
        x[i] = frand() * s;
}

int main(void)
{
    static const int sizes[] = {32, 128, 64, 72, 200, 7, 1};
    const int top = gx_level();
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int S = sizes[c];
        const size_t SS = (size_t)S * S;
        float *M0 = malloc(SS * sizeof(float)), *Mr = malloc(SS * sizeof(float)), *Mt = malloc(SS * sizeof(float));
        float *q = malloc((size_t)S * 4 * sizeof(float)), *k = q + S, *v = k + S, *o = v + S;
        float *or = malloc((size_t)S * sizeof(float));
        fill(M0, (int)SS, 0.5f);
        for (int lv = GX_LEVEL_PORTABLE; lv <= top; lv++) {
            memcpy(Mr, M0, SS * sizeof(float));
            memcpy(Mt, M0, SS * sizeof(float));
            int same = 1;
            for (int step = 0; step < 4 && same; step++) {
                fill(q, S, 0.2f);
                fill(k, S, 0.2f);
                fill(v, S, 1.0f);
                const float beta = 0.5f + 0.4f * frand(), g = -0.1f + 0.05f * frand();
                gx_set_level(GX_LEVEL_PORTABLE); /* the reference dots at one level: they are equal at all */
                ref_step(Mr, S, q, k, v, beta, g, or);
                gx_set_level(lv);
                dn_state_step(Mt, S, q, k, v, beta, g, o);
                same = memcmp(Mr, Mt, SS * sizeof(float)) == 0 && memcmp(or, o, (size_t)S * sizeof(float)) == 0;
            }
            gx_set_level(top);
            tap_ok(same, "d_state %d, level %d: state and output bitwise ggml's two-pass order over 4 tokens", S, lv);
        }
        free(M0);
        free(Mr);
        free(Mt);
        free(q);
        free(or);
    }
    return tap_done();
}
