/*
 * fuzz_cli_args.c — libFuzzer target: the command-line parsers of every `edgellm` command.
 *
 * The CLI's main() is compiled into this target renamed to edgellm_cli_main (see
 * fuzz/CMakeLists.txt), so the dispatch in cli/main.c and each cmd_<name>() parse an argv
 * built from the input, in-process. Commands never call exit(): they return 0/1/2, and
 * anything else (or a crash, a sanitizer report, a leak) is a finding.
 *
 * Input (fuzz_inputs.h): NUL-separated arguments (at most 24, each cut at 512 bytes).
 * Byte 0 picks the command from FUZZ_COMMANDS (the last entry means "use the first
 * argument as the command").
 * The arguments are made harmless before the call, so that parsing is what is exercised,
 * not real work:
 *   - every argument that contains '/', and the value of every output flag (-o,
 *     --output, --out, --report), becomes a path in a directory that does not exist, and
 *     the process runs in an empty temporary directory, so model, prompt and JSON files
 *     are never found and outputs never written (`synth` fails before generating);
 *   - the device name "host" (a ~1 s bandwidth measurement) becomes "phone-mid", and
 *     `bench --bandwidth` (a 512 MiB buffer streamed for 1 s) an unknown flag;
 *   - stdin and stdout are /dev/null.
 * The commands print their error lines to stderr; run.sh passes -close_fd_mask=3 to keep
 * the log readable (sanitizer reports still reach libFuzzer's own copy of stderr).
 */
#include "fuzz_util.h"
#include "fuzz_inputs.h"
#include <fcntl.h>

int edgellm_cli_main(int argc, char **argv);

static char work_dir[] = "/tmp/edgellm-fuzz-cli-XXXXXX";

/* The directory stays empty (nothing is ever written there): removed when the process
 * exits normally, so runs do not pile up empty directories in /tmp (one per process). */
static void remove_work_dir(void)
{
    if (chdir("/") == 0) rmdir(work_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    if (!mkdtemp(work_dir) || chdir(work_dir) != 0) { perror("fuzz_cli_args: temporary directory"); exit(1); }
    atexit(remove_work_dir);
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) { perror("/dev/null"); exit(1); }
    dup2(fd, 0);
    dup2(fd, 1);
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char store[FUZZ_MAX_ARGS][FUZZ_MAX_ARG_LEN + 1];
    char *argv[FUZZ_MAX_ARGS + 3];
    if (size < 1) return 0;
    int argc = fuzz_cli_decode(data, size, store, argv);
    int rc = edgellm_cli_main(argc, argv);
    FUZZ_ASSERT(rc == 0 || rc == 1 || rc == 2, "exit status %d", rc);
    return 0;
}
