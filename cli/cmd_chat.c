/* cmd_chat.c — `edgellm chat`: talk to a model in the terminal with its chat template.
 *
 * Each line read is a user turn; the whole conversation is rendered with the template and
 * tokenized (edgellm_chat_tokenize: the template's special tokens parsed, the user's text
 * never), and the answer is generated into one sequence that keeps what it already holds
 * (edgellm_generate's prompt cache: a turn costs only its own tokens). When the
 * conversation outgrows the context, the oldest turns after the system prompt are dropped
 * (and said so on stderr). Ctrl-C stops the answer being written, not the program; at the
 * prompt it ends the chat, as does end of input. Commands: /reset, /save FILE, /load FILE,
 * /exit.
 *
 * stdout: the answers (and the "> " prompt when stdin is a terminal); stderr: the speed of
 * each answer and notes. Reading a file or pipe, each line is a turn: a script. */
#include "chat_json.h"
#include "commands.h"
#include "governor_opts.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static edgellm_ctx *volatile g_chat_ctx;        /* what SIGINT aborts                */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
    edgellm_ctx *c = g_chat_ctx;
    if (c) edgellm_ctx_abort(c);                   /* sets a flag: async-signal-safe */
}

typedef struct {
    char *text;
    size_t len, cap;
} answer_buf;

static edgellm_governor *g_chat_gov;   /* --governor: paces tokens, pauses */

static int on_piece(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    answer_buf *a = user;
    if (g_chat_gov) edgellm_governor_between_tokens(g_chat_gov);
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    if (a->len + len + 1 > a->cap) {
        size_t cap = (a->len + len + 1) * 2;
        char *t = realloc(a->text, cap);
        if (!t) return 1;
        a->text = t;
        a->cap = cap;
    }
    memcpy(a->text + a->len, piece, len);
    a->len += len;
    a->text[a->len] = 0;
    return ferror(stdout) ? 1 : 0;
}

/* One user line: render, tokenize, generate, record the answer. 0, or 1 on a failure that
 * ends the chat. */
static int chat_turn(edgellm_model *model, edgellm_ctx *ctx, const char *tmpl, cli_chat *conv, const char *line,
                     const edgellm_generate_params *gp0, int32_t *ids)
{
    edgellm_error err = {0};
    if (!cli_chat_push(conv, "user", line)) { fprintf(stderr, "edgellm chat: out of memory\n"); return 1; }
    const int n_ctx = edgellm_ctx_n_ctx(ctx);
    const int reserve = gp0->n_predict >= 0 && gp0->n_predict < n_ctx / 2 ? gp0->n_predict : n_ctx / 4;
    int n = 0, dropped = 0;
    edgellm_status s = edgellm_chat_tokenize(model, tmpl, conv->msgs, conv->n, NULL, ids, n_ctx - reserve, &n,
                                             &dropped, &err);
    if (s) {
        cli_print_error("chat", &err);
        cli_chat_remove(conv, conv->n - 1, 1);        /* the turn did not happen */
        return s == EDGELLM_ERR_CTX_FULL || s == EDGELLM_ERR_MISUSE ? 0 : 1;
    }
    if (dropped) {
        const int first = conv->n && !strcmp(conv->msgs[0].role, "system") ? 1 : 0;
        cli_chat_remove(conv, first, dropped);
        fprintf(stderr, "[the conversation outgrew the context: dropped the %d oldest message%s]\n", dropped,
                dropped == 1 ? "" : "s");
    }
    edgellm_generate_params gp = *gp0;
    gp.prompt_tokens = ids;
    gp.n_prompt_tokens = n;
    gp.append = 0;                                     /* keeps the cached prefix */
    edgellm_generate_stats st = {.size = sizeof st};
    answer_buf a = {0};
    g_interrupted = 0;
    g_chat_ctx = ctx;
    s = edgellm_generate(ctx, NULL, &gp, on_piece, &a, &st, &err);
    g_chat_ctx = NULL;
    fputc('\n', stdout);
    fflush(stdout);
    if (s && s != EDGELLM_ERR_CANCELLED) {
        cli_print_error("chat", &err);
        free(a.text);
        return 1;
    }
    if (!cli_chat_push(conv, "assistant", a.text ? a.text : "")) { free(a.text); return 1; }
    free(a.text);
    fprintf(stderr, "[%d tokens, %.1f tok/s; prompt %d tokens, %d cached, first token after %.0f ms%s]\n",
            st.n_generated, st.decode_ms > 0 ? st.n_generated * 1000.0 / st.decode_ms : 0.0, st.n_prompt,
            st.n_cached, st.prefill_ms, s == EDGELLM_ERR_CANCELLED ? "; stopped" : "");
    return 0;
}

/* /save FILE and /load FILE. */
static void save_chat(const cli_chat *conv, const char *path)
{
    edgellm_output *o = NULL;
    edgellm_error err = {0};
    if (edgellm_output_open(path, "w", &o, &err)) { cli_print_error("chat", &err); return; }
    cli_chat_write(edgellm_output_stream(o), conv);
    if (edgellm_output_commit(o, &err)) cli_print_error("chat", &err);
    else fprintf(stderr, "[saved %d messages to %s]\n", conv->n, path);
}

int cmd_chat(int argc, char **argv)
{
    const char *model_path = NULL, *tmpl_arg = NULL, *system = NULL;
    edgellm_generate_params gp = edgellm_generate_default_params();
    edgellm_model_params mp = edgellm_model_default_params();
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    int n_seed = 0;
    gp.n_predict = -1;
    cli_gov_opts go;
    cli_gov_opts_init(&go);
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model_path), .help = "GGUF model", .required = 1},
        {CLI_STRING(NULL, "--chat-template", "NAME|FILE", &tmpl_arg),
         .help = "a built-in template (chatml, llama2, llama3, mistral, phi3, gemma, zephyr) or a Jinja file",
         .def = "the model's tokenizer.chat_template"},
        {CLI_STRING("-s", "--system", "TEXT", &system), .help = "system prompt (kept when old turns are dropped)"},
        {CLI_INT("-n", "--n-predict", "N", &gp.n_predict, -1, INT_MAX),
         .help = "tokens per answer at most, -1 = until the end of the turn", .def = "-1"},
        CLI_SAMPLING_OPTS(&gp.sampling),
        {CLI_U64(NULL, "--seed", "S", &gp.sampling.seed), .count = &n_seed,
         .help = "RNG seed, a non-negative integer", .def = "from the clock"},
        {CLI_OPT_CTX_SIZE(&cp.n_ctx)},
        {CLI_OPT_THREADS(&mp.n_threads)},
        {CLI_OPT_KV_TYPE(&cp.kv_type)},
        CLI_GOV_OPTS(&go),
    };
    const cli_command cmd = {
        .name = "chat", .synopsis = "edgellm chat -m MODEL.gguf [--chat-template NAME|FILE] [-s SYSTEM] [options]",
        .about = "Chat with a model in the terminal, multi-turn, with its chat template. Each line is a user turn;\n"
                 "a file or pipe on stdin is a script of turns.",
        .notes = "In the chat: /reset forgets the conversation (not the system prompt), /save FILE writes it as an\n"
                 "OpenAI messages array, /load FILE reads one, /exit ends. Ctrl-C stops an answer; at the prompt it\n"
                 "ends the chat.\n",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    cp.n_threads = mp.n_threads;
    if (!n_seed) gp.sampling.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

    int rc = 1;
    char *owned = NULL, *line = NULL;
    const char *tmpl = NULL;
    int32_t *ids = NULL;
    cli_chat conv = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_error err = {0};
    struct sigaction old_int, sa;
    bool handler = false;
    edgellm_governor *gov = NULL;
    edgellm_simdev *sim = NULL;
    if (cli_chat_template("chat", tmpl_arg, &owned, &tmpl)) return 1;
    if (cli_gov_start("chat", &go, mp.n_threads, &gov, &sim)) { free(owned); return 1; }
    g_chat_gov = gov;
    if (gov) cp.n_threads = edgellm_governor_threads(gov, mp.n_threads);
    if (edgellm_model_load(model_path, &mp, &model, &err) || edgellm_ctx_new(model, &cp, &ctx, &err)) {
        cli_print_error("chat", &err);
        goto done;
    }
    if (!tmpl && edgellm_model_chat_template(model, NULL, 0) < 0) {
        fprintf(stderr, "edgellm chat: %s has no chat template (tokenizer.chat_template): give --chat-template "
                        "NAME|FILE (built-ins: %s)\n", model_path, cli_chat_template_names());
        goto done;
    }
    if (!(ids = malloc((size_t)edgellm_ctx_n_ctx(ctx) * sizeof *ids))) goto done;
    if (system && !cli_chat_push(&conv, "system", system)) goto done;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;                        /* no SA_RESTART: Ctrl-C at the prompt ends fgets */
    sigemptyset(&sa.sa_mask);
    handler = sigaction(SIGINT, &sa, &old_int) == 0;
    const bool tty = isatty(STDIN_FILENO);
    size_t cap = 0;
    rc = 0;
    for (;;) {
        if (tty) { fputs("> ", stdout); fflush(stdout); }
        g_interrupted = 0;
        errno = 0;
        const ssize_t got = getline(&line, &cap, stdin);
        if (got < 0) {                                /* end of input, or Ctrl-C at the prompt */
            if (tty) fputc('\n', stdout);
            break;
        }
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        if (strlen(line) != len) { fprintf(stderr, "edgellm chat: the line contains a NUL byte; skipped\n"); continue; }
        if (line[0] == '/') {
            char *arg = strchr(line, ' ');
            if (arg) *arg++ = 0;
            while (arg && *arg == ' ') arg++;
            if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) break;
            if (!strcmp(line, "/reset")) {
                cli_chat_remove(&conv, system ? 1 : 0, conv.n - (system ? 1 : 0));   /* the cache keeps the system prompt */
                fprintf(stderr, "[conversation reset]\n");
            } else if (!strcmp(line, "/save") && arg && *arg) {
                save_chat(&conv, arg);
            } else if (!strcmp(line, "/load") && arg && *arg) {
                cli_chat loaded;
                if (!cli_chat_read(arg, &loaded, &err)) cli_print_error("chat", &err);
                else {
                    cli_chat_free(&conv);
                    conv = loaded;
                    fprintf(stderr, "[loaded %d messages from %s]\n", conv.n, arg);
                }
            } else {
                fprintf(stderr, "edgellm chat: unknown command '%s' (/reset, /save FILE, /load FILE, /exit)\n", line);
            }
            continue;
        }
        if (gov) {   /* the governor: wait while it pauses; its thread count for the next answer */
            for (int w = 0; !edgellm_governor_admit(gov) && !g_interrupted; w++) {
                if (!w) fprintf(stderr, "[the governor pauses: waiting for the device to cool]\n");
                struct timespec ts = {0, 250000000};
                nanosleep(&ts, NULL);
            }
            const int want = edgellm_governor_threads(gov, mp.n_threads);
            if (want > 0 && want != edgellm_ctx_n_threads(ctx)) {   /* a new context: the turns are prefilled again */
                edgellm_ctx *nc = NULL;
                cp.n_threads = want;
                if (edgellm_ctx_new(model, &cp, &nc, &err)) { cli_print_error("chat", &err); rc = 1; break; }
                edgellm_ctx_free(ctx);
                ctx = nc;
            }
        }
        if ((rc = chat_turn(model, ctx, tmpl, &conv, line, &gp, ids))) break;
    }
done:
    if (handler) sigaction(SIGINT, &old_int, NULL);
    free(line);
    free(ids);
    free(owned);
    cli_chat_free(&conv);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    g_chat_gov = NULL;
    cli_gov_stop(gov, sim);
    return rc;
}
