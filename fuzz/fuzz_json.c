/*
 * fuzz_json.c — libFuzzer target: the JSON and JSONL inputs of the CLI (parsed with cJSON in
 * cli/), the same bytes through each reader (via a memfd path, since the readers take
 * paths):
 *   - `edgellm plan` device files (--device FILE.json / --device-file, cli/plan_json.c);
 *     what is accepted goes on through edgellm_plan (device numbers drive all of plan's
 *     arithmetic) and the JSON report writer;
 *   - `edgellm eval` results (--eval FILE, MODEL.eval.json, cli/plan_json.c), then the
 *     check that they belong to the model being planned;
 *   - `edgellm eval` task sets (JSONL: multiple choice and generation items,
 *     cli/eval_json.c), every item's strings walked.
 * Oracle: a known status with a message naming the file, nothing leaked (LeakSanitizer),
 * no sanitizer report. The report goes to /dev/null.
 * When a new JSON input appears, add its reader here and seeds to fuzz/corpus/json.
 */
#include "fuzz_util.h"
#include "eval_json.h"
#include "plan_json.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    devnull = fopen("/dev/null", "w");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_memfile(data, size);
    if (!path) return 0;
    edgellm_error err = {0};
    edgellm_plan_device *devs = NULL;
    edgellm_plan_quality *q = NULL;
    int n_dev = 0, n_q = 0;
    edgellm_status s = cli_plan_read_devices(path, &devs, &n_dev, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, path) != NULL && devs == NULL, "devices: %s", err.msg);
    memset(&err, 0, sizeof err);
    cli_plan_eval_meta meta;
    s = cli_plan_read_eval(path, &q, &n_q, &meta, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, path) != NULL && q == NULL, "eval: %s", err.msg);
    if (s == EDGELLM_OK) {
        edgellm_plan_model pm;
        char why[256];
        if (edgellm_plan_find_model("llama-2-7b", &pm, NULL) == EDGELLM_OK)
            (void)cli_plan_eval_matches(&meta, &pm, why, sizeof why);
    }
    memset(&err, 0, sizeof err);
    cli_eval_taskset ts;
    memset(&ts, 0, sizeof ts);
    s = cli_eval_read_jsonl(path, 0, &ts, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, path) != NULL, "tasks: %s", err.msg);
    if (s == EDGELLM_OK) {
        FUZZ_ASSERT(ts.n >= 0 && ts.n_mc + ts.n_gen == ts.n, "task counts %d + %d != %d", ts.n_mc, ts.n_gen, ts.n);
        size_t total = 0;
        for (int i = 0; i < ts.n; i++) {
            const edgellm_eval_item *it = &ts.items[i];
            if (it->context) total += strlen(it->context);
            if (it->answer) total += strlen(it->answer);
            for (int c = 0; it->choices && c < it->n_choices; c++) total += strlen(it->choices[c]);
            if (it->choices) FUZZ_ASSERT(it->label >= 0 && it->label < it->n_choices, "label %d of %d", it->label, it->n_choices);
        }
        (void)total;
    }
    cli_eval_taskset_free(&ts);

    if (devs || q) {
        edgellm_plan_params p = edgellm_plan_default_params();
        p.extra_devices = devs;
        p.n_extra_devices = n_dev;
        p.device = devs ? devs[0].name : NULL;
        p.quality = q;
        p.n_quality = n_q;
        edgellm_plan_report *r = malloc(sizeof *r);
        if (r) {
            memset(&err, 0, sizeof err);
            s = edgellm_plan(&p, r, &err);
            fuzz_check_error(s, &err);
            if (s == EDGELLM_OK && devnull) cli_plan_write_json(devnull, r, NULL);
            free(r);
        }
    }
    free(devs);
    free(q);
    return 0;
}
