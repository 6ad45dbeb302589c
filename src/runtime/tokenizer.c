/* tokenizer.c — PLACEHOLDER until the tokenizer lands: every call reports "unsupported". */
#include "tokenizer.h"

edgellm_status edgellm_tokenizer_from_gguf(const edgellm_gguf *g, edgellm_tokenizer **out, edgellm_error *err)
{
    *out = NULL;
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: tokenizer not implemented yet", edgellm_gguf_path(g));
}
edgellm_status edgellm_tokenizer_load(const char *path, edgellm_tokenizer **out, edgellm_error *err)
{
    *out = NULL;
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: tokenizer not implemented yet", path);
}
void edgellm_tokenizer_free(edgellm_tokenizer *t) { (void)t; }
edgellm_status edgellm_tokenize(const edgellm_tokenizer *t, const char *text, size_t len, int add_special,
                                int32_t *out, int max_tokens, int *n_tokens, edgellm_error *err)
{
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
int edgellm_token_to_piece(const edgellm_tokenizer *t, int32_t token, char *buf, int buf_size) { return -1; }
const char *edgellm_token_text(const edgellm_tokenizer *t, int32_t token) { return NULL; }
int edgellm_tokenizer_n_vocab(const edgellm_tokenizer *t) { return 0; }
int32_t edgellm_token_bos(const edgellm_tokenizer *t) { return -1; }
int32_t edgellm_token_eos(const edgellm_tokenizer *t) { return -1; }
const char *edgellm_tokenizer_model(const edgellm_tokenizer *t) { return "none"; }
