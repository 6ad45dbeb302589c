/*
 * fuzz_json.c — libFuzzer target: the JSON inputs of the CLI.
 *
 * Today these are the two files `edgellm plan` reads (cli/plan_json.c, parsed with cJSON):
 * a user device file (--device FILE.json / --device-file) and `edgellm eval` results
 * (--eval FILE, MODEL.eval.json). The same bytes go through both readers (via a memfd
 * path, since the readers take paths), and whatever they accept goes on through
 * edgellm_plan (device numbers and quality figures drive all of plan's arithmetic) and
 * the JSON report writer.
 * Oracle: a known status with a message naming the file; nothing printed to a closed
 * stream matters (the report goes to /dev/null).
 * When a new JSON input appears (task sets, ...), add its reader here.
 */
#include "fuzz_util.h"
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
    s = cli_plan_read_eval(path, &q, &n_q, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, path) != NULL && q == NULL, "eval: %s", err.msg);

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
