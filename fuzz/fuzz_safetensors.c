/*
 * fuzz_safetensors.c — libFuzzer target: safetensors files, the weights of Hugging Face
 * checkpoints (`edgellm convert --hf`).
 *
 * Format and checks: src/tools/hf_safetensors.c (huggingface/safetensors README.md).
 * Entry point: edgellm_st_open_memory (src/tools/hf.h), the validation every file of a
 * checkpoint folder goes through. The input is the whole file, copied into a heap buffer of
 * exactly its size, so reading one byte past it is a heap overflow for ASan.
 * Oracle: a known status with a message naming the input; on success every tensor lies
 * inside the buffer, its byte count is its element count times the dtype's size, the
 * tensors do not overlap and are sorted by unique names (checked again here, independently
 * of the parser); no leaked allocation (edgellm's own counter, and LeakSanitizer for cJSON's).
 */
#include "fuzz_util.h"
#include "tools/hf.h"

#ifdef EDGELLM_HAVE_CJSON
static int by_offset(const void *a, const void *b)
{
    const edgellm_st_tensor *x = *(const edgellm_st_tensor *const *)a, *y = *(const edgellm_st_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef EDGELLM_HAVE_CJSON
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    const long live = edgellm_test_live_allocs();
    edgellm_st_set *s = NULL;
    edgellm_error err = {0};
    const edgellm_status rc = edgellm_st_open_memory(buf, size, "fuzz.safetensors", &s, &err);
    fuzz_trace("safetensors", rc, &err);
    fuzz_check_error(rc, &err);
    if (rc != EDGELLM_OK) {
        FUZZ_ASSERT(s == NULL, "a set handed out on failure");
        FUZZ_ASSERT(strstr(err.msg, "fuzz.safetensors") != NULL, "message does not name the input: %s", err.msg);
    } else {
        const int64_t n = edgellm_st_n_tensors(s);
        const edgellm_st_tensor **t = malloc((size_t)(n ? n : 1) * sizeof *t);
        uint64_t sum = 0;
        for (int64_t i = 0; t && i < n; i++) {
            t[i] = edgellm_st_tensor_at(s, i);
            const uint64_t es = t[i]->dtype == EDGELLM_TYPE_F32 ? 4 : 2;
            FUZZ_ASSERT(t[i]->size_bytes == t[i]->n_elements * es, "tensor %s: size", t[i]->name);
            FUZZ_ASSERT(t[i]->data == buf + t[i]->offset && t[i]->offset <= size && t[i]->size_bytes <= size - t[i]->offset,
                        "tensor %s outside the buffer", t[i]->name);
            FUZZ_ASSERT(i == 0 || strcmp(t[i - 1]->name, t[i]->name) < 0, "names not sorted or not unique");
            FUZZ_ASSERT(edgellm_st_find(s, t[i]->name) == t[i], "find does not find %s", t[i]->name);
            for (uint64_t k = 0; k < t[i]->size_bytes; k++) sum += t[i]->data[k];   /* every byte readable */
        }
        if (t && n > 1) {
            qsort(t, (size_t)n, sizeof *t, by_offset);
            for (int64_t i = 1; i < n; i++)
                FUZZ_ASSERT(t[i - 1]->offset + t[i - 1]->size_bytes <= t[i]->offset, "tensors %s and %s overlap",
                            t[i - 1]->name, t[i]->name);
        }
        free(t);
        (void)sum;
        edgellm_st_close(s);
    }
    FUZZ_ASSERT(edgellm_test_live_allocs() == live, "leaked %ld blocks", edgellm_test_live_allocs() - live);
    free(buf);
#else
    (void)data;
    (void)size;
#endif
    return 0;
}
