/* tokenizer.h — internal constructor of the tokenizer from an open GGUF file. */
#ifndef EDGELLM_TOKENIZER_H
#define EDGELLM_TOKENIZER_H
#include "../format/gguf.h"

/* Build the tokenizer from the tokenizer.ggml.* metadata of g. Copies what it needs: the
 * result does not borrow from g. EDGELLM_ERR_FORMAT for missing/inconsistent metadata,
 * EDGELLM_ERR_UNSUPPORTED for an unknown tokenizer.ggml.model. Free with
 * edgellm_tokenizer_free. */
edgellm_status edgellm_tokenizer_from_gguf(const edgellm_gguf *g, edgellm_tokenizer **out, edgellm_error *err);
#endif
