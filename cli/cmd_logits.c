/* cmd_logits.c — 'edgellm logits': run token ids through a model and write every
 * position's logits as float32 little-endian, row-major [n_tokens][n_vocab].
 *
 *   edgellm logits -m MODEL.gguf --tokens "1 403 407" -o OUT.f32 [-t N] [-c N_CTX] [--decode]
 *
 * By default all tokens go through one causal pass (prefill); --decode feeds them one at
 * a time instead (the rows must agree bit for bit; useful for comparison). */
#include "commands.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parse ids separated by spaces/commas into a malloc'd array; returns 0 or 2 (bad list). */
static int parse_tokens(const char *s, int32_t **out, int *n_out)
{
    size_t cap = strlen(s) / 2 + 1, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) { fprintf(stderr, "edgellm logits: out of memory\n"); return 2; }
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && !strchr(" ,\t\n", *end))) {
            fprintf(stderr, "edgellm logits: --tokens expects non-negative integer ids, got '%s'\n", s);
            free(ids);
            return 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    if (n == 0) {
        fprintf(stderr, "edgellm logits: --tokens is empty\n");
        free(ids);
        return 2;
    }
    *out = ids;
    *n_out = (int)n;
    return 0;
}

int cmd_logits(int argc, char **argv)
{
    const char *model_path = NULL, *tokens_arg = NULL, *out_path = NULL;
    int n_threads = 0, n_ctx = 0, decode_mode = 0;
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model_path), .help = "GGUF model", .required = 1},
        {CLI_STRING(NULL, "--tokens", "LIST", &tokens_arg), .help = "token ids separated by spaces or commas",
         .required = 1},
        {CLI_PATH("-o", "--output", "OUT.f32", &out_path), .help = "output file: float32 LE [n_tokens][n_vocab]",
         .required = 1},
        {CLI_OPT_THREADS(&n_threads)},
        {CLI_OPT_CTX_SIZE(&n_ctx)},
        {CLI_FLAG(NULL, "--decode", &decode_mode, 1), .help = "one token per step instead of one prefill pass"},
    };
    const cli_command cmd = {
        .name = "logits", .synopsis = "edgellm logits -m MODEL.gguf --tokens \"ID ID ...\" -o OUT.f32 [options]",
        .about = "Run token ids through a model and write every position's logits.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (edgellm_path_same_file(out_path, model_path)) {
        fprintf(stderr, "edgellm logits: %s: the output is the model file\n", out_path);
        return 2;
    }
    int32_t *tokens = NULL;
    int n_tokens = 0;
    if (parse_tokens(tokens_arg, &tokens, &n_tokens)) return cli_see_help("logits");

    int rc = 1;
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    float *logits = NULL;
    edgellm_output *of = NULL;   /* written whole or not at all, a signal's handler removes it */
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    if (edgellm_model_load(model_path, &mp, &model, &err) != EDGELLM_OK) goto fail;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    if (edgellm_ctx_new(model, &cp, &ctx, &err) != EDGELLM_OK) goto fail;
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(model, &info);
    size_t row = (size_t)info.n_vocab;
    logits = malloc((size_t)n_tokens * row * sizeof(float));
    if (!logits) { snprintf(err.msg, sizeof err.msg, "out of memory for %d x %zu logits", n_tokens, row); goto fail; }
    if (decode_mode) {
        for (int i = 0; i < n_tokens; i++)
            if (edgellm_decode(ctx, tokens + i, 1, logits + (size_t)i * row, &err) != EDGELLM_OK) goto fail;
    } else if (edgellm_decode(ctx, tokens, n_tokens, logits, &err) != EDGELLM_OK) {
        goto fail;
    }
    /* float32 little-endian: write byte by byte so the file is LE on any host. */
    if (edgellm_output_open(out_path, "wb", &of, &err) != EDGELLM_OK) goto fail;
    FILE *f = edgellm_output_stream(of);
    for (size_t i = 0; i < (size_t)n_tokens * row; i++) {
        uint32_t u;
        memcpy(&u, &logits[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        if (fwrite(b, 1, 4, f) != 4) break;   /* commit reports the stream's error */
    }
    const edgellm_status committed = edgellm_output_commit(of, &err);
    of = NULL;   /* freed by the commit, whatever it returned */
    if (committed != EDGELLM_OK) goto fail;
    fprintf(stderr, "edgellm logits: wrote %d x %zu logits to %s\n", n_tokens, row, out_path);
    rc = 0;
    goto done;
fail:
    cli_print_error("logits", &err);
done:
    edgellm_output_discard(of);   /* NULL after a commit */
    free(logits);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    free(tokens);
    return rc;
}
