/*
 * quantize.c — edgellm_quantize_file: rewrite a GGUF model with its matrices in another
 * type (`edgellm quantize`), and edgellm_quant_rows, the threaded row converter it shares
 * with synth.c.
 *
 * Flow:
 *   1. map and deep-validate the input (gguf_read.c); choose every tensor's type with the
 *      recipe (quant_recipe.c) before anything is written, because the GGUF header lists
 *      the types ahead of the data;
 *   2. metadata: every key of the input (edgellm_gguf_writer_copy_kv), then
 *      general.file_type (llama.cpp's enum) or, for files with edgellm's group-wise types,
 *      edgellm.quant.scheme instead; general.quantization_version = 2 (the GGUF spec's
 *      current value, docs/gguf.md);
 *   3. tensors are streamed (edgellm_gguf_writer_add_tensor_stream): while the writer
 *      writes, each tensor is converted in chunks of rows (CHUNK_BYTES of output at a
 *      time), each chunk split over the thread pool; a worker dequantizes its source row
 *      into scratch (traits to_float: any input type), quantizes it with the reference
 *      quantizer (edgellm_quantize_row, which also counts saturated values), dequantizes
 *      the result again and accumulates the error. Memory: the input mapping (page
 *      cache), one chunk buffer and 2 rows of floats per thread — never the whole model.
 *   4. the writer renames its temporary file into place only after everything succeeded.
 * Stored layouts (params.layout, kernels/repack.h): a Q4_K matrix quantized into Q4_K_R16
 * is produced whole (its rows quantized into one tensor-sized buffer), then packed to the
 * writer 16 rows at a time; a Q4_K_R16 source to convert is unpacked into a tensor-sized
 * buffer of plain rows first. Changing only the layout (no conversion) packs or unpacks 16
 * rows at a time through the chunk buffer, and leaves the blocks' bytes as they are.
 * The bytes written depend only on the input and the options, never on the thread count
 * (each row is converted by the same code whichever thread runs it); the error statistics
 * are summed per thread, so their last digits may.
 */
#include "quantize.h"
#include "../common/threadpool.h"
#include "../format/gguf.h"
#include "../kernels/gemm.h"
#include "../kernels/repack.h"
#include "../tensor/quant.h"
#include "../tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#define CHUNK_BYTES ((size_t)4 << 20)   /* output bytes converted per parallel step */

/* ---------------------------------------------------------------- row converter ---- */

typedef struct {
    int type;
    int64_t ne0, row0, n_rows;
    size_t row_bytes;
    edgellm_row_source_fn src;
    const void *user;
    const float *imw;                       /* [ne0] importance weights; NULL: plain */
    uint8_t *dst;
    float *scratch;                         /* [nth][2][ne0]                  */
    bool measure;
    edgellm_quant_err part[EDGELLM_MAX_THREADS];
} rows_task;

static void rows_worker(void *arg, int ith, int nth)
{
    rows_task *t = arg;
    int64_t r0, r1;
    edgellm_split_range(t->n_rows, ith, nth, &r0, &r1);
    float *x = t->scratch + (size_t)ith * 2 * (size_t)t->ne0;
    float *y = x + t->ne0;
    edgellm_to_float_fn deq = t->measure ? edgellm_type_get_traits(t->type)->to_float : NULL;
    edgellm_quant_err e = {0};
    edgellm_quant_stats qs = {0, 0};
    for (int64_t r = r0; r < r1; r++) {
        uint8_t *d = t->dst + (size_t)r * t->row_bytes;
        t->src(t->user, t->row0 + r, x);
        if (!t->imw || !edgellm_quant_row_weighted(t->type, x, t->imw, d, t->ne0, &qs))
            edgellm_quantize_row(t->type, x, d, t->ne0, &qs);
        if (!deq) continue;
        deq(d, y, t->ne0);
        for (int64_t i = 0; i < t->ne0; i++) {
            double xi = x[i];
            if (!isfinite(xi)) { e.n_nonfinite++; continue; }
            double di = fabs((double)y[i] - xi);
            e.sum_sq_x += xi * xi;
            e.sum_sq_err += di * di;
            if (di > e.max_abs_err) e.max_abs_err = di;
        }
    }
    e.n_values = qs.n_values;
    e.n_saturated = qs.n_saturated;
    t->part[ith] = e;
}

bool edgellm_quant_rows(edgellm_threadpool *pool, int type, int64_t ne0, int64_t row0, int64_t n_rows,
                        edgellm_row_source_fn src, const void *user, void *dst, float *scratch,
                        edgellm_quant_err *e)
{
    return edgellm_quant_rows_w(pool, type, ne0, row0, n_rows, src, user, NULL, dst, scratch, e);
}

bool edgellm_quant_rows_w(edgellm_threadpool *pool, int type, int64_t ne0, int64_t row0, int64_t n_rows,
                          edgellm_row_source_fn src, const void *user, const float *imw, void *dst, float *scratch,
                          edgellm_quant_err *e)
{
    const edgellm_type_traits *tr = edgellm_type_get_traits(type);
    size_t row_bytes = edgellm_type_row_size(type, ne0);
    if (!tr || !tr->from_float_ref || !tr->to_float || row_bytes == 0 || ne0 <= 0) return false;
    if (n_rows <= 0) return true;
    rows_task task = {.type = type, .ne0 = ne0, .row0 = row0, .n_rows = n_rows, .row_bytes = row_bytes,
                      .src = src, .user = user, .imw = imw, .dst = dst, .scratch = scratch, .measure = e != NULL};
    rows_task *t = &task;   /* ~3 KiB on the stack: nothing here can fail for want of memory */
    edgellm_threadpool_run(pool, rows_worker, t);
    if (e) {
        for (int i = 0; i < edgellm_threadpool_n_threads(pool); i++) {
            const edgellm_quant_err *p = &t->part[i];
            e->sum_sq_x += p->sum_sq_x;
            e->sum_sq_err += p->sum_sq_err;
            if (p->max_abs_err > e->max_abs_err) e->max_abs_err = p->max_abs_err;
            e->n_values += p->n_values;
            e->n_saturated += p->n_saturated;
            e->n_nonfinite += p->n_nonfinite;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- the tool ---- */

edgellm_quantize_params edgellm_quantize_default_params(void)
{
    edgellm_quantize_params p;
    memset(&p, 0, sizeof p);
    p.type = "q8_0";
    p.output_type = -1;
    p.embd_type = -1;
    return p;
}

void edgellm_quantize_report_free(edgellm_quantize_report *r)
{
    if (!r) return;
    edgellm_free(r->tensors);
    r->tensors = NULL;
    r->n_tensors = 0;
}

typedef struct {
    const uint8_t *data;                     /* plain rows of the source */
    int64_t ne0;
    edgellm_to_float_fn to_float;
    size_t row_bytes;                        /* source row bytes */
} src_rows;

static void src_row(const void *user, int64_t row, float *out)
{
    const src_rows *s = user;
    s->to_float(s->data + (size_t)row * s->row_bytes, out, s->ne0);
}

/* params.layout */
enum { LAYOUT_KEEP, LAYOUT_R16, LAYOUT_PLAIN };

/* A weight matrix the q4_K_r16 layout may hold: a 2-D Q4_K tensor of a layer or the
 * output head (never token_embd, whose rows are looked up one at a time), rows a multiple
 * of 16, rows no longer than the layout's kernel takes (EDGELLM_GEMM_R16_MAX_COLS). */
static bool r16_candidate(const char *name, const edgellm_gguf_tensor *t, int type)
{
    return type == EDGELLM_TYPE_Q4_K && t->n_dims == 2 && t->ne[1] % 16 == 0 && t->ne[0] <= EDGELLM_GEMM_R16_MAX_COLS &&
           (!strncmp(name, "blk.", 4) || !strcmp(name, "output.weight"));
}

/* A Q4_K_R16 tensor's plain rows in a new buffer (NULL: out of memory). */
static uint8_t *unpack_r16(const edgellm_gguf_tensor *t)
{
    uint8_t *out = edgellm_malloc(t->size_bytes ? (size_t)t->size_bytes : 1);
    const size_t rb = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, t->ne[0]);
    for (int64_t r = 0; out && r < t->ne[1]; r++)
        edgellm_repack_q4_K_r16_unpack_row(t->data, t->ne[1], t->ne[0], r, out + (size_t)r * rb);
    return out;
}

/* rows x cols plain Q4_K rows (rows a multiple of 16) to the sink in the q4_K_r16 layout,
 * one 16-row group at a time through tmp (16 rows' bytes): a group packed as a 16-row
 * matrix is its part of the first plane followed by its part of the second, and each plane
 * holds the groups in order (kernels/repack.h), so one pass over the groups writes the
 * first plane and a second pass the second. */
static bool put_r16(edgellm_gguf_sink *sink, const uint8_t *plain, int64_t rows, int64_t cols, uint8_t *tmp)
{
    const size_t rb = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, cols);
    const size_t p1 = edgellm_repack_q4_K_r16_plane2(16, cols), all = edgellm_repack_q4_K_r16_size(16, cols);
    for (int plane = 0; plane < 2; plane++)
        for (int64_t g = 0; g < rows / 16; g++) {
            edgellm_repack_q4_K_r16_pack(tmp, 16, cols, 0, 16, plain + (size_t)g * 16 * rb);
            if (!edgellm_gguf_sink_put(sink, plane ? tmp + p1 : tmp, plane ? all - p1 : p1)) return false;
        }
    return true;
}

/* A stored q4_K_r16 tensor's plain Q4_K rows to the sink, through tmp (n_tmp bytes, at
 * least one row). */
static bool put_plain(edgellm_gguf_sink *sink, const edgellm_gguf_tensor *t, uint8_t *tmp, size_t n_tmp)
{
    const size_t rb = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, t->ne[0]);
    const int64_t per = (int64_t)EDGELLM_MAX((size_t)1, n_tmp / (rb ? rb : 1));
    for (int64_t r0 = 0; r0 < t->ne[1]; r0 += per) {
        const int64_t r1 = EDGELLM_MIN(r0 + per, t->ne[1]);
        for (int64_t r = r0; r < r1; r++)
            edgellm_repack_q4_K_r16_unpack_row(t->data, t->ne[1], t->ne[0], r, tmp + (size_t)(r - r0) * rb);
        if (!edgellm_gguf_sink_put(sink, tmp, (size_t)(r1 - r0) * rb)) return false;
    }
    return true;
}

typedef struct {
    const char *in_path;
    edgellm_gguf *g;
    edgellm_threadpool *pool;
    int n_threads;
    edgellm_quantize_report *rep;    /* tensors[] filled with the plan, errors added while writing */
    edgellm_quant_choice *choice;    /* [n_tensors] */
    uint8_t *buf;                    /* chunk buffer */
    size_t buf_bytes;
    float *scratch;                  /* [n_threads][2][max ne0] */
    uint64_t done_elems, total_elems;
    edgellm_progress_fn progress;
    void *progress_user;
    const edgellm_imatrix *imatrix;  /* may be NULL */
    const int *types;                /* [n_types] per-tensor overrides, -1: the recipe's */
    int n_types;
    float *imw;                      /* [max ne0] weights of the current tensor */
    int layout;                      /* LAYOUT_* */
    bool keep_types;                 /* no type asked: only the layout changes */
    bool *in_r16, *out_r16;          /* [n_tensors] source / written in the q4_K_r16 layout */
} qjob;

static edgellm_status report_progress(qjob *q, const char *name, edgellm_error *err)
{
    if (!q->progress) return EDGELLM_OK;
    double f = q->total_elems ? (double)q->done_elems / (double)q->total_elems : 1.0;
    if (q->progress(q->progress_user, f > 1 ? 1 : f, name))
        return edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: quantization cancelled", q->in_path);
    return EDGELLM_OK;
}

static edgellm_status produce_rows(qjob *q, const edgellm_gguf_tensor *t, const edgellm_quant_choice *c,
                                   edgellm_quantize_tensor *rt, edgellm_gguf_sink *sink, const uint8_t *src,
                                   int src_type, uint8_t *whole, edgellm_error *err);

/* Writer callback: produce tensor `tag` (index into the input's tensors). */
static edgellm_status produce_tensor(void *user, uint64_t tag, edgellm_gguf_sink *sink, edgellm_error *err)
{
    qjob *q = user;
    const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(q->g, (int64_t)tag);
    const edgellm_quant_choice *c = &q->choice[tag];
    edgellm_quantize_tensor *rt = &q->rep->tensors[tag];
    edgellm_status rc;
    const bool in16 = q->in_r16[tag], out16 = q->out_r16[tag];
    if (!c->convert && in16 != out16) {   /* the same blocks in the other layout */
        const bool put = in16 ? put_plain(sink, t, q->buf, q->buf_bytes)
                              : put_r16(sink, t->data, t->ne[1], t->ne[0], q->buf);
        if (!put) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing tensor %s failed", q->in_path, rt->name);
        q->done_elems += t->n_elements;
        return report_progress(q, rt->name, err);
    }
    if (!c->convert) {   /* copied unchanged, in chunks so progress moves */
        const uint8_t *p = t->data;
        for (uint64_t off = 0; off < t->size_bytes; off += CHUNK_BYTES) {
            size_t n = (size_t)EDGELLM_MIN((uint64_t)CHUNK_BYTES, t->size_bytes - off);
            if (!edgellm_gguf_sink_put(sink, p + off, n))
                return edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing tensor %s failed", q->in_path, rt->name);
        }
        q->done_elems += t->n_elements;
        return report_progress(q, rt->name, err);
    }
    const int64_t ne0 = t->ne[0];
    const int64_t rows = ne0 ? (int64_t)(t->n_elements / (uint64_t)ne0) : 0;
    const size_t dst_row = edgellm_type_row_size(c->type, ne0);
    const int src_type = edgellm_type_stored_base(t->type);
    uint8_t *plain_in = in16 ? unpack_r16(t) : NULL;    /* owned: freed below */
    uint8_t *whole = NULL;   /* out16: every row, packed once all are quantized */
    if (out16 && !(whole = edgellm_malloc((size_t)rows * dst_row))) {
        edgellm_free(plain_in);
        return edgellm_fail_nomem(err, rt->name);
    }
    if (in16 && !plain_in) {
        edgellm_free(whole);
        return edgellm_fail_nomem(err, rt->name);
    }
    rc = produce_rows(q, t, c, rt, sink, plain_in ? plain_in : t->data, src_type, whole, err);
    if (rc == EDGELLM_OK && out16 && !put_r16(sink, whole, rows, ne0, q->buf))   /* q->buf is free now */
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing tensor %s failed", q->in_path, rt->name);
    edgellm_free(whole);
    edgellm_free(plain_in);
    return rc;
}

/* The converted rows of tensor t, quantized chunk by chunk from src (plain rows of
 * src_type): each chunk written to the sink, or, with whole, into whole[rows]. */
static edgellm_status produce_rows(qjob *q, const edgellm_gguf_tensor *t, const edgellm_quant_choice *c,
                                   edgellm_quantize_tensor *rt, edgellm_gguf_sink *sink, const uint8_t *src,
                                   int src_type, uint8_t *whole, edgellm_error *err)
{
    edgellm_status rc;
    const int64_t ne0 = t->ne[0];
    const int64_t rows = ne0 ? (int64_t)(t->n_elements / (uint64_t)ne0) : 0;
    const size_t dst_row = edgellm_type_row_size(c->type, ne0);
    const int64_t chunk = (int64_t)EDGELLM_MAX((size_t)1, q->buf_bytes / dst_row);
    src_rows s = {src, ne0, edgellm_type_get_traits(src_type)->to_float, edgellm_type_row_size(src_type, ne0)};
    edgellm_quant_err e = {0};
    const float *imw = NULL;
    if (q->imatrix && edgellm_quant_weighted_supported(c->type) &&
        edgellm_imatrix_weights(q->imatrix, rt->name, ne0, q->imw)) {
        imw = q->imw;
        rt->weighted = 1;
    } else if (q->imatrix && edgellm_quant_weighted_supported(c->type)) {
        /* no statistics for this tensor (token_embd: no matrix product reads it): equal
         * weights, i.e. the least-squares search, which is never worse than plain */
        for (int64_t j = 0; j < ne0; j++) q->imw[j] = 1.0f;
        imw = q->imw;
    }
    for (int64_t r = 0; r < rows; r += chunk) {
        int64_t n = EDGELLM_MIN(chunk, rows - r);
        uint8_t *dst = whole ? whole + (size_t)r * dst_row : q->buf;
        if (!edgellm_quant_rows_w(q->pool, c->type, ne0, r, n, src_row, &s, imw, dst, q->scratch, &e))
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor %s: cannot quantize rows of %lld to %s",
                                q->in_path, rt->name, (long long)ne0, edgellm_type_name(c->type));
        if (e.n_nonfinite)
            return edgellm_fail(err, EDGELLM_ERR_NUMERIC, "%s: tensor %s has %llu NaN/inf values (rows %lld..%lld)",
                                q->in_path, rt->name, (unsigned long long)e.n_nonfinite, (long long)r,
                                (long long)(r + n - 1));
        if (!whole && !edgellm_gguf_sink_put(sink, q->buf, (size_t)n * dst_row))
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing tensor %s failed", q->in_path, rt->name);
        q->done_elems += (uint64_t)(n * ne0);
        if ((rc = report_progress(q, rt->name, err)) != EDGELLM_OK) return rc;
    }
    const double n_vals = (double)t->n_elements;
    rt->rmse = n_vals > 0 ? sqrt(e.sum_sq_err / n_vals) : 0;
    rt->max_abs_err = e.max_abs_err;
    rt->sqnr_db = e.sum_sq_err > 0 ? 10.0 * log10(e.sum_sq_x / e.sum_sq_err) : INFINITY;
    rt->n_saturated = e.n_saturated;
    return EDGELLM_OK;
}

/* <arch>.block_count, or 1 + the largest blk.N index. */
static int model_n_layer(const edgellm_gguf *g)
{
    edgellm_str arch;
    if (edgellm_gguf_get_str(g, "general.architecture", &arch) && arch.len < 64) {
        char key[96];
        snprintf(key, sizeof key, "%.*s.block_count", (int)arch.len, arch.ptr);
        int64_t v;
        if (edgellm_gguf_get_i64(g, key, &v) && v > 0 && v < 100000) return (int)v;
    }
    int n = 0;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(g); i++) {
        edgellm_str s = edgellm_gguf_tensor_at(g, i)->name;
        if (s.len > 4 && !memcmp(s.ptr, "blk.", 4)) {
            int v = 0;
            for (uint64_t j = 4; j < s.len && s.ptr[j] >= '0' && s.ptr[j] <= '9' && v < 100000; j++)
                v = v * 10 + (s.ptr[j] - '0');
            n = EDGELLM_MAX(n, v + 1);
        }
    }
    return n;
}

static bool valid_override(int type) { return type < 0 || edgellm_quant_type_writable(type); }


/* A per-tensor type replacing the recipe's (edgellm_quantize_file_types). */
static void override_choice(edgellm_quant_choice *c, int type, const edgellm_gguf_tensor *t)
{
    const int src = edgellm_type_stored_base(t->type);   /* the blocks it holds */
    const edgellm_type_traits *st = edgellm_type_get_traits(src);
    if (type < 0 || !st || !st->to_float || t->n_dims < 2) return;
    if (!c->convert && !strstr(c->note, "kept")) return;   /* copied: not a weight matrix */
    c->wanted = type;
    int ty = type;
    while (ty >= 0 && edgellm_type_row_size(ty, t->ne[0]) == 0) ty = edgellm_quant_fallback_type(ty);
    if (ty < 0) ty = EDGELLM_TYPE_F32;
    c->type = ty;
    c->fallback = ty != type;
    c->convert = !(ty == src && (ty == EDGELLM_TYPE_F32 || ty == EDGELLM_TYPE_F16 || ty == EDGELLM_TYPE_BF16));
    if (c->fallback)
        snprintf(c->note, sizeof c->note, "%s does not fit rows of %lld: %s", edgellm_type_name(type),
                 (long long)t->ne[0], edgellm_type_name(ty));
    else snprintf(c->note, sizeof c->note, "per-tensor choice");
}

/* Fill the report rows and choices: the whole plan, before anything is written. */
static edgellm_status plan_tensors(qjob *q, const edgellm_quant_recipe *rcp, size_t *max_ne0, edgellm_error *err)
{
    edgellm_quantize_report *rep = q->rep;
    for (int i = 0; i < rep->n_tensors; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(q->g, i);
        edgellm_quantize_tensor *rt = &rep->tensors[i];
        if (t->name.len >= sizeof rt->name)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor name of %llu bytes", q->in_path,
                                (unsigned long long)t->name.len);
        memcpy(rt->name, t->name.ptr, (size_t)t->name.len);
        rt->n_dims = (int)t->n_dims;
        for (int d = 0; d < 4; d++) rt->ne[d] = t->ne[d];
        rt->src_type = t->type;
        rt->n_elements = t->n_elements;
        rt->src_bytes = t->size_bytes;
        edgellm_quant_choice *c = &q->choice[i];
        q->in_r16[i] = t->type == EDGELLM_TYPE_Q4_K_R16;
        const int src_type = edgellm_type_stored_base(t->type);   /* the blocks it holds */
        if (q->keep_types) {
            memset(c, 0, sizeof *c);
            c->type = c->wanted = src_type;
            snprintf(c->note, sizeof c->note, "type kept");
        } else {
            edgellm_quant_choose(rcp, rt->name, t->n_dims, t->ne, src_type, c);
            if (q->types && i < q->n_types) override_choice(c, q->types[i], t);
        }
        q->out_r16[i] = q->layout == LAYOUT_R16    ? r16_candidate(rt->name, t, c->type)
                        : q->layout == LAYOUT_KEEP ? q->in_r16[i] && c->type == EDGELLM_TYPE_Q4_K
                                                   : false;
        rep->n_layout += q->out_r16[i];
        rt->type = q->out_r16[i] ? EDGELLM_TYPE_Q4_K_R16 : c->type;
        rt->wanted_type = c->wanted;
        rt->fallback = c->fallback;
        rt->quantized = c->convert;
        snprintf(rt->note, sizeof rt->note, "%s", c->note);
        if (c->convert) {
            uint64_t rows = t->ne[0] ? t->n_elements / (uint64_t)t->ne[0] : 0;
            if (!edgellm_mul_u64(edgellm_type_row_size(c->type, t->ne[0]), rows, &rt->dst_bytes))
                return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor %s is too large", q->in_path, rt->name);
            if (edgellm_type_get_traits(t->type)->is_quantized) rep->requantized = 1;
            *max_ne0 = EDGELLM_MAX(*max_ne0, (size_t)t->ne[0]);
        } else {
            rt->dst_bytes = t->size_bytes;
            rt->sqnr_db = INFINITY;
        }
        rep->n_fallbacks += c->fallback;
        if (c->type >= 1000) rep->edgellm_only = 1;
        rep->n_elements += t->n_elements;
        rep->src_bytes += rt->src_bytes;
        rep->dst_bytes += rt->dst_bytes;
    }
    return EDGELLM_OK;
}

/* llama.cpp's general.file_type for a file of float tensors only (an i4/i8 request whose
 * rows fit no group size, so every tensor fell back): MOSTLY_F16 (1) or MOSTLY_BF16 (32) when
 * a tensor has that type, else ALL_F32 (0) (llama.cpp's include/llama.h, enum llama_ftype). */
static int float_file_type(const edgellm_quantize_report *rep)
{
    int ft = 0;
    for (int i = 0; i < rep->n_tensors; i++) {
        if (rep->tensors[i].type == EDGELLM_TYPE_F16) return 1;
        if (rep->tensors[i].type == EDGELLM_TYPE_BF16) ft = 32;
    }
    return ft;
}

edgellm_status edgellm_quantize_file(const char *in_path, const char *out_path, const edgellm_quantize_params *pp,
                                     edgellm_quantize_report *report, edgellm_error *err)
{
    return edgellm_quantize_file_types(in_path, out_path, pp, NULL, 0, NULL, report, err);
}

edgellm_status edgellm_quantize_file_types(const char *in_path, const char *out_path, const edgellm_quantize_params *pp,
                                           const int *types, int n_types, const char *recipe,
                                           edgellm_quantize_report *report, edgellm_error *err)
{
    edgellm_status rc = EDGELLM_OK;
    edgellm_quantize_params p = pp ? *pp : edgellm_quantize_default_params();
    edgellm_quantize_report local;
    edgellm_quantize_report *rep = report ? report : &local;
    qjob q = {0};
    edgellm_gguf_writer *w = NULL;
    edgellm_quant_scheme scheme;
    const double t0 = edgellm_time_ms();
    memset(rep, 0, sizeof *rep);

    if (!in_path || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "NULL input or output path");
    q.layout = !p.layout ? LAYOUT_KEEP : !strcasecmp(p.layout, "q4_K_r16") ? LAYOUT_R16
             : !strcmp(p.layout, "plain")                               ? LAYOUT_PLAIN
                                                                        : -1;
    if (q.layout < 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "unknown layout '%s' (q4_K_r16 or plain)", p.layout);
    q.keep_types = !p.type && p.layout;
    if (q.keep_types) {
        memset(&scheme, 0, sizeof scheme);
        snprintf(scheme.name, sizeof scheme.name, "kept");
    } else if ((rc = edgellm_quant_scheme_parse(p.type, p.group, p.asym, &scheme, err)) != EDGELLM_OK)
        return rc;
    if (q.keep_types && (p.output_type >= 0 || p.embd_type >= 0 || p.n_keep || p.imatrix))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "layout %s without a type changes only the layout: "
                                                     "output_type, embd_type, keep and imatrix need a type",
                            p.layout);
    if (!valid_override(p.output_type) || !valid_override(p.embd_type))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--output-type / --embd-type must be a type edgellm "
                                                     "computes with (%s / %s)",
                            edgellm_type_name(p.output_type), edgellm_type_name(p.embd_type));
    if (p.n_threads > EDGELLM_MAX_THREADS || p.n_keep < 0 || (p.n_keep && !p.keep))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "threads %d outside 0..%d or bad keep list",
                            p.n_threads, EDGELLM_MAX_THREADS);
    if (edgellm_same_file(in_path, out_path))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is the input file", out_path);
    q.n_threads = p.n_threads > 0 ? p.n_threads : edgellm_n_physical_cores();
    q.in_path = in_path;
    q.progress = p.progress;
    q.progress_user = p.progress_user;
    q.imatrix = p.imatrix;
    q.types = types;
    q.n_types = n_types;
    q.rep = rep;
    snprintf(rep->scheme, sizeof rep->scheme, "%s", scheme.name);
    rep->scheme_edgellm = scheme.edgellm_only;
    rep->n_threads = q.n_threads;

    if ((rc = edgellm_gguf_open(in_path, &q.g, err)) != EDGELLM_OK) goto done;
    rep->n_tensors = (int)edgellm_gguf_n_tensors(q.g);
    if (rep->n_tensors == 0) {   /* e.g. a vocabulary-only file: writing a copy would look like success */
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: has no tensors: nothing to quantize", in_path);
        goto done;
    }
    rep->tensors = edgellm_calloc(rep->n_tensors ? (size_t)rep->n_tensors : 1, sizeof *rep->tensors);
    q.choice = edgellm_calloc(rep->n_tensors ? (size_t)rep->n_tensors : 1, sizeof *q.choice);
    q.in_r16 = edgellm_calloc((size_t)rep->n_tensors, sizeof *q.in_r16);
    q.out_r16 = edgellm_calloc((size_t)rep->n_tensors, sizeof *q.out_r16);
    if (!rep->tensors || !q.choice || !q.in_r16 || !q.out_r16) { rc = edgellm_fail_nomem(err, in_path); goto done; }

    edgellm_quant_recipe rcp = {.scheme = &scheme, .n_layer = model_n_layer(q.g),
                                .tied = !edgellm_gguf_find_tensor(q.g, "output.weight"),
                                .output_type = p.output_type, .embd_type = p.embd_type, .pure = p.pure != 0,
                                .keep = p.keep, .n_keep = p.n_keep};
    size_t max_ne0 = 0;
    if ((rc = plan_tensors(&q, &rcp, &max_ne0, err)) != EDGELLM_OK) goto done;
    q.total_elems = rep->n_elements;
    rep->file_type = rep->edgellm_only ? -1 : scheme.file_type;
    if (!rep->edgellm_only && rep->file_type < 0 && !q.keep_types)   /* i4/i8 asked, but no tensor took it */
        rep->file_type = float_file_type(rep);
    if (q.keep_types) {   /* the input's general.file_type stays */
        uint32_t v;
        rep->file_type = edgellm_gguf_get_u32(q.g, "general.file_type", &v) ? (int)v : -1;
    }
    rep->src_bpw = rep->n_elements ? 8.0 * (double)rep->src_bytes / (double)rep->n_elements : 0;
    rep->dst_bpw = rep->n_elements ? 8.0 * (double)rep->dst_bytes / (double)rep->n_elements : 0;

    /* buffers: one chunk of output (at least one row of the widest tensor), scratch rows */
    q.buf_bytes = CHUNK_BYTES;
    for (int i = 0; i < rep->n_tensors; i++)
        if (q.choice[i].convert)
            q.buf_bytes = EDGELLM_MAX(q.buf_bytes, edgellm_type_row_size(q.choice[i].type, rep->tensors[i].ne[0]));
    for (int i = 0; i < rep->n_tensors; i++)   /* a stored layout goes through it 16 rows at a time */
        if ((q.in_r16[i] || q.out_r16[i]) && rep->tensors[i].n_elements > 0)
            q.buf_bytes = EDGELLM_MAX(q.buf_bytes, 16 * edgellm_type_row_size(EDGELLM_TYPE_Q4_K, rep->tensors[i].ne[0]));
    size_t n_scratch;
    if (!edgellm_mul_size((size_t)q.n_threads * 2, max_ne0 ? max_ne0 : 1, &n_scratch) ||
        !(q.buf = edgellm_malloc(q.buf_bytes)) || !(q.scratch = edgellm_malloc(n_scratch * sizeof(float))) ||
        !(q.imw = edgellm_malloc((max_ne0 ? max_ne0 : 1) * sizeof(float)))) {
        rc = edgellm_fail_nomem(err, in_path);
        goto done;
    }
    if ((rc = edgellm_threadpool_new(q.n_threads, &q.pool, err)) != EDGELLM_OK) goto done;

    /* metadata */
    bool ok = (w = edgellm_gguf_writer_new()) != NULL && edgellm_gguf_writer_copy_kv(w, q.g);
    edgellm_gguf_writer_remove_kv(w, "edgellm.layout");
    /* the layout's kernels load aligned 64-byte lines of the mapping */
    if (ok && rep->n_layout)
        ok = edgellm_gguf_writer_set_str(w, "edgellm.layout", "q4_K_r16") && edgellm_gguf_writer_set_alignment(w, 64);
    if (q.keep_types) {
        /* types and their metadata as in the input */
    } else if (ok && rep->edgellm_only) {
        char label[64];
        if (scheme.edgellm_only) snprintf(label, sizeof label, "%s", scheme.label);
        else snprintf(label, sizeof label, "%s + edgellm group types", scheme.name);
        edgellm_gguf_writer_remove_kv(w, "general.file_type");
        ok = edgellm_gguf_writer_set_str(w, "edgellm.quant.scheme", label);
    } else if (ok) {
        edgellm_gguf_writer_remove_kv(w, "edgellm.quant.scheme");
        ok = edgellm_gguf_writer_set_u32(w, "general.file_type", (uint32_t)rep->file_type);
    }
    if (!q.keep_types) {
        ok = ok && edgellm_gguf_writer_set_u32(w, "general.quantization_version", 2);
        edgellm_gguf_writer_remove_kv(w, "edgellm.quant.recipe");
        edgellm_gguf_writer_remove_kv(w, "edgellm.quant.imatrix");
    }
    if (ok && recipe) ok = edgellm_gguf_writer_set_str(w, "edgellm.quant.recipe", recipe);
    if (ok && p.imatrix) {
        char desc[256];
        edgellm_imatrix_describe(p.imatrix, desc, sizeof desc);
        ok = edgellm_gguf_writer_set_str(w, "edgellm.quant.imatrix", desc);
    }
    for (int i = 0; ok && i < rep->n_tensors; i++) {
        const edgellm_quantize_tensor *rt = &rep->tensors[i];
        ok = edgellm_gguf_writer_add_tensor_stream(w, rt->name, rt->type, (uint32_t)rt->n_dims, rt->ne,
                                                   produce_tensor, &q, (uint64_t)i);
    }
    if (!ok) {   /* names (< 64 bytes, unique) and shapes were validated: only memory fails */
        rc = edgellm_fail_nomem(err, out_path);
        goto done;
    }
    if ((rc = report_progress(&q, "", err)) != EDGELLM_OK) goto done;
    rc = edgellm_gguf_writer_write(w, out_path, err);

done:
    rep->elapsed_ms = edgellm_time_ms() - t0;
    edgellm_gguf_writer_free(w);
    edgellm_threadpool_free(q.pool);
    edgellm_free(q.buf);
    edgellm_free(q.scratch);
    edgellm_free(q.imw);
    edgellm_free(q.choice);
    edgellm_free(q.in_r16);
    edgellm_free(q.out_r16);
    edgellm_gguf_close(q.g);
    if (!report) edgellm_quantize_report_free(&local);
    return rc;
}
