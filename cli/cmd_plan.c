/*
 * cmd_plan.c — `edgellm plan`: will this model fit on that device, how fast will it run,
 * and at which precision. Flags in, edgellm_plan() (src/tools/plan.c) does the arithmetic,
 * a table (or --json, docs/plan.schema.json) out.
 *
 * With no model and no device: a matrix of catalogue models x catalogue devices showing the
 * best precision that fits each pair, then the detailed plan for llama-3.2-3b on phone-mid.
 * Exit status: 0 done; 1 the model file cannot be read / is not GGUF, a device or eval file
 * is broken, --eval holds another model's results (parameter count or file name differs;
 * an automatic MODEL.eval.json that does is ignored with a warning), the host cannot be
 * measured; 2 wrong command line (unknown flag, model or device name, ctx <= 0, a shape
 * that does not divide, an unknown precision).
 */
#include "commands.h"
#include "plan_json.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MODEL "llama-3.2-3b"
#define DEFAULT_DEVICE "phone-mid"
static const double GIB = 1073741824.0;

static const char *verdict_text(edgellm_plan_verdict v)
{
    return v == EDGELLM_PLAN_FITS ? "fits" : v == EDGELLM_PLAN_TIGHT ? "tight" : "does not fit";
}

static void fmt_num(char *buf, size_t size, double v, int prec)
{
    if (isnan(v)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.*f", prec, v);
}

/* A memory figure in at most 8 columns: two decimals while they fit, else whole units. */
static void fmt_mem(char *buf, size_t size, double v)
{
    if (fabs(v) < 99999.995) snprintf(buf, size, "%.2f", v);
    else snprintf(buf, size, "%.0f", v);
}

static void print_device_line(FILE *f, const edgellm_plan_device *d)
{
    fprintf(f, "  %-16s RAM %5.1f GiB, usable %5.2f GiB, %5.1f GB/s %s  %s\n", d->name, d->ram_bytes / GIB,
            d->usable_bytes / GIB, d->bw_gbps, d->bw_measured ? "measured" : "peak    ", d->description);
}

static void print_list(FILE *f, const edgellm_plan_device *extra, int n_extra)
{
    fprintf(f, "models:\n");
    for (int i = 0; i < edgellm_plan_n_models(); i++) {
        edgellm_plan_model m;
        if (edgellm_plan_model_at(i, &m) != EDGELLM_OK) continue;
        fprintf(f, "  %-16s %5.2f B params, %2d layers, n_embd %4d, %2d/%2d heads, ctx %6d  (%s)\n", m.name,
                m.n_params / 1e9, m.n_layer, m.n_embd, m.n_head, m.n_head_kv, m.n_ctx_train, m.source);
    }
    fprintf(f, "devices:\n");
    for (int i = 0; i < edgellm_plan_n_devices(); i++) {
        edgellm_plan_device d;
        if (edgellm_plan_device_at(i, &d) != EDGELLM_OK) continue;
        print_device_line(f, &d);
    }
    fprintf(f, "  %-16s this machine (measured)\n", "host");
    if (n_extra > 0) fprintf(f, "devices of the device file:\n");
    for (int i = 0; i < n_extra; i++) print_device_line(f, &extra[i]);
}

static void print_report(FILE *f, const edgellm_plan_report *r)
{
    const edgellm_plan_model *m = &r->model;
    const edgellm_plan_device *d = &r->device;
    char params[32];
    if (m->n_params >= 1000000000ull) snprintf(params, sizeof params, "%.2f B", m->n_params / 1e9);
    else snprintf(params, sizeof params, "%.2f M", m->n_params / 1e6);
    char vdim[24] = "";   /* V's head_dim when it differs from K's (attention.value_length) */
    if (m->head_dim_v > 0 && m->head_dim_v != m->head_dim) snprintf(vdim, sizeof vdim, ", V %d", m->head_dim_v);
    fprintf(f, "model   %s (%s): %d layers, n_embd %d, %d heads (%d KV, head_dim %d%s), n_ff %d, vocab %d, %s params%s\n",
            m->name, m->arch, m->n_layer, m->n_embd, m->n_head, m->n_head_kv, m->head_dim, vdim, m->n_ff, m->n_vocab,
            params, m->tied_embeddings ? ", tied embeddings" : "");
    if (m->from_file)
        fprintf(f, "        file: %s%s%s%s, %.2f MiB, trained context %d\n", m->file_label, m->file_kept[0] ? " (" : "",
                m->file_kept, m->file_kept[0] ? ")" : "", m->file_bytes / 1048576.0, m->n_ctx_train);
    if (m->rope_scaling[0])
        fprintf(f, "        rope scaling: %s%s\n", m->rope_unsupported ? "edgellm run refuses this file: " : "",
                m->rope_scaling);
    fprintf(f, "        source: %s\n", m->source);
    if (m->arch[0] && !edgellm_arch_supported(m->arch))   /* plan covers more than run */
        fprintf(f, "        note: edgellm run does not run the %s architecture yet (it runs %s); the figures\n"
                   "        below are for the shape, as another engine (llama.cpp) would run it\n",
                m->arch, edgellm_arch_names());
    if (d->description[0]) fprintf(f, "device  %s: %s\n", d->name, d->description);
    else fprintf(f, "device  %s\n", d->name);
    fprintf(f, "        RAM %.2f GiB, usable %.2f GiB, budget %.2f GiB (%.0f%% safety margin); %.1f GB/s %s (decode reaches "
               "x%.2f); %d big + %d little cores; NPU %s\n",
            d->ram_bytes / GIB, d->usable_bytes / GIB, d->usable_bytes * (1 - r->safety_margin) / GIB,
            r->safety_margin * 100, d->bw_gbps, d->bw_measured ? "measured read" : "peak", r->efficiency,
            d->n_big_cores, d->n_little_cores, d->has_npu ? "yes (edgellm uses the CPU)" : "no");
    fprintf(f, "        source: %s\n", d->source);
    fprintf(f, "context n_ctx %d, KV cache %s, batch %d, first-token prompt %d token%s\n\n", r->n_ctx,
            edgellm_type_name(r->kv_type), r->batch, r->prompt_tokens, r->prompt_tokens == 1 ? "" : "s");

    /* memory in GiB, or MiB for models under 1 GiB (tiny test models) */
    uint64_t largest = 0;
    for (int i = 0; i < r->n_rows; i++) largest = r->rows[i].total_bytes > largest ? r->rows[i].total_bytes : largest;
    const double unit = largest < (1ull << 30) ? 1048576.0 : GIB;
    const char *un = largest < (1ull << 30) ? "MiB" : "GiB";
    fprintf(f, "%-18s %5s %7s %6s %6s %7s %8s  %-12s %7s %7s %7s %6s %6s %7s\n", "precision", "bpw", "weights", "KV",
            "other", "total", "left", "verdict", "max ctx", "decode", "prefill", "TTFT", "dPPL", "KLD");
    fprintf(f, "%-18s %5s %7s %6s %6s %7s %8s  %-12s %7s %7s %7s %6s %6s %7s\n", "", "", un, un, un, un, un, "",
            "tokens", "tok/s", "tok/s", "ms", "%", "");
    int n_orig = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const edgellm_plan_row *w = &r->rows[i];
        char type[40], ppl[16], kld[16], left[24], ctx[16];
        snprintf(type, sizeof type, "%s%s", w->type, w->weight_exact ? " (file)" : w->needs_original ? " *" : "");
        n_orig += w->needs_original;
        fmt_num(ppl, sizeof ppl, w->quality.delta_ppl_pct, 2);
        fmt_num(kld, sizeof kld, w->quality.kld, 4);
        fmt_mem(left, sizeof left, w->left_bytes / unit);
        if (w->max_ctx > 0) snprintf(ctx, sizeof ctx, "%d", w->max_ctx);
        else snprintf(ctx, sizeof ctx, "-");
        fprintf(f, "%-18s %5.2f %7.2f %6.2f %6.2f %7.2f %8s  %-12s %7s %7.1f %7.1f %6.0f %6s %7s\n", type, w->bpw,
                w->weight_bytes / unit, w->kv_bytes / unit, (w->scratch_bytes + w->overhead_bytes) / unit,
                w->total_bytes / unit, left, verdict_text(w->verdict), ctx, w->decode_tps, w->prefill_tps,
                w->ttft_ms, ppl, kld);
    }
    if (n_orig)
        fprintf(f, "* more bits than the file (%s): needs the original weights, not this file; never recommended\n",
                m->file_label);
    fprintf(f, "left = budget - total (negative: over the budget); tight = fits the usable memory only by eating into "
               "the safety margin;\nmax ctx = longest context within the budget ('-': none)\n");
    /* quality sources, grouped */
    fprintf(f, "\nquality (dPPL = perplexity increase, KLD = mean KL divergence vs full precision):\n");
    for (int i = 0; i < r->n_rows; i++) {
        int seen = 0;
        for (int k = 0; k < i; k++) seen |= !strcmp(r->rows[k].quality.source, r->rows[i].quality.source);
        if (seen) continue;
        fprintf(f, "  ");
        for (int k = i, first = 1; k < r->n_rows; k++)
            if (!strcmp(r->rows[k].quality.source, r->rows[i].quality.source)) {
                fprintf(f, "%s%s", first ? "" : ", ", r->rows[k].type);
                first = 0;
            }
        fprintf(f, ": %s\n", r->rows[i].quality.source);
    }

    const char *rt = r->realtime_pick >= 0 ? r->rows[r->realtime_pick].type : "none";
    const char *off = r->offline_pick >= 0 ? r->rows[r->offline_pick].type : "none";
    fprintf(f, "\nrecommendation\n");
    if (r->scenario == EDGELLM_PLAN_OFFLINE) {
        fprintf(f, "  offline    %-8s %s\n", off, r->offline_why);
        fprintf(f, "  real-time  %-8s %s\n", rt, r->realtime_why);
    } else {
        fprintf(f, "  real-time  %-8s %s\n", rt, r->realtime_why);
        fprintf(f, "  offline    %-8s %s\n", off, r->offline_why);
    }
    if (r->advice[0]) fprintf(f, "  advice     %s\n", r->advice);
    if (r->realtime_cmd[0] || r->offline_cmd[0]) {
        fprintf(f, "\ncommands\n");
        if (r->realtime_cmd[0]) fprintf(f, "  real-time  %s\n", r->realtime_cmd);
        if (r->offline_cmd[0] && strcmp(r->offline_cmd, r->realtime_cmd))
            fprintf(f, "  offline    %s\n", r->offline_cmd);
        if (!r->model.from_file)
            fprintf(f, "  (%s-f16.gguf: the model in F16, e.g. from edgellm convert --hf)\n", m->name);
    }
    bool lowmem = false;
    for (int i = 0; i < r->n_rows; i++) lowmem |= r->rows[i].lowmem_budget_bytes > 0;
    if (lowmem) {   /* run --mem-budget for what does not fit */
        fprintf(f, "\nlow-memory mode (run --mem-budget: every layer read again from storage per token, %.3g GB/s: %s)\n",
                r->storage_gbps, r->storage_source);
        for (int i = 0; i < r->n_rows; i++) {
            const edgellm_plan_row *w = &r->rows[i];
            if (!w->lowmem_budget_bytes) continue;
            if (w->lowmem_tps > 0)
                fprintf(f, "  %-11s budget %6.0f MiB  %7.3f tok/s  (%.2f GB read per token; %.2f tok/s in memory)\n",
                        w->type, w->lowmem_budget_bytes / 1048576.0, w->lowmem_tps, w->lowmem_read_bytes / 1e9,
                        w->decode_tps);
            else
                fprintf(f, "  %-11s not possible: needs at least %.0f MiB for the output head and one layer\n", w->type,
                        w->lowmem_budget_bytes / 1048576.0);
        }
        if (r->lowmem_cmd[0]) fprintf(f, "  command    %s\n", r->lowmem_cmd);
    }
    fprintf(f,
            "\nnotes: other = activations, scores, logits and runtime; top-1 agreement is in --json; decode is at n_ctx %d\n"
            "       (context full: faster before);"
            " prefill tok/s = a 512-token prompt (llama-bench pp512), TTFT = the %d-token first-token prompt;\n"
            "       speeds assume %.2f of the bandwidth figure and %.0f GFLOP/s per big core"
            " (x%.2f; docs/planning.md, docs/plan-validation.md);\n       '(file)' = exact bytes of the file,\n"
            "       other rows from per-tensor bits per weight (llama.cpp's Q4_K_M/Q5_K_M mix: Q6_K output, attn_v, ffn_down).\n",
            r->n_ctx, r->prompt_tokens, r->efficiency, d->gflops_big, r->calibration);
    if (r->kv_type != EDGELLM_TYPE_F32)   /* run, bench and eval keep an F32 cache unless told */
        fprintf(f, "       KV cache %s as planned: give run / bench / eval --kv-type %s (their default is F32, "
                   "2-4x the KV bytes)\n", edgellm_type_name(r->kv_type), r->kv_type == EDGELLM_TYPE_F16 ? "f16" : "q8_0");
}

/* Split "phone-high" into two header lines at the first '-'. */
static void header_part(const char *name, int part, char *buf, size_t size)
{
    const char *dash = strchr(name, '-');
    if (!dash) snprintf(buf, size, "%s", part == 0 ? name : "");
    else if (part == 0) snprintf(buf, size, "%.*s", (int)(dash - name), name);
    else snprintf(buf, size, "%s", dash + 1);
}

static void print_matrix(FILE *f, const cli_plan_matrix *mx)
{
    fprintf(f, "Best precision that fits (quality first, usable memory minus 20%%), n_ctx = min(trained, %d), %s KV cache:\n\n",
            mx->n_ctx_cap, edgellm_type_name(mx->kv_type));
    for (int part = 0; part < 2; part++) {
        fprintf(f, "%-15s", part == 0 ? "model" : "");
        for (int d = 0; d < mx->n_devices; d++) {
            char h[48];
            header_part(mx->devices[d], part, h, sizeof h);
            fprintf(f, " %-9.9s", h);
        }
        fputc('\n', f);
    }
    for (int m = 0; m < mx->n_models; m++) {
        fprintf(f, "%-15s", mx->models[m]);
        for (int d = 0; d < mx->n_devices; d++) {
            char c[24];
            snprintf(c, sizeof c, "%s", mx->cell[m][d][0] ? mx->cell[m][d] : "-");
            size_t n = strlen(c);
            if (n > 4 && !strcmp(c + n - 4, "_SYM")) c[n - 4] = 0;    /* I4_G128_SYM -> I4_G128 */
            fprintf(f, " %-9s", c);
        }
        fputc('\n', f);
    }
    fprintf(f, "\n'-' = nothing fits. Candidates: F16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, I4_G128 (edgellm, symmetric).\n");
}

/* Every built-in model × the built-in devices and base's extra ones (a device file's), or
 * with file_only the extra devices alone. */
static int build_matrix(cli_plan_matrix *mx, const edgellm_plan_params *base, bool file_only)
{
    memset(mx, 0, sizeof *mx);
    mx->n_ctx_cap = 4096;
    mx->kv_type = base->kv_type;
    for (int i = 0; i < edgellm_plan_n_models() && mx->n_models < CLI_PLAN_MATRIX_MAX; i++) {
        edgellm_plan_model m;
        if (edgellm_plan_model_at(i, &m) == EDGELLM_OK) snprintf(mx->models[mx->n_models++], 64, "%s", m.name);
    }
    for (int i = 0; !file_only && i < edgellm_plan_n_devices() && mx->n_devices < CLI_PLAN_MATRIX_MAX; i++) {
        edgellm_plan_device d;
        if (edgellm_plan_device_at(i, &d) == EDGELLM_OK) snprintf(mx->devices[mx->n_devices++], 48, "%s", d.name);
    }
    for (int i = 0; i < base->n_extra_devices && mx->n_devices < CLI_PLAN_MATRIX_MAX; i++)
        snprintf(mx->devices[mx->n_devices++], 48, "%s", base->extra_devices[i].name);
    edgellm_plan_report *r = malloc(sizeof *r);
    if (!r) return -1;
    for (int m = 0; m < mx->n_models; m++)
        for (int d = 0; d < mx->n_devices; d++) {
            edgellm_plan_params p = *base;
            p.model = mx->models[m];
            p.shape = NULL;
            p.device = mx->devices[d];
            p.n_ctx = 0;
            p.types = NULL;
            p.quality = NULL;
            p.n_quality = 0;
            if (edgellm_plan(&p, r, NULL) == EDGELLM_OK && r->offline_pick >= 0)
                snprintf(mx->cell[m][d], sizeof mx->cell[m][d], "%s", r->rows[r->offline_pick].type);
        }
    free(r);
    return 0;
}

/* --shape L,E,H,KV,FF,V into an edgellm_plan_model (a cli_parse_fn) */
static int parse_shape(const char *flag, const char *s, void *dst, char *msg, size_t size)
{
    static const char *const names[6] = {"n_layer", "n_embd", "n_head", "n_head_kv", "n_ff", "n_vocab"};
    int v[6];
    const char *p = s;
    for (int i = 0; p && i < 6; i++) {   /* strtoll, not sscanf's %d: an out-of-range value must not wrap */
        char *end = NULL;
        errno = 0;
        const long long x = strtoll(p, &end, 10);
        if (end == p || *end != (i < 5 ? ',' : '\0')) { p = NULL; break; }
        if (errno == ERANGE || x < INT_MIN || x > INT_MAX) {
            snprintf(msg, size, "%s: %s = %.*s is out of range", flag, names[i], (int)(end - p), p);
            return 1;
        }
        v[i] = (int)x;
        p = end + (i < 5);
    }
    if (!p) {
        snprintf(msg, size, "%s expects n_layer,n_embd,n_head,n_head_kv,n_ff,n_vocab (six integers), got '%s'", flag, s);
        return 1;
    }
    edgellm_error err = {0};
    if (edgellm_plan_model_from_shape(v[0], v[1], v[2], v[3], v[4], v[5], dst, &err) != EDGELLM_OK) {
        snprintf(msg, size, "%.250s", err.msg);
        return 1;
    }
    return 0;
}

static int exit_code(edgellm_status s)
{
    return s == EDGELLM_ERR_NOT_FOUND || s == EDGELLM_ERR_MISUSE ? 2 : 1;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---------------------------------------------------------------- --validate ---- */

/* One published measurement (a line of data/plan-validation.csv). */
typedef struct {
    char id[24], role[16], device[48], model[96], precision[24], runtime[48], kernel[16], source[200], note[400];
    int threads, n_ctx;
    int pp_in_scope;          /* 1: the published prompt kernels are of the class plan models */
    double pp, tg;            /* published tok/s; NaN: not published */
} val_row;

/* Next CSV field of *s (double quotes allow commas; "" is a quote); NULL at the end. */
static char *csv_field(char **s)
{
    char *p = *s, *out, *start;
    if (!p) return NULL;
    if (*p == '"') {
        start = out = ++p;
        for (;;) {
            if (!*p) break;
            if (*p == '"' && p[1] == '"') { *out++ = '"'; p += 2; continue; }
            if (*p == '"') { p++; break; }
            *out++ = *p++;
        }
        *out = 0;
        while (*p && *p != ',') p++;
    } else {
        start = p;
        while (*p && *p != ',') p++;
    }
    if (*p == ',') { *p = 0; *s = p + 1; }
    else { if (*p) *p = 0; *s = NULL; }
    return start;
}

static double csv_num(const char *f)
{
    if (!f || !*f) return NAN;
    char *end;
    double v = strtod(f, &end);
    return end != f && *end == 0 && v > 0 && isfinite(v) ? v : -1;
}

/* Read the table: header line, then id,role,device,model,precision,threads,n_ctx,pp_tps,
 * tg_tps,runtime,kernel,source,note. kernel is the class of prompt (matrix-matrix) kernels the
 * published run used: "neon" (ARM NEON kernels without i8mm, per-row dot products or a tiled
 * GEMM: the class plan's ARM figures are derived from), "x86-gemm" (a tiled GEMM on x86, the
 * class of edgellm's kernels behind the x86 figures), "x86-vecdot" (x86 llama.cpp with one
 * row-by-column dot at a time: before its tiled GEMM, or a type the tiled GEMM does not
 * cover), "i8mm" (ARM SMMLA kernels, which edgellm does not have), "f16-gemm" (a tiled
 * F16/F32 GEMM, where edgellm runs a float dot per row and token) or "edgellm-scalar" (SIMD
 * kernels for a type edgellm runs with its scalar reference dot). Prefill points of the first
 * two classes count towards the target, the others on their own line; decode is compared for
 * every row. A line with more than 13 fields (a note with an unquoted comma) is refused.
 * Returns the row count or -1 (message printed). */
static int read_validation(const char *path, val_row **out)
{
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "edgellm plan: %s: %s\n", path, strerror(errno)); return -1; }
    char line[2048];
    int n = 0, cap = 0, lineno = 0, bad = 0;
    val_row *rows = NULL;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (lineno == 1 || !line[0] || line[0] == '#') continue;
        char *s = line, *fld[13];
        int k = 0;
        while (k < 13 && (fld[k] = csv_field(&s)) != NULL) k++;
        if (k < 11 || s) {
            fprintf(stderr, "edgellm plan: %s:%d: expected 13 fields, got %s%d (quote a field with a comma)\n", path,
                    lineno, s ? "more than " : "", k);
            bad = 1;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            val_row *nr = realloc(rows, (size_t)cap * sizeof *rows);
            if (!nr) { bad = 1; break; }
            rows = nr;
        }
        val_row *r = &rows[n];
        memset(r, 0, sizeof *r);
        snprintf(r->id, sizeof r->id, "%s", fld[0]);
        snprintf(r->role, sizeof r->role, "%s", fld[1]);
        snprintf(r->device, sizeof r->device, "%s", fld[2]);
        snprintf(r->model, sizeof r->model, "%s", fld[3]);
        snprintf(r->precision, sizeof r->precision, "%s", fld[4]);
        r->threads = atoi(fld[5]);
        r->n_ctx = atoi(fld[6]);
        r->pp = csv_num(fld[7]);
        r->tg = csv_num(fld[8]);
        snprintf(r->runtime, sizeof r->runtime, "%s", fld[9]);
        snprintf(r->kernel, sizeof r->kernel, "%s", fld[10]);
        r->pp_in_scope = !strcmp(r->kernel, "neon") || !strcmp(r->kernel, "x86-gemm");
        if (k > 11) snprintf(r->source, sizeof r->source, "%s", fld[11]);
        if (k > 12) snprintf(r->note, sizeof r->note, "%s", fld[12]);
        if (!r->pp_in_scope && strcmp(r->kernel, "x86-vecdot") && strcmp(r->kernel, "i8mm") &&
            strcmp(r->kernel, "f16-gemm") && strcmp(r->kernel, "edgellm-scalar")) {
            fprintf(stderr, "edgellm plan: %s:%d: kernel must be neon, x86-gemm, x86-vecdot, i8mm, f16-gemm or "
                            "edgellm-scalar\n", path, lineno);
            bad = 1;
            break;
        }
        if (r->threads < 1 || r->n_ctx < 1 || r->pp < 0 || r->tg < 0 || (isnan(r->pp) && isnan(r->tg)) ||
            (strcmp(r->role, "held-out") && strcmp(r->role, "calibration") && strcmp(r->role, "pp-calibration") &&
             strcmp(r->role, "tg-calibration"))) {
            fprintf(stderr, "edgellm plan: %s:%d: threads and n_ctx must be >= 1, pp/tg a number > 0 (one of them "
                            "at least), role held-out, calibration, pp-calibration or tg-calibration\n", path, lineno);
            bad = 1;
            break;
        }
        n++;
    }
    fclose(f);
    if (bad) { free(rows); return -1; }
    *out = rows;
    return n;
}

/* Plan one row: the device limited to the row's threads (big cores first), the model by
 * name or "shape:L,E,H,KV,FF,V", the precision as an extra candidate. */
static int validate_row(const val_row *v, const edgellm_plan_params *base, double *pp, double *tg, char *msg,
                        size_t size)
{
    edgellm_error err = {0};
    edgellm_plan_device d;
    int found = 0;
    for (int i = 0; i < base->n_extra_devices && !found; i++)
        if (!strcasecmp(base->extra_devices[i].name, v->device)) { d = base->extra_devices[i]; found = 1; }
    if (!found && edgellm_plan_find_device(v->device, &d, &err) != EDGELLM_OK) {
        snprintf(msg, size, "%.250s", err.msg);
        return -1;
    }
    const int big = d.n_big_cores;
    d.n_big_cores = v->threads < big ? v->threads : big;
    d.n_little_cores = v->threads <= big                        ? 0
                       : v->threads - big < d.n_little_cores ? v->threads - big
                                                              : d.n_little_cores;
    edgellm_plan_params p = edgellm_plan_default_params();
    edgellm_plan_model shape;
    if (!strncmp(v->model, "shape:", 6)) {
        char buf[128];
        if (parse_shape("shape", v->model + 6, &shape, buf, sizeof buf)) { snprintf(msg, size, "%s", buf); return -1; }
        p.shape = &shape;
    } else {
        p.model = v->model;
    }
    p.device = d.name;
    p.extra_devices = &d;
    p.n_extra_devices = 1;
    p.n_ctx = v->n_ctx;
    p.prompt_tokens = 1;
    p.types = v->precision;
    edgellm_plan_report *r = malloc(sizeof *r);
    if (!r) { snprintf(msg, size, "out of memory"); return -1; }
    int rc = -1;
    if (edgellm_plan(&p, r, &err) != EDGELLM_OK) {
        snprintf(msg, size, "%.250s", err.msg);
    } else {
        for (int i = 0; i < r->n_rows; i++)
            if (!strcasecmp(r->rows[i].type, v->precision)) {
                *pp = r->rows[i].prefill_tps;
                *tg = r->rows[i].decode_tps;
                rc = 0;
            }
        if (rc) snprintf(msg, size, "no row %s in the plan", v->precision);
    }
    free(r);
    return rc;
}

/* The validation table (markdown) and its summary: the targets (decode within +-30 %,
 * prefill within +-50 %, each for at least 80 % of the held-out points; prefill only over the
 * rows whose kernel is "neon" or "x86-gemm", the others counted on their own line) and the misses with
 * their explanations. 0 when every point outside the targets is explained (its note starts
 * "miss:") and every explained one is still outside; 1 otherwise; 2 on a bad table or a row
 * plan refuses. */
static int run_validation(const char *path, const edgellm_plan_params *base)
{
    val_row *rows = NULL;
    const int n = read_validation(path, &rows);
    if (n < 0) return 2;
    printf("| id | device | model | quant | threads | runtime | kernel | pp published | pp plan | ratio | tg published | "
           "tg plan | ratio | role | source |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int tg_n[2] = {0, 0}, tg_ok[2] = {0, 0}, pp_n[2] = {0, 0}, pp_ok[2] = {0, 0}, failed = 0;
    int px_n[2] = {0, 0}, px_ok[2] = {0, 0};   /* prefill points of other kernel classes */
    double tg_err_sum[2] = {0, 0}, pp_err_sum[2] = {0, 0};
    int unexplained = 0;
    for (int i = 0; i < n; i++) {
        const val_row *v = &rows[i];
        double pp = NAN, tg = NAN;
        char msg[300] = "";
        if (validate_row(v, base, &pp, &tg, msg, sizeof msg) != 0) {
            fprintf(stderr, "edgellm plan: %s row %s: %s\n", path, v->id, msg);
            failed = 1;
            continue;
        }
        /* held out: not used to set any figure of the device; pp-/tg-calibration: only that
         * figure was */
        const int hp = !strcmp(v->role, "held-out") || !strcmp(v->role, "tg-calibration");
        const int ht = !strcmp(v->role, "held-out") || !strcmp(v->role, "pp-calibration");
        char cpp[3][24], ctg[3][24];
        snprintf(cpp[0], 24, "-"); snprintf(cpp[1], 24, "%.1f", pp); snprintf(cpp[2], 24, "-");
        snprintf(ctg[0], 24, "-"); snprintf(ctg[1], 24, "%.1f", tg); snprintf(ctg[2], 24, "-");
        if (!isnan(v->pp)) {
            const double ratio = pp / v->pp;
            const int ok = ratio >= 0.5 && ratio <= 1.5;
            snprintf(cpp[0], 24, "%.2f", v->pp);
            snprintf(cpp[2], 24, ok ? "%.2f" : "**%.2f**", ratio);
            if (v->pp_in_scope) { pp_n[hp]++; pp_ok[hp] += ok; pp_err_sum[hp] += fabs(log(ratio)); }
            else { px_n[hp]++; px_ok[hp] += ok; }
        } else snprintf(cpp[1], 24, "(%.1f)", pp);
        if (!isnan(v->tg)) {
            const double ratio = tg / v->tg;
            const int ok = ratio >= 0.7 && ratio <= 1.3;
            snprintf(ctg[0], 24, "%.2f", v->tg);
            snprintf(ctg[2], 24, ok ? "%.2f" : "**%.2f**", ratio);
            tg_n[ht]++; tg_ok[ht] += ok; tg_err_sum[ht] += fabs(log(ratio));
        } else snprintf(ctg[1], 24, "(%.1f)", tg);
        /* a row whose note starts "miss:" explains why it is outside the targets: the
         * explanation must still be needed, and every miss must have one */
        const int pp_miss = !isnan(v->pp) && !(pp / v->pp >= 0.5 && pp / v->pp <= 1.5);
        const int tg_miss = !isnan(v->tg) && !(tg / v->tg >= 0.7 && tg / v->tg <= 1.3);
        const int explained = !strncmp(v->note, "miss:", 5);
        if ((pp_miss || tg_miss) && !explained) {
            fprintf(stderr, "edgellm plan: %s row %s: outside the targets without an explanation "
                            "(note \"miss: ...\")\n", path, v->id);
            unexplained++;
        } else if (!pp_miss && !tg_miss && explained) {
            fprintf(stderr, "edgellm plan: %s row %s: explained as a miss but within the targets now\n", path, v->id);
            unexplained++;
        }
        printf("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v->id, v->device,
               v->model, v->precision, v->threads, v->runtime, v->kernel, cpp[0], cpp[1], cpp[2], ctg[0], ctg[1], ctg[2],
               v->role, v->source);
    }
    printf("\nRatio = plan / published; bold = outside the target (decode +-30 %%, prefill +-50 %%); values in "
           "parentheses were not published.\n\n");
    static const char *const who[2] = {"calibration points", "held-out points"};
    for (int h = 1; h >= 0; h--)
        printf("%s: decode %d of %d within +-30 %% (geometric mean error %.0f %%), prefill %d of %d within +-50 %% "
               "(geometric mean error %.0f %%)\n",
               who[h], tg_ok[h], tg_n[h], tg_n[h] ? 100 * (exp(tg_err_sum[h] / tg_n[h]) - 1) : 0.0, pp_ok[h], pp_n[h],
               pp_n[h] ? 100 * (exp(pp_err_sum[h] / pp_n[h]) - 1) : 0.0);
    const int tg_all = tg_n[0] + tg_n[1], pp_all = pp_n[0] + pp_n[1];
    printf("all rows: decode %d of %d, prefill %d of %d (kernel classes plan models; %d of %d with the others) "
           "within the targets\n", tg_ok[0] + tg_ok[1], tg_all, pp_ok[0] + pp_ok[1], pp_all,
           pp_ok[0] + pp_ok[1] + px_ok[0] + px_ok[1], pp_all + px_n[0] + px_n[1]);
    printf("prefill of runs with other prompt kernels (x86-vecdot, i8mm, f16-gemm, edgellm-scalar; not counted "
           "above): held-out %d of %d, calibration %d of %d within +-50 %%\n", px_ok[1], px_n[1], px_ok[0], px_n[0]);
    printf("prefill of every held-out point, whatever its kernel: %d of %d within +-50 %%\n", pp_ok[1] + px_ok[1],
           pp_n[1] + px_n[1]);
    const int tg_met = 5 * tg_ok[1] >= 4 * tg_n[1], pp_met = 5 * pp_ok[1] >= 4 * pp_n[1];
    printf("targets (at least 80 %% of the held-out points within): decode %s, prefill %s\n",
           !tg_n[1] ? "no held-out points" : tg_met ? "met" : "NOT met",
           !pp_n[1] ? "no held-out points" : pp_met ? "met" : "NOT met");
    printf("\nmisses and why:\n");
    for (int i = 0; i < n; i++)
        if (!strncmp(rows[i].note, "miss:", 5))
            printf("- %s: %s\n", rows[i].id, rows[i].note + 5 + (rows[i].note[5] == ' '));
    free(rows);
    if (failed) return 2;
    return unexplained ? 1 : 0;
}

static const cli_choice scenarios[] = {{"realtime", EDGELLM_PLAN_REALTIME}, {"offline", EDGELLM_PLAN_OFFLINE}, {NULL, 0}};

int cmd_plan(int argc, char **argv)
{
    edgellm_plan_params p = edgellm_plan_default_params();
    edgellm_plan_model shape;
    const char *device_file = NULL, *eval_file = NULL, *model_arg = NULL, *validate_file = NULL, *explain_type = NULL;
    int json = 0, list = 0, have_model = 0, have_device = 0, file_device = 0, rc = 0, n_shape = 0;
    edgellm_plan_device *extra = NULL;
    edgellm_plan_quality *quality = NULL;
    edgellm_plan_report *report = NULL;
    cli_plan_matrix *mx = NULL;
    const cli_opt model_file = {CLI_STRING(NULL, NULL, "FILE.gguf", &model_arg),
                                .help = "a model file, as --model FILE.gguf"};
    const cli_opt opts[] = {
        {CLI_STRING("-m", "--model", "NAME|FILE", &p.model),
         .help = "catalogue model (see --list) or a GGUF file (metadata only is read)"},
        {CLI_CUSTOM(NULL, "--shape", "L,E,H,KV,FF,V", &shape, parse_shape), .count = &n_shape,
         .help = "n_layer,n_embd,n_head,n_head_kv,n_ff,n_vocab of a llama-style model"},
        {CLI_STRING("-d", "--device", "NAME", &p.device),
         .help = "catalogue device, 'host' (measures this machine, ~1 s), a name from --device-file, or a device "
                 "JSON file"},
        {CLI_PATH(NULL, "--device-file", "FILE", &device_file),
         .help = "add devices from a JSON file: {\"devices\": [{\"name\": ..., \"ram_gib\": N, \"bandwidth_gbps\": N, "
                 "\"big_cores\": N}]} required; optional usable_gib, little_cores, gflops_per_big_core, "
                 "gflops_per_little_core, npu, description, source (README \"A device of your own\")"},
        {CLI_INT("-c", "--ctx", "N", &p.n_ctx, 1, 1 << 24), .help = "context length",
         .def = "the model's, at most 4096"},
        {CLI_OPT_KV_TYPE(&p.kv_type)},
        {CLI_INT("-b", "--batch", "N", &p.batch, 1, 1024), .help = "sequences decoded together", .show_default = 1},
        {CLI_ENUM(NULL, "--scenario", "S", &p.scenario, scenarios), .show_default = 1,
         .help = "realtime or offline: which recommendation comes first"},
        {CLI_DOUBLE(NULL, "--latency-ms", "MS", &p.latency_ms, 0, INFINITY, CLI_OPEN_MIN), .show_default = 1,
         .help = "real-time budget for the first token"},
        {CLI_INT(NULL, "--prompt", "N", &p.prompt_tokens, 1, 1 << 24),
         .help = "prompt tokens behind the first-token time, at most the context",
         .def = "64, or the context when smaller"},
        {CLI_STRING(NULL, "--types", "LIST", &p.types), .help = "extra precisions, e.g. q5_0,q4_k,i4_g64,i8_g128_asym"},
        {CLI_PATH(NULL, "--eval", "FILE", &eval_file), .help = "quality results of edgellm eval",
         .def = "MODEL.eval.json"},
        {CLI_DOUBLE(NULL, "--calibration", "X", &p.calibration, 0, INFINITY, CLI_OPEN_MIN), .show_default = 1,
         .help = "multiply predicted speeds by X"},
        {CLI_FLAG(NULL, "--json", &json, 1), .help = "JSON output (docs/plan.schema.json)"},
        {CLI_FLAG(NULL, "--list", &list, 1), .help = "list catalogue models and devices"},
        {CLI_STRING(NULL, "--explain", "TYPE", &explain_type),
         .help = "print the arithmetic of one row (bytes per token, bandwidth, efficiency, FLOPs, cost weights, "
                 "margin); 'pick' for the recommended one"},
        {CLI_PATH(NULL, "--validate", "FILE.csv", &validate_file),
         .help = "compare plan's speeds with published measurements (data/plan-validation.csv; devices not in the "
                 "catalogue from --device-file): a markdown table and the error per row; exit 1 when the targets "
                 "miss without an explanation"},
    };
    const cli_command cmd = {
        .name = "plan",
        .synopsis = "edgellm plan [--model NAME|FILE.gguf | --shape L,E,H,KV,FF,V] [--device NAME|host|FILE.json]\n"
                    "             [--device-file FILE] [--ctx N] [--kv-type f16|q8_0|f32] [--batch N]\n"
                    "             [--scenario realtime|offline] [--latency-ms MS] [--prompt N] [--types LIST]\n"
                    "             [--eval FILE] [--calibration X] [--explain TYPE|pick] [--json] [--list]\n"
                    "             [--validate FILE.csv]",
        .about = "Will the model fit on the device, at which precision, and how fast will it run? For each\n"
                 "precision: weights, KV cache, scratch, total against the memory an app may use minus a 20%\n"
                 "safety margin, a verdict, the largest context that fits, predicted decode/prefill speed and\n"
                 "the quality cost; then a recommendation for real-time and offline use.\n"
                 "With no model and no device (or only --device-file): a models x devices matrix, then one\n"
                 "detailed plan.",
        .notes = "Units: GiB = 2^30 bytes (memory), GB/s = 1e9 bytes/s (bandwidth).",
        .opts = opts, .n_opts = CLI_N_OPTS(opts), .positional = &model_file,
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (model_arg && p.model)
        return cli_args_error(&cmd, "unexpected argument '%s' (the model is --model %s)", model_arg, p.model);
    if (n_shape && model_arg) return cli_args_error(&cmd, "give a model (%s) or --shape, not both", model_arg);
    if (n_shape && p.model) return cli_args_error(&cmd, "give --model or --shape, not both");
    if (model_arg) p.model = model_arg;   /* `edgellm plan model.gguf` */
    if (n_shape) p.shape = &shape;
    have_model = p.model || p.shape;
    have_device = p.device != NULL;
    edgellm_error err = {0};
    /* user devices: --device-file, or --device FILE.json */
    /* --device FILE: a name ending in .json, or any existing file that is not a catalogue
     * device's name; the same file twice (--device F --device-file F) is one */
    if (p.device && (!device_file || edgellm_path_same_file(p.device, device_file))) {
        const size_t n = strlen(p.device);
        struct stat ds;
        edgellm_plan_device known;
        const bool json_name = n > 5 && !strcasecmp(p.device + n - 5, ".json");
        const bool a_file = stat(p.device, &ds) == 0 && S_ISREG(ds.st_mode) && strcmp(p.device, "host") &&
                            edgellm_plan_find_device(p.device, &known, NULL) != EDGELLM_OK;
        if (json_name || a_file) device_file = p.device, p.device = NULL;
    }
    if (device_file) {
        int n = 0;
        if (cli_plan_read_devices(device_file, &extra, &n, &err) != EDGELLM_OK) {
            cli_print_error("plan", &err);
            rc = 1;
            goto out;
        }
        p.extra_devices = extra;
        p.n_extra_devices = n;
        if (!p.device) {   /* no model either: the matrix of the file's devices, below */
            p.device = extra[0].name;
            have_device = 1;
            file_device = 1;
            if (n > 1 && have_model)
                fprintf(stderr, "edgellm plan: note: %s holds %d devices; planning for the first, '%s' (choose with "
                                "--device-file %s --device NAME)\n", device_file, n, extra[0].name, device_file);
        }
    }
    if (validate_file) {
        rc = run_validation(validate_file, &p);
        goto out;
    }
    if (list) {   /* the catalogues and a device file's devices; with --json as JSON */
        if (json) cli_plan_write_list_json(stdout, extra, p.n_extra_devices);
        else print_list(stdout, extra, p.n_extra_devices);
        goto out;
    }
    /* quality results: --eval FILE, or MODEL.eval.json next to a model file */
    char auto_eval[4096];
    if (!eval_file && p.model && !p.shape) {
        size_t n = strlen(p.model);
        if (n > 5 && !strcasecmp(p.model + n - 5, ".gguf") && n < sizeof auto_eval - 16) {
            snprintf(auto_eval, sizeof auto_eval, "%.*s.eval.json", (int)(n - 5), p.model);
            if (file_exists(auto_eval)) eval_file = auto_eval;
        }
    }
    if (eval_file) {
        int n = 0;
        cli_plan_eval_meta meta;
        if (cli_plan_read_eval(eval_file, &quality, &n, &meta, &err) == EDGELLM_OK) {
            /* the results must be for the model being planned */
            edgellm_plan_model pm;
            const char *mname = p.model ? p.model : (!have_model && !have_device) ? DEFAULT_MODEL : "llama-3.2-3b";
            int known = p.shape ? (pm = *p.shape, 1)
                        : edgellm_plan_find_model(mname, &pm, NULL) == EDGELLM_OK ||
                          edgellm_plan_model_from_gguf(mname, &pm, NULL) == EDGELLM_OK;
            char why[400] = "";
            int match = known ? cli_plan_eval_matches(&meta, &pm, why, sizeof why) : -1;
            if (match == 0 && eval_file != auto_eval) {
                fprintf(stderr, "edgellm plan: %s: %s\n", eval_file, why);
                rc = 1;
                goto out;
            }
            if (match == 0) {
                fprintf(stderr, "edgellm plan: warning: %s: %s (ignored; using published quality figures)\n",
                        eval_file, why);
            } else {
                if (match < 0 && why[0]) fprintf(stderr, "edgellm plan: warning: %s: %s\n", eval_file, why);
                p.quality = quality;
                p.n_quality = n;
            }
        } else if (eval_file == auto_eval) {   /* found next to the model: warn, use published figures */
            fprintf(stderr, "edgellm plan: warning: %s (using published quality figures)\n", err.msg);
            memset(&err, 0, sizeof err);
        } else {
            cli_print_error("plan", &err);
            rc = 1;
            goto out;
        }
    }

    /* no model and no device, or only a device file: a matrix of every built-in model, then
     * one detailed plan */
    if (!have_model && (!have_device || file_device)) {
        mx = malloc(sizeof *mx);
        if (!mx || build_matrix(mx, &p, file_device) != 0) {
            fprintf(stderr, "edgellm plan: out of memory\n");
            rc = 1;
            goto out;
        }
        p.model = DEFAULT_MODEL;
        if (!file_device) p.device = DEFAULT_DEVICE;
    }
    if (explain_type) p.explain = strcasecmp(explain_type, "pick") ? explain_type : "";
    report = malloc(sizeof *report);
    if (!report) { fprintf(stderr, "edgellm plan: out of memory\n"); rc = 1; goto out; }
    if (p.device && !strcmp(p.device, "host") && isatty(STDERR_FILENO))
        fprintf(stderr, "measuring this machine's memory bandwidth (~1 s)...\n");
    edgellm_status st = edgellm_plan(&p, report, &err);
    if (st != EDGELLM_OK) {
        cli_print_error("plan", &err);
        rc = exit_code(st);
        goto out;
    }
    if (report->model.n_ctx_train > 0 && report->n_ctx > report->model.n_ctx_train)
        fprintf(stderr, "edgellm plan: note: n_ctx %d is beyond %s's trained context (%d): quality past it is not "
                "what the model was trained for\n", report->n_ctx, report->model.name, report->model.n_ctx_train);
    if (json) {
        cli_plan_write_json(stdout, report, mx);
    } else {
        if (mx) {
            print_matrix(stdout, mx);
            if (file_device)
                printf("\nDetailed plan for %s on %s (edgellm plan --model %s --device-file %s --device %s):\n\n",
                       DEFAULT_MODEL, p.device, DEFAULT_MODEL, device_file, p.device);
            else
                printf("\nDetailed plan for %s on %s (edgellm plan --model %s --device %s):\n\n", DEFAULT_MODEL,
                       DEFAULT_DEVICE, DEFAULT_MODEL, DEFAULT_DEVICE);
        }
        print_report(stdout, report);
        if (report->explanation[0]) printf("\nexplain %s", report->explanation);
    }
out:
    free(extra);
    free(quality);
    free(report);
    free(mx);
    return rc;
}
