/*
 * llama2c.h — internal, in-memory entry points of the llama2.c importer
 * (src/tools/llama2c_import.c), for fuzzing and tests. The public entry point is
 * edgellm_convert_llama2c in edgellm_tools.h; these run the same validation on caller-owned
 * buffers and write nothing.
 */
#ifndef EDGELLM_LLAMA2C_H
#define EDGELLM_LLAMA2C_H

#include "../common/common.h"
#include "edgellm_tools.h"

/* Validate a llama2.c checkpoint model[0..model_size) (legacy or version-1 header, exact
 * size, finite weights) and, when tokenizer is not NULL, its tokenizer.bin
 * tokenizer[0..tokenizer_size) against the checkpoint's vocab_size; then build (but do not
 * write) the GGUF the converter would write. `name` is used in messages. model must be
 * 4-byte aligned (weights are read in place as floats). Statuses: those of
 * edgellm_convert_llama2c except EDGELLM_ERR_IO; EDGELLM_ERR_MISUSE for NULL or misaligned
 * buffers. Nothing is kept: the buffers are only borrowed during the call. */
edgellm_status edgellm_llama2c_parse_memory(const void *model, size_t model_size, const void *tokenizer,
                                            size_t tokenizer_size, const char *name, edgellm_error *err);

/* Validate only a tokenizer.bin buffer for a model of n_vocab tokens (n_vocab >= 1).
 * EDGELLM_ERR_FORMAT / EDGELLM_ERR_NOMEM / EDGELLM_ERR_MISUSE. */
edgellm_status edgellm_llama2c_parse_tokenizer_memory(const void *tokenizer, size_t tokenizer_size, int n_vocab,
                                                      const char *name, edgellm_error *err);

#endif
