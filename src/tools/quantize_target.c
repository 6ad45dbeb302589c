/*
 * quantize_target.c — edgellm_quantize_target: a type per matrix that meets a quality
 * target at the smallest file (the contract and the four steps: edgellm_tools.h,
 * "Quantization to a quality target"; the method and measurements: docs/quantization.md).
 *
 * Scan, measured: the source model is loaded once; a shallow copy of it (same mapping,
 * its own array of layer views) gets, for one matrix at a time, a view of an F32 buffer
 * holding that matrix quantized to the candidate type (with the importance weights when
 * there are statistics) and dequantized again; edgellm_eval_compare then measures it
 * against the source's saved distributions (eval_logits.c; the whole vocabulary when it
 * has at most 4096 entries, else the top 256). The forward pass of the copy computes with
 * F32 weights, so the activation rounding of the quantized kernels is not in the scan; the
 * verification step measures the real files.
 *
 * Choice: each matrix's options are its candidate types after the shape fallback
 * (duplicates dropped), sorted by bytes, with options that cost more bytes and no less
 * than a smaller one removed. All start at the smallest; the greedy path then takes, one
 * step at a time, the move from a matrix's current option to a larger one with the
 * greatest (cost saved) / (bytes added), until every matrix is at its largest. The order
 * does not depend on the target, so every choice is a prefix of the path (n steps), with
 * the predicted cost falling and the bytes growing in n.
 *
 * Rounds: a search over n. The first n is the shortest prefix predicting at most the
 * target's budget (size targets: the longest fitting the size, less an estimate of the
 * metadata and unscanned tensors). After a file is measured, the next n is the shortest
 * prefix predicting (current prediction) x target / measured (metrics are about
 * proportional to the prediction), moved to the middle when it falls outside (longest n
 * that missed, shortest n that met); the search stops when those two are adjacent. The
 * round files are written next to OUT (OUT.round-K.PID.tmp, registered as temporaries)
 * and the kept one is renamed onto OUT.
 */
#include "quantize.h"
#include "eval.h"
#include "../common/threadpool.h"
#include "../format/gguf.h"
#include "../model/model.h"
#include "../tensor/types.h"
#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_TYPES "q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q5_k,q6_k,i4_g64,i4_g64_asym,i4_g128,i4_g128_asym,f16"
#define PROXY_ROWS 64                 /* rows sampled per matrix by the proxy scan */
#define MEASURED_MAX_PARAMS 50000000ull

edgellm_quantize_target_params edgellm_quantize_target_default_params(void)
{
    edgellm_quantize_target_params p;
    memset(&p, 0, sizeof p);
    p.quant = edgellm_quantize_default_params();
    p.n_ctx = 256;
    p.calib_chunks = 16;
    p.scan_chunks = 8;
    p.heldout_chunks = 32;
    p.max_rounds = 6;
    p.predict_scale = 1.0;
    p.margin = 1.0;
    return p;
}

void edgellm_quantize_target_report_free(edgellm_quantize_target_report *r)
{
    if (!r) return;
    edgellm_free(r->tensors);
    edgellm_free(r->recipe);
    r->tensors = NULL;
    r->recipe = NULL;
}

/* ---------------------------------------------------------------- parsing ---- */

static edgellm_status parse_target(const char *s, edgellm_quantize_target_report *r, edgellm_error *err)
{
    const char *colon = s ? strchr(s, ':') : NULL;
    if (!colon || colon == s || colon - s >= (long)sizeof r->metric)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': expected kld:X, dppl:X%%, top1:X%% or size:N[MiB]",
                            s ? s : "");
    memcpy(r->metric, s, (size_t)(colon - s));
    r->metric[colon - s] = 0;
    for (char *c = r->metric; *c; c++) *c = (char)tolower((unsigned char)*c);
    char *end;
    double v = strtod(colon + 1, &end);
    if (end == colon + 1 || !isfinite(v) || v <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': the value must be a positive number", s);
    if (!strcmp(r->metric, "size")) {
        double mul = 1;
        if (!strcasecmp(end, "kib") || !strcasecmp(end, "k")) mul = 1024;
        else if (!strcasecmp(end, "mib") || !strcasecmp(end, "m")) mul = 1048576;
        else if (!strcasecmp(end, "gib") || !strcasecmp(end, "g")) mul = 1073741824;
        else if (!strcasecmp(end, "mb")) mul = 1e6;
        else if (!strcasecmp(end, "gb")) mul = 1e9;
        else if (*end && strcasecmp(end, "b"))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': size unit B, KiB, MiB, GiB, MB or GB", s);
        r->target = v * mul;
        return EDGELLM_OK;
    }
    if (*end == '%') end++;
    if (*end) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': trailing '%s'", s, end);
    if (!strcmp(r->metric, "top1") && v >= 100)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': top-1 agreement must be below 100%%", s);
    if (strcmp(r->metric, "kld") && strcmp(r->metric, "dppl") && strcmp(r->metric, "top1"))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--target '%s': metric kld, dppl, top1 or size", s);
    r->target = v;
    return EDGELLM_OK;
}

/* "i4" -> I4_G128_SYM, "i4:g64:asym" / "i4_g64_asym" -> I4_G64_ASYM; other names as typed. */
static int parse_one_type(const char *s, size_t n)
{
    char low[40], canon[40];
    while (n && isspace((unsigned char)*s)) { s++; n--; }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n == 0 || n >= sizeof low) return -1;
    for (size_t i = 0; i < n; i++) low[i] = (char)(s[i] == ':' ? '_' : tolower((unsigned char)s[i]));
    low[n] = 0;
    if (low[0] == 'i' && (low[1] == '4' || low[1] == '8') && (!low[2] || low[2] == '_')) {
        int group = 128, asym = 0;
        for (char *tok = low + 2; *tok;) {
            tok++;
            size_t len = strcspn(tok, "_");
            if (len == 4 && !strncmp(tok, "asym", 4)) asym = 1;
            else if (len == 3 && !strncmp(tok, "sym", 3)) asym = 0;
            else if (tok[0] == 'g') group = atoi(tok + 1);
            else return -1;
            tok += len;
        }
        snprintf(canon, sizeof canon, "I%c_G%d_%s", low[1], group, asym ? "ASYM" : "SYM");
        return edgellm_quantize_type_from_name(canon);
    }
    return edgellm_quantize_type_from_name(low);
}

static edgellm_status parse_types(const char *list, int *types, int *n, edgellm_error *err)
{
    *n = 0;
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, ",");
        int t = parse_one_type(s, len);
        if (t < 0)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--types: '%.*s' is not a type edgellm can write "
                                                         "(q4_0, q5_0, q8_0, q4_k, i4_g64_asym, f16, ...)",
                                (int)len, s);
        bool dup = false;
        for (int i = 0; i < *n; i++) dup = dup || types[i] == t;
        if (!dup) {
            if (*n == EDGELLM_QT_MAX_TYPES)
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--types: more than %d types", EDGELLM_QT_MAX_TYPES);
            types[(*n)++] = t;
        }
        s += len;
        if (*s == ',') s++;
    }
    if (*n == 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--types: no type");
    return EDGELLM_OK;
}

/* ---------------------------------------------------------------- state ---- */

typedef struct {
    const edgellm_quantize_target_params *p;
    edgellm_quantize_target_report *rep;
    edgellm_model *m;
    int n_threads;
    edgellm_threadpool *pool;
    const edgellm_imatrix *im;
    int *file_index;              /* [n_tensors] GGUF index of each scanned matrix */
    int n_file_tensors;
    char ref_path[4200];          /* saved reference distributions (calibration) */
    int ref_registered, ref_slot;
    edgellm_eval_params ev;       /* calibration windows */
    double progress_base, progress_span;
    int round_slot[EDGELLM_QT_MAX_ROUNDS];   /* temporaries' registrations, -1: none */
} qt_state;

static int progress(qt_state *s, double f, const char *what)
{
    const edgellm_quantize_params *q = &s->p->quant;
    if (!q->progress) return 0;
    return q->progress(q->progress_user, s->progress_base + s->progress_span * (f > 1 ? 1 : f), what);
}

typedef struct {
    const edgellm_gguf_tensor *t;
    edgellm_to_float_fn to_float;
    size_t row_bytes;
    const int64_t *rows;          /* NULL: identity */
} rows_src;

static void src_row(const void *user, int64_t row, float *out)
{
    const rows_src *s = user;
    int64_t r = s->rows ? s->rows[row] : row;
    s->to_float((const uint8_t *)s->t->data + (size_t)r * s->row_bytes, out, s->t->ne[0]);
}

/* Quantize rows of t (all, or rows[n_rows]) to type and dequantize them into out[n_rows][ne0]. */
static bool fake_quant(qt_state *s, const edgellm_gguf_tensor *t, const char *name, int type, const int64_t *rows,
                       int64_t n_rows, float *out)
{
    const int64_t ne0 = t->ne[0];
    const size_t qrow = edgellm_type_row_size(type, ne0);
    uint8_t *q = edgellm_malloc(qrow * (size_t)n_rows);
    float *scratch = edgellm_malloc((size_t)s->n_threads * 2 * (size_t)ne0 * sizeof(float));
    float *imw = edgellm_malloc((size_t)ne0 * sizeof(float));
    bool ok = q && scratch && imw;
    const float *w = NULL;
    if (ok && s->im && edgellm_quant_weighted_supported(type) && edgellm_imatrix_weights(s->im, name, ne0, imw))
        w = imw;
    rows_src rs = {t, edgellm_type_get_traits(t->type)->to_float, edgellm_type_row_size(t->type, ne0), rows};
    ok = ok && edgellm_quant_rows_w(s->pool, type, ne0, 0, n_rows, src_row, &rs, w, q, scratch, NULL);
    const edgellm_to_float_fn deq = edgellm_type_get_traits(type)->to_float;
    for (int64_t r = 0; ok && r < n_rows; r++) deq(q + (size_t)r * qrow, out + (size_t)r * (size_t)ne0, ne0);
    edgellm_free(q);
    edgellm_free(scratch);
    edgellm_free(imw);
    return ok;
}

/* The views of `name` in a model copy (two when the output is tied to token_embd). */
static int views_of(edgellm_model *c, const char *name, edgellm_tensor **v)
{
    int n = 0;
    if (!strcmp(name, "token_embd.weight")) {
        v[n++] = &c->token_embd;
        if (c->tied_output) v[n++] = &c->output;
        return n;
    }
    if (!strcmp(name, "output.weight")) { v[n++] = &c->output; return n; }
    int il;
    char kind[32];
    if (sscanf(name, "blk.%d.%31[a-z_].weight", &il, kind) != 2 || il < 0 || il >= c->hp.n_layer) return 0;
    edgellm_layer *L = &c->layers[il];
    if (!strcmp(kind, "attn_q")) v[n++] = &L->wq;
    else if (!strcmp(kind, "attn_k")) v[n++] = &L->wk;
    else if (!strcmp(kind, "attn_v")) v[n++] = &L->wv;
    else if (!strcmp(kind, "attn_output")) v[n++] = &L->wo;
    else if (!strcmp(kind, "ffn_gate")) v[n++] = &L->w_gate;
    else if (!strcmp(kind, "ffn_up")) v[n++] = &L->w_up;
    else if (!strcmp(kind, "ffn_down")) v[n++] = &L->w_down;
    return n;
}

static double metric_value(const char *metric, const edgellm_eval_compare_result *c)
{
    if (!strcmp(metric, "kld")) return c->kld_mean;
    if (!strcmp(metric, "dppl")) return c->delta_ppl_pct;
    if (!strcmp(metric, "top1")) return c->top1_pct;
    return NAN;
}

/* Badness: larger is worse, positive ("top1" counts disagreement). */
static double badness(const char *metric, double v)
{
    if (!strcmp(metric, "top1")) return 100.0 - v;
    return v;
}

static edgellm_status compare_calib(qt_state *s, const edgellm_model *m, int chunks, edgellm_eval_compare_result *out,
                                    edgellm_error *err)
{
    edgellm_eval_params ev = s->ev;
    ev.progress = NULL;
    ev.max_chunks = chunks;
    return edgellm_eval_compare(m, NULL, s->ref_path, s->p->calib, s->p->calib_len, &ev, out, err);
}

/* ---------------------------------------------------------------- scan ---- */

static edgellm_status scan_measured(qt_state *s, edgellm_error *err)
{
    edgellm_quantize_target_report *rep = s->rep;
    edgellm_model copy = *s->m;
    edgellm_layer *layers = edgellm_malloc((size_t)s->m->hp.n_layer * sizeof *layers);
    if (!layers) return edgellm_fail_nomem(err, "scan");
    memcpy(layers, s->m->layers, (size_t)s->m->hp.n_layer * sizeof *layers);
    copy.layers = layers;
    edgellm_status rc = EDGELLM_OK;
    int total = 0, done = 0;
    for (int i = 0; i < rep->n_tensors; i++) total += rep->tensors[i].n_options;
    for (int i = 0; i < rep->n_tensors && rc == EDGELLM_OK; i++) {
        edgellm_quantize_target_tensor *tt = &rep->tensors[i];
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(s->m->gguf, s->file_index[i]);
        edgellm_tensor *v[2];
        int nv = views_of(&copy, tt->name, v);
        int64_t rows = (int64_t)(t->n_elements / (uint64_t)t->ne[0]);
        float *buf = edgellm_malloc((size_t)t->n_elements * sizeof(float));
        if (!buf) { rc = edgellm_fail_nomem(err, tt->name); break; }
        edgellm_tensor saved[2];
        for (int k = 0; k < nv; k++) saved[k] = *v[k];
        for (int o = 0; o < tt->n_options && rc == EDGELLM_OK; o++) {
            char what[96];
            snprintf(what, sizeof what, "scan %s %s", tt->name, edgellm_type_name(tt->type[o]));
            if (progress(s, (double)done++ / total, what)) {
                rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "quantize: cancelled");
                break;
            }
            if (tt->type[o] == t->type || nv == 0) { tt->cost[o] = 0; continue; }
            if (!fake_quant(s, t, tt->name, tt->type[o], NULL, rows, buf)) {
                rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: cannot quantize to %s", tt->name,
                                  edgellm_type_name(tt->type[o]));
                break;
            }
            for (int k = 0; k < nv; k++) {
                v[k]->data = buf;
                v[k]->type = EDGELLM_TYPE_F32;
                v[k]->repack = NULL;
                v[k]->row_bytes = (size_t)t->ne[0] * sizeof(float);
            }
            edgellm_eval_compare_result c;
            rc = compare_calib(s, &copy, s->p->scan_chunks, &c, err);
            for (int k = 0; k < nv; k++) *v[k] = saved[k];
            tt->cost[o] = c.kld_mean > 0 ? c.kld_mean : 0;
        }
        edgellm_free(buf);
    }
    edgellm_free(layers);
    return rc;
}

static edgellm_status scan_proxy(qt_state *s, edgellm_error *err)
{
    edgellm_quantize_target_report *rep = s->rep;
    int total = 0, done = 0;
    for (int i = 0; i < rep->n_tensors; i++) total += rep->tensors[i].n_options;
    for (int i = 0; i < rep->n_tensors; i++) {
        edgellm_quantize_target_tensor *tt = &rep->tensors[i];
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(s->m->gguf, s->file_index[i]);
        const int64_t ne0 = t->ne[0], rows = (int64_t)(t->n_elements / (uint64_t)ne0);
        const int64_t n = EDGELLM_MIN((int64_t)PROXY_ROWS, rows);
        int64_t idx[PROXY_ROWS];
        for (int64_t r = 0; r < n; r++) idx[r] = r * rows / n;
        float *x = edgellm_malloc((size_t)(n * ne0) * sizeof(float)), *y = edgellm_malloc((size_t)(n * ne0) * sizeof(float));
        float *w = edgellm_malloc((size_t)ne0 * sizeof(float));
        if (!x || !y || !w) {
            edgellm_free(x); edgellm_free(y); edgellm_free(w);
            return edgellm_fail_nomem(err, tt->name);
        }
        if (!s->im || !edgellm_imatrix_weights(s->im, tt->name, ne0, w))
            for (int64_t j = 0; j < ne0; j++) w[j] = 1.0f;
        edgellm_to_float_fn f = edgellm_type_get_traits(t->type)->to_float;
        size_t rb = edgellm_type_row_size(t->type, ne0);
        for (int64_t r = 0; r < n; r++) f((const uint8_t *)t->data + (size_t)idx[r] * rb, x + r * ne0, ne0);
        double sig = 0;
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < ne0; j++) sig += (double)w[j] * x[r * ne0 + j] * x[r * ne0 + j];
        edgellm_status rc = EDGELLM_OK;
        for (int o = 0; o < tt->n_options; o++) {
            char what[96];
            snprintf(what, sizeof what, "scan %s %s", tt->name, edgellm_type_name(tt->type[o]));
            if (progress(s, (double)done++ / total, what)) {
                rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "quantize: cancelled");
                break;
            }
            if (tt->type[o] == t->type) { tt->cost[o] = 0; continue; }
            if (!fake_quant(s, t, tt->name, tt->type[o], idx, n, y)) {
                rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: cannot quantize to %s", tt->name,
                                  edgellm_type_name(tt->type[o]));
                break;
            }
            double e = 0;
            for (int64_t r = 0; r < n; r++)
                for (int64_t j = 0; j < ne0; j++) {
                    double d = (double)x[r * ne0 + j] - y[r * ne0 + j];
                    e += w[j] * d * d;
                }
            tt->cost[o] = sig > 0 ? e / sig : 0;
        }
        edgellm_free(x);
        edgellm_free(y);
        edgellm_free(w);
        if (rc != EDGELLM_OK) return rc;
    }
    return EDGELLM_OK;
}

/* ---------------------------------------------------------------- choice ---- */

/* Drop options that cost more bytes and more (or equal) cost than a smaller one; sort by bytes. */
static void prune_options(edgellm_quantize_target_tensor *t)
{
    for (int a = 0; a < t->n_options; a++)   /* insertion sort by bytes, then cost */
        for (int b = a; b > 0 && (t->bytes[b] < t->bytes[b - 1] ||
                                  (t->bytes[b] == t->bytes[b - 1] && t->cost[b] < t->cost[b - 1])); b--) {
            int ty = t->type[b]; t->type[b] = t->type[b - 1]; t->type[b - 1] = ty;
            double c = t->cost[b]; t->cost[b] = t->cost[b - 1]; t->cost[b - 1] = c;
            uint64_t y = t->bytes[b]; t->bytes[b] = t->bytes[b - 1]; t->bytes[b - 1] = y;
        }
    int n = 0;
    double best = INFINITY;
    for (int o = 0; o < t->n_options; o++) {
        if (!(t->cost[o] < best)) continue;   /* a smaller option is as good */
        best = t->cost[o];
        t->type[n] = t->type[o];
        t->cost[n] = t->cost[o];
        t->bytes[n] = t->bytes[o];
        n++;
    }
    t->n_options = n;
}

/* One upgrade of the greedy path: matrix `tensor` goes to `option`. */
typedef struct {
    int      tensor, option;
    double   ratio;            /* cost saved per byte added            */
    double   pred;             /* predicted cost after this step       */
    uint64_t bytes;            /* bytes of the scanned matrices after  */
} qt_step;

/* The whole greedy path from every matrix at its smallest option to every matrix at its
 * largest: at each step the upgrade with the greatest cost saved per byte added. The
 * order does not depend on the budget, so the choice for a budget is a prefix of the path.
 * Returns the number of steps; *pred0, *bytes0 describe the start. */
static int greedy_path(const edgellm_quantize_target_report *rep, double scale, qt_step *steps, double *pred0,
                       uint64_t *bytes0, int *ch)
{
    double cost = 0;
    uint64_t b = 0;
    for (int i = 0; i < rep->n_tensors; i++) {
        ch[i] = 0;
        cost += scale * rep->tensors[i].cost[0];
        b += rep->tensors[i].bytes[0];
    }
    *pred0 = cost;
    *bytes0 = b;
    int n = 0;
    for (;;) {
        int bi = -1, bo = -1;
        double br = -1;
        for (int i = 0; i < rep->n_tensors; i++) {
            const edgellm_quantize_target_tensor *t = &rep->tensors[i];
            for (int o = ch[i] + 1; o < t->n_options; o++) {
                double saved = scale * (t->cost[ch[i]] - t->cost[o]);
                double added = (double)(t->bytes[o] - t->bytes[ch[i]]);
                double r = saved / (added > 0 ? added : 1);
                if (r > br) { br = r; bi = i; bo = o; }
            }
        }
        if (bi < 0) break;
        const edgellm_quantize_target_tensor *t = &rep->tensors[bi];
        cost -= scale * (t->cost[ch[bi]] - t->cost[bo]);
        b += t->bytes[bo] - t->bytes[ch[bi]];
        ch[bi] = bo;
        steps[n++] = (qt_step){bi, bo, br, cost, b};
    }
    return n;
}

/* The choice after the first n steps into ch[], the ratio of each matrix's last step. */
static void apply_steps(const edgellm_quantize_target_report *rep, const qt_step *steps, int n, int *ch, double *ratio)
{
    for (int i = 0; i < rep->n_tensors; i++) { ch[i] = 0; ratio[i] = 0; }
    for (int k = 0; k < n; k++) {
        ch[steps[k].tensor] = steps[k].option;
        ratio[steps[k].tensor] = steps[k].ratio;
    }
}

/* ---------------------------------------------------------------- rounds ---- */

static void round_path(char *buf, size_t n, const char *out, int k)
{
    snprintf(buf, n, "%s.round-%d.%ld.tmp", out, k, (long)getpid());
}

static char *make_recipe(const edgellm_quantize_target_report *rep, const edgellm_quantize_target_params *p,
                         const int *ch, double predicted)
{
    size_t cap = 512 + (size_t)rep->n_tensors * 96;
    char *s = edgellm_malloc(cap);
    if (!s) return NULL;
    size_t o = (size_t)snprintf(s, cap, "target %s (calibration %s, %d x %d tokens, predicted cost %.6g); scan %s; "
                                        "imatrix %s; types:",
                                p->target, p->calib_name ? p->calib_name : "text", p->calib_chunks, p->n_ctx,
                                predicted, rep->scan_measured ? "measured" : "proxy", rep->imatrix);
    for (int i = 0; i < rep->n_tensors && o < cap; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s%s=%s", i ? "," : " ", rep->tensors[i].name,
                              edgellm_type_name(rep->tensors[i].type[ch[i]]));
    return s;
}

/* Write and measure the file of choice ch as round k. */
static edgellm_status run_round(qt_state *s, const char *in, const char *out, int k, const int *ch,
                                edgellm_quantize_target_round *rd, edgellm_error *err)
{
    edgellm_quantize_target_report *rep = s->rep;
    int *types = edgellm_malloc((size_t)s->n_file_tensors * sizeof *types);
    if (!types) return edgellm_fail_nomem(err, out);
    for (int i = 0; i < s->n_file_tensors; i++) types[i] = -1;
    for (int i = 0; i < rep->n_tensors; i++) types[s->file_index[i]] = rep->tensors[i].type[ch[i]];
    char path[4300];
    round_path(path, sizeof path, out, k);
    char *recipe = make_recipe(rep, s->p, ch, rd->predicted);
    edgellm_quantize_params q = s->p->quant;
    q.progress = NULL;
    q.imatrix = s->im;
    q.pure = 1;
    /* the scheme (general.file_type / edgellm.quant.scheme) of the most common chosen type */
    char scheme[16];
    {
        int best_t = -1;
        uint64_t best_n = 0;
        for (int i = 0; i < rep->n_tensors; i++) {
            int t = rep->tensors[i].type[ch[i]];
            uint64_t n = 0;
            for (int j = 0; j < rep->n_tensors; j++)
                if (rep->tensors[j].type[ch[j]] == t) n += rep->tensors[j].n_elements;
            if (n > best_n) { best_n = n; best_t = t; }
        }
        const char *name = best_t >= 0 ? edgellm_type_name(best_t) : NULL;
        int bits, group;
        char kind[8];
        if (name && sscanf(name, "I%d_G%d_%7s", &bits, &group, kind) == 3) {
            snprintf(scheme, sizeof scheme, "i%d", bits);
            q.group = group;
            q.asym = !strcmp(kind, "ASYM");
            q.type = scheme;
        } else if (name) {
            size_t k = 0;
            for (; name[k] && k + 1 < sizeof scheme; k++) scheme[k] = (char)tolower((unsigned char)name[k]);
            scheme[k] = 0;
            edgellm_quant_scheme sc;
            if (edgellm_quant_scheme_parse(scheme, 0, 0, &sc, NULL) == EDGELLM_OK) {
                q.type = scheme;
                q.group = 0;
                q.asym = 0;
            }
        }
    }
    edgellm_quantize_report qr;
    int slot = edgellm_tmp_register(path, false);
    edgellm_status rc = edgellm_quantize_file_types(in, path, &q, types, s->n_file_tensors, recipe, &qr, err);
    edgellm_free(types);
    edgellm_free(recipe);
    if (rc == EDGELLM_OK) {
        rd->bytes = qr.dst_bytes;
        rd->bpw = qr.dst_bpw;
        rep->n_elements = qr.n_elements;
        edgellm_model *m = NULL;
        edgellm_model_params mp = edgellm_model_default_params();
        mp.n_threads = s->n_threads;
        rc = edgellm_model_load(path, &mp, &m, err);
        if (rc == EDGELLM_OK) rc = compare_calib(s, m, s->p->calib_chunks, &rd->cal, err);
        edgellm_model_free(m);
    }
    edgellm_quantize_report_free(&qr);
    s->round_slot[k] = slot;
    if (rc != EDGELLM_OK) remove(path);
    return rc;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

edgellm_status edgellm_quantize_target(const char *in_path, const char *out_path,
                                       const edgellm_quantize_target_params *pp,
                                       edgellm_quantize_target_report *report, edgellm_error *err)
{
    edgellm_quantize_target_params p = pp ? *pp : edgellm_quantize_target_default_params();
    edgellm_quantize_target_report local;
    edgellm_quantize_target_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    const double t0 = edgellm_time_ms();
    qt_state s = {.p = &p, .rep = rep, .ref_slot = -1};
    for (int k = 0; k < EDGELLM_QT_MAX_ROUNDS; k++) s.round_slot[k] = -1;
    edgellm_imatrix *own_im = NULL;
    int *ch = NULL;
    qt_step *steps = NULL;
    double *ratio = NULL;
    edgellm_status rc;
    int types[EDGELLM_QT_MAX_TYPES], n_types = 0;

    if (!in_path || !out_path || !p.calib || !p.calib_len)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "quantize --target needs IN, OUT and a calibration text");
    if ((rc = parse_target(p.target, rep, err)) != EDGELLM_OK) return rc;
    if ((rc = parse_types(p.types ? p.types : DEFAULT_TYPES, types, &n_types, err)) != EDGELLM_OK) return rc;
    if (p.max_rounds <= 0) p.max_rounds = 6;
    if (p.max_rounds > EDGELLM_QT_MAX_ROUNDS) p.max_rounds = EDGELLM_QT_MAX_ROUNDS;
    if (p.n_ctx <= 0) p.n_ctx = 256;
    if (p.calib_chunks <= 0) p.calib_chunks = 16;
    if (p.scan_chunks <= 0 || p.scan_chunks > p.calib_chunks) p.scan_chunks = p.calib_chunks;
    if (!(p.predict_scale > 0)) p.predict_scale = 1;
    if (!(p.margin > 0 && p.margin <= 1)) p.margin = 1;
    if (!p.quant.type) p.quant.type = "q8_0";
    if (p.quant.n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "threads %d above %d", p.quant.n_threads, EDGELLM_MAX_THREADS);
    if (edgellm_same_file(in_path, out_path))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is the input file", out_path);
    s.n_threads = p.quant.n_threads > 0 ? p.quant.n_threads : edgellm_n_physical_cores();

    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = s.n_threads;
    if ((rc = edgellm_model_load(in_path, &mp, &s.m, err)) != EDGELLM_OK) goto done;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(s.m->gguf); i++) {   /* the scan reads plain rows */
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(s.m->gguf, i);
        if (t->type != EDGELLM_TYPE_Q4_K_R16) continue;
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor '%.*s' is stored in the q4_K_r16 layout; "
                          "--target reads plain rows: rewrite the file with --layout plain first", in_path,
                          (int)EDGELLM_MIN(t->name.len, (uint64_t)96), t->name.ptr);
        goto done;
    }
    if ((rc = edgellm_threadpool_new(s.n_threads, &s.pool, err)) != EDGELLM_OK) goto done;
    s.ev = edgellm_eval_default_params();
    s.ev.n_ctx = p.n_ctx;
    s.ev.max_chunks = p.calib_chunks;
    s.ev.n_threads = s.n_threads;
    s.ev.text_name = p.calib_name;
    {
        edgellm_model_info info = {.size = sizeof info};
        edgellm_model_get_info(s.m, &info);
        s.ev.top_k = info.n_vocab <= 4096 ? info.n_vocab : 256;
    }

    /* importance statistics */
    s.progress_base = 0;
    s.progress_span = 0.05;
    if (p.quant.imatrix) s.im = p.quant.imatrix;
    else if (!p.no_imatrix) {
        edgellm_eval_params ev = s.ev;
        ev.progress = NULL;
        if ((rc = edgellm_imatrix_collect(s.m, p.calib, p.calib_len, &ev, &own_im, err)) != EDGELLM_OK) goto done;
        s.im = own_im;
    }
    if (s.im) edgellm_imatrix_describe(s.im, rep->imatrix, sizeof rep->imatrix);
    else snprintf(rep->imatrix, sizeof rep->imatrix, "none");

    /* the matrices to scan and their options */
    const edgellm_gguf *g = s.m->gguf;
    s.n_file_tensors = (int)edgellm_gguf_n_tensors(g);
    rep->tensors = edgellm_calloc((size_t)s.n_file_tensors + 1, sizeof *rep->tensors);
    s.file_index = edgellm_calloc((size_t)s.n_file_tensors + 1, sizeof *s.file_index);
    if (!rep->tensors || !s.file_index) { rc = edgellm_fail_nomem(err, in_path); goto done; }
    for (int i = 0; i < s.n_file_tensors; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        char name[64];
        if (t->name.len >= sizeof name || t->n_dims != 2) continue;
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        size_t nl = strlen(name);
        const edgellm_type_traits *st = edgellm_type_get_traits(t->type);
        if (nl < 6 || strcmp(name + nl - 6, "weight") || !st || !st->to_float) continue;
        bool kept = false;
        for (int k = 0; k < p.quant.n_keep && !kept; k++) kept = p.quant.keep[k] && !fnmatch(p.quant.keep[k], name, 0);
        if (kept) continue;
        edgellm_quantize_target_tensor *tt = &rep->tensors[rep->n_tensors];
        snprintf(tt->name, sizeof tt->name, "%s", name);
        tt->n_elements = t->n_elements;
        const uint64_t rows = t->n_elements / (uint64_t)t->ne[0];
        for (int k = 0; k < n_types; k++) {
            int ty = types[k];
            while (ty >= 0 && edgellm_type_row_size(ty, t->ne[0]) == 0) ty = edgellm_quant_fallback_type(ty);
            if (ty < 0) ty = EDGELLM_TYPE_F32;
            bool dup = false;
            for (int o = 0; o < tt->n_options; o++) dup = dup || tt->type[o] == ty;
            if (dup) continue;
            tt->type[tt->n_options] = ty;
            tt->bytes[tt->n_options] = edgellm_type_row_size(ty, t->ne[0]) * rows;
            tt->n_options++;
        }
        s.file_index[rep->n_tensors++] = i;
    }
    if (rep->n_tensors == 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: no weight matrix to choose a type for", in_path);
        goto done;
    }

    /* the reference distributions on the calibration windows */
    snprintf(s.ref_path, sizeof s.ref_path, "%s.ref-logits.%ld.tmp", out_path, (long)getpid());
    {
        s.ref_slot = edgellm_tmp_register(s.ref_path, false);
        edgellm_eval_params ev = s.ev;
        ev.progress = NULL;
        rc = edgellm_eval_save_logits(s.m, p.calib, p.calib_len, &ev, s.ref_path, NULL, err);
        s.ref_registered = 1;
        if (rc != EDGELLM_OK) goto done;
    }

    /* scan */
    const double ts = edgellm_time_ms();
    rep->scan_measured = p.scan == 1 || (p.scan == 0 && s.m->n_params <= MEASURED_MAX_PARAMS);
    s.progress_base = 0.05;
    s.progress_span = 0.75;
    rc = rep->scan_measured ? scan_measured(&s, err) : scan_proxy(&s, err);
    if (rc != EDGELLM_OK) goto done;
    rep->scan_ms = edgellm_time_ms() - ts;
    for (int i = 0; i < rep->n_tensors; i++) prune_options(&rep->tensors[i]);

    /* rounds: a search over the number of greedy steps */
    int max_steps = 0;
    for (int i = 0; i < rep->n_tensors; i++) max_steps += rep->tensors[i].n_options - 1;
    steps = edgellm_malloc(((size_t)max_steps + 1) * sizeof *steps);
    int *step_of_round = edgellm_malloc(EDGELLM_QT_MAX_ROUNDS * sizeof *step_of_round);
    ch = edgellm_calloc((size_t)rep->n_tensors, sizeof *ch);
    ratio = edgellm_calloc((size_t)rep->n_tensors, sizeof *ratio);
    if (!steps || !step_of_round || !ch || !ratio) {
        edgellm_free(step_of_round);
        rc = edgellm_fail_nomem(err, out_path);
        goto done;
    }
    double pred0;
    uint64_t bytes0;
    const int N = greedy_path(rep, p.predict_scale, steps, &pred0, &bytes0, ch);
#define PRED(n) ((n) == 0 ? pred0 : steps[(n) - 1].pred)
#define BYTES(n) ((n) == 0 ? bytes0 : steps[(n) - 1].bytes)
    const bool size_target = !strcmp(rep->metric, "size");
    uint64_t fixed = 0;   /* bytes of everything not scanned: tensors and metadata (an estimate:
                             the unscanned tensors as the source has them) */
    {
        uint64_t scanned_src = 0;
        for (int i = 0; i < rep->n_tensors; i++)
            scanned_src += edgellm_gguf_tensor_at(g, s.file_index[i])->size_bytes;
        fixed = file_size(in_path) - scanned_src;
    }
    /* the gap the rounds aim at: the target's, times the margin (top1: the disagreement) */
    const double T = size_target ? rep->target : badness(rep->metric, rep->target) * p.margin;
    double B;   /* the first budget */
    if (size_target) B = rep->target - (double)fixed;
    else if (!rep->scan_measured) B = pred0 * 0.25;   /* proxy units: a guess; the rounds correct it */
    else if (!strcmp(rep->metric, "kld")) B = T;
    else if (!strcmp(rep->metric, "dppl")) B = T / 100.0 * 0.8;
    else B = (T / 50.0) * (T / 50.0);
    int n = 0;
    if (size_target) {
        while (n < N && (double)BYTES(n + 1) <= B) n++;
    } else {
        while (n < N && PRED(n) > B) n++;
    }
    int lo_missed = -1, hi_met = N + 1, best = -1, closest = -1;
    s.progress_base = 0.8;
    s.progress_span = 0.2;
    for (int k = 0; k < p.max_rounds; k++) {
        edgellm_quantize_target_round *rd = &rep->rounds[k];
        apply_steps(rep, steps, n, ch, ratio);
        rd->budget = size_target ? (double)BYTES(n) : PRED(n);
        rd->predicted = PRED(n);
        step_of_round[k] = n;
        char what[64];
        snprintf(what, sizeof what, "round %d", k + 1);
        if (progress(&s, (double)k / p.max_rounds, what)) {
            edgellm_free(step_of_round);
            rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "quantize: cancelled");
            goto done;
        }
        if ((rc = run_round(&s, in_path, out_path, k, ch, rd, err)) != EDGELLM_OK) {
            edgellm_free(step_of_round);
            goto done;
        }
        rep->n_rounds = k + 1;
        char path[4300];
        round_path(path, sizeof path, out_path, k);
        int next;
        if (size_target) {
            rd->value = (double)file_size(path);
            rd->met = rd->value <= rep->target;
            if (closest < 0 || rd->value < rep->rounds[closest].value) closest = k;
            if (rd->met) { best = k; break; }   /* the largest prefix that fits the estimate fits */
            double over = rd->value - rep->target;   /* the estimate of the rest was short */
            next = n;
            while (next > 0 && (double)BYTES(next) > (double)BYTES(n) - over) next--;
            if (next == n) break;
        } else {
            rd->value = metric_value(rep->metric, &rd->cal);
            const double gm = badness(rep->metric, rd->value);
            rd->met = gm <= T;
            if (closest < 0 || gm < badness(rep->metric, rep->rounds[closest].value)) closest = k;
            if (rd->met) {
                if (n < hi_met) { hi_met = n; best = k; }
            } else if (n > lo_missed) lo_missed = n;
            if (hi_met - lo_missed <= 1) break;   /* adjacent: the smallest file that meets it */
            /* predicted cost scaled by target / measured: the step count that predicts it */
            const double want = gm > 0 ? PRED(n) * T / gm : 0;
            next = 0;
            while (next < N && PRED(next) > want) next++;
            if (rd->met && next >= n) next = n - 1;
            if (!rd->met && next <= n) next = n + 1;
            if (next <= lo_missed || next >= hi_met) {
                int top = hi_met <= N ? hi_met : N + 1;
                next = lo_missed + (top - lo_missed) / 2;
                if (next > N) next = N;
            }
            if (next <= lo_missed || next >= hi_met) break;   /* nothing left between */
        }
        n = next;
    }
#undef PRED
#undef BYTES
    rep->kept_round = best >= 0 ? best : closest;
    rep->met = best >= 0;
    if (rep->kept_round < 0) {
        edgellm_free(step_of_round);
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "quantize: no round was measured");
        goto done;
    }
    /* keep one file */
    for (int k = 0; k < rep->n_rounds; k++) {
        char path[4300];
        round_path(path, sizeof path, out_path, k);
        if (k != rep->kept_round) remove(path);
    }
    {
        char path[4300];
        round_path(path, sizeof path, out_path, rep->kept_round);
        apply_steps(rep, steps, step_of_round[rep->kept_round], ch, ratio);
        edgellm_free(step_of_round);
        if (rename(path, out_path) != 0) {
            remove(path);
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename %s onto it", out_path, path);
            goto done;
        }
        rep->recipe = make_recipe(rep, &p, ch, rep->rounds[rep->kept_round].predicted);
        for (int i = 0; i < rep->n_tensors; i++) {
            edgellm_quantize_target_tensor *tt = &rep->tensors[i];
            tt->chosen = ch[i];
            if (tt->chosen == 0)
                snprintf(tt->why, sizeof tt->why, tt->n_options > 1 ? "smallest: fits the budget" : "only option");
            else
                snprintf(tt->why, sizeof tt->why, "from %s: %.3g cost saved per KiB added",
                         edgellm_type_name(tt->type[tt->chosen - 1]), ratio[i] * 1024);
        }
    }
    rep->file_bytes = file_size(out_path);
    rep->bpw = rep->n_elements ? 8.0 * (double)rep->rounds[rep->kept_round].bytes / (double)rep->n_elements : 0;

    /* held-out */
    if (p.heldout && p.heldout_len) {
        edgellm_model *m = NULL;
        edgellm_model_params mp2 = edgellm_model_default_params();
        mp2.n_threads = s.n_threads;
        if ((rc = edgellm_model_load(out_path, &mp2, &m, err)) != EDGELLM_OK) goto done;
        edgellm_eval_params ev = s.ev;
        ev.max_chunks = p.heldout_chunks;
        ev.text_name = p.heldout_name;
        ev.progress = NULL;
        rc = edgellm_eval_compare(m, s.m, NULL, p.heldout, p.heldout_len, &ev, &rep->heldout, err);
        edgellm_model_free(m);
        if (rc != EDGELLM_OK) goto done;
        rep->has_heldout = 1;
    }
    progress(&s, 1.0, "");

done:
    if (s.ref_registered) remove(s.ref_path);
    if (s.ref_slot >= 0) edgellm_tmp_unregister(s.ref_slot);
    for (int k = 0; k < EDGELLM_QT_MAX_ROUNDS; k++) {
        char path[4300];
        round_path(path, sizeof path, out_path, k);
        if (s.round_slot[k] >= 0 || rc != EDGELLM_OK) remove(path);   /* the kept one was renamed */
        if (s.round_slot[k] >= 0) edgellm_tmp_unregister(s.round_slot[k]);
    }
    rep->elapsed_ms = edgellm_time_ms() - t0;
    edgellm_free(ch);
    edgellm_free(steps);
    edgellm_free(ratio);
    edgellm_free(s.file_index);
    edgellm_imatrix_free(own_im);
    edgellm_threadpool_free(s.pool);
    edgellm_model_free(s.m);
    if (!report) edgellm_quantize_target_report_free(&local);
    return rc;
}
