/* cmd_run.c — 'edgellm run': load a GGUF model, generate text from a prompt.
 *
 * stdout: the prompt exactly as given (bytes of -p or of the -f file; printed once prefill has
 * succeeded, so a refused prompt prints nothing), then each generated
 * piece as soon as it is produced (flushed per token), then one final newline.
 * stderr: seed, load time, prompt tokens and prefill speed, generated tokens and decode
 * speed, and why generation stopped.
 * -n counts generated tokens (as llama.cpp's -n), not positions (as llama2.c's -n). */
#include "commands.h"
#include "common/common.h"   /* edgellm_time_ms */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edgellm run -m MODEL.gguf [-p PROMPT | -f PROMPT_FILE] [options]\n"
            "\n"
            "  -m, --model FILE        GGUF model (required)\n"
            "  -p, --prompt TEXT       prompt text (default: empty, generation starts from BOS)\n"
            "  -f, --file FILE         read the prompt from a file\n"
            "  -n, --n-predict N       tokens to generate, >= 0 (default 128; stops earlier at EOS or n_ctx)\n"
            "  --temp T                temperature, 0 = greedy (default 0.8)\n"
            "  --top-k K               keep the K most likely tokens, 0 = off (default 40)\n"
            "  --top-p P               nucleus mass in (0, 1], 1 = off (default 0.95)\n"
            "  --min-p P               drop tokens below P * p_max, in [0, 1] (default 0.05)\n"
            "  --repeat-penalty R      > 0, 1 = off (default 1.0)\n"
            "  --repeat-last-n N       tokens the penalty looks back at (default 64)\n"
            "  --seed S                RNG seed, a non-negative integer (default: from the clock, printed)\n"
            "  -c, --ctx-size N        KV cache positions (default: the model's, at most 4096)\n"
            "  -t, --threads N         compute threads (default: physical cores)\n"
            "  --kv-type f32|f16|q8_0  KV cache element type (default f32; f16 halves the cache, q8_0\n"
            "                          takes 0.53 of f16; q8_0 needs head_dim a multiple of 32)\n"
            "  --no-bos                do not prepend BOS to the prompt (an empty prompt still\n"
            "                          starts from BOS: there is nothing else to start from)\n");
}

static const char *stop_name(edgellm_stop_reason r)
{
    switch (r) {
    case EDGELLM_STOP_EOS: return "end of sequence (EOS)";
    case EDGELLM_STOP_N_PREDICT: return "-n tokens generated";
    case EDGELLM_STOP_CTX_FULL: return "context full";
    case EDGELLM_STOP_CALLBACK: return "stopped by the caller";
    }
    return "?";
}

/* The prompt is echoed only once prefill has succeeded: before the first generated piece,
 * or after edgellm_generate returns OK when nothing was generated. */
typedef struct { const char *prompt; bool echoed; } echo_state;

static void echo_prompt(echo_state *e)
{
    if (e->echoed) return;
    e->echoed = true;
    fwrite(e->prompt, 1, strlen(e->prompt), stdout);
}

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    echo_prompt(user);
    if (len) fwrite(piece, 1, len, stdout);
    fflush(stdout);
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
    bool have_seed = false;
    long v;
    double d;

    for (int i = 1; i < argc; i++) {
        char name[CLI_NAME_MAX];
        const char *a, *inl = cli_long_value(argv[i], name, &a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { if (inl) return cli_takes_no_value("run", a); usage(stdout); return 0; }
        if (!strcmp(a, "--no-bos")) {
            if (inl) return cli_takes_no_value("run", a);
            gp.add_bos = 0;
            continue;
        }
        const char *val = inl ? inl : i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            fprintf(stderr, "edgellm run: unexpected argument '%s'\n", a);
            return cli_see_help("run");
        }
        bool known = true;
        int bad = 0;
        if (!val) known = false;   /* reported below as a missing value (or unknown flag) */
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_path = val;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) prompt = val;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) prompt_file = val;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!(bad = cli_parse_int("run", a, val, 0, INT_MAX, &v))) gp.n_predict = (int)v;
        } else if (!strcmp(a, "--temp")) {
            if (!(bad = cli_parse_float("run", a, val, &d)) && !(d >= 0 && d < 1e6)) {
                fprintf(stderr, "edgellm run: --temp must be a number in [0, 1e6), got '%s'\n", val);
                bad = 2;
            }
            gp.sampling.temperature = (float)d;
        } else if (!strcmp(a, "--top-k")) {
            if (!(bad = cli_parse_int("run", a, val, 0, INT_MAX, &v))) gp.sampling.top_k = (int)v;
        } else if (!strcmp(a, "--top-p")) {
            if (!(bad = cli_parse_float("run", a, val, &d)) && !(d > 0 && d <= 1)) {
                fprintf(stderr, "edgellm run: --top-p must be in (0, 1], got '%s'\n", val);
                bad = 2;
            }
            gp.sampling.top_p = (float)d;
        } else if (!strcmp(a, "--min-p")) {
            if (!(bad = cli_parse_float("run", a, val, &d)) && !(d >= 0 && d <= 1)) {
                fprintf(stderr, "edgellm run: --min-p must be in [0, 1], got '%s'\n", val);
                bad = 2;
            }
            gp.sampling.min_p = (float)d;
        } else if (!strcmp(a, "--repeat-penalty")) {
            if (!(bad = cli_parse_float("run", a, val, &d)) && !(d > 0 && d < 1e6)) {
                fprintf(stderr, "edgellm run: --repeat-penalty must be a number in (0, 1e6), got '%s'\n", val);
                bad = 2;
            }
            gp.sampling.repeat_penalty = (float)d;
        } else if (!strcmp(a, "--repeat-last-n")) {
            if (!(bad = cli_parse_int("run", a, val, 0, 1 << 20, &v))) gp.sampling.repeat_last_n = (int)v;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(val, &end, 10);
            if (!*val || *end || errno || val[0] == '-') {
                fprintf(stderr, "edgellm run: --seed expects a non-negative integer, got '%s'\n", val);
                bad = 2;
            }
            gp.sampling.seed = (uint64_t)s;
            have_seed = true;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            if (!(bad = cli_parse_int("run", a, val, 1, 1 << 24, &v))) cp.n_ctx = (int)v;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(bad = cli_parse_int("run", a, val, 1, 64, &v))) { mp.n_threads = (int)v; cp.n_threads = (int)v; }
        } else if (!strcmp(a, "--kv-type")) {
            bad = cli_parse_kv_type("run", a, val, &cp.kv_type);
        } else known = false;

        if (!known) {
            static const char *const flags[] = {"-m", "--model", "-p", "--prompt", "-f", "--file", "-n", "--n-predict",
                                                "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty",
                                                "--repeat-last-n", "--seed", "-c", "--ctx-size", "-t", "--threads", "--kv-type"};
            bool is_flag = false;
            for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) is_flag |= !strcmp(a, flags[k]);
            if (is_flag) fprintf(stderr, "edgellm run: %s needs a value\n", a);
            else fprintf(stderr, "edgellm run: unknown option '%s'\n", a);
            return cli_see_help("run");
        }
        if (bad) return cli_see_help("run");
        if (!inl) i++;
    }
    if (!model_path) {
        if (argc < 2) { usage(stderr); return 2; }
        fprintf(stderr, "edgellm run: -m MODEL.gguf is required\n");
        return cli_see_help("run");
    }
    if (prompt && prompt_file) {
        fprintf(stderr, "edgellm run: give -p or -f, not both\n");
        return cli_see_help("run");
    }
    if (!have_seed) gp.sampling.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

    int rc = 1;
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    char *file_prompt = NULL;
    if (prompt_file) {
        if (!(file_prompt = read_prompt_file(prompt_file, &err))) { cli_print_error("run", &err); return 1; }
        prompt = file_prompt;
    }
    if (!prompt) prompt = "";

    double t0 = edgellm_time_ms();
    if (edgellm_model_load(model_path, &mp, &model, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
    double load_ms = edgellm_time_ms() - t0;
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(model, &info);
    if (cp.n_ctx > 0 && info.n_ctx_train > 0 && cp.n_ctx > info.n_ctx_train)
        fprintf(stderr, "edgellm run: warning: -c %d exceeds the model's trained context length %d; quality may "
                        "degrade past it\n", cp.n_ctx, info.n_ctx_train);
    if (edgellm_ctx_new(model, &cp, &ctx, &err) != EDGELLM_OK) { cli_print_error("run", &err); goto done; }
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
    echo_state echo = {prompt, false};
    edgellm_status s = edgellm_generate(ctx, prompt, &gp, on_token, &echo, &st, &err);
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
    if (st.stop == EDGELLM_STOP_CTX_FULL)
        fprintf(stderr, "stop: context full — all %d positions of n_ctx are used (raise -c, or lower -n)\n",
                edgellm_ctx_n_ctx(ctx));
    else fprintf(stderr, "stop: %s\n", stop_name(st.stop));
    rc = 0;
done:
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    free(file_prompt);
    return rc;
}
