/* test_qtype_load.c - which weight types a model may carry, end to end
 * through model_load: tiny256-f32.gguf is rewritten with one matrix
 * (blk.0.ffn_down.weight, 768 x 256) in another type.
 *  - IQ4_NL, IQ4_XS, MXFP4 (random blocks with sane scales): the model
 *    loads and one decode step gives finite logits.
 *  - Types ggml knows but the engine does not compute with: model_load
 *    fails with LF_ERR_UNSUPPORTED, and the message names the file, the
 *    tensor, the type and the supported types (new ones included).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gguf/gguf.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "fixtures/gguf_writer.h"
#include "quant_test_util.h"
#include "tap.h"

#define SWAPPED "blk.0.ffn_down.weight"

/* Writes src with SWAPPED replaced by random blocks of type t. */
static bool write_variant(const gguf_file_t *src, qtype_t t, const char *path)
{
    gguf_writer_t *w = gguf_writer_create();
    if (!w)
        return false;
    for (uint64_t i = 0; i < gguf_n_kv(src); i++)
        gguf_writer_copy_kv(w, gguf_kv_at(src, i));
    for (uint64_t i = 0; i < gguf_n_tensors(src); i++) {
        const gguf_tensor_t *ti = gguf_tensor_at(src, i);
        char *name = gguf_str_dup(ti->name);
        if (!name)
            break;
        if (!strcmp(name, SWAPPED)) {
            const qtype_info_t *q = qtype_info(t);
            const int64_t nb = ti->ne[0] / q->block_size * ti->ne[1];
            const size_t bytes = (size_t)nb * (size_t)q->type_size;
            void *data = malloc(bytes);
            if (data)
                qt_random_blocks(t, data, nb);
            gguf_writer_tensor_take(w, name, t, ti->n_dims, ti->ne, data, bytes);
        } else {
            gguf_writer_tensor(w, name, ti->type, ti->n_dims, ti->ne, ti->data, ti->size);
        }
        free(name);
    }
    lf_err_t err;
    bool ok = gguf_writer_write(w, path, &err) == LF_OK;
    if (!ok)
        tap_diag("write %s: %s", path, err.msg);
    gguf_writer_free(w);
    return ok;
}

static void test_supported(const gguf_file_t *src, const char *dir, qtype_t t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, qtype_name(t));
    lf_err_t err = {0};
    model_t *m = write_variant(src, t, path) ? model_load(path, &err) : NULL;
    bool finite = false;
    if (m) {
        fwd_opts_t opts = {.n_seq = 1, .n_ctx = 64, .max_batch = 8, .n_threads = 1};
        fwd_t *fw = fwd_create(m, &opts, &err);
        fwd_tok_t tok = {1, 0, 0, true, false};
        if (fw && fwd_decode(fw, &tok, 1, &err) == LF_OK) {
            const float *l = fwd_logits(fw, 0);
            finite = true;
            for (int i = 0; i < model_hparams(m)->n_vocab; i++)
                finite &= isfinite(l[i]) != 0;
        }
        fwd_free(fw);
    }
    tap_ok(m && finite, "%s weights: the model loads and decodes to finite logits (%s)", qtype_name(t),
           m ? "ok" : err.msg);
    model_free(m);
    unlink(path);
}

static void test_refused(const gguf_file_t *src, const char *dir, uint32_t id)
{
    char path[1024];
    const char *name = qtype_name(id);
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    lf_err_t err = {0};
    model_t *m = write_variant(src, (qtype_t)id, path) ? model_load(path, &err) : NULL;
    char want_type[64];
    snprintf(want_type, sizeof want_type, "has type %s,", name);
    tap_ok(!m && err.code == LF_ERR_UNSUPPORTED && strstr(err.msg, path) && strstr(err.msg, SWAPPED) &&
               strstr(err.msg, want_type) && strstr(err.msg, "iq4_nl, iq4_xs") && strstr(err.msg, "mxfp4"),
           "%s weights refused naming the type: %s", name, err.msg);
    model_free(m);
    unlink(path);
}

int main(void)
{
    const char *models = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    char src_path[1024], dir[] = "/tmp/llm-qtype-load.XXXXXX";
    snprintf(src_path, sizeof src_path, "%s/tiny256-f32.gguf", models);
    lf_err_t err;
    gguf_file_t *src = gguf_open(src_path, &err);
    if (!tap_ok(src && mkdtemp(dir), "tiny256-f32.gguf opens, temp dir"))
        return tap_done();
    static const qtype_t ok_types[] = {QTYPE_IQ4_NL, QTYPE_IQ4_XS, QTYPE_MXFP4};
    for (size_t i = 0; i < sizeof ok_types / sizeof ok_types[0]; i++)
        test_supported(src, dir, ok_types[i]);
    /* IQ2/IQ3/IQ1, ternary, NVFP4, ggml's newest Q1_0/Q2_0, and Q8_K (an
     * activation type, never a weight) */
    static const uint32_t refused[] = {16, 17, 18, 19, 21, 22, 29, 34, 35, 40, 41, 42, QTYPE_Q8_K};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        test_refused(src, dir, refused[i]);
    gguf_close(src);
    rmdir(dir);
    return tap_done();
}
