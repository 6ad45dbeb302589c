/*
 * hf_safetensors.c — safetensors files, the weights of Hugging Face checkpoints: mapped
 * read-only, validated completely before any tensor is handed out, single files and
 * sharded checkpoints with their index; and the header writer of export.
 *
 * Format (huggingface/safetensors README.md, "Format"; the reference reader is
 * huggingface/safetensors safetensors/src/tensor.rs):
 *
 *   offset 0        u64 N, little-endian: bytes of the header
 *   offset 8        N bytes of UTF-8 JSON, starting with '{', maybe padded with spaces:
 *                     {"__metadata__": {"format": "pt"},
 *                      "NAME": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}, ...}
 *   offset 8 + N    the data: tensor NAME's bytes are data[BEGIN, END), row-major in the
 *                   order of `shape` (outermost first), little-endian elements
 *
 * Hex of a tiny file with one F32 tensor "w" of shape [2] (values 1.0, 2.0):
 *
 *   38 00 00 00 00 00 00 00                         N = 56
 *   7b 22 77 22 3a 7b 22 64 74 79 70 65 ...         {"w":{"dtype":"F32","shape":[2],
 *                                                    "data_offsets":[0,8]}}   (54 bytes)
 *   20 20                                           2 spaces: the data starts at 64
 *   00 00 80 3f 00 00 00 40                         1.0f, 2.0f
 *
 * What is checked (each failure names the file, and the tensor when there is one):
 *   - the file holds the 8-byte length; N <= 100,000,000 (the safetensors crate's
 *     MAX_HEADER_SIZE) and fits in the file; the header starts with '{', is UTF-8 and
 *     parses as one JSON object (only whitespace after it);
 *   - no key twice; names non-empty UTF-8 of at most 1024 bytes; __metadata__ maps
 *     strings to strings;
 *   - each tensor: dtype F32, F16 or BF16 (other dtypes of the spec are named and refused),
 *     shape a list of at most 8 non-negative integers, data_offsets [BEGIN, END] with
 *     BEGIN <= END <= the data's size, and END - BEGIN = product(shape) x element size
 *     (overflow-checked);
 *   - the tensors cover the data exactly: sorted by BEGIN, each starts where the previous
 *     ended, the first at 0, the last at the end (no overlap, no hole: the crate's own rule,
 *     so that a file cannot hide other content between tensors).
 * Sharded checkpoints (model.safetensors.index.json, {"weight_map": {"NAME": "FILE"}}):
 * every shard name is a plain file name in the folder (no '/', not starting with '.'), every
 * indexed tensor is in the shard the index names, every tensor of a shard is indexed to
 * that shard (so no name appears in two shards), and no name is indexed twice.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NAME_BYTES 1024
#define MAX_SHARDS 4096

typedef struct {
    char *path;                 /* for messages                                     */
    const uint8_t *bytes;       /* the whole file (mapping or caller's buffer)      */
    uint64_t size;
    bool mapped;                /* munmap on close                                  */
} st_file;

struct edgellm_st_set {
    st_file *files;
    int n_files;
    edgellm_st_tensor *t;       /* sorted by name                                   */
    int64_t n, cap;
};

void edgellm_st_close(edgellm_st_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) {
        if (s->files[i].mapped && s->files[i].size) munmap((void *)s->files[i].bytes, (size_t)s->files[i].size);
        edgellm_free(s->files[i].path);
    }
    for (int64_t i = 0; i < s->n; i++) edgellm_free((char *)s->t[i].name);
    edgellm_free(s->files);
    edgellm_free(s->t);
    edgellm_free(s);
}

int64_t edgellm_st_n_tensors(const edgellm_st_set *s) { return s ? s->n : 0; }
const edgellm_st_tensor *edgellm_st_tensor_at(const edgellm_st_set *s, int64_t i)
{
    return s && i >= 0 && i < s->n ? &s->t[i] : NULL;
}
int edgellm_st_n_files(const edgellm_st_set *s) { return s ? s->n_files : 0; }
const char *edgellm_st_file_path(const edgellm_st_set *s, int file)
{
    return s && file >= 0 && file < s->n_files ? s->files[file].path : "?";
}

const edgellm_st_tensor *edgellm_st_find(const edgellm_st_set *s, const char *name)
{
    if (!s) return NULL;
    int64_t lo = 0, hi = s->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, s->t[mid].name);
        if (!c) return &s->t[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

const char *edgellm_st_dtype_name(int type)
{
    return type == EDGELLM_TYPE_F32    ? "F32"
           : type == EDGELLM_TYPE_F16  ? "F16"
           : type == EDGELLM_TYPE_BF16 ? "BF16"
                                       : "?";
}

/* ---------------------------------------------------------------- one file ---- */

/* dtype -> edgellm type and element bytes; 0 for a dtype edgellm does not read. */
static int dtype_of(const char *d, int *type)
{
    if (!strcmp(d, "F32")) { *type = EDGELLM_TYPE_F32; return 4; }
    if (!strcmp(d, "F16")) { *type = EDGELLM_TYPE_F16; return 2; }
    if (!strcmp(d, "BF16")) { *type = EDGELLM_TYPE_BF16; return 2; }
    return 0;
}

static bool known_dtype(const char *d)   /* the spec's other dtypes */
{
    static const char *const K[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
                                    "I16", "U16", "I32", "U32", "F64", "I64", "U64", "C64"};
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        if (!strcmp(d, K[i])) return true;
    return false;
}

static int cmp_by_offset(const void *a, const void *b)
{
    const edgellm_st_tensor *x = *(edgellm_st_tensor *const *)a, *y = *(edgellm_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->size_bytes < y->size_bytes ? -1 : x->size_bytes > y->size_bytes;
}

static edgellm_status push_tensor(edgellm_st_set *s, const edgellm_st_tensor *t, const char *path, edgellm_error *err)
{
    if (s->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 64;
        edgellm_st_tensor *nt = edgellm_realloc(s->t, (size_t)cap * sizeof *nt);
        if (!nt) return edgellm_fail_nomem(err, path);
        s->t = nt;
        s->cap = cap;
    }
    s->t[s->n++] = *t;
    return EDGELLM_OK;
}

/* One tensor entry of the header (value v of key name). */
static edgellm_status parse_entry(edgellm_st_set *s, int fi, const char *name, const cJSON *v, uint64_t data_size,
                                  edgellm_error *err)
{
    const st_file *f = &s->files[fi];
    const char *path = f->path;
    const size_t nlen = strlen(name);
    if (nlen == 0) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: a tensor has an empty name", path);
    if (nlen > MAX_NAME_BYTES)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: a tensor name of %zu bytes (at most %d)", path, nlen,
                            MAX_NAME_BYTES);
    if (!edgellm_hf_utf8_ok(name, nlen))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: a tensor name is not UTF-8", path);
    if (!cJSON_IsObject(v))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' is not a JSON object", path, name);
    const cJSON *dt = edgellm_hf_get(v, "dtype"), *sh = edgellm_hf_get(v, "shape"),
                *off = edgellm_hf_get(v, "data_offsets");
    if (edgellm_hf_json_dup_key(v))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' has the field '%s' twice", path, name,
                            edgellm_hf_json_dup_key(v));
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' needs \"dtype\" (string), \"shape\" and "
                            "\"data_offsets\" (lists)", path, name);
    edgellm_st_tensor t = {0};
    t.file = fi;
    const int esize = dtype_of(dt->valuestring, &t.dtype);
    if (!esize)
        return edgellm_fail(err, known_dtype(dt->valuestring) ? EDGELLM_ERR_UNSUPPORTED : EDGELLM_ERR_FORMAT,
                            "%s: tensor '%s' has dtype %.16s%s; edgellm converts F32, F16 and BF16", path, name,
                            dt->valuestring, known_dtype(dt->valuestring) ? "" : " (not a safetensors dtype)");
    const int rank = cJSON_GetArraySize(sh);
    if (rank > EDGELLM_ST_MAX_DIMS)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions (at most %d)", path, name, rank,
                            EDGELLM_ST_MAX_DIMS);
    t.n_dims = rank;
    uint64_t n_el = 1;
    int d = 0;
    for (const cJSON *e = sh->child; e; e = e->next, d++) {
        int64_t x;
        if (!edgellm_hf_json_int(e, 0, INT64_MAX, &x))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer",
                                path, name, d);
        t.shape[d] = x;
        if (!edgellm_mul_u64(n_el, (uint64_t)x, &n_el))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': the shape overflows a 64-bit count", path,
                                name);
    }
    int64_t b, e;
    if (cJSON_GetArraySize(off) != 2 || !edgellm_hf_json_int(off->child, 0, INT64_MAX, &b) ||
        !edgellm_hf_json_int(off->child->next, 0, INT64_MAX, &e) || e < b)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s': data_offsets must be [BEGIN, END] with "
                            "0 <= BEGIN <= END", path, name);
    uint64_t bytes;
    if (!edgellm_mul_u64(n_el, (uint64_t)esize, &bytes) || bytes != (uint64_t)(e - b))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                            "%s: tensor '%s': dtype %s x %llu elements is not the %lld bytes of "
                            "data_offsets [%lld, %lld]",
                            path, name, dt->valuestring, (unsigned long long)n_el, (long long)(e - b), (long long)b,
                            (long long)e);
    if ((uint64_t)e > data_size)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets [%lld, %lld] run past the end of the data (%llu bytes)",
                            path, name, (long long)b, (long long)e, (unsigned long long)data_size);
    t.n_elements = n_el;
    t.size_bytes = bytes;
    t.offset = f->size - data_size + (uint64_t)b;
    t.data = f->bytes + t.offset;
    if (!(t.name = edgellm_strdup(name))) return edgellm_fail_nomem(err, path);
    edgellm_status rc = push_tensor(s, &t, path, err);
    if (rc != EDGELLM_OK) edgellm_free((char *)t.name);
    return rc;
}

/* The tensors [first, s->n) of file fi cover its data [0, data_size) exactly. */
static edgellm_status check_coverage(edgellm_st_set *s, int fi, int64_t first, uint64_t data_size, edgellm_error *err)
{
    const char *path = s->files[fi].path;
    const int64_t n = s->n - first;
    const uint64_t base = s->files[fi].size - data_size;
    if (n == 0) {
        if (data_size) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes of data but no tensor", path,
                                           (unsigned long long)data_size);
        return EDGELLM_OK;
    }
    edgellm_st_tensor **by = edgellm_malloc((size_t)n * sizeof *by);
    if (!by) return edgellm_fail_nomem(err, path);
    for (int64_t i = 0; i < n; i++) by[i] = &s->t[first + i];
    qsort(by, (size_t)n, sizeof *by, cmp_by_offset);
    edgellm_status rc = EDGELLM_OK;
    uint64_t at = 0;   /* end of the previous tensor, relative to the data */
    for (int64_t i = 0; i < n && rc == EDGELLM_OK; i++) {
        const uint64_t b = by[i]->offset - base;
        if (b < at)
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' (data_offsets from %llu) overlaps tensor '%s' "
                              "(which ends at %llu)", path, by[i]->name, (unsigned long long)b, by[i - 1]->name,
                              (unsigned long long)at);
        else if (b > at)
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT,
                              "%s: %llu bytes before tensor '%s' belong to no tensor (the data "
                              "must be covered exactly)",
                              path, (unsigned long long)(b - at), by[i]->name);
        at = b + by[i]->size_bytes;
    }
    if (rc == EDGELLM_OK && at != data_size)
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes after the last tensor belong to no tensor", path,
                          (unsigned long long)(data_size - at));
    edgellm_free(by);
    return rc;
}

static edgellm_status parse_file(edgellm_st_set *s, int fi, edgellm_error *err)
{
    const st_file *f = &s->files[fi];
    const char *path = f->path;
    if (f->size < 8)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes is too short for a safetensors header", path,
                            (unsigned long long)f->size);
    const uint64_t hn = edgellm_rd_u64(f->bytes);
    if (hn > EDGELLM_ST_MAX_HEADER)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                            "%s: header length %llu exceeds %llu bytes (not a safetensors file?)", path,
                            (unsigned long long)hn, (unsigned long long)EDGELLM_ST_MAX_HEADER);
    if (hn > f->size - 8)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: header of %llu bytes runs past the end of the %llu-byte file",
                            path, (unsigned long long)hn, (unsigned long long)f->size);
    const char *h = (const char *)f->bytes + 8;
    if (hn < 2 || h[0] != '{')
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the header does not start with '{' (not a safetensors file?)",
                            path);
    if (!edgellm_hf_utf8_ok(h, (size_t)hn))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the header is not UTF-8", path);
    cJSON *j = NULL;
    edgellm_status rc = edgellm_hf_json_parse(h, (size_t)hn, path, &j, err);
    if (rc != EDGELLM_OK) return rc;
    const uint64_t data_size = f->size - 8 - hn;
    const int64_t first = s->n;
    const char *dup = edgellm_hf_json_dup_key(j);
    if (!cJSON_IsObject(j)) rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the header is not a JSON object", path);
    else if (dup) rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%.200s' is listed twice", path, dup);
    for (const cJSON *c = rc == EDGELLM_OK ? j->child : NULL; c && rc == EDGELLM_OK; c = c->next) {
        if (!strcmp(c->string, "__metadata__")) {
            bool ok = cJSON_IsObject(c) || cJSON_IsNull(c);
            for (const cJSON *m = cJSON_IsObject(c) ? c->child : NULL; m && ok; m = m->next) ok = cJSON_IsString(m);
            if (!ok) rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: __metadata__ must map strings to strings", path);
            continue;
        }
        rc = parse_entry(s, fi, c->string, c, data_size, err);
    }
    cJSON_Delete(j);
    if (rc == EDGELLM_OK) rc = check_coverage(s, fi, first, data_size, err);
    return rc;
}

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp(((const edgellm_st_tensor *)a)->name, ((const edgellm_st_tensor *)b)->name);
}

/* Sort by name; a name twice (two shards without an index saying which) is refused. */
static edgellm_status finish(edgellm_st_set *s, edgellm_error *err)
{
    if (s->n > 1) qsort(s->t, (size_t)s->n, sizeof *s->t, cmp_by_name);
    for (int64_t i = 1; i < s->n; i++)
        if (!strcmp(s->t[i - 1].name, s->t[i].name))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' is also in %s",
                                edgellm_st_file_path(s, s->t[i].file), s->t[i].name,
                                edgellm_st_file_path(s, s->t[i - 1].file));
    return EDGELLM_OK;
}

static edgellm_status add_file(edgellm_st_set *s, const char *path, edgellm_error *err)
{
    st_file *nf = edgellm_realloc(s->files, (size_t)(s->n_files + 1) * sizeof *nf);
    if (!nf) return edgellm_fail_nomem(err, path);
    s->files = nf;
    st_file *f = &s->files[s->n_files];
    memset(f, 0, sizeof *f);
    if (!(f->path = edgellm_strdup(path))) return edgellm_fail_nomem(err, path);
    s->n_files++;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    edgellm_status rc = EDGELLM_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)(size_t)st.st_size != (uint64_t)st.st_size)
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: too large to map on this platform", path);
    else if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: mmap: %s", path, strerror(errno));
        else { f->bytes = m; f->size = (uint64_t)st.st_size; f->mapped = true; }
    }
    close(fd);
    if (rc == EDGELLM_OK) rc = parse_file(s, s->n_files - 1, err);
    return rc;
}

edgellm_status edgellm_st_open_memory(const void *data, size_t size, const char *name, edgellm_st_set **out,
                                      edgellm_error *err)
{
    *out = NULL;
    if (!data && size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "NULL buffer");
    if (!name) name = "(memory)";
    edgellm_st_set *s = edgellm_calloc(1, sizeof *s);
    if (!s || !(s->files = edgellm_calloc(1, sizeof *s->files)) || !(s->files[0].path = edgellm_strdup(name))) {
        edgellm_st_close(s);
        return edgellm_fail_nomem(err, name);
    }
    s->n_files = 1;
    s->files[0].bytes = data;
    s->files[0].size = size;
    edgellm_status rc = parse_file(s, 0, err);
    if (rc == EDGELLM_OK) rc = finish(s, err);
    if (rc != EDGELLM_OK) edgellm_st_close(s);
    else *out = s;
    return rc;
}

/* ------------------------------------------------------------- the folder ---- */

static bool plain_file_name(const char *n)
{
    return n[0] && n[0] != '.' && !strchr(n, '/') && strlen(n) < 256;
}

static edgellm_status open_index(edgellm_st_set *s, const char *dir, const char *index_path, edgellm_error *err)
{
    cJSON *j = NULL;
    edgellm_status rc = edgellm_hf_json_load(index_path, &j, err);
    if (rc != EDGELLM_OK) return rc;
    const cJSON *wm = edgellm_hf_get(j, "weight_map");
    const char **shards = NULL;
    int n_shards = 0;
    if (!cJSON_IsObject(wm)) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: no \"weight_map\" object", index_path);
        goto done;
    }
    if (edgellm_hf_json_dup_key(wm)) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%.200s' is indexed twice", index_path,
                          edgellm_hf_json_dup_key(wm));
        goto done;
    }
    /* the distinct shard files, in order of first mention */
    for (const cJSON *c = wm->child; c; c = c->next) {
        if (!cJSON_IsString(c) || !plain_file_name(c->valuestring) ||
            !edgellm_hf_utf8_ok(c->valuestring, strlen(c->valuestring))) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%.200s' names no plain file of this folder",
                              index_path, c->string);
            goto done;
        }
        int k = 0;
        while (k < n_shards && strcmp(shards[k], c->valuestring)) k++;
        if (k < n_shards) continue;
        if (n_shards == MAX_SHARDS) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: more than %d shard files", index_path, MAX_SHARDS);
            goto done;
        }
        const char **ns = edgellm_realloc(shards, (size_t)(n_shards + 1) * sizeof *ns);
        if (!ns) { rc = edgellm_fail_nomem(err, index_path); goto done; }
        shards = ns;
        shards[n_shards++] = c->valuestring;
    }
    if (n_shards == 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the weight_map is empty", index_path);
        goto done;
    }
    for (int k = 0; k < n_shards && rc == EDGELLM_OK; k++) {
        char p[4096];
        if (!edgellm_hf_path(p, sizeof p, dir, shards[k]))
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", dir);
        else rc = add_file(s, p, err);
    }
    if (rc == EDGELLM_OK) rc = finish(s, err);
    /* every tensor of a shard is indexed to that shard; every indexed tensor exists */
    for (int64_t i = 0; i < s->n && rc == EDGELLM_OK; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(wm, s->t[i].name);
        if (!e)
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' is not in %s",
                              edgellm_st_file_path(s, s->t[i].file), s->t[i].name, index_path);
        else if (strcmp(e->valuestring, shards[s->t[i].file]))
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' is indexed to %s",
                              edgellm_st_file_path(s, s->t[i].file), s->t[i].name, e->valuestring);
    }
    for (const cJSON *c = wm->child; c && rc == EDGELLM_OK; c = c->next)
        if (!edgellm_st_find(s, c->string))
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor '%.200s' is not in %s, where the index puts it",
                              index_path, c->string, c->valuestring);
done:
    edgellm_free(shards);
    cJSON_Delete(j);
    return rc;
}

edgellm_status edgellm_st_open_dir(const char *dir, edgellm_st_set **out, edgellm_error *err)
{
    *out = NULL;
    char p[4096];
    edgellm_st_set *s = edgellm_calloc(1, sizeof *s);
    if (!s) return edgellm_fail_nomem(err, dir);
    edgellm_status rc;
    if (edgellm_hf_has_file(dir, "model.safetensors.index.json")) {
        if (!edgellm_hf_path(p, sizeof p, dir, "model.safetensors.index.json"))
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", dir);
        else rc = open_index(s, dir, p, err);
    } else if (edgellm_hf_has_file(dir, "model.safetensors")) {
        if (!edgellm_hf_path(p, sizeof p, dir, "model.safetensors"))
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", dir);
        else if ((rc = add_file(s, p, err)) == EDGELLM_OK) rc = finish(s, err);
    } else {
        rc = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "%s: no model.safetensors or model.safetensors.index.json "
                          "(PyTorch .bin checkpoints are not read: convert them to safetensors first)", dir);
    }
    if (rc != EDGELLM_OK) edgellm_st_close(s);
    else *out = s;
    return rc;
}

#endif /* EDGELLM_HAVE_CJSON */
