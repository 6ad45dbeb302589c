/*
 * eval_logits.c — the saved-logits file of `edgellm eval save-logits` / `compare
 * --ref-logits`: a reference model's next-token distributions over the scored positions
 * of a text, kept compactly so the full-precision model need not be on the device when
 * the quantized one is compared with it (llama.cpp tools/perplexity/README.md: llama-perplexity's
 * --kl-divergence-base keeps the whole vocabulary as uint16 per entry, "11 GiB for LLaMA 2"
 * on Wikitext-2; we keep the top k as float32, 12 + 8k bytes per position).
 *
 * Layout (all integers little-endian, floats IEEE binary32/64 little-endian):
 *
 *   offset size type      field
 *   0      8    char[8]   magic "EDGLOGIT"
 *   8      4    u32       format version = 1
 *   12     4    u32       header bytes = 512 (records start here)
 *   16     4    u32       n_vocab
 *   20     4    u32       top_k: entries per record, 1 .. n_vocab (n_vocab = exact KLD)
 *   24     4    u32       n_ctx
 *   28     4    u32       stride (0: second half of disjoint chunks)
 *   32     4    u32       n_windows (chunks)
 *   36     4    u32       n_pred: records per window = n_ctx - 1 - first (eval.c)
 *   40     8    u64       n_text_tokens: tokens of the whole text, BOS included
 *   48     8    u64       text_bytes
 *   56     8    u64       text_hash: FNV-1a 64 of the text bytes
 *   64     8    u64       tokenizer_hash: FNV-1a 64 of n_vocab, BOS, EOS (3 x i32) and
 *                         every token's text with its NUL (edgellm_eval_tokenizer_hash)
 *   72     8    u64       model_file_bytes: size of the reference GGUF file
 *   80     20   5 x i32   model shape: n_layer, n_embd, n_head, n_head_kv, n_ff
 *   100    4    i32       BOS substituted at window starts, -1: none
 *   104    8    u64       model_n_params
 *   112    8    f64       reference mean nll (nats), informational
 *   120    136  -         zero
 *   256    256  char[256] reference model file name (no folder), NUL-terminated
 *   512    ...            n_windows x n_pred records, in text order:
 *
 *   record (12 + 8 top_k bytes):
 *     0        4        u32  target: the actual next token
 *     4        4        f32  ln p_ref(target)
 *     8        4        f32  ln P_ref(outside the top_k entries); -inf when top_k = n_vocab
 *     12       4 top_k  u32  ids, by reference logit descending (lowest id first on ties),
 *                            so ids[0] is the reference's argmax
 *     12+4k    4 top_k  f32  ln p_ref(ids[i])
 *
 * Example, stories260K at n_ctx 256, top_k 64: 524 bytes per position, 127 positions per
 * chunk; 20 chunks = 512 + 2540 x 524 = 1,331,472 bytes. The whole vocabulary (top_k 512):
 * 4,108 bytes per position, 10,434,832 bytes. The first 48 bytes of that top-64 file:
 *   45 44 47 4c 4f 47 49 54  "EDGLOGIT"
 *   01 00 00 00  00 02 00 00  version 1, header 512
 *   00 02 00 00  40 00 00 00  n_vocab 512, top_k 64
 *   00 01 00 00  00 00 00 00  n_ctx 256, stride 0
 *   14 00 00 00  7f 00 00 00  20 chunks, 127 records per chunk
 *   3b ff 05 00 00 00 00 00   393,019 text tokens
 *
 * Checks when reading (a mismatch is refused, the message names the field and both
 * values): the model under test must have the same tokenizer (n_vocab, hash) and shape
 * (a quantized file of the same model has); the text must hash and tokenize the same;
 * n_ctx / stride / chunks come from the file. The file size must be exactly header +
 * records; every id must be < n_vocab and every log-probability a number.
 *
 * KLD from top-k records is a lower bound of the exact KLD (eval_compare.c says by how
 * much); top_k >= n_vocab stores everything and gives the live comparison's numbers.
 */
#include "eval.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOGITS_MAGIC "EDGLOGIT"
#define LOGITS_VERSION 1u
#define LOGITS_HEADER 512

typedef struct {
    uint32_t n_vocab, top_k, n_ctx, stride, n_windows, n_pred;
    uint64_t n_text_tokens, text_bytes, text_hash, tokenizer_hash, model_file_bytes;
    int32_t  shape[5];        /* n_layer, n_embd, n_head, n_head_kv, n_ff */
    int32_t  bos;
    uint64_t model_n_params;
    double   nll_mean;
    char     model_name[256];
} logits_header;

struct edgellm_eval_logits_file {
    FILE    *f;
    char    *path;
    logits_header h;
    size_t   rec_bytes;
    uint8_t *buf;             /* [n_pred][rec_bytes] raw records of one window        */
    int32_t *ids;             /* [n_pred][top_k]                                      */
    float   *lp;              /* [n_pred][top_k]                                      */
    int      window;          /* next window to read                                  */
};

/* ------------------------------------------------------------- byte helpers ---- */

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_f32(uint8_t *p, float f) { uint32_t u; memcpy(&u, &f, 4); put_u32(p, u); }
static void put_f64(uint8_t *p, double d) { uint64_t u; memcpy(&u, &d, 8); put_u64(p, u); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static float get_f32(const uint8_t *p) { uint32_t u = get_u32(p); float f; memcpy(&f, &u, 4); return f; }
static double get_f64(const uint8_t *p) { uint64_t u = get_u64(p); double d; memcpy(&d, &u, 8); return d; }

static void header_encode(const logits_header *h, uint8_t out[LOGITS_HEADER])
{
    memset(out, 0, LOGITS_HEADER);
    memcpy(out, LOGITS_MAGIC, 8);
    put_u32(out + 8, LOGITS_VERSION);
    put_u32(out + 12, LOGITS_HEADER);
    put_u32(out + 16, h->n_vocab);
    put_u32(out + 20, h->top_k);
    put_u32(out + 24, h->n_ctx);
    put_u32(out + 28, h->stride);
    put_u32(out + 32, h->n_windows);
    put_u32(out + 36, h->n_pred);
    put_u64(out + 40, h->n_text_tokens);
    put_u64(out + 48, h->text_bytes);
    put_u64(out + 56, h->text_hash);
    put_u64(out + 64, h->tokenizer_hash);
    put_u64(out + 72, h->model_file_bytes);
    for (int i = 0; i < 5; i++) put_u32(out + 80 + 4 * i, (uint32_t)h->shape[i]);
    put_u32(out + 100, (uint32_t)h->bos);
    put_u64(out + 104, h->model_n_params);
    put_f64(out + 112, h->nll_mean);
    snprintf((char *)out + 256, 256, "%s", h->model_name);
}

static void header_decode(const uint8_t in[LOGITS_HEADER], logits_header *h)
{
    memset(h, 0, sizeof *h);
    h->n_vocab = get_u32(in + 16);
    h->top_k = get_u32(in + 20);
    h->n_ctx = get_u32(in + 24);
    h->stride = get_u32(in + 28);
    h->n_windows = get_u32(in + 32);
    h->n_pred = get_u32(in + 36);
    h->n_text_tokens = get_u64(in + 40);
    h->text_bytes = get_u64(in + 48);
    h->text_hash = get_u64(in + 56);
    h->tokenizer_hash = get_u64(in + 64);
    h->model_file_bytes = get_u64(in + 72);
    for (int i = 0; i < 5; i++) h->shape[i] = (int32_t)get_u32(in + 80 + 4 * i);
    h->bos = (int32_t)get_u32(in + 100);
    h->model_n_params = get_u64(in + 104);
    h->nll_mean = get_f64(in + 112);
    memcpy(h->model_name, in + 256, 255);
    h->model_name[255] = 0;
}

static void model_shape(const edgellm_model *m, int32_t shape[5], uint64_t *n_params)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    shape[0] = info.n_layer;
    shape[1] = info.n_embd;
    shape[2] = info.n_head;
    shape[3] = info.n_head_kv;
    shape[4] = info.n_ff;
    if (n_params) *n_params = info.n_params;
}

/* ------------------------------------------------------------------- top-k ---- */

/* e is worse than f: lower logit, or the same logit and a higher id. */
static inline bool worse(const float *x, int32_t e, int32_t f) { return x[e] < x[f] || (x[e] == x[f] && e > f); }

static void sift_down(const float *x, int32_t *heap, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(x, heap[l], heap[m])) m = l;
        if (r < n && worse(x, heap[r], heap[m])) m = r;
        if (m == i) return;
        int32_t t = heap[i]; heap[i] = heap[m]; heap[m] = t;
        i = m;
    }
}

/* The k best ids of x[n] (k <= n), best first, into ids[k]: a min-heap of the k best seen
 * (root = the worst of them), then heap-sorted. O(n log k). */
static void top_k_ids(const float *x, int n, int k, int32_t *ids)
{
    for (int i = 0; i < k; i++) ids[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(x, ids, k, i);
    for (int v = k; v < n; v++)
        if (worse(x, ids[0], v)) { ids[0] = v; sift_down(x, ids, k, 0); }
    for (int end = k - 1; end > 0; end--) {   /* worst to the back: best first */
        int32_t t = ids[0]; ids[0] = ids[end]; ids[end] = t;
        sift_down(x, ids, end, 0);
    }
}

/* One record from raw logits [n_vocab]. scratch: [n_vocab] bytes, zero on entry and exit. */
static void encode_record(const float *logits, int n_vocab, int k, int32_t target, uint8_t *rec, int32_t *ids,
                          uint8_t *mask)
{
    double lse = edgellm_eval_logsumexp(logits, n_vocab);
    top_k_ids(logits, n_vocab, k, ids);
    float rest = -INFINITY;
    if (k < n_vocab) {
        for (int i = 0; i < k; i++) mask[ids[i]] = 1;
        double s = 0.0;   /* sum of exp(l - lse) outside the top k */
        for (int v = 0; v < n_vocab; v++)
            if (!mask[v]) s += exp((double)logits[v] - lse);
        for (int i = 0; i < k; i++) mask[ids[i]] = 0;
        rest = s > 0 ? (float)log(s) : -INFINITY;
    }
    put_u32(rec, (uint32_t)target);
    put_f32(rec + 4, (float)((double)logits[target] - lse));
    put_f32(rec + 8, rest);
    for (int i = 0; i < k; i++) {
        put_u32(rec + 12 + 4 * (size_t)i, (uint32_t)ids[i]);
        put_f32(rec + 12 + 4 * (size_t)k + 4 * (size_t)i, (float)((double)logits[ids[i]] - lse));
    }
}

/* ------------------------------------------------------------------- writer ---- */

edgellm_status edgellm_eval_save_logits(const edgellm_model *ref, const char *text, size_t len,
                                        const edgellm_eval_params *params, const char *out_path,
                                        edgellm_eval_ppl_result *ppl, edgellm_error *err)
{
    if (!ref || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_eval_save_logits: NULL model or path");
    edgellm_eval_params dp = edgellm_eval_default_params();
    const edgellm_eval_params *p = params ? params : &dp;
    if (p->top_k < 1) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval: top_k %d must be >= 1", p->top_k);
    edgellm_eval_plan pl;
    edgellm_eval_runner r;
    memset(&r, 0, sizeof r);
    edgellm_out_file of = {.f = NULL, .slot = -1, .tmp = ""};   /* written whole or not at all */
    FILE *f = NULL;
    uint8_t *rec = NULL, *mask = NULL;
    int32_t *ids = NULL;
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(ref, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    edgellm_status rc = edgellm_eval_plan_make(tok, text, len, p, &pl, err);
    if (rc != EDGELLM_OK) return rc;
    if ((rc = edgellm_eval_runner_init(&r, ref, &pl, p->n_threads, p->kv_type, err)) != EDGELLM_OK) goto done;
    const int nv = r.n_vocab, k = EDGELLM_MIN(p->top_k, nv);
    const size_t rec_bytes = 12 + 8 * (size_t)k;

    logits_header h;
    memset(&h, 0, sizeof h);
    h.n_vocab = (uint32_t)nv;
    h.top_k = (uint32_t)k;
    h.n_ctx = (uint32_t)pl.n_ctx;
    h.stride = (uint32_t)pl.stride;
    h.n_windows = (uint32_t)pl.n_windows;
    h.n_pred = (uint32_t)pl.n_pred;
    h.n_text_tokens = (uint64_t)pl.n_tokens;
    h.text_bytes = pl.text_bytes;
    h.text_hash = pl.text_hash;
    h.tokenizer_hash = edgellm_eval_tokenizer_hash(tok);
    struct stat st;
    h.model_file_bytes = stat(edgellm_eval_model_path(ref), &st) == 0 ? (uint64_t)st.st_size : 0;
    model_shape(ref, h.shape, &h.model_n_params);
    h.bos = pl.bos;
    snprintf(h.model_name, sizeof h.model_name, "%s", edgellm_eval_basename(edgellm_eval_model_path(ref)));

    rec = edgellm_malloc(rec_bytes > LOGITS_HEADER ? rec_bytes : LOGITS_HEADER);
    ids = edgellm_malloc((size_t)k * sizeof *ids);
    mask = edgellm_calloc((size_t)nv, 1);
    if (!rec || !ids || !mask) { rc = edgellm_fail_nomem(err, out_path); goto done; }
    if ((rc = edgellm_out_open(&of, out_path, "wb", err)) != EDGELLM_OK) goto done;
    f = of.f;
    if (of.in_place && lseek(fileno(f), 0, SEEK_CUR) < 0) {   /* a pipe: the header could not be completed */
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: cannot write saved logits to a pipe (the header is completed "
                          "at the end): give a file", out_path);
        goto done;
    }
    header_encode(&h, rec);   /* nll_mean patched at the end */
    if (fwrite(rec, 1, LOGITS_HEADER, f) != LOGITS_HEADER) goto write_error;

    double s = 0, s2 = 0;
    int64_t n = 0;
    for (int w = 0; w < pl.n_windows; w++) {
        if ((rc = edgellm_eval_runner_window(&r, &pl, w, err)) != EDGELLM_OK) goto done;
        for (int i = 0; i < pl.n_pred; i++) {
            const float *row = r.logits + (size_t)i * (size_t)nv;   /* [n_vocab] */
            int32_t target = edgellm_eval_target(&r, &pl, i);
            encode_record(row, nv, k, target, rec, ids, mask);
            double nll = -(double)get_f32(rec + 4);
            s += nll;
            s2 += nll * nll;
            n++;
            if (fwrite(rec, 1, rec_bytes, f) != rec_bytes) goto write_error;
        }
        char what[64];
        snprintf(what, sizeof what, "chunk %d/%d", w + 1, pl.n_windows);
        if ((rc = edgellm_eval_report_progress(p, (double)(w + 1) / pl.n_windows, what, err)) != EDGELLM_OK) goto done;
    }
    edgellm_eval_ppl_result res;
    memset(&res, 0, sizeof res);
    edgellm_eval_fill_ppl(&res, &pl, pl.n_windows, s, s2, n, &r);
    h.nll_mean = res.nll_mean;
    header_encode(&h, rec);
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(rec, 1, LOGITS_HEADER, f) != LOGITS_HEADER) goto write_error;
    if ((rc = edgellm_out_commit(&of, err)) != EDGELLM_OK) goto done;
    if (ppl) *ppl = res;
    goto done;
write_error:
    rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", out_path, strerror(errno));
done:
    if (rc != EDGELLM_OK) edgellm_out_discard(&of);   /* only a temporary this call made */
    edgellm_free(rec);
    edgellm_free(ids);
    edgellm_free(mask);
    edgellm_eval_runner_free(&r);
    edgellm_eval_plan_free(&pl);
    return rc;
}

/* ------------------------------------------------------------------- reader ---- */

void edgellm_eval_logits_close(edgellm_eval_logits_file *f)
{
    if (!f) return;
    if (f->f) fclose(f->f);
    edgellm_free(f->path);
    edgellm_free(f->buf);
    edgellm_free(f->ids);
    edgellm_free(f->lp);
    edgellm_free(f);
}

static edgellm_status check_header(const edgellm_eval_logits_file *lf, uint64_t file_size, edgellm_error *err)
{
    const logits_header *h = &lf->h;
    const char *path = lf->path;
    if (h->n_vocab == 0 || h->n_vocab > (1u << 24))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: n_vocab %u is out of range", path, h->n_vocab);
    if (h->top_k == 0 || h->top_k > h->n_vocab)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: top_k %u is outside [1, n_vocab = %u]", path, h->top_k,
                            h->n_vocab);
    if (h->n_ctx < 8 || h->n_ctx > (1u << 20) || h->stride > h->n_ctx / 2)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: n_ctx %u / stride %u are out of range", path, h->n_ctx,
                            h->stride);
    uint32_t first = h->stride ? h->n_ctx - 1 - h->stride : h->n_ctx / 2;
    if (h->n_pred != h->n_ctx - 1 - first)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %u records per chunk, n_ctx %u and stride %u give %u", path,
                            h->n_pred, h->n_ctx, h->stride, h->n_ctx - 1 - first);
    if (h->n_windows == 0) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: no chunks", path);
    uint64_t n_rec, bytes, total;
    if (!edgellm_mul_u64(h->n_windows, h->n_pred, &n_rec) || !edgellm_mul_u64(n_rec, lf->rec_bytes, &bytes) ||
        !edgellm_add_u64(bytes, LOGITS_HEADER, &total) || total != file_size)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                            "%s: %llu bytes, but the header promises %u chunks x %u records of %zu bytes + %d "
                            "(truncated or damaged)",
                            path, (unsigned long long)file_size, h->n_windows, h->n_pred, lf->rec_bytes,
                            LOGITS_HEADER);
    return EDGELLM_OK;
}

edgellm_status edgellm_eval_logits_open(const char *path, const edgellm_model *m, edgellm_eval_logits_file **out,
                                        edgellm_error *err)
{
    *out = NULL;
    edgellm_status rc = EDGELLM_OK;
    edgellm_eval_logits_file *lf = edgellm_calloc(1, sizeof *lf);
    if (!lf || !(lf->path = edgellm_strdup(path))) { edgellm_free(lf); return edgellm_fail_nomem(err, path); }
    uint8_t hb[LOGITS_HEADER];
    struct stat st;
    if (!(lf->f = fopen(path, "rb")) || fstat(fileno(lf->f), &st) != 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (fread(hb, 1, LOGITS_HEADER, lf->f) != LOGITS_HEADER || memcmp(hb, LOGITS_MAGIC, 8) != 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not an edgellm saved-logits file (it does not begin with "
                          "the magic \"%s\")", path, LOGITS_MAGIC);
        goto fail;
    }
    if (get_u32(hb + 8) != LOGITS_VERSION) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: format version %u; this build reads version %u", path,
                          get_u32(hb + 8), LOGITS_VERSION);
        goto fail;
    }
    if (get_u32(hb + 12) != LOGITS_HEADER) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the header says it is %u bytes; version %u headers are %u "
                          "(a damaged file)", path, get_u32(hb + 12), LOGITS_VERSION, LOGITS_HEADER);
        goto fail;
    }
    header_decode(hb, &lf->h);
    lf->rec_bytes = 12 + 8 * (size_t)lf->h.top_k;
    if ((rc = check_header(lf, (uint64_t)st.st_size, err)) != EDGELLM_OK) goto fail;

    /* the model under test against the file */
    const logits_header *h = &lf->h;
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    const char *mp = edgellm_eval_model_path(m);
    if (!tok) {
        rc = EDGELLM_ERR_UNSUPPORTED;
        goto fail;
    }
    int nv = edgellm_tokenizer_n_vocab(tok);
    if ((uint32_t)nv != h->n_vocab || edgellm_eval_tokenizer_hash(tok) != h->tokenizer_hash) {
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                          "%s: saved with another tokenizer than %s's (n_vocab %u vs %d, token hash %016llx vs %016llx)",
                          path, mp, h->n_vocab, nv, (unsigned long long)h->tokenizer_hash,
                          (unsigned long long)edgellm_eval_tokenizer_hash(tok));
        goto fail;
    }
    static const char *const shape_names[5] = {"n_layer", "n_embd", "n_head", "n_head_kv", "n_ff"};
    int32_t shape[5];
    model_shape(m, shape, NULL);
    for (int i = 0; i < 5; i++)
        if (shape[i] != h->shape[i]) {
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: saved from %s, a model of another shape than %s (%s %d vs %d)",
                              path, h->model_name, mp, shape_names[i], (int)h->shape[i], (int)shape[i]);
            goto fail;
        }
    size_t n = (size_t)h->n_pred * h->top_k;
    lf->buf = edgellm_malloc((size_t)h->n_pred * lf->rec_bytes);
    lf->ids = edgellm_malloc(n * sizeof *lf->ids);
    lf->lp = edgellm_malloc(n * sizeof *lf->lp);
    if (!lf->buf || !lf->ids || !lf->lp) { rc = edgellm_fail_nomem(err, path); goto fail; }
    *out = lf;
    return EDGELLM_OK;
fail:
    edgellm_eval_logits_close(lf);
    return rc;
}

void edgellm_eval_logits_layout(const edgellm_eval_logits_file *f, int *n_ctx, int *stride, int *n_windows, int *top_k)
{
    *n_ctx = (int)f->h.n_ctx;
    *stride = (int)f->h.stride;
    *n_windows = (int)f->h.n_windows;
    *top_k = (int)f->h.top_k;
}

const char *edgellm_eval_logits_model_name(const edgellm_eval_logits_file *f)
{
    return f->h.model_name;
}

edgellm_status edgellm_eval_logits_check_plan(const edgellm_eval_logits_file *f, const edgellm_eval_plan *pl,
                                              edgellm_error *err)
{
    const logits_header *h = &f->h;
    if (h->text_bytes != pl->text_bytes || h->text_hash != pl->text_hash)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "%s: saved for another text (%llu bytes, hash %016llx; this text: %llu bytes, hash %016llx)",
                            f->path, (unsigned long long)h->text_bytes, (unsigned long long)h->text_hash,
                            (unsigned long long)pl->text_bytes, (unsigned long long)pl->text_hash);
    if (h->n_text_tokens != (uint64_t)pl->n_tokens || h->bos != pl->bos)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "%s: the text gave %llu tokens (BOS %d) when saved, %lld (BOS %d) now: the tokenizers differ",
                            f->path, (unsigned long long)h->n_text_tokens, (int)h->bos, (long long)pl->n_tokens,
                            (int)pl->bos);
    if ((uint32_t)pl->n_ctx != h->n_ctx || (uint32_t)pl->stride != h->stride || (uint32_t)pl->n_windows > h->n_windows)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: saved at n_ctx %u stride %u with %u chunks; asked: %d, %d, %d",
                            f->path, h->n_ctx, h->stride, h->n_windows, pl->n_ctx, pl->stride, pl->n_windows);
    return EDGELLM_OK;
}

edgellm_status edgellm_eval_logits_next(edgellm_eval_logits_file *f, edgellm_eval_ref_record *rec, edgellm_error *err)
{
    const logits_header *h = &f->h;
    if ((uint32_t)f->window >= h->n_windows)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: read past the last chunk", f->path);
    size_t want = (size_t)h->n_pred * f->rec_bytes;
    if (fread(f->buf, 1, want, f->f) != want)
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: short read in chunk %d", f->path, f->window);
    const int k = (int)h->top_k;
    for (uint32_t i = 0; i < h->n_pred; i++) {
        const uint8_t *b = f->buf + i * f->rec_bytes;
        int32_t *ids = f->ids + (size_t)i * k;
        float *lp = f->lp + (size_t)i * k;
        uint32_t target = get_u32(b);
        float tlp = get_f32(b + 4), rest = get_f32(b + 8);
        /* log-probabilities are <= 0 (0.001: float rounding of log 1); the top k and the rest
         * are a distribution: their probabilities sum to 1 (saved in double, so to ~1e-6; a
         * damaged byte that keeps every value below 0 still breaks the sum) */
        bool bad = target >= h->n_vocab || isnan(tlp) || isnan(rest) || tlp > 0.001f || rest > 0.001f;
        double mass = (uint32_t)k < h->n_vocab ? exp((double)rest) : 0.0;
        for (int j = 0; j < k && !bad; j++) {
            uint32_t id = get_u32(b + 12 + 4 * (size_t)j);
            lp[j] = get_f32(b + 12 + 4 * (size_t)k + 4 * (size_t)j);
            ids[j] = (int32_t)id;
            bad = id >= h->n_vocab || isnan(lp[j]) || lp[j] > 0.001f;
            mass += exp((double)lp[j]);
        }
        if (!bad && !(fabs(mass - 1.0) <= 1e-3))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: chunk %d record %u: its probabilities sum to %g, not 1 "
                                "(the file is damaged)", f->path, f->window, i, mass);
        if (bad)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: chunk %d record %u holds an id >= n_vocab %u or a bad "
                                "log-probability", f->path, f->window, i, h->n_vocab);
        rec[i].target = (int32_t)target;
        rec[i].target_lp = tlp;
        rec[i].top = ids[0];
        rec[i].rest_lp = (uint32_t)k < h->n_vocab ? rest : -INFINITY;
        rec[i].n = k;
        rec[i].ids = ids;
        rec[i].lp = lp;
    }
    f->window++;
    return EDGELLM_OK;
}
