/* test_model_families.c - loading the model families: hyper-parameters and
 * per-layer kinds as llama.cpp reads them, malformed files refused with a
 * message naming the problem, llama-server's prompt batching
 * (fwd_prompt_order), sliding-window KV memory and logit soft-capping.
 *
 * The fixtures are ../shared/models/tiny<family>-f32.gguf; the malformed
 * variants are copies rewritten with tests/fixtures/gguf_writer (one key or
 * tensor changed) in a temporary directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "fixtures/gguf_writer.h"
#include "tap.h"

static const char *models_dir;
static char tmp_dir[256];

static model_t *load(const char *file, lf_err_t *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", models_dir, file);
    return model_load(path, err);
}

/* ---- hyper-parameters of the six fixtures (PROVENANCE.txt) ---- */

typedef struct {
    const char *file, *arch;
    int n_layer, n_swa;
    const char *swa;    /* per layer: 'S' window, '.' full */
    const char *rope;   /* per layer: 'R' rope, '-' none */
    float theta, theta_swa, q_scale;
    int n_rot, n_expert, n_used, n_ff_exp;
    bool fused_qkv, tied, sinks;
} family_case_t;

static const family_case_t families[] = {
    {"tinyqwen3-f32.gguf", "qwen3", 2, 0, "..", "RR", 1e6f, 1e6f, 1.0f, 64, 0, 0, 0, false, true, false},
    {"tinyqwen3moe-f32.gguf", "qwen3moe", 2, 0, "..", "RR", 1e6f, 1e6f, 1.0f, 64, 8, 2, 64, false, false, false},
    {"tinygemma3-f32.gguf", "gemma3", 6, 32, "SSSSS.", "RRRRRR", 1e6f, 1e4f, 0.17677669f, 32, 0, 0, 0, false, true,
     false},
    {"tinyphi3-f32.gguf", "phi3", 2, 0, "..", "RR", 1e4f, 1e4f, 0.125f, 48, 0, 0, 0, true, false, false},
    {"tinysmollm3-f32.gguf", "smollm3", 4, 0, "....", "RRR-", 5e6f, 5e6f, 1.0f, 64, 0, 0, 0, false, true, false},
    {"tinygptoss-f32.gguf", "gpt-oss", 4, 40, "S.S.", "RRRR", 150000.0f, 150000.0f, 1.0f, 64, 8, 4, 64, false, false,
     true},
};

static void test_hparams(void)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const family_case_t *c = &families[i];
        lf_err_t err;
        model_t *m = load(c->file, &err);
        if (!tap_ok(m != NULL, "%s loads (%s)", c->file, m ? "ok" : err.msg))
            continue;
        const model_hparams_t *hp = model_hparams(m);
        const model_weights_t *w = model_weights(m);
        bool kinds = hp->n_layer == c->n_layer;
        for (int l = 0; kinds && l < hp->n_layer; l++)
            kinds = w->layers[l].swa == (c->swa[l] == 'S') && w->layers[l].rope == (c->rope[l] == 'R');
        tap_ok(!strcmp(hp->arch, c->arch) && kinds && hp->n_swa == c->n_swa, "%s: layers (window %d, %s, %s)",
               c->file, hp->n_swa, c->swa, c->rope);
        tap_ok(hp->rope_theta == c->theta && hp->rope_theta_swa == c->theta_swa && hp->n_rot == c->n_rot &&
                   fabsf(hp->q_scale - c->q_scale) < 1e-7f,
               "%s: rope base %g / local %g, %d dims, q scale %g", c->file, hp->rope_theta, hp->rope_theta_swa,
               hp->n_rot, hp->q_scale);
        tap_ok(hp->n_expert == c->n_expert && hp->n_expert_used == c->n_used && hp->n_ff_exp == c->n_ff_exp,
               "%s: experts %d, %d used, width %d", c->file, hp->n_expert, hp->n_expert_used, hp->n_ff_exp);
        tap_ok((w->layers[0].wqkv.data != NULL) == c->fused_qkv && w->output_tied == c->tied &&
                   (w->layers[0].sinks != NULL) == c->sinks,
               "%s: fused qkv %d, tied output %d, sinks %d", c->file, c->fused_qkv, c->tied, c->sinks);
        model_free(m);
    }
    /* gpt-oss's YaRN: factor 32 from 4096 positions; llama.cpp cancels the
     * magnitude factor (attn_factor 1) because ggml's rope applies it */
    lf_err_t err;
    model_t *m = load("tinygptoss-f32.gguf", &err);
    if (m) {
        const model_hparams_t *hp = model_hparams(m);
        tap_ok(hp->rope_scaling == MODEL_ROPE_SCALE_YARN && hp->rope_freq_scale == 1.0f / 32 &&
                   hp->yarn_ext_factor == 1.0f && fabsf(hp->rope_attn_factor - 1.0f) < 1e-6f &&
                   hp->n_ctx_orig == 4096 && hp->yarn_beta_fast == 32.0f && hp->yarn_beta_slow == 1.0f,
               "gpt-oss: YaRN factor 32, ext 1, attn factor %g, original context %d", hp->rope_attn_factor,
               hp->n_ctx_orig);
        model_free(m);
    }
}

/* ---- malformed and varied files ---- */

/* An edit of a fixture: keys dropped or set, a tensor dropped or reshaped. */
typedef struct {
    const char *name;       /* test name */
    const char *src;        /* fixture file */
    const char *drop_key;   /* NULL or a key left out */
    const char *set_u32;    /* NULL or a key set to u32_val (added if absent) */
    uint32_t u32_val;
    const char *set_str;    /* NULL or a key set to str_val */
    const char *str_val;
    const char *set_f32;    /* NULL or a key set to f32_val */
    float f32_val;
    const char *set_bools;  /* NULL or a key set to the bool array bools ('1'/'0') */
    const char *bools;
    const char *drop_tensor;
    const char *short_tensor; /* NULL or a tensor whose last dimension loses one row */
    lf_code_t want;         /* LF_OK: loads */
    const char *want_msg;   /* substring of the error message */
} edit_t;

static const edit_t edits[] = {
    {"gpt-oss without its sliding window key", "tinygptoss-f32.gguf", .drop_key = "gpt-oss.attention.sliding_window",
     .want = LF_ERR_FORMAT, .want_msg = "gpt-oss.attention.sliding_window"},
    {"more experts used than exist", "tinyqwen3moe-f32.gguf", .set_u32 = "qwen3moe.expert_used_count", .u32_val = 9,
     .want = LF_ERR_FORMAT, .want_msg = "experts"},
    {"MoE without expert_count", "tinyqwen3moe-f32.gguf", .drop_key = "qwen3moe.expert_count",
     .want = LF_ERR_FORMAT, .want_msg = "qwen3moe.expert_count"},
    {"a missing q norm", "tinyqwen3-f32.gguf", .drop_tensor = "blk.1.attn_q_norm.weight", .want = LF_ERR_FORMAT,
     .want_msg = "blk.1.attn_q_norm.weight"},
    {"an expert tensor of the wrong shape", "tinyqwen3moe-f32.gguf", .short_tensor = "blk.0.ffn_down_exps.weight",
     .want = LF_ERR_FORMAT, .want_msg = "blk.0.ffn_down_exps.weight"},
    {"a missing post-FFN norm", "tinygemma3-f32.gguf", .drop_tensor = "blk.3.post_ffw_norm.weight",
     .want = LF_ERR_FORMAT, .want_msg = "post_ffw_norm"},
    {"a missing attention sink", "tinygptoss-f32.gguf", .drop_tensor = "blk.2.attn_sinks.weight",
     .want = LF_ERR_FORMAT, .want_msg = "attn_sinks"},
    {"phi3 without attn_qkv nor attn_q", "tinyphi3-f32.gguf", .drop_tensor = "blk.0.attn_qkv.weight",
     .want = LF_ERR_FORMAT, .want_msg = "blk.0.attn_q.weight"},
    {"an unknown rope scaling", "tinyqwen3-f32.gguf", .set_str = "qwen3.rope.scaling.type", .str_val = "ntk-by-parts",
     .want = LF_ERR_UNSUPPORTED, .want_msg = "ntk-by-parts"},
    {"a window pattern array of the wrong length", "tinygemma3-f32.gguf",
     .set_bools = "gemma3.attention.sliding_window_pattern", .bools = "1110", .want = LF_ERR_FORMAT,
     .want_msg = "sliding_window_pattern"},
    {"a window pattern array", "tinygemma3-f32.gguf", .set_bools = "gemma3.attention.sliding_window_pattern",
     .bools = "010101", .want = LF_OK},
    {"a window pattern period of 3", "tinygemma3-f32.gguf", .set_u32 = "gemma3.attention.sliding_window_pattern",
     .u32_val = 3, .want = LF_OK},
    {"gemma3 without a window", "tinygemma3-f32.gguf", .drop_key = "gemma3.attention.sliding_window", .want = LF_OK},
    {"an invalid sliding window", "tinygemma3-f32.gguf", .set_u32 = "gemma3.attention.sliding_window",
     .u32_val = 1u << 30, .want = LF_ERR_FORMAT, .want_msg = "sliding window"},
    {"final logit soft-capping", "tinygemma3-f32.gguf", .set_f32 = "gemma3.final_logit_softcapping",
     .f32_val = 30.0f, .want = LF_OK},
    /* the 2026 hybrids */
    {"qwen35 without ssm.state_size", "tinyqwen35-f32.gguf", .drop_key = "qwen35.ssm.state_size",
     .want = LF_ERR_FORMAT, .want_msg = "qwen35.ssm.state_size"},
    {"qwen35 with an inner size that is not v heads x state", "tinyqwen35-f32.gguf", .set_u32 = "qwen35.ssm.inner_size",
     .u32_val = 96, .want = LF_ERR_UNSUPPORTED, .want_msg = "Gated DeltaNet"},
    {"qwen35 without a conv kernel", "tinyqwen35-f32.gguf", .drop_tensor = "blk.1.ssm_conv1d.weight",
     .want = LF_ERR_FORMAT, .want_msg = "blk.1.ssm_conv1d.weight"},
    {"qwen35 with a short ssm_a", "tinyqwen35-f32.gguf", .short_tensor = "blk.2.ssm_a", .want = LF_ERR_FORMAT,
     .want_msg = "blk.2.ssm_a"},
    {"qwen35 without the MTP block's eh_proj", "tinyqwen35-f32.gguf", .drop_tensor = "blk.8.nextn.eh_proj.weight",
     .want = LF_ERR_FORMAT, .want_msg = "nextn.eh_proj"},
    {"qwen35 with recurrent_layers of the wrong length", "tinyqwen35-f32.gguf",
     .set_bools = "qwen35.attention.recurrent_layers", .bools = "1110111", .want = LF_ERR_FORMAT,
     .want_msg = "recurrent_layers"},
    {"qwen35moe without its shared expert gate", "tinyqwen35moe-f32.gguf",
     .drop_tensor = "blk.1.ffn_gate_inp_shexp.weight", .want = LF_ERR_FORMAT, .want_msg = "ffn_gate_inp_shexp"},
    {"qwen35moe with full_attention_interval 0", "tinyqwen35moe-f32.gguf",
     .set_u32 = "qwen35moe.full_attention_interval", .u32_val = 0, .want = LF_ERR_FORMAT,
     .want_msg = "full_attention_interval"},
    {"lfm2 without shortconv.l_cache", "tinylfm2-f32.gguf", .drop_key = "lfm2.shortconv.l_cache",
     .want = LF_ERR_FORMAT, .want_msg = "lfm2.shortconv.l_cache"},
    {"lfm2 without its final norm", "tinylfm2-f32.gguf", .drop_tensor = "token_embd_norm.weight",
     .want = LF_ERR_FORMAT, .want_msg = "token_embd_norm.weight"},
    {"gemma4 sharing the KV of all but one layer", "tinygemma4-f32.gguf",
     .set_u32 = "gemma4.attention.shared_kv_layers", .u32_val = 9, .want = LF_ERR_FORMAT, .want_msg = "shared KV"},
    {"gemma4 without a K projection on a layer with its own cache", "tinygemma4-f32.gguf",
     .drop_tensor = "blk.2.attn_k.weight", .want = LF_ERR_FORMAT, .want_msg = "blk.2.attn_k.weight"},
    {"gemma4 without its sliding window pattern", "tinygemma4-f32.gguf",
     .drop_key = "gemma4.attention.sliding_window_pattern", .want = LF_ERR_FORMAT,
     .want_msg = "sliding_window_pattern"},
    {"gemma4 without per-layer token embeddings", "tinygemma4-f32.gguf", .drop_tensor = "per_layer_token_embd.weight",
     .want = LF_ERR_FORMAT, .want_msg = "per_layer_token_embd.weight"},
    {"gemma4 MoE without the router input scale", "tinygemma4moe-f32.gguf", .drop_tensor = "blk.3.ffn_gate_inp.scale",
     .want = LF_ERR_FORMAT, .want_msg = "ffn_gate_inp.scale"},
};

static bool key_is(gguf_str_t k, const char *name)
{
    return name && gguf_str_eq(k, name);
}

/* Writes the edited copy to out. */
static bool write_edit(const edit_t *e, const char *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", models_dir, e->src);
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    gguf_writer_t *w = gguf_writer_create();
    if (!f || !w) {
        gguf_close(f);
        gguf_writer_free(w);
        return false;
    }
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv_t *kv = gguf_kv_at(f, i);
        if (key_is(kv->key, "general.alignment") || key_is(kv->key, e->drop_key) || key_is(kv->key, e->set_u32) ||
            key_is(kv->key, e->set_str) || key_is(kv->key, e->set_f32) || key_is(kv->key, e->set_bools))
            continue;
        gguf_writer_copy_kv(w, kv);
    }
    if (e->set_u32)
        gguf_writer_u32(w, e->set_u32, e->u32_val);
    if (e->set_str)
        gguf_writer_str(w, e->set_str, e->str_val, strlen(e->str_val));
    if (e->set_f32)
        gguf_writer_f32(w, e->set_f32, e->f32_val);
    if (e->set_bools) {
        /* a bool array, through a key/value built in place */
        size_t n = strlen(e->bools);
        uint8_t vals[64];
        for (size_t j = 0; j < n && j < sizeof vals; j++)
            vals[j] = e->bools[j] == '1';
        gguf_kv_t kv = {.key = {e->set_bools, strlen(e->set_bools)}, .type = GGUF_VT_ARRAY,
                        .arr_type = GGUF_VT_BOOL, .arr_len = n, .data = vals};
        gguf_writer_copy_kv(w, &kv);
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor_t *t = gguf_tensor_at(f, i);
        if (key_is(t->name, e->drop_tensor))
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        size_t size = t->size;
        if (key_is(t->name, e->short_tensor)) {
            size -= size / (size_t)ne[t->n_dims - 1];
            ne[t->n_dims - 1]--;
        }
        gguf_writer_tensor(w, name, t->type, t->n_dims, ne, t->data, size);
    }
    bool ok = gguf_writer_write(w, out, &err) == LF_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

static void test_edits(void)
{
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const edit_t *e = &edits[i];
        char out[512];
        snprintf(out, sizeof out, "%s/edit%zu.gguf", tmp_dir, i);
        if (!tap_ok(write_edit(e, out), "%s: fixture written", e->name))
            continue;
        lf_err_t err = {0};
        model_t *m = model_load(out, &err);
        if (e->want != LF_OK) {
            tap_ok(!m && err.code == e->want && strstr(err.msg, e->want_msg) && strstr(err.msg, out),
                   "%s: refused (%s)", e->name, err.msg);
            model_free(m);
            unlink(out);
            continue;
        }
        if (!tap_ok(m != NULL, "%s: loads (%s)", e->name, m ? "ok" : err.msg)) {
            unlink(out);
            continue;
        }
        const model_hparams_t *hp = model_hparams(m);
        const model_layer_t *L = model_weights(m)->layers;
        if (strcmp(e->src, "tinygemma3-f32.gguf")) {
            /* no positive edit of another fixture (yet) */
        } else if (e->set_bools) {
            bool ok = true;
            for (int l = 0; l < hp->n_layer; l++)
                ok &= L[l].swa == (e->bools[l] == '1');
            tap_ok(ok && hp->n_layer_swa == 3, "%s: the array decides the local layers", e->name);
        } else if (e->set_u32) {
            tap_ok(L[0].swa && L[1].swa && !L[2].swa && L[3].swa && L[4].swa && !L[5].swa && hp->n_layer_swa == 4,
                   "%s: layer il is local iff il %% 3 < 2", e->name);
        } else if (e->drop_key) {
            tap_ok(hp->n_swa == 0 && hp->n_layer_swa == 0 && !L[0].swa && hp->rope_theta_swa == hp->rope_theta,
                   "%s: full attention everywhere", e->name);
        } else if (e->set_f32) {
            fwd_opts_t o = {.n_seq = 1, .n_ctx = 64, .n_threads = 1};
            fwd_t *f = fwd_create(m, &o, NULL);
            const int32_t toks[4] = {1, 300, 301, 302};
            bool ok = f && fwd_prefill(f, 0, toks, 4, true, NULL) == LF_OK;
            float mx = 0;
            for (int32_t v = 0; ok && v < hp->n_vocab; v++)
                mx = fmaxf(mx, fabsf(fwd_logits(f, 0)[v]));
            tap_ok(ok && hp->logit_softcap == 30.0f && mx <= 30.0f && mx > 5.0f,
                   "%s: logits capped at 30 (largest %g)", e->name, mx);
            fwd_free(f);
        }
        model_free(m);
        unlink(out);
    }
}

/* ---- the 2026 hybrids: layer kinds, per-layer shapes, state ---- */

typedef struct {
    const char *file;
    int n_layer, n_nextn;
    const char *kinds;   /* per layer: 'A' attention, 'D' Gated DeltaNet, 'C' short convolution */
    const char *swa;     /* per layer: 'S' window, '.' full */
    int kv_src[10];      /* the layer each one attends (-1: none) */
    int head_dim[10];    /* attention layers */
    int n_head_kv[10];
    int n_ff[10];
    int64_t state_floats; /* per sequence, all layers */
} hybrid_case_t;

static const hybrid_case_t hybrids[] = {
    /* GDN: (4 - 1) x 256 conv + 4 x 32 x 32 delta floats per layer */
    {"tinyqwen35-f32.gguf", 8, 1, "DDDADDDA", "........", {-1, -1, -1, 3, -1, -1, -1, 7},
     {0, 0, 0, 64, 0, 0, 0, 64}, {0, 0, 0, 2, 0, 0, 0, 2}, {128, 128, 128, 128, 128, 128, 128, 128}, 6 * (768 + 4096)},
    {"tinyqwen35moe-f32.gguf", 4, 1, "DADA", "....", {-1, 1, -1, 3}, {0, 64, 0, 64}, {0, 2, 0, 2}, {0, 0, 0, 0},
     2 * (768 + 4096)},
    {"tinygemma4-f32.gguf", 10, 0, "AAAAAAAAAA", "SSSS.SSSS.", {0, 1, 2, 3, 4, 3, 3, 3, 3, 4},
     {32, 32, 32, 32, 64, 32, 32, 32, 32, 64}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     {128, 128, 128, 128, 128, 256, 256, 256, 256, 256}, 0},
    {"tinygemma4moe-f32.gguf", 6, 0, "AAAAAA", "SSSSS.", {0, 1, 2, 3, 4, 5}, {32, 32, 32, 32, 32, 64},
     {2, 2, 2, 2, 2, 1}, {64, 64, 64, 64, 64, 64}, 0},
    /* short conv: (3 - 1) x 64 floats per layer */
    {"tinylfm2-f32.gguf", 6, 0, "CCACAC", "......", {-1, -1, 2, -1, 4, -1}, {0, 0, 16, 0, 16, 0}, {0, 0, 2, 0, 2, 0},
     {128, 128, 128, 128, 128, 128}, 4 * 128},
};

static void test_hybrids(void)
{
    for (size_t i = 0; i < sizeof hybrids / sizeof hybrids[0]; i++) {
        const hybrid_case_t *c = &hybrids[i];
        lf_err_t err;
        model_t *m = load(c->file, &err);
        if (!tap_ok(m != NULL, "%s loads (%s)", c->file, m ? "ok" : err.msg))
            continue;
        const model_hparams_t *hp = model_hparams(m);
        const model_layer_t *L = model_weights(m)->layers;
        bool kinds = hp->n_layer == c->n_layer && hp->n_nextn == c->n_nextn && hp->n_layer_all == c->n_layer + c->n_nextn;
        bool shapes = kinds;
        for (int l = 0; kinds && l < hp->n_layer; l++) {
            const char k = L[l].kind == MODEL_LAYER_GDN ? 'D' : L[l].kind == MODEL_LAYER_SHORTCONV ? 'C' : 'A';
            kinds &= k == c->kinds[l] && L[l].swa == (c->swa[l] == 'S') && L[l].kv_layer == c->kv_src[l];
            if (k == 'A')
                shapes &= L[l].head_dim == c->head_dim[l] && L[l].n_head_kv == c->n_head_kv[l];
            shapes &= c->n_ff[l] == 0 || L[l].n_ff == c->n_ff[l];
        }
        tap_ok(kinds, "%s: %d layers (+%d MTP) %s, window %s, KV sources as llama.cpp", c->file, hp->n_layer,
               hp->n_nextn, c->kinds, c->swa);
        tap_ok(shapes, "%s: per-layer head sizes, KV heads and FFN widths", c->file);
        tap_ok(model_state_bytes(m) == (uint64_t)c->state_floats * 4 && model_is_hybrid(m) == (c->state_floats > 0),
               "%s: recurrent state %llu bytes per sequence", c->file, (unsigned long long)model_state_bytes(m));
        model_free(m);
    }
    /* specifics: qwen35's IMROPE sections and MTP block, the shared
     * expert, gemma4's K-as-V layer, fused experts and embeddings */
    lf_err_t err;
    model_t *m = load("tinyqwen35-f32.gguf", &err);
    if (m) {
        const model_hparams_t *hp = model_hparams(m);
        const model_layer_t *L = model_weights(m)->layers;
        tap_ok(hp->rope_sections[0] == 3 && hp->rope_sections[2] == 2 && hp->n_rot == 16 && hp->ssm_d_state == 32 &&
                   hp->ssm_n_group == 2 && hp->ssm_dt_rank == 4 && hp->ssm_d_conv == 4 && L[8].nextn_eh_proj.data &&
                   L[3].wq.n_out == 2 * 4 * 64,
               "qwen35: rope sections 3,3,2 on 16 dims, GDN 4 v heads of 32, the MTP block bound, q | gate rows");
        model_free(m);
    }
    m = load("tinyqwen35moe-f32.gguf", &err);
    if (m) {
        const model_layer_t *L = model_weights(m)->layers;
        tap_ok(L[0].s_up.data && L[0].s_gate_inp.n_out == 1 && model_hparams(m)->n_ff_shexp == 32,
               "qwen35moe: a shared expert of 32 gated by a [64, 1] matrix");
        model_free(m);
    }
    m = load("tinygemma4moe-f32.gguf", &err);
    if (m) {
        const model_layer_t *L = model_weights(m)->layers;
        tap_ok(!L[5].wv.data && L[4].wv.data && L[0].x_gate_up.data && L[0].x_down_scale && L[0].router_in_scale &&
                   L[0].x_up.data == (const uint8_t *)L[0].x_gate_up.data + 32 * L[0].x_gate_up.row_bytes,
               "gemma4moe: layer 5 takes K as V, fused gate|up experts viewed as two, expert and router scales");
        model_free(m);
    }
    m = load("tinygemma4-f32.gguf", &err);
    if (m) {
        const model_hparams_t *hp = model_hparams(m);
        const model_weights_t *w = model_weights(m);
        tap_ok(hp->n_embd_per_layer == 32 && w->ple_embd.n_in == 320 && w->layers[7].ple_gate.data &&
                   w->layers[2].out_scale && hp->n_kv_from == 5 && hp->head_dim_swa == 32 && hp->n_rot_swa == 32 &&
                   !w->layers[6].wk.data && hp->logit_softcap == 30.0f && model_kv_bytes_per_token(m) == 768,
               "gemma4: per-layer embeddings of 32, layer scales, KV from layer 5 on shared, window heads of 32, "
               "768 KV bytes per position");
        model_free(m);
    }
    /* qwen35moe's layer kinds come from full_attention_interval: with 4,
     * layer 1 would be a Gated DeltaNet layer, whose tensors it lacks */
    char out[512];
    snprintf(out, sizeof out, "%s/interval.gguf", tmp_dir);
    const edit_t e = {"interval 4", "tinyqwen35moe-f32.gguf", .set_u32 = "qwen35moe.full_attention_interval", .u32_val = 4};
    if (tap_ok(write_edit(&e, out), "qwen35moe with full_attention_interval 4 written")) {
        m = model_load(out, &err);
        tap_ok(!m && strstr(err.msg, "blk.1.attn_qkv.weight"),
               "qwen35moe, interval 4: layer 1 is taken as Gated DeltaNet (%s)", m ? "loaded" : err.msg);
        model_free(m);
        unlink(out);
    }
}

/* ---- LongRoPE factors (phi3): short within the trained context, long
 * beyond it, as llama.cpp chooses by the context size ---- */

/* tinyphi3 with rope_factors_short = 1 and rope_factors_long = 2 (24 each:
 * n_rot / 2) written to out. */
static bool write_longrope(const char *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tinyphi3-f32.gguf", models_dir);
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    gguf_writer_t *w = gguf_writer_create();
    bool ok = f && w;
    for (uint64_t i = 0; ok && i < gguf_n_kv(f); i++)
        if (!key_is(gguf_kv_at(f, i)->key, "general.alignment"))
            gguf_writer_copy_kv(w, gguf_kv_at(f, i));
    for (uint64_t i = 0; ok && i < gguf_n_tensors(f); i++) {
        const gguf_tensor_t *t = gguf_tensor_at(f, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_writer_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    float one[24], two[24];
    for (int i = 0; i < 24; i++)
        one[i] = 1.0f, two[i] = 2.0f;
    const int64_t ne[1] = {24};
    gguf_writer_tensor(w, "blk.0.rope_factors_short.weight", QTYPE_F32, 1, ne, one, sizeof one);
    gguf_writer_tensor(w, "blk.0.rope_factors_long.weight", QTYPE_F32, 1, ne, two, sizeof two);
    ok = ok && gguf_writer_write(w, out, &err) == LF_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

/* The logits after a 6-token prompt with a context of n_ctx. */
static float *logits_at(const model_t *m, int32_t n_ctx)
{
    fwd_opts_t o = {.n_seq = 1, .n_ctx = n_ctx, .max_batch = 8, .n_threads = 1};
    fwd_t *f = fwd_create(m, &o, NULL);
    const int32_t toks[6] = {1, 300, 301, 302, 303, 304};
    float *out = NULL;
    if (f && fwd_prefill(f, 0, toks, 6, true, NULL) == LF_OK) {
        const int32_t nv = model_hparams(m)->n_vocab;
        out = malloc((size_t)nv * sizeof *out);
        memcpy(out, fwd_logits(f, 0), (size_t)nv * sizeof *out);
    }
    fwd_free(f);
    return out;
}

static void test_longrope(void)
{
    char out[512];
    snprintf(out, sizeof out, "%s/longrope.gguf", tmp_dir);
    lf_err_t err;
    model_t *plain = load("tinyphi3-f32.gguf", &err);
    model_t *lr = write_longrope(out) ? model_load(out, &err) : NULL;
    if (tap_ok(plain && lr, "phi3 with LongRoPE factors loads")) {
        const size_t nv = (size_t)model_hparams(plain)->n_vocab;
        float *ref = logits_at(plain, 2048), *s = logits_at(lr, 2048), *l = logits_at(lr, 4096);
        tap_ok(ref && s && !memcmp(ref, s, nv * sizeof *ref),
               "context 2048 (= trained): the short factors (all 1) give the plain logits");
        tap_ok(ref && l && memcmp(ref, l, nv * sizeof *ref), "context 4096 (> trained): the long factors (2) apply");
        free(ref);
        free(s);
        free(l);
    }
    model_free(plain);
    model_free(lr);
    unlink(out);
}

/* ---- llama-server's prompt batching ---- */

static void test_prompt_order(void)
{
    lf_err_t err;
    model_t *full = load("tinyqwen3-f32.gguf", &err), *swa = load("tinygemma3-f32.gguf", &err);
    if (!tap_ok(full && swa, "fixtures for the prompt order"))
        goto done;
    fwd_opts_t o = {.n_seq = 1, .n_ctx = 4096, .max_batch = 16, .n_threads = 1};
    fwd_t *ff = fwd_create(full, &o, NULL), *fs = fwd_create(swa, &o, NULL);
    static const struct {
        int swa;
        int32_t n, pos;
        bool want;
        const char *why;
    } cases[] = {
        {0, 1, 0, false, "a one-token prompt is a decode step"},
        {1, 1, 0, false, "a one-token prompt is a decode step (window model)"},
        {0, 2, 0, true, "two tokens: one micro-batch"},
        {0, 5, 0, true, "full attention: a 5-token prompt is one batch"},
        {1, 5, 0, false, "window model: 5 tokens split 1 + 4 (checkpoint 4 before the end)"},
        {1, 5, 1, true, "window model: the last 4 tokens of 5 are a batch"},
        {1, 6, 0, true, "window model: 6 tokens split 2 + 4"},
        {1, 4, 0, true, "window model: 4 tokens, no split"},
        {0, 512, 511, true, "512 tokens: one micro-batch"},
        {0, 513, 512, false, "513 tokens: the last one alone in the second micro-batch"},
        {0, 513, 511, true, "513 tokens: the first 512 together"},
        {1, 517, 0, false, "window model: 517 = 1 + 512 + 4"},
        {1, 517, 1, true, "window model: 517, the middle batch"},
        {1, 517, 516, true, "window model: 517, the last 4"},
        {1, 518, 0, true, "window model: 518 = 2 + 512 + 4"},
        {0, 2049, 2048, false, "2049 tokens: a second batch of one"},
        {0, 2050, 2049, true, "2050 tokens: a second batch of two"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tap_ok(fwd_prompt_order(cases[i].swa ? fs : ff, cases[i].n, cases[i].pos) == cases[i].want, "%s",
               cases[i].why);
    /* a prefix is neither registered nor attached across a position in
     * the decode order: a 517-token prompt of a window model (position 0
     * alone) registers nothing, so a longer prompt never reuses a position
     * computed in the other order */
    int32_t *p = malloc(600 * sizeof *p);
    for (int i = 0; i < 600; i++)
        p[i] = 3 + i % 500;
    fwd_opts_t o2 = {.n_seq = 2, .n_ctx = 1024, .max_batch = 512, .n_threads = 2};
    fwd_t *f2 = fwd_create(swa, &o2, NULL);
    bool ok = f2 && fwd_prefill(f2, 0, p, 517, true, NULL) == LF_OK;
    fwd_seq_commit(f2, 0, p, 517);
    tap_ok(ok && fwd_seq_attach_prefix(f2, 1, p, 600) == 0, "a prompt with a decode-order position registers nothing");
    fwd_seq_rm(f2, 0);
    fwd_seq_rm(f2, 1);
    ok = fwd_prefill(f2, 0, p, 600, true, NULL) == LF_OK;
    fwd_seq_commit(f2, 0, p, 600);
    tap_ok(ok && fwd_seq_attach_prefix(f2, 1, p, 517) == 0, "nor attaches a prefix over one");
    free(p);
    fwd_free(f2);
    fwd_free(ff);
    fwd_free(fs);
done:
    model_free(full);
    model_free(swa);
}

/* ---- sliding-window KV memory ---- */

static void test_window_memory(void)
{
    lf_err_t err;
    model_t *m = load("tinygemma3-f32.gguf", &err);
    if (!tap_ok(m != NULL, "gemma3 fixture for the window memory"))
        return;
    const model_hparams_t *hp = model_hparams(m);
    fwd_opts_t o = {.n_seq = 1, .n_ctx = 2048, .max_batch = 64, .n_threads = 2};
    fwd_t *f = fwd_create(m, &o, NULL);
    const uint64_t full = model_kv_bytes_per_token(m) * 2048;
    tap_ok(f && fwd_kv_bytes(f) == fwd_kv_bytes_planned(m, &o), "the planned KV bytes are what fwd_create allocates");
    /* 1 global layer of 6 keeps the context; the 5 local ones a window of 32
     * plus a batch of 64 */
    tap_ok(fwd_kv_bytes(f) < full / 4, "window layers hold their window: %llu bytes instead of %llu",
           (unsigned long long)fwd_kv_bytes(f), (unsigned long long)full);
    int32_t p[700];
    for (int i = 0; i < 700; i++)
        p[i] = 3 + (i * 7) % 500;
    uint64_t used = 0;
    bool ok = fwd_prefill(f, 0, p, 700, true, NULL) == LF_OK;
    fwd_kv_usage_bytes(f, NULL, &used);
    const uint64_t per_pos = model_kv_bytes_per_token(m) / (uint64_t)hp->n_layer;
    tap_ok(ok && used < per_pos * (700 + 16) * 2 && used >= per_pos * 700,
           "a 700-position sequence holds its window in the local layers (%llu bytes in use)",
           (unsigned long long)used);
    fwd_free(f);
    /* a budget in bytes: the window pool first, then the global layers */
    fwd_opts_t ob = {.n_seq = 2, .n_ctx = 2048, .max_batch = 64, .n_threads = 1, .kv_bytes = 4 << 20};
    f = fwd_create(m, &ob, NULL);
    tap_ok(f && fwd_kv_bytes(f) <= (4u << 20) && fwd_kv_bytes(f) > (3u << 20), "a byte budget of 4 MiB: %llu bytes",
           f ? (unsigned long long)fwd_kv_bytes(f) : 0ull);
    fwd_free(f);
    model_free(m);
}

int main(void)
{
    models_dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/lf-families-XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        tap_ok(0, "temporary directory");
        return tap_done();
    }
    test_hparams();
    test_hybrids();
    test_edits();
    test_longrope();
    test_prompt_order();
    test_window_memory();
    rmdir(tmp_dir);
    return tap_done();
}
