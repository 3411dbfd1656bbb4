/* nextn.c - MTP block input rows (see nextn.h). */
#include "engine/model/nextn.h"

#include <string.h>

#include "engine/model/linear.h"
#include "engine/model/ops.h"
#include "engine/quant/quant.h"

static size_t cat_bytes(const model_t *view, int32_t n)
{
    return (size_t)n * 2u * (size_t)model_hparams(view)->n_embd * sizeof(float);
}

size_t nextn_input_scratch(const model_t *view, int32_t n)
{
    const model_layer_t *L = &model_weights(view)->layers[0];
    /* the concatenated rows, 64-byte aligned, then the activation scratch */
    return (cat_bytes(view, n) + 63) / 64 * 64 + lin_act_bytes(&L->nextn_eh_proj, n);
}

void nextn_input(tpool_t *pool, const model_t *view, const int32_t *tokens, const float *const *hidden, int32_t n,
                 void *scratch, float *out)
{
    const model_hparams_t *hp = model_hparams(view);
    const model_weights_t *w = model_weights(view);
    const model_layer_t *L = &w->layers[0];
    const int64_t E = hp->n_embd;
    float *cat = scratch;
    void *act = (uint8_t *)scratch + (cat_bytes(view, n) + 63) / 64 * 64;
    for (int32_t i = 0; i < n; i++) {
        float *e = cat + (int64_t)i * 2 * E, *h = e + E;
        quant_dequantize_row(w->tok_embd.type, (const uint8_t *)w->tok_embd.data + (size_t)tokens[i] * w->tok_embd.row_bytes,
                             e, E);
        ops_rms_norm(e, L->nextn_enorm, e, E, hp->rms_eps);
        ops_rms_norm(hidden[i], L->nextn_hnorm, h, E, hp->rms_eps);
    }
    lin_run(pool, act, &L->nextn_eh_proj, NULL, cat, n, NULL, out);
}
