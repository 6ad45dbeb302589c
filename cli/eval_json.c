/*
 * eval_json.c — the JSON side of `edgellm eval`, in the CLI because the core library has
 * no JSON dependency: task sets are untrusted input and are parsed with cJSON (Debian
 * libcjson-dev; CMake defines EDGELLM_HAVE_CJSON when found) into plain structs the
 * library takes; the sweep's results file is written with cJSON too.
 *
 * Task file (JSONL, one item per line, UTF-8; the sets in data/tasks/, made by
 * scripts/gen_tasks.py):
 *   {"context": "Lily had a red ball. ... play with her red", "choices": [" ball", " cat"], "label": 0}
 *   {"prompt": "Tom had a big dog. ... Tom loved his", "answer": "dog"}
 * Checks, each failing with "PATH:LINE: what": the line parses as JSON with nothing after
 * it; it is an object; it has the keys of one kind and none of the other; strings are strings (no NUL byte);
 * "choices" holds 2 to 64 non-empty strings; "label" is an integer in range; "answer"
 * is non-empty.
 *
 * Results file (read by `edgellm plan`, cli/plan_json.c; default MODEL.eval.json next to
 * MODEL.gguf):
 *   {"format": "edgellm-eval-results", "version": 1, "model": "REF.gguf",
 *    "reference": "REF.gguf", "text": "val.txt", "n_ctx": 256, "chunks": 20,
 *    "n_scored": 2540,
 *    "results": [{"type": "F32", "reference": true, ...},
 *                {"type": "Q4_K_M", "spec": "q4_k_m", "used": "Q5_0 x30, Q8_0 x5",
 *                 "fallbacks": 30, "size_bytes": 123, "weight_bytes": 100, "bpw": 5.6,
 *                 "ppl": 6.41, "ppl_ref": 6.2, "delta_ppl_pct": 2.8, "kld_mean": 0.031,
 *                 "kld_p99": 0.2, "top1_pct": 91.9, "rms_dp_pct": 5.2, "tok_per_s": 900}]}
 * Numbers that are unknown are written as null.
 */
#include "eval_json.h"
#include "commands.h"   /* cli_read_text */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define MAX_CHOICES 64

int cli_eval_json_available(void)
{
#ifdef EDGELLM_HAVE_CJSON
    return 1;
#else
    return 0;
#endif
}

static edgellm_status fail(edgellm_error *err, edgellm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static edgellm_status fail(edgellm_error *err, edgellm_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void cli_eval_taskset_free(cli_eval_taskset *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++) {
        edgellm_eval_item *it = &t->items[i];
        free((char *)it->context);
        free((char *)it->answer);
        if (it->choices) {
            for (int c = 0; c < it->n_choices; c++) free((char *)it->choices[c]);
            free((void *)it->choices);
        }
    }
    free(t->items);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

#ifdef EDGELLM_HAVE_CJSON
/* A string member, copied; NULL (and *bad set) when present but not a string. */
static char *get_string(const cJSON *o, const char *key, int *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *present = v != NULL;
    if (!cJSON_IsString(v) || !v->valuestring) return NULL;
    return strdup(v->valuestring);
}

static edgellm_status parse_item(const cJSON *o, const char *path, long line, edgellm_eval_item *it, edgellm_error *err)
{
    memset(it, 0, sizeof *it);
    if (!cJSON_IsObject(o)) return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: an item must be a JSON object", path, line);
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    int present;
    /* a key of the other kind makes the item ambiguous: which was meant? */
    const bool mc_key = choices || cJSON_GetObjectItemCaseSensitive(o, "context") ||
                        cJSON_GetObjectItemCaseSensitive(o, "label");
    const bool gen_key = prompt || cJSON_GetObjectItemCaseSensitive(o, "answer");
    if (mc_key && gen_key)
        return fail(err, EDGELLM_ERR_FORMAT,
                    "%s:%ld: an item has keys of both kinds; use \"context\", \"choices\" and \"label\" (multiple "
                    "choice) or \"prompt\" and \"answer\" (generation)", path, line);
    if (choices) {
        if (!(it->context = get_string(o, "context", &present)))
            return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: a multiple-choice item needs a \"context\" string", path, line);
        int n = cJSON_IsArray(choices) ? cJSON_GetArraySize(choices) : -1;
        if (n < 2 || n > MAX_CHOICES)
            return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: \"choices\" must be an array of 2 to %d strings", path, line,
                        MAX_CHOICES);
        char **cs = calloc((size_t)n, sizeof *cs);
        if (!cs) return fail(err, EDGELLM_ERR_NOMEM, "%s:%ld: out of memory", path, line);
        it->choices = (const char *const *)cs;
        it->n_choices = n;
        for (int c = 0; c < n; c++) {
            const cJSON *v = cJSON_GetArrayItem(choices, c);
            if (!cJSON_IsString(v) || !v->valuestring || !v->valuestring[0])
                return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: choice %d is not a non-empty string", path, line, c);
            if (!(cs[c] = strdup(v->valuestring))) return fail(err, EDGELLM_ERR_NOMEM, "%s:%ld: out of memory", path, line);
        }
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(o, "label");
        double d = cJSON_IsNumber(label) ? label->valuedouble : NAN;
        if (!(d >= 0 && d < n && d == floor(d)))
            return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: \"label\" must be an integer in [0, %d]", path, line, n - 1);
        it->label = (int)d;
    } else if (prompt) {
        if (!(it->context = get_string(o, "prompt", &present)))
            return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: \"prompt\" must be a string", path, line);
        if (!(it->answer = get_string(o, "answer", &present)) || !it->answer[0])
            return fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: a generation item needs a non-empty \"answer\" string", path,
                        line);
    } else {
        return fail(err, EDGELLM_ERR_FORMAT,
                    "%s:%ld: an item needs \"context\", \"choices\" and \"label\" (multiple choice) or \"prompt\" and "
                    "\"answer\" (generation)", path, line);
    }
    return EDGELLM_OK;
}
#endif

edgellm_status cli_eval_read_jsonl(const char *path, int limit, cli_eval_taskset *out, edgellm_error *err)
{
    memset(out, 0, sizeof *out);
#ifndef EDGELLM_HAVE_CJSON
    (void)limit;
    return fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: this build cannot read JSON (install libcjson-dev and reconfigure)",
                path);
#else
    size_t text_len = 0;
    char *text = cli_read_text(path, &text_len, err);   /* bounded: not getline */
    if (!text) return EDGELLM_ERR_IO;
    edgellm_status rc = EDGELLM_OK;
    size_t items_cap = 0;
    long lineno = 0;
    for (char *next = text; (limit <= 0 || out->n < limit) && next < text + text_len;) {
        char *line = next, *nl = memchr(line, '\n', (size_t)(text + text_len - line));
        const size_t len = nl ? (size_t)(nl - line) : (size_t)(text + text_len - line);
        next = line + len + 1;
        line[len] = 0;   /* the newline, or the buffer's terminating NUL */
        lineno++;
        if (len != strlen(line)) { rc = fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: contains a NUL byte", path, lineno); break; }
        const char *s = line;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
        if (!*s) continue;   /* blank line */
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithOpts(line, &end, 1);
        if (!o) {
            const char *at = cJSON_GetErrorPtr();
            long col = at && at >= line && at <= line + len ? (long)(at - line) + 1 : 0;
            rc = fail(err, EDGELLM_ERR_FORMAT, "%s:%ld: not valid JSON (column %ld)", path, lineno, col);
            break;
        }
        if ((size_t)out->n == items_cap) {
            size_t nc = items_cap ? 2 * items_cap : 256;
            edgellm_eval_item *ni = realloc(out->items, nc * sizeof *ni);
            if (ni) out->items = ni;
            long *nl = ni ? realloc(out->lines, nc * sizeof *nl) : NULL;
            if (nl) out->lines = nl;
            if (!ni || !nl) { cJSON_Delete(o); rc = fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", path); break; }
            items_cap = nc;
        }
        out->lines[out->n] = lineno;
        edgellm_eval_item *it = &out->items[out->n++];   /* counted now, so a failure frees it */
        rc = parse_item(o, path, lineno, it, err);
        cJSON_Delete(o);
        if (rc != EDGELLM_OK) break;
        if (it->choices) out->n_mc++;
        else out->n_gen++;
    }
    if (rc == EDGELLM_OK && out->n == 0) rc = fail(err, EDGELLM_ERR_FORMAT, "%s: no items", path);
    free(text);
    if (rc != EDGELLM_OK) cli_eval_taskset_free(out);
    return rc;
#endif
}

#ifdef EDGELLM_HAVE_CJSON
static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static cJSON *row_json(const edgellm_eval_sweep_row *r, int is_ref)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "type", r->type);
    if (is_ref) cJSON_AddTrueToObject(o, "reference");
    else cJSON_AddStringToObject(o, "spec", r->spec);
    cJSON_AddStringToObject(o, "used", r->used);
    cJSON_AddNumberToObject(o, "fallbacks", r->n_fallbacks);
    cJSON_AddNumberToObject(o, "size_bytes", (double)r->file_bytes);
    cJSON_AddNumberToObject(o, "weight_bytes", (double)r->weight_bytes);
    add_num(o, "bpw", r->bpw);
    add_num(o, "ppl", r->cmp.model.ppl);
    add_num(o, "ppl_err", r->cmp.model.ppl_err);
    add_num(o, "ppl_ref", r->cmp.ref.ppl);
    add_num(o, "delta_ppl_pct", r->cmp.delta_ppl_pct);
    add_num(o, "kld_mean", r->cmp.kld_mean);
    add_num(o, "kld_median", r->cmp.kld_median);
    add_num(o, "kld_p99", r->cmp.kld_p99);
    add_num(o, "top1_pct", r->cmp.top1_pct);
    add_num(o, "rms_dp_pct", r->cmp.dp_rms_pct);
    add_num(o, "tok_per_s", r->tok_per_s > 0 ? r->tok_per_s : NAN);
    return o;
}
#endif

edgellm_status cli_eval_write_results(const char *path, const char *ref_path, const char *text_path,
                                      const edgellm_eval_sweep_report *r, int n_ctx, edgellm_error *err)
{
#ifndef EDGELLM_HAVE_CJSON
    (void)ref_path; (void)text_path; (void)r; (void)n_ctx;
    return fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: this build cannot write JSON (install libcjson-dev and reconfigure)",
                path);
#else
    /* file names are bytes; JSON is UTF-8 and cJSON copies bytes as they are: each byte
     * that is not well-formed UTF-8 becomes U+FFFD */
    const char *ref_name = strrchr(ref_path, '/') ? strrchr(ref_path, '/') + 1 : ref_path;
    const char *text_name = strrchr(text_path, '/') ? strrchr(text_path, '/') + 1 : text_path;
    const size_t ref_len = strlen(ref_name), text_len = strlen(text_name);
    char *ref_base = malloc(3 * ref_len + 1), *text_base = malloc(3 * text_len + 1);   /* U+FFFD: 3 bytes */
    if (!ref_base || !text_base) {
        free(ref_base);
        free(text_base);
        return fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", path);
    }
    edgellm_utf8_sanitize(ref_name, ref_len, ref_base, 3 * ref_len + 1);
    edgellm_utf8_sanitize(text_name, text_len, text_base, 3 * text_len + 1);
    edgellm_status rc = EDGELLM_OK;
    char *json = NULL;
    cJSON *root = cJSON_CreateObject(), *res = NULL;
    if (!root) { rc = fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", path); goto done; }
    cJSON_AddStringToObject(root, "format", "edgellm-eval-results");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "model", ref_base);
    cJSON_AddStringToObject(root, "reference", ref_base);
    cJSON_AddStringToObject(root, "text", text_base);
    cJSON_AddNumberToObject(root, "n_ctx", n_ctx);
    cJSON_AddNumberToObject(root, "chunks", r->ref.cmp.model.n_chunks);
    cJSON_AddNumberToObject(root, "n_scored", (double)r->ref.cmp.model.n_scored);
    if (!(res = cJSON_AddArrayToObject(root, "results"))) { rc = fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", path); goto done; }
    cJSON_AddItemToArray(res, row_json(&r->ref, 1));
    for (int i = 0; i < r->n_rows; i++) cJSON_AddItemToArray(res, row_json(&r->rows[i], 0));
    if (!(json = cJSON_Print(root))) { rc = fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", path); goto done; }
    edgellm_output *of;   /* written whole or not at all, a signal's handler removes it */
    if ((rc = edgellm_output_open(path, "wb", &of, err)) != EDGELLM_OK) goto done;
    fputs(json, edgellm_output_stream(of));
    fputc('\n', edgellm_output_stream(of));
    rc = edgellm_output_commit(of, err);
done:
    free(json);
    cJSON_Delete(root);
    free(ref_base);
    free(text_base);
    return rc;
#endif
}
