/* gguf.c - GGUF parsing and validation over a read-only mapping.
 *
 * The parser is a cursor over [map, map + size): every read goes through
 * cur_need(), which fails instead of reading past the end, so a truncated or
 * lying file can only produce an error. Counts read from the file are
 * bounded by the bytes left before anything is allocated for them.
 */
#include "engine/gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

/* Open-addressing index of (ptr,len) names -> entry number, so lookups and
 * duplicate checks stay linear even for files with millions of entries. */
typedef struct {
    uint64_t *slots; /* entry + 1, 0 = empty */
    uint64_t mask;
} name_index_t;

struct gguf_file {
    char *path;
    const uint8_t *map;
    uint64_t size;
    uint32_t version;
    uint32_t alignment;
    uint64_t n_kv;
    gguf_kv_t *kv;
    uint64_t n_tensors;
    gguf_tensor_t *tensors;
    /* storage for string views: one per string value and array element */
    gguf_str_t *str_pool;
    uint64_t str_pool_len, str_pool_cap;
    name_index_t kv_index, tensor_index;
};

static uint64_t name_hash(const char *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

static bool index_init(name_index_t *ix, uint64_t n)
{
    uint64_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    return ix->slots != NULL;
}

/* Finds name among entries (name of entry i given by get(ctx, i)); returns
 * the entry number or UINT64_MAX. With insert_as != UINT64_MAX, inserts it
 * when absent. */
static uint64_t index_lookup(const name_index_t *ix, const char *p, uint64_t n,
                             gguf_str_t (*get)(const gguf_file_t *, uint64_t), const gguf_file_t *f,
                             uint64_t insert_as)
{
    if (!ix->slots)
        return UINT64_MAX;
    for (uint64_t h = name_hash(p, n) & ix->mask;; h = (h + 1) & ix->mask) {
        uint64_t e = ix->slots[h];
        if (!e) {
            if (insert_as != UINT64_MAX)
                ix->slots[h] = insert_as + 1;
            return UINT64_MAX;
        }
        gguf_str_t s = get(f, e - 1);
        if (s.len == n && !memcmp(s.ptr, p, n))
            return e - 1;
    }
}

static gguf_str_t kv_name(const gguf_file_t *f, uint64_t i) { return f->kv[i].key; }
static gguf_str_t tensor_name(const gguf_file_t *f, uint64_t i) { return f->tensors[i].name; }

/* A printable, bounded copy of a name for error messages. */
static const char *name_for_msg(gguf_str_t s, char buf[128])
{
    snprintf(buf, 128, "%.*s", (int)(s.len < 100 ? s.len : 100), s.ptr);
    return buf;
}

typedef struct {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    const char *path;
    lf_err_t *err;
} cursor_t;

static lf_code_t fail(cursor_t *c, const char *fmt, const char *what, uint64_t a)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what, (unsigned long long)a);
    return lf_err_set(c->err, LF_ERR_FORMAT, "%s: %s (at byte %llu of %llu)", c->path, msg,
                      (unsigned long long)c->pos, (unsigned long long)c->size);
}

/* True if n more bytes can be read; otherwise records a truncation error. */
static bool cur_need(cursor_t *c, uint64_t n, const char *what)
{
    if (n <= c->size - c->pos)
        return true;
    fail(c, "truncated file: %s needs %llu more bytes", what, n);
    return false;
}

static bool cur_u32(cursor_t *c, uint32_t *v, const char *what)
{
    if (!cur_need(c, 4, what))
        return false;
    memcpy(v, c->base + c->pos, 4);
    c->pos += 4;
    return true;
}

static bool cur_u64(cursor_t *c, uint64_t *v, const char *what)
{
    if (!cur_need(c, 8, what))
        return false;
    memcpy(v, c->base + c->pos, 8);
    c->pos += 8;
    return true;
}

static bool cur_str(cursor_t *c, gguf_str_t *s, const char *what)
{
    uint64_t len;
    if (!cur_u64(c, &len, what))
        return false;
    if (!cur_need(c, len, what))
        return false;
    s->ptr = (const char *)c->base + c->pos;
    s->len = len;
    c->pos += len;
    return true;
}

static uint64_t vtype_size(gguf_vtype_t t)
{
    switch (t) {
    case GGUF_VT_UINT8: case GGUF_VT_INT8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_UINT16: case GGUF_VT_INT16: return 2;
    case GGUF_VT_UINT32: case GGUF_VT_INT32: case GGUF_VT_FLOAT32: return 4;
    case GGUF_VT_UINT64: case GGUF_VT_INT64: case GGUF_VT_FLOAT64: return 8;
    default: return 0; /* strings and arrays have no fixed size */
    }
}

static gguf_str_t *pool_take(gguf_file_t *f, uint64_t n, cursor_t *c)
{
    if (f->str_pool_len + n > f->str_pool_cap) {
        uint64_t cap = f->str_pool_cap ? f->str_pool_cap : 64;
        while (cap < f->str_pool_len + n)
            cap *= 2;
        gguf_str_t *p = realloc(f->str_pool, cap * sizeof *p);
        if (!p) {
            lf_err_set(c->err, LF_ERR_NOMEM, "%s: out of memory for %llu strings", c->path,
                       (unsigned long long)n);
            return NULL;
        }
        f->str_pool = p;
        f->str_pool_cap = cap;
    }
    gguf_str_t *s = f->str_pool + f->str_pool_len;
    f->str_pool_len += n;
    return s;
}

/* Parses one value of type t into kv. The string views are recorded as pool
 * indexes first (the pool may move) and turned into pointers at the end. */
static bool parse_value(gguf_file_t *f, cursor_t *c, gguf_kv_t *kv, uint64_t *pool_index)
{
    if (kv->type == GGUF_VT_STRING) {
        gguf_str_t *s = pool_take(f, 1, c);
        if (!s)
            return false;
        *pool_index = f->str_pool_len - 1;
        return cur_str(c, s, "string value");
    }
    if (kv->type == GGUF_VT_ARRAY) {
        uint32_t et;
        if (!cur_u32(c, &et, "array type") || !cur_u64(c, &kv->arr_len, "array length"))
            return false;
        if (et >= GGUF_VT_COUNT || et == GGUF_VT_ARRAY) {
            fail(c, "%s has an invalid array element type %llu", "metadata array", et);
            return false;
        }
        kv->arr_type = (gguf_vtype_t)et;
        if (et == GGUF_VT_STRING) {
            /* each element needs at least its 8-byte length */
            if (kv->arr_len > (c->size - c->pos) / 8) {
                fail(c, "%s length %llu exceeds the file", "string array", kv->arr_len);
                return false;
            }
            gguf_str_t *s = pool_take(f, kv->arr_len, c);
            if (!s)
                return false;
            *pool_index = f->str_pool_len - kv->arr_len;
            for (uint64_t i = 0; i < kv->arr_len; i++)
                if (!cur_str(c, &f->str_pool[*pool_index + i], "string array element"))
                    return false;
            return true;
        }
        uint64_t es = vtype_size(kv->arr_type);
        if (kv->arr_len > (c->size - c->pos) / es) {
            fail(c, "%s length %llu exceeds the file", "array", kv->arr_len);
            return false;
        }
        kv->data = c->base + c->pos;
        c->pos += kv->arr_len * es;
        return true;
    }
    uint64_t sz = vtype_size(kv->type);
    if (!sz) {
        fail(c, "%s has an invalid value type %llu", "metadata key", kv->type);
        return false;
    }
    if (!cur_need(c, sz, "metadata value"))
        return false;
    kv->data = c->base + c->pos;
    c->pos += sz;
    return true;
}

bool gguf_str_eq(gguf_str_t s, const char *cstr)
{
    size_t n = strlen(cstr);
    return s.len == n && !memcmp(s.ptr, cstr, n);
}

char *gguf_str_dup(gguf_str_t s)
{
    char *p = malloc(s.len + 1);
    if (p) {
        memcpy(p, s.ptr, s.len);
        p[s.len] = 0;
    }
    return p;
}

static bool parse_kvs(gguf_file_t *f, cursor_t *c)
{
    /* a key/value pair takes at least 8 (key len) + 4 (type) + 1 bytes */
    if (f->n_kv > (c->size - c->pos) / 13)
        return fail(c, "%s count %llu is larger than the file can hold", "metadata", f->n_kv), false;
    f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
    uint64_t *pool_index = calloc(f->n_kv ? f->n_kv : 1, sizeof *pool_index);
    bool ok = f->kv && pool_index && index_init(&f->kv_index, f->n_kv);
    if (!ok)
        lf_err_set(c->err, LF_ERR_NOMEM, "%s: out of memory", c->path);
    for (uint64_t i = 0; ok && i < f->n_kv; i++) {
        gguf_kv_t *kv = &f->kv[i];
        uint32_t t;
        pool_index[i] = UINT64_MAX;
        ok = cur_str(c, &kv->key, "metadata key") && cur_u32(c, &t, "metadata type");
        if (!ok)
            break;
        char name[128];
        if (t >= GGUF_VT_COUNT) {
            fail(c, "metadata key '%s' has an invalid type %llu", name_for_msg(kv->key, name), t);
            ok = false;
            break;
        }
        kv->type = (gguf_vtype_t)t;
        if (index_lookup(&f->kv_index, kv->key.ptr, kv->key.len, kv_name, f, i) != UINT64_MAX) {
            fail(c, "duplicate metadata key '%s' (entry %llu)", name_for_msg(kv->key, name), i);
            ok = false;
            break;
        }
        ok = parse_value(f, c, kv, &pool_index[i]);
    }
    for (uint64_t i = 0; ok && i < f->n_kv; i++)
        if (pool_index[i] != UINT64_MAX)
            f->kv[i].strs = f->str_pool + pool_index[i];
    free(pool_index);
    return ok;
}

static bool parse_tensor_infos(gguf_file_t *f, cursor_t *c)
{
    /* a tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes */
    if (f->n_tensors > (c->size - c->pos) / 32)
        return fail(c, "%s count %llu is larger than the file can hold", "tensor", f->n_tensors), false;
    f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
    if (!f->tensors || !index_init(&f->tensor_index, f->n_tensors))
        return lf_err_set(c->err, LF_ERR_NOMEM, "%s: out of memory", c->path), false;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor_t *t = &f->tensors[i];
        uint32_t type;
        if (!cur_str(c, &t->name, "tensor name") || !cur_u32(c, &t->n_dims, "tensor dims"))
            return false;
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
            return fail(c, "tensor %s has %llu dimensions (1 to 4 allowed)", "entry", t->n_dims), false;
        for (int d = 0; d < GGUF_MAX_DIMS; d++)
            t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t ne;
            if (!cur_u64(c, &ne, "tensor shape"))
                return false;
            if (ne > (uint64_t)INT64_MAX / 2)
                return fail(c, "tensor %s has an absurd dimension %llu", "entry", ne), false;
            t->ne[d] = (int64_t)ne;
        }
        if (!cur_u32(c, &type, "tensor type") || !cur_u64(c, &t->offset, "tensor offset"))
            return false;
        const qtype_info_t *info = qtype_info(type);
        if (!info) {
            char name[128];
            return fail(c, "tensor '%s' has unknown type id %llu", name_for_msg(t->name, name), type), false;
        }
        t->type = (qtype_t)type;
        if (t->ne[0] % info->block_size) {
            char name[128];
            return fail(c, "tensor '%s' row length %llu is not a multiple of its block size", name_for_msg(t->name, name),
                        (uint64_t)t->ne[0]), false;
        }
        /* size = row bytes * rows, with overflow checks against the file size */
        uint64_t size = (uint64_t)(t->ne[0] / info->block_size) * (uint64_t)info->type_size;
        for (int d = 1; d < GGUF_MAX_DIMS; d++) {
            if (t->ne[d] && size > c->size / (uint64_t)t->ne[d])
                return fail(c, "tensor %s is larger than the file (dimension %llu)", "entry", (uint64_t)d), false;
            size *= (uint64_t)t->ne[d];
        }
        t->size = size;
        char name[128];
        if (index_lookup(&f->tensor_index, t->name.ptr, t->name.len, tensor_name, f, i) != UINT64_MAX)
            return fail(c, "duplicate tensor name '%s' (entry %llu)", name_for_msg(t->name, name), i), false;
    }
    return true;
}

static int cmp_offset(const void *a, const void *b)
{
    const gguf_tensor_t *x = *(gguf_tensor_t *const *)a, *y = *(gguf_tensor_t *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool bind_tensor_data(gguf_file_t *f, cursor_t *c)
{
    uint64_t a = f->alignment;
    uint64_t data_start = (c->pos + a - 1) / a * a;
    if (data_start > f->size && f->n_tensors)
        return fail(c, "%s starts past the end of the file (offset %llu)", "tensor data", data_start), false;
    uint64_t avail = f->size > data_start ? f->size - data_start : 0;
    gguf_tensor_t **order = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *order);
    if (!order)
        return lf_err_set(c->err, LF_ERR_NOMEM, "%s: out of memory", c->path), false;
    bool ok = true;
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        gguf_tensor_t *t = &f->tensors[i];
        order[i] = t;
        char name[128];
        name_for_msg(t->name, name);
        if (t->offset % a) {
            fail(c, "tensor '%s' data offset %llu is not aligned", name, t->offset);
            ok = false;
        } else if (t->offset > avail || t->size > avail - t->offset) {
            fail(c, "tensor '%s' data lies outside the file (offset %llu)", name, t->offset);
            ok = false;
        } else {
            t->data = f->map + data_start + t->offset;
        }
    }
    if (ok && f->n_tensors > 1) {
        qsort(order, f->n_tensors, sizeof *order, cmp_offset);
        for (uint64_t i = 1; ok && i < f->n_tensors; i++)
            if (order[i - 1]->offset + order[i - 1]->size > order[i]->offset) {
                char name[128];
                fail(c, "tensor '%s' overlaps the previous tensor's data (offset %llu)", name_for_msg(order[i]->name, name),
                     order[i]->offset);
                ok = false;
            }
    }
    free(order);
    return ok;
}

static bool parse(gguf_file_t *f, cursor_t *c, bool with_tensors)
{
    uint32_t magic;
    if (!cur_u32(c, &magic, "magic"))
        return false;
    if (memcmp(&magic, "GGUF", 4))
        return fail(c, "not a GGUF file (bad magic)%s%llu", "", 0), false;
    if (!cur_u32(c, &f->version, "version"))
        return false;
    if (f->version != 2 && f->version != 3)
        return fail(c, "unsupported GGUF version %s%llu (2 and 3 are supported)", "", f->version), false;
    if (!cur_u64(c, &f->n_tensors, "tensor count") || !cur_u64(c, &f->n_kv, "metadata count"))
        return false;
    if (!parse_kvs(f, c))
        return false;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv_t *al = gguf_find_kv(f, "general.alignment");
    if (al) {
        uint32_t v;
        if (al->type != GGUF_VT_UINT32 || (memcpy(&v, al->data, 4), v == 0) || (v & (v - 1)))
            return fail(c, "%s must be a power-of-two uint32 (got type %llu)", "general.alignment", al->type),
                   false;
        f->alignment = v;
    }
    if (!with_tensors)
        f->n_tensors = 0; /* metadata only: an empty tensor table */
    return parse_tensor_infos(f, c) && bind_tensor_data(f, c);
}

static gguf_file_t *open_file(const char *path, bool with_tensors, lf_err_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        lf_err_set(err, LF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        lf_err_set(err, LF_ERR_IO, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    gguf_file_t *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        close(fd);
        lf_err_set(err, LF_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size) {
        void *m = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            lf_err_set(err, LF_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            f->size = 0;
            gguf_close(f);
            return NULL;
        }
        f->map = m;
    }
    close(fd);
    lf_err_t local;
    cursor_t c = {f->map, f->size, 0, path, err ? err : &local};
    if (!parse(f, &c, with_tensors)) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

gguf_file_t *gguf_open(const char *path, lf_err_t *err) { return open_file(path, true, err); }

gguf_file_t *gguf_open_metadata(const char *path, lf_err_t *err) { return open_file(path, false, err); }

void gguf_close(gguf_file_t *f)
{
    if (!f)
        return;
    if (f->map)
        munmap((void *)f->map, f->size);
    free(f->kv);
    free(f->tensors);
    free(f->str_pool);
    free(f->kv_index.slots);
    free(f->tensor_index.slots);
    free(f->path);
    free(f);
}

uint32_t gguf_version(const gguf_file_t *f) { return f->version; }
const char *gguf_path(const gguf_file_t *f) { return f->path; }
uint64_t gguf_file_size(const gguf_file_t *f) { return f->size; }
uint32_t gguf_alignment(const gguf_file_t *f) { return f->alignment; }
uint64_t gguf_n_kv(const gguf_file_t *f) { return f->n_kv; }
uint64_t gguf_n_tensors(const gguf_file_t *f) { return f->n_tensors; }

const gguf_kv_t *gguf_kv_at(const gguf_file_t *f, uint64_t i)
{
    return i < f->n_kv ? &f->kv[i] : NULL;
}

const gguf_tensor_t *gguf_tensor_at(const gguf_file_t *f, uint64_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_kv_t *gguf_find_kv(const gguf_file_t *f, const char *key)
{
    uint64_t i = index_lookup(&f->kv_index, key, strlen(key), kv_name, f, UINT64_MAX);
    return i == UINT64_MAX ? NULL : &f->kv[i];
}

const gguf_tensor_t *gguf_find_tensor(const gguf_file_t *f, const char *name)
{
    uint64_t i = index_lookup(&f->tensor_index, name, strlen(name), tensor_name, f, UINT64_MAX);
    return i == UINT64_MAX ? NULL : &f->tensors[i];
}

const gguf_kv_t *gguf_get_arr(const gguf_file_t *f, const char *key)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    return kv && kv->type == GGUF_VT_ARRAY ? kv : NULL;
}

/* Reads a scalar integer value as signed 128-ish: returns false for
 * non-integer types. Unsigned 64-bit values above INT64_MAX are reported via
 * *big so range checks stay exact. */
static bool kv_int(const gguf_kv_t *kv, int64_t *v, bool *big)
{
    *big = false;
    const void *p = kv->data;
    switch (kv->type) {
    case GGUF_VT_UINT8: { uint8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case GGUF_VT_INT8: { int8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case GGUF_VT_UINT16: { uint16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case GGUF_VT_INT16: { int16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case GGUF_VT_UINT32: { uint32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case GGUF_VT_INT32: { int32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case GGUF_VT_INT64: { int64_t x; memcpy(&x, p, 8); *v = x; return true; }
    case GGUF_VT_UINT64: {
        uint64_t x;
        memcpy(&x, p, 8);
        if (x > (uint64_t)INT64_MAX) {
            *big = true;
            *v = INT64_MAX;
        } else {
            *v = (int64_t)x;
        }
        return true;
    }
    default: return false;
    }
}

bool gguf_get_u32(const gguf_file_t *f, const char *key, uint32_t *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    int64_t v;
    bool big;
    if (!kv || !kv_int(kv, &v, &big) || big || v < 0 || v > (int64_t)UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool gguf_get_i32(const gguf_file_t *f, const char *key, int32_t *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    int64_t v;
    bool big;
    if (!kv || !kv_int(kv, &v, &big) || big || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

bool gguf_get_u64(const gguf_file_t *f, const char *key, uint64_t *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    int64_t v;
    bool big;
    if (!kv || !kv_int(kv, &v, &big) || v < 0)
        return false;
    if (big)
        memcpy(out, kv->data, 8);
    else
        *out = (uint64_t)v;
    return true;
}

bool gguf_get_f32(const gguf_file_t *f, const char *key, float *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    if (!kv)
        return false;
    if (kv->type == GGUF_VT_FLOAT32) {
        memcpy(out, kv->data, 4);
        return true;
    }
    if (kv->type == GGUF_VT_FLOAT64) {
        double d;
        memcpy(&d, kv->data, 8);
        *out = (float)d;
        return true;
    }
    return false;
}

bool gguf_get_bool(const gguf_file_t *f, const char *key, bool *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    if (!kv || kv->type != GGUF_VT_BOOL)
        return false;
    *out = *(const uint8_t *)kv->data != 0;
    return true;
}

bool gguf_get_str(const gguf_file_t *f, const char *key, gguf_str_t *out)
{
    const gguf_kv_t *kv = gguf_find_kv(f, key);
    if (!kv || kv->type != GGUF_VT_STRING)
        return false;
    *out = kv->strs[0];
    return true;
}
