/* cmd_quantize.c — 'edgellm quantize': rewrite a GGUF model in another tensor type and
 * print the per-tensor error table. The work is edgellm_quantize_file
 * (src/tools/quantize.c); this file parses flags, draws a progress bar when stderr is a
 * terminal, prints the table (stderr) and writes the --report file (CSV or JSON, chosen by
 * the file's extension). */
#include "commands.h"
#include "eval_json.h"
#include "plan_json.h"
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_KEEP 64

/* ---- output ---- */
static void fmt_sqnr(char *buf, size_t n, double v)
{
    if (isinf(v) && v > 0) snprintf(buf, n, "inf");
    else snprintf(buf, n, "%.2f", v);
}

static void print_table(const edgellm_quantize_report *r)
{
    fprintf(stderr, "%-28s %-6s %-13s %12s %12s %10s %10s %8s %8s  %s\n", "tensor", "src", "type", "bytes_in",
            "bytes_out", "rmse", "max_err", "sqnr_db", "sat", "note");
    for (int i = 0; i < r->n_tensors; i++) {
        const edgellm_quantize_tensor *t = &r->tensors[i];
        char sq[32];
        fmt_sqnr(sq, sizeof sq, t->sqnr_db);
        fprintf(stderr, "%-28s %-6s %-13s %12llu %12llu %10.3g %10.3g %8s %8llu  %s%s\n", t->name,
                edgellm_type_name(t->src_type), edgellm_type_name(t->type), (unsigned long long)t->src_bytes,
                (unsigned long long)t->dst_bytes, t->rmse, t->max_abs_err, t->quantized ? sq : "-",
                (unsigned long long)t->n_saturated, t->note, t->weighted ? (t->note[0] ? "; imatrix" : "imatrix") : "");
    }
    fprintf(stderr, "total: %d tensors, %llu weights, %.2f MiB -> %.2f MiB, %.4f -> %.4f bits per weight, "
                    "%d shape fallback%s, %.0f ms on %d thread%s\n",
            r->n_tensors, (unsigned long long)r->n_elements, (double)r->src_bytes / 1048576.0,
            (double)r->dst_bytes / 1048576.0, r->src_bpw, r->dst_bpw, r->n_fallbacks, r->n_fallbacks == 1 ? "" : "s",
            r->elapsed_ms, r->n_threads, r->n_threads == 1 ? "" : "s");
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);   /* JSON has no inf: an exact tensor's SQNR */
}

static int write_report(const char *path, const char *in, const char *out, const edgellm_quantize_report *r)
{
    const char *dot = strrchr(path, '.');
    int json = dot && !strcasecmp(dot, ".json");
    edgellm_output *of;   /* written whole or not at all, a signal's handler removes it */
    edgellm_error err = {0};
    if (edgellm_output_open(path, "w", &of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    FILE *f = edgellm_output_stream(of);
    if (json) {
        fprintf(f, "{\n  \"input\": ");
        cli_json_str(f, in);
        fprintf(f, ",\n  \"output\": ");
        cli_json_str(f, out);
        fprintf(f, ",\n  \"scheme\": ");
        cli_json_str(f, r->scheme);
        fprintf(f, ",\n  \"file_type\": %d,\n  \"edgellm_only\": %s,\n  \"requantized\": %s,\n", r->file_type,
                r->edgellm_only ? "true" : "false", r->requantized ? "true" : "false");
        fprintf(f, "  \"n_elements\": %llu,\n  \"bytes_in\": %llu,\n  \"bytes_out\": %llu,\n  \"bpw_in\": ",
                (unsigned long long)r->n_elements, (unsigned long long)r->src_bytes, (unsigned long long)r->dst_bytes);
        json_num(f, r->src_bpw);
        fprintf(f, ",\n  \"bpw_out\": ");
        json_num(f, r->dst_bpw);
        fprintf(f, ",\n  \"n_fallbacks\": %d,\n  \"elapsed_ms\": %.1f,\n  \"tensors\": [\n", r->n_fallbacks,
                r->elapsed_ms);
        for (int i = 0; i < r->n_tensors; i++) {
            const edgellm_quantize_tensor *t = &r->tensors[i];
            fprintf(f, "    {\"name\": ");
            cli_json_str(f, t->name);
            fprintf(f, ", \"ne\": [%lld", (long long)t->ne[0]);
            for (int d = 1; d < t->n_dims; d++) fprintf(f, ", %lld", (long long)t->ne[d]);
            fprintf(f, "], \"src_type\": \"%s\", \"type\": \"%s\", \"wanted_type\": \"%s\", \"fallback\": %s, "
                       "\"quantized\": %s, \"bytes_in\": %llu, \"bytes_out\": %llu, \"rmse\": ",
                    edgellm_type_name(t->src_type), edgellm_type_name(t->type), edgellm_type_name(t->wanted_type),
                    t->fallback ? "true" : "false", t->quantized ? "true" : "false",
                    (unsigned long long)t->src_bytes, (unsigned long long)t->dst_bytes);
            json_num(f, t->rmse);
            fprintf(f, ", \"max_abs_err\": ");
            json_num(f, t->max_abs_err);
            fprintf(f, ", \"sqnr_db\": ");
            json_num(f, t->sqnr_db);
            fprintf(f, ", \"saturated\": %llu, \"weighted\": %s, \"note\": ", (unsigned long long)t->n_saturated,
                    t->weighted ? "true" : "false");
            cli_json_str(f, t->note);
            fprintf(f, "}%s\n", i + 1 < r->n_tensors ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
    } else {
        fprintf(f, "name,src_type,type,wanted_type,fallback,bytes_in,bytes_out,rmse,max_abs_err,sqnr_db,saturated,note\n");
        for (int i = 0; i < r->n_tensors; i++) {
            const edgellm_quantize_tensor *t = &r->tensors[i];
            char sq[32];
            fmt_sqnr(sq, sizeof sq, t->sqnr_db);
            cli_csv_str(f, t->name);   /* a tensor name may hold commas, quotes, newlines */
            fprintf(f, ",%s,%s,%s,%d,%llu,%llu,%.9g,%.9g,%s,%llu,", edgellm_type_name(t->src_type),
                    edgellm_type_name(t->type), edgellm_type_name(t->wanted_type), t->fallback,
                    (unsigned long long)t->src_bytes, (unsigned long long)t->dst_bytes, t->rmse, t->max_abs_err,
                    t->quantized ? sq : "", (unsigned long long)t->n_saturated);
            cli_csv_str(f, t->note);
            fputc('\n', f);
        }
        fprintf(f, "TOTAL,,");
        cli_csv_str(f, r->scheme);
        fprintf(f, ",,%d,%llu,%llu,,,,,\"%.4f -> %.4f bpw\"\n", r->n_fallbacks,
                (unsigned long long)r->src_bytes, (unsigned long long)r->dst_bytes, r->src_bpw, r->dst_bpw);
    }
    if (edgellm_output_commit(of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    return 0;
}

/* edgellm's group-wise types by the short names --type and plan --types take: "i4", "i8"
 * (group 128, symmetric), "i4_g64", "i4:g64", "i8_g256_asym", "i4:g128:asym", any case ->
 * "I4_G64_SYM" style in out; false for anything else. */
static bool group_alias(const char *s, char *out, size_t n)
{
    int group = 128;
    if ((s[0] != 'i' && s[0] != 'I') || (s[1] != '4' && s[1] != '8')) return false;
    const int bits = s[1] - '0';
    const char *p = s + 2;
    if ((*p == '_' || *p == ':') && (p[1] == 'g' || p[1] == 'G')) {   /* digits only: no sign, no space */
        const size_t nd = strspn(p + 2, "0123456789");
        if (nd == 0 || nd > 3) return false;
        group = atoi(p + 2);
        if (group != 64 && group != 128 && group != 256) return false;
        p += 2 + nd;
    }
    bool asym = false;
    if (*p == '_' || *p == ':') {
        if (!strcasecmp(p + 1, "asym")) asym = true;
        else if (strcasecmp(p + 1, "sym")) return false;
        p += strlen(p);
    }
    if (*p) return false;
    snprintf(out, n, "I%d_G%d_%s", bits, group, asym ? "ASYM" : "SYM");
    return true;
}

/* A computable type name for --output-type / --embd-type (a cli_parse_fn: int *dst). */
static int parse_type(const char *flag, const char *s, void *dst, char *msg, size_t size)
{
    char canon[32];
    const char *name = group_alias(s, canon, sizeof canon) ? canon : s;
    const int t = edgellm_quantize_type_from_name(name);
    if (t < 0) {
        snprintf(msg, size, "%s: '%s' is not a type edgellm can write and compute with (f32, f16, bf16, q8_0, q4_0, "
                            "q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, i4 or i8 with an optional "
                            "_g64/_g128/_g256 and _asym, e.g. i4_g64_asym)", flag, s);
        return 1;
    }
    *(int *)dst = t;
    return 0;
}

/* The --keep patterns: each value holds one or more, comma-separated (copies in buf). */
typedef struct {
    const char *pattern[MAX_KEEP];
    char *buf[MAX_KEEP];
    int n, n_buf;
} keep_set;

static int parse_keep(const char *flag, const char *val, void *dst, char *msg, size_t size)
{
    keep_set *k = dst;
    if (!val[0] || !strcspn(val, ",") || strstr(val, ",,") || val[strlen(val) - 1] == ',') {
        snprintf(msg, size, "%s needs glob patterns (e.g. '*attn_v*'), got '%s'", flag, val);
        return 1;
    }
    char *copy = k->n_buf < MAX_KEEP ? strdup(val) : NULL;
    if (!copy) {
        snprintf(msg, size, "too many %s", flag);
        return 1;
    }
    k->buf[k->n_buf++] = copy;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (k->n == MAX_KEEP) {
            snprintf(msg, size, "more than %d %s patterns", MAX_KEEP, flag);
            return 1;
        }
        k->pattern[k->n++] = tok;
    }
    return 0;
}

/* --report FILE: .csv or .json (a cli_parse_fn: const char **dst) */
static int parse_report(const char *flag, const char *val, void *dst, char *msg, size_t size)
{
    const char *dot = strrchr(val, '.');
    if (!dot || (strcasecmp(dot, ".csv") && strcasecmp(dot, ".json"))) {
        snprintf(msg, size, "%s FILE must end in .csv or .json, got '%s'", flag, val);
        return 1;
    }
    *(const char **)dst = val;
    return 0;
}


/* ---- --target ---- */

static const char *const heat_kinds[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                                         "ffn_down"};
#define N_HEAT_KINDS 7

/* Heat map of the scan: one row per layer, one column per matrix kind; the colour is the
 * cost of the matrix's smallest option (log scale, white = cheapest, red = dearest), the
 * label its chosen type. */
static int write_heatmap(const char *path, const edgellm_quantize_target_report *r)
{
    int n_layer = 0;
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < r->n_tensors; i++) {
        int il;
        if (sscanf(r->tensors[i].name, "blk.%d.", &il) == 1 && il + 1 > n_layer) n_layer = il + 1;
        double c = r->tensors[i].cost[0];
        if (r->tensors[i].n_options < 2) continue;   /* one choice (rows that fit no block): grey */
        if (c > 0 && c < lo) lo = c;
        if (c > hi) hi = c;
    }
    if (!(lo < hi)) lo = hi / 10;
    edgellm_output *of;
    edgellm_error err = {0};
    if (edgellm_output_open(path, "w", &of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    FILE *f = edgellm_output_stream(of);
    const int cw = 96, chh = 22, x0 = 60, y0 = 40;
    const int w = x0 + cw * N_HEAT_KINDS + 20, h = y0 + chh * (n_layer + 2) + 40;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n", w, h);
    fprintf(f, "<text x=\"4\" y=\"16\" font-size=\"13\">scan cost of the smallest type (%s, log scale %.2g .. %.2g, "
               "grey: one choice); label: chosen type</text>\n", r->scan_measured ? "KLD" : "proxy", lo, hi);
    for (int k = 0; k < N_HEAT_KINDS; k++)
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", x0 + k * cw + 4, y0 - 6, heat_kinds[k]);
    for (int i = 0; i < r->n_tensors; i++) {
        const edgellm_quantize_target_tensor *t = &r->tensors[i];
        int il, col = -1, row;
        char kind[32];
        if (sscanf(t->name, "blk.%d.%31[a-z_].weight", &il, kind) == 2) {
            for (int k = 0; k < N_HEAT_KINDS; k++)
                if (!strcmp(kind, heat_kinds[k])) col = k;
            row = il;
        } else if (!strcmp(t->name, "token_embd.weight")) { col = 0; row = n_layer; }
        else if (!strcmp(t->name, "output.weight")) { col = 1; row = n_layer; }
        else continue;
        if (col < 0) continue;
        double c = t->cost[0];
        double v = c > 0 ? (log(c) - log(lo)) / (log(hi) - log(lo)) : 0;
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        int gb = (int)(255 * (1 - v));
        char fill[32];
        if (t->n_options < 2) snprintf(fill, sizeof fill, "#dddddd");
        else snprintf(fill, sizeof fill, "rgb(255,%d,%d)", gb, gb);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#888\"/>\n",
                x0 + col * cw, y0 + row * chh, cw, chh, fill);
        fprintf(f, "<text x=\"%d\" y=\"%d\"><title>%s: %.3g</title>%s</text>\n", x0 + col * cw + 4,
                y0 + row * chh + 15, t->name, c, edgellm_type_name(t->type[t->chosen]));
    }
    for (int il = 0; il < n_layer; il++)
        fprintf(f, "<text x=\"4\" y=\"%d\">blk.%d</text>\n", y0 + il * chh + 15, il);
    fprintf(f, "<text x=\"4\" y=\"%d\">embd/out</text>\n", y0 + n_layer * chh + 15);
    fprintf(f, "</svg>\n");
    if (edgellm_output_commit(of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    return 0;
}

static void print_cmp(const char *what, const edgellm_eval_compare_result *c)
{
    fprintf(stderr, "edgellm quantize: %s: KLD %.5f ± %.5f, dPPL %+.2f %%, top-1 %.2f %% (%lld predictions)\n", what,
            c->kld_mean, c->kld_err, c->delta_ppl_pct, c->top1_pct, (long long)c->model.n_scored);
}

/* --task FILE: the task set's accuracy of the assembled file and of the input, after the
 * search (the verification rounds measure the text; the task result is reported beside). */
typedef struct {
    const char *file;
    int ran;
    edgellm_eval_task_result r;
} target_task;

static int run_target_task(const char *in, const char *out, const char *file, int n_threads, target_task *tt)
{
    edgellm_error err = {0};
    cli_eval_taskset ts;
    tt->file = file;
    tt->ran = 0;
    if (cli_eval_read_jsonl(file, 0, &ts, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    edgellm_model *m = NULL, *ref = NULL;
    edgellm_status st = edgellm_model_load(out, &mp, &m, &err);
    if (st == EDGELLM_OK) st = edgellm_model_load(in, &mp, &ref, &err);
    if (st == EDGELLM_OK) {
        edgellm_eval_task_params tp = edgellm_eval_task_default_params();
        tp.n_threads = n_threads;
        st = edgellm_eval_task(m, ref, ts.items, ts.n, &tp, &tt->r, &err);
    }
    edgellm_model_free(m);
    edgellm_model_free(ref);
    cli_eval_taskset_free(&ts);
    if (st != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    tt->ran = 1;
    for (int k = 0; k < 4; k++) {
        const edgellm_eval_metric *me = &tt->r.metrics[k];
        if (me->n == 0) continue;
        fprintf(stderr, "edgellm quantize: task %s: %s %.2f %% (reference %.2f %%, gap %+.2f pts), %d items\n", file,
                me->name, me->pct, me->ref_pct, me->gap_pts, me->n);
    }
    return 0;
}

/* OUT.eval.json beside OUT.gguf (the results file `edgellm plan --model OUT.gguf` reads):
 * one result, the file under the label plan gives it, with the held-out measurement. */
static int write_target_eval(const char *out, const edgellm_quantize_target_report *r, const char *text, int n_ctx)
{
    size_t n = strlen(out);
    if (!r->has_heldout || n <= 5 || strcasecmp(out + n - 5, ".gguf")) return 0;
    char path[4096];
    if (n + 16 > sizeof path) return 0;
    snprintf(path, sizeof path, "%.*s.eval.json", (int)(n - 5), out);
    edgellm_error err = {0};
    edgellm_plan_model pm;
    if (edgellm_plan_model_from_gguf(out, &pm, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    edgellm_plan_quality q;
    memset(&q, 0, sizeof q);
    snprintf(q.type, sizeof q.type, "%s", pm.file_label);
    q.delta_ppl_pct = r->heldout.delta_ppl_pct;
    q.kld = r->heldout.kld_mean;
    q.top1_pct = r->heldout.top1_pct;
    const uint64_t bytes = r->file_bytes;
    const double bpw = r->bpw;
    const char *slash = strrchr(out, '/');
    if (cli_plan_write_eval(path, slash ? slash + 1 : out, NULL, text, n_ctx, &q, &bytes, &bpw, 1, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    fprintf(stderr, "edgellm quantize: wrote %s (the held-out result, for edgellm plan --model %s)\n", path, out);
    return 0;
}

static int write_target_json(const char *path, const char *in, const char *out, const edgellm_quantize_target_report *r,
                             const target_task *tt)
{
    edgellm_output *of;
    edgellm_error err = {0};
    if (edgellm_output_open(path, "w", &of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    FILE *f = edgellm_output_stream(of);
    fprintf(f, "{\n  \"input\": ");
    cli_json_str(f, in);
    fprintf(f, ",\n  \"output\": ");
    cli_json_str(f, out);
    fprintf(f, ",\n  \"metric\": \"%s\", \"target\": %.9g, \"met\": %s, \"scan\": \"%s\",\n  \"imatrix\": ", r->metric,
            r->target, r->met ? "true" : "false", r->scan_measured ? "measured" : "proxy");
    cli_json_str(f, r->imatrix);
    fprintf(f, ",\n  \"file_bytes\": %llu, \"bpw\": %.6f, \"kept_round\": %d,\n  \"rounds\": [\n",
            (unsigned long long)r->file_bytes, r->bpw, r->kept_round);
    for (int k = 0; k < r->n_rounds; k++) {
        const edgellm_quantize_target_round *d = &r->rounds[k];
        fprintf(f, "    {\"budget\": %.9g, \"predicted\": %.9g, \"bytes\": %llu, \"bpw\": %.6f, \"kld\": %.9g, "
                   "\"dppl_pct\": %.6f, \"top1_pct\": %.6f, \"met\": %s}%s\n",
                d->budget, d->predicted, (unsigned long long)d->bytes, d->bpw, d->cal.kld_mean, d->cal.delta_ppl_pct,
                d->cal.top1_pct, d->met ? "true" : "false", k + 1 < r->n_rounds ? "," : "");
    }
    fprintf(f, "  ],\n");
    if (r->has_heldout)
        fprintf(f, "  \"heldout\": {\"kld\": %.9g, \"dppl_pct\": %.6f, \"top1_pct\": %.6f, \"n\": %lld},\n",
                r->heldout.kld_mean, r->heldout.delta_ppl_pct, r->heldout.top1_pct,
                (long long)r->heldout.model.n_scored);
    if (tt && tt->ran) {
        fprintf(f, "  \"task\": {\"file\": ");
        cli_json_str(f, tt->file);
        fprintf(f, ", \"metrics\": [");
        int first = 1;
        for (int k = 0; k < 4; k++) {
            const edgellm_eval_metric *me = &tt->r.metrics[k];
            if (me->n == 0) continue;
            fprintf(f, "%s{\"name\": \"%s\", \"n\": %d, \"pct\": %.6f, \"ref_pct\": %.6f, \"gap_pts\": %.6f}",
                    first ? "" : ", ", me->name, me->n, me->pct, me->ref_pct, me->gap_pts);
            first = 0;
        }
        fprintf(f, "]},\n");
    }
    fprintf(f, "  \"tensors\": [\n");
    for (int i = 0; i < r->n_tensors; i++) {
        const edgellm_quantize_target_tensor *t = &r->tensors[i];
        fprintf(f, "    {\"name\": ");
        cli_json_str(f, t->name);
        fprintf(f, ", \"chosen\": \"%s\", \"why\": ", edgellm_type_name(t->type[t->chosen]));
        cli_json_str(f, t->why);
        fprintf(f, ", \"options\": [");
        for (int o = 0; o < t->n_options; o++)
            fprintf(f, "%s{\"type\": \"%s\", \"bytes\": %llu, \"cost\": %.9g}", o ? ", " : "",
                    edgellm_type_name(t->type[o]), (unsigned long long)t->bytes[o], t->cost[o]);
        fprintf(f, "]}%s\n", i + 1 < r->n_tensors ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    if (edgellm_output_commit(of, &err) != EDGELLM_OK) {
        cli_print_error("quantize", &err);
        return 1;
    }
    return 0;
}

typedef struct {
    const char *target, *types, *calib, *heldout, *heatmap, *scan, *task;
    int n_ctx, calib_chunks, scan_chunks, heldout_chunks, rounds, no_imatrix;
    double margin;
} target_flags;

static int run_target(const char *in, const char *out, const edgellm_quantize_params *qp, const target_flags *tf,
                      const char *report_path, int argc, char **argv)
{
    edgellm_quantize_target_params p = edgellm_quantize_target_default_params();
    p.quant = *qp;
    p.target = tf->target;
    p.types = tf->types;
    p.n_ctx = tf->n_ctx;
    p.calib_chunks = tf->calib_chunks;
    p.scan_chunks = tf->scan_chunks;
    p.margin = tf->margin;
    p.heldout_chunks = tf->heldout_chunks;
    p.max_rounds = tf->rounds;
    p.no_imatrix = tf->no_imatrix;
    p.scan = !tf->scan || !strcmp(tf->scan, "auto") ? 0 : !strcmp(tf->scan, "measured") ? 1 : 2;
    edgellm_error err = {0};
    size_t clen = 0, hlen = 0;
    char *calib = cli_read_text(tf->calib, &clen, &err), *held = NULL;
    if (!calib) {
        cli_print_error("quantize", &err);
        return 1;
    }
    p.calib = calib;
    p.calib_len = clen;
    p.calib_name = tf->calib;
    if (tf->heldout) {
        if (!(held = cli_read_text(tf->heldout, &hlen, &err))) {
            cli_print_error("quantize", &err);
            free(calib);
            return 1;
        }
        p.heldout = held;
        p.heldout_len = hlen;
        p.heldout_name = tf->heldout;
    } else {   /* one text: calibrate on the first half, report on the second */
        size_t half = clen / 2;
        while (half < clen && (calib[half] & 0xC0) == 0x80) half++;   /* not inside a UTF-8 sequence */
        p.calib_len = half;
        p.heldout = calib + half;
        p.heldout_len = clen - half;
        p.heldout_name = "second half of the calibration file";
        fprintf(stderr, "edgellm quantize: calibration on the first half of %s, held-out report on the second\n",
                tf->calib);
    }
    cli_bar bar = {-1};
    if (isatty(fileno(stderr))) {
        p.quant.progress = cli_draw_bar;
        p.quant.progress_user = &bar;
    }
    edgellm_quantize_target_report r;
    edgellm_status st = edgellm_quantize_target(in, out, &p, &r, &err);
    int rc = 0;
    if (st != EDGELLM_OK) {
        if (p.quant.progress) fprintf(stderr, "\n");
        cli_print_error("quantize", &err);
        rc = st == EDGELLM_ERR_MISUSE ? cli_see_help("quantize") : 1;
        goto out;
    }
    fprintf(stderr, "edgellm quantize: imatrix: %s\n", r.imatrix);
    fprintf(stderr, "edgellm quantize: scan (%s) of %d matrices in %.1f s\n",
            r.scan_measured ? "KLD of each matrix quantized alone" : "proxy: importance-weighted relative error",
            r.n_tensors, r.scan_ms / 1000.0);
    fprintf(stderr, "%-26s %-13s %10s %12s  %-40s  %s\n", "tensor", "type", "bytes", "cost", "options (type:cost)",
            "why");
    for (int i = 0; i < r.n_tensors; i++) {
        const edgellm_quantize_target_tensor *t = &r.tensors[i];
        char opts[256];
        size_t o = 0;
        opts[0] = 0;
        for (int k = 0; k < t->n_options && o < sizeof opts; k++)
            o += (size_t)snprintf(opts + o, sizeof opts - o, "%s%s:%.2g", k ? " " : "", edgellm_type_name(t->type[k]),
                                  t->cost[k]);
        fprintf(stderr, "%-26s %-13s %10llu %12.4g  %-40s  %s\n", t->name, edgellm_type_name(t->type[t->chosen]),
                (unsigned long long)t->bytes[t->chosen], t->cost[t->chosen], opts, t->why);
    }
    fprintf(stderr, "%-5s %12s %12s %12s %8s %10s %9s %8s  %s\n", "round", "budget", "predicted", "bytes", "bpw", "KLD",
            "dPPL%", "top1%", "target");
    for (int k = 0; k < r.n_rounds; k++) {
        const edgellm_quantize_target_round *d = &r.rounds[k];
        fprintf(stderr, "%-5d %12.4g %12.4g %12llu %8.4f %10.5f %+9.2f %8.2f  %s%s\n", k + 1, d->budget, d->predicted,
                (unsigned long long)d->bytes, d->bpw, d->cal.kld_mean, d->cal.delta_ppl_pct, d->cal.top1_pct,
                d->met ? "met" : "missed", k == r.kept_round ? " (kept)" : "");
    }
    print_cmp("calibration", &r.rounds[r.kept_round].cal);
    if (r.has_heldout) print_cmp("held-out", &r.heldout);
    fprintf(stderr, "edgellm quantize: reproduce: edgellm");
    for (int i = 0; i < argc; i++) fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\n");
    if (!r.met)
        fprintf(stderr, "edgellm quantize: target %s NOT met on the calibration text in %d rounds; kept the closest "
                        "file\n", tf->target, r.n_rounds);
    target_task tt = {0};
    if (tf->task && run_target_task(in, out, tf->task, qp->n_threads, &tt)) rc = 1;
    if (tf->heatmap && write_heatmap(tf->heatmap, &r)) rc = 1;
    if (report_path && write_target_json(report_path, in, out, &r, &tt)) rc = 1;
    if (write_target_eval(out, &r, p.heldout_name, p.n_ctx)) rc = 1;
    fprintf(stderr, "edgellm quantize: wrote %s (%llu bytes, %.4f bits per weight, target %s %s)\n", out,
            (unsigned long long)r.file_bytes, r.bpw, tf->target, r.met ? "met" : "not met");
    if (!r.met) rc = 1;
out:
    edgellm_quantize_target_report_free(&r);
    free(calib);
    free(held);
    return rc;
}

static const cli_choice group_sizes[] = {{"64", 64}, {"128", 128}, {"256", 256}, {NULL, 0}};

int cmd_quantize(int argc, char **argv)
{
    edgellm_quantize_params p = edgellm_quantize_default_params();
    const char *pos_store[2], *report_path = NULL, **pos = pos_store;
    cli_list files = {pos_store, 0, 2};
    keep_set keep = {.n = 0};
    target_flags tf = {.n_ctx = 256, .calib_chunks = 16, .scan_chunks = 8, .heldout_chunks = 32, .rounds = 6,
                       .margin = 1.0};
    const char *imatrix_path = NULL, *save_imatrix = NULL;
    edgellm_imatrix *im = NULL;
    int rc = 2;
    p.type = NULL;
    const cli_opt file_args = {CLI_LIST(NULL, NULL, "IN.gguf OUT.gguf", &files), .required = 1,
                               .help = "the model to read and the file to write (replaced atomically)"};
    const cli_opt opts[] = {
        {CLI_STRING(NULL, "--type", "TYPE", &p.type),
         .help = "q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k, the mixes q4_k_m q5_k_m (llama.cpp's recipe), "
                 "i8 / i4 (edgellm group-wise), f16 f32"},
        {CLI_ENUM(NULL, "--group", "N", &p.group, group_sizes), .def = "128",
         .help = "i4/i8 group size along the row: 64, 128 or 256"},
        {CLI_FLAG(NULL, "--asym", &p.asym, 1), .help = "i4/i8 with a minimum per group (default: scale only)"},
        {CLI_FLAG(NULL, "--pure", &p.pure, 1),
         .help = "every matrix in TYPE, output too (default, as llama-quantize: output.weight in Q6_K for types "
                 "below 6 bits per weight)"},
        {CLI_CUSTOM(NULL, "--keep", "PATTERN", &keep, parse_keep),
         .help = "keep tensors whose name matches the glob (e.g. '*attn_v*') at their float type (F16 when the "
                 "source is quantized); repeat the flag or separate patterns with commas"},
        {CLI_CUSTOM(NULL, "--output-type", "TYPE", &p.output_type, parse_type),
         .help = "type of output.weight (a tied token_embd too)"},
        {CLI_CUSTOM(NULL, "--embd-type", "TYPE", &p.embd_type, parse_type), .help = "type of token_embd.weight"},
        {CLI_STRING(NULL, "--layout", "NAME", &p.layout),
         .help = "q4_K_r16: Q4_K matrices stored in an older 16-row layout (edgellm-only file; no kernel "
                 "reads it any more, it is unpacked at load); plain: back to llama.cpp's layout. "
                 "Without --type and --target: every tensor keeps its type, only the layout changes"},
        {CLI_OPT_THREADS(&p.n_threads)},
        {CLI_CUSTOM(NULL, "--report", "FILE", &report_path, parse_report),
         .help = "write the per-tensor report as .csv or .json (with --target: .json)"},
        {CLI_GROUP("Importance statistics (imatrix)")},
        {CLI_PATH(NULL, "--calib", "TEXT", &tf.calib),
         .help = "calibration text: collect importance statistics on it (with --type) and, with --target, "
                 "measure the gap on it"},
        {CLI_PATH(NULL, "--imatrix", "FILE", &imatrix_path),
         .help = "importance statistics to use (llama.cpp's imatrix .gguf or legacy .dat)"},
        {CLI_PATH(NULL, "--save-imatrix", "FILE", &save_imatrix),
         .help = "save the statistics collected on --calib (.gguf, else the legacy .dat layout)"},
        {CLI_FLAG(NULL, "--no-imatrix", &tf.no_imatrix, 1), .help = "plain quantizers even with --calib"},
        {CLI_INT(NULL, "--ctx", "N", &tf.n_ctx, 8, 1 << 20), .def = "256", .help = "tokens per calibration window"},
        {CLI_INT(NULL, "--calib-chunks", "N", &tf.calib_chunks, 1, 1 << 20), .def = "16",
         .help = "calibration windows"},
        {CLI_GROUP("Quality target")},
        {CLI_INT(NULL, "--scan-chunks", "N", &tf.scan_chunks, 1, 1 << 20), .def = "8",
         .help = "the first N calibration windows measure each matrix's cost (the scan)"},
        {CLI_STRING(NULL, "--target", "SPEC", &tf.target),
         .help = "choose a type per matrix to meet kld:X, dppl:X% or top1:X% at the smallest size, or the best "
                 "quality within size:N[KiB|MiB|GiB] (needs --calib)"},
        {CLI_STRING(NULL, "--types", "LIST", &tf.types),
         .help = "candidate types (default q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q5_k,q6_k,i4_g64,i4_g64_asym,i4_g128,"
                 "i4_g128_asym,f16)"},
        {CLI_PATH(NULL, "--heldout", "TEXT", &tf.heldout),
         .help = "held-out text for the final report (default: the second half of --calib, which then "
                 "calibrates on its first half)"},
        {CLI_INT(NULL, "--heldout-chunks", "N", &tf.heldout_chunks, 1, 1 << 20), .def = "32",
         .help = "held-out windows"},
        {CLI_DOUBLE(NULL, "--margin", "F", &tf.margin, 0, 1, CLI_OPEN_MIN), .def = "1",
         .help = "aim at F x the gap on the calibration text (e.g. 0.85: room for other text)"},
        {CLI_INT(NULL, "--rounds", "N", &tf.rounds, 1, 12), .def = "6",
         .help = "verification rounds (quantize, measure, adjust)"},
        {CLI_STRING(NULL, "--scan", "MODE", &tf.scan),
         .help = "auto (default), measured (KLD per matrix and type) or proxy (weighted error; large models)"},
        {CLI_PATH(NULL, "--heatmap", "FILE.svg", &tf.heatmap), .help = "SVG heat map of the scan (layers x matrices)"},
        {CLI_PATH(NULL, "--task", "FILE", &tf.task),
         .help = "task set (JSONL, as eval task): its accuracy on the written file and on IN, and the gap"},
    };
    const cli_command cmd = {
        .name = "quantize",
        .synopsis = "edgellm quantize IN.gguf OUT.gguf --type TYPE [options]\n"
                    "       edgellm quantize IN.gguf OUT.gguf --target dppl:3% --calib TEXT [options]\n"
                    "       edgellm quantize IN.gguf OUT.gguf --layout q4_K_r16|plain",
        .about = "Rewrite a GGUF model in a quantized type; the per-tensor error table goes to stderr.",
        .notes = "1-D tensors (norms, biases) stay F32. Rows that do not fit a type's blocks fall back\n"
                 "(Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, g256->g128->g64, else F16); the table says so.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts), .positional = &file_args,
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) {
        rc = parsed;
        goto out;
    }
    /* a report that cannot be written is known before minutes of quantizing, not after */
    const bool report_is_in = report_path && edgellm_path_same_file(report_path, pos[0]);
    if (report_is_in || (report_path && edgellm_path_same_file(report_path, pos[1]))) {
        fprintf(stderr, "edgellm quantize: %s: the report would replace the %s file\n", report_path,
                report_is_in ? "input" : "output");
        rc = 2;
        goto out;
    }
    int report_errno = report_path ? edgellm_output_check(report_path) : 0;
    /* and, as before, a report that exists read-only is not overwritten */
    if (!report_errno && report_path && access(report_path, F_OK) == 0 && access(report_path, W_OK) != 0)
        report_errno = errno;
    if (report_errno) {
        fprintf(stderr, "edgellm quantize: %s: cannot write the report there: %s\n", report_path, strerror(report_errno));
        rc = 1;
        goto out;
    }
    p.keep = keep.pattern;
    p.n_keep = keep.n;
    if (tf.scan && strcmp(tf.scan, "auto") && strcmp(tf.scan, "measured") && strcmp(tf.scan, "proxy")) {
        fprintf(stderr, "edgellm quantize: --scan expects auto, measured or proxy, got '%s'\n", tf.scan);
        rc = cli_see_help("quantize");
        goto out;
    }
    const bool layout_only = p.layout && !p.type && !tf.target;
    const bool layout_extra = layout_only && (tf.calib || imatrix_path || keep.n || p.output_type >= 0 ||
                                              p.embd_type >= 0);
    if ((!tf.target == !p.type && !layout_only) || layout_extra || (tf.target && !tf.calib) ||
        (!tf.calib && save_imatrix)) {
        fprintf(stderr, "edgellm quantize: %s\n",
                layout_extra ? "--layout without --type changes only the layout: --calib, --imatrix, --keep, "
                               "--output-type and --embd-type need --type"
                : !tf.target && !p.type ? "--type TYPE, --target SPEC or --layout NAME is required"
                : tf.target && p.type  ? "--type and --target exclude each other"
                : tf.target            ? "--target needs --calib TEXT"
                                       : "--save-imatrix needs --calib TEXT");
        rc = cli_see_help("quantize");
        goto out;
    }
    if (imatrix_path) {
        edgellm_error ierr = {0};
        if (edgellm_imatrix_load(imatrix_path, &im, &ierr) != EDGELLM_OK) {
            cli_print_error("quantize", &ierr);
            rc = 1;
            goto out;
        }
        p.imatrix = im;
    }
    if (tf.calib && !im && !tf.no_imatrix && (!tf.target || save_imatrix)) {   /* collect from IN */
        edgellm_error ierr = {0};
        size_t clen = 0;
        char *text = cli_read_text(tf.calib, &clen, &ierr);
        edgellm_model *m = NULL;
        edgellm_model_params mp = edgellm_model_default_params();
        mp.n_threads = p.n_threads;
        edgellm_eval_params ev = edgellm_eval_default_params();
        ev.n_ctx = tf.n_ctx;
        ev.max_chunks = tf.calib_chunks;
        ev.text_name = tf.calib;
        cli_bar ibar = {-1};
        if (isatty(fileno(stderr))) {
            ev.progress = cli_draw_bar;
            ev.progress_user = &ibar;
        }
        size_t use = tf.target && !tf.heldout ? clen / 2 : clen;   /* as run_target calibrates */
        while (tf.target && !tf.heldout && use < clen && (text[use] & 0xC0) == 0x80) use++;
        edgellm_status ist = !text ? EDGELLM_ERR_IO : edgellm_model_load(pos[0], &mp, &m, &ierr);
        if (ist == EDGELLM_OK) ist = edgellm_imatrix_collect(m, text, use, &ev, &im, &ierr);
        edgellm_model_free(m);
        free(text);
        if (ist == EDGELLM_OK && save_imatrix) ist = edgellm_imatrix_save(im, save_imatrix, &ierr);
        if (ist != EDGELLM_OK) {
            cli_print_error("quantize", &ierr);
            rc = 1;
            goto out;
        }
        char desc[200];
        edgellm_imatrix_describe(im, desc, sizeof desc);
        fprintf(stderr, "edgellm quantize: imatrix: %s%s%s\n", desc, save_imatrix ? ", saved to " : "",
                save_imatrix ? save_imatrix : "");
        p.imatrix = im;
    }
    if (tf.target) {
        if (report_path && strcasecmp(strrchr(report_path, '.'), ".json")) {
            fprintf(stderr, "edgellm quantize: --report with --target writes JSON: name it .json, got '%s'\n",
                    report_path);
            rc = cli_see_help("quantize");
            goto out;
        }
        if (tf.no_imatrix) p.imatrix = NULL;
        rc = run_target(pos[0], pos[1], &p, &tf, report_path, argc, argv);
        goto out;
    }
    cli_bar bar = {-1};
    if (isatty(fileno(stderr))) {
        p.progress = cli_draw_bar;
        p.progress_user = &bar;
    }
    edgellm_quantize_report r;
    edgellm_error err = {0};
    edgellm_status st = edgellm_quantize_file(pos[0], pos[1], &p, &r, &err);
    if (st != EDGELLM_OK) {
        if (p.progress) fprintf(stderr, "\n");
        cli_print_error("quantize", &err);
        edgellm_quantize_report_free(&r);
        if (st == EDGELLM_ERR_MISUSE) rc = cli_see_help("quantize");
        else rc = 1;
        goto out;
    }
    if (r.requantized)
        fprintf(stderr, "edgellm quantize: warning: %s is already quantized; its tensors were dequantized and "
                        "requantized (errors below are relative to the dequantized input)\n", pos[0]);
    print_table(&r);
    /* one line per distinct fallback ("5 tensors: Q4_K does not fit rows of 64: Q5_0") */
    for (int i = 0; i < r.n_tensors; i++) {
        if (!r.tensors[i].fallback) continue;
        int seen = 0, count = 0;
        for (int j = 0; j < r.n_tensors && !seen; j++)
            seen = j < i && r.tensors[j].fallback && !strcmp(r.tensors[j].note, r.tensors[i].note);
        if (seen) continue;
        for (int j = i; j < r.n_tensors; j++) count += r.tensors[j].fallback && !strcmp(r.tensors[j].note, r.tensors[i].note);
        if (count == 1) fprintf(stderr, "edgellm quantize: fallback: %s: %s\n", r.tensors[i].name, r.tensors[i].note);
        else fprintf(stderr, "edgellm quantize: fallback: %d tensors (%s, ...): %s\n", count, r.tensors[i].name,
                     r.tensors[i].note);
    }
    for (int k = 0; k < keep.n; k++) {   /* a pattern that kept nothing is likely a typo */
        int hits = 0;
        for (int i = 0; i < r.n_tensors && !hits; i++) hits = fnmatch(keep.pattern[k], r.tensors[i].name, 0) == 0;
        if (!hits) fprintf(stderr, "edgellm quantize: warning: --keep '%s' matched no tensor name\n", keep.pattern[k]);
    }
    rc = 0;
    if (report_path && write_report(report_path, pos[0], pos[1], &r)) rc = 1;
    else if (report_path) fprintf(stderr, "edgellm quantize: wrote the report to %s\n", report_path);
    const bool none_took = r.scheme_edgellm && !r.edgellm_only;
    /* the scheme's own type on no tensor, a smaller group of it on some (rows of 64 for g128):
     * say which type the file really holds, by plan's own reading of the written file (its
     * label is then that type rather than the recipe) */
    char held[96] = "";
    edgellm_plan_model written;
    if (r.scheme_edgellm && r.edgellm_only && edgellm_plan_model_from_gguf(pos[1], &written, NULL) == EDGELLM_OK &&
        strcasecmp(written.file_label, r.scheme) != 0)
        snprintf(held, sizeof held, "; no row fit it: the group-wise tensors are %s", written.file_label);
    char lay[96] = "";
    if (r.n_layout > 0)
        snprintf(lay, sizeof lay, ", %d matrices in the q4_K_r16 layout: an edgellm-only file", r.n_layout);
    fprintf(stderr, "edgellm quantize: wrote %s (%s%s%s%s%s%s)\n", pos[1], r.scheme, r.edgellm_only ? ", edgellm-only" : "",
            lay, none_took ? ": no tensor fit it, all fell back to standard types" : "", held,
            rc ? "; the report could not be written" : "");
    edgellm_quantize_report_free(&r);
out:
    for (int i = 0; i < keep.n_buf; i++) free(keep.buf[i]);
    edgellm_imatrix_free(im);
    return rc;
}
