/*
 * gguf_read.c — GGUF v2/v3 reader: maps a file read-only and validates all of it before
 * anything is handed out.
 *
 * Spec: ggml-org/ggml docs/gguf.md, include/gguf.h and src/gguf.cpp. Layout
 * (little-endian):
 *
 *   offset  field
 *   0       u32 magic  47 47 55 46 ("GGUF")
 *   4       u32 version (2 or 3; 1 used 32-bit counts and is rejected)
 *   8       u64 tensor_count
 *   16      u64 metadata_kv_count
 *   24      kv[]:      string key (u64 len + bytes), u32 value_type, value
 *                      value = scalar | string | array{u32 elem_type, u64 count, elems}
 *           tensor_info[]: string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset
 *           zero padding to general.alignment (default 32)
 *           tensor data: each tensor at data_start + offset, offset % alignment == 0
 *
 * Example: the first 32 bytes of stories260K.gguf
 *   47 47 55 46 | 03 00 00 00 | 30 00 00 00 00 00 00 00 | 13 00 00 00 00 00 00 00 | 14 00 ..
 *   magic         version 3     48 tensors                19 kv pairs               first key length 20
 *
 * Validation (every check overflow-safe, every count bounded by the bytes that remain, so no
 * allocation is ever proportional to an unchecked number): string and array lengths, value
 * types, bool values 0/1, nesting depth of arrays, empty and duplicate keys, general.alignment (a
 * power of two, at least 8), n_dims in 1..4, non-negative dims whose product fits in int64, known tensor
 * types, row length a multiple of the type's block size, offsets aligned, inside the file and
 * not overlapping, unique tensor names.
 */
#include "gguf.h"
#include "type_layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARRAY_DEPTH 4         /* arrays of arrays nest at most this deep     */
#define MAX_KEY_LEN 65535         /* docs/gguf.md: keys are at most 65535 bytes   */
#define MAX_NAME_LEN 255          /* tensor names (llama.cpp itself allows 63)    */
#define MAX_ALIGNMENT (1u << 20)

typedef struct {
    edgellm_str key;
    edgellm_gguf_vtype type;
    const uint8_t *val;          /* the value's bytes (for arrays: the elements)   */
    edgellm_gguf_vtype elem_type; /* arrays only                                   */
    uint64_t count;               /* arrays only                                   */
    uint64_t *str_off;            /* STRING arrays: offset of element j from val   */
} gguf_kv;

struct edgellm_gguf {
    char *path;
    const uint8_t *base;
    uint64_t size;
    int mapped;                 /* 1: munmap(map, map_len) on close                    */
    void *map;                  /* the mapping: base, or the page below it (open_fd)   */
    size_t map_len;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    gguf_kv *kv;
    int64_t n_tensors;
    edgellm_gguf_tensor *tensors;
    int64_t *by_name;             /* tensor indices sorted by name                  */
};

/* ---- a bounds-checked cursor over the mapping ---- */
typedef struct {
    const uint8_t *p;
    uint64_t size, pos;
    const char *path;
    edgellm_error *err;
} cursor;

static uint64_t remaining(const cursor *c) { return c->size - c->pos; }

static edgellm_status truncated(cursor *c, const char *what)
{
    return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: truncated file: %s at byte %llu runs past the end (%llu bytes)",
                        c->path, what, (unsigned long long)c->pos, (unsigned long long)c->size);
}

static edgellm_status rd(cursor *c, void *out, uint64_t n, const char *what)
{
    if (remaining(c) < n) return truncated(c, what);
    memcpy(out, c->p + c->pos, (size_t)n);
    c->pos += n;
    return EDGELLM_OK;
}

static edgellm_status rd_str(cursor *c, edgellm_str *s, uint64_t max_len, const char *what)
{
    uint64_t len = 0;
    edgellm_status rc = rd(c, &len, 8, what);
    if (rc) return rc;
    if (len > remaining(c))
        return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: %s length %llu at byte %llu runs past the end of the file",
                            c->path, what, (unsigned long long)len, (unsigned long long)(c->pos - 8));
    if (len > max_len)
        return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: %s length %llu at byte %llu exceeds the limit of %llu",
                            c->path, what, (unsigned long long)len, (unsigned long long)(c->pos - 8),
                            (unsigned long long)max_len);
    s->ptr = (const char *)c->p + c->pos;
    s->len = len;
    c->pos += len;
    return EDGELLM_OK;
}

size_t edgellm_gguf_vtype_size(edgellm_gguf_vtype t)
{
    switch (t) {
    case EDGELLM_GGUF_UINT8: case EDGELLM_GGUF_INT8: case EDGELLM_GGUF_BOOL: return 1;
    case EDGELLM_GGUF_UINT16: case EDGELLM_GGUF_INT16: return 2;
    case EDGELLM_GGUF_UINT32: case EDGELLM_GGUF_INT32: case EDGELLM_GGUF_FLOAT32: return 4;
    case EDGELLM_GGUF_UINT64: case EDGELLM_GGUF_INT64: case EDGELLM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

const char *edgellm_gguf_vtype_name(edgellm_gguf_vtype t)
{
    static const char *names[] = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                  "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
    return (unsigned)t < EDGELLM_GGUF_TYPE_COUNT ? names[t] : "?";
}

static void key_for_msg(edgellm_str k, char *buf, size_t size)
{
    size_t n = k.len < size - 1 ? (size_t)k.len : size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)k.ptr[i];
        buf[i] = (ch >= 32 && ch < 127) ? (char)ch : '?';
    }
    buf[n] = 0;
}

/* Skip (and validate) one value of type t at the cursor. depth counts array nesting. */
static edgellm_status skip_value(cursor *c, uint32_t t, int depth, const char *key)
{
    if (t >= EDGELLM_GGUF_TYPE_COUNT)
        return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: key '%s': unknown value type %u", c->path, key, t);
    if (t == EDGELLM_GGUF_STRING) {
        edgellm_str s;
        return rd_str(c, &s, UINT64_MAX, "string value");
    }
    if (t == EDGELLM_GGUF_ARRAY) {
        if (depth >= MAX_ARRAY_DEPTH)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: key '%s': arrays nested deeper than %d levels",
                                c->path, key, MAX_ARRAY_DEPTH);
        uint32_t et = 0;
        uint64_t count = 0;
        edgellm_status rc;
        if ((rc = rd(c, &et, 4, "array type")) || (rc = rd(c, &count, 8, "array length"))) return rc;
        if (et >= EDGELLM_GGUF_TYPE_COUNT)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: key '%s': unknown array element type %u", c->path, key, et);
        size_t es = edgellm_gguf_vtype_size(et);
        uint64_t min_elem = es ? es : (et == EDGELLM_GGUF_STRING ? 8 : 12);
        if (count > remaining(c) / min_elem)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT,
                                "%s: key '%s': array of %llu %s elements does not fit in the %llu bytes left",
                                c->path, key, (unsigned long long)count, edgellm_gguf_vtype_name(et),
                                (unsigned long long)remaining(c));
        if (es && et != EDGELLM_GGUF_BOOL) { c->pos += count * es; return EDGELLM_OK; }
        for (uint64_t i = 0; i < count; i++)
            if ((rc = skip_value(c, et, depth + 1, key))) return rc;
        return EDGELLM_OK;
    }
    size_t n = edgellm_gguf_vtype_size(t);
    if (remaining(c) < n) return truncated(c, "value");
    if (t == EDGELLM_GGUF_BOOL && c->p[c->pos] > 1)
        return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: key '%s': bool value %u is neither 0 nor 1", c->path, key,
                            c->p[c->pos]);
    c->pos += n;
    return EDGELLM_OK;
}

static int cmp_str(edgellm_str a, edgellm_str b)
{
    uint64_t n = a.len < b.len ? a.len : b.len;
    int r = memcmp(a.ptr, b.ptr, (size_t)n);
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}

bool edgellm_str_eq(edgellm_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* qsort context: C11 has no qsort_r, so sort indices with a small merge sort instead. */
typedef int (*idx_cmp)(const void *ctx, int64_t a, int64_t b);
static void merge_sort(int64_t *v, int64_t *tmp, int64_t n, idx_cmp cmp, const void *ctx)
{
    if (n < 2) return;
    int64_t h = n / 2;
    merge_sort(v, tmp, h, cmp, ctx);
    merge_sort(v + h, tmp, n - h, cmp, ctx);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}
static int cmp_tensor_name(const void *ctx, int64_t a, int64_t b)
{
    const edgellm_gguf *g = ctx;
    return cmp_str(g->tensors[a].name, g->tensors[b].name);
}
static int cmp_tensor_offset(const void *ctx, int64_t a, int64_t b)
{
    const edgellm_gguf *g = ctx;
    uint64_t x = g->tensors[a].offset, y = g->tensors[b].offset;
    return x < y ? -1 : x > y;
}
static int cmp_kv_key(const void *ctx, int64_t a, int64_t b)
{
    const edgellm_gguf *g = ctx;
    return cmp_str(g->kv[a].key, g->kv[b].key);
}

static edgellm_status parse_kv(edgellm_gguf *g, cursor *c)
{
    edgellm_status rc;
    for (int64_t i = 0; i < g->n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        char name[80];
        if ((rc = rd_str(c, &kv->key, MAX_KEY_LEN, "metadata key"))) return rc;
        if (kv->key.len == 0)   /* docs/gguf.md: keys are dotted lower_snake_case names */
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: metadata key %lld is empty", c->path, (long long)i);
        key_for_msg(kv->key, name, sizeof name);
        uint32_t t = 0;
        if ((rc = rd(c, &t, 4, "value type"))) return rc;
        if (t >= EDGELLM_GGUF_TYPE_COUNT)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: key '%s': unknown value type %u", c->path, name, t);
        kv->type = (edgellm_gguf_vtype)t;
        if (t == EDGELLM_GGUF_ARRAY) {
            uint64_t start = c->pos;
            uint32_t et = 0;
            uint64_t count = 0;
            if ((rc = skip_value(c, t, 0, name))) return rc;   /* validates the whole array */
            memcpy(&et, c->p + start, 4);
            memcpy(&count, c->p + start + 4, 8);
            kv->elem_type = (edgellm_gguf_vtype)et;
            kv->count = count;
            kv->val = c->p + start + 12;
            if (et == EDGELLM_GGUF_STRING && count > 0) {
                /* count <= bytes/8 was checked: this allocation is bounded by the file size */
                kv->str_off = edgellm_malloc((size_t)count * sizeof(uint64_t));
                if (!kv->str_off) return edgellm_fail_nomem(c->err, c->path);
                uint64_t off = 0;
                for (uint64_t j = 0; j < count; j++) {
                    kv->str_off[j] = off;
                    off += 8 + edgellm_rd_u64(kv->val + off);
                }
            }
        } else {
            kv->val = c->p + c->pos;
            if ((rc = skip_value(c, t, 0, name))) return rc;
        }
    }
    /* duplicate keys */
    if (g->n_kv > 1) {
        int64_t *idx = edgellm_malloc((size_t)g->n_kv * 2 * sizeof(int64_t));
        if (!idx) return edgellm_fail_nomem(c->err, c->path);
        for (int64_t i = 0; i < g->n_kv; i++) idx[i] = i;
        merge_sort(idx, idx + g->n_kv, g->n_kv, cmp_kv_key, g);
        for (int64_t i = 1; i < g->n_kv; i++) {
            if (cmp_str(g->kv[idx[i - 1]].key, g->kv[idx[i]].key) == 0) {
                char name[80];
                key_for_msg(g->kv[idx[i]].key, name, sizeof name);
                edgellm_free(idx);
                return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' appears more than once", c->path, name);
            }
        }
        edgellm_free(idx);
    }
    return EDGELLM_OK;
}

static edgellm_status parse_tensors(edgellm_gguf *g, cursor *c)
{
    edgellm_status rc;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        edgellm_gguf_tensor *t = &g->tensors[i];
        char name[80];
        if ((rc = rd_str(c, &t->name, MAX_NAME_LEN, "tensor name"))) return rc;
        key_for_msg(t->name, name, sizeof name);
        if (t->name.len == 0)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor %lld has an empty name", c->path, (long long)i);
        if ((rc = rd(c, &t->n_dims, 4, "tensor n_dims"))) return rc;
        if (t->n_dims < 1 || t->n_dims > EDGELLM_GGUF_MAX_DIMS)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': n_dims %u is not in 1..%d", c->path, name,
                                t->n_dims, EDGELLM_GGUF_MAX_DIMS);
        uint64_t n = 1;
        for (int d = 0; d < EDGELLM_GGUF_MAX_DIMS; d++) {
            uint64_t v = 1;
            if ((uint32_t)d < t->n_dims && (rc = rd(c, &v, 8, "tensor dimension"))) return rc;
            if (v > (uint64_t)INT64_MAX)
                return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': dimension %d is negative (%lld)", c->path,
                                    name, d, (long long)v);
            t->ne[d] = (int64_t)v;
            if (!edgellm_mul_u64(n, v, &n) || n > (uint64_t)INT64_MAX)
                return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': element count overflows 64 bits", c->path,
                                    name);
        }
        t->n_elements = n;
        uint32_t type = 0;
        if ((rc = rd(c, &type, 4, "tensor type")) || (rc = rd(c, &t->offset, 8, "tensor offset"))) return rc;
        const edgellm_type_layout *tr = edgellm_type_layout_get((int)type);
        if (!tr)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': unknown tensor type %u", c->path, name, type);
        t->type = (int)type;
        if (t->ne[0] % tr->blck_size != 0)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT,
                                "%s: tensor '%s': row length %lld is not a multiple of %s's block size %d", c->path, name,
                                (long long)t->ne[0], tr->name, tr->blck_size);
        uint64_t rows = t->ne[0] ? n / (uint64_t)t->ne[0] : 0;
        if (tr->row_group > 1 && (t->n_dims != 2 || rows % (uint64_t)tr->row_group != 0))
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT,
                                "%s: tensor '%s': type %s is a matrix layout of %d-row groups, but the tensor has "
                                "%u dimensions and %llu rows", c->path, name, tr->name, tr->row_group,
                                (unsigned)t->n_dims, (unsigned long long)rows);
        uint64_t row_bytes = (uint64_t)(t->ne[0] / tr->blck_size) * tr->type_size;  /* ne0 < 2^63, type_size small */
        if (t->ne[0] && row_bytes / tr->type_size != (uint64_t)(t->ne[0] / tr->blck_size))
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': size overflows", c->path, name);
        if (!edgellm_mul_u64(rows, row_bytes, &t->size_bytes))
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': size in bytes overflows 64 bits", c->path, name);
        if (t->size_bytes > c->size)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' needs %llu bytes but the file has %llu", c->path,
                                name, (unsigned long long)t->size_bytes, (unsigned long long)c->size);
    }
    return EDGELLM_OK;
}

static edgellm_status place_tensors(edgellm_gguf *g, cursor *c)
{
    /* data section starts at the next alignment boundary after the tensor infos */
    uint64_t a = g->alignment;
    uint64_t end = c->pos;
    g->data_offset = end + (a - end % a) % a;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        edgellm_gguf_tensor *t = &g->tensors[i];
        char name[80];
        key_for_msg(t->name, name, sizeof name);
        if (t->offset % a != 0)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': offset %llu is not a multiple of the alignment %llu",
                                c->path, name, (unsigned long long)t->offset, (unsigned long long)a);
        uint64_t start, stop;
        if (!edgellm_add_u64(g->data_offset, t->offset, &start) || !edgellm_add_u64(start, t->size_bytes, &stop) ||
            stop > g->size)
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT,
                                "%s: tensor '%s': data (offset %llu, %llu bytes) runs past the end of the file (%llu bytes); "
                                "truncated download?",
                                c->path, name, (unsigned long long)t->offset, (unsigned long long)t->size_bytes,
                                (unsigned long long)g->size);
        t->data = g->base + start;
    }
    if (g->n_tensors < 1) return EDGELLM_OK;
    int64_t *idx = edgellm_malloc((size_t)g->n_tensors * 2 * sizeof(int64_t));
    if (!idx) return edgellm_fail_nomem(c->err, c->path);
    for (int64_t i = 0; i < g->n_tensors; i++) idx[i] = i;
    merge_sort(idx, idx + g->n_tensors, g->n_tensors, cmp_tensor_offset, g);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        const edgellm_gguf_tensor *p = &g->tensors[idx[i - 1]], *q = &g->tensors[idx[i]];
        if (p->offset + p->size_bytes > q->offset && p->size_bytes && q->size_bytes) {
            char n1[80], n2[80];
            key_for_msg(p->name, n1, sizeof n1);
            key_for_msg(q->name, n2, sizeof n2);
            edgellm_free(idx);
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the data section", c->path,
                                n1, n2);
        }
    }
    /* names: sorted index for lookup, duplicates rejected */
    for (int64_t i = 0; i < g->n_tensors; i++) idx[i] = i;
    merge_sort(idx, idx + g->n_tensors, g->n_tensors, cmp_tensor_name, g);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        if (cmp_str(g->tensors[idx[i - 1]].name, g->tensors[idx[i]].name) == 0) {
            char n1[80];
            key_for_msg(g->tensors[idx[i]].name, n1, sizeof n1);
            edgellm_free(idx);
            return edgellm_fail(c->err, EDGELLM_ERR_FORMAT, "%s: tensor name '%s' appears more than once", c->path, n1);
        }
    }
    g->by_name = edgellm_realloc(idx, (size_t)g->n_tensors * sizeof(int64_t));
    if (!g->by_name) { g->by_name = idx; }
    return EDGELLM_OK;
}

static edgellm_status parse(edgellm_gguf *g, edgellm_error *err)
{
    cursor c = {g->base, g->size, 0, g->path, err};
    uint32_t magic;
    edgellm_status rc;
    if (g->size < 4) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not a GGUF file (%llu bytes, too short)", g->path,
                                         (unsigned long long)g->size);
    memcpy(&magic, g->base, 4);
    if (magic != EDGELLM_GGUF_MAGIC)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not a GGUF file (magic %02x %02x %02x %02x, expected 'GGUF')",
                            g->path, g->base[0], g->base[1], g->base[2], g->base[3]);
    c.pos = 4;
    if ((rc = rd(&c, &g->version, 4, "version"))) return rc;
    if (g->version == 1)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: GGUFv1 is no longer supported (only GGUF v2 and v3); "
                            "re-convert the model with a current tool", g->path);
    if (g->version != 2 && g->version != 3) {
        if (g->version != 0 && (g->version & 0xFFFF) == 0)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: GGUF version %u looks byte-swapped: big-endian files are not "
                                "supported", g->path, g->version);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: unsupported GGUF version %u (only v2 and v3)", g->path, g->version);
    }
    uint64_t nt = 0, nkv = 0;
    if ((rc = rd(&c, &nt, 8, "tensor count")) || (rc = rd(&c, &nkv, 8, "metadata count"))) return rc;
    /* each kv needs >= 13 bytes (key length, type, 1-byte value); each tensor info >= 33 */
    if (nkv > remaining(&c) / 13)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: metadata count %llu cannot fit in a %llu-byte file", g->path,
                            (unsigned long long)nkv, (unsigned long long)g->size);
    if (nt > remaining(&c) / 33)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor count %llu cannot fit in a %llu-byte file", g->path,
                            (unsigned long long)nt, (unsigned long long)g->size);
    g->n_kv = (int64_t)nkv;
    g->n_tensors = (int64_t)nt;
    if (nkv && !(g->kv = edgellm_calloc((size_t)nkv, sizeof *g->kv))) return edgellm_fail_nomem(err, g->path);
    if (nt && !(g->tensors = edgellm_calloc((size_t)nt, sizeof *g->tensors))) return edgellm_fail_nomem(err, g->path);
    if ((rc = parse_kv(g, &c))) return rc;

    g->alignment = EDGELLM_GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = edgellm_gguf_find_key(g, "general.alignment");
    if (ai >= 0) {
        const gguf_kv *kv = &g->kv[ai];
        if (kv->type != EDGELLM_GGUF_UINT32)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: general.alignment must be UINT32, not %s", g->path,
                                edgellm_gguf_vtype_name(kv->type));
        uint32_t a = edgellm_rd_u32(kv->val);
        /* ggml-org/ggml docs/gguf.md: "must be a multiple of 8". Alignment 1 put Q4_0 blocks at
         * odd addresses: misaligned loads of their f16 scales (found by fuzz_gguf). */
        if (a < 8 || (a & (a - 1)) || a > MAX_ALIGNMENT)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: general.alignment %u is not a power of two in 8..%u", g->path,
                                a, MAX_ALIGNMENT);
        g->alignment = a;
    }
    if ((rc = parse_tensors(g, &c))) return rc;
    return place_tensors(g, &c);
}

static edgellm_status finish_open(edgellm_gguf *g, edgellm_gguf **out, edgellm_error *err)
{
    edgellm_status rc = parse(g, err);
    if (rc) { edgellm_gguf_close(g); return rc; }
    *out = g;
    return EDGELLM_OK;
}

edgellm_status edgellm_gguf_open_memory(const void *data, size_t size, const char *name, edgellm_gguf **out,
                                        edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_gguf_open_memory: out is NULL");
    *out = NULL;
    if (!name) name = "(memory)";
    if (!data && size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: NULL buffer", name);
    edgellm_gguf *g = edgellm_calloc(1, sizeof *g);
    if (!g || !(g->path = edgellm_strdup(name))) { edgellm_free(g); return edgellm_fail_nomem(err, name); }
    g->base = data;
    g->size = size;
    return finish_open(g, out, err);
}

/* Map [offset, offset + size) of fd (size > 0) and parse it; name for messages. The
 * mapping starts at the page below offset, so offset need not be page aligned. */
static edgellm_status open_mapped(int fd, uint64_t offset, uint64_t size, const char *name, edgellm_gguf **out,
                                  edgellm_error *err)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), delta = offset % page;
    if (size > SIZE_MAX - delta)
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %llu bytes do not fit the address space", name,
                            (unsigned long long)size);
    const size_t map_len = (size_t)(size + delta);
    void *map = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)(offset - delta));
    if (map == MAP_FAILED) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: mmap failed: %s", name, strerror(errno));
    edgellm_gguf *g = edgellm_calloc(1, sizeof *g);
    if (!g || !(g->path = edgellm_strdup(name))) {
        edgellm_free(g);
        munmap(map, map_len);
        return edgellm_fail_nomem(err, name);
    }
    g->map = map;
    g->map_len = map_len;
    g->base = (const uint8_t *)map + delta;
    g->size = size;
    g->mapped = 1;
    /* Ask for huge pages on the mapping (a hint; nothing fails without it). Where the file
     * system keeps large folios in the page cache (ext4 on the dev VM's Linux 6.18), pages
     * read in through this mapping then come in 2 MiB folios mapped by one TLB entry each,
     * physically contiguous whatever order the first pass faults them in. Measured
     * on the dev VM (Linux 6.18, ext4; tinyllama Q4_0/Q8_0/Q4_K_M, bench tg64 at 1 and 2
     * threads, cold file, alternating runs): ~5 % more tok/s; smaps showed the whole
     * file FilePmdMapped. Resident memory grows only where a 2 MiB folio is partly used
     * (the token-embedding rows around the ones looked up: +9 MiB on tinyllama). */
    edgellm_hint_huge_pages(map, map_len);
    return finish_open(g, out, err);
}

/* fstat fd: a regular file, its size in *file_size. */
static edgellm_status check_regular(int fd, const char *name, uint64_t *file_size, edgellm_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode)) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", name);
    *file_size = (uint64_t)st.st_size;
    return EDGELLM_OK;
}

edgellm_status edgellm_gguf_open(const char *path, edgellm_gguf **out, edgellm_error *err)
{
    if (!out || !path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_gguf_open: NULL argument");
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer before the regular-file
     * check below could refuse it (no effect on regular files) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
    uint64_t size = 0;
    edgellm_status rc = check_regular(fd, path, &size, err);
    if (!rc && size == 0) rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: empty file, not a GGUF model", path);
    if (!rc) rc = open_mapped(fd, 0, size, path, out, err);
    close(fd);   /* the mapping keeps the file */
    return rc;
}

edgellm_status edgellm_gguf_open_fd(int fd, uint64_t offset, uint64_t size, const char *name, edgellm_gguf **out,
                                    edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_gguf_open_fd: out is NULL");
    *out = NULL;
    if (!name) name = "(file descriptor)";
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: file descriptor %d is not open", name, fd);
    uint64_t file_size = 0;
    edgellm_status rc = check_regular(fd, name, &file_size, err);
    if (rc) return rc;
    if (offset > file_size || (size && size > file_size - offset))
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %llu bytes at offset %llu lie beyond the end of the file "
                            "(%llu bytes)", name, (unsigned long long)size, (unsigned long long)offset,
                            (unsigned long long)file_size);
    if (!size) size = file_size - offset;
    if (!size) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: empty, not a GGUF model", name);
    return open_mapped(fd, offset, size, name, out, err);
}

void edgellm_gguf_close(edgellm_gguf *g)
{
    if (!g) return;
    for (int64_t i = 0; i < g->n_kv && g->kv; i++) edgellm_free(g->kv[i].str_off);
    edgellm_free(g->kv);
    edgellm_free(g->tensors);
    edgellm_free(g->by_name);
    if (g->mapped) munmap(g->map, g->map_len);
    edgellm_free(g->path);
    edgellm_free(g);
}

const char *edgellm_gguf_path(const edgellm_gguf *g) { return g->path; }
uint32_t edgellm_gguf_version(const edgellm_gguf *g) { return g->version; }
uint32_t edgellm_gguf_alignment(const edgellm_gguf *g) { return g->alignment; }
uint64_t edgellm_gguf_data_offset(const edgellm_gguf *g) { return g->data_offset; }
uint64_t edgellm_gguf_file_size(const edgellm_gguf *g) { return g->size; }
int64_t edgellm_gguf_n_kv(const edgellm_gguf *g) { return g->n_kv; }
int64_t edgellm_gguf_n_tensors(const edgellm_gguf *g) { return g->n_tensors; }

int64_t edgellm_gguf_find_key(const edgellm_gguf *g, const char *key)
{
    for (int64_t i = 0; i < g->n_kv; i++)
        if (edgellm_str_eq(g->kv[i].key, key)) return i;
    return -1;
}

edgellm_str edgellm_gguf_key(const edgellm_gguf *g, int64_t i)
{
    edgellm_str none = {"", 0};
    return (i >= 0 && i < g->n_kv) ? g->kv[i].key : none;
}

edgellm_gguf_vtype edgellm_gguf_kv_type(const edgellm_gguf *g, int64_t i)
{
    return (i >= 0 && i < g->n_kv) ? g->kv[i].type : EDGELLM_GGUF_TYPE_COUNT;
}

const void *edgellm_gguf_kv_data(const edgellm_gguf *g, int64_t i)
{
    if (i < 0 || i >= g->n_kv || !edgellm_gguf_vtype_size(g->kv[i].type)) return NULL;
    return g->kv[i].val;
}

/* Integer value of a scalar kv; false for non-integer types or unsigned values > INT64_MAX. */
static bool kv_int(const gguf_kv *kv, int64_t *out)
{
    const uint8_t *v = kv->val;
    switch (kv->type) {
    case EDGELLM_GGUF_UINT8: case EDGELLM_GGUF_BOOL: *out = v[0]; return true;
    case EDGELLM_GGUF_INT8: *out = (int8_t)v[0]; return true;
    case EDGELLM_GGUF_UINT16: *out = edgellm_rd_u16(v); return true;
    case EDGELLM_GGUF_INT16: *out = (int16_t)edgellm_rd_u16(v); return true;
    case EDGELLM_GGUF_UINT32: *out = edgellm_rd_u32(v); return true;
    case EDGELLM_GGUF_INT32: *out = (int32_t)edgellm_rd_u32(v); return true;
    case EDGELLM_GGUF_UINT64: { uint64_t u = edgellm_rd_u64(v); if (u > (uint64_t)INT64_MAX) return false; *out = (int64_t)u; return true; }
    case EDGELLM_GGUF_INT64: *out = (int64_t)edgellm_rd_u64(v); return true;
    default: return false;
    }
}

static const gguf_kv *find(const edgellm_gguf *g, const char *key)
{
    int64_t i = edgellm_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->kv[i];
}

bool edgellm_gguf_get_i64(const edgellm_gguf *g, const char *key, int64_t *out)
{
    const gguf_kv *kv = find(g, key);
    return kv && kv_int(kv, out);
}

bool edgellm_gguf_get_i32(const edgellm_gguf *g, const char *key, int32_t *out)
{
    int64_t v;
    if (!edgellm_gguf_get_i64(g, key, &v) || v < INT32_MIN || v > INT32_MAX) return false;
    *out = (int32_t)v;
    return true;
}

bool edgellm_gguf_get_u32(const edgellm_gguf *g, const char *key, uint32_t *out)
{
    int64_t v;
    if (!edgellm_gguf_get_i64(g, key, &v) || v < 0 || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

bool edgellm_gguf_get_f32(const edgellm_gguf *g, const char *key, float *out)
{
    const gguf_kv *kv = find(g, key);
    if (!kv) return false;
    if (kv->type == EDGELLM_GGUF_FLOAT32) { uint32_t u = edgellm_rd_u32(kv->val); memcpy(out, &u, 4); return true; }
    if (kv->type == EDGELLM_GGUF_FLOAT64) { uint64_t u = edgellm_rd_u64(kv->val); double d; memcpy(&d, &u, 8); *out = (float)d; return true; }
    int64_t v;
    if (kv->type != EDGELLM_GGUF_BOOL && kv_int(kv, &v)) { *out = (float)v; return true; }
    return false;
}

bool edgellm_gguf_get_bool(const edgellm_gguf *g, const char *key, bool *out)
{
    const gguf_kv *kv = find(g, key);
    int64_t v;
    if (!kv || !kv_int(kv, &v)) return false;
    *out = v != 0;
    return true;
}

bool edgellm_gguf_get_str(const edgellm_gguf *g, const char *key, edgellm_str *out)
{
    const gguf_kv *kv = find(g, key);
    if (!kv || kv->type != EDGELLM_GGUF_STRING) return false;
    out->len = edgellm_rd_u64(kv->val);
    out->ptr = (const char *)kv->val + 8;
    return true;
}

bool edgellm_gguf_arr_info(const edgellm_gguf *g, const char *key, edgellm_gguf_vtype *elem_type, uint64_t *count)
{
    const gguf_kv *kv = find(g, key);
    if (!kv || kv->type != EDGELLM_GGUF_ARRAY) return false;
    if (elem_type) *elem_type = kv->elem_type;
    if (count) *count = kv->count;
    return true;
}

const void *edgellm_gguf_arr_data(const edgellm_gguf *g, const char *key)
{
    const gguf_kv *kv = find(g, key);
    if (!kv || kv->type != EDGELLM_GGUF_ARRAY || !edgellm_gguf_vtype_size(kv->elem_type)) return NULL;
    return kv->val;
}

bool edgellm_gguf_arr_str(const edgellm_gguf *g, const char *key, uint64_t j, edgellm_str *out)
{
    const gguf_kv *kv = find(g, key);
    if (!kv || kv->type != EDGELLM_GGUF_ARRAY || kv->elem_type != EDGELLM_GGUF_STRING || j >= kv->count) return false;
    const uint8_t *p = kv->val + kv->str_off[j];
    out->len = edgellm_rd_u64(p);
    out->ptr = (const char *)p + 8;
    return true;
}

void edgellm_gguf_format_value(const edgellm_gguf *g, int64_t i, char *buf, size_t size)
{
    if (!size) return;
    buf[0] = 0;
    if (i < 0 || i >= g->n_kv) return;
    const gguf_kv *kv = &g->kv[i];
    int64_t v;
    switch (kv->type) {
    case EDGELLM_GGUF_FLOAT32: { float f; uint32_t u = edgellm_rd_u32(kv->val); memcpy(&f, &u, 4); snprintf(buf, size, "%g", f); return; }
    case EDGELLM_GGUF_FLOAT64: { double d; uint64_t u = edgellm_rd_u64(kv->val); memcpy(&d, &u, 8); snprintf(buf, size, "%g", d); return; }
    case EDGELLM_GGUF_BOOL: snprintf(buf, size, "%s", kv->val[0] ? "true" : "false"); return;
    case EDGELLM_GGUF_UINT64: snprintf(buf, size, "%llu", (unsigned long long)edgellm_rd_u64(kv->val)); return;
    case EDGELLM_GGUF_STRING: {
        uint64_t len = edgellm_rd_u64(kv->val);
        const char *s = (const char *)kv->val + 8;
        size_t o = 0;
        buf[o++] = '"';
        /* room kept: the widest escape (4) + "..." (3) + closing quote + NUL = 9 bytes; with
         * 5 an escape ending at size-2 put the last '.' at buf[size] (found by fuzz_gguf,
         * regression tests/corpus/gguf/format-value-escape-overflow.gguf) */
        for (uint64_t k = 0; k < len && o + 9 < size; k++) {
            unsigned char ch = (unsigned char)s[k];
            if (ch == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
            else if (ch < 32 || ch == 127) { o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch); }
            else buf[o++] = (char)ch;
            if (k + 1 < len && o + 9 >= size) { buf[o++] = '.'; buf[o++] = '.'; buf[o++] = '.'; break; }
        }
        if (o + 1 < size) buf[o++] = '"';
        buf[o < size ? o : size - 1] = 0;
        return;
    }
    case EDGELLM_GGUF_ARRAY:
        snprintf(buf, size, "[%llu x %s]", (unsigned long long)kv->count, edgellm_gguf_vtype_name(kv->elem_type));
        return;
    default:
        if (kv_int(kv, &v)) snprintf(buf, size, "%lld", (long long)v);
        return;
    }
}

const edgellm_gguf_tensor *edgellm_gguf_tensor_at(const edgellm_gguf *g, int64_t i)
{
    return (i >= 0 && i < g->n_tensors) ? &g->tensors[i] : NULL;
}

const edgellm_gguf_tensor *edgellm_gguf_find_tensor(const edgellm_gguf *g, const char *name)
{
    edgellm_str key = {name, strlen(name)};
    int64_t lo = 0, hi = g->n_tensors - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(g->tensors[g->by_name[mid]].name, key);
        if (c == 0) return &g->tensors[g->by_name[mid]];
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return NULL;
}
