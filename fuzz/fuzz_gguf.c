/*
 * fuzz_gguf.c — libFuzzer target: a whole GGUF file from the fuzzer's bytes.
 *
 * Spec of the input: ggml-org/ggml docs/gguf.md; reader contract in
 * src/format/gguf.h. Path through the library:
 *   1. edgellm_gguf_open_memory (deep validation). On failure: a known status, a message,
 *      no handle, no leaked allocation.
 *   2. On success, every accessor over every key and tensor (typed getters, array access,
 *      string-array index, value formatting), checking that every tensor's bytes lie
 *      inside the input — the reader's promise that nothing needs re-checking later.
 *   3. The tokenizer built from the metadata (edgellm_tokenizer_from_gguf), then a short
 *      encode/decode through it.
 *   4. edgellm_check_file on the same bytes (through a memfd path): every tensor
 *      dequantized by its type's to_float and scanned for NaN/inf.
 *   5. The model loader on those bytes, and when it accepts the file, a 4-position context
 *      and a 2-token decode on one thread.
 * Seeds: fuzz/corpus/gguf (tiny valid models of several tensor types, a BPE and an SPM
 * vocabulary, the header of stories260K.gguf), made by fuzz/make_seeds.c.
 */
#include "fuzz_util.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

static void walk_metadata(const edgellm_gguf *g)
{
    char buf[256];
    int64_t n = edgellm_gguf_n_kv(g);
    for (int64_t i = 0; i < n; i++) {
        edgellm_str k = edgellm_gguf_key(g, i);
        FUZZ_ASSERT(k.ptr != NULL || k.len == 0, "key %lld", (long long)i);
        edgellm_gguf_vtype t = edgellm_gguf_kv_type(g, i);
        edgellm_gguf_format_value(g, i, buf, sizeof buf);
        FUZZ_ASSERT(memchr(buf, 0, sizeof buf) != NULL, "format_value not terminated");
        (void)edgellm_gguf_kv_data(g, i);
        if (k.len > 200 || memchr(k.ptr, 0, k.len)) continue;   /* a C string cannot name it */
        char key[256];
        memcpy(key, k.ptr, k.len);
        key[k.len] = 0;
        FUZZ_ASSERT(edgellm_gguf_find_key(g, key) >= 0, "find_key(%s)", key);
        int64_t i64; uint32_t u32; int32_t i32; float f; bool b; edgellm_str s;
        (void)edgellm_gguf_get_i64(g, key, &i64);
        (void)edgellm_gguf_get_u32(g, key, &u32);
        (void)edgellm_gguf_get_i32(g, key, &i32);
        (void)edgellm_gguf_get_f32(g, key, &f);
        (void)edgellm_gguf_get_bool(g, key, &b);
        (void)edgellm_gguf_get_str(g, key, &s);
        if (t == EDGELLM_GGUF_ARRAY) {
            edgellm_gguf_vtype et;
            uint64_t count = 0;
            FUZZ_ASSERT(edgellm_gguf_arr_info(g, key, &et, &count), "arr_info(%s)", key);
            const uint8_t *d = edgellm_gguf_arr_data(g, key);
            size_t es = edgellm_gguf_vtype_size(et);
            if (d && es && count) {   /* touch the first and last element */
                volatile uint8_t x = d[0];
                x = d[count * es - 1];
                (void)x;
            }
            if (et == EDGELLM_GGUF_STRING)
                for (uint64_t j = 0; j < count && j < 4096; j++) {
                    FUZZ_ASSERT(edgellm_gguf_arr_str(g, key, j, &s), "arr_str(%s, %llu)", key, (unsigned long long)j);
                    if (s.len) { volatile char c = s.ptr[s.len - 1]; (void)c; }
                }
            FUZZ_ASSERT(!edgellm_gguf_arr_str(g, key, count, &s), "arr_str past the end");
        }
    }
}

static void walk_tensors(const edgellm_gguf *g, const uint8_t *data, size_t size)
{
    int64_t n = edgellm_gguf_n_tensors(g);
    for (int64_t i = 0; i < n; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        FUZZ_ASSERT(t != NULL, "tensor %lld", (long long)i);
        const uint8_t *p = t->data;
        FUZZ_ASSERT(t->n_dims >= 1 && t->n_dims <= EDGELLM_GGUF_MAX_DIMS, "n_dims %u", t->n_dims);
        FUZZ_ASSERT(p >= data && p <= data + size && t->size_bytes <= (uint64_t)(data + size - p),
                    "tensor %lld data outside the buffer", (long long)i);
        if (t->size_bytes) { volatile uint8_t x = p[t->size_bytes - 1]; (void)x; }
        if (t->name.len < 200 && !memchr(t->name.ptr, 0, t->name.len)) {
            char name[256];
            memcpy(name, t->name.ptr, t->name.len);
            name[t->name.len] = 0;
            FUZZ_ASSERT(edgellm_gguf_find_tensor(g, name) == t, "find_tensor(%s)", name);
        }
    }
    FUZZ_ASSERT(edgellm_gguf_tensor_at(g, n) == NULL, "tensor_at past the end");
}

static void try_tokenizer(const edgellm_gguf *g)
{
    edgellm_tokenizer *t = NULL;
    edgellm_error err = {0};
    edgellm_status s = edgellm_tokenizer_from_gguf(g, &t, &err);
    fuzz_trace("tokenizer", s, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) { FUZZ_ASSERT(t == NULL, "handle on failure"); return; }
    static const char text[] = "Hello world, caf\xc3\xa9 <s> 123\n\xff\xfe";
    int32_t ids[256];
    int n = 0;
    s = edgellm_tokenize(t, text, sizeof text - 1, 1, ids, 256, &n, &err);
    fuzz_check_error(s, &err);
    int nv = edgellm_tokenizer_n_vocab(t);
    if (s == EDGELLM_OK)
        for (int i = 0; i < n; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < nv, "id %d of %d", ids[i], nv);
    char piece[64];
    for (int32_t id = -1; id < nv && id < 300; id++) (void)edgellm_token_to_piece(t, id, piece, sizeof piece);
    if (s == EDGELLM_OK) {
        char *out = NULL;
        size_t len = 0;
        s = edgellm_tokenizer_detokenize(t, ids, (size_t)n, &out, &len, &err);
        fuzz_check_error(s, &err);
        edgellm_free(out);
    }
    edgellm_tokenizer_free(t);
}

/* Every tensor dequantized by its type's to_float and scanned (`edgellm info --check`). */
static void try_check(const char *path)
{
    edgellm_check_report r;
    edgellm_error err = {0};
    edgellm_status s = edgellm_check_file(path, &r, &err);
    fuzz_trace("check", s, &err);
    fuzz_check_error(s, &err);
    FUZZ_ASSERT(s == EDGELLM_OK || s == EDGELLM_ERR_NUMERIC, "check after a successful open: %s", err.msg);
    FUZZ_ASSERT((s == EDGELLM_ERR_NUMERIC) == (r.found == 1), "status and report disagree");
    FUZZ_ASSERT(r.n_tensors_checked + r.n_tensors_skipped <= r.n_tensors, "counts");
}

static void try_model(const char *path)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = 1;
    edgellm_model *m = NULL;
    edgellm_error err = {0};
    edgellm_status s = edgellm_model_load(path, &mp, &m, &err);
    fuzz_trace("model", s, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) { FUZZ_ASSERT(m == NULL, "model handle on failure"); return; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 4;
    cp.n_threads = 1;
    edgellm_ctx *c = NULL;
    s = edgellm_ctx_new(m, &cp, &c, &err);
    fuzz_check_error(s, &err);
    if (s == EDGELLM_OK) {
        int32_t tok[2] = {0, info.n_vocab - 1};
        s = edgellm_decode(c, tok, 2, NULL, &err);
        fuzz_trace("decode", s, &err);
        fuzz_check_error(s, &err);
        edgellm_ctx_free(c);
    }
    edgellm_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    long live = edgellm_test_live_allocs();
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    edgellm_status s = edgellm_gguf_open_memory(data, size, "fuzz.gguf", &g, &err);
    fuzz_trace("open", s, &err);
    fuzz_check_error(s, &err);
    if (s != EDGELLM_OK) {
        FUZZ_ASSERT(g == NULL, "handle on failure");
        FUZZ_ASSERT(strstr(err.msg, "fuzz.gguf") != NULL, "message does not name the file: %s", err.msg);
        FUZZ_ASSERT(edgellm_test_live_allocs() == live, "failed open leaked %ld blocks", edgellm_test_live_allocs() - live);
        return 0;
    }
    walk_metadata(g);
    walk_tensors(g, data, size);
    try_tokenizer(g);
    edgellm_gguf_close(g);
    const char *path = fuzz_memfile(data, size);
    if (path) {
        try_check(path);
        try_model(path);
    }
    FUZZ_ASSERT(edgellm_test_live_allocs() == live, "leaked %ld blocks", edgellm_test_live_allocs() - live);
    return 0;
}
