/*
 * fuzz_llama2c.c — libFuzzer target: llama2.c checkpoints and tokenizer.bin files.
 *
 * Formats: src/format/llama2c_import.c (karpathy/llama2.c run.c / export.py). Entry
 * points: the in-memory validators of src/format/llama2c.h.
 * Input layout (so that one target covers both files and their interplay):
 *   byte 0        mode: even = checkpoint + tokenizer, odd = tokenizer alone
 *   mode even:    bytes 1..4  u32 LE k: the checkpoint is the next (k mod (rest+1)) bytes,
 *                 the tokenizer.bin the bytes after it (absent when there are none)
 *   mode odd:     bytes 1..2  u16 LE n_vocab-1 (n_vocab 1..65536), then the tokenizer.bin
 * The checkpoint is copied into a 4-byte aligned buffer of exactly its size, so reading
 * one byte past it is a heap overflow for ASan.
 * Oracle: a known status with a message naming the input, no leaked allocation.
 */
#include "fuzz_util.h"
#include "format/llama2c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    long live = edgellm_test_live_allocs();
    edgellm_error err = {0};
    edgellm_status s;
    if ((data[0] & 1) == 0) {
        if (size < 5) return 0;
        uint32_t k = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
        const uint8_t *rest = data + 5;
        size_t n = size - 5;
        size_t model_size = (size_t)k % (n + 1);
        void *model = malloc(model_size ? model_size : 1);   /* malloc: 16-byte aligned */
        if (!model) return 0;
        memcpy(model, rest, model_size);
        const uint8_t *tok = n > model_size ? rest + model_size : NULL;
        s = edgellm_llama2c_parse_memory(model, model_size, tok, tok ? n - model_size : 0, "fuzz.bin", &err);
        free(model);
    } else {
        int n_vocab = 1 + ((int)data[1] | (int)data[2] << 8);
        s = edgellm_llama2c_parse_tokenizer_memory(data + 3, size - 3, n_vocab, "fuzz.tok", &err);
    }
    fuzz_trace("llama2c", s, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) FUZZ_ASSERT(strstr(err.msg, "fuzz.") != NULL, "message does not name the input: %s", err.msg);
    FUZZ_ASSERT(edgellm_test_live_allocs() == live, "leaked %ld blocks", edgellm_test_live_allocs() - live);
    return 0;
}
