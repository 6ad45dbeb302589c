/*
 * fuzz_cli_args.c — libFuzzer target: the command-line parsers of every `edgellm` command.
 *
 * The CLI's main() is compiled into this target renamed to edgellm_cli_main (see
 * fuzz/CMakeLists.txt), so the dispatch in cli/main.c and each cmd_<name>() parse an argv
 * built from the input, in-process. Commands never call exit(): they return 0/1/2, and
 * anything else (or a crash, a sanitizer report, a leak) is a finding.
 *
 * Input: NUL-separated arguments (at most 24, each cut at 512 bytes). Byte 0 picks the
 * command from COMMANDS (the last entry means "use the first argument as the command").
 * The arguments are made harmless before the call, so that parsing is what is exercised,
 * not real work:
 *   - every argument that contains '/', and the value of every output flag (-o,
 *     --output, --out, --report), becomes a path in a directory that does not exist, and
 *     the process runs in an empty temporary directory, so model, prompt and JSON files
 *     are never found and outputs never written (`synth` fails before generating);
 *   - the device name "host" (a ~1 s bandwidth measurement) becomes "phone-mid";
 *   - stdin and stdout are /dev/null.
 * The commands print their error lines to stderr; run.sh passes -close_fd_mask=3 to keep
 * the log readable (sanitizer reports still reach libFuzzer's own copy of stderr).
 */
#include "fuzz_util.h"
#include <fcntl.h>

int edgellm_cli_main(int argc, char **argv);

static const char *const COMMANDS[] = {
    "plan", "run", "info", "tokenize", "logits", "convert", "quantize", "synth", "bench", "eval", "help", "--version", NULL,
};
#define N_COMMANDS ((int)(sizeof COMMANDS / sizeof COMMANDS[0]))
#define MAX_ARGS 24
#define MAX_ARG_LEN 512

/* Flags whose value is a file to write: their value is always replaced by a path in a
 * directory that does not exist (the writer fails before any work; see gguf_write.c). */
static int is_output_flag(const char *a)
{
    return !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--out") || !strcmp(a, "--report");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    char dir[] = "/tmp/edgellm-fuzz-cli-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) { perror("fuzz_cli_args: temporary directory"); exit(1); }
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) { perror("/dev/null"); exit(1); }
    dup2(fd, 0);
    dup2(fd, 1);
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static char store[MAX_ARGS][MAX_ARG_LEN + 1];
    char *argv[MAX_ARGS + 3];
    int argc = 0;
    argv[argc++] = "edgellm";
    const char *cmd = COMMANDS[data[0] % N_COMMANDS];
    if (cmd) argv[argc++] = (char *)cmd;
    size_t pos = 1;
    for (int k = 0; k < MAX_ARGS && pos < size; k++) {
        const uint8_t *end = memchr(data + pos, 0, size - pos);
        size_t len = end ? (size_t)(end - (data + pos)) : size - pos;
        size_t keep = len < MAX_ARG_LEN ? len : MAX_ARG_LEN;
        memcpy(store[k], data + pos, keep);
        store[k][keep] = 0;
        if (memchr(store[k], '/', keep) || is_output_flag(argv[argc - 1]))
            strcpy(store[k], "/nonexistent/edgellm-fuzz");
        else if (!strcmp(store[k], "host")) strcpy(store[k], "phone-mid");
        argv[argc++] = store[k];
        pos += len + 1;
    }
    argv[argc] = NULL;
    int rc = edgellm_cli_main(argc, argv);
    FUZZ_ASSERT(rc == 0 || rc == 1 || rc == 2, "exit status %d", rc);
    return 0;
}
