/* test_cli.c — command-line behaviour a new user meets first, across commands, and the
 * helpers the commands share (cli/main.c): each test runs the built `edgellm` binary.
 *
 *   - run --no-bos with an empty prompt still starts from BOS, and says so on stderr;
 *   - info takes its file as -m/--model too, with the same output as positionally;
 *   - an output path naming an input file is a bad command line (exit 2, file named) for
 *     quantize and convert alike;
 *   - bench checks every -m file before printing anything to stdout, and a model that opens
 *     but does not load is reported and skipped while the others are measured (exit 1);
 *   - eval sweep --no-bench prints "-" in the tok/s column and null in the results file;
 *   - quantize --target --task reports the task gap and leaves OUT.eval.json, which plan reads;
 *   - the shared progress bar (under a pseudo-terminal, when `script` is installed) and
 *     JSON string escaping (a report naming a file with '"' and '\' in its name).
 * Expected outputs are written here from the behaviour each command documents in its --help.
 */
#include "test_util.h"
#include "common/common.h"
#include "format/gguf.h"
#include <errno.h>
#include <fcntl.h>

#define STORIES "models/stories260K/stories260K.gguf"
#define STORIES_BIN "models/stories260K/stories260K.bin"
#define STORIES_TOK "models/stories260K/tok512.bin"
#define VAL_TEXT "models/text/tinystories_val_head.txt"

#define tmp_path test_tmp_path

/* Run `edgellm ARGS`: stdout into out[out_size], stderr into err[err_size]; the exit status. */
/* test_run_cli with stdout copied into out[out_size] (may be NULL). */
static int run_cli(const char *args, char *out, size_t out_size, char *err, size_t err_size)
{
    char *s = NULL;
    int rc = test_run_cli(args, out && out_size ? &s : NULL, err, err_size);
    if (out && out_size) snprintf(out, out_size, "%s", s);
    free(s);
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Copy a fixture into the temp dir (commands that must refuse to write get a copy). */
static const char *copy_fixture(const char *src, const char *name)
{
    size_t n = 0;
    void *data = read_file(src, &n);
    const char *dst = tmp_path(name);
    CHECK(data && write_file(dst, data, n) == 0);
    free(data);
    return dst;
}

static void test_cli_run_no_bos_empty_prompt_notes_bos(void)
{
    NEED_SHARED(model, STORIES);
    char args[1024], out[8192], err[8192], out2[8192];
    snprintf(args, sizeof args, "run -m %s --no-bos -n 8 --temp 0", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(err, "edgellm run: note: the prompt is empty, so generation starts from BOS despite --no-bos\n"));
    /* the same text as without --no-bos: BOS is still what it starts from */
    snprintf(args, sizeof args, "run -m %s -n 8 --temp 0", model);
    CHECK_EQ(run_cli(args, out2, sizeof out2, err, sizeof err), 0);
    CHECK(!strcmp(out, out2) && out[0]);
    CHECK(!strstr(err, "note:"));   /* BOS was asked for: nothing to say */
    snprintf(args, sizeof args, "run -m %s --no-bos -p 'Once upon' -n 4 --temp 0", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(!strstr(err, "note:"));   /* a prompt to start from: --no-bos holds */
}

static void test_cli_info_takes_model_flag(void)
{
    NEED_SHARED(model, STORIES);
    static char pos[65536], flag[65536];
    char args[1024], err[4096];
    snprintf(args, sizeof args, "info %s", model);
    CHECK_EQ(run_cli(args, pos, sizeof pos, err, sizeof err), 0);
    snprintf(args, sizeof args, "info -m %s", model);
    CHECK_EQ(run_cli(args, flag, sizeof flag, err, sizeof err), 0);
    CHECK(pos[0] && !strcmp(pos, flag));
    snprintf(args, sizeof args, "info --check --model %s", model);
    CHECK_EQ(run_cli(args, flag, sizeof flag, err, sizeof err), 0);
    CHECK(!strncmp(pos, flag, strlen(pos)) && strstr(flag, "\ncheck: "));
    /* still one file, and -m needs its value */
    snprintf(args, sizeof args, "info -m %s %s", model, model);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 2);
    CHECK(strstr(err, "one file at a time"));
    CHECK_EQ(run_cli("info -m", NULL, 0, err, sizeof err), 2);
    CHECK(strstr(err, "edgellm info: -m needs a value\n"));
    CHECK_EQ(run_cli("info -m /nonexistent/m.gguf", NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "edgellm info: /nonexistent/m.gguf: "));
    CHECK_EQ(run_cli("info --help", pos, sizeof pos, err, sizeof err), 0);
    CHECK(strstr(pos, "-m, --model FILE"));
}

/* quantize and convert: -o naming an input is a bad command line (2), the file is named,
 * and the input is untouched. */
static void test_cli_output_is_input_exit_2(void)
{
    NEED_SHARED(gguf, STORIES);
    NEED_SHARED(bin, STORIES_BIN);
    NEED_SHARED(tok, STORIES_TOK);
    const char *g = copy_fixture(gguf, "in.gguf"), *b = copy_fixture(bin, "in.bin"), *t = copy_fixture(tok, "tok.bin");
    size_t g_size = 0, b_size = 0, t_size = 0;
    free(read_file(g, &g_size));
    free(read_file(b, &b_size));
    free(read_file(t, &t_size));
    char args[4][2048], out[1024], err[4096];
    const char *dir = test_tmpdir(), *base = strrchr(dir, '/') + 1;
    const char *names[4] = {"in.gguf", "in.bin", "tok.bin", "in.gguf"};
    snprintf(args[0], sizeof args[0], "quantize %s %s --type q8_0", g, g);
    snprintf(args[1], sizeof args[1], "convert --llama2c %s --tokenizer %s -o %s", b, t, b);
    snprintf(args[2], sizeof args[2], "convert --llama2c %s --tokenizer %s -o %s", b, t, t);
    snprintf(args[3], sizeof args[3], "quantize %s %s/../%s/in.gguf --type q8_0", g, dir, base);   /* another spelling */
    for (int i = 0; i < 4; i++) {
        int f0 = test_failures;
        CHECK_EQ(run_cli(args[i], out, sizeof out, err, sizeof err), 2);
        CHECK(strstr(err, names[i]) && strstr(err, "output is the input"));
        CHECK(strstr(err, "see 'edgellm"));
        CHECK_EQ(count_lines(err), 2);
        if (test_failures != f0) fprintf(stderr, "   case %d: %s\n   -> %s", i, args[i], err);
    }
    size_t n = 0;
    free(read_file(g, &n));
    CHECK_EQ(n, g_size);
    free(read_file(b, &n));
    CHECK_EQ(n, b_size);
    free(read_file(t, &n));
    CHECK_EQ(n, t_size);
}

/* A bad flag value names the flag and the value, exits 2 and points to the command's help,
 * as a wrong flag does (bench and synth once returned 2 without the pointer). */
/* A model whose file has no tokenizer (tokenizer.ggml.model renamed) still loads (it runs on
 * token ids: logits --tokens), but every command given text fails with exit 1 and names the
 * file and the missing key, not an internal "NULL argument" (a new user's find). */
static void test_cli_text_commands_need_a_tokenizer(void)
{
    NEED_SHARED(model, STORIES);
    NEED_SHARED(text, VAL_TEXT);
    size_t n = 0;
    char *data = read_file(model, &n);
    CHECK(data != NULL);
    if (!data) return;
    static const char key[] = "tokenizer.ggml.model";
    char *k = memmem(data, n, key, sizeof key - 1);
    CHECK(k != NULL);
    if (k) k[sizeof key - 2] = 'X';
    const char *notok = tmp_path("notok.gguf"), *task = tmp_path("notok-task.jsonl");
    CHECK(write_file(notok, data, n) == 0);
    free(data);
    static const char item[] = "{\"context\": \"a b\", \"choices\": [\" c\", \" d\"], \"label\": 0}\n";
    CHECK(write_file(task, item, sizeof item - 1) == 0);
    char args[4096], err[4096];
    const char *cmds[] = {"run -m %s -p hi -n 2", "eval ppl -m %s -f %s -c 64", "eval save-logits -m %s -f %s -c 64 -o x.bin",
                          "eval task -m %s --data %s"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(args, sizeof args, cmds[i], notok, i == 3 ? task : text);
        CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
        CHECK(strstr(err, "notok.gguf") && strstr(err, "tokenizer.ggml.model is missing"));
        if (!strstr(err, "tokenizer.ggml.model is missing")) fprintf(stderr, "   %s: %s\n", args, err);
    }
    /* the reference without a tokenizer, and the model under test */
    for (int r = 0; r < 2; r++) {
        snprintf(args, sizeof args, "eval compare -m %s --ref %s -f %s -c 64", r ? notok : model, r ? model : notok,
                 text);
        CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
        CHECK(strstr(err, "notok.gguf") && strstr(err, "tokenizer.ggml.model is missing"));
    }
    /* token ids still work */
    snprintf(args, sizeof args, "logits -m %s --tokens \"1 2 3\" -o %s", notok, tmp_path("notok.f32"));
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
}

/* Endless and blocking inputs end in an error, not in filling memory or waiting forever:
 * /dev/zero as a text input (the 256 MiB cap of cli_read_text, shared by tokenize -f, run
 * -f, eval -f and eval task --data), a FIFO with no writer as a model (refused as not a
 * regular file without blocking on the open). */
static void test_cli_endless_and_blocking_inputs(void)
{
    NEED_SHARED(model, STORIES);
    char args[4096], err[4096];
    const char *cmds[] = {"tokenize -m %s -f /dev/zero", "eval task -m %s --data /dev/zero"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(args, sizeof args, cmds[i], model);
        CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
        CHECK(strstr(err, "/dev/zero: more than 256 MiB") != NULL);
    }
    const char *fifo = tmp_path("model.fifo");
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0) { printf("   (no FIFO here: %s)\n", strerror(errno)); return; }
    const char *fcmds[] = {"run -m %s -p hi", "info %s", "bench -m %s -p 1 -n 1 -r 1",
                           "convert --llama2c %s --tokenizer %s -o x.gguf"};
    for (size_t i = 0; i < sizeof fcmds / sizeof fcmds[0]; i++) {
        char inner[2048];
        snprintf(inner, sizeof inner, fcmds[i], fifo, fifo);
        snprintf(args, sizeof args, "timeout 20 %s %s", EDGELLM_CLI, inner);
        CHECK_EQ(run_capture(args, err, sizeof err), 1);   /* 124 would be the timeout */
        CHECK(strstr(err, "model.fifo: not a regular file") != NULL);
        if (!strstr(err, "not a regular file")) fprintf(stderr, "   %s: %s\n", inner, err);
    }
    unlink(fifo);
}

/* eval past the model's trained context (stories260K: 2048) still runs but says so, as run
 * -c does; within it, no note */
static void test_cli_eval_warns_past_trained_context(void)
{
    NEED_SHARED(model, STORIES);
    NEED_SHARED(text, VAL_TEXT);
    char args[4096], err[8192];
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 4096 --chunks 1", model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
    CHECK(strstr(err, "warning: -c 4096 exceeds") && strstr(err, "trained context length 2048"));
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 256 --chunks 1", model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
    CHECK(strstr(err, "trained context") == NULL);
    /* compare --ref: the reference is checked too (one warning each) */
    snprintf(args, sizeof args, "eval compare -m %s --ref %s -f %s -c 4096 --chunks 1", model, model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
    CHECK(strstr(err, "warning: -c 4096 exceeds") && strstr(err, "exceeds the reference "));
    /* saved logits without -c: the context is the file's, and past 2048 it is said so */
    const char *saved = tmp_path("ctx3000.logits");
    snprintf(args, sizeof args, "eval save-logits -m %s -f %s -c 3000 --chunks 1 -o %s", model, text, saved);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
    snprintf(args, sizeof args, "eval compare -m %s --ref-logits %s -f %s --chunks 1", model, saved, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
    CHECK(strstr(err, "warning: the saved logits' n_ctx 3000 exceeds") && strstr(err, "trained context length 2048"));
    unlink(saved);
    /* a directory given as the text: named, not "read failed"; a pipe still reads */
    snprintf(args, sizeof args, "eval ppl -m %s -f %s", model, test_tmpdir());
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "is a directory") != NULL);
    snprintf(args, sizeof args, "eval ppl -m %s -f /dev/stdin -c 128 --chunks 1 < %s", model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 0);
}

/* Output paths that cannot be written: named as given (not their .tmp), and eval sweep
 * says so before it measures anything; an unreadable --eval file says why */
static void test_cli_unwritable_outputs(void)
{
    NEED_SHARED(model, STORIES);
    NEED_SHARED(text, VAL_TEXT);
    char args[4096], err[8192];
    snprintf(args, sizeof args, "eval sweep -m %s -f %s -o /nonexistent-dir/x.json", model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "/nonexistent-dir/x.json: cannot write it") != NULL);
    CHECK(strstr(err, "Q8_0") == NULL);   /* refused before the sweep: no row measured */
    snprintf(args, sizeof args, "eval sweep -m %s -f %s -o %s", model, text, test_tmpdir());   /* a directory */
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "is a directory") && strstr(err, "Q8_0") == NULL);
    snprintf(args, sizeof args, "eval save-logits -m %s -f %s -c 64 -o /nonexistent-dir/x.bin", model, text);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "save-logits: /nonexistent-dir/x.bin: cannot write it") != NULL);
    /* saved logits into a pipe: refused at once (the header is completed at the end) */
    const char *fifo = tmp_path("logits.fifo");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "mkfifo %s && { timeout 60 cat %s >/dev/null & %s eval save-logits -m %s -f %s -c 64 -o %s; }",
             fifo, fifo, EDGELLM_CLI, model, text, fifo);
    CHECK(run_capture(cmd, err, sizeof err) != 0);
    CHECK(strstr(err, "cannot write saved logits to a pipe") != NULL);
    struct stat fst;
    CHECK(stat(fifo, &fst) == 0 && S_ISFIFO(fst.st_mode));
    /* an output that is an input: refused before any work, the input intact */
    const char *mcopy = copy_fixture(model, "out-is-in.gguf"), *tcopy = copy_fixture(text, "out-is-in.txt");
    struct stat m0, m1;
    CHECK_EQ(stat(mcopy, &m0), 0);
    snprintf(args, sizeof args, "logits -m %s --tokens '1 2' -o %s", mcopy, mcopy);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 2);
    CHECK(strstr(err, "the output is the model file") != NULL);
    snprintf(args, sizeof args, "eval save-logits -m %s -f %s -c 64 -o %s", mcopy, tcopy, tcopy);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 2);
    CHECK(strstr(err, "the output is the input file") != NULL);
    snprintf(args, sizeof args, "eval sweep -m %s -f %s -o %s", mcopy, tcopy, mcopy);
    CHECK_EQ(run_cli(args, NULL, 0, err, sizeof err), 2);
    CHECK(strstr(err, "the output is the input file") != NULL);
    CHECK(stat(mcopy, &m1) == 0 && m1.st_size == m0.st_size && m1.st_ino == m0.st_ino);
#ifdef EDGELLM_HAVE_CJSON
    CHECK_EQ(run_cli("plan --model tinyllama-1.1b --eval /nonexistent-dir/r.eval.json", NULL, 0, err, sizeof err), 1);
    CHECK(strstr(err, "r.eval.json: cannot open: No such file") != NULL);
#endif
}

static void test_cli_bad_values_point_to_help(void)
{
    static const char *cases[][2] = {
        {"bench -m x.gguf -t 0", "bench"},        {"bench -m x.gguf -r 0", "bench"},
        {"bench -m x.gguf -o yaml", "bench"},     {"bench -m x.gguf -p 0 -n 0", "bench"},
        {"synth --shape tinyllama-1.1b --type q4_0 -o x -t 0", "synth"},
        {"synth --n-embd 0", "synth"},            {"run -m x.gguf -t 0", "run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[1024], err[4096], want[64];
        snprintf(want, sizeof want, "see 'edgellm %s --help'", cases[i][1]);
        int f0 = test_failures;
        CHECK_EQ(run_cli(cases[i][0], out, sizeof out, err, sizeof err), 2);
        CHECK(strstr(err, want) != NULL);
        CHECK_EQ(count_lines(err), 2);
        if (test_failures != f0) fprintf(stderr, "   case %s\n   -> %s", cases[i][0], err);
    }
}

/* "--name=value" (getopt_long's form) is "--name value" in every command, and a flag that
 * takes no value refuses one rather than ignoring it */
static void test_cli_long_options_with_equals(void)
{
    NEED_SHARED(model, STORIES);
    char args[4096], out[8192], err[4096], out2[8192];
    /* each pair: the spaced form and the "=" form print the same; a value that itself looks
     * like "--a=b" stays the value of the option before it */
    static const char *same[][2] = {
        {"run -m %s -p Once -n 8 --temp 0 --ctx-size 64", "run --model=%s --prompt=Once --n-predict=8 --temp=0 --ctx-size=64"},
        {"tokenize -m %s -p --a=b --ids", "tokenize --model=%s --prompt=--a=b --ids"},
        {"tokenize -m %s -p Hello --ids", "tokenize --model=%s --prompt=Hello --ids"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        snprintf(args, sizeof args, same[i][0], model);
        CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
        snprintf(args, sizeof args, same[i][1], model);
        CHECK_EQ(run_cli(args, out2, sizeof out2, err, sizeof err), 0);
        CHECK(!strcmp(out, out2) && out[0]);
    }
    snprintf(args, sizeof args, "info --model=%s", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "bench --model=%s --n-prompt=0 --n-gen=2 --repetitions=1 --threads=1 --kv-type=f16 "
             "--bw-gbps=5 --no-cold", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "| f16 | f16 | tg2 |") != NULL);
    static const char *refused[][2] = {
        {"run -m x.gguf --no-bos=1", "--no-bos takes no value"}, {"bench -m x.gguf --no-cold=yes", "--no-cold takes no value"},
        {"quantize --asym=1 a b --type q8_0", "--asym takes no value"}, {"synth --tied=1", "--tied takes no value"},
        {"tokenize --ids=1", "--ids takes no value"}, {"info --check=1 x", "--check takes no value"},
        {"plan --json=1", "--json takes no value"}, {"eval sweep -m x -f y --keep=1", "--keep takes no value"},
        {"logits --decode=1", "--decode takes no value"}, {"run -m x.gguf --frob=1", "unknown option '--frob'"},
        {"info --frob=1 x", "unknown option '--frob'"}, {"plan --frob=1", "unknown option '--frob'"},
        /* --help takes no value in any command (getopt_long refuses --help=x too) */
        {"run --help=x", "--help takes no value"}, {"bench --help=x", "--help takes no value"},
        {"quantize --help=x", "--help takes no value"}, {"synth --help=", "--help takes no value"},
        {"tokenize --help=x", "--help takes no value"}, {"info --help=x", "--help takes no value"},
        {"plan --help=x", "--help takes no value"}, {"eval ppl --help=x", "--help takes no value"},
        {"logits --help=x", "--help takes no value"}, {"convert --help=x", "--help takes no value"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const int f0 = test_failures;
        CHECK_EQ(run_cli(refused[i][0], out, sizeof out, err, sizeof err), 2);
        CHECK(strstr(err, refused[i][1]) != NULL);
        if (test_failures != f0) fprintf(stderr, "   case %s -> %s", refused[i][0], err);
    }
}

/* bench -o csv quotes its text fields (RFC 4180): a model path with a comma, a quote and a
 * backslash keeps every record at the header's 31 fields; -o json escapes it. */
static void test_cli_bench_csv_quotes_paths(void)
{
    NEED_SHARED(model, STORIES);
    const char *odd = copy_fixture(model, "we\"ird,na\\me.gguf");
    char args[2048], out[16384], err[4096];
    snprintf(args, sizeof args, "bench -m '%s' -p 4 -n 4 -r 1 -t 1 --no-cold --bw-gbps 5 -o csv", odd);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK_EQ(csv_records(out, 31), 3);                 /* header, pp4, tg4 */
    CHECK(strstr(out, "ird,na\\me.gguf\",") && strstr(out, "we\"\"ird"));
    snprintf(args, sizeof args, "bench -m '%s' -p 4 -n 0 -r 1 -t 1 --no-cold --bw-gbps 5 -o json", odd);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "we\\\"ird,na\\\\me.gguf") != NULL);
}

/* A signal that stops a command mid-write (SIGTERM from a service manager, Ctrl-C's SIGINT)
 * leaves neither the half-written "OUT.tmp.PID" nor OUT: the CLI's handler removes the
 * temporaries edgellm registered, then the process dies of that signal. The signal is sent
 * once the temporary exists (polled), so the check cannot pass by timing. */
static void test_cli_signal_removes_temp_file(void)
{
    const int sigs[] = {SIGTERM, SIGINT};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        const char *out = test_tmp_path("signalled.gguf");
        unlink(out);
        pid_t pid = fork();
        if (pid == 0) {
            signal(sigs[k], SIG_DFL);   /* a background shell may have ignored SIGINT */
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
            execl(EDGELLM_CLI, EDGELLM_CLI, "synth", "--shape", "smollm2-360m", "--type", "f16", "-o", out, (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        if (pid <= 0) return;
        char tmp[700];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)pid);
        bool seen = false, exited = false;
        int st = 0;
        for (int i = 0; i < 40000 && !seen && !exited; i++) {
            if (access(tmp, F_OK) == 0) seen = true;
            else if (waitpid(pid, &st, WNOHANG) == pid) exited = true;
            else usleep(250);
        }
        CHECK(seen);
        if (!exited) {
            kill(pid, sigs[k]);
            CHECK_EQ(waitpid(pid, &st, 0), pid);
        }
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sigs[k]);
        CHECK(access(tmp, F_OK) != 0);
        CHECK(access(out, F_OK) != 0);
        unlink(tmp);
        unlink(out);
    }
}

/* --version names the active kernel level; an EDGELLM_KERNELS the dispatcher ignores (an
 * unknown name) or caps (a level of another architecture) gets a warning instead of
 * silently running the default */
static void test_cli_kernels_env_is_checked(void)
{
    char out[1024], err[1024], saved[64] = "";
    const char *was = getenv("EDGELLM_KERNELS");
    if (was) snprintf(saved, sizeof saved, "%s", was);
    setenv("EDGELLM_KERNELS", "portable", 1);   /* another name of scalar */
    CHECK_EQ(run_cli("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "(kernels: scalar)") && err[0] == 0);
    setenv("EDGELLM_KERNELS", "", 1);           /* empty: as unset */
    CHECK_EQ(run_cli("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(err[0] == 0);
    setenv("EDGELLM_KERNELS", "scalar", 1);
    CHECK_EQ(run_cli("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "(kernels: scalar)") && err[0] == 0);
    setenv("EDGELLM_KERNELS", "bogus", 1);
    CHECK_EQ(run_cli("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(err, "EDGELLM_KERNELS=bogus is not a kernel level") && strstr(out, "(kernels: "));
#if defined(__x86_64__)
    setenv("EDGELLM_KERNELS", "neon", 1);
    CHECK_EQ(run_cli("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(err, "EDGELLM_KERNELS=neon is not a kernel level of this build") != NULL);
#endif
    if (was) setenv("EDGELLM_KERNELS", saved, 1);
    else unsetenv("EDGELLM_KERNELS");
}

static void test_cli_bench_checks_models_before_printing(void)
{
    NEED_SHARED(model, STORIES);
    char args[1024], out[4096], err[4096];
    CHECK_EQ(run_cli("bench -m /nonexistent/missing.gguf", out, sizeof out, err, sizeof err), 1);
    CHECK(out[0] == 0);   /* no table header */
    CHECK(!strcmp(err, "edgellm bench: /nonexistent/missing.gguf: No such file or directory\n"));
    /* a good model first, the missing one second: still nothing measured or printed */
    snprintf(args, sizeof args, "bench -m %s -m /nonexistent/missing.gguf -o csv", model);
    double t0 = edgellm_time_ms();
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 1);
    CHECK(edgellm_time_ms() - t0 < 5000);
    CHECK(out[0] == 0);
    CHECK(strstr(err, "/nonexistent/missing.gguf") && count_lines(err) == 1);
    /* not a GGUF file */
    const char *junk = tmp_path("junk.gguf");
    write_file(junk, "not a gguf file, just text..........", 36);
    snprintf(args, sizeof args, "bench -m %s -o json", junk);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 1);
    CHECK(out[0] == 0 && strstr(err, "junk.gguf"));
}

/* A file that opens as GGUF but does not load as a model (an architecture edgellm does not
 * run) is reported and skipped: the models after it are still measured, exit status 1. */
static void test_cli_bench_skips_a_model_that_fails(void)
{
    NEED_SHARED(model, STORIES);
    const float v[4] = {1, 2, 3, 4};
    const int64_t ne[1] = {4};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(w && edgellm_gguf_writer_set_str(w, "general.architecture", "bert"));
    CHECK(edgellm_gguf_writer_add_tensor(w, "t", EDGELLM_TYPE_F32, 1, ne, v));
    const char *bad = tmp_path("bert.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, bad, NULL));
    edgellm_gguf_writer_free(w);
    char args[2048], out[8192], err[4096];
    snprintf(args, sizeof args, "bench -m %s -m %s -p 0 -n 4 -r 1 -t 1 --bw-gbps 10 -o csv", bad, model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 1);
    CHECK(strstr(err, "bert.gguf") != NULL);
    CHECK(strstr(out, "tg4") != NULL);                       /* the second model's row */
    CHECK(strstr(out, "bert.gguf") == NULL);
    snprintf(args, sizeof args, "bench -m %s -m %s -p 0 -n 4 -r 1 -t 1 --bw-gbps 10", model, bad);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 1);
    CHECK(strstr(out, "tg4") && strstr(out, "load"));       /* row and footer of the good one */
}

static void test_cli_sweep_no_bench_prints_dash(void)
{
    NEED_SHARED(model, STORIES);
    NEED_SHARED(text, VAL_TEXT);
    static char out[16384];
    char args[2048], err[8192];
    const char *res = tmp_path("sweep.eval.json");
    snprintf(args, sizeof args, "eval sweep -m %s -f %s -c 64 --chunks 2 --types q8_0 --no-bench -o %s --tmp %s", model,
             text, res, test_tmpdir());
    int rc = run_cli(args, out, sizeof out, err, sizeof err);
    if (rc == 2 && strstr(err, "cannot write JSON")) {   /* a build without cJSON */
        strcat(args, " --no-results");
        rc = run_cli(args, out, sizeof out, err, sizeof err);
        res = NULL;
    }
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "tok/s: not measured (--no-bench)"));
    const char *rows[2] = {"F32 (ref)", "Q8_0"};
    for (int i = 0; i < 2; i++) {
        const char *r = strstr(out, rows[i]);
        const char *eol = r ? strchr(r, '\n') : NULL;
        CHECK(r && eol);
        if (!r || !eol) continue;
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(eol - r), r);
        /* the column before "used": right-aligned "-" (was "0") */
        CHECK(strstr(line, "         -  ") != NULL);
        CHECK(strstr(line, "         0  ") == NULL);
    }
    if (res) {
        char *json = read_file(res, NULL);
        CHECK(json && strstr(json, "\"tok_per_s\":\tnull") && !strstr(json, "\"tok_per_s\":\t0"));
        free(json);
    }
}

/* cli_draw_bar under a pseudo-terminal (quantize and synth install it only on a tty), and
 * cli_json_str on a file name holding '"' and '\'. */
static void test_cli_progress_bar_and_json_strings(void)
{
    NEED_SHARED(model, STORIES);
    char args[4096], out[4096], err[16384];
    /* JSON: the report names the output; its name has a quote and a backslash */
    const char *odd = tmp_path("q\"x\\y.gguf"), *rep = tmp_path("rep.json");
    snprintf(args, sizeof args, "quantize %s '%s' --type q8_0 --report %s", model, odd, rep);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    char *json = read_file(rep, NULL);
    CHECK(json && strstr(json, "q\\\"x\\\\y.gguf\""));
    free(json);
    if (run_capture("command -v script >/dev/null", NULL, 0) != 0) {
        fprintf(stderr, "   SKIP (part): no 'script' to give the CLI a terminal\n");
        return;
    }
    const char *o2 = tmp_path("bar.gguf"), *tty = tmp_path("tty.txt");
    snprintf(args, sizeof args, "script -qec '%s quantize %s %s --type q4_0 -t 1' %s >/dev/null", EDGELLM_CLI, model,
             o2, tty);
    CHECK_EQ(run_capture(args, NULL, 0), 0);
    char *t = read_file(tty, NULL);
    /* "\r[" 30 cells "] NNN% what": starts empty, reaches 100 %, then the line is erased */
    CHECK(t && strstr(t, "\r[                              ]   0% "));
    CHECK(t && strstr(t, "\r[##############################] 100% "));
    CHECK(t && strstr(t, "\r                                                                        \r"));
    free(t);
}

/* Found by a new-user pass: a vocabulary-only GGUF "quantized" to an empty copy with exit 0,
 * and run accepted -t 1000 at parse time (then failed at load with exit 1). */
static void test_cli_quantize_no_tensors_and_run_thread_range(void)
{
    NEED_SHARED(vocab, "data/vocab/ggml-vocab-llama-spm.gguf");
    char args[1024], out[4096], err[4096];
    const char *dst = tmp_path("vocab-q8.gguf");
    snprintf(args, sizeof args, "quantize %s %s --type q8_0", vocab, dst);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 1);
    CHECK(strstr(err, "has no tensors: nothing to quantize") && strstr(err, vocab));
    CHECK(access(dst, F_OK) != 0);   /* nothing written */
    CHECK_EQ(run_cli("run -m /nonexistent/m.gguf -p x -t 1000", out, sizeof out, err, sizeof err), 2);
    CHECK(strstr(err, "64"));
}

/* quantize --target --task: the task's accuracy on the written file and the reference, and
 * the gap, on stderr and in the report; OUT.eval.json beside OUT.gguf holds the held-out
 * result, which `plan --model OUT.gguf` shows as the file's measured quality. */
static void test_cli_quantize_target_task_and_plan(void)
{
    NEED_SHARED(model, STORIES);
    NEED_SHARED(text, VAL_TEXT);
    const char *slash = strrchr(__FILE__, '/');
    char task[1024], args[4096], out[16384], err[16384], evpath[1024];
    snprintf(task, sizeof task, "%.*s/../data/tasks/tinystories_mc.jsonl", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".");
    const char *dst = tmp_path("auto.gguf"), *rep = tmp_path("auto.json");
    snprintf(evpath, sizeof evpath, "%.*s.eval.json", (int)strlen(dst) - 5, dst);
    snprintf(args, sizeof args,
             "quantize %s %s --target kld:0.05 --calib %s --calib-chunks 4 --scan-chunks 2 --heldout-chunks 4 "
             "--scan proxy --rounds 2 --task %s --report %s -t 1",
             model, dst, text, task, rep);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(err, "task ") && strstr(err, "acc ") && strstr(err, "gap ") && strstr(err, "240 items"));
    size_t len = 0;
    char *js = read_file(rep, &len);
    CHECK(js && strstr(js, "\"task\": {\"file\": ") && strstr(js, "\"gap_pts\": "));
    free(js);
    char *ev = read_file(evpath, &len);
    CHECK(ev && strstr(ev, "\"format\": \"edgellm-eval-results\"") && strstr(ev, "\"model\": \"auto.gguf\"") &&
          strstr(ev, "\"kld_mean\": "));
    free(ev);
    snprintf(args, sizeof args, "plan --model %s --device phone-mid", dst);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    const char *row = strstr(out, "(file)");
    CHECK(row && strstr(out, "edgellm eval: ") && strstr(out, "auto.eval.json"));
    /* the file's row has a measured KLD, not '-' */
    if (row) {
        const char *eol = strchr(row, '\n');
        CHECK(eol && eol[-1] != '-');
    }
}

/* plan warns (stderr, exit 0) when n_ctx is past the model's trained context, not before. */
static void test_cli_plan_ctx_beyond_trained_notes(void)
{
    char out[65536], err[4096];
    CHECK_EQ(run_cli("plan --model smollm2-135m --device pi5-8gb --ctx 16384", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(err, "n_ctx 16384 is beyond smollm2-135m's trained context (8192)"));
    CHECK_EQ(run_cli("plan --model smollm2-135m --device pi5-8gb --ctx 8192", out, sizeof out, err, sizeof err), 0);
    CHECK(!strstr(err, "beyond"));
}

/* bench --lookup / --draft: one row per model and thread count, plain and speculative
 * greedy texts identical, the draft counts (exact); eval task --cascade prints the curve. */
static void test_cli_bench_speculative_and_eval_cascade(void)
{
    NEED_SHARED(model, STORIES);
    char args[2048], out[16384], err[4096];
    snprintf(args, sizeof args, "bench -m %s --lookup 2 -n 48 -r 2 -t 1 --no-warmup -o csv", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    static const char head[] = "model_filename,draft,n_threads,n_gen,plain_ts,spec_ts,speedup,n_drafted,";
    CHECK(!strncmp(out, head, strlen(head)));
    CHECK(strstr(out, ",\"lookup 2\",1,48,") || strstr(out, ",lookup 2,1,48,"));
    const char *nl = strrchr(out, ',');
    CHECK(nl && nl[1] == '1');   /* identical */
    snprintf(args, sizeof args, "bench -m %s --draft self:q8_0 --draft-max 4 --draft-fixed -n 32 -r 1 -t 1 -o json",
             model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "\"draft\": \"self:q8_0, fixed 4\"") && strstr(out, "\"identical\": true"));
    const char *a = strstr(out, "\"acceptance\": ");
    CHECK(a && atof(a + strlen("\"acceptance\": ")) > 0.5);   /* a Q8_0 copy of stories260K: about 96 % */
    const char *pp = strstr(out, "\"passes_per_token\": ");
    const double ppt = pp ? atof(pp + strlen("\"passes_per_token\": ")) : 0;
    CHECK(ppt > 0 && ppt < 0.6);
    snprintf(args, sizeof args, "bench -m %s --lookup 2 -b 2", model);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 2);
    const char *slash = strrchr(__FILE__, '/');
    char data[1024];
    snprintf(data, sizeof data, "%.*s/../data/tasks/tinystories_mc.jsonl", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".");
    snprintf(args, sizeof args, "eval task -m %s --cascade %s --data %s --limit 12 -t 1", model, model, data);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "items: 12;") && strstr(out, "| threshold (choice probability) |"));
    CHECK(strstr(out, "chosen: threshold 0.000") && strstr(out, "0.0 % escalated"));   /* the same model: never */
    snprintf(args, sizeof args, "eval task -m %s --cascade %s --ref %s --data %s", model, model, model, data);
    CHECK_EQ(run_cli(args, out, sizeof out, err, sizeof err), 2);
}

int main(void)
{
    RUN(test_cli_run_no_bos_empty_prompt_notes_bos);
    RUN(test_cli_info_takes_model_flag);
    RUN(test_cli_output_is_input_exit_2);
    RUN(test_cli_bad_values_point_to_help);
    RUN(test_cli_text_commands_need_a_tokenizer);
    RUN(test_cli_eval_warns_past_trained_context);
    RUN(test_cli_endless_and_blocking_inputs);
    RUN(test_cli_unwritable_outputs);
    RUN(test_cli_kernels_env_is_checked);
    RUN(test_cli_long_options_with_equals);
    RUN(test_cli_signal_removes_temp_file);
    RUN(test_cli_bench_csv_quotes_paths);
    RUN(test_cli_bench_checks_models_before_printing);
    RUN(test_cli_bench_skips_a_model_that_fails);
    RUN(test_cli_sweep_no_bench_prints_dash);
    RUN(test_cli_progress_bar_and_json_strings);
    RUN(test_cli_quantize_no_tensors_and_run_thread_range);
    RUN(test_cli_plan_ctx_beyond_trained_notes);
    RUN(test_cli_bench_speculative_and_eval_cascade);
    RUN(test_cli_quantize_target_task_and_plan);
    return test_summary();
}
