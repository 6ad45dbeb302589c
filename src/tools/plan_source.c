/*
 * plan_source.c — where `edgellm plan` gets its model and device from: the built-in
 * catalogues (plan_catalog.c), a GGUF file's metadata and tensor table, explicit shape
 * numbers, or this machine (/proc/meminfo, cpufreq, and the bandwidth benchmark of membw.c).
 *
 * GGUF keys read (ggml-org/ggml docs/gguf.md), with ARCH =
 * general.architecture: ARCH.block_count, ARCH.embedding_length, ARCH.attention.head_count,
 * ARCH.attention.head_count_kv (default: head_count), ARCH.feed_forward_length,
 * ARCH.context_length (optional), ARCH.attention.key_length (head_dim of K; default
 * n_embd / n_head), ARCH.attention.value_length (head_dim of V; default n_embd / n_head, as
 * ggml-org/llama.cpp src/llama-model.cpp reads both), ARCH.rope.scaling.* and
 * rope_freqs.weight (the RoPE frequency scaling, described as the model loader reads it:
 * src/model/rope_scaling.c), general.file_type and edgellm.quant.scheme (label; optional; the
 * tensors decide, see file_precision). n_vocab is token_embd's ne[1];
 * embeddings are tied when there is no output.weight. The file is mapped and its tables
 * validated by the GGUF reader; tensor data pages are never touched.
 */
#include "plan.h"
#include "quantize.h"
#include "../format/gguf.h"
#include "../model/model.h"
#include "../tensor/types.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------------------------------------------------------- catalogues ---- */

int edgellm_plan_n_models(void) { return edgellm_model_catalog_n; }
int edgellm_plan_n_devices(void) { return edgellm_plan_catalog_n_devices; }

/* n_params of a shape-only model: sum over its tensor list. */
static edgellm_status fill_params(edgellm_plan_model *m, edgellm_error *err)
{
    size_t n = edgellm_plan_shape_tensors(m, NULL, 0);
    edgellm_plan_tensor *t = edgellm_malloc(n * sizeof *t);
    if (!t) return edgellm_fail_nomem(err, m->name);
    edgellm_plan_shape_tensors(m, t, n);
    uint64_t p = 0;
    for (size_t i = 0; i < n; i++) p += (uint64_t)t[i].ne0 * (uint64_t)t[i].n_rows;
    edgellm_free(t);
    m->n_params = p;
    return EDGELLM_OK;
}

edgellm_status edgellm_plan_model_at(int i, edgellm_plan_model *out)
{
    if (!out || i < 0 || i >= edgellm_model_catalog_n) return EDGELLM_ERR_MISUSE;
    *out = edgellm_model_catalog[i].m;
    return fill_params(out, NULL);
}

edgellm_status edgellm_plan_device_at(int i, edgellm_plan_device *out)
{
    if (!out || i < 0 || i >= edgellm_plan_catalog_n_devices) return EDGELLM_ERR_MISUSE;
    *out = edgellm_plan_catalog_devices[i];
    return EDGELLM_OK;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

edgellm_status edgellm_plan_find_model(const char *name, edgellm_plan_model *out, edgellm_error *err)
{
    if (!name || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: no model name");
    for (int i = 0; i < edgellm_model_catalog_n; i++)
        if (same_name(name, edgellm_model_catalog[i].m.name)) {
            *out = edgellm_model_catalog[i].m;
            return fill_params(out, err);
        }
    char list[400] = "";
    size_t len = 0;
    for (int i = 0; i < edgellm_model_catalog_n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", edgellm_model_catalog[i].m.name);
    return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "unknown model '%s'; valid models: %s (or a .gguf file)", name, list);
}

edgellm_status edgellm_plan_find_device(const char *name, edgellm_plan_device *out, edgellm_error *err)
{
    if (!name || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: no device name");
    for (int i = 0; i < edgellm_plan_catalog_n_devices; i++)
        if (same_name(name, edgellm_plan_catalog_devices[i].name)) {
            *out = edgellm_plan_catalog_devices[i];
            return EDGELLM_OK;
        }
    char list[400] = "";
    size_t len = 0;
    for (int i = 0; i < edgellm_plan_catalog_n_devices && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s, ", edgellm_plan_catalog_devices[i].name);
    return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "unknown device '%s'; valid devices: %shost (or a device file)",
                        name, list);
}

/* ---------------------------------------------------------------- explicit shape ---- */

edgellm_status edgellm_plan_model_from_shape(int n_layer, int n_embd, int n_head, int n_head_kv, int n_ff, int n_vocab,
                                             edgellm_plan_model *out, edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: out is NULL");
    memset(out, 0, sizeof *out);
    if (n_layer <= 0 || n_embd <= 0 || n_head <= 0 || n_head_kv <= 0 || n_ff <= 0 || n_vocab <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "shape %d,%d,%d,%d,%d,%d: every number (n_layer,n_embd,n_head,n_head_kv,n_ff,n_vocab) "
                            "must be > 0", n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab);
    if (n_layer > EDGELLM_PLAN_MAX_LAYERS)   /* the tensor list is n_layer x 9 entries */
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "shape: n_layer %d is more than %d (Llama-3.1-405B has 126)",
                            n_layer, EDGELLM_PLAN_MAX_LAYERS);
    if (n_embd % n_head != 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "shape: n_embd %d is not a multiple of n_head %d", n_embd, n_head);
    if (n_head % n_head_kv != 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "shape: n_head %d is not a multiple of n_head_kv %d", n_head,
                            n_head_kv);
    char name[96];
    snprintf(name, sizeof name, "shape %d,%d,%d,%d,%d,%d", n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab);
    snprintf(out->name, sizeof out->name, "%.63s", name);
    snprintf(out->arch, sizeof out->arch, "llama");
    snprintf(out->source, sizeof out->source, "--shape n_layer,n_embd,n_head,n_head_kv,n_ff,n_vocab");
    out->n_layer = n_layer;
    out->n_embd = n_embd;
    out->n_head = n_head;
    out->n_head_kv = n_head_kv;
    out->head_dim = n_embd / n_head;
    out->n_ff = n_ff;
    out->n_vocab = n_vocab;
    return fill_params(out, err);
}

/* ---------------------------------------------------------------- GGUF files ---- */

/* general.file_type ids (ggml-org/ggml docs/gguf.md). */
static const char *file_type_label(int64_t ft)
{
    static const char *const names[] = {
        [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
        [10] = "Q2_K", [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M",
        [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K",
    };
    if (ft >= 0 && ft < (int64_t)(sizeof names / sizeof names[0])) return names[ft];
    if (ft == 32) return "BF16";
    return NULL;
}

/* Matrix bytes per tensor type of a file. */
#define TB_MAX 32
typedef struct { int type; uint64_t bytes; } type_bytes;   /* bytes: here matrix weights (elements) */

static int add_type_bytes(type_bytes *tb, int n, int type, uint64_t bytes)
{
    for (int k = 0; k < n; k++)
        if (tb[k].type == type) { tb[k].bytes += bytes; return n; }
    if (n == TB_MAX) return n;
    tb[n].type = type;
    tb[n].bytes = bytes;
    return n + 1;
}

/* Main type of a general.file_type label: "Q4_K_M" -> Q4_K, "Q3_K_S" -> Q3_K; -1 unknown. */
static int label_base_type(const char *label)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%s", label);
    char *k = strstr(buf, "_K_");
    if (k) k[2] = 0;
    return edgellm_type_from_name(buf);
}

/* The file's precision, from its tensors (general.file_type is only a hint: edgellm's own
 * I4/I8 files carry none, and a stale one must not mislabel a file):
 *  1. edgellm.quant.scheme when present ("i4 g128 asym" -> "I4_G128_ASYM"; "Q4_K_M + ..."
 *     -> "Q4_K_M"): the recipe name, although some rows fell back to a smaller group;
 *     but when no matrix has the recipe's type and some have another group-wise type of
 *     the same bits (every row too short for the recipe's group), that type's name;
 *  2. else general.file_type's label when its main type is the type holding the most matrix
 *     bytes, or one it falls back to for the file's row lengths;
 *  3. else the name of the type holding the most matrix bytes. */
static void file_precision(const edgellm_gguf *g, const type_bytes *tb, int n_tb, char *out, size_t size)
{
    int best = EDGELLM_TYPE_F32;
    uint64_t best_bytes = 0;
    for (int k = 0; k < n_tb; k++)
        if (tb[k].bytes > best_bytes) { best = tb[k].type; best_bytes = tb[k].bytes; }
    edgellm_str sc;
    if (edgellm_gguf_get_str(g, "edgellm.quant.scheme", &sc) && sc.len > 0 && sc.len < 64) {
        char buf[64], kind[16] = "";
        memcpy(buf, sc.ptr, sc.len);
        buf[sc.len] = 0;
        int bits, group;
        if (sscanf(buf, "%*[iI]%d %*[gG]%d %15s", &bits, &group, kind) >= 2 && (bits == 4 || bits == 8)) {
            snprintf(out, size, "I%d_G%d_%s", bits, group, (kind[0] | 0x20) == 'a' ? "ASYM" : "SYM");
            /* no matrix in the recipe's type, but some in another group size of the same bits
             * (rows too short for the recipe's group, e.g. g128 on rows of 64): the file is
             * that type (the one with the most bytes), not the recipe */
            const int want = edgellm_type_from_name(out);
            int alt = -1;
            uint64_t alt_bytes = 0, want_bytes = 0;
            for (int k = 0; k < n_tb; k++) {
                const char *tn = edgellm_type_name(tb[k].type);
                if (tb[k].type == want) want_bytes += tb[k].bytes;
                else if (tn && tn[0] == 'I' && tn[1] - '0' == bits && tb[k].bytes > alt_bytes) {
                    alt = tb[k].type;
                    alt_bytes = tb[k].bytes;
                }
            }
            if (want_bytes == 0 && alt >= 0) snprintf(out, size, "%s", edgellm_type_name(alt));
            return;
        }
        buf[strcspn(buf, " ")] = 0;
        edgellm_plan_recipe rc;
        if (edgellm_plan_recipe_from_name(buf, &rc, NULL) == EDGELLM_OK) {
            snprintf(out, size, "%s", rc.name);
            return;
        }
    }
    int64_t ft = -1;
    const char *hint = edgellm_gguf_get_i64(g, "general.file_type", &ft) ? file_type_label(ft) : NULL;
    if (hint) {
        for (int t = label_base_type(hint), steps = 0; t >= 0 && steps < 8; steps++) {
            if (t == best) { snprintf(out, size, "%s", hint); return; }
            t = edgellm_quant_fallback_type(t);
        }
    }
    snprintf(out, size, "%s", edgellm_type_name(best));
}

static bool get_arch_int(const edgellm_gguf *g, const char *arch, const char *suffix, int64_t *v)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return edgellm_gguf_get_i64(g, key, v);
}

edgellm_status edgellm_plan_gguf_tensors(const char *path, edgellm_plan_model *m, edgellm_plan_tensor **tensors,
                                         size_t *n_tensors, edgellm_error *err)
{
    edgellm_gguf *g = NULL;
    edgellm_plan_tensor *t = NULL;
    edgellm_status rc;
    memset(m, 0, sizeof *m);
    if (tensors) *tensors = NULL;
    if (n_tensors) *n_tensors = 0;
    if ((rc = edgellm_gguf_open(path, &g, err)) != EDGELLM_OK) return rc;

    const char *base = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : path);
    snprintf(m->source, sizeof m->source, "GGUF metadata of %s", path);
    m->from_file = 1;
    m->file_bytes = edgellm_gguf_file_size(g);

    edgellm_str arch;
    if (!edgellm_gguf_get_str(g, "general.architecture", &arch) || arch.len == 0 || arch.len >= sizeof m->arch) {
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: no general.architecture key", path);
        goto done;
    }
    memcpy(m->arch, arch.ptr, arch.len);
    m->arch[arch.len] = 0;

    int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = -1, n_ff = 0, n_ctx = 0, key_len = 0, val_len = 0;
    const char *missing = NULL;
    if (!get_arch_int(g, m->arch, "block_count", &n_layer)) missing = "block_count";
    else if (!get_arch_int(g, m->arch, "embedding_length", &n_embd)) missing = "embedding_length";
    else if (!get_arch_int(g, m->arch, "attention.head_count", &n_head)) missing = "attention.head_count";
    else if (!get_arch_int(g, m->arch, "feed_forward_length", &n_ff)) missing = "feed_forward_length";
    if (missing) {
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: metadata key %s.%s is missing or not an integer", path,
                          m->arch, missing);
        goto done;
    }
    get_arch_int(g, m->arch, "attention.head_count_kv", &n_head_kv);
    get_arch_int(g, m->arch, "context_length", &n_ctx);
    get_arch_int(g, m->arch, "attention.key_length", &key_len);
    get_arch_int(g, m->arch, "attention.value_length", &val_len);
    if (n_head_kv < 0) n_head_kv = n_head;
    if (n_layer <= 0 || n_layer > 100000 || n_embd <= 0 || n_embd > (1 << 20) || n_head <= 0 || n_head > 65536 ||
        n_head_kv <= 0 || n_head % n_head_kv != 0 || n_ff <= 0 || n_ff > (1 << 24) || n_ctx < 0 ||
        n_ctx > (1 << 30) || key_len < 0 || key_len > 65536 || val_len < 0 || val_len > 65536 ||
        ((!key_len || !val_len) && n_embd % n_head != 0)) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT,
                          "%s: implausible shape (n_layer %lld, n_embd %lld, n_head %lld, n_head_kv %lld, n_ff %lld)",
                          path, (long long)n_layer, (long long)n_embd, (long long)n_head, (long long)n_head_kv,
                          (long long)n_ff);
        goto done;
    }
    m->n_layer = (int)n_layer;
    m->n_embd = (int)n_embd;
    m->n_head = (int)n_head;
    m->n_head_kv = (int)n_head_kv;
    m->head_dim = key_len ? (int)key_len : (int)(n_embd / n_head);
    m->head_dim_v = val_len ? (int)val_len : (int)(n_embd / n_head);
    if (m->head_dim_v == m->head_dim) m->head_dim_v = 0;   /* the usual case: one head_dim */
    m->n_ff = (int)n_ff;
    m->n_ctx_train = (int)n_ctx;
    edgellm_rope_config rope;
    edgellm_error rerr = {0};
    if (edgellm_rope_config_read(g, path, m->arch, 0, &rope, &rerr) == EDGELLM_OK) {
        edgellm_rope_config_describe(&rope, m->rope_scaling, sizeof m->rope_scaling);
    } else {   /* still planned (the shape is what it is); the report says run refuses it */
        const char *why = strstr(rerr.msg, ": ");
        snprintf(m->rope_scaling, sizeof m->rope_scaling, "%.199s", why ? why + 2 : rerr.msg);
        m->rope_unsupported = 1;
    }

    const edgellm_gguf_tensor *embd = edgellm_gguf_find_tensor(g, "token_embd.weight");
    if (!embd || embd->n_dims < 2) {
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: no 2-D token_embd.weight tensor", path);
        goto done;
    }
    m->n_vocab = (int)EDGELLM_MIN(embd->ne[1], (int64_t)1 << 30);
    m->tied_embeddings = edgellm_gguf_find_tensor(g, "output.weight") == NULL;
    m->qkv_bias = edgellm_gguf_find_tensor(g, "blk.0.attn_q.bias") != NULL;
    m->fused_qkv = edgellm_gguf_find_tensor(g, "blk.0.attn_qkv.weight") != NULL;

    int64_t nt = edgellm_gguf_n_tensors(g);
    t = edgellm_malloc((size_t)(nt > 0 ? nt : 1) * sizeof *t);
    if (!t) { rc = edgellm_fail_nomem(err, path); goto done; }
    type_bytes tb[TB_MAX];
    int n_tb = 0;
    for (int64_t i = 0; i < nt; i++) {
        const edgellm_gguf_tensor *gt = edgellm_gguf_tensor_at(g, i);
        int layer;
        int role = edgellm_plan_role_from_name(gt->name.ptr, (size_t)gt->name.len, gt->n_dims, &layer);
        if (role == EDGELLM_PT_TOKEN_EMBD && m->tied_embeddings) role = EDGELLM_PT_OUTPUT;
        t[i].role = role;
        t[i].layer = layer;
        t[i].ne0 = gt->ne[0];
        t[i].n_rows = gt->ne[0] ? (int64_t)(gt->n_elements / (uint64_t)gt->ne[0]) : 0;
        /* a stored layout (Q4_K_R16) holds its base type's blocks: the same bytes and costs */
        const int type = edgellm_type_stored_base(gt->type);
        t[i].file_type = type;
        t[i].file_bytes = gt->size_bytes;
        m->n_params += gt->n_elements;
        m->file_weight_bytes += gt->size_bytes;
        if (gt->n_dims >= 2) n_tb = add_type_bytes(tb, n_tb, type, gt->n_elements);
    }
    /* the label: the file's real precision (see file_precision), by matrix weights, not
     * bytes: a large tensor kept in F32 must not make a Q4_0 file "F32" */
    file_precision(g, tb, n_tb, m->file_label, sizeof m->file_label);
    /* a quantized file's matrices kept in a float type, named: "output.weight kept F32" */
    const int main_type = label_base_type(m->file_label);
    const int main_float = main_type == EDGELLM_TYPE_F32 || main_type == EDGELLM_TYPE_F16 ||
                           main_type == EDGELLM_TYPE_BF16;
    static const int floats[3] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_BF16};
    size_t klen = 0;
    for (int f = 0; f < 3 && !main_float; f++) {
        int n_named = 0, n_more = 0;
        size_t start = klen;
        for (int64_t i = 0; i < nt; i++) {
            const edgellm_gguf_tensor *gt = edgellm_gguf_tensor_at(g, i);
            if (gt->n_dims < 2 || gt->type != floats[f]) continue;
            if (n_named < 2 && klen + (size_t)gt->name.len + 8 < sizeof m->file_kept) {
                klen += (size_t)snprintf(m->file_kept + klen, sizeof m->file_kept - klen, "%s%.*s",
                                         klen ? (klen == start ? "; " : ", ") : "", (int)gt->name.len, gt->name.ptr);
                n_named++;
            } else {
                n_more++;
            }
        }
        if (n_named && klen < sizeof m->file_kept)
            klen += (size_t)snprintf(m->file_kept + klen, sizeof m->file_kept - klen, "%s kept %s",
                                     n_more ? " and more" : "", edgellm_type_name(floats[f]));
        if (klen >= sizeof m->file_kept) klen = sizeof m->file_kept - 1;
    }
    if (tensors) { *tensors = t; t = NULL; }
    if (n_tensors) *n_tensors = (size_t)nt;
done:
    edgellm_free(t);
    edgellm_gguf_close(g);
    if (rc != EDGELLM_OK) memset(m, 0, sizeof *m);
    return rc;
}

edgellm_status edgellm_plan_model_from_gguf(const char *path, edgellm_plan_model *out, edgellm_error *err)
{
    if (!path || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: no model path");
    return edgellm_plan_gguf_tensors(path, out, NULL, NULL, err);
}

/* ---------------------------------------------------------------- this machine ---- */

static void read_meminfo(uint64_t *total, uint64_t *avail)
{
    *total = *avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) *total = (uint64_t)kb * 1024u;
        else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) *avail = (uint64_t)kb * 1024u;
    }
    fclose(f);
}

/* "model name" (x86) or "Hardware" / "Model" (ARM) from /proc/cpuinfo. */
static void cpu_name(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        if (!strncmp(line, "model name", 10) || !strncmp(line, "Hardware", 8) || !strncmp(line, "Model", 5)) {
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t') v++;
            v[strcspn(v, "\n")] = 0;
            if (*v) { snprintf(buf, size, "%s", v); break; }
        }
    }
    fclose(f);
}

/* Big/little split of the CPUs this process may use (its affinity mask, else all online)
 * from each CPU's cpufreq maximum: CPUs within 80 % of the fastest are big. Only when there
 * is no SMT among them (then CPUs are cores) and every one reports a clock. */
static void core_split(int n_physical, int *big, int *little)
{
    *big = n_physical;
    *little = 0;
    int cpus[1024];
    const int n = edgellm_usable_cpus(cpus, 1024);
    if (n <= 1 || n > 1024 || n != n_physical) return;
    long freq[1024], top = 0;
    for (int i = 0; i < n; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", cpus[i]);
        FILE *f = fopen(path, "r");
        if (!f) return;
        int ok = fscanf(f, "%ld", &freq[i]) == 1;
        fclose(f);
        if (!ok || freq[i] <= 0) return;
        if (freq[i] > top) top = freq[i];
    }
    int nb = 0;
    for (int i = 0; i < n; i++) nb += freq[i] * 10 >= top * 8;
    *big = nb;
    *little = n - nb;
}

edgellm_status edgellm_plan_host_device(int bench_ms, edgellm_plan_device *out, edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: out is NULL");
    memset(out, 0, sizeof *out);
    uint64_t total, avail;
    read_meminfo(&total, &avail);
    if (!total) return edgellm_fail(err, EDGELLM_ERR_IO, "/proc/meminfo: cannot read MemTotal");
    int n_phys = edgellm_n_physical_cores();
    core_split(n_phys, &out->n_big_cores, &out->n_little_cores);

    edgellm_membw_params bp = edgellm_membw_default_params();
    bp.n_threads = out->n_big_cores;
    bp.max_ms = bench_ms > 0 ? bench_ms : 1000;
    edgellm_membw_result br;
    edgellm_status rc = edgellm_membw_measure(&bp, &br, err);
    if (rc != EDGELLM_OK) return rc;

    char cpu[96];
    cpu_name(cpu, sizeof cpu);
    snprintf(out->name, sizeof out->name, "host");
    snprintf(out->description, sizeof out->description, "this machine: %.48s, %d core%s this process may use", cpu,
             n_phys, n_phys == 1 ? "" : "s");
    snprintf(out->source, sizeof out->source,
             "measured: /proc/meminfo (MemAvailable = usable); read bandwidth median of %d runs, %d thread%s, %zu "
             "MiB buffer; GFLOP/s per core from a Q4_0 matrix product",
             br.n_runs, br.n_threads, br.n_threads == 1 ? "" : "s", br.buffer_bytes >> 20);
    out->ram_bytes = total;
    out->usable_bytes = avail ? avail : total / 2;
    out->bw_gbps = br.median_gbps;   /* sustained, not the best burst (see edgellm_membw_result) */
    out->bw_measured = 1;
#if defined(__aarch64__)
    snprintf(out->isa, sizeof out->isa, "arm");
#else
    snprintf(out->isa, sizeof out->isa, "x86");
#endif
    /* GFLOP/s per core: measured with edgellm's own kernels (compute_bench.c); when that
     * fails, the catalogue's assumption for the ISA (AVX2-class x86 30, A76-class 25) */
    out->gflops_big = edgellm_plan_measure_gflops(bench_ms > 0 ? bench_ms / 5 : 200);
    if (!(out->gflops_big > 0)) {
#if defined(__x86_64__) || defined(_M_X64)
        out->gflops_big = 30.0;
#elif defined(__aarch64__)
        out->gflops_big = 25.0;
#else
        out->gflops_big = 10.0;
#endif
    }
    out->gflops_little = out->gflops_big / 4;
    out->has_npu = 0;
    return EDGELLM_OK;
}
