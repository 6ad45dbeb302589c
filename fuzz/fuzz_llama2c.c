/*
 * fuzz_llama2c.c — libFuzzer target: llama2.c checkpoints and tokenizer.bin files.
 *
 * Formats: src/tools/llama2c_import.c (karpathy/llama2.c run.c / export.py). Entry
 * points: the in-memory validators of src/tools/llama2c.h.
 * Input layout (fuzz_inputs.h; one target covers both files and their interplay):
 *   byte 0        mode: even = checkpoint + tokenizer, odd = tokenizer alone
 *   mode even:    bytes 1..4  u32 LE k: the checkpoint is the next (k mod (rest+1)) bytes,
 *                 the tokenizer.bin the bytes after it (absent when there are none)
 *   mode odd:     bytes 1..2  u16 LE n_vocab-1 (n_vocab 1..65536), then the tokenizer.bin
 * The checkpoint is copied into a 4-byte aligned buffer of exactly its size, so reading
 * one byte past it is a heap overflow for ASan.
 * Oracle: a known status with a message naming the input, no leaked allocation.
 */
#include "fuzz_util.h"
#include "fuzz_inputs.h"
#include "tools/llama2c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_llama2c_input in;
    if (!fuzz_llama2c_decode(data, size, &in)) return 0;
    long live = edgellm_test_live_allocs();
    edgellm_error err = {0};
    edgellm_status s;
    if (!in.tokenizer_only) {
        void *model = malloc(in.model_size ? in.model_size : 1);   /* malloc: 16-byte aligned */
        if (!model) return 0;
        memcpy(model, in.model, in.model_size);
        s = edgellm_llama2c_parse_memory(model, in.model_size, in.tok, in.tok_size, "fuzz.bin", &err);
        free(model);
    } else {
        s = edgellm_llama2c_parse_tokenizer_memory(in.tok, in.tok_size, in.n_vocab, "fuzz.tok", &err);
    }
    fuzz_trace("llama2c", s, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, "fuzz.") != NULL, "message does not name the input: %s", err.msg);
    FUZZ_ASSERT(edgellm_test_live_allocs() == live, "leaked %ld blocks", edgellm_test_live_allocs() - live);
    return 0;
}
