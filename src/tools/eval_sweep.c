/*
 * eval_sweep.c — edgellm_eval_sweep: the deployment guide's precision table, measured for
 * one model. For each type in the list:
 *
 *   REF.gguf --edgellm_quantize_file--> TMP/REF-<TYPE>.gguf
 *            --edgellm_eval_compare (live reference: exact KLD)--> ΔPPL %, KLD, top-1 %
 *            --edgellm_bench (tg<bench_tokens>, no pp test)--> decode tok/s
 *   and the file is removed (unless keep_files).
 *
 * The reference gets a row of its own (its type label, size, PPL, speed; KLD 0 and top-1
 * 100 % by definition, not measured). Each row says which tensor types were actually
 * written, with counts: small models have rows too short for K-quants (256 elements) or
 * big groups, and the quantizer falls back (edgellm.h, "Quantization"), so "q4_k_m" on a
 * 64-wide model is mostly Q5_0. Type names ("Q4_K_M", "I4_G64_ASYM") are the quantizer's
 * scheme names, the same that `edgellm plan` uses, so its results file (written by the
 * CLI: MODEL.eval.json, cli/plan_json.c) matches plan's rows.
 *
 * Type list syntax: comma-separated; "q8_0", "q4_0", "q4_k_m", ... as edgellm quantize;
 * "i4" / "i8" with options after ':' or '_': "g64" / "g128" / "g256" and "sym" / "asym"
 * ("i4:g64", "i4:g128:asym", "i4_g256_asym"); default g128 sym.
 * Speed: tg<bench_tokens> from an empty cache, mean of bench_reps runs (llama-bench
 * conventions, bench.c), with the thread count of the evaluation.
 */
#include "eval.h"
#include "bench.h"
#include "quantize.h"
#include "../format/gguf.h"
#include "../model/model.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

edgellm_eval_sweep_params edgellm_eval_sweep_default_params(void)
{
    edgellm_eval_sweep_params p;
    memset(&p, 0, sizeof p);
    p.eval = edgellm_eval_default_params();
    p.types = "q8_0,q4_0,q4_k_m,i4:g64,i4:g128,i4:g256,i4:g64:asym,i4:g128:asym,i4:g256:asym";
    p.bench_tokens = 64;
    p.bench_reps = 3;
    return p;
}

typedef struct {
    char spec[32];
    char base[8];      /* quantize type: "q4_k_m", "i4" */
    int  group, asym;
    edgellm_quant_scheme scheme;
} sweep_type;

/* Parse one entry of the type list. */
static edgellm_status parse_type(const char *s, size_t n, sweep_type *t, edgellm_error *err)
{
    memset(t, 0, sizeof *t);
    while (n && isspace((unsigned char)*s)) { s++; n--; }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n == 0 || n >= sizeof t->spec)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval sweep: empty or overlong type in the list");
    char low[32];
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)s[i]);
    low[n] = 0;
    memcpy(t->spec, s, n);
    t->spec[n] = 0;
    if ((low[0] == 'i') && (low[1] == '4' || low[1] == '8') && (low[2] == 0 || low[2] == ':' || low[2] == '_')) {
        memcpy(t->base, low, 2);
        t->base[2] = 0;
        for (char *tok = low + 2; *tok;) {
            tok++;   /* past ':' or '_' */
            size_t len = strcspn(tok, ":_");
            char word[16];
            if (len == 0 || len >= sizeof word)
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval sweep: '%s': empty option", t->spec);
            memcpy(word, tok, len);
            word[len] = 0;
            if (!strcmp(word, "asym")) t->asym = 1;
            else if (!strcmp(word, "sym")) t->asym = 0;
            else if (word[0] == 'g' && (t->group = atoi(word + 1)) > 0) { /* group */ }
            else
                return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                                    "eval sweep: '%s': unknown option '%s' (g64, g128, g256, sym, asym)", t->spec, word);
            tok += len;
        }
    } else {
        if (strlen(low) >= sizeof t->base)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval sweep: unknown type '%s'", t->spec);
        memcpy(t->base, low, strlen(low) + 1);   /* fits: checked above */
    }
    edgellm_status rc = edgellm_quant_scheme_parse(t->base, t->group, t->asym, &t->scheme, err);
    if (rc != EDGELLM_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return edgellm_fail(err, rc, "eval sweep: '%s': %s", t->spec, msg);
    }
    return EDGELLM_OK;
}

/* "Q5_0 x20, Q8_0 x1, F16 x5": matrix types by count (most first), from types[n]. */
static void describe_types(const int *types, int n, char *buf, size_t size)
{
    int seen[64], count[64], k = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < k && seen[j] != types[i]) j++;
        if (j == k) {
            if (k == 64) continue;
            seen[k] = types[i];
            count[k++] = 0;
        }
        count[j]++;
    }
    buf[0] = 0;
    size_t len = 0;
    for (int done = 0; done < k; done++) {
        int best = -1;
        for (int j = 0; j < k; j++)
            if (count[j] > 0 && (best < 0 || count[j] > count[best])) best = j;
        int w = snprintf(buf + len, size - len, "%s%s x%d", len ? ", " : "", edgellm_type_name(seen[best]), count[best]);
        if (w < 0 || (size_t)w >= size - len) break;
        len += (size_t)w;
        count[best] = -count[best];
    }
}

/* Bridge: a compare's progress (0..1) is a slice of the sweep's. */
typedef struct {
    const edgellm_eval_params *user;
    double base, span;
    char label[48];
} sweep_progress;

static int sweep_progress_fn(void *u, double f, const char *what)
{
    sweep_progress *sp = u;
    if (!sp->user->progress) return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s: %s", sp->label, what ? what : "");
    return sp->user->progress(sp->user->progress_user, sp->base + sp->span * f, buf);
}

static double bench_tps(const char *path, const edgellm_eval_sweep_params *p, edgellm_error *err, edgellm_status *rc)
{
    *rc = EDGELLM_OK;
    if (p->bench_tokens <= 0) return 0.0;
    edgellm_bench_params bp = edgellm_bench_default_params();
    bp.n_prompt = 0;
    bp.n_gen = p->bench_tokens;
    bp.n_reps = p->bench_reps > 0 ? p->bench_reps : 3;
    bp.cold_load = 0;
    bp.bw_gbps = 1.0;   /* no bandwidth measurement: the roofline is not reported here */
    if (p->eval.n_threads > 0) {
        bp.threads[0] = p->eval.n_threads;
        bp.n_threads_list = 1;
    }
    edgellm_bench_report *r = edgellm_malloc(sizeof *r);
    if (!r) { *rc = edgellm_fail_nomem(err, "eval sweep: bench"); return 0.0; }
    double tps = 0.0;
    if ((*rc = edgellm_bench(path, &bp, r, err)) == EDGELLM_OK && r->n_results > 0) tps = r->results[0].avg_ts;
    edgellm_free(r);
    return tps;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The reference's own row. */
static void describe_ref(const edgellm_model *ref, const char *path, edgellm_eval_sweep_row *row)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(ref, &info);
    edgellm_bench_ftype_label(ref, row->type, sizeof row->type);
    snprintf(row->spec, sizeof row->spec, "reference");
    int64_t nt = edgellm_gguf_n_tensors(ref->gguf);
    int *types = edgellm_malloc((size_t)(nt > 0 ? nt : 1) * sizeof *types);
    int n = 0;
    for (int64_t i = 0; types && i < nt; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(ref->gguf, i);
        if (t->n_dims >= 2) types[n++] = t->type;
    }
    if (types) describe_types(types, n, row->used, sizeof row->used);
    edgellm_free(types);
    row->file_bytes = file_size(path);
    row->weight_bytes = info.weight_bytes;
    row->bpw = info.n_params ? 8.0 * (double)info.weight_bytes / (double)info.n_params : 0.0;
    snprintf(row->path, sizeof row->path, "%s", path);
}

edgellm_status edgellm_eval_sweep(const char *ref_path, const char *text, size_t len,
                                  const edgellm_eval_sweep_params *params, edgellm_eval_sweep_report *out,
                                  edgellm_error *err)
{
    if (!ref_path || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_eval_sweep: NULL path or report");
    memset(out, 0, sizeof *out);
    edgellm_eval_sweep_params p = params ? *params : edgellm_eval_sweep_default_params();
    if (!p.types || !*p.types) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval sweep: no types");
    double t0 = edgellm_time_ms();
    /* the scratch folder and the model being scored in it, for edgellm_remove_temp_files
     * (a signal's handler) unless --keep keeps them */
    int dir_slot = -1, row_slot = -1;

    /* the list, checked in full before any work */
    sweep_type types[EDGELLM_EVAL_SWEEP_MAX];
    int n_types = 0;
    edgellm_status rc = EDGELLM_OK;
    for (const char *s = p.types; *s;) {
        size_t n = strcspn(s, ",");
        if (n_types == EDGELLM_EVAL_SWEEP_MAX)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval sweep: more than %d types", EDGELLM_EVAL_SWEEP_MAX);
        if ((rc = parse_type(s, n, &types[n_types++], err)) != EDGELLM_OK) return rc;
        s += n;
        if (*s == ',') s++;
    }

    edgellm_model *ref = NULL, *q = NULL;
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = p.eval.n_threads;
    if ((rc = edgellm_model_load(ref_path, &mp, &ref, err)) != EDGELLM_OK) return rc;

    /* the reference row: PPL (fails early on a short text), speed */
    describe_ref(ref, ref_path, &out->ref);
    sweep_progress sp = {&p.eval, 0.0, 1.0 / (n_types + 1), "reference"};
    edgellm_eval_params ep = p.eval;
    ep.progress = sweep_progress_fn;
    ep.progress_user = &sp;
    if ((rc = edgellm_eval_ppl(ref, text, len, &ep, &out->ref.cmp.model, err)) != EDGELLM_OK) goto done;
    out->ref.cmp.ref = out->ref.cmp.model;
    out->ref.cmp.top1_pct = 100.0;
    out->ref.cmp.ref_top_k = edgellm_tokenizer_n_vocab(edgellm_model_tokenizer(ref));
    out->ref.cmp.kld_exact = 1;
    snprintf(out->ref.cmp.ref_name, sizeof out->ref.cmp.ref_name, "%s", edgellm_eval_basename(ref_path));
    out->ref.tok_per_s = bench_tps(ref_path, &p, err, &rc);
    if (rc != EDGELLM_OK) goto done;

    const char *base = p.tmp_dir ? p.tmp_dir : getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    int w = snprintf(out->tmp_dir, sizeof out->tmp_dir, "%s/edgellm-sweep-XXXXXX", base);
    /* created and registered with signals held back: a signal's handler finds it at once */
    sigset_t old_mask;
    edgellm_block_async_signals(&old_mask);
    const bool made = w >= 0 && w <= 150 && mkdtemp(out->tmp_dir);   /* <= 150: room for file names */
    const int mk_errno = errno;
    if (made && !p.keep_files) dir_slot = edgellm_tmp_register(out->tmp_dir, true);
    edgellm_restore_signals(&old_mask);
    if (!made) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create a temporary folder: %s", base, strerror(mk_errno));
        out->tmp_dir[0] = 0;
        goto done;
    }

    for (int i = 0; i < n_types; i++) {
        sweep_type *t = &types[i];
        edgellm_eval_sweep_row *row = &out->rows[out->n_rows++];
        snprintf(row->type, sizeof row->type, "%.23s", t->scheme.name);
        snprintf(row->spec, sizeof row->spec, "%s", t->spec);
        char stem[128];
        snprintf(stem, sizeof stem, "%s", edgellm_eval_basename(ref_path));
        char *dot = strrchr(stem, '.');
        if (dot && !strcmp(dot, ".gguf")) *dot = 0;
        snprintf(row->path, sizeof row->path, "%.150s/%.60s-%.24s.gguf", out->tmp_dir, stem, t->scheme.name);

        sp.base = (double)(i + 1) / (n_types + 1);
        snprintf(sp.label, sizeof sp.label, "%s", t->scheme.name);
        if (p.eval.progress && p.eval.progress(p.eval.progress_user, sp.base, "quantizing") != 0) {
            rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "eval sweep: cancelled");
            goto done;
        }
        edgellm_quantize_params qp = edgellm_quantize_default_params();
        qp.type = t->base;
        qp.group = t->group;
        qp.asym = t->asym;
        qp.n_threads = p.eval.n_threads;
        edgellm_quantize_report qr;
        memset(&qr, 0, sizeof qr);
        if (!p.keep_files) row_slot = edgellm_tmp_register(row->path, false);
        rc = edgellm_quantize_file(ref_path, row->path, &qp, &qr, err);
        if (rc == EDGELLM_OK) {
            int *tt = edgellm_malloc((size_t)(qr.n_tensors > 0 ? qr.n_tensors : 1) * sizeof *tt);
            int n = 0;
            for (int k = 0; tt && k < qr.n_tensors; k++)
                if (qr.tensors[k].n_dims >= 2) tt[n++] = qr.tensors[k].type;
            if (tt) describe_types(tt, n, row->used, sizeof row->used);
            edgellm_free(tt);
            row->n_fallbacks = qr.n_fallbacks;
            row->weight_bytes = qr.dst_bytes;
            row->bpw = qr.dst_bpw;
        }
        edgellm_quantize_report_free(&qr);
        if (rc != EDGELLM_OK) goto done;
        row->file_bytes = file_size(row->path);

        if ((rc = edgellm_model_load(row->path, &mp, &q, err)) != EDGELLM_OK) goto done;
        rc = edgellm_eval_compare(q, ref, NULL, text, len, &ep, &row->cmp, err);
        edgellm_model_free(q);
        q = NULL;
        if (rc != EDGELLM_OK) goto done;
        row->tok_per_s = bench_tps(row->path, &p, err, &rc);
        if (rc != EDGELLM_OK) goto done;
        if (!p.keep_files) {
            remove(row->path);
            row->path[0] = 0;
            edgellm_tmp_unregister(row_slot);
            row_slot = -1;
        }
    }
    if (p.eval.progress) p.eval.progress(p.eval.progress_user, 1.0, "done");
done:
    edgellm_model_free(q);
    edgellm_model_free(ref);
    if (out->tmp_dir[0] && !p.keep_files) {
        for (int i = 0; i < out->n_rows; i++)
            if (out->rows[i].path[0]) { remove(out->rows[i].path); out->rows[i].path[0] = 0; }
        if (rmdir(out->tmp_dir) == 0) out->tmp_dir[0] = 0;
    }
    edgellm_tmp_unregister(row_slot);
    edgellm_tmp_unregister(dir_slot);
    out->elapsed_ms = edgellm_time_ms() - t0;
    return rc;
}
