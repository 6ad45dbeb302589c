/*
 * gguf.h — internal GGUF v2/v3 reader and v3 writer.
 * Spec: ggml-org/ggml docs/gguf.md (layout, value and tensor types: ggml-org/ggml include/gguf.h).
 *
 * The reader maps the file read-only and validates it completely in edgellm_gguf_open
 * (deep validation): every count against the file size, every string/array length, n_dims,
 * element counts, tensor types, row sizes vs block size, alignment, bounds and overlap of
 * tensor data, unique names. After a successful open nothing needs re-checking: all
 * pointers handed out lie inside the mapping.
 */
#ifndef EDGELLM_GGUF_H
#define EDGELLM_GGUF_H

#include "../common/common.h"

#define EDGELLM_GGUF_MAGIC 0x46554747u   /* "GGUF" read little-endian */
#define EDGELLM_GGUF_DEFAULT_ALIGNMENT 32
#define EDGELLM_GGUF_MAX_DIMS 4

typedef enum {
    EDGELLM_GGUF_UINT8 = 0, EDGELLM_GGUF_INT8 = 1, EDGELLM_GGUF_UINT16 = 2, EDGELLM_GGUF_INT16 = 3,
    EDGELLM_GGUF_UINT32 = 4, EDGELLM_GGUF_INT32 = 5, EDGELLM_GGUF_FLOAT32 = 6, EDGELLM_GGUF_BOOL = 7,
    EDGELLM_GGUF_STRING = 8, EDGELLM_GGUF_ARRAY = 9, EDGELLM_GGUF_UINT64 = 10, EDGELLM_GGUF_INT64 = 11,
    EDGELLM_GGUF_FLOAT64 = 12, EDGELLM_GGUF_TYPE_COUNT = 13
} edgellm_gguf_vtype;

/* A string inside the mapping: not NUL-terminated. */
typedef struct { const char *ptr; uint64_t len; } edgellm_str;

typedef struct {
    edgellm_str name;
    uint32_t    n_dims;
    int64_t     ne[EDGELLM_GGUF_MAX_DIMS];  /* ggml order: ne[0] is the row length; unused = 1 */
    int         type;                       /* edgellm_type / ggml_type id                      */
    uint64_t    offset;                     /* relative to the data section                     */
    uint64_t    n_elements;
    uint64_t    size_bytes;
    const void *data;                       /* inside the mapping                               */
} edgellm_gguf_tensor;

typedef struct edgellm_gguf edgellm_gguf;

/* Open, mmap read-only and deep-validate. On failure *out is NULL and err names `path`
 * and the problem (EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT / EDGELLM_ERR_NOMEM). */
edgellm_status edgellm_gguf_open(const char *path, edgellm_gguf **out, edgellm_error *err);
/* The same over a caller-owned buffer (fuzzing, tests); `name` is used in messages. The
 * buffer must outlive the handle. */
edgellm_status edgellm_gguf_open_memory(const void *data, size_t size, const char *name,
                                        edgellm_gguf **out, edgellm_error *err);
/* The same over `size` bytes at `offset` of an open regular file (size 0: to its end),
 * mapped read-only; fd stays open and may be closed afterwards. EDGELLM_ERR_IO when the
 * region lies outside the file. */
edgellm_status edgellm_gguf_open_fd(int fd, uint64_t offset, uint64_t size, const char *name, edgellm_gguf **out,
                                    edgellm_error *err);
void edgellm_gguf_close(edgellm_gguf *g);   /* NULL-safe */

const char *edgellm_gguf_path(const edgellm_gguf *g);
uint32_t edgellm_gguf_version(const edgellm_gguf *g);
uint32_t edgellm_gguf_alignment(const edgellm_gguf *g);
uint64_t edgellm_gguf_data_offset(const edgellm_gguf *g);   /* start of tensor data in the file */
uint64_t edgellm_gguf_file_size(const edgellm_gguf *g);

/* ---- metadata ---- */
int64_t edgellm_gguf_n_kv(const edgellm_gguf *g);
int64_t edgellm_gguf_find_key(const edgellm_gguf *g, const char *key);   /* -1: absent */
edgellm_str edgellm_gguf_key(const edgellm_gguf *g, int64_t i);
edgellm_gguf_vtype edgellm_gguf_kv_type(const edgellm_gguf *g, int64_t i);
/* Raw little-endian bytes of scalar kv i (vtype_size(type) bytes inside the mapping, may be
 * unaligned); NULL for STRING, ARRAY or an index out of range. Used to copy values exactly. */
const void *edgellm_gguf_kv_data(const edgellm_gguf *g, int64_t i);

/* Typed getters by key name. Integer getters accept any integer type (and bool) whose value
 * fits the result; float getters accept FLOAT32/FLOAT64 and integers. Return false when the
 * key is absent or of an incompatible type/value, leaving *out untouched (so a default
 * set beforehand survives). */
bool edgellm_gguf_get_i64(const edgellm_gguf *g, const char *key, int64_t *out);
bool edgellm_gguf_get_u32(const edgellm_gguf *g, const char *key, uint32_t *out);
bool edgellm_gguf_get_i32(const edgellm_gguf *g, const char *key, int32_t *out);
bool edgellm_gguf_get_f32(const edgellm_gguf *g, const char *key, float *out);
bool edgellm_gguf_get_bool(const edgellm_gguf *g, const char *key, bool *out);
bool edgellm_gguf_get_str(const edgellm_gguf *g, const char *key, edgellm_str *out);

/* Scalar value of kv i formatted for display ("1e-05", "llama", "[512 x STRING]"). */
void edgellm_gguf_format_value(const edgellm_gguf *g, int64_t i, char *buf, size_t size);

/* Arrays. For key i of type ARRAY: element type and count. Nested arrays are validated but
 * only exposed as (type ARRAY, count). */
bool edgellm_gguf_arr_info(const edgellm_gguf *g, const char *key, edgellm_gguf_vtype *elem_type,
                           uint64_t *count);
/* Pointer to the packed little-endian elements of a fixed-size-element array (not STRING,
 * not ARRAY): count * size(elem_type) bytes inside the mapping; NULL otherwise. May be
 * unaligned: read with memcpy. */
const void *edgellm_gguf_arr_data(const edgellm_gguf *g, const char *key);
/* Element j of a STRING array (index built at open, O(1)). ok=false when out of range. */
bool edgellm_gguf_arr_str(const edgellm_gguf *g, const char *key, uint64_t j, edgellm_str *out);

/* Size in bytes of one value of a fixed-size type (0 for STRING/ARRAY). */
size_t edgellm_gguf_vtype_size(edgellm_gguf_vtype t);
const char *edgellm_gguf_vtype_name(edgellm_gguf_vtype t);

/* ---- tensors ---- */
int64_t edgellm_gguf_n_tensors(const edgellm_gguf *g);
const edgellm_gguf_tensor *edgellm_gguf_tensor_at(const edgellm_gguf *g, int64_t i);
const edgellm_gguf_tensor *edgellm_gguf_find_tensor(const edgellm_gguf *g, const char *name); /* NULL: absent */

/* Compare a mapped string with a C string. */
bool edgellm_str_eq(edgellm_str s, const char *c);

/* ---- writer (GGUF v3) ----
 * Collects metadata and tensors in memory order of calls, then writes header, kv, tensor
 * infos, padding, and the data of every tensor aligned to `general.alignment` (32).
 * Tensor data pointers are borrowed until edgellm_gguf_writer_write returns. Writes to a
 * temporary file next to the target and renames it, so a failure never leaves a partial
 * file under the final name. */
typedef struct edgellm_gguf_writer edgellm_gguf_writer;

edgellm_gguf_writer *edgellm_gguf_writer_new(void);      /* NULL on OOM */
void edgellm_gguf_writer_free(edgellm_gguf_writer *w);   /* NULL-safe */
/* Align the data section and every tensor to `align` bytes (a power of two, 32..4096;
 * 32 is GGUF's default) and record it as general.alignment (the spec's key, u32;
 * ggml-org/ggml docs/gguf.md) unless it is 32. False on a bad value or OOM. */
bool edgellm_gguf_writer_set_alignment(edgellm_gguf_writer *w, uint32_t align);
/* Setters return false on OOM. Keys are copied. A key set twice keeps the last value. */
bool edgellm_gguf_writer_set_u32(edgellm_gguf_writer *w, const char *key, uint32_t v);
bool edgellm_gguf_writer_set_i32(edgellm_gguf_writer *w, const char *key, int32_t v);
bool edgellm_gguf_writer_set_u64(edgellm_gguf_writer *w, const char *key, uint64_t v);
bool edgellm_gguf_writer_set_f32(edgellm_gguf_writer *w, const char *key, float v);
bool edgellm_gguf_writer_set_bool(edgellm_gguf_writer *w, const char *key, bool v);
bool edgellm_gguf_writer_set_str(edgellm_gguf_writer *w, const char *key, const char *v);
/* Any fixed-size scalar type (not STRING/ARRAY): `value` points to one value of that type
 * in host order (uint8_t for BOOL, which must be 0 or 1). */
bool edgellm_gguf_writer_set_scalar(edgellm_gguf_writer *w, const char *key, edgellm_gguf_vtype type,
                                    const void *value);
/* Arrays of fixed-size elements (copied): elem_type not STRING/ARRAY. */
bool edgellm_gguf_writer_set_arr(edgellm_gguf_writer *w, const char *key, edgellm_gguf_vtype elem_type,
                                 const void *data, uint64_t count);
/* Array of strings (each copied; lens may be NULL for NUL-terminated strings). */
bool edgellm_gguf_writer_set_arr_str(edgellm_gguf_writer *w, const char *key, const char *const *strs,
                                     const uint64_t *lens, uint64_t count);
/* Copy every kv of an open file (except general.alignment), e.g. when quantizing. */
bool edgellm_gguf_writer_copy_kv(edgellm_gguf_writer *w, const edgellm_gguf *src);
/* Add a tensor: ne in ggml order (ne[0] = row length), n_dims 1..4; data is borrowed and
 * must hold edgellm_type_row_size(type, ne[0]) * rows bytes. */
bool edgellm_gguf_writer_add_tensor(edgellm_gguf_writer *w, const char *name, int type,
                                    uint32_t n_dims, const int64_t *ne, const void *data);
edgellm_status edgellm_gguf_writer_write(edgellm_gguf_writer *w, const char *path, edgellm_error *err);

/* Remove a key added or copied earlier (e.g. a stale general.file_type after copy_kv).
 * Returns true when the key was present. */
bool edgellm_gguf_writer_remove_kv(edgellm_gguf_writer *w, const char *key);

/* Streaming tensors (for files larger than memory: quantize, synth). Instead of a data
 * pointer, `produce` writes the tensor's bytes while edgellm_gguf_writer_write runs; the
 * tensors' data are produced one at a time, in the order they were added, on the calling
 * thread. produce(user, tag, sink, err) must hand exactly row_size(type, ne[0]) * rows
 * bytes to edgellm_gguf_sink_put, in pieces of any size; a status other than EDGELLM_OK
 * aborts the write (the temporary file is removed, nothing appears under the target path,
 * and write returns that status with the callback's message). Producing fewer or more
 * bytes than declared is EDGELLM_ERR_MISUSE. */
typedef struct edgellm_gguf_sink edgellm_gguf_sink;
typedef edgellm_status (*edgellm_gguf_produce_fn)(void *user, uint64_t tag, edgellm_gguf_sink *sink,
                                                  edgellm_error *err);
/* Append n bytes of the current tensor. false after an I/O error or when n exceeds what is
 * left of the declared size (then nothing is written; write fails with the reason). */
bool edgellm_gguf_sink_put(edgellm_gguf_sink *s, const void *data, size_t n);
/* Like add_tensor, with the data produced during write (user and tag are passed back). */
bool edgellm_gguf_writer_add_tensor_stream(edgellm_gguf_writer *w, const char *name, int type, uint32_t n_dims,
                                           const int64_t *ne, edgellm_gguf_produce_fn produce, void *user,
                                           uint64_t tag);

#endif
