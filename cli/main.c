/* main.c — the edgellm command line: picks a subcommand and hands it argv. Commands only
 * read their options (cli/args.c, from a table each), call the library and print results;
 * the helpers they share (error lines, the --kv-type names, progress bar, JSON strings;
 * declared in commands.h) follow the table. */
#include "commands.h"
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} command;

static const command commands[] = {
    {"plan", cmd_plan, "will a model fit on a device, at which precision, how fast (start here)"},
    {"run", cmd_run, "generate text from a prompt (or a file of prompts, batched)"},
    {"chat", cmd_chat, "talk to a model in the terminal with its chat template, multi-turn"},
    {"template", cmd_template, "render a chat template over a conversation (check templates)"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server with continuous batching (chat UIs, editors, agents)"},
    {"info", cmd_info, "show a GGUF file's metadata, tensors, parameter count and bits per weight"},
    {"tokenize", cmd_tokenize, "turn text into token ids"},
    {"logits", cmd_logits, "write every position's logits for given token ids (float32 LE)"},
    {"convert", cmd_convert, "convert a Hugging Face checkpoint (or a llama2.c one) to GGUF"},
    {"export", cmd_export, "write a GGUF model back as a Hugging Face checkpoint folder"},
    {"cascade", cmd_cascade, "answer with a small model, escalate to a large one when it is unsure"},
    {"eval", cmd_eval, "is a quantized model good enough: perplexity, KL divergence, task accuracy, sweep"},
    {"quantize", cmd_quantize, "rewrite a GGUF model in a quantized type, with a per-tensor error report"},
    {"synth", cmd_synth, "write a random-weight model of a real architecture's shape (for benchmarks)"},
    {"bench", cmd_bench, "measure prefill/decode speed, load time, memory and the bandwidth roofline"},
    {"soak", cmd_soak, "run a workload for a long time: latency, memory and temperature drift, governor, plot"},
    {"store", cmd_store, "model versions on the device: signed, verified, activated, rolled back, patched"},
    {"delta", cmd_delta, "a per-tensor patch between two GGUF files (for store updates)"},
};

static void usage(FILE *f)
{
    fprintf(f, "edgellm %s — run language models on the device\n\nusage: edgellm COMMAND [options]\n\ncommands:\n",
            EDGELLM_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'edgellm COMMAND --help' shows a command's options. --no-repack (any command, or\n"
               "EDGELLM_REPACK=0): keep the weights in the file's layout instead of repacking them at load.\n");
}

/* A library message may itself start with the command's name ("eval sweep: ...", "eval: ..."):
 * skip such a prefix so the command is named once. */
static const char *skip_cmd_prefix(const char *cmd, const char *msg)
{
    size_t first = strcspn(cmd, " ");
    for (int again = 1; again;) {
        again = 0;
        size_t lens[2] = {strlen(cmd), first};
        for (int k = 0; k < 2; k++)
            if (!strncmp(msg, cmd, lens[k]) && msg[lens[k]] == ':' && msg[lens[k] + 1] == ' ') {
                msg += lens[k] + 2;
                again = 1;
                break;
            }
    }
    return msg;
}

void cli_print_error(const char *cmd, const edgellm_error *err)
{
    const char *msg = err && err->msg[0] ? skip_cmd_prefix(cmd, err->msg) : "failed";
    fprintf(stderr, "edgellm %s: %s\n", cmd, *msg ? msg : "failed");
}

int cli_see_help(const char *cmd)
{
    fprintf(stderr, "see 'edgellm %s --help'\n", cmd);
    return 2;
}

const cli_choice cli_kv_types[] = {
    {"f32", EDGELLM_TYPE_F32}, {"f16", EDGELLM_TYPE_F16}, {"q8_0", EDGELLM_TYPE_Q8_0}, {NULL, 0},
};

char *cli_read_text(const char *path, size_t *len, edgellm_error *err)
{
    const size_t max_bytes = CLI_MAX_TEXT_BYTES;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err->msg, sizeof err->msg, "%s: %s", path, strerror(errno)); return NULL; }
    struct stat st;   /* a directory opens but cannot be read; pipes and devices can */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err->msg, sizeof err->msg, "%s: is a directory, not a text file", path);
        fclose(f);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap);
    bool too_big = false;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n > max_bytes) { too_big = true; break; }
        if (cap - n - 1 == 0) {
            char *b = realloc(buf, cap * 2);
            if (!b) { free(buf); buf = NULL; break; }
            buf = b;
            cap *= 2;
        }
    }
    if (!buf) snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    else if (too_big) {
        snprintf(err->msg, sizeof err->msg, "%s: more than %zu MiB; edgellm reads text inputs up to that size", path,
                 max_bytes >> 20);
        free(buf);
        buf = NULL;
    } else if (ferror(f)) {
        snprintf(err->msg, sizeof err->msg, "%s: read failed: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) { buf[n] = 0; *len = n; }
    return buf;
}

long long cli_gguf_ctx_train(const edgellm_gguf_meta *g)
{
    const char *arch;
    size_t arch_len;
    int64_t train = 0;
    char key[96];
    if (edgellm_gguf_meta_get_str(g, "general.architecture", &arch, &arch_len) && arch_len < 64) {
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch_len, arch);
        if (!edgellm_gguf_meta_get_int(g, key, &train) || train < 0) train = 0;
    }
    return (long long)train;
}

long long cli_gguf_n_ctx_train(const char *path)
{
    edgellm_gguf_meta *g = NULL;
    if (!path || edgellm_gguf_meta_open(path, &g, NULL) != EDGELLM_OK) return 0;
    const long long train = cli_gguf_ctx_train(g);
    edgellm_gguf_meta_close(g);
    return train;
}

double cli_time_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *cli_kv_type_name(int type)
{
    return type == EDGELLM_TYPE_F16 ? "f16" : type == EDGELLM_TYPE_Q8_0 ? "q8_0" : "f32";
}

int cli_draw_bar(void *user, double f, const char *what)
{
    cli_bar *b = user;
    int pct = (int)(f * 100.0);
    if (pct == b->last_pct && f < 1.0) return 0;
    b->last_pct = pct;
    int filled = (int)(f * 30.0);
    fprintf(stderr, "\r[%.*s%*s] %3d%% %-32.32s", filled, "##############################", 30 - filled, "", pct,
            what ? what : "");
    if (f >= 1.0) fprintf(stderr, "\r%*s\r", 72, "");
    fflush(stderr);
    return 0;
}

/* EDGELLM_KERNELS and EDGELLM_PREFETCH values the library cannot use as given (an unknown
 * level name, a level above the CPU, a prefetch that does not parse) are ignored or capped
 * silently: say so, or an A/B of two levels would compare a level with itself. One warning
 * line per variable (edgellm_env_check). */
static void check_env(void)
{
    const size_t n = edgellm_env_check(NULL, 0);
    char *msg = n ? malloc(n + 1) : NULL;
    if (!msg) return;
    edgellm_env_check(msg, n + 1);
    for (const char *line = msg; *line;) {
        const size_t k = strcspn(line, "\n");
        fprintf(stderr, "edgellm: warning: %.*s\n", (int)k, line);
        line += k + (line[k] != 0);
    }
    free(msg);
}

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT: remove the temporary files being written (every
 * output's "OUT.tmp.PID" (edgellm_output_open), eval sweep's scratch folder), then die of the
 * same signal (the shell sees 128 + N, as without the handler). A signal the process inherited
 * as ignored (nohup) stays ignored. */
static void on_fatal_signal(int sig)
{
    edgellm_remove_temp_files();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_cleanup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    /* past a file-size limit (ulimit -f) a write then fails with EFBIG and the writer's own
     * cleanup runs, instead of SIGXFSZ killing the process with its temporary left behind */
    signal(SIGXFSZ, SIG_IGN);
}

/* The library's warnings (edgellm_log; it never prints itself): one stderr line each,
 * "edgellm CMD: warning: ...". Information and debug messages stay silent. */
static void print_warning(edgellm_log_level level, const char *msg, void *user)
{
    fprintf(stderr, "edgellm %s: %s: %s\n", (const char *)user, level == EDGELLM_LOG_ERROR ? "error" : "warning", msg);
}

int main(int argc, char **argv)
{
    install_signal_cleanup();
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    /* --no-repack / --repack anywhere: the weights kept in the file's layout, or repacked at
     * load where the kernel level has a layout for their type (the default; EDGELLM_REPACK=0 /
     * 1, which the kernel dispatcher reads at load) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--no-repack") || !strcmp(argv[i], "--repack")) {
            setenv("EDGELLM_REPACK", strcmp(argv[i], "--repack") ? "0" : "1", 1);
            memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof *argv);   /* argv[argc] = NULL too */
            argc--;
            i--;
        }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    check_env();
    if (!strcmp(argv[1], "--version")) {
        char k[256];
        edgellm_kernels_describe(k, sizeof k);
        printf("edgellm %s (kernels: %s)\n", EDGELLM_VERSION, k);
        return 0;
    }
    /* "-m store:NAME" (and "--model store:NAME", "--model=store:NAME"): the store's active
     * version of NAME (cmd_store.c) */
    static char store_paths[4][4096 + 8];
    for (int i = 2, k = 0; i < argc && k < 4; i++) {
        const bool opt = (!strcmp(argv[i - 1], "-m") || !strcmp(argv[i - 1], "--model")) &&
                         !strncmp(argv[i], "store:", 6);
        const bool eq = !strncmp(argv[i], "--model=store:", 14);
        if (!opt && !eq) continue;
        char *dst = store_paths[k++];
        const size_t pre = eq ? 8 : 0;
        memcpy(dst, argv[i], pre);
        if (cli_store_resolve(argv[i] + pre + 6, dst + pre, 4096)) return 1;
        argv[i] = dst;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            edgellm_log_set(print_warning, (void *)commands[i].name, EDGELLM_LOG_WARN);
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "edgellm: unknown command '%s'\nsee 'edgellm --help'\n", argv[1]);
    return 2;
}
