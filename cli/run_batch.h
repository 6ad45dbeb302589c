/* run_batch.h — `edgellm run --batch-file`: offline batch generation (cli/run_batch.c). */
#ifndef EDGELLM_CLI_RUN_BATCH_H
#define EDGELLM_CLI_RUN_BATCH_H
#include "edgellm.h"
#include <stdbool.h>

typedef struct {
    const char *model_path;
    const char *batch_file;      /* JSONL, one {"prompt": ...} per line                       */
    const char *out_path;        /* NULL or "-": standard output                              */
    int n_batch;                 /* sequences decoding together, >= 1                         */
    edgellm_generate_params gp;  /* for every prompt; n_predict: a line's default              */
    edgellm_model_params mp;
    edgellm_ctx_params cp;       /* n_ctx <= 0: the longest prompt + its n_predict, at most the
                                    model's context length (4096 at most)                    */
    bool have_seed;              /* gp.sampling.seed was given (else it is printed)           */
} cli_run_batch_opts;

/* Read the prompts, generate them with continuous batching (edgellm_generate_batch_each),
 * write one JSON line per prompt in input order. Returns the exit status (0, or 1 after an
 * error printed on stderr: a bad line names the file and line; nothing is written then). */
int cli_run_batch(const cli_run_batch_opts *o);

#endif
