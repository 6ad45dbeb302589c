/* Embed edgellm: load a GGUF model, stream a continuation of a prompt, report tokens/s.
 * Usage: embed MODEL.gguf ["PROMPT"]; on failure, prints edgellm's message and exits 1. */
#include <stdio.h>
#include <edgellm.h>

static int on_token(int32_t token, const char *piece, size_t len, void *user) {
    (void)token; (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0; /* non-zero stops generation */
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]); return 2; }
    const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
    edgellm_error err;
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_generate_stats st = {.size = sizeof st};
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.n_predict = 64;
    gp.sampling.temperature = 0; /* greedy: the same text every run */
    edgellm_status rc = edgellm_model_load(argv[1], NULL, &model, &err);
    if (rc == EDGELLM_OK) rc = edgellm_ctx_new(model, NULL, &ctx, &err);
    if (rc == EDGELLM_OK) {
        printf("%s", prompt);
        rc = edgellm_generate(ctx, prompt, &gp, on_token, NULL, &st, &err);
        putchar('\n');
        fflush(stdout);
    }
    if (rc == EDGELLM_OK)
        fprintf(stderr, "%d tokens, %.1f tokens/s\n", st.n_generated,
                st.decode_ms > 0 ? st.n_generated * 1000.0 / st.decode_ms : 0.0);
    else
        fprintf(stderr, "embed: %s\n", err.msg);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    return rc == EDGELLM_OK ? 0 : 1;
}
