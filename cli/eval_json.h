/* eval_json.h — the JSON side of `edgellm eval` (CLI only, cJSON): reading task sets
 * (JSONL) into plain edgellm_eval_item structs, and writing the sweep's results file that
 * `edgellm plan` reads (format: cli/plan_json.c, "Eval results"). */
#ifndef EDGELLM_CLI_EVAL_JSON_H
#define EDGELLM_CLI_EVAL_JSON_H
#include "edgellm_tools.h"

typedef struct {
    edgellm_eval_item *items;   /* [n], strings owned by the set */
    long *lines;                /* [n] the file line of each item (1-based)          */
    int n;
    int n_mc, n_gen;
} cli_eval_taskset;

/* Read a JSONL task file: one JSON object per line, blank lines skipped.
 *   multiple choice: {"context": "...", "choices": ["...", "..."], "label": 0}
 *   generation:      {"prompt": "...", "answer": "..."}
 * Other keys are ignored. limit > 0 keeps the first `limit` items. A malformed line is
 * EDGELLM_ERR_FORMAT with "PATH:LINE: problem". Free with cli_eval_taskset_free. */
edgellm_status cli_eval_read_jsonl(const char *path, int limit, cli_eval_taskset *out, edgellm_error *err);
void cli_eval_taskset_free(cli_eval_taskset *t);

/* Write the sweep's results as JSON to path (via path.tmp + rename). */
edgellm_status cli_eval_write_results(const char *path, const char *ref_path, const char *text_path,
                                      const edgellm_eval_sweep_report *r, int n_ctx, edgellm_error *err);

/* 1 when this build has cJSON. */
int cli_eval_json_available(void);
#endif
