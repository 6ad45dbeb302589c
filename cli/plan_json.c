/*
 * plan_json.c — the JSON side of `edgellm plan` (CLI only; the core library has no JSON
 * dependency):
 *   - reading a user's device file and `edgellm eval` results with cJSON (Debian package
 *     libcjson-dev; CMake defines EDGELLM_HAVE_CJSON when it finds it — without it these
 *     readers report that the build cannot read JSON);
 *   - writing the plan report as JSON, by hand (no library needed), to the shape of
 *     docs/plan.schema.json. Unknown numbers (NaN) are written as null; byte counts are
 *     integers; units are in the key names (_bytes, _gbps, _tps, _ms, _pct).
 *
 * Device file example:
 *   {"devices": [{"name": "my-board", "description": "RK3588 board, 16 GB",
 *                 "ram_gib": 16, "usable_gib": 14, "bandwidth_gbps": 19.2,
 *                 "bandwidth_measured": false, "big_cores": 4, "little_cores": 4,
 *                 "gflops_per_big_core": 25, "gflops_per_little_core": 5, "npu": true,
 *                 "source": "vendor datasheet"}]}
 *
 * Eval results (edgellm eval writes MODEL.eval.json next to MODEL.gguf; plan reads it when
 * planning that file, or from --eval FILE):
 *   {"format": "edgellm-eval-results", "version": 1, "model": "m.gguf", "reference": "m.gguf",
 *    "text": "val.txt", "n_ctx": 256,
 *    "results": [{"type": "Q4_K_M", "size_bytes": 123, "bpw": 4.89, "ppl": 6.41,
 *                 "delta_ppl_pct": 2.8, "kld_mean": 0.031, "top1_pct": 91.9}]}
 */
#include "plan_json.h"
#include "commands.h"   /* cli_json_str */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

int cli_plan_json_available(void)
{
#ifdef EDGELLM_HAVE_CJSON
    return 1;
#else
    return 0;
#endif
}

static edgellm_status set_err(edgellm_error *err, edgellm_status code, const char *fmt, const char *a, const char *b)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, fmt, a, b);
    }
    return code;
}

#ifdef EDGELLM_HAVE_CJSON
static cJSON *parse_file(const char *path, edgellm_error *err, edgellm_status *rc)
{
    FILE *f = fopen(path, "rb");
    if (!f) { *rc = set_err(err, EDGELLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    char *buf = NULL;
    size_t len = 0, cap = 0, r;
    char tmp[65536];
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (len + r + 1 > cap) {
            cap = (len + r + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); *rc = set_err(err, EDGELLM_ERR_NOMEM, "%s: %s", path, "out of memory"); return NULL; }
            buf = nb;
        }
        memcpy(buf + len, tmp, r);
        len += r;
        if (len > ((size_t)16 << 20)) break;
    }
    fclose(f);
    if (!buf) { *rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, "empty file"); return NULL; }
    buf[len] = 0;
    cJSON *root = cJSON_ParseWithLength(buf, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= buf && at <= buf + len ? (size_t)(at - buf) : 0;
        int line = 1;
        for (size_t i = 0; i < off; i++) line += buf[i] == '\n';
        if (err) {
            err->code = EDGELLM_ERR_FORMAT;
            snprintf(err->msg, sizeof err->msg, "%s: not valid JSON (near line %d)", path, line);
        }
        *rc = EDGELLM_ERR_FORMAT;
    }
    free(buf);
    return root;
}

static int get_num(const cJSON *o, const char *key, double *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) return 0;
    if (!cJSON_IsNumber(it)) return -1;
    *v = it->valuedouble;
    return 1;
}

static void get_str(const cJSON *o, const char *key, char *buf, size_t size)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (it && cJSON_IsString(it) && it->valuestring) snprintf(buf, size, "%s", it->valuestring);
}
#endif

edgellm_status cli_plan_read_devices(const char *path, edgellm_plan_device **out, int *n, edgellm_error *err)
{
    *out = NULL;
    *n = 0;
#ifndef EDGELLM_HAVE_CJSON
    return set_err(err, EDGELLM_ERR_UNSUPPORTED, "%s: %s", path,
                   "this build cannot read JSON (install libcjson-dev and reconfigure)");
#else
    edgellm_status rc = EDGELLM_OK;
    cJSON *root = parse_file(path, err, &rc);
    if (!root) return rc;
    const cJSON *list = root;
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "devices"))
        list = cJSON_GetObjectItemCaseSensitive(root, "devices");
    int count = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : cJSON_IsObject(list) ? 1 : 0;
    edgellm_plan_device *devs = count > 0 ? calloc((size_t)count, sizeof *devs) : NULL;
    if (count <= 0) {
        rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, "no devices (expected {\"devices\": [{...}]})");
        goto done;
    }
    if (!devs) { rc = set_err(err, EDGELLM_ERR_NOMEM, "%s: %s", path, "out of memory"); goto done; }
    for (int i = 0; i < count; i++) {
        const cJSON *o = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, i) : list;
        edgellm_plan_device *d = &devs[i];
        char where[64], what[400] = "";
        snprintf(where, sizeof where, "devices[%d]", i);
        if (!cJSON_IsObject(o)) { snprintf(what, sizeof what, "%s is not an object", where); goto bad; }
        /* every key known and of its type: a misspelt "usable_gb" would otherwise fall back
         * to a default without a word */
        enum { K_STR, K_NUM, K_BOOL };
        static const struct { const char *key; int kind; } keys[] = {
            {"name", K_STR}, {"description", K_STR}, {"source", K_STR}, {"ram_gib", K_NUM}, {"usable_gib", K_NUM},
            {"bandwidth_gbps", K_NUM}, {"bandwidth_measured", K_BOOL}, {"big_cores", K_NUM}, {"little_cores", K_NUM},
            {"gflops_per_big_core", K_NUM}, {"gflops_per_little_core", K_NUM}, {"npu", K_BOOL},
            {"decode_efficiency", K_NUM}, {"isa", K_STR},
        };
        const size_t n_keys = sizeof keys / sizeof keys[0];
        for (const cJSON *kv = o->child; kv; kv = kv->next) {
            size_t k = 0;
            while (k < n_keys && strcmp(kv->string, keys[k].key)) k++;
            if (k == n_keys) {
                int w = snprintf(what, sizeof what, "%s: unknown key \"%.40s\" (known:", where, kv->string);
                for (size_t j = 0; j < n_keys && w > 0 && (size_t)w < sizeof what; j++)
                    w += snprintf(what + w, sizeof what - (size_t)w, "%s %s", j ? "," : "", keys[j].key);
                if (w > 0 && (size_t)w < sizeof what) snprintf(what + w, sizeof what - (size_t)w, ")");
                goto bad;
            }
            const int kind = keys[k].kind;
            if (!(kind == K_STR ? cJSON_IsString(kv) : kind == K_NUM ? cJSON_IsNumber(kv) : cJSON_IsBool(kv))) {
                snprintf(what, sizeof what, "%s: \"%.40s\" must be %s", where, kv->string,
                         kind == K_STR ? "a string" : kind == K_NUM ? "a number" : "true or false");
                goto bad;
            }
        }
        get_str(o, "name", d->name, sizeof d->name);
        if (!d->name[0]) { snprintf(what, sizeof what, "%s: \"name\" (a string) is required", where); goto bad; }
        if (!strcasecmp(d->name, "host")) { snprintf(what, sizeof what, "%s: the name \"host\" is reserved", where); goto bad; }
        for (int k = 0; k < i; k++)   /* names are looked up ignoring case: two would shadow */
            if (!strcasecmp(devs[k].name, d->name)) {
                snprintf(what, sizeof what, "%s: the name '%.40s' is also devices[%d]'s", where, d->name, k);
                goto bad;
            }
        snprintf(where, sizeof where, "device '%.40s'", d->name);
        get_str(o, "description", d->description, sizeof d->description);
        get_str(o, "source", d->source, sizeof d->source);
        if (!d->source[0]) snprintf(d->source, sizeof d->source, "device file %.200s", path);
        double ram = 0, usable = -1, bw = 0, big = 0, little = 0, gb = 25.0, gl = 5.0;
        static const char *const required[] = {"ram_gib", "bandwidth_gbps", "big_cores"};
        double *req_v[] = {&ram, &bw, &big};
        for (int k = 0; k < 3; k++) {
            const int got = get_num(o, required[k], req_v[k]);
            if (got != 1 || !(*req_v[k] > 0)) {
                snprintf(what, sizeof what, got == 0 ? "%s: \"%s\" is missing (a number > 0; see edgellm plan --help)"
                                                     : "%s: \"%s\" must be a number > 0",
                         where, required[k]);
                goto bad;
            }
        }
        const int has_usable = get_num(o, "usable_gib", &usable);
        if (has_usable < 0 || get_num(o, "little_cores", &little) < 0 ||
            get_num(o, "gflops_per_big_core", &gb) < 0 || get_num(o, "gflops_per_little_core", &gl) < 0) {
            snprintf(what, sizeof what, "%s: usable_gib, little_cores and gflops_* must be numbers", where);
            goto bad;
        }
        if (!has_usable) usable = ram / 2;
        /* plausible ranges, so every figure below stays finite and printable: ram_gib <= 2^20
         * (1 PiB; the byte counts must fit uint64: 1e300 GiB was UB) and >= 1 MiB; bandwidth
         * 0.01 GB/s .. 100 TB/s; GFLOP/s per core up to 10^6 (1e-300 printed a 300-digit
         * TTFT; 1e400 parses as inf) */
        const char *why = !(ram >= 0.001 && ram <= 1048576.0) ? "ram_gib must be in 0.001..1048576"
                          : !(usable > 0 && usable <= ram)  ? "usable_gib must be > 0 and at most ram_gib"
                          : !(bw >= 0.01 && bw <= 100000.0)  ? "bandwidth_gbps must be in 0.01..100000"
                          : big > 1024                       ? "big_cores must be at most 1024"
                          : big != floor(big)                ? "big_cores must be a whole number"
                          : little < 0 || little > 1024      ? "little_cores must be in 0..1024"
                          : little != floor(little)          ? "little_cores must be a whole number"
                          : !(gb >= 0.001 && gb <= 1e6)      ? "gflops_per_big_core must be in 0.001..1000000"
                          : !(gl == 0 || (gl >= 0.001 && gl <= 1e6)) ? "gflops_per_little_core must be 0 or in 0.001..1000000"
                                                             : NULL;
        if (why) {
            snprintf(what, sizeof what, "%s: %s", where, why);
            goto bad;
        }
        d->ram_bytes = (uint64_t)(ram * 1073741824.0);
        d->usable_bytes = (uint64_t)(usable * 1073741824.0);
        d->bw_gbps = bw;
        d->bw_measured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "bandwidth_measured"));
        d->n_big_cores = (int)big;
        d->n_little_cores = (int)little;
        d->gflops_big = gb;
        d->gflops_little = gl;
        d->has_npu = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "npu"));
        double eff = 0;
        if (get_num(o, "decode_efficiency", &eff) < 0 || !(eff == 0 || (eff >= 0.05 && eff <= 1.0))) {
            snprintf(what, sizeof what, "%s: decode_efficiency must be a number in 0.05..1 (0: the default)", where);
            goto bad;
        }
        d->decode_efficiency = eff;
        get_str(o, "isa", d->isa, sizeof d->isa);
        if (d->isa[0] && strcasecmp(d->isa, "arm") && strcasecmp(d->isa, "x86")) {
            snprintf(what, sizeof what, "%s: isa must be \"arm\" or \"x86\"", where);
            goto bad;
        }
        continue;
    bad:
        rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, what);
        goto done;
    }
    *out = devs;
    *n = count;
    devs = NULL;
done:
    free(devs);
    cJSON_Delete(root);
    return rc;
#endif
}

edgellm_status cli_plan_read_eval(const char *path, edgellm_plan_quality **out, int *n, cli_plan_eval_meta *meta,
                                  edgellm_error *err)
{
    *out = NULL;
    *n = 0;
    if (meta) memset(meta, 0, sizeof *meta);
#ifndef EDGELLM_HAVE_CJSON
    return set_err(err, EDGELLM_ERR_UNSUPPORTED, "%s: %s", path,
                   "this build cannot read JSON (install libcjson-dev and reconfigure)");
#else
    edgellm_status rc = EDGELLM_OK;
    cJSON *root = parse_file(path, err, &rc);
    if (!root) return rc;
    const cJSON *res = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "results") : NULL;
    const cJSON *fmt = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "format") : NULL;
    int count = cJSON_IsArray(res) ? cJSON_GetArraySize(res) : 0;
    edgellm_plan_quality *q = NULL;
    if (fmt && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "edgellm-eval-results") != 0)) {
        rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, "\"format\" is not \"edgellm-eval-results\"");
        goto done;
    }
    if (count <= 0) {
        rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, "no \"results\" array");
        goto done;
    }
    q = calloc((size_t)count, sizeof *q);
    if (!q) { rc = set_err(err, EDGELLM_ERR_NOMEM, "%s: %s", path, "out of memory"); goto done; }
    for (int i = 0; i < count; i++) {
        const cJSON *o = cJSON_GetArrayItem(res, i);
        get_str(o, "type", q[i].type, sizeof q[i].type);
        if (!cJSON_IsObject(o) || !q[i].type[0]) {
            char what[64];
            snprintf(what, sizeof what, "results[%d] needs a \"type\" string", i);
            rc = set_err(err, EDGELLM_ERR_FORMAT, "%s: %s", path, what);
            goto done;
        }
        q[i].delta_ppl_pct = q[i].kld = q[i].top1_pct = NAN;
        get_num(o, "delta_ppl_pct", &q[i].delta_ppl_pct);
        get_num(o, "kld_mean", &q[i].kld);
        get_num(o, "top1_pct", &q[i].top1_pct);
        snprintf(q[i].source, sizeof q[i].source, "edgellm eval: %.180s", path);
        double wb = 0, bpw = 0;
        if (meta && !meta->n_params && get_num(o, "weight_bytes", &wb) == 1 && get_num(o, "bpw", &bpw) == 1 && wb > 0 && bpw > 0)
            meta->n_params = 8.0 * wb / bpw;
    }
    if (meta) {
        get_str(root, "model", meta->model, sizeof meta->model);
        get_str(root, "reference", meta->reference, sizeof meta->reference);
    }
    *out = q;
    *n = count;
    q = NULL;
done:
    free(q);
    cJSON_Delete(root);
    return rc;
#endif
}

static void fmt_params(char *buf, size_t size, double n)
{
    if (n >= 1e9) snprintf(buf, size, "%.2f B params", n / 1e9);
    else snprintf(buf, size, "%.2f M params", n / 1e6);
}

int cli_plan_eval_matches(const cli_plan_eval_meta *meta, const edgellm_plan_model *m, char *why, size_t why_size)
{
    char a[32], b[32];
    const char *what = meta->model[0] ? meta->model : meta->reference[0] ? meta->reference : "another model";
    if (meta->n_params > 0 && m->n_params > 0) {
        fmt_params(a, sizeof a, meta->n_params);
        fmt_params(b, sizeof b, (double)m->n_params);
        if (fabs(meta->n_params - (double)m->n_params) <= 0.02 * (double)m->n_params) return 1;
        snprintf(why, why_size, "results are for %.100s (%s), not %.60s (%s)", what, a, m->name, b);
        return 0;
    }
    if (m->from_file && (meta->model[0] || meta->reference[0])) {
        if (!strcmp(meta->model, m->name) || !strcmp(meta->reference, m->name)) return 1;
        snprintf(why, why_size, "results are for %.100s, not %.60s", what, m->name);
        return 0;
    }
    snprintf(why, why_size, "cannot check that the results (%.100s) are for %.60s: no parameter count in the file",
             what, m->name);
    return -1;
}

/* ---------------------------------------------------------------- writer ---- */

static void jnum(FILE *f, double v)
{
    if (isnan(v) || isinf(v)) fputs("null", f);
    else fprintf(f, "%.6g", v);
}

static void ju64(FILE *f, uint64_t v) { fprintf(f, "%llu", (unsigned long long)v); }

static const char *verdict_name(edgellm_plan_verdict v)
{
    return v == EDGELLM_PLAN_FITS ? "fits" : v == EDGELLM_PLAN_TIGHT ? "tight" : "does_not_fit";
}

#define KEY(name) fprintf(f, "%s\"%s\": ", sep, name), sep = ", "

edgellm_status cli_plan_write_eval(const char *path, const char *model, const char *reference, const char *text,
                                   int n_ctx, const edgellm_plan_quality *q, const uint64_t *size_bytes,
                                   const double *bpw, int n, edgellm_error *err)
{
    edgellm_output *of;   /* written whole or not at all, a signal's handler removes it */
    edgellm_status rc = edgellm_output_open(path, "w", &of, err);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(of);
    fputs("{\"format\": \"edgellm-eval-results\", \"version\": 1, \"model\": ", f);
    cli_json_str(f, model ? model : "");
    fputs(", \"reference\": ", f);
    cli_json_str(f, reference ? reference : "");
    fputs(", \"text\": ", f);
    cli_json_str(f, text ? text : "");
    fprintf(f, ", \"n_ctx\": %d, \"results\": [", n_ctx);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n  {\"type\": ", i ? "," : "");
        cli_json_str(f, q[i].type);
        if (size_bytes) fprintf(f, ", \"size_bytes\": %llu", (unsigned long long)size_bytes[i]);
        if (bpw) fputs(", \"bpw\": ", f), jnum(f, bpw[i]);
        fputs(", \"delta_ppl_pct\": ", f), jnum(f, q[i].delta_ppl_pct);
        fputs(", \"kld_mean\": ", f), jnum(f, q[i].kld);
        fputs(", \"top1_pct\": ", f), jnum(f, q[i].top1_pct);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    return edgellm_output_commit(of, err);
}

static void write_model(FILE *f, const edgellm_plan_model *m)
{
    const char *sep = "";
    fputc('{', f);
    KEY("name"); cli_json_str(f, m->name);
    KEY("arch"); cli_json_str(f, m->arch);
    KEY("source"); cli_json_str(f, m->source);
    KEY("n_layer"); fprintf(f, "%d", m->n_layer);
    KEY("n_embd"); fprintf(f, "%d", m->n_embd);
    KEY("n_head"); fprintf(f, "%d", m->n_head);
    KEY("n_head_kv"); fprintf(f, "%d", m->n_head_kv);
    KEY("head_dim"); fprintf(f, "%d", m->head_dim);
    KEY("n_ff"); fprintf(f, "%d", m->n_ff);
    KEY("n_vocab"); fprintf(f, "%d", m->n_vocab);
    KEY("n_ctx_train"); fprintf(f, "%d", m->n_ctx_train);
    KEY("tied_embeddings"); fputs(m->tied_embeddings ? "true" : "false", f);
    KEY("n_params"); ju64(f, m->n_params);
    KEY("file"); m->from_file ? cli_json_str(f, m->file_label) : (void)fputs("null", f);
    KEY("file_kept"); m->file_kept[0] ? cli_json_str(f, m->file_kept) : (void)fputs("null", f);
    KEY("file_bytes"); m->from_file ? ju64(f, m->file_bytes) : (void)fputs("null", f);
    fputc('}', f);
}

static void write_device(FILE *f, const edgellm_plan_device *d)
{
    const char *sep = "";
    fputc('{', f);
    KEY("name"); cli_json_str(f, d->name);
    KEY("description"); cli_json_str(f, d->description);
    KEY("source"); cli_json_str(f, d->source);
    KEY("ram_bytes"); ju64(f, d->ram_bytes);
    KEY("usable_bytes"); ju64(f, d->usable_bytes);
    KEY("bandwidth_gbps"); jnum(f, d->bw_gbps);
    KEY("bandwidth_kind"); cli_json_str(f, d->bw_measured ? "measured" : "peak");
    KEY("big_cores"); fprintf(f, "%d", d->n_big_cores);
    KEY("little_cores"); fprintf(f, "%d", d->n_little_cores);
    KEY("gflops_per_big_core"); jnum(f, d->gflops_big);
    KEY("gflops_per_little_core"); jnum(f, d->gflops_little);
    KEY("npu"); fputs(d->has_npu ? "true" : "false", f);
    KEY("decode_efficiency"); jnum(f, d->decode_efficiency);
    KEY("isa"); cli_json_str(f, !strcasecmp(d->isa, "arm") ? "arm" : "x86");
    fputc('}', f);
}

static void write_row(FILE *f, const edgellm_plan_row *w)
{
    const char *sep = "";
    fputc('{', f);
    KEY("type"); cli_json_str(f, w->type);
    KEY("weight_exact"); fputs(w->weight_exact ? "true" : "false", f);
    KEY("needs_original"); fputs(w->needs_original ? "true" : "false", f);
    KEY("bpw"); jnum(f, w->bpw);
    KEY("weight_bytes"); ju64(f, w->weight_bytes);
    KEY("kv_bytes"); ju64(f, w->kv_bytes);
    KEY("scratch_bytes"); ju64(f, w->scratch_bytes);
    KEY("overhead_bytes"); ju64(f, w->overhead_bytes);
    KEY("total_bytes"); ju64(f, w->total_bytes);
    KEY("budget_bytes"); ju64(f, w->budget_bytes);
    KEY("left_bytes"); fprintf(f, "%lld", (long long)w->left_bytes);
    KEY("verdict"); cli_json_str(f, verdict_name(w->verdict));
    KEY("max_ctx"); fprintf(f, "%d", w->max_ctx);
    KEY("read_bytes_per_token"); ju64(f, w->read_bytes_per_token);
    KEY("decode_tps"); jnum(f, w->decode_tps);
    KEY("decode_tps_total"); jnum(f, w->decode_tps_total);
    KEY("prefill_tps"); jnum(f, w->prefill_tps);
    KEY("ttft_ms"); jnum(f, w->ttft_ms);
    KEY("mem_budget_bytes"); ju64(f, w->lowmem_budget_bytes);
    KEY("mem_budget_decode_tps"); jnum(f, w->lowmem_tps);
    KEY("quality");
    {
        const char *sep2 = "";
        fputc('{', f);
        fprintf(f, "%s\"delta_ppl_pct\": ", sep2), sep2 = ", ", jnum(f, w->quality.delta_ppl_pct);
        fprintf(f, "%s\"kld\": ", sep2), jnum(f, w->quality.kld);
        fprintf(f, "%s\"top1_pct\": ", sep2), jnum(f, w->quality.top1_pct);
        fprintf(f, "%s\"source\": ", sep2), cli_json_str(f, w->quality.source);
        fputc('}', f);
    }
    fputc('}', f);
}

void cli_plan_write_json(FILE *f, const edgellm_plan_report *r, const cli_plan_matrix *mx)
{
    const char *sep = "";
    fputs("{", f);
    KEY("edgellm_plan_version"); fputs("1", f);
    KEY("model"); write_model(f, &r->model);
    KEY("device"); write_device(f, &r->device);
    KEY("settings");
    {
        const char *s2 = "";
        fputc('{', f);
        fprintf(f, "%s\"n_ctx\": %d", s2, r->n_ctx), s2 = ", ";
        fprintf(f, "%s\"kv_type\": ", s2), cli_json_str(f, edgellm_type_name(r->kv_type));
        fprintf(f, "%s\"batch\": %d", s2, r->batch);
        fprintf(f, "%s\"scenario\": ", s2), cli_json_str(f, r->scenario == EDGELLM_PLAN_OFFLINE ? "offline" : "realtime");
        fprintf(f, "%s\"latency_ms\": ", s2), jnum(f, r->latency_ms);
        fprintf(f, "%s\"reading_tps\": ", s2), jnum(f, r->reading_tps);
        fprintf(f, "%s\"prompt_tokens\": %d", s2, r->prompt_tokens);
        fprintf(f, "%s\"safety_margin\": ", s2), jnum(f, r->safety_margin);
        fprintf(f, "%s\"efficiency\": ", s2), jnum(f, r->efficiency);
        fprintf(f, "%s\"calibration\": ", s2), jnum(f, r->calibration);
        fputc('}', f);
    }
    KEY("candidates");
    fputc('[', f);
    for (int i = 0; i < r->n_rows; i++) {
        if (i) fputs(", ", f);
        write_row(f, &r->rows[i]);
    }
    fputc(']', f);
    KEY("recommendation");
    {
        fputs("{\"realtime\": {\"type\": ", f);
        r->realtime_pick >= 0 ? cli_json_str(f, r->rows[r->realtime_pick].type) : (void)fputs("null", f);
        fputs(", \"why\": ", f);
        cli_json_str(f, r->realtime_why);
        fputs(", \"command\": ", f);
        r->realtime_cmd[0] ? cli_json_str(f, r->realtime_cmd) : (void)fputs("null", f);
        fputs("}, \"offline\": {\"type\": ", f);
        r->offline_pick >= 0 ? cli_json_str(f, r->rows[r->offline_pick].type) : (void)fputs("null", f);
        fprintf(f, ", \"batch\": %d, \"batch_decode_tps\": ", r->offline_batch);
        jnum(f, r->offline_batch_tps);
        fputs(", \"why\": ", f);
        cli_json_str(f, r->offline_why);
        fputs(", \"command\": ", f);
        r->offline_cmd[0] ? cli_json_str(f, r->offline_cmd) : (void)fputs("null", f);
        fputs("}, \"advice\": ", f);
        r->advice[0] ? cli_json_str(f, r->advice) : (void)fputs("null", f);
        fputs(", \"low_memory\": {\"type\": ", f);   /* run --mem-budget when a row does not fit */
        const edgellm_plan_row *lm = r->lowmem_pick >= 0 ? &r->rows[r->lowmem_pick] : NULL;
        lm ? cli_json_str(f, lm->type) : (void)fputs("null", f);
        fputs(", \"mem_budget_bytes\": ", f);
        lm ? ju64(f, lm->lowmem_budget_bytes) : (void)fputs("null", f);
        fputs(", \"decode_tps\": ", f);
        lm ? jnum(f, lm->lowmem_tps) : (void)fputs("null", f);
        fputs(", \"storage_read_bytes_per_token\": ", f);
        lm ? ju64(f, lm->lowmem_read_bytes) : (void)fputs("null", f);
        fputs(", \"storage_gbps\": ", f);
        jnum(f, r->storage_gbps);
        fputs(", \"storage_source\": ", f);
        cli_json_str(f, r->storage_source);
        fputs(", \"command\": ", f);
        r->lowmem_cmd[0] ? cli_json_str(f, r->lowmem_cmd) : (void)fputs("null", f);
        fputs("}}", f);
    }
    if (mx) {
        KEY("matrix");
        fprintf(f, "{\"n_ctx_cap\": %d, \"kv_type\": ", mx->n_ctx_cap);
        cli_json_str(f, edgellm_type_name(mx->kv_type));
        fputs(", \"devices\": [", f);
        for (int d = 0; d < mx->n_devices; d++) {
            if (d) fputs(", ", f);
            cli_json_str(f, mx->devices[d]);
        }
        fputs("], \"rows\": [", f);
        for (int m = 0; m < mx->n_models; m++) {
            fprintf(f, "%s{\"model\": ", m ? ", " : "");
            cli_json_str(f, mx->models[m]);
            fputs(", \"best_fit\": [", f);
            for (int d = 0; d < mx->n_devices; d++) {
                if (d) fputs(", ", f);
                mx->cell[m][d][0] ? cli_json_str(f, mx->cell[m][d]) : (void)fputs("null", f);
            }
            fputs("]}", f);
        }
        fputs("]}", f);
    }
    fputs("}\n", f);
}

void cli_plan_write_list_json(FILE *f, const edgellm_plan_device *extra, int n_extra)
{
    fputs("{\"edgellm_plan_version\": 1, \"models\": [", f);
    for (int i = 0, k = 0; i < edgellm_plan_n_models(); i++) {
        edgellm_plan_model m;
        if (edgellm_plan_model_at(i, &m) != EDGELLM_OK) continue;
        fputs(k++ ? ",\n  " : "\n  ", f);
        write_model(f, &m);
    }
    fputs("],\n \"devices\": [", f);
    for (int i = 0, k = 0; i < edgellm_plan_n_devices(); i++) {
        edgellm_plan_device d;
        if (edgellm_plan_device_at(i, &d) != EDGELLM_OK) continue;
        fputs(k++ ? ",\n  " : "\n  ", f);
        write_device(f, &d);
    }
    fputs("],\n \"file_devices\": [", f);
    for (int i = 0; i < n_extra; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        write_device(f, &extra[i]);
    }
    fputs("]}\n", f);
}
