/* plan_json.h — JSON for `edgellm plan`: reading user device files and `edgellm eval`
 * results (with cJSON, Debian libcjson-dev, linked to the CLI only), and writing the plan
 * report (docs/plan.schema.json). */
#ifndef EDGELLM_CLI_PLAN_JSON_H
#define EDGELLM_CLI_PLAN_JSON_H
#include "edgellm_tools.h"
#include <stdio.h>

#define CLI_PLAN_MATRIX_MAX 32

/* The no-argument overview: best precision that fits, per model and device. */
typedef struct {
    int  n_models, n_devices, n_ctx_cap, kv_type;
    char models[CLI_PLAN_MATRIX_MAX][64];
    char devices[CLI_PLAN_MATRIX_MAX][48];
    char cell[CLI_PLAN_MATRIX_MAX][CLI_PLAN_MATRIX_MAX][24];   /* "" when nothing fits */
} cli_plan_matrix;

/* 1 when this build can read JSON files (cJSON was found at configure time). */
int cli_plan_json_available(void);

/* Devices from a JSON file: {"devices": [ {...}, ... ]}, a bare array, or one object.
 * Fields: name (required), description, source, ram_gib (required), usable_gib (default
 * half of ram_gib), bandwidth_gbps (required), bandwidth_measured (default false),
 * big_cores (required), little_cores, gflops_per_big_core (default 25),
 * gflops_per_little_core (default 5), npu. *out is malloc'ed (free()). */
edgellm_status cli_plan_read_devices(const char *path, edgellm_plan_device **out, int *n, edgellm_error *err);

/* What an eval results file says about its model ("" / 0 when absent). */
typedef struct {
    char   model[128];        /* "model": file name of the evaluated model               */
    char   reference[128];    /* "reference"                                              */
    double n_params;          /* from a result's weight_bytes and bpw (8 x bytes / bpw)   */
} cli_plan_eval_meta;

/* Quality results written by `edgellm eval` (format "edgellm-eval-results", version 1):
 * {"format": "edgellm-eval-results", "version": 1, "model": ..., "reference": ...,
 *  "text": ..., "n_ctx": N, "results": [{"type": "Q4_K_M", "size_bytes": N, "bpw": x,
 *  "ppl": x, "delta_ppl_pct": x, "kld_mean": x, "top1_pct": x}, ...]}.
 * Only results[].type is required. *out is malloc'ed (free()). meta (may be NULL)
 * receives the model's name and parameter count. */
edgellm_status cli_plan_read_eval(const char *path, edgellm_plan_quality **out, int *n, cli_plan_eval_meta *meta,
                                  edgellm_error *err);

/* Are these eval results for `m` (the model being planned)? Parameter counts decide when
 * the file has them (within 2 %); else the file names ("model" or "reference" vs the base
 * name of m's file). Returns 1 yes, 0 no (why says so: "results are for X (N params), not
 * Y (M params)"), -1 cannot tell (why says so). */
int cli_plan_eval_matches(const cli_plan_eval_meta *meta, const edgellm_plan_model *m, char *why, size_t why_size);

/* Write an "edgellm-eval-results" file (the format above) for `edgellm eval sweep`: one
 * result per entry of q (type, delta_ppl_pct, kld -> kld_mean, top1_pct; NaN -> null);
 * size_bytes and bpw may be NULL (then omitted). Written to PATH.tmp, then renamed.
 * Convention: PATH = the reference model's path with ".gguf" replaced by ".eval.json",
 * which `edgellm plan --model REF.gguf` picks up. Statuses: EDGELLM_ERR_IO. */
edgellm_status cli_plan_write_eval(const char *path, const char *model, const char *reference, const char *text,
                                   int n_ctx, const edgellm_plan_quality *q, const uint64_t *size_bytes,
                                   const double *bpw, int n, edgellm_error *err);

/* The report (and the matrix, when not NULL) as one JSON object. */
void cli_plan_write_json(FILE *f, const edgellm_plan_report *r, const cli_plan_matrix *mx);
/* `plan --list --json`: {"edgellm_plan_version": 1, "models": [...], "devices": [...],
 * "file_devices": [...]}, the catalogues and a device file's devices (extra[0..n_extra))
 * with the same model and device objects as a plan report. */
void cli_plan_write_list_json(FILE *f, const edgellm_plan_device *extra, int n_extra);

#endif
