/* cmd_logits.c — 'edgellm logits': run token ids through a model and write every
 * position's logits as float32 little-endian, row-major [n_tokens][n_vocab].
 *
 *   edgellm logits -m MODEL.gguf --tokens "1 403 407" -o OUT.f32 [-t N] [-c N_CTX] [--decode]
 *
 * By default all tokens go through one causal pass (prefill); --decode feeds them one at
 * a time instead (the rows must agree bit for bit; useful for comparison). */
#include "commands.h"
#include "common/common.h"   /* edgellm_out_open */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edgellm logits -m MODEL.gguf --tokens \"ID ID ...\" -o OUT.f32 [options]\n"
            "  -m, --model PATH     GGUF model\n"
            "  --tokens LIST        token ids separated by spaces or commas\n"
            "  -o, --output PATH    output file: float32 LE [n_tokens][n_vocab]\n"
            "  -t, --threads N      compute threads (default: physical cores)\n"
            "  -c, --ctx-size N     KV cache positions (default: context_length, capped at 4096)\n"
            "  --decode             one token per step instead of one prefill pass\n");
}

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
    long n_threads = 0, n_ctx = 0;
    int decode_mode = 0;
    for (int i = 1; i < argc; i++) {
        char name[CLI_NAME_MAX];
        const char *a, *inl = cli_long_value(argv[i], name, &a);
        const char *val = inl ? inl : i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { if (inl) return cli_takes_no_value("logits", a); usage(stdout); return 0; }
        else if (!strcmp(a, "--decode")) {
            if (inl) return cli_takes_no_value("logits", a);
            decode_mode = 1;
        }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "--tokens") || !strcmp(a, "-o") ||
                 !strcmp(a, "--output") || !strcmp(a, "-t") || !strcmp(a, "--threads") || !strcmp(a, "-c") ||
                 !strcmp(a, "--ctx-size")) {
            if (!val) { fprintf(stderr, "edgellm logits: %s needs a value\n", a); return cli_see_help("logits"); }
            if (!inl) i++;
            if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_path = val;
            else if (!strcmp(a, "--tokens")) tokens_arg = val;
            else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out_path = val;
            else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
                if (cli_parse_int("logits", a, val, 1, 64, &n_threads)) return 2;
            } else if (cli_parse_int("logits", a, val, 1, 1 << 24, &n_ctx)) return 2;
        } else {
            fprintf(stderr, "edgellm logits: unknown option '%s'\n", a);
            return cli_see_help("logits");
        }
    }
    if (!model_path || !tokens_arg || !out_path) {
        if (argc < 2) { usage(stderr); return 2; }
        fprintf(stderr, "edgellm logits: -m, --tokens and -o are required\n");
        return cli_see_help("logits");
    }
    if (edgellm_same_file(out_path, model_path)) {
        fprintf(stderr, "edgellm logits: %s: the output is the model file\n", out_path);
        return 2;
    }
    int32_t *tokens = NULL;
    int n_tokens = 0;
    if (parse_tokens(tokens_arg, &tokens, &n_tokens)) return 2;

    int rc = 1;
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    float *logits = NULL;
    edgellm_out_file of = {.f = NULL, .slot = -1, .tmp = ""};
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = (int)n_threads;
    if (edgellm_model_load(model_path, &mp, &model, &err) != EDGELLM_OK) goto fail;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = (int)n_ctx;
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
    if (edgellm_out_open(&of, out_path, "wb", &err) != EDGELLM_OK) goto fail;   /* whole or not at all */
    for (size_t i = 0; i < (size_t)n_tokens * row; i++) {
        uint32_t u;
        memcpy(&u, &logits[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        if (fwrite(b, 1, 4, of.f) != 4) break;   /* commit reports the stream's error */
    }
    if (edgellm_out_commit(&of, &err) != EDGELLM_OK) goto fail;
    fprintf(stderr, "edgellm logits: wrote %d x %zu logits to %s\n", n_tokens, row, out_path);
    rc = 0;
    goto done;
fail:
    cli_print_error("logits", &err);
done:
    edgellm_out_discard(&of);   /* after a commit: nothing left to do */
    free(logits);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    free(tokens);
    return rc;
}
