/* cmd_run.c — 'edgellm run': load a GGUF model, generate text from a prompt.
 *
 * stdout: the prompt exactly as given (bytes of -p or of the -f file; printed once prefill has
 * succeeded, so a refused prompt prints nothing), then each generated
 * piece as soon as it is produced (flushed per token), then one final newline.
 * stderr: seed, load time, prompt tokens and prefill speed, generated tokens and decode
 * speed, and why generation stopped.
 * -n counts generated tokens (as llama.cpp's -n), not positions (as llama2.c's -n).
 * --draft / --lookup: speculative decoding (edgellm_generate_speculative); stderr adds the
 * acceptance, the tokens per target pass and the speed-up over a plain decoding step
 * (the measured one-token passes of the same run). --draft self:TYPE quantizes the model
 * to TYPE into a temporary file (edgellm_quantize_file), loads it and removes the file. */
#include "commands.h"
#include "governor_opts.h"
#include "run_batch.h"
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *stop_name(edgellm_stop_reason r)
{
    switch (r) {
    case EDGELLM_STOP_EOS: return "end of sequence (EOS)";
    case EDGELLM_STOP_N_PREDICT: return "-n tokens generated";
    case EDGELLM_STOP_CTX_FULL: return "context full";
    case EDGELLM_STOP_CALLBACK: return "stopped by the caller";
    case EDGELLM_STOP_ABORT: return "aborted";
    }
    return "?";
}

/* The prompt is echoed only once prefill has succeeded: before the first generated piece,
 * or after edgellm_generate returns OK when nothing was generated. */
typedef struct { const char *prompt; bool echoed; edgellm_governor *gov; } echo_state;

static void echo_prompt(echo_state *e)
{
    if (e->echoed) return;
    e->echoed = true;
    fwrite(e->prompt, 1, strlen(e->prompt), stdout);
}

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    echo_state *e = user;
    echo_prompt(e);
    if (len) fwrite(piece, 1, len, stdout);
    fflush(stdout);
    if (e->gov) edgellm_governor_between_tokens(e->gov);   /* duty cycle, pause */
    return ferror(stdout) ? 1 : 0;   /* a closed pipe stops generation */
}

/* Read a whole prompt file into a NUL-terminated buffer (caller frees). */
static char *read_prompt_file(const char *path, edgellm_error *err)
{
    size_t n = 0;
    char *buf = cli_read_text(path, &n, err);
    if (buf && strlen(buf) != n) {
        free(buf);
        buf = NULL;
        snprintf(err->msg, sizeof err->msg, "%s: the prompt contains a NUL byte", path);
    }
    return buf;
}

int cmd_run(int argc, char **argv)
{
    const char *model_path = NULL, *prompt = NULL, *prompt_file = NULL;
    edgellm_generate_params gp = edgellm_generate_default_params();
    edgellm_model_params mp = edgellm_model_default_params();
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    int n_seed = 0, n_batch = 8, n_batch_given = 0;
    const char *batch_file = NULL, *out_path = NULL, *draft_path = NULL;
    cli_gov_opts go;
    cli_gov_opts_init(&go);
    uint64_t mem_budget = 0;
    int warmup = 0, use_mlock = 0, cold = 0;
    edgellm_spec_params sp = edgellm_spec_default_params();
    int draft_fixed = 0;
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model_path), .help = "GGUF model", .required = 1},
        {CLI_STRING("-p", "--prompt", "TEXT", &prompt), .help = "prompt text",
         .def = "empty, generation starts from BOS"},
        {CLI_PATH("-f", "--file", "FILE", &prompt_file), .help = "read the prompt from a file"},
        {CLI_INT("-n", "--n-predict", "N", &gp.n_predict, 0, INT_MAX), .show_default = 1,
         .help = "tokens to generate; fewer at EOS or when the context is full"},
        CLI_SAMPLING_OPTS(&gp.sampling),
        {CLI_INT(NULL, "--repeat-last-n", "N", &gp.sampling.repeat_last_n, 0, 1 << 20), .show_default = 1,
         .help = "tokens the penalty looks back at"},
        {CLI_U64(NULL, "--seed", "S", &gp.sampling.seed), .count = &n_seed,
         .help = "RNG seed, a non-negative integer", .def = "from the clock, printed"},
        {CLI_OPT_CTX_SIZE(&cp.n_ctx)},
        {CLI_OPT_THREADS(&mp.n_threads)},
        {CLI_OPT_KV_TYPE(&cp.kv_type)},
        {CLI_FLAG(NULL, "--no-bos", &gp.add_bos, 0),
         .help = "do not prepend BOS to the prompt (an empty prompt still starts from BOS: there is nothing "
                 "else to start from)"},
        {CLI_GROUP("speculative decoding")},
        {CLI_STRING(NULL, "--draft", "DRAFT.gguf|self:TYPE", &draft_path),
         .help = "draft tokens with a smaller model of the same vocabulary, checked by the model in one pass; "
                 "self:q4_0 (any quantize type) drafts with the model itself quantized at load. Greedy output is "
                 "the same as without; sampled output has the same distribution"},
        {CLI_INT(NULL, "--draft-max", "K", &sp.draft_max, 1, 64), .show_default = 1,
         .help = "draft tokens per target pass at most"},
        {CLI_INT(NULL, "--draft-min", "K", &sp.draft_min, 0, 64), .show_default = 1,
         .help = "a shorter draft is not checked"},
        {CLI_INT(NULL, "--lookup", "N", &sp.lookup, 0, 1024), .show_default = 1,
         .help = "prompt lookup: draft what followed the last N..1 tokens where they occurred before in the prompt "
                 "or output (no extra model); 0 = off"},
        {CLI_FLAG(NULL, "--draft-fixed", &draft_fixed, 1),
         .help = "always draft --draft-max tokens (default: the length follows the measured acceptance and "
                 "speed, none when drafting does not pay)"},
        {CLI_GROUP("offline batch")},
        {CLI_PATH(NULL, "--batch-file", "FILE.jsonl", &batch_file),
         .help = "generate for every line {\"prompt\": \"...\", \"n_predict\": N, \"id\": ...} (n_predict, alias "
                 "max_tokens, and id optional; -n is the default); the options above apply to every prompt; -c is "
                 "per sequence (default: the longest prompt + its n_predict)"},
        {CLI_INT("-b", "--batch", "N", &n_batch, 1, 64), .count = &n_batch_given, .show_default = 1,
         .help = "sequences decoding together; a finished one takes the next prompt at once (continuous batching)"},
        {CLI_PATH("-o", "--output", "OUT.jsonl", &out_path),
         .help = "one JSON line per prompt, in input order: index, id, prompt, text, n_prompt, n_generated, stop "
                 "(eos, length, ctx_full), ttft_ms, tok_s", .def = "stdout"},
        {CLI_GROUP("memory and start-up (docs/governor.md)")},
        {CLI_CUSTOM(NULL, "--mem-budget", "SIZE", &mem_budget, cli_parse_size),
         .help = "keep the resident weights under SIZE (300M, 1.5G): layers are released after use and read again "
                 "(slower); the KV cache and scratch come on top"},
        {CLI_FLAG(NULL, "--warmup", &warmup, 1),
         .help = "before the prompt: fault the weights in and run one dummy token, so the first token is fast"},
        {CLI_FLAG(NULL, "--mlock", &use_mlock, 1), .help = "lock the weights in RAM (needs RLIMIT_MEMLOCK above them)"},
        {CLI_FLAG(NULL, "--cold", &cold, 1),
         .help = "drop the file from the page cache before loading (where permitted), to time a cold start"},
        CLI_GOV_OPTS(&go),
    };
    const cli_command cmd = {
        .name = "run",
        .synopsis = "edgellm run -m MODEL.gguf [-p PROMPT | -f PROMPT_FILE] [options]\n"
                    "edgellm run -m MODEL.gguf --batch-file PROMPTS.jsonl [-b N] [-o OUT.jsonl] [options]",
        .about = "Generate text from a prompt: the prompt and then each generated piece on stdout; load time,\n"
                 "speeds and why generation stopped on stderr. With --batch-file, many prompts decode together\n"
                 "and the results are JSON lines; a summary (aggregate tok/s) goes to stderr.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    cp.n_threads = mp.n_threads;
    if (prompt && prompt_file) return cli_args_error(&cmd, "give -p or -f, not both");
    if (batch_file && (prompt || prompt_file)) return cli_args_error(&cmd, "give -p/-f or --batch-file, not both");
    if (!batch_file && (out_path || n_batch_given)) return cli_args_error(&cmd, "-b and -o go with --batch-file");
    if (batch_file && (mem_budget || warmup || use_mlock || cold))
        return cli_args_error(&cmd, "--mem-budget, --warmup, --mlock and --cold go with -p/-f, not --batch-file");
    if (mem_budget && use_mlock) return cli_args_error(&cmd, "--mem-budget and --mlock contradict each other");
    /* a repacked matrix is owned memory the budget cannot release: the file's layout then */
    if (mem_budget) setenv("EDGELLM_REPACK", "0", 1);
    if (batch_file && (go.enabled || go.n_given || go.sim_dir))
        return cli_args_error(&cmd, "the governor options go with -p/-f, not --batch-file");
    const bool speculative = draft_path || sp.lookup > 0;
    if (batch_file && speculative) return cli_args_error(&cmd, "--draft and --lookup do not go with --batch-file");
    if (sp.draft_min > sp.draft_max) return cli_args_error(&cmd, "--draft-min exceeds --draft-max");
    sp.adaptive = !draft_fixed;
    const bool have_seed = n_seed > 0;
    if (!have_seed) gp.sampling.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (batch_file) {
        const cli_run_batch_opts bo = {.model_path = model_path, .batch_file = batch_file, .out_path = out_path,
                                       .n_batch = n_batch, .gp = gp, .mp = mp, .cp = cp, .have_seed = have_seed};
        return cli_run_batch(&bo);
    }

    int rc = 1;
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL, *dctx = NULL;
    edgellm_model *draft = NULL;
    char *file_prompt = NULL;
    edgellm_governor *gov = NULL;
    edgellm_simdev *sim = NULL;
    edgellm_membudget *budget = NULL;
    if (cli_gov_start("run", &go, mp.n_threads, &gov, &sim)) return 1;
    if (gov) {   /* a paused level holds the request until it drops */
        for (int waited = 0; !edgellm_governor_admit(gov); waited++) {
            if (waited == 0) fprintf(stderr, "edgellm run: the governor pauses new requests; waiting\n");
            struct timespec ts = {0, 250000000};
            nanosleep(&ts, NULL);
        }
        model_path = edgellm_governor_model(gov, model_path);
        mp.n_threads = cp.n_threads = edgellm_governor_threads(gov, mp.n_threads);
    }
    if (prompt_file) {
        if (!(file_prompt = read_prompt_file(prompt_file, &err))) { cli_print_error("run", &err); goto done; }
        prompt = file_prompt;
    }
    if (!prompt) prompt = "";

    if (cold) {
        double left = -1;
        if (edgellm_file_drop_cache(model_path, &left, &err) != EDGELLM_OK) cli_print_error("run", &err);
        else if (left >= 0) fprintf(stderr, "cold: %.0f %% of the file still in the page cache after dropping it%s\n",
                                    left * 100, left > 0.1 ? " (another process maps it?): not a cold start" : "");
    }
    double t0 = cli_time_ms();
    if (edgellm_model_load(model_path, &mp, &model, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
    double load_ms = cli_time_ms() - t0;
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(model, &info);
    if (cp.n_ctx > 0 && info.n_ctx_train > 0 && cp.n_ctx > info.n_ctx_train)
        fprintf(stderr, "edgellm run: warning: -c %d exceeds the model's trained context length %d; quality may "
                        "degrade past it\n", cp.n_ctx, info.n_ctx_train);
    if (edgellm_ctx_new(model, &cp, &ctx, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
    if (use_mlock && edgellm_model_mlock(model, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
    if (mem_budget) {
        if (edgellm_membudget_attach(ctx, mem_budget, &budget, &err) != EDGELLM_OK) {
            cli_print_error("run", &err);
            goto done;
        }
        edgellm_membudget_info bi = {.size = sizeof bi};
        edgellm_membudget_get_info(budget, &bi);
        fprintf(stderr, "mem-budget: %.1f MiB: output head and norms %.1f MiB resident, %d of %d layers at a time "
                        "(largest %.1f MiB)\n", bi.budget_bytes / 1048576.0, bi.fixed_bytes / 1048576.0,
                bi.window_layers, bi.n_layer, bi.layer_bytes_max / 1048576.0);
    }
    edgellm_proc_mem pm0 = {.size = sizeof pm0};
    edgellm_proc_memory(&pm0, 1);   /* the peak from here on: generation, not loading */
    if (warmup) {
        double wms = 0;
        if (edgellm_warmup(ctx, &wms, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
        fprintf(stderr, "warm-up: %.1f ms (weights faulted in, one dummy token)\n", wms);
    }
    if (draft_path) {
        const double td = cli_time_ms();
        edgellm_status ds = cli_draft_load(model_path, draft_path, &mp, &draft, &err);
        if (ds != EDGELLM_OK) {
            fprintf(stderr, "edgellm run: draft: %s\n", err.msg);
            goto done;
        }
        edgellm_ctx_params dcp = cp;
        dcp.n_ctx = edgellm_ctx_n_ctx(ctx);
        if (edgellm_ctx_new(draft, &dcp, &dctx, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
        edgellm_model_info dinfo = {.size = sizeof dinfo};
        edgellm_model_get_info(draft, &dinfo);
        fprintf(stderr, "draft: %.1f ms (%s), %.1f MiB of weights (the model's: %.1f MiB)\n", cli_time_ms() - td,
                draft_path, dinfo.weight_bytes / 1048576.0, info.weight_bytes / 1048576.0);
    }
    {   /* refuse a prompt that cannot fit before anything reaches stdout */
        const size_t plen = strlen(prompt);
        const int n_ctx = edgellm_ctx_n_ctx(ctx);
        int n_tok = 0;
        int32_t *ids = plen < (size_t)INT_MAX - 16 ? malloc((plen + 16) * sizeof *ids) : NULL;
        if (!ids) { fprintf(stderr, "edgellm run: %s: out of memory for the prompt's tokens\n", model_path); goto done; }
        const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(model, &err);
        edgellm_status ts = tok ? edgellm_tokenize(tok, prompt, plen, gp.add_bos, ids, (int)plen + 16, &n_tok, &err)
                                : EDGELLM_ERR_UNSUPPORTED;
        free(ids);
        if (ts != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
        if (n_tok > n_ctx) {
            fprintf(stderr, "edgellm run: %s: the prompt is %d tokens but the context holds only %d (n_ctx); raise -c "
                            "or shorten the prompt\n", model_path, n_tok, n_ctx);
            goto done;
        }
        /* generation needs a first token: an empty token list starts from BOS (generate.c) */
        if (n_tok == 0 && !gp.add_bos && edgellm_token_bos(edgellm_model_tokenizer(model)) >= 0)
            fprintf(stderr, "edgellm run: note: the prompt is empty, so generation starts from BOS despite --no-bos\n");
    }
    if (gp.sampling.temperature > 0) fprintf(stderr, "seed: %llu\n", (unsigned long long)gp.sampling.seed);
    else fprintf(stderr, "sampling: greedy (--temp 0)\n");
    fprintf(stderr, "load: %.1f ms (%s), n_ctx %d\n", load_ms, model_path, edgellm_ctx_n_ctx(ctx));

    edgellm_generate_stats st = {.size = sizeof st};
    echo_state echo = {prompt, false, gov};
    edgellm_spec_stats ss = {.size = sizeof ss};
    edgellm_status s = speculative ? edgellm_generate_speculative(ctx, dctx, prompt, &gp, &sp, on_token, &echo, &st, &ss, &err)
                                   : edgellm_generate(ctx, prompt, &gp, on_token, &echo, &st, &err);
    if (s == EDGELLM_OK) echo_prompt(&echo);
    if (echo.echoed) fputc('\n', stdout);
    fflush(stdout);
    if (s != EDGELLM_OK) {   /* decode errors already start with the path: do not print it twice */
        const char *msg = err.msg[0] ? err.msg : "generation failed";
        if (!strncmp(msg, model_path, strlen(model_path))) fprintf(stderr, "edgellm run: %s\n", msg);
        else fprintf(stderr, "edgellm run: %s: %s\n", model_path, msg);
        goto done;
    }
    fprintf(stderr, "prompt: %d token%s, %.1f ms, %.1f tok/s\n", st.n_prompt, st.n_prompt == 1 ? "" : "s", st.prefill_ms,
            st.prefill_ms > 0 ? st.n_prompt * 1000.0 / st.prefill_ms : 0.0);
    fprintf(stderr, "generated: %d token%s, %.1f ms, %.1f tok/s\n", st.n_generated, st.n_generated == 1 ? "" : "s",
            st.decode_ms,
            st.decode_ms > 0 ? st.n_generated * 1000.0 / st.decode_ms : 0.0);
    if (mem_budget || warmup || use_mlock || cold) {
        edgellm_proc_mem pm = {.size = sizeof pm};
        edgellm_proc_memory(&pm, 0);
        fprintf(stderr, "memory: peak RSS %.1f MiB since the context was made%s (now RssFile %.1f MiB, RssAnon %.1f MiB)\n",
                pm.peak_rss_bytes / 1048576.0, pm0.peak_reset ? "" : " (peak not resettable: since start)",
                pm.rss_file_bytes / 1048576.0, pm.rss_anon_bytes / 1048576.0);
    }
    if (speculative) {
        fprintf(stderr, "speculative: drafted %d (%d by lookup), accepted %d (%.1f %%), %.2f accepted per checked "
                        "draft, %d target passes (%.2f per token)\n",
                ss.n_drafted, ss.n_lookup, ss.n_accepted, ss.n_drafted ? 100.0 * ss.n_accepted / ss.n_drafted : 0.0,
                ss.n_draft_passes ? (double)ss.n_accepted / ss.n_draft_passes : 0.0, ss.n_passes,
                st.n_generated ? (double)ss.n_passes / st.n_generated : 0.0);
        fprintf(stderr, "speculative: draft model %d passes over %d tokens; draft %.1f ms, verify %.1f ms",
                ss.n_draft_model_passes, ss.n_draft_model_tokens, ss.draft_ms, ss.verify_ms);
        if (ss.pass1_ms > 0 && st.decode_ms > 0 && st.n_generated > 1)
            fprintf(stderr, "; speed-up %.2fx over plain steps (a one-token pass: %.2f ms)", (st.n_generated - 1) *
                    ss.pass1_ms / st.decode_ms, ss.pass1_ms);
        fputc('\n', stderr);
    }
    if (st.stop == EDGELLM_STOP_CTX_FULL)
        fprintf(stderr, "stop: context full — all %d positions of n_ctx are used (raise -c, or lower -n)\n",
                edgellm_ctx_n_ctx(ctx));
    else fprintf(stderr, "stop: %s\n", stop_name(st.stop));
    rc = 0;
done:
    edgellm_membudget_detach(budget);
    edgellm_ctx_free(dctx);
    edgellm_model_free(draft);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    free(file_prompt);
    cli_gov_stop(gov, sim);
    return rc;
}
