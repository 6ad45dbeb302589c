/*
 * imatrix.c — importance statistics of a model's matrices ("importance matrix"): for every
 * weight matrix W[rows][cols] the sum over the calibration tokens of x_j^2 for each input
 * column j, and the count of tokens, so that mean(x_j^2) = in_sum2[j] / count.
 *
 * Why: for one output y = sum_j W_j x_j, quantizing W to W + dW changes y by sum_j dW_j x_j,
 * whose expected square is sum_j dW_j^2 E[x_j^2] when the inputs are uncorrelated. Weighting
 * the quantizer's squared error by E[x_j^2] therefore minimizes the expected output error
 * rather than the weight error (the same statistic llama.cpp's llama-imatrix collects,
 * ggml-org/llama.cpp tools/imatrix/README.md and PR 4861).
 *
 * Collection: the windows of the calibration text (eval.c's plan: n_ctx tokens each,
 * BOS first) run through the model with the context's matrix-product observer set; every
 * product adds its n input rows to the statistics of its weight (q, k and v share their
 * input, as do gate and up). A tied output uses token_embd's statistics name.
 *
 * Files (both readable, both written; the extension chooses on writing):
 *   .gguf  llama.cpp's current imatrix file: general.type = "imatrix",
 *          imatrix.datasets (array of strings), imatrix.chunk_count, imatrix.chunk_size
 *          (u32), and per matrix two F32 tensors, "<name>.in_sum2" of ne {cols, 1} (the sums
 *          of x^2) and "<name>.counts" of ne {1, 1} (the token count)
 *          (ggml-org/llama.cpp PR 9400, "imatrix : use GGUF to store importance matrices").
 *   other  llama.cpp's legacy binary file (little endian): i32 n_entries, then per entry
 *          i32 name length, the name bytes, i32 ncall, i32 n_values, f32 values[n_values]
 *          with value = mean(x^2) * ncall; then i32 chunk count, i32 dataset name length
 *          and the name. ncall is the number of chunks here.
 * Reading either gives the means; entries are looked up by tensor name.
 */
#include "quantize.h"
#include "eval.h"
#include "../format/gguf.h"
#include "../model/model.h"
#include "../tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

typedef struct {
    char     name[64];
    int64_t  n_cols;
    double  *sum2;           /* [n_cols] sums of x^2 */
    double   count;          /* tokens */
} im_entry;

struct edgellm_imatrix {
    int       n;
    im_entry *e;
    float    *mean;          /* scratch for edgellm_imatrix_get: [max n_cols] */
    int64_t   max_cols;
    int       chunk_count, chunk_size;
    char      dataset[128];
};

void edgellm_imatrix_free(edgellm_imatrix *im)
{
    if (!im) return;
    for (int i = 0; i < im->n; i++) edgellm_free(im->e[i].sum2);
    edgellm_free(im->e);
    edgellm_free(im->mean);
    edgellm_free(im);
}

int edgellm_imatrix_n_entries(const edgellm_imatrix *im) { return im ? im->n : 0; }

static im_entry *find_entry(const edgellm_imatrix *im, const char *name)
{
    for (int i = 0; im && i < im->n; i++)
        if (!strcmp(im->e[i].name, name)) return &im->e[i];
    return NULL;
}

static im_entry *add_entry(edgellm_imatrix *im, const char *name, int64_t n_cols)
{
    if (n_cols <= 0 || n_cols > (1 << 24) || strlen(name) >= sizeof im->e[0].name) return NULL;
    im_entry *e = edgellm_realloc(im->e, (size_t)(im->n + 1) * sizeof *im->e);
    if (!e) return NULL;
    im->e = e;
    e = &im->e[im->n];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->n_cols = n_cols;
    if (!(e->sum2 = edgellm_calloc((size_t)n_cols, sizeof *e->sum2))) return NULL;
    im->n++;
    if (n_cols > im->max_cols) {
        float *m = edgellm_realloc(im->mean, (size_t)n_cols * sizeof *m);
        if (!m) return NULL;
        im->mean = m;
        im->max_cols = n_cols;
    }
    return e;
}

int edgellm_imatrix_weights(const edgellm_imatrix *im, const char *name, int64_t n_cols, float *out)
{
    const im_entry *e = find_entry(im, name);
    if (!e || e->n_cols != n_cols || !(e->count > 0)) return 0;
    for (int64_t j = 0; j < n_cols; j++) out[j] = (float)(e->sum2[j] / e->count);
    return 1;
}

/* ---------------------------------------------------------------- collection ---- */

typedef struct {
    const edgellm_tensor *w;
    int e;                     /* entry index */
} im_slot;

typedef struct {
    im_slot *slots;
    int      n_slots;
    edgellm_imatrix *im;
} im_collect;

static void observe(void *user, const edgellm_tensor *W, const float *x, int n)
{
    im_collect *c = user;
    for (int s = 0; s < c->n_slots; s++) {
        if (c->slots[s].w != W) continue;
        im_entry *e = &c->im->e[c->slots[s].e];
        for (int t = 0; t < n; t++) {
            const float *row = x + (size_t)t * (size_t)e->n_cols;
            for (int64_t j = 0; j < e->n_cols; j++) e->sum2[j] += (double)row[j] * (double)row[j];
        }
        e->count += n;
        return;
    }
}

edgellm_status edgellm_imatrix_collect(const edgellm_model *m, const char *text, size_t len,
                                       const edgellm_eval_params *params, edgellm_imatrix **out,
                                       edgellm_error *err)
{
    *out = NULL;
    edgellm_eval_params p = params ? *params : edgellm_eval_default_params();
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    edgellm_imatrix *im = edgellm_calloc(1, sizeof *im);
    im_collect col = {.im = im};
    edgellm_eval_plan pl = {0};
    edgellm_eval_runner r = {0};
    edgellm_status rc = EDGELLM_OK;
    int n_layer = m->hp.n_layer;
    col.slots = edgellm_calloc((size_t)n_layer * 7 + 1, sizeof *col.slots);
    if (!im || !col.slots) { rc = edgellm_fail_nomem(err, "imatrix"); goto done; }
    for (int il = 0; il <= n_layer; il++) {
        static const char *const kinds[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                                             "ffn_down"};
        const edgellm_layer *L = il < n_layer ? &m->layers[il] : NULL;
        const edgellm_tensor *ws[7] = {L ? &L->wq : NULL, L ? &L->wk : NULL, L ? &L->wv : NULL, L ? &L->wo : NULL,
                                       L ? &L->w_gate : NULL, L ? &L->w_up : NULL, L ? &L->w_down : NULL};
        for (int k = 0; k < (L ? 7 : 1); k++) {
            char name[64];
            const edgellm_tensor *w = ws[k];
            if (L) snprintf(name, sizeof name, "blk.%d.%s.weight", il, kinds[k]);
            else {
                w = &m->output;
                snprintf(name, sizeof name, "%s", m->tied_output ? "token_embd.weight" : "output.weight");
            }
            im_slot *s = &col.slots[col.n_slots];
            s->w = w;
            s->e = im->n;
            if (!add_entry(im, name, w->ne0)) { rc = edgellm_fail_nomem(err, "imatrix"); goto done; }
            col.n_slots++;
        }
    }
    if ((rc = edgellm_eval_plan_make(tok, text, len, &p, &pl, err)) != EDGELLM_OK) goto done;
    if ((rc = edgellm_eval_runner_init(&r, m, &pl, p.n_threads, EDGELLM_TYPE_F32, err)) != EDGELLM_OK) goto done;
    r.ctx->observe = observe;
    r.ctx->observe_user = &col;
    for (int w = 0; w < pl.n_windows; w++) {
        if ((rc = edgellm_eval_runner_window(&r, &pl, w, err)) != EDGELLM_OK) goto done;
        if ((rc = edgellm_eval_report_progress(&p, (double)(w + 1) / pl.n_windows, "imatrix", err)) != EDGELLM_OK)
            goto done;
    }
    im->chunk_count = pl.n_windows;
    im->chunk_size = pl.n_ctx;
    snprintf(im->dataset, sizeof im->dataset, "%s", p.text_name ? edgellm_eval_basename(p.text_name) : "text");
done:
    edgellm_eval_runner_free(&r);
    edgellm_eval_plan_free(&pl);
    edgellm_free(col.slots);
    if (rc != EDGELLM_OK) edgellm_imatrix_free(im);
    else *out = im;
    return rc;
}

/* ---------------------------------------------------------------- files ---- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

static edgellm_status save_gguf(const edgellm_imatrix *im, const char *path, edgellm_error *err)
{
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    float *data = edgellm_malloc(((size_t)im->max_cols + 1) * (size_t)(im->n ? im->n : 1) * sizeof(float));
    bool ok = w && data;
    const char *ds[1] = {im->dataset};
    ok = ok && edgellm_gguf_writer_set_str(w, "general.type", "imatrix") &&
         edgellm_gguf_writer_set_arr_str(w, "imatrix.datasets", ds, NULL, 1) &&
         edgellm_gguf_writer_set_u32(w, "imatrix.chunk_count", (uint32_t)im->chunk_count) &&
         edgellm_gguf_writer_set_u32(w, "imatrix.chunk_size", (uint32_t)im->chunk_size);
    float *p = data;
    for (int i = 0; ok && i < im->n; i++) {
        const im_entry *e = &im->e[i];
        char name[96];
        for (int64_t j = 0; j < e->n_cols; j++) p[j] = (float)e->sum2[j];
        int64_t ne[2] = {e->n_cols, 1};
        snprintf(name, sizeof name, "%s.in_sum2", e->name);
        ok = edgellm_gguf_writer_add_tensor(w, name, EDGELLM_TYPE_F32, 2, ne, p);
        p += e->n_cols;
        *p = (float)e->count;
        int64_t ne1[2] = {1, 1};
        snprintf(name, sizeof name, "%s.counts", e->name);
        ok = ok && edgellm_gguf_writer_add_tensor(w, name, EDGELLM_TYPE_F32, 2, ne1, p);
        p++;
    }
    edgellm_status rc = ok ? edgellm_gguf_writer_write(w, path, err) : edgellm_fail_nomem(err, path);
    edgellm_gguf_writer_free(w);
    edgellm_free(data);
    return rc;
}

static bool put_i32(FILE *f, int32_t v) { return fwrite(&v, 4, 1, f) == 1; }

static edgellm_status save_legacy(const edgellm_imatrix *im, const char *path, edgellm_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write", tmp);
    int ncall = im->chunk_count > 0 ? im->chunk_count : 1;
    bool ok = put_i32(f, im->n);
    for (int i = 0; ok && i < im->n; i++) {
        const im_entry *e = &im->e[i];
        ok = put_i32(f, (int32_t)strlen(e->name)) && fwrite(e->name, 1, strlen(e->name), f) == strlen(e->name) &&
             put_i32(f, ncall) && put_i32(f, (int32_t)e->n_cols);
        for (int64_t j = 0; ok && j < e->n_cols; j++) {
            float v = e->count > 0 ? (float)(e->sum2[j] / e->count * ncall) : 0.0f;
            ok = fwrite(&v, 4, 1, f) == 1;
        }
    }
    ok = ok && put_i32(f, im->chunk_count) && put_i32(f, (int32_t)strlen(im->dataset)) &&
         fwrite(im->dataset, 1, strlen(im->dataset), f) == strlen(im->dataset);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write", path);
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_imatrix_save(const edgellm_imatrix *im, const char *path, edgellm_error *err)
{
    if (!im || !path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "imatrix: nothing to save");
    return ends_with(path, ".gguf") ? save_gguf(im, path, err) : save_legacy(im, path, err);
}

static edgellm_status load_gguf(const char *path, edgellm_imatrix *im, edgellm_error *err)
{
    edgellm_gguf *g;
    edgellm_status rc = edgellm_gguf_open(path, &g, err);
    if (rc != EDGELLM_OK) return rc;
    edgellm_str s;
    if (!edgellm_gguf_get_str(g, "general.type", &s) || !edgellm_str_eq(s, "imatrix")) {
        edgellm_gguf_close(g);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not an imatrix file (general.type is not \"imatrix\")",
                            path);
    }
    uint32_t u;
    if (edgellm_gguf_get_u32(g, "imatrix.chunk_count", &u)) im->chunk_count = (int)u;
    if (edgellm_gguf_get_u32(g, "imatrix.chunk_size", &u)) im->chunk_size = (int)u;
    if (edgellm_gguf_arr_str(g, "imatrix.datasets", 0, &s))
        snprintf(im->dataset, sizeof im->dataset, "%.*s", (int)EDGELLM_MIN(s.len, 127u), s.ptr);
    for (int64_t i = 0; rc == EDGELLM_OK && i < edgellm_gguf_n_tensors(g); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        const char *suf = ".in_sum2";
        if (t->name.len <= 8 || t->name.len >= 64 + 8 || memcmp(t->name.ptr + t->name.len - 8, suf, 8)) continue;
        char base[64], cname[96];
        snprintf(base, sizeof base, "%.*s", (int)(t->name.len - 8), t->name.ptr);
        snprintf(cname, sizeof cname, "%s.counts", base);
        const edgellm_gguf_tensor *c = edgellm_gguf_find_tensor(g, cname);
        if (!c || t->type != EDGELLM_TYPE_F32 || c->type != EDGELLM_TYPE_F32 || c->n_elements < 1) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s without F32 counts", path, base);
            break;
        }
        /* several matrices (experts) per name: the sums of all of them */
        int64_t n_cols = t->ne[0], n_mat = (int64_t)(t->n_elements / (uint64_t)(n_cols ? n_cols : 1));
        im_entry *e = add_entry(im, base, n_cols);
        if (!e) { rc = edgellm_fail_nomem(err, path); break; }
        const float *v = t->data, *cv = c->data;
        for (int64_t k = 0; k < n_mat; k++)
            for (int64_t j = 0; j < n_cols; j++) e->sum2[j] += v[k * n_cols + j];
        for (uint64_t k = 0; k < c->n_elements; k++) e->count += cv[k];
    }
    edgellm_gguf_close(g);
    return rc;
}

static edgellm_status load_legacy(const char *path, edgellm_imatrix *im, edgellm_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot open", path);
    int32_t n = 0;
    edgellm_status rc = EDGELLM_OK;
    float *vals = NULL;
    if (fread(&n, 4, 1, f) != 1 || n < 0 || n > 1000000) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not an imatrix file", path);
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t len, ncall, nval;
        char name[64];
        if (fread(&len, 4, 1, f) != 1 || len <= 0 || len >= 64 || fread(name, 1, (size_t)len, f) != (size_t)len ||
            fread(&ncall, 4, 1, f) != 1 || fread(&nval, 4, 1, f) != 1 || nval <= 0 || nval > (1 << 24)) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: entry %d is damaged", path, (int)i);
            goto done;
        }
        name[len] = 0;
        float *nv = edgellm_realloc(vals, (size_t)nval * sizeof *vals);
        if (!nv) { rc = edgellm_fail_nomem(err, path); goto done; }
        vals = nv;
        if (fread(vals, 4, (size_t)nval, f) != (size_t)nval) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: entry %s is truncated", path, name);
            goto done;
        }
        im_entry *e = add_entry(im, name, nval);
        if (!e) { rc = edgellm_fail_nomem(err, path); goto done; }
        /* value = mean * ncall: keep sums over ncall "tokens" so that sum / count = mean */
        double c = ncall > 0 ? ncall : 1;
        for (int32_t j = 0; j < nval; j++) e->sum2[j] = vals[j];
        e->count = c;
    }
    int32_t chunks, dlen;
    if (fread(&chunks, 4, 1, f) == 1) {
        im->chunk_count = chunks;
        if (fread(&dlen, 4, 1, f) == 1 && dlen > 0 && dlen < (int32_t)sizeof im->dataset) {
            if (fread(im->dataset, 1, (size_t)dlen, f) == (size_t)dlen) im->dataset[dlen] = 0;
            else im->dataset[0] = 0;
        }
    }
done:
    edgellm_free(vals);
    fclose(f);
    return rc;
}

edgellm_status edgellm_imatrix_load(const char *path, edgellm_imatrix **out, edgellm_error *err)
{
    *out = NULL;
    edgellm_imatrix *im = edgellm_calloc(1, sizeof *im);
    if (!im) return edgellm_fail_nomem(err, path);
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    bool gguf = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    if (f) fclose(f);
    edgellm_status rc = gguf ? load_gguf(path, im, err) : load_legacy(path, im, err);
    if (rc == EDGELLM_OK && im->n == 0) rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: no imatrix entries", path);
    if (rc != EDGELLM_OK) edgellm_imatrix_free(im);
    else *out = im;
    return rc;
}

void edgellm_imatrix_describe(const edgellm_imatrix *im, char *buf, size_t size)
{
    if (!im) { snprintf(buf, size, "none"); return; }
    snprintf(buf, size, "%d matrices, %d chunks of %d tokens from %s", im->n, im->chunk_count, im->chunk_size,
             im->dataset[0] ? im->dataset : "?");
}
