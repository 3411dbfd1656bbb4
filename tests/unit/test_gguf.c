/* test_gguf.c - the GGUF loader accepts real files and rejects every kind of
 * malformed file with an error naming the file, never crashing. */
#include "engine/gguf/gguf.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a tiny GGUF writer for hand-made files ---- */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *src, size_t n)
{
    if (!n)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void u32(buf_t *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf_t *b, uint64_t v) { put(b, &v, 8); }
static void str(buf_t *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void pad_to(buf_t *b, size_t align)
{
    while (b->n % align)
        put(b, "", 1);
}

static char tmp_path[64];

static gguf_file_t *open_buf(const buf_t *b, lf_err_t *err)
{
    FILE *fp = fopen(tmp_path, "wb");
    if (b->n)
        fwrite(b->p, 1, b->n, fp);
    fclose(fp);
    return gguf_open(tmp_path, err);
}

/* Header + one u32 kv "general.alignment"? no: a "test.x" kv, then tensors. */
static void header(buf_t *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b->n = 0;
    put(b, "GGUF", 4);
    u32(b, version);
    u64(b, n_tensors);
    u64(b, n_kv);
}

static void tensor_info(buf_t *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                        uint64_t offset)
{
    str(b, name);
    u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        u64(b, ne[i]);
    u32(b, type);
    u64(b, offset);
}

/* A valid file: kv test.u32 = 7, test.name = "tiny", test.arr = [1.5,2.5],
 * test.strs = ["a","bc"], two f32 tensors of 8 and 4x2 values. */
static void valid_file(buf_t *b, uint32_t version)
{
    header(b, version, 2, 4);
    str(b, "test.u32"); u32(b, GGUF_VT_UINT32); u32(b, 7);
    str(b, "test.name"); u32(b, GGUF_VT_STRING); str(b, "tiny");
    str(b, "test.arr"); u32(b, GGUF_VT_ARRAY); u32(b, GGUF_VT_FLOAT32); u64(b, 2);
    float fa[2] = {1.5f, 2.5f};
    put(b, fa, 8);
    str(b, "test.strs"); u32(b, GGUF_VT_ARRAY); u32(b, GGUF_VT_STRING); u64(b, 2); str(b, "a"); str(b, "bc");
    uint64_t ne1[1] = {8}, ne2[2] = {4, 2};
    tensor_info(b, "a.weight", 1, ne1, QTYPE_F32, 0);
    tensor_info(b, "b.weight", 2, ne2, QTYPE_F32, 32);
    pad_to(b, 32);
    float data[16];
    for (int i = 0; i < 16; i++)
        data[i] = (float)i;
    put(b, data, sizeof data);
}

static int fails_with(const buf_t *b, lf_code_t code, const char *needle)
{
    lf_err_t err = {0};
    gguf_file_t *f = open_buf(b, &err);
    if (f) {
        gguf_close(f);
        tap_diag("unexpectedly opened");
        return 0;
    }
    int ok = err.code == code && strstr(err.msg, tmp_path) && (!needle || strstr(err.msg, needle));
    if (!ok)
        tap_diag("got [%s] %s", lf_code_name(err.code), err.msg);
    return ok;
}

static void test_valid(void)
{
    buf_t b = {0};
    for (uint32_t v = 2; v <= 3; v++) {
        valid_file(&b, v);
        lf_err_t err = {0};
        gguf_file_t *f = open_buf(&b, &err);
        tap_ok(f != NULL, "valid v%u file opens (%s)", v, f ? "" : err.msg);
        if (!f)
            continue;
        uint32_t x = 0;
        int32_t i32 = 0;
        uint64_t u = 0;
        gguf_str_t s;
        float fl;
        tap_ok(gguf_get_u32(f, "test.u32", &x) && x == 7, "u32 value");
        tap_ok(gguf_get_i32(f, "test.u32", &i32) && i32 == 7, "u32 read as i32");
        tap_ok(gguf_get_u64(f, "test.u32", &u) && u == 7, "u32 read as u64");
        tap_ok(!gguf_get_f32(f, "test.u32", &fl), "u32 is not a float");
        tap_ok(gguf_get_str(f, "test.name", &s) && gguf_str_eq(s, "tiny"), "string value");
        tap_ok(!gguf_get_str(f, "test.missing", &s), "missing key");
        const gguf_kv_t *arr = gguf_get_arr(f, "test.arr");
        float fa[2] = {0, 0};
        if (arr)
            memcpy(fa, arr->data, 8);
        tap_ok(arr && arr->arr_type == GGUF_VT_FLOAT32 && arr->arr_len == 2 && fa[1] == 2.5f, "float array");
        const gguf_kv_t *sa = gguf_get_arr(f, "test.strs");
        tap_ok(sa && sa->arr_len == 2 && gguf_str_eq(sa->strs[0], "a") && gguf_str_eq(sa->strs[1], "bc"),
               "string array");
        const gguf_tensor_t *t = gguf_find_tensor(f, "b.weight");
        tap_ok(t && t->ne[0] == 4 && t->ne[1] == 2 && t->size == 32 && ((const float *)t->data)[0] == 8.0f,
               "tensor view points at its data");
        tap_ok(gguf_n_tensors(f) == 2 && gguf_n_kv(f) == 4 && gguf_version(f) == v, "counts and version");
        tap_ok(gguf_find_tensor(f, "c.weight") == NULL, "missing tensor");
        gguf_close(f);
    }
    free(b.p);
}

static void test_alignment(void)
{
    buf_t b = {0};
    header(&b, 3, 1, 1);
    str(&b, "general.alignment"); u32(&b, GGUF_VT_UINT32); u32(&b, 64);
    uint64_t ne[1] = {4};
    tensor_info(&b, "t", 1, ne, QTYPE_F32, 0);
    pad_to(&b, 64);
    size_t data_at = b.n;
    float d[4] = {1, 2, 3, 4};
    put(&b, d, 16);
    lf_err_t err;
    gguf_file_t *f = open_buf(&b, &err);
    const gguf_tensor_t *t = f ? gguf_find_tensor(f, "t") : NULL;
    tap_ok(f && gguf_alignment(f) == 64 && t && (size_t)((const uint8_t *)t->data - (const uint8_t *)0) % 64 == data_at % 64 &&
               ((const float *)t->data)[3] == 4.0f,
           "general.alignment 64 honoured");
    gguf_close(f);

    header(&b, 3, 0, 1);
    str(&b, "general.alignment"); u32(&b, GGUF_VT_UINT32); u32(&b, 48);
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "alignment"), "non power-of-two alignment rejected");
    free(b.p);
}

typedef void (*mutate_fn)(buf_t *b);

static void m_magic(buf_t *b) { memcpy(b->p, "GGML", 4); }
static void m_version1(buf_t *b) { uint32_t v = 1; memcpy(b->p + 4, &v, 4); }
static void m_version4(buf_t *b) { uint32_t v = 4; memcpy(b->p + 4, &v, 4); }
static void m_ntensors(buf_t *b) { uint64_t v = 1ull << 60; memcpy(b->p + 8, &v, 8); }
static void m_nkv(buf_t *b) { uint64_t v = UINT64_MAX; memcpy(b->p + 16, &v, 8); }
static void m_nkv_more(buf_t *b) { uint64_t v = 5; memcpy(b->p + 16, &v, 8); }
static void m_keylen(buf_t *b) { uint64_t v = 1ull << 62; memcpy(b->p + 24, &v, 8); }
/* offset of the first kv's type: 24 + 8 + strlen("test.u32") */
static void m_kvtype(buf_t *b) { uint32_t v = 13; memcpy(b->p + 40, &v, 4); }

static const struct {
    const char *name;
    mutate_fn fn;
    const char *needle;
} mutations[] = {
    {"bad magic", m_magic, "magic"},
    {"version 1", m_version1, "version"},
    {"version 4", m_version4, "version"},
    {"absurd tensor count", m_ntensors, "tensor count"},
    {"absurd metadata count", m_nkv, "metadata count"},
    {"metadata count larger than present", m_nkv_more, NULL},
    {"absurd key length", m_keylen, "truncated"},
    {"invalid value type", m_kvtype, "invalid type"},
};

static void test_mutations(void)
{
    buf_t b = {0};
    for (size_t i = 0; i < sizeof mutations / sizeof mutations[0]; i++) {
        valid_file(&b, 3);
        mutations[i].fn(&b);
        tap_ok(fails_with(&b, LF_ERR_FORMAT, mutations[i].needle), "rejects %s", mutations[i].name);
    }
    free(b.p);
}

/* Files whose tensor infos lie: built one by one. */
static void test_bad_tensors(void)
{
    buf_t b = {0};
    uint64_t ne4[1] = {4}, ne5[5] = {4, 1, 1, 1, 1}, ne_big[2] = {1ull << 40, 1ull << 40}, ne33[1] = {33};
    float d[8] = {0};
    struct {
        const char *name, *needle;
        uint32_t n_dims, type;
        const uint64_t *ne;
        uint64_t off2;
        int second;
    } cases[] = {
        {"unknown tensor type", "unknown type", 1, 4, ne4, 0, 0},
        {"type id far out of range", "unknown type", 1, 1000, ne4, 0, 0},
        {"zero dimensions", "dimensions", 0, QTYPE_F32, ne4, 0, 0},
        {"five dimensions", "dimensions", 5, QTYPE_F32, ne5, 0, 0},
        {"absurd shape", "larger than the file", 2, QTYPE_F32, ne_big, 0, 0},
        {"row not a multiple of block", "block size", 1, QTYPE_Q8_0, ne33, 0, 0},
        {"overlapping tensors", "overlaps", 1, QTYPE_F32, ne4, 0, 1},
        {"misaligned offset", "not aligned", 1, QTYPE_F32, ne4, 8, 1},
        {"data out of range", "outside the file", 1, QTYPE_F32, ne4, 4096, 1},
        {"duplicate tensor name", "duplicate", 1, QTYPE_F32, ne4, 32, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        header(&b, 3, cases[i].second ? 2 : 1, 0);
        tensor_info(&b, "t0", cases[i].n_dims, cases[i].ne, cases[i].type, 0);
        if (cases[i].second)
            tensor_info(&b, cases[i].second == 2 ? "t0" : "t1", 1, ne4, QTYPE_F32, cases[i].off2);
        pad_to(&b, 32);
        put(&b, d, sizeof d);
        put(&b, d, sizeof d);
        tap_ok(fails_with(&b, LF_ERR_FORMAT, cases[i].needle), "rejects %s", cases[i].name);
    }
    /* duplicate key */
    header(&b, 3, 0, 2);
    str(&b, "k"); u32(&b, GGUF_VT_UINT8); put(&b, "x", 1);
    str(&b, "k"); u32(&b, GGUF_VT_UINT8); put(&b, "y", 1);
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "duplicate"), "rejects duplicate key");
    /* absurd array length and nested array */
    header(&b, 3, 0, 1);
    str(&b, "a"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_UINT32); u64(&b, 1ull << 61);
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "exceeds"), "rejects absurd array length");
    header(&b, 3, 0, 1);
    str(&b, "a"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_STRING); u64(&b, 1ull << 40);
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "exceeds"), "rejects absurd string array length");
    header(&b, 3, 0, 1);
    str(&b, "a"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_ARRAY); u64(&b, 1);
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "element type"), "rejects nested arrays");
    /* empty file, missing file */
    b.n = 0;
    tap_ok(fails_with(&b, LF_ERR_FORMAT, "truncated"), "rejects an empty file");
    lf_err_t err;
    tap_ok(!gguf_open("/nonexistent/x.gguf", &err) && err.code == LF_ERR_IO && strstr(err.msg, "x.gguf"),
           "missing file is an I/O error naming it");
    free(b.p);
}

/* A real model truncated at many offsets must always fail cleanly. */
static void test_truncated_real(const char *models)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K.gguf", models);
    FILE *fp = fopen(path, "rb");
    if (!tap_ok(fp != NULL, "fixture %s present", path))
        return;
    buf_t full = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        put(&full, chunk, n);
    fclose(fp);
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    tap_ok(f != NULL, "real file opens");
    gguf_close(f);
    int tried = 0, clean = 0;
    buf_t b = {0};
    /* every byte of the first 8 KiB (header and metadata), then strides */
    for (size_t cut = 0; cut < full.n; cut += cut < 8192 ? 1 : 4099) {
        b.n = 0;
        put(&b, full.p, cut);
        tried++;
        if (fails_with(&b, LF_ERR_FORMAT, NULL))
            clean++;
    }
    tap_ok(tried == clean, "truncated copies rejected cleanly: %d of %d", clean, tried);
    free(b.p);
    free(full.p);
}

int main(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/test_gguf_%d.gguf", (int)getpid());
    test_valid();
    test_alignment();
    test_mutations();
    test_bad_tensors();
    test_truncated_real(tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    unlink(tmp_path);
    return tap_done();
}
