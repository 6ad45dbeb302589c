/* gguf_meta.c — the read-only GGUF metadata API of edgellm_tools.h (edgellm_gguf_meta_*):
 * a thin face over the internal reader (src/format/gguf_read.c), which maps the file and
 * validates all of it on open; nothing here re-checks what it proved. */
#include "edgellm_tools.h"
#include "../format/gguf.h"
#include "../model/model.h"

struct edgellm_gguf_meta {
    edgellm_gguf *g;
};

edgellm_status edgellm_gguf_meta_open(const char *path, edgellm_gguf_meta **out, edgellm_error *err)
{
    if (out) *out = NULL;
    if (!path || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_gguf_meta_open: NULL path or out");
    edgellm_gguf_meta *m = edgellm_calloc(1, sizeof *m);
    if (!m) return edgellm_fail_nomem(err, path);
    const edgellm_status rc = edgellm_gguf_open(path, &m->g, err);
    if (rc != EDGELLM_OK) {
        edgellm_free(m);
        return rc;
    }
    *out = m;
    return EDGELLM_OK;
}

void edgellm_gguf_meta_close(edgellm_gguf_meta *m)
{
    if (!m) return;
    edgellm_gguf_close(m->g);
    edgellm_free(m);
}

uint32_t edgellm_gguf_meta_version(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_version(m->g) : 0; }
uint32_t edgellm_gguf_meta_alignment(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_alignment(m->g) : 0; }
uint64_t edgellm_gguf_meta_file_size(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_file_size(m->g) : 0; }
uint64_t edgellm_gguf_meta_data_offset(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_data_offset(m->g) : 0; }
int64_t edgellm_gguf_meta_n_keys(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_n_kv(m->g) : 0; }
int64_t edgellm_gguf_meta_n_tensors(const edgellm_gguf_meta *m) { return m ? edgellm_gguf_n_tensors(m->g) : 0; }

static bool key_ok(const edgellm_gguf_meta *m, int64_t i) { return m && i >= 0 && i < edgellm_gguf_n_kv(m->g); }

const char *edgellm_gguf_meta_key(const edgellm_gguf_meta *m, int64_t i, size_t *len)
{
    if (!key_ok(m, i)) {
        if (len) *len = 0;
        return NULL;
    }
    const edgellm_str k = edgellm_gguf_key(m->g, i);
    if (len) *len = (size_t)k.len;   /* inside the mapping: fits size_t */
    return k.ptr;
}

const char *edgellm_gguf_meta_key_type(const edgellm_gguf_meta *m, int64_t i)
{
    return key_ok(m, i) ? edgellm_gguf_vtype_name(edgellm_gguf_kv_type(m->g, i)) : "?";
}

void edgellm_gguf_meta_format_value(const edgellm_gguf_meta *m, int64_t i, char *buf, size_t size)
{
    if (!buf || !size) return;
    buf[0] = 0;
    if (key_ok(m, i)) edgellm_gguf_format_value(m->g, i, buf, size);
}

int edgellm_gguf_meta_get_str(const edgellm_gguf_meta *m, const char *key, const char **str, size_t *len)
{
    edgellm_str s;
    if (!m || !key || !edgellm_gguf_get_str(m->g, key, &s)) return 0;
    if (str) *str = s.ptr;
    if (len) *len = (size_t)s.len;
    return 1;
}

int edgellm_gguf_meta_get_int(const edgellm_gguf_meta *m, const char *key, int64_t *out)
{
    int64_t v;
    if (!m || !key || !edgellm_gguf_get_i64(m->g, key, &v)) return 0;
    if (out) *out = v;
    return 1;
}

int edgellm_gguf_meta_get_array(const edgellm_gguf_meta *m, const char *key, const char **elem_type, uint64_t *count)
{
    edgellm_gguf_vtype et;
    uint64_t n;
    if (!m || !key || !edgellm_gguf_arr_info(m->g, key, &et, &n)) return 0;
    if (elem_type) *elem_type = edgellm_gguf_vtype_name(et);
    if (count) *count = n;
    return 1;
}

int edgellm_gguf_meta_array_str(const edgellm_gguf_meta *m, const char *key, uint64_t j, const char **str, size_t *len)
{
    edgellm_str s;
    if (!m || !key || !edgellm_gguf_arr_str(m->g, key, j, &s)) return 0;
    if (str) *str = s.ptr;
    if (len) *len = (size_t)s.len;
    return 1;
}

edgellm_status edgellm_gguf_meta_tensor(const edgellm_gguf_meta *m, int64_t i, edgellm_gguf_tensor_info *out)
{
    const edgellm_gguf_tensor *t = m && out ? edgellm_gguf_tensor_at(m->g, i) : NULL;
    if (!t) return EDGELLM_ERR_MISUSE;
    out->name = t->name.ptr;
    out->name_len = (size_t)t->name.len;
    out->type = t->type;
    out->n_dims = (int)t->n_dims;
    for (int d = 0; d < 4; d++) out->ne[d] = t->ne[d];
    out->n_elements = t->n_elements;
    out->size_bytes = t->size_bytes;
    out->offset = t->offset;
    return EDGELLM_OK;
}

edgellm_status edgellm_gguf_meta_rope_scaling(const edgellm_gguf_meta *m, char *buf, size_t size, edgellm_error *err)
{
    if (!m || !buf || !size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_gguf_meta_rope_scaling: NULL argument");
    buf[0] = 0;
    char arch[64] = "";
    edgellm_str a;
    if (edgellm_gguf_get_str(m->g, "general.architecture", &a) && a.len < sizeof arch) {
        memcpy(arch, a.ptr, a.len);
        arch[a.len] = 0;
    }
    edgellm_rope_config c;
    const edgellm_status rc = edgellm_rope_config_read(m->g, edgellm_gguf_path(m->g), arch, 0, &c, err);
    if (rc == EDGELLM_OK) edgellm_rope_config_describe(&c, buf, size);
    return rc;
}
