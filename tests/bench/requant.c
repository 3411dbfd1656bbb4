/* requant.c - rewrites a GGUF with its 2-D weights in Q8_0.
 *
 *   requant IN.gguf OUT.gguf
 *
 * For making benchmark models that are not in ../shared/models, e.g.
 *   requant bench100m-q4_k_m.gguf /tmp/bench100m-q8_0.gguf
 * gives a Q8_0 model with the shapes and types of llama.cpp's
 * bench100m-q8_0.gguf (not its values: those came from the F16 original,
 * these from the dequantized Q4_K_M weights). Never commit the output.
 *
 * What llama-quantize does for the Q8_0 file type, which this follows:
 * every tensor with 2 or more dims whose rows are a multiple of 32 wide
 * becomes Q8_0, quantized with ggml's reference quantize_row_q8_0_ref
 * (d = amax / 127, stored as fp16; q = roundf(x * (1 / d)), i.e. halves
 * away from zero - not the AVX2 activation rounding of quant_act.c); other
 * weights are dequantized with quant_dequantize_row (the engine's exact
 * ggml formulas). Rows that are not a multiple of 32 wide (llama-quantize
 * refuses those) become F16, as ggquant.py did for stories260K-q8_0.gguf;
 * 1-D tensors (norms, biases) are copied unchanged. The metadata is copied
 * in order, then general.quantization_version = 2 and general.file_type =
 * 7 (MOSTLY_Q8_0) at the end, where llama-quantize puts them (and
 * general.architecture first); tensors are written in llama-quantize's
 * order (by layer, then by name).
 * tests/bench/requant_test.sh checks the result against llama-quantize's
 * own files byte for byte.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/gguf/gguf.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "fixtures/gguf_writer.h"

#define FTYPE_MOSTLY_Q8_0 7u

/* ggml quantize_row_q8_0_ref */
static void quantize_row_q8_0_ref(const float *x, block_q8_0 *y, int64_t n)
{
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = fp16_from_fp32(d);
        for (int j = 0; j < QK8_0; j++)
            y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* llama.cpp's weight_name_comparer (the order llama-quantize writes):
 * by layer number ("blk.N.", -1 for the others), then by name. */
static int tensor_layer(const gguf_str_t *n)
{
    char buf[32];
    int layer = -1;
    snprintf(buf, sizeof buf, "%.*s", (int)(n->len < 31 ? n->len : 31), n->ptr);
    if (sscanf(buf, "blk.%d.", &layer) != 1)
        layer = -1;
    return layer;
}

static int cmp_weight_names(const void *a, const void *b)
{
    const gguf_tensor_t *x = *(const gguf_tensor_t *const *)a, *y = *(const gguf_tensor_t *const *)b;
    int lx = tensor_layer(&x->name), ly = tensor_layer(&y->name);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    if (c)
        return c;
    return x->name.len < y->name.len ? -1 : x->name.len > y->name.len;
}

static bool key_is(const gguf_kv_t *kv, const char *k)
{
    return kv->key.len == strlen(k) && !memcmp(kv->key.ptr, k, kv->key.len);
}

/* The tensor in its new type: malloc'd data, *type and *nbytes set. */
static void *convert(const gguf_tensor_t *t, qtype_t *type, size_t *nbytes, lf_err_t *err)
{
    const int64_t n_in = t->ne[0];
    const int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    if (t->n_dims < 2 || t->type == QTYPE_Q8_0) {
        *type = t->type;
        *nbytes = t->size;
        void *p = malloc(t->size ? t->size : 1);
        if (p)
            memcpy(p, t->data, t->size);
        else
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return p;
    }
    if (!quant_can_dequantize(t->type)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "tensor '%.*s': cannot dequantize %s", (int)t->name.len, t->name.ptr,
                   qtype_name(t->type));
        return NULL;
    }
    *type = n_in % QK8_0 == 0 ? QTYPE_Q8_0 : QTYPE_F16;
    const size_t in_row = qtype_row_size(t->type, n_in), out_row = qtype_row_size(*type, n_in);
    *nbytes = out_row * (size_t)rows;
    unsigned char *out = malloc(*nbytes ? *nbytes : 1);
    float *row = malloc((size_t)n_in * sizeof *row);
    if (!out || !row) {
        free(out);
        free(row);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int64_t r = 0; r < rows; r++) {
        quant_dequantize_row(t->type, (const unsigned char *)t->data + (size_t)r * in_row, row, n_in);
        unsigned char *dst = out + (size_t)r * out_row;
        if (*type == QTYPE_Q8_0) {
            quantize_row_q8_0_ref(row, (block_q8_0 *)dst, n_in);
        } else {
            for (int64_t j = 0; j < n_in; j++) {
                uint16_t h = fp16_from_fp32(row[j]);
                memcpy(dst + 2 * j, &h, 2);
            }
        }
    }
    free(row);
    return out;
}

static lf_code_t requant(const char *in, const char *out, lf_err_t *err)
{
    gguf_file_t *f = gguf_open(in, err);
    if (!f)
        return err->code;
    gguf_writer_t *w = gguf_writer_create();
    lf_code_t rc = w ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    const gguf_kv_t *arch = gguf_find_kv(f, "general.architecture");
    if (arch)
        rc = gguf_writer_copy_kv(w, arch); /* first, as gguf-py writes it */
    for (uint64_t i = 0; rc == LF_OK && i < gguf_n_kv(f); i++) {
        const gguf_kv_t *kv = gguf_kv_at(f, i);
        /* the writer aligns to 32 (the default); the two keys below are
         * set last, as llama-quantize's gguf_set_val_u32 moves them */
        if (kv != arch && !key_is(kv, "general.alignment") && !key_is(kv, "general.file_type") &&
            !key_is(kv, "general.quantization_version"))
            rc = gguf_writer_copy_kv(w, kv);
    }
    if (rc == LF_OK)
        rc = gguf_writer_u32(w, "general.quantization_version", 2);
    if (rc == LF_OK)
        rc = gguf_writer_u32(w, "general.file_type", FTYPE_MOSTLY_Q8_0);
    if (rc != LF_OK && err->msg[0] == '\0')
        lf_err_set(err, rc, "%s: cannot copy the metadata", in);
    const uint64_t n_t = gguf_n_tensors(f);
    const gguf_tensor_t **order = malloc((n_t ? n_t : 1) * sizeof *order);
    if (!order && rc == LF_OK)
        rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; order && i < n_t; i++)
        order[i] = gguf_tensor_at(f, i);
    if (order)
        qsort(order, n_t, sizeof *order, cmp_weight_names);
    for (uint64_t i = 0; rc == LF_OK && i < n_t; i++) {
        const gguf_tensor_t *t = order[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 255 ? t->name.len : 255), t->name.ptr);
        qtype_t type;
        size_t nbytes;
        void *data = convert(t, &type, &nbytes, err);
        if (!data) {
            rc = err->code;
            break;
        }
        rc = gguf_writer_tensor_take(w, name, type, t->n_dims, t->ne, data, nbytes);
        if (rc != LF_OK)
            lf_err_set(err, rc, "tensor '%s': cannot add it", name);
    }
    if (rc == LF_OK)
        rc = gguf_writer_write(w, out, err);
    free(order);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: requant IN.gguf OUT.gguf   (2-D weights -> Q8_0)\n");
        return 2;
    }
    lf_err_t err = {0};
    if (requant(argv[1], argv[2], &err) != LF_OK) {
        fprintf(stderr, "requant: %s\n", err.msg);
        return 1;
    }
    return 0;
}
