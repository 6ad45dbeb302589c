/* tokenizer.h — internal constructor of the tokenizer from an open GGUF file. */
#ifndef EDGELLM_TOKENIZER_H
#define EDGELLM_TOKENIZER_H
#include "../format/gguf.h"

/* Build the tokenizer from the tokenizer.ggml.* metadata of g. Copies what it needs: the
 * result does not borrow from g. EDGELLM_ERR_FORMAT for missing/inconsistent metadata,
 * EDGELLM_ERR_UNSUPPORTED for an absent or unknown tokenizer.ggml.model (e.g. "bert") or
 * an unknown tokenizer.ggml.pre; EDGELLM_ERR_NOMEM. Free with edgellm_tokenizer_free.
 * The tokenizer is read-only once built: one may be used from several threads at once. */
edgellm_status edgellm_tokenizer_from_gguf(const edgellm_gguf *g, edgellm_tokenizer **out, edgellm_error *err);

/* Decode a whole sequence ids[0..n_ids) into *out (NUL-terminated, *out_len bytes without
 * the NUL; free with edgellm_free). A leading BOS is skipped and, for SentencePiece vocabs
 * with the dummy prefix, the one space it put before the first token is dropped (so
 * decode(encode(text)) == text). EDGELLM_ERR_MISUSE for an id out of range, NOMEM. */
edgellm_status edgellm_tokenizer_detokenize(const edgellm_tokenizer *t, const int32_t *ids, size_t n_ids,
                                            char **out, size_t *out_len, edgellm_error *err);
/* edgellm_tokenize with protected byte ranges spans[n_spans] ([begin, end), ordered,
 * inside the text): no control or unknown token is matched where it would touch one, even
 * with EDGELLM_TOKENIZE_SPECIAL (a rendered chat's message contents: the template's own
 * special tokens are parsed, a user's typed "<|im_end|>" is text). EDGELLM_ERR_MISUSE for
 * spans that are not ordered ranges inside the text. */
edgellm_status edgellm_tokenize_protected(const edgellm_tokenizer *t, const char *text, size_t len, int flags,
                                          const size_t (*spans)[2], size_t n_spans, int32_t *out, int max_tokens,
                                          int *n_tokens, edgellm_error *err);
#endif
