/* test_weights_pack.c - weights_pack at model load: every matrix the decode
 * kernels have a packed layout for is packed, the MoE experts too (expert
 * by expert, packed_expert_bytes apart, gemma4's fused gate|up as its two
 * views), each expert's copy is what kern_pack makes of that expert's
 * rows (the right expert at the right offset). On a CPU level
 * without packed kernels (kern_pack_size 0) nothing is packed: checked as
 * well. */
#include "engine/kernels/kernels.h"
#include "engine/model/model.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether P is byte for byte the packed copy of W (n_out x n_in of t)
 * that kern_pack makes of W alone. */
static bool same_pack(qtype_t t, const void *W, const void *P, int64_t n_out, int64_t n_in)
{
    const size_t sz = kern_pack_size(t, n_out, n_in);
    void *q = NULL;
    if (posix_memalign(&q, 64, sz))
        return false;
    kern_pack(t, W, n_out, n_in, q);
    const bool ok = !memcmp(P, q, sz);
    free(q);
    return ok;
}

/* The experts of x in layer l: packed as kern_pack_size says, and the
 * first, middle and last experts' copies are each what packing that
 * expert's rows alone gives (the right expert at the right offset). */
static void check_experts(const char *file, int l, const char *what, const model_experts_t *x, int32_t n_expert)
{
    const size_t psz = kern_pack_size(x->type, x->n_out, x->n_in);
    if (!psz) {
        tap_ok(!x->packed, "%s layer %d %s: no packed kernels for %s at this level, not packed", file, l, what,
               qtype_name(x->type));
        return;
    }
    if (!tap_ok(x->packed && x->packed_expert_bytes == psz, "%s layer %d %s (%s): packed, %zu bytes per expert",
                file, l, what, qtype_name(x->type), psz))
        return;
    const int32_t es[3] = {0, n_expert / 2, n_expert - 1};
    bool same = true;
    for (int i = 0; i < 3; i++) {
        const uint8_t *w = (const uint8_t *)x->data + (size_t)es[i] * x->expert_bytes;
        const uint8_t *p = (const uint8_t *)x->packed + (size_t)es[i] * x->packed_expert_bytes;
        same &= same_pack(x->type, w, p, x->n_out, x->n_in);
    }
    tap_ok(same, "%s layer %d %s: experts %d, %d, %d packed as each alone, byte for byte", file,
           l, what, es[0], es[1], es[2]);
}

static void check_model(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    if (!tap_ok(m != NULL, "%s: loads (%s)", file, m ? "ok" : err.msg))
        return;
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    int n_packed = 0, want = 0;
    size_t bytes = 0;
    model_pack_info(m, &n_packed, &bytes);
    int moe_layers = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        model_layer_t *L = &((model_weights_t *)w)->layers[l];
        model_tensor_t *mats[MODEL_LAYER_MATRICES];
        const int nm = model_layer_matrices(L, mats);
        bool flags = true;
        for (int i = 0; i < nm; i++) {
            const bool packable = kern_pack_size(mats[i]->type, mats[i]->n_out, mats[i]->n_in) > 0;
            want += packable;
            flags &= packable == (mats[i]->packed != NULL);
        }
        const model_experts_t *x[3] = {&L->x_gate, &L->x_up, &L->x_down};
        static const char *names[3] = {"gate experts", "up experts", "down experts"};
        bool any = false;
        for (int i = 0; i < 3; i++) {
            if (!x[i]->data)
                continue;
            any = true;
            const bool packable = kern_pack_size(x[i]->type, x[i]->n_out, x[i]->n_in) > 0;
            want += packable;
            flags &= packable == (x[i]->packed != NULL);
            if (moe_layers == 0) /* the first MoE layer's experts in full */
                check_experts(file, l, names[i], x[i], hp->n_expert);
        }
        moe_layers += any;
        if (!flags)
            tap_ok(0, "%s layer %d: a matrix packed that has no packed kernels, or one not packed that has", file,
                   l);
    }
    if (w->output.data)
        want += kern_pack_size(w->output.type, w->output.n_out, w->output.n_in) > 0;
    tap_ok(hp->n_expert > 0 && moe_layers > 0, "%s: %d layers of %d experts", file, moe_layers, hp->n_expert);
    tap_ok(n_packed == want && (want == 0) == (bytes == 0),
           "%s: %d matrices packed (%zu KiB), every packable one and no other", file, n_packed, bytes >> 10);
    model_free(m);
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    static const char *files[] = {"tinyqwen35moe-q8_0.gguf", "tinygemma4moe-q8_0.gguf", "tinyqwen3moe-q8_0.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            tap_skip("%s: not in %s", files[i], dir);
            continue;
        }
        fclose(f);
        check_model(dir, files[i]);
    }
    return tap_done();
}
