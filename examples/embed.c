/* embed.c — generate text with edgellm from C. Build: cc embed.c $(pkg-config --cflags --libs edgellm) */
#include <edgellm.h>
#include <stdio.h>

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token, (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;                                      /* non-zero would stop generation */
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]); return 2; }
    const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_generate_params gp = edgellm_generate_default_params();
    edgellm_generate_stats st = {.size = sizeof st};
    gp.n_predict = 32;
    gp.sampling.temperature = 0;                   /* greedy: the same text every run */
    if (edgellm_model_load(argv[1], NULL, &model, &err) || edgellm_ctx_new(model, NULL, &ctx, &err) ||
        (fputs(prompt, stdout), edgellm_generate(ctx, prompt, &gp, on_token, NULL, &st, &err))) {
        fprintf(stderr, "\nerror: %s\n", err.msg);
        edgellm_ctx_free(ctx);
        edgellm_model_free(model);
        return 1;
    }
    printf("\n%d tokens, %.1f tokens/s (edgellm %s)\n", st.n_generated,
           st.decode_ms > 0 ? (st.n_generated - 1) * 1000.0 / st.decode_ms : 0.0, edgellm_version());
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    return 0;
}
