/* test_gguf_read.c — the GGUF reader on real files from ../shared: metadata of every type the
 * files use, string arrays, the tensor table, and that every tensor lies inside the file. */
#include "format/gguf.h"
#include "tensor/types.h"
#include "test_util.h"

static void test_gguf_read_stories260k(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_open(path, &g, &err), EDGELLM_OK);
    if (!g) { fprintf(stderr, "%s\n", err.msg); return; }
    CHECK_EQ(edgellm_gguf_version(g), 3);
    CHECK_EQ(edgellm_gguf_n_tensors(g), 48);  /* 5 layers x 9 + token_embd, output_norm, output */
    edgellm_str arch;
    CHECK(edgellm_gguf_get_str(g, "general.architecture", &arch) && edgellm_str_eq(arch, "llama"));
    uint32_t n_embd = 0;
    CHECK(edgellm_gguf_get_u32(g, "llama.embedding_length", &n_embd));
    CHECK_EQ(n_embd, 64);
    edgellm_gguf_vtype et;
    uint64_t n = 0;
    CHECK(edgellm_gguf_arr_info(g, "tokenizer.ggml.tokens", &et, &n));
    CHECK_EQ(et, EDGELLM_GGUF_STRING);
    CHECK_EQ(n, 512);
    edgellm_str s;
    CHECK(edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", 1, &s) && edgellm_str_eq(s, "<s>"));
    CHECK(!edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", 512, &s));
    const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ(t->ne[0], 64);
        CHECK_EQ(t->ne[1], 512);
        CHECK_EQ(t->type, EDGELLM_TYPE_F32);
        CHECK_EQ(t->size_bytes, 64 * 512 * 4);
    }
    CHECK(edgellm_gguf_find_tensor(g, "nope") == NULL);
    uint64_t total = 0;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(g); i++) {
        const edgellm_gguf_tensor *ti = edgellm_gguf_tensor_at(g, i);
        CHECK(ti->offset % edgellm_gguf_alignment(g) == 0);
        CHECK(edgellm_gguf_data_offset(g) + ti->offset + ti->size_bytes <= edgellm_gguf_file_size(g));
        total += ti->n_elements;
    }
    CHECK(total > 260000 && total < 300000);  /* "260K" parameters (+ the output copy) */
    edgellm_gguf_close(g);
    CHECK_EQ(edgellm_test_live_allocs(), 0);
}

static void test_gguf_read_all_vocab_files(void)
{
    NEED_SHARED(dir, "data/vocab");
    const char *names[] = {"baichuan", "bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "gpt-neox",
                           "llama-spm", "mpt", "phi-3", "refact", "starcoder"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf", dir, names[i]);
        edgellm_gguf *g = NULL;
        edgellm_error err = {0};
        edgellm_status rc = edgellm_gguf_open(p, &g, &err);
        if (rc) fprintf(stderr, "   %s\n", err.msg);
        CHECK_EQ(rc, EDGELLM_OK);
        uint64_t n = 0;
        CHECK(g && edgellm_gguf_arr_info(g, "tokenizer.ggml.tokens", NULL, &n) && n > 1000);
        edgellm_gguf_close(g);
    }
}

static void test_gguf_read_reference_models(void)
{
    NEED_SHARED(dir, "data/reference");
    const char *names[] = {"llama-gqa-f32", "llama-gqa-bf16", "llama-gqa-q4_0", "llama-gqa-q4_k_m", "llama-tied-f16",
                           "qwen2-bias-f32", "llama-gqa-q6_k"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s.gguf", dir, names[i]);
        edgellm_gguf *g = NULL;
        edgellm_error err = {0};
        edgellm_status rc = edgellm_gguf_open(p, &g, &err);
        if (rc) fprintf(stderr, "   %s\n", err.msg);
        CHECK_EQ(rc, EDGELLM_OK);
        edgellm_gguf_close(g);
    }
}

static void test_gguf_read_missing_file_names_it(void)
{
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_open("/nonexistent/x.gguf", &g, &err), EDGELLM_ERR_IO);
    CHECK(g == NULL);
    CHECK(strstr(err.msg, "/nonexistent/x.gguf") != NULL);
}

int main(void)
{
    RUN(test_gguf_read_stories260k);
    RUN(test_gguf_read_all_vocab_files);
    RUN(test_gguf_read_reference_models);
    RUN(test_gguf_read_missing_file_names_it);
    return test_summary();
}
