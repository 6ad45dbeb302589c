/* cmd_serve.c — 'edgellm serve': an OpenAI-compatible HTTP server (edgellm_server_run in
 * edgellm_tools.h; docs/server.md). The options become edgellm_server_params; the server's
 * lines go to stderr; SIGTERM and SIGINT stop it (it drains, then the command exits 0). */
#include "commands.h"
#include "governor_opts.h"
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void on_stop_signal(int sig)
{
    (void)sig;
    edgellm_server_stop();
}

static void print_line(void *user, edgellm_log_level level, const char *line)
{
    const int verbose = *(const int *)user;
    if (level == EDGELLM_LOG_DEBUG && !verbose) return;
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

/* The key from a file: its first line, without the line end. NULL (message printed) when
 * it cannot be read or is empty. */
static char *read_key_file(const char *path)
{
    edgellm_error err = {0};
    size_t len = 0;
    char *text = cli_read_text(path, &len, &err);
    if (!text) {
        fprintf(stderr, "edgellm serve: --api-key-file %s\n", err.msg);
        return NULL;
    }
    text[strcspn(text, "\r\n")] = 0;
    if (!text[0]) {
        fprintf(stderr, "edgellm serve: --api-key-file %s: the first line is empty\n", path);
        free(text);
        return NULL;
    }
    return text;
}

int cmd_serve(int argc, char **argv)
{
    edgellm_server_params sp = edgellm_server_default_params();
    const char *tmpl_arg = NULL, *key = NULL, *key_file = NULL;
    double timeout = sp.timeout_s, drain = sp.drain_s;
    int max_body_mib = (int)(sp.max_body_bytes >> 20), verbose = 0, draft_fixed = 0, np_given = 0;
    const char *draft_path = NULL;
    cli_gov_opts go;
    cli_gov_opts_init(&go);
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&sp.model_path), .help = "GGUF model", .required = 1},
        {CLI_STRING(NULL, "--host", "ADDR", &sp.host), .show_default = 1,
         .help = "address to listen on; another than loopback without a key is allowed, with a warning"},
        {CLI_INT(NULL, "--port", "N", &sp.port, 0, 65535), .show_default = 1,
         .help = "TCP port, 0 = a free one (printed)"},
        {CLI_INT("-np", "--parallel", "N", &sp.n_parallel, 1, 64), .show_default = 1, .count = &np_given,
         .help = "slots: requests decoded together in one forward pass"},
        {CLI_INT("-c", "--ctx-size", "N", &sp.n_ctx, 1, 1 << 24),
         .help = "KV cells of EACH slot (the cache holds -np x -c cells; -c is never divided)",
         .def = "the model's, at most 4096"},
        {CLI_OPT_THREADS(&sp.n_threads)},
        {CLI_OPT_KV_TYPE(&sp.kv_type)},
        {CLI_STRING(NULL, "--api-key", "KEY", &key),
         .help = "clients must send 'Authorization: Bearer KEY' (all endpoints but /health)"},
        {CLI_PATH(NULL, "--api-key-file", "FILE", &key_file), .help = "the key from the first line of FILE"},
        {CLI_STRING(NULL, "--chat-template", "NAME|FILE", &tmpl_arg),
         .help = "a built-in template (chatml, llama2, llama3, mistral, phi3, gemma, zephyr) or a Jinja file",
         .def = "the model's tokenizer.chat_template, else chatml"},
        {CLI_STRING(NULL, "--alias", "NAME", &sp.model_id), .help = "the model's id in /v1/models and responses",
         .def = "the file name without .gguf"},
        {CLI_INT(NULL, "--queue", "N", &sp.queue_size, 0, 1 << 20), .show_default = 1,
         .help = "requests that may wait for a slot; more get HTTP 429 with Retry-After"},
        {CLI_DOUBLE(NULL, "--timeout", "S", &timeout, 0, 1e9, CLI_CLOSED), .show_default = 1,
         .help = "seconds a request may take from its arrival (queue and generation), 0 = none"},
        {CLI_INT(NULL, "--batch", "N", &sp.prefill_batch, 1, 1 << 20), .show_default = 1,
         .help = "prompt tokens per forward pass over all slots (chunked prefill)"},
        {CLI_INT(NULL, "--max-body", "MIB", &max_body_mib, 1, 4096), .show_default = 1,
         .help = "request bodies above this many MiB get HTTP 413"},
        {CLI_DOUBLE(NULL, "--drain", "S", &drain, 0, 1e9, CLI_CLOSED), .show_default = 1,
         .help = "on SIGTERM/SIGINT: seconds running requests may finish before they are cancelled"},
        {CLI_FLAG("-v", "--verbose", &verbose, 1), .help = "also print libmicrohttpd's messages"},
        CLI_GOV_OPTS(&go),
        {CLI_GROUP("speculative decoding (one slot: -np 1, the default then; /metrics adds acceptance and speed-up)")},
        {CLI_STRING(NULL, "--draft", "DRAFT.gguf|self:TYPE", &draft_path), .help = "as run --draft"},
        {CLI_INT(NULL, "--lookup", "N", &sp.spec.lookup, 0, 1024), .show_default = 1, .help = "as run --lookup"},
        {CLI_INT(NULL, "--draft-max", "K", &sp.spec.draft_max, 1, 64), .show_default = 1,
         .help = "draft tokens per target pass at most"},
        {CLI_FLAG(NULL, "--draft-fixed", &draft_fixed, 1), .help = "always draft --draft-max tokens"},
    };
    const cli_command cmd = {
        .name = "serve", .synopsis = "edgellm serve -m MODEL.gguf [--host ADDR] [--port N] [-np N] [-c N] [options]",
        .about = "An OpenAI-compatible HTTP server: POST /v1/chat/completions and /v1/completions (streamed or not),\n"
                 "GET /v1/models, /health and /metrics (Prometheus). Requests on -np slots decode together; more\n"
                 "wait in a queue. Stops on SIGTERM or Ctrl-C after the running requests finish (--drain).",
        .notes = "Example:\n"
                 "  edgellm serve -m model.gguf --port 8080 -np 4 -c 4096\n"
                 "  curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \\\n"
                 "    -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 64}'\n",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (key && key_file) return cli_args_error(&cmd, "give --api-key or --api-key-file, not both");
    if (key && !*key) return cli_args_error(&cmd, "--api-key is empty");
    if ((draft_path || sp.spec.lookup > 0) && !np_given) sp.n_parallel = 1;
    if ((draft_path || sp.spec.lookup > 0) && sp.n_parallel != 1)
        return cli_args_error(&cmd, "--draft and --lookup need -np 1 (speculative decoding runs one request at a time)");
    sp.spec.adaptive = !draft_fixed;
    sp.timeout_s = timeout;
    sp.drain_s = drain;
    sp.max_body_bytes = (size_t)max_body_mib << 20;
    sp.log = print_line;
    sp.user = &verbose;

    char *owned_tmpl = NULL, *owned_key = NULL;
    const char *tmpl = NULL;
    if (cli_chat_template("serve", tmpl_arg, &owned_tmpl, &tmpl)) return 1;
    sp.chat_template = tmpl;
    if (key_file && !(key = owned_key = read_key_file(key_file))) {
        free(owned_tmpl);
        return 1;
    }
    sp.api_key = key;
    if ((go.enabled || go.n_given || go.policy_file) && (draft_path || sp.spec.lookup > 0)) {   /* a speculative request runs whole, not by steps */
        fprintf(stderr, "edgellm serve: --governor acts between the batched steps, which speculative decoding "
                        "(--draft, --lookup) does not use; give one or the other\n");
        free(owned_tmpl);
        free(owned_key);
        return 2;
    }
    if (go.light_model) {   /* one model and one context serve every slot */
        fprintf(stderr, "edgellm serve: --light-model is not applied by serve (one model serves all slots and their "
                        "caches); run a second server with the lighter model instead\n");
        free(owned_tmpl);
        free(owned_key);
        return 2;
    }
    edgellm_governor *gov = NULL;
    edgellm_simdev *sim = NULL;
    if (cli_gov_start("serve", &go, sp.n_threads, &gov, &sim)) {
        free(owned_tmpl);
        free(owned_key);
        return 1;
    }
    sp.governor = gov;
    if (draft_path) {
        edgellm_model_params mp = edgellm_model_default_params();
        mp.n_threads = sp.n_threads;
        edgellm_error derr = {0};
        if (cli_draft_load(sp.model_path, draft_path, &mp, &sp.draft, &derr) != EDGELLM_OK) {
            fprintf(stderr, "edgellm serve: draft: %s\n", derr.msg);
            cli_gov_stop(gov, sim);
            free(owned_key);
            free(owned_tmpl);
            return 1;
        }
    }

    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
    signal(SIGPIPE, SIG_IGN);   /* a client gone mid-answer is an error on its socket, not a signal */
    edgellm_error err = {0};
    const edgellm_status rc = edgellm_server_run(&sp, &err);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    cli_gov_stop(gov, sim);
    if (owned_key) {
        memset(owned_key, 0, strlen(owned_key));
        free(owned_key);
    }
    free(owned_tmpl);
    edgellm_model_free(sp.draft);
    if (rc != EDGELLM_OK) {
        cli_print_error("serve", &err);
        return 1;
    }
    return 0;
}
