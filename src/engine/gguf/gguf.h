/* gguf.h - read-only, validated access to a GGUF file (v2 and v3).
 *
 * gguf_open() maps the file read-only and parses the header, the metadata
 * key/values and the tensor infos. Every count, string length, array length,
 * offset and tensor extent is checked against the file size before use, so
 * after a successful open every pointer handed out lies inside the mapping.
 * A malformed file is an LF_ERR_FORMAT error whose message names the file
 * and the problem; nothing is ever asserted on file contents.
 *
 * Strings (keys, values, tensor names) are (ptr, len) views into the
 * mapping, NOT NUL-terminated. All views stay valid until gguf_close().
 * Scalars are little-endian (only little-endian GGUF is supported).
 */
#ifndef LF_GGUF_H
#define LF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/quant/qtype.h"

typedef enum {
    GGUF_VT_UINT8 = 0,
    GGUF_VT_INT8 = 1,
    GGUF_VT_UINT16 = 2,
    GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4,
    GGUF_VT_INT32 = 5,
    GGUF_VT_FLOAT32 = 6,
    GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8,
    GGUF_VT_ARRAY = 9,
    GGUF_VT_UINT64 = 10,
    GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12,
    GGUF_VT_COUNT
} gguf_vtype_t;

typedef struct {
    const char *ptr; /* into the mapping; not NUL-terminated */
    uint64_t len;
} gguf_str_t;

typedef struct {
    gguf_str_t key;
    gguf_vtype_t type;     /* value type; GGUF_VT_ARRAY for arrays */
    gguf_vtype_t arr_type; /* element type when type == GGUF_VT_ARRAY */
    uint64_t arr_len;      /* element count when type == GGUF_VT_ARRAY */
    const void *data;      /* scalar value, or first array element (not for
                              string arrays: use gguf_arr_strs) */
    const gguf_str_t *strs; /* string value (1 entry) or string array */
} gguf_kv_t;

typedef struct {
    gguf_str_t name;
    uint32_t n_dims;   /* 1..4 */
    int64_t ne[4];     /* ne[0] = row length (innermost), unused dims = 1 */
    qtype_t type;
    uint64_t offset;   /* relative to the start of the data section */
    const void *data;  /* inside the mapping, aligned to general.alignment */
    uint64_t size;     /* bytes */
} gguf_tensor_t;

typedef struct gguf_file gguf_file_t;

/* Opens and validates `path`. Returns NULL and fills err on failure
 * (LF_ERR_IO: cannot open/map, LF_ERR_FORMAT: malformed, with the file name
 * and the problem in the message). Free with gguf_close(). */
gguf_file_t *gguf_open(const char *path, lf_err_t *err);
/* As gguf_open, but reads only the header and the metadata: the tensor
 * table is not parsed (gguf_n_tensors() is 0), so files with tensor types
 * this build does not know still open. For reading a vocabulary or the
 * architecture of any GGUF. */
gguf_file_t *gguf_open_metadata(const char *path, lf_err_t *err);
void gguf_close(gguf_file_t *f); /* accepts NULL */

uint32_t gguf_version(const gguf_file_t *f);
const char *gguf_path(const gguf_file_t *f);
uint64_t gguf_file_size(const gguf_file_t *f);
uint32_t gguf_alignment(const gguf_file_t *f);

/* Metadata. Lookup by NUL-terminated key; NULL if absent. */
uint64_t gguf_n_kv(const gguf_file_t *f);
const gguf_kv_t *gguf_kv_at(const gguf_file_t *f, uint64_t i);
const gguf_kv_t *gguf_find_kv(const gguf_file_t *f, const char *key);

/* Typed getters: return true and store the value if the key exists and its
 * value converts losslessly (any integer type to the requested width when
 * in range; float32/float64 to float; bool). false otherwise (*out untouched). */
bool gguf_get_u32(const gguf_file_t *f, const char *key, uint32_t *out);
bool gguf_get_i32(const gguf_file_t *f, const char *key, int32_t *out);
bool gguf_get_u64(const gguf_file_t *f, const char *key, uint64_t *out);
bool gguf_get_f32(const gguf_file_t *f, const char *key, float *out);
bool gguf_get_bool(const gguf_file_t *f, const char *key, bool *out);
bool gguf_get_str(const gguf_file_t *f, const char *key, gguf_str_t *out);

/* Arrays: element type, count and data. For numeric arrays `data` points at
 * arr_len packed little-endian elements; for string arrays use `strs`.
 * Returns NULL if absent or not an array. */
const gguf_kv_t *gguf_get_arr(const gguf_file_t *f, const char *key);

/* Tensors. Lookup by NUL-terminated name; NULL if absent. */
uint64_t gguf_n_tensors(const gguf_file_t *f);
const gguf_tensor_t *gguf_tensor_at(const gguf_file_t *f, uint64_t i);
const gguf_tensor_t *gguf_find_tensor(const gguf_file_t *f, const char *name);

/* Helpers for (ptr,len) strings. */
bool gguf_str_eq(gguf_str_t s, const char *cstr);
/* Copies s into a fresh NUL-terminated malloc'd string (caller frees);
 * NULL on allocation failure. */
char *gguf_str_dup(gguf_str_t s);

#endif
