/* Embed edgellm: answer a question with the model's chat template, streamed from a worker
 * thread, stopped if it takes more than two seconds. Usage: embed MODEL.gguf ["QUESTION"] */
#define _POSIX_C_SOURCE 200809L
#include <edgellm.h>
#include <stdio.h>
#include <time.h>

static int on_token(int32_t token, const char *piece, size_t len, void *user) {
    (void)token; (void)user;
    fwrite(piece, 1, len, stdout);            /* whole UTF-8 characters, on the worker thread */
    fflush(stdout);
    return 0;                                 /* non-zero stops generation */
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [QUESTION]\n", argv[0]); return 2; }
    const edgellm_chat_message chat[] = {{"system", "You are a helpful assistant."},
                                         {"user", argc > 2 ? argv[2] : "Tell me a story."}};
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_job *job = NULL;
    edgellm_generate_params gp = edgellm_generate_default_params();
    int32_t prompt[2048];
    edgellm_status rc = edgellm_model_load(argv[1], NULL, &model, &err);
    if (!rc) rc = edgellm_ctx_new(model, NULL, &ctx, &err);
    if (!rc) rc = edgellm_chat_tokenize(model, edgellm_model_chat_template(model, NULL, 0) < 0 ?    /* none: ChatML */
                                        edgellm_chat_template_builtin("chatml") : NULL, chat, 2, NULL,
                                        prompt, 2048, &gp.n_prompt_tokens, NULL, &err);
    gp.prompt_tokens = prompt;
    gp.n_predict = 200;
    if (!rc) rc = edgellm_generate_async(ctx, NULL, &gp, on_token, NULL, NULL, &job, &err);
    for (int ms = 0; !rc && !edgellm_job_done(job) && ms < 2000; ms += 10)   /* the UI thread is free */
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (job && !edgellm_job_done(job)) edgellm_job_abort(job, NULL);        /* too slow: stop it */
    if (job) rc = edgellm_job_wait(job, NULL, &err);
    edgellm_job_free(job);
    if (rc && rc != EDGELLM_ERR_CANCELLED) fprintf(stderr, "embed: %s\n", err.msg);
    else printf("\n[%s, edgellm %s]\n", rc ? "stopped" : "done", edgellm_version());
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    return rc && rc != EDGELLM_ERR_CANCELLED ? 1 : 0;
}
