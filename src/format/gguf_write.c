/*
 * gguf_write.c — the GGUF v3 writer (the edgellm_gguf_writer_* half of gguf.h).
 *
 * Spec: ggml-org/ggml docs/gguf.md and include/gguf.h. Everything is
 * little-endian; strings are a uint64 byte count followed by the bytes (no NUL).
 *
 *   offset 0   u32 magic "GGUF" | u32 version = 3 | u64 tensor_count | u64 kv_count
 *              kv[kv_count]:         string key | u32 value_type | value
 *                                    value = scalar | string | u32 elem_type, u64 count, elems
 *              tensor_info[count]:   string name | u32 n_dims | u64 ne[n_dims] | u32 type |
 *                                    u64 offset (relative to the data section, multiple of 32)
 *              0x00 padding up to a multiple of ALIGNMENT (32)
 *   data       tensor 0 data, 0x00 padding to 32, tensor 1 data, padding, ...
 *
 * A tiny file with one kv (general.architecture = "llama") and one F32 tensor "t" of
 * ne={4}, annotated:
 *
 *   47 47 55 46  03 00 00 00                      "GGUF", version 3
 *   01 00 00 00 00 00 00 00  01 00 00 00 00 00 00 00   1 tensor, 1 kv
 *   14 00 00 00 00 00 00 00  "general.architecture"    key (20 bytes)
 *   08 00 00 00                                        value_type STRING
 *   05 00 00 00 00 00 00 00  "llama"                   value
 *   01 00 00 00 00 00 00 00  "t"  01 00 00 00          name, n_dims 1
 *   04 00 00 00 00 00 00 00  00 00 00 00               ne[0] = 4, type F32
 *   00 00 00 00 00 00 00 00                            offset 0
 * 00 ... (pad 102 -> 128)    then 16 bytes of float data at file offset 128, 16 zero bytes
 *
 * `general.alignment` is not written: the default (32) applies, and every offset is a
 * multiple of 32; edgellm_gguf_writer_set_alignment raises it (64 for the stored
 * layouts, whose kernels load 64-byte lines) and then writes the key. The writer keeps kv
 * pairs and tensors in the order they were added (a key set twice keeps its first position
 * and its last value). Nothing reaches the target path until the whole file has been
 * written and flushed to "<path>.tmp.<pid>";
 * then rename() replaces the target atomically, and any failure unlinks the temporary
 * (edgellm_out_open/_commit, common.h: registered meanwhile for edgellm_remove_temp_files,
 * so a signal's handler removes it too).
 * Streamed tensors (add_tensor_stream) have no data pointer: their producer callback
 * writes the bytes through a sink during write, so a file larger than memory can be made.
 */
#include "gguf.h"
#include "type_layout.h"
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#define ALIGN EDGELLM_GGUF_DEFAULT_ALIGNMENT
#define MAX_ALIGN 4096

typedef struct {
    char              *key;          /* NUL-terminated copy                                */
    edgellm_gguf_vtype type;         /* value type; ARRAY for arrays                       */
    edgellm_gguf_vtype elem_type;    /* arrays only                                        */
    uint64_t           count;        /* arrays: number of elements                         */
    uint8_t            scalar[8];    /* fixed-size scalar, little-endian                   */
    uint8_t           *bytes;        /* STRING: the bytes; fixed-size array: packed elems  */
    uint64_t           len;          /* STRING: byte count                                 */
    uint8_t          **strs;         /* STRING arrays: [count] byte strings                */
    uint64_t          *lens;         /* STRING arrays: [count] byte counts                 */
} wkv;

typedef struct {
    char       *name;
    int         type;
    uint32_t    n_dims;
    int64_t     ne[EDGELLM_GGUF_MAX_DIMS];   /* ggml order; unused = 1 */
    const void *data;                        /* borrowed               */
    edgellm_gguf_produce_fn produce;         /* streamed instead: data == NULL */
    void       *user;
    uint64_t    tag;
    uint64_t    size_bytes;
    uint64_t    offset;                      /* assigned by write      */
} wtensor;

struct edgellm_gguf_writer {
    wkv     *kv;
    int64_t  n_kv, cap_kv;
    wtensor *t;
    int64_t  n_t, cap_t;
    char     misuse[256];   /* first bad add_tensor call, reported by write ("" = none) */
    uint32_t align;         /* 0: the default (32); else a power of two, 32..4096 */
};

/* ---------------------------------------------------------------- collection ---- */

edgellm_gguf_writer *edgellm_gguf_writer_new(void) { return edgellm_calloc(1, sizeof(edgellm_gguf_writer)); }

bool edgellm_gguf_writer_set_alignment(edgellm_gguf_writer *w, uint32_t align)
{
    if (!w || align < ALIGN || align > MAX_ALIGN || (align & (align - 1))) return false;
    w->align = align;
    return align == ALIGN ? (edgellm_gguf_writer_remove_kv(w, "general.alignment"), true)
                          : edgellm_gguf_writer_set_u32(w, "general.alignment", align);
}

static void kv_clear_value(wkv *kv)
{
    if (kv->strs)
        for (uint64_t j = 0; j < kv->count; j++) edgellm_free(kv->strs[j]);
    edgellm_free(kv->strs);
    edgellm_free(kv->lens);
    edgellm_free(kv->bytes);
    kv->strs = NULL;
    kv->lens = NULL;
    kv->bytes = NULL;
    kv->count = kv->len = 0;
}

void edgellm_gguf_writer_free(edgellm_gguf_writer *w)
{
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) {
        kv_clear_value(&w->kv[i]);
        edgellm_free(w->kv[i].key);
    }
    for (int64_t i = 0; i < w->n_t; i++) edgellm_free(w->t[i].name);
    edgellm_free(w->kv);
    edgellm_free(w->t);
    edgellm_free(w);
}

/* The slot for `key`: the existing one (value cleared) or a new one at the end. NULL on OOM. */
static wkv *kv_slot(edgellm_gguf_writer *w, const char *key)
{
    if (!w || !key) return NULL;
    for (int64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            kv_clear_value(&w->kv[i]);
            return &w->kv[i];
        }
    if (w->n_kv == w->cap_kv) {
        int64_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *nkv = edgellm_malloc((size_t)cap * sizeof *nkv);
        if (!nkv) return NULL;
        if (w->n_kv) memcpy(nkv, w->kv, (size_t)w->n_kv * sizeof *nkv);
        edgellm_free(w->kv);
        w->kv = nkv;
        w->cap_kv = cap;
    }
    char *k = edgellm_strdup(key);
    if (!k) return NULL;
    wkv *kv = &w->kv[w->n_kv++];
    memset(kv, 0, sizeof *kv);
    kv->key = k;
    return kv;
}

static bool set_scalar(edgellm_gguf_writer *w, const char *key, edgellm_gguf_vtype type, const void *v)
{
    wkv *kv = kv_slot(w, key);
    if (!kv) return false;
    kv->type = type;
    memset(kv->scalar, 0, sizeof kv->scalar);
    memcpy(kv->scalar, v, edgellm_gguf_vtype_size(type));   /* host is little-endian (see write) */
    return true;
}

bool edgellm_gguf_writer_set_scalar(edgellm_gguf_writer *w, const char *key, edgellm_gguf_vtype type,
                                    const void *value)
{
    if (!value || edgellm_gguf_vtype_size(type) == 0) return false;
    if (type == EDGELLM_GGUF_BOOL && *(const uint8_t *)value > 1) return false;
    return set_scalar(w, key, type, value);
}

bool edgellm_gguf_writer_set_u32(edgellm_gguf_writer *w, const char *key, uint32_t v) { return set_scalar(w, key, EDGELLM_GGUF_UINT32, &v); }
bool edgellm_gguf_writer_set_i32(edgellm_gguf_writer *w, const char *key, int32_t v) { return set_scalar(w, key, EDGELLM_GGUF_INT32, &v); }
bool edgellm_gguf_writer_set_u64(edgellm_gguf_writer *w, const char *key, uint64_t v) { return set_scalar(w, key, EDGELLM_GGUF_UINT64, &v); }
bool edgellm_gguf_writer_set_f32(edgellm_gguf_writer *w, const char *key, float v) { return set_scalar(w, key, EDGELLM_GGUF_FLOAT32, &v); }
bool edgellm_gguf_writer_set_bool(edgellm_gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    return set_scalar(w, key, EDGELLM_GGUF_BOOL, &b);
}

bool edgellm_gguf_writer_set_str(edgellm_gguf_writer *w, const char *key, const char *v)
{
    if (!v) return false;
    size_t n = strlen(v);
    uint8_t *copy = edgellm_malloc(n ? n : 1);
    if (!copy) return false;
    memcpy(copy, v, n);
    wkv *kv = kv_slot(w, key);
    if (!kv) { edgellm_free(copy); return false; }
    kv->type = EDGELLM_GGUF_STRING;
    kv->bytes = copy;
    kv->len = n;
    return true;
}

bool edgellm_gguf_writer_set_arr(edgellm_gguf_writer *w, const char *key, edgellm_gguf_vtype elem_type,
                                 const void *data, uint64_t count)
{
    size_t es = edgellm_gguf_vtype_size(elem_type), n;
    if (es == 0 || (count && !data) || count > SIZE_MAX || !edgellm_mul_size((size_t)count, es, &n)) return false;
    if (elem_type == EDGELLM_GGUF_BOOL)   /* GGUF bools are one byte, 0 or 1 */
        for (size_t j = 0; j < n; j++)
            if (((const uint8_t *)data)[j] > 1) return false;
    uint8_t *copy = edgellm_malloc(n ? n : 1);
    if (!copy) return false;
    if (n) memcpy(copy, data, n);
    wkv *kv = kv_slot(w, key);
    if (!kv) { edgellm_free(copy); return false; }
    kv->type = EDGELLM_GGUF_ARRAY;
    kv->elem_type = elem_type;
    kv->count = count;
    kv->bytes = copy;
    return true;
}

bool edgellm_gguf_writer_set_arr_str(edgellm_gguf_writer *w, const char *key, const char *const *strs,
                                     const uint64_t *lens, uint64_t count)
{
    size_t nb;
    if ((count && !strs) || count > SIZE_MAX / sizeof(uint8_t *) ||
        !edgellm_mul_size((size_t)count, sizeof(uint64_t), &nb))
        return false;
    uint8_t **copies = edgellm_calloc(count ? (size_t)count : 1, sizeof *copies);
    uint64_t *clens = edgellm_malloc(nb ? nb : 1);
    bool ok = copies && clens;
    for (uint64_t j = 0; ok && j < count; j++) {
        uint64_t n = lens ? lens[j] : strlen(strs[j]);
        if (n > SIZE_MAX - 1 || (n && !strs[j])) { ok = false; break; }
        copies[j] = edgellm_malloc(n ? (size_t)n : 1);
        if (!copies[j]) { ok = false; break; }
        if (n) memcpy(copies[j], strs[j], (size_t)n);
        clens[j] = n;
    }
    wkv *kv = ok ? kv_slot(w, key) : NULL;
    if (!kv) {
        for (uint64_t j = 0; copies && j < count; j++) edgellm_free(copies[j]);
        edgellm_free(copies);
        edgellm_free(clens);
        return false;
    }
    kv->type = EDGELLM_GGUF_ARRAY;
    kv->elem_type = EDGELLM_GGUF_STRING;
    kv->count = count;
    kv->strs = copies;
    kv->lens = clens;
    return true;
}

/* A NUL-terminated copy of a mapped string (keys and string values from a reader). */
static char *str_dup(edgellm_str s) { return s.len < SIZE_MAX ? edgellm_strndup(s.ptr, (size_t)s.len) : NULL; }

bool edgellm_gguf_writer_copy_kv(edgellm_gguf_writer *w, const edgellm_gguf *src)
{
    if (!w || !src) return false;
    for (int64_t i = 0; i < edgellm_gguf_n_kv(src); i++) {
        char *key = str_dup(edgellm_gguf_key(src, i));
        if (!key) return false;
        bool ok = true;
        edgellm_gguf_vtype t = edgellm_gguf_kv_type(src, i);
        if (!strcmp(key, "general.alignment")) {
            /* the writer records its own alignment (set_alignment); a stale value would lie */
        } else if (t == EDGELLM_GGUF_STRING) {
            edgellm_str s = {0};
            ok = edgellm_gguf_get_str(src, key, &s);
            uint8_t *copy = ok ? edgellm_malloc(s.len ? (size_t)s.len : 1) : NULL;
            wkv *kv = copy ? kv_slot(w, key) : NULL;
            if (copy && s.len) memcpy(copy, s.ptr, (size_t)s.len);
            if (kv) {
                kv->type = EDGELLM_GGUF_STRING;
                kv->bytes = copy;
                kv->len = s.len;
            } else {
                edgellm_free(copy);
                ok = false;
            }
        } else if (t == EDGELLM_GGUF_ARRAY) {
            edgellm_gguf_vtype et;
            uint64_t count;
            ok = edgellm_gguf_arr_info(src, key, &et, &count);
            if (ok && et == EDGELLM_GGUF_STRING) {
                /* string arrays of a validated file: every element lies in the mapping */
                const char **ptrs = count < SIZE_MAX / sizeof(char *) ? edgellm_malloc((size_t)count * sizeof(char *) + 1) : NULL;
                uint64_t *lens = count < SIZE_MAX / 8 ? edgellm_malloc((size_t)count * 8 + 1) : NULL;
                ok = ptrs && lens;
                for (uint64_t j = 0; ok && j < count; j++) {
                    edgellm_str s;
                    ok = edgellm_gguf_arr_str(src, key, j, &s);
                    ptrs[j] = s.ptr;
                    lens[j] = s.len;
                }
                ok = ok && edgellm_gguf_writer_set_arr_str(w, key, ptrs, lens, count);
                edgellm_free(ptrs);
                edgellm_free(lens);
            } else if (ok && et != EDGELLM_GGUF_ARRAY) {
                const void *data = edgellm_gguf_arr_data(src, key);
                ok = (data || count == 0) && edgellm_gguf_writer_set_arr(w, key, et, data, count);
            } else {
                ok = false;   /* nested arrays are not exposed by the reader */
            }
        } else {
            const void *raw = edgellm_gguf_kv_data(src, i);   /* exact bytes: no float64/u64 rounding */
            ok = raw && set_scalar(w, key, t, raw);
        }
        edgellm_free(key);
        if (!ok) return false;
    }
    return true;
}

bool edgellm_gguf_writer_remove_kv(edgellm_gguf_writer *w, const char *key)
{
    if (!w || !key) return false;
    for (int64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            kv_clear_value(&w->kv[i]);
            edgellm_free(w->kv[i].key);
            memmove(&w->kv[i], &w->kv[i + 1], (size_t)(w->n_kv - i - 1) * sizeof *w->kv);
            w->n_kv--;
            return true;
        }
    return false;
}

/* add_tensor and add_tensor_stream: exactly one of data / produce is used. */
static bool add_tensor_impl(edgellm_gguf_writer *w, const char *name, int type, uint32_t n_dims,
                            const int64_t *ne, const void *data, edgellm_gguf_produce_fn produce, void *user,
                            uint64_t tag)
{
    if (!w) return false;
#define MISUSE(...) do { if (!w->misuse[0]) snprintf(w->misuse, sizeof w->misuse, __VA_ARGS__); return false; } while (0)
    if (!name || !ne) MISUSE("add_tensor: NULL name or shape");
    /* ggml keeps names in char[GGML_MAX_NAME = 64] and gguf.cpp refuses longer ones */
    if (strlen(name) == 0 || strlen(name) >= 64) MISUSE("tensor name '%.80s' is empty or longer than 63 bytes", name);
    if (n_dims < 1 || n_dims > EDGELLM_GGUF_MAX_DIMS) MISUSE("tensor %s: n_dims %u not in 1..4", name, n_dims);
    for (int64_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) MISUSE("tensor %s added twice", name);
    if (!edgellm_type_layout_get(type)) MISUSE("tensor %s: unknown type %d", name, type);
    uint64_t rows = 1, size;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] < 0) MISUSE("tensor %s: ne[%u] = %lld is negative", name, d, (long long)ne[d]);
        if (d > 0 && !edgellm_mul_u64(rows, (uint64_t)ne[d], &rows)) MISUSE("tensor %s: shape overflows", name);
    }
    size_t row = edgellm_type_row_size(type, ne[0]);
    if (row == 0 && ne[0] != 0)
        MISUSE("tensor %s: ne[0] = %lld is not a multiple of the %s block size", name, (long long)ne[0],
               edgellm_type_name(type));
    if (!edgellm_mul_u64(row, rows, &size)) MISUSE("tensor %s: byte size overflows", name);
    if (size && !data && !produce) MISUSE("tensor %s: NULL data", name);
#undef MISUSE
    if (w->n_t == w->cap_t) {
        int64_t cap = w->cap_t ? 2 * w->cap_t : 16;
        wtensor *nt = edgellm_malloc((size_t)cap * sizeof *nt);
        if (!nt) return false;
        if (w->n_t) memcpy(nt, w->t, (size_t)w->n_t * sizeof *nt);
        edgellm_free(w->t);
        w->t = nt;
        w->cap_t = cap;
    }
    char *copy = edgellm_strdup(name);
    if (!copy) return false;
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    t->name = copy;
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < EDGELLM_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->data = produce ? NULL : data;
    t->produce = produce;
    t->user = user;
    t->tag = tag;
    t->size_bytes = size;
    return true;
}

bool edgellm_gguf_writer_add_tensor(edgellm_gguf_writer *w, const char *name, int type,
                                    uint32_t n_dims, const int64_t *ne, const void *data)
{
    return add_tensor_impl(w, name, type, n_dims, ne, data, NULL, NULL, 0);
}

bool edgellm_gguf_writer_add_tensor_stream(edgellm_gguf_writer *w, const char *name, int type, uint32_t n_dims,
                                           const int64_t *ne, edgellm_gguf_produce_fn produce, void *user,
                                           uint64_t tag)
{
    if (!produce) {
        if (w && !w->misuse[0]) snprintf(w->misuse, sizeof w->misuse, "add_tensor_stream: NULL producer");
        return false;
    }
    return add_tensor_impl(w, name, type, n_dims, ne, NULL, produce, user, tag);
}

/* ---------------------------------------------------------------- output ---- */

/* A FILE with a sticky error flag: after the first failed write every call is a no-op. */
typedef struct {
    FILE    *f;
    uint64_t pos;   /* bytes written so far */
    int      err;   /* errno of the first failure, 0 while all is well */
    uint32_t align; /* of the data section and every tensor in it */
} out_stream;

static void put(out_stream *o, const void *p, size_t n)
{
    if (o->err || n == 0) return;
    if (fwrite(p, 1, n, o->f) != n) o->err = errno ? errno : EIO;
    else o->pos += n;
}
/* Little-endian integers, independent of the host's byte order. */
static void put_u32(out_stream *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(o, b, 4);
}
static void put_u64(out_stream *o, uint64_t v)
{
    put_u32(o, (uint32_t)v);
    put_u32(o, (uint32_t)(v >> 32));
}
static void put_str(out_stream *o, const void *p, uint64_t n)
{
    put_u64(o, n);
    put(o, p, (size_t)n);
}
static void put_pad(out_stream *o)
{
    static const uint8_t zeros[MAX_ALIGN];
    put(o, zeros, (size_t)((o->align - o->pos % o->align) % o->align));
}

/* The data of one streamed tensor: what its producer may still write. */
struct edgellm_gguf_sink {
    out_stream *o;
    uint64_t    left;       /* declared bytes not yet written */
    bool        overrun;    /* a put exceeded the declared size */
};

bool edgellm_gguf_sink_put(edgellm_gguf_sink *s, const void *data, size_t n)
{
    if (!s || (n && !data)) return false;
    if (n > s->left) { s->overrun = true; return false; }
    put(s->o, data, n);
    s->left -= n;
    return !s->o->err;
}

static void put_kv(out_stream *o, const wkv *kv)
{
    put_str(o, kv->key, strlen(kv->key));
    put_u32(o, (uint32_t)kv->type);
    if (kv->type == EDGELLM_GGUF_STRING) {
        put_str(o, kv->bytes, kv->len);
    } else if (kv->type == EDGELLM_GGUF_ARRAY) {
        put_u32(o, (uint32_t)kv->elem_type);
        put_u64(o, kv->count);
        if (kv->elem_type == EDGELLM_GGUF_STRING)
            for (uint64_t j = 0; j < kv->count; j++) put_str(o, kv->strs[j], kv->lens[j]);
        else
            put(o, kv->bytes, (size_t)(kv->count * edgellm_gguf_vtype_size(kv->elem_type)));
    } else {
        put(o, kv->scalar, edgellm_gguf_vtype_size(kv->type));
    }
}

static bool host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

edgellm_status edgellm_gguf_writer_write(edgellm_gguf_writer *w, const char *path, edgellm_error *err)
{
    if (!w || !path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "gguf writer: NULL writer or path");
    if (w->misuse[0]) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %s", path, w->misuse);
    /* scalars and array payloads are stored in host order: big-endian hosts are not handled */
    if (!host_is_little_endian())
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: writing GGUF on a big-endian host", path);

    /* data offsets: each tensor starts at a multiple of the alignment inside the data section */
    const uint32_t align = w->align ? w->align : ALIGN;
    uint64_t off = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        if (!edgellm_add_u64(off, w->t[i].size_bytes, &off) || !edgellm_add_u64(off, align - 1, &off))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: tensor data exceeds 2^64 bytes", path);
        off -= off % align;
    }

    edgellm_out_file of;
    edgellm_status rc = edgellm_out_open(&of, path, "wb", err);
    if (rc != EDGELLM_OK) return rc;
    out_stream o = {of.f, 0, 0, align};

    put_u32(&o, EDGELLM_GGUF_MAGIC);
    put_u32(&o, 3);
    put_u64(&o, (uint64_t)w->n_t);
    put_u64(&o, (uint64_t)w->n_kv);
    for (int64_t i = 0; i < w->n_kv; i++) put_kv(&o, &w->kv[i]);
    for (int64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&o, t->name, strlen(t->name));
        put_u32(&o, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(&o, (uint64_t)t->ne[d]);
        put_u32(&o, (uint32_t)t->type);
        put_u64(&o, t->offset);
    }
    put_pad(&o);
    for (int64_t i = 0; i < w->n_t && !o.err; i++) {
        const wtensor *t = &w->t[i];
        if (t->produce) {
            edgellm_gguf_sink sink = {&o, t->size_bytes, false};
            rc = t->produce(t->user, t->tag, &sink, err);
            if (rc == EDGELLM_OK && !o.err && (sink.overrun || sink.left))
                rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: tensor %s: producer wrote %s bytes than its %llu",
                                  path, t->name, sink.overrun ? "more" : "fewer", (unsigned long long)t->size_bytes);
            if (rc != EDGELLM_OK) {
                edgellm_out_discard(&of);
                /* the producer stopped because the output could not take its bytes: say that */
                if (o.err) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", path, strerror(o.err));
                return rc;
            }
        } else {
            put(&o, t->data, (size_t)t->size_bytes);
        }
        put_pad(&o);
    }
    if (o.err) {
        edgellm_out_discard(&of);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", path, strerror(o.err));
    }
    return edgellm_out_commit(&of, err);   /* flush, fsync, rename into place */
}
