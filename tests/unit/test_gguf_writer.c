/* test_gguf_writer.c - tests/fixtures/gguf_writer.h against the engine's
 * reader (gguf.h): every value type written comes back, tensors keep
 * type, shape, data and alignment, copy_kv reproduces a file's metadata,
 * and bad tensors or paths are errors that stick. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gguf/gguf.h"
#include "fixtures/gguf_writer.h"
#include "tap.h"

static char dir[] = "/tmp/llm-gguf-writer-XXXXXX";

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

static const char *const strs[] = {"alpha", "", "g\xc3\xa4mma"};
static const float f32s[] = {1.5f, -2.25f, 0.0f};
static const int32_t i32s[] = {7, -8, 1 << 30};

static lf_code_t fill(gguf_writer_t *w, float *t1, uint16_t *t2, unsigned char *t3)
{
    gguf_writer_str(w, "general.architecture", "llama", 5);
    gguf_writer_u32(w, "k.u32", 4000000000u);
    gguf_writer_i32(w, "k.i32", -5);
    gguf_writer_f32(w, "k.f32", 0.125f);
    gguf_writer_bool(w, "k.bool", true);
    gguf_writer_str(w, "k.str", "a\0b", 3);
    gguf_writer_arr_str(w, "k.astr", strs, NULL, 3);
    gguf_writer_arr_f32(w, "k.af32", f32s, 3);
    gguf_writer_arr_i32(w, "k.ai32", i32s, 3);
    for (int i = 0; i < 5; i++)
        t1[i] = (float)i - 2.0f;
    for (int i = 0; i < 64 * 3; i++)
        t2[i] = (uint16_t)(i * 7);
    for (int i = 0; i < 34 * 4; i++)
        t3[i] = (unsigned char)(i * 13);
    gguf_writer_tensor(w, "t.f32", QTYPE_F32, 1, (const int64_t[]){5}, t1, 5 * sizeof(float));
    gguf_writer_tensor(w, "t.f16", QTYPE_F16, 2, (const int64_t[]){64, 3}, t2, 64 * 3 * 2);
    return gguf_writer_tensor(w, "t.q8", QTYPE_Q8_0, 3, (const int64_t[]){64, 1, 2}, t3, 34 * 4);
}

static void test_roundtrip(void)
{
    char path[256], copy[256];
    path_of(path, sizeof path, "a.gguf");
    path_of(copy, sizeof copy, "b.gguf");
    float t1[5];
    uint16_t t2[64 * 3];
    unsigned char t3[34 * 4];
    gguf_writer_t *w = gguf_writer_create();
    lf_err_t err;
    tap_ok(w && fill(w, t1, t2, t3) == LF_OK, "adding key/values and tensors");
    tap_ok(gguf_writer_write(w, path, &err) == LF_OK, "write");
    gguf_writer_free(w);
    gguf_file_t *f = gguf_open(path, &err);
    if (!tap_ok(f != NULL, "the reader opens the file")) {
        tap_diag("%s", err.msg);
        return;
    }
    uint32_t u = 0;
    int32_t i = 0;
    float x = 0;
    bool b = false;
    gguf_str_t s = {0};
    tap_ok(gguf_version(f) == 3 && gguf_n_kv(f) == 9 && gguf_n_tensors(f) == 3, "v3, 9 keys, 3 tensors");
    tap_ok(gguf_get_u32(f, "k.u32", &u) && u == 4000000000u, "u32");
    tap_ok(gguf_get_i32(f, "k.i32", &i) && i == -5, "i32");
    tap_ok(gguf_get_f32(f, "k.f32", &x) && x == 0.125f, "f32");
    tap_ok(gguf_get_bool(f, "k.bool", &b) && b, "bool");
    tap_ok(gguf_get_str(f, "k.str", &s) && s.len == 3 && !memcmp(s.ptr, "a\0b", 3), "string with a NUL byte");
    const gguf_kv_t *a = gguf_get_arr(f, "k.astr");
    tap_ok(a && a->arr_type == GGUF_VT_STRING && a->arr_len == 3 && a->strs[1].len == 0 &&
               a->strs[2].len == strlen(strs[2]) && !memcmp(a->strs[2].ptr, strs[2], a->strs[2].len),
           "string array");
    a = gguf_get_arr(f, "k.af32");
    tap_ok(a && a->arr_type == GGUF_VT_FLOAT32 && a->arr_len == 3 && !memcmp(a->data, f32s, sizeof f32s), "f32 array");
    a = gguf_get_arr(f, "k.ai32");
    tap_ok(a && a->arr_type == GGUF_VT_INT32 && a->arr_len == 3 && !memcmp(a->data, i32s, sizeof i32s), "i32 array");
    static const struct {
        const char *name;
        qtype_t type;
        uint32_t n_dims;
        int64_t ne[4];
    } want[] = {
        {"t.f32", QTYPE_F32, 1, {5, 1, 1, 1}},
        {"t.f16", QTYPE_F16, 2, {64, 3, 1, 1}},
        {"t.q8", QTYPE_Q8_0, 3, {64, 1, 2, 1}},
    };
    const void *data[] = {t1, t2, t3};
    for (int k = 0; k < 3; k++) {
        const gguf_tensor_t *t = gguf_find_tensor(f, want[k].name);
        tap_ok(t && t->type == want[k].type && t->n_dims == want[k].n_dims && !memcmp(t->ne, want[k].ne, sizeof t->ne) &&
                   t->offset % 32 == 0 && !memcmp(t->data, data[k], t->size),
               "tensor %s: type, shape, 32-byte aligned offset, data", want[k].name);
    }
    /* copy every key/value into a new file: the same metadata */
    gguf_writer_t *w2 = gguf_writer_create();
    lf_code_t rc = LF_OK;
    for (uint64_t k = 0; w2 && rc == LF_OK && k < gguf_n_kv(f); k++)
        rc = gguf_writer_copy_kv(w2, gguf_kv_at(f, k));
    tap_ok(w2 && rc == LF_OK && gguf_writer_write(w2, copy, &err) == LF_OK, "copy_kv of every key, written");
    gguf_writer_free(w2);
    gguf_file_t *g = gguf_open(copy, &err);
    int same = g && gguf_n_kv(g) == gguf_n_kv(f);
    for (uint64_t k = 0; same && k < gguf_n_kv(f); k++) {
        const gguf_kv_t *p = gguf_kv_at(f, k), *q = gguf_kv_at(g, k);
        same = p->key.len == q->key.len && !memcmp(p->key.ptr, q->key.ptr, p->key.len) && p->type == q->type &&
               p->arr_type == q->arr_type && p->arr_len == q->arr_len;
    }
    long sz_meta = g ? (long)gguf_file_size(g) : 0;
    tap_ok(same && sz_meta > 0, "the copy has the same keys, types and lengths in the same order");
    gguf_close(g);
    gguf_close(f);
}

static void test_errors(void)
{
    char path[256];
    path_of(path, sizeof path, "bad.gguf");
    float v[64] = {0};
    static const struct {
        const char *name;
        qtype_t type;
        uint32_t n_dims;
        int64_t ne[2];
        size_t nbytes;
    } bad[] = {
        {"size too small", QTYPE_F32, 1, {64, 1}, 4 * 63},
        {"size too large", QTYPE_F32, 2, {8, 2}, 4 * 17},
        {"row not a whole block", QTYPE_Q8_0, 1, {33, 1}, 34},
        {"no dims", QTYPE_F32, 0, {64, 1}, 4 * 64},
        {"five dims", QTYPE_F32, 5, {64, 1}, 4 * 64},
        {"zero-length dim", QTYPE_F32, 2, {64, 0}, 0},
        {"unknown type", (qtype_t)99, 1, {64, 1}, 4 * 64},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        gguf_writer_t *w = gguf_writer_create();
        lf_err_t err = {0};
        lf_code_t rc = gguf_writer_tensor(w, "t", bad[k].type, bad[k].n_dims, bad[k].ne, v, bad[k].nbytes);
        lf_code_t later = gguf_writer_u32(w, "k", 1);
        lf_code_t wr = gguf_writer_write(w, path, &err);
        tap_ok(rc == LF_ERR_INVALID && later == LF_ERR_INVALID && wr == LF_ERR_INVALID && access(path, F_OK) != 0,
               "%s: invalid, the error sticks, no file", bad[k].name);
        gguf_writer_free(w);
    }
    gguf_writer_t *w = gguf_writer_create();
    lf_err_t err = {0};
    tap_ok(gguf_writer_write(w, "/nonexistent-dir/x.gguf", &err) == LF_ERR_IO && strstr(err.msg, "/nonexistent-dir"),
           "an unwritable path: LF_ERR_IO naming it");
    gguf_writer_free(w);
    gguf_writer_free(NULL);
}

int main(void)
{
    if (!tap_ok(mkdtemp(dir) != NULL, "temporary directory"))
        return tap_done();
    test_roundtrip();
    test_errors();
    char p[256];
    const char *names[] = {"a.gguf", "b.gguf", "bad.gguf"};
    for (int i = 0; i < 3; i++) {
        path_of(p, sizeof p, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return tap_done();
}
