/*
 * make_seeds.c — writes the small, valid seed inputs of the fuzz corpora (fuzz/corpus/),
 * so that the committed seeds can be regenerated and explained:
 *   gguf/      tiny llama models (F32, F16, Q8_0, Q4_0, mixed; tied and untied output), a
 *              one-tensor-per-type "zoo", a stored q4_K_r16 layout matrix (64-byte
 *              alignment), a byte-level BPE vocabulary with merges and special tokens, a
 *              qwen2 model with biases
 *   llama2c/   tiny legacy and version-1 checkpoints with their tokenizer.bin, in the
 *              input layout of fuzz_llama2c.c (mode byte, split length)
 * Usage: make_seeds OUT_DIR   (writes the .gguf files into OUT_DIR/gguf and the .bin files into OUT_DIR/llama2c;
 * the directories must exist). Real files from ../shared are added by fuzz/run.sh.
 * Shapes are the smallest that the loader accepts: n_embd 8 (32 for 32-element blocks),
 * 2 heads, 1 KV head, n_ff 16 (64), 1 layer, 16 tokens.
 */
#include "format/gguf.h"
#include "kernels/repack.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"
#include "tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *out_dir;

static float frand(uint32_t *s)   /* xorshift32 in [-0.5, 0.5) */
{
    *s ^= *s << 13; *s ^= *s >> 17; *s ^= *s << 5;
    return (float)(*s >> 8) / 16777216.0f - 0.5f;
}

/* Tensor data kept alive until the writer has written. */
static void *keep[64];
static int n_keep;

static const void *make_data(int type, int64_t ne0, int64_t ne1, float fill, uint32_t *seed)
{
    int64_t n = ne0 * ne1;
    float *f = malloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = fill != 0 ? fill : frand(seed) * 0.2f;
    size_t bytes = edgellm_type_row_size(type, ne0) * (size_t)ne1;
    void *d = malloc(bytes ? bytes : 1);
    const edgellm_type_traits *tr = edgellm_type_get_traits(type);
    if (type == EDGELLM_TYPE_F32) memcpy(d, f, bytes);
    else if (type == EDGELLM_TYPE_Q4_K_R16) {   /* Q4_K blocks in the stored 16-row layout */
        void *plain = malloc(bytes ? bytes : 1);
        edgellm_type_get_traits(EDGELLM_TYPE_Q4_K)->from_float_ref(f, plain, n);
        edgellm_repack_q4_K_r16_pack(d, ne1, ne0, 0, ne1, plain);
        free(plain);
    } else tr->from_float_ref(f, d, n);
    free(f);
    keep[n_keep++] = d;
    return d;
}

static void add(edgellm_gguf_writer *w, const char *name, int type, int64_t ne0, int64_t ne1, float fill,
                uint32_t *seed)
{
    int64_t ne[2] = {ne0, ne1};
    edgellm_gguf_writer_add_tensor(w, name, type, ne1 > 1 ? 2 : 1, ne, make_data(type, ne0, ne1, fill, seed));
}

static void write_out(edgellm_gguf_writer *w, const char *sub, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, sub, name);
    edgellm_error err = {0};
    if (edgellm_gguf_writer_write(w, path, &err) != EDGELLM_OK) { fprintf(stderr, "%s\n", err.msg); exit(1); }
    edgellm_gguf_writer_free(w);
    for (int i = 0; i < n_keep; i++) free(keep[i]);
    n_keep = 0;
}

#define V 16
static const char *const SPM_TOKENS[V] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "\xe2\x96\x81H", "H", "e", "l",
                                          "o", "\xe2\x96\x81w", "w", "r", "d", ",", "<0x0A>", "lo"};

static void spm_vocab(edgellm_gguf_writer *w)
{
    float scores[V];
    int32_t types[V];
    for (int i = 0; i < V; i++) { scores[i] = -(float)i; types[i] = 1; }
    types[0] = 2; types[1] = types[2] = 3; types[14] = 6;
    edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", SPM_TOKENS, NULL, V);
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, scores, V);
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, V);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
}

/* A llama (or qwen2) model: matrices of type mt, norms F32. */
static void model(const char *file, const char *arch, int mt, int E, int F, bool tied, int emb_type)
{
    uint32_t seed = 12345;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    char k[96];
    edgellm_gguf_writer_set_str(w, "general.architecture", arch);
    edgellm_gguf_writer_set_str(w, "general.name", file);
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", arch, s), k)
    edgellm_gguf_writer_set_u32(w, KEY("context_length"), 64);
    edgellm_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)E);
    edgellm_gguf_writer_set_u32(w, KEY("block_count"), 1);
    edgellm_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)F);
    edgellm_gguf_writer_set_u32(w, KEY("attention.head_count"), 2);
    edgellm_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), 1);
    edgellm_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)E / 2);
    edgellm_gguf_writer_set_f32(w, KEY("rope.freq_base"), 10000.0f);
    edgellm_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-5f);
#undef KEY
    spm_vocab(w);
    int KV = E / 2;
    add(w, "token_embd.weight", emb_type, E, V, 0, &seed);
    add(w, "output_norm.weight", EDGELLM_TYPE_F32, E, 1, 1.0f, &seed);
    if (!tied) add(w, "output.weight", mt, E, V, 0, &seed);
    add(w, "blk.0.attn_norm.weight", EDGELLM_TYPE_F32, E, 1, 1.0f, &seed);
    add(w, "blk.0.attn_q.weight", mt, E, E, 0, &seed);
    add(w, "blk.0.attn_k.weight", mt, E, KV, 0, &seed);
    add(w, "blk.0.attn_v.weight", mt, E, KV, 0, &seed);
    add(w, "blk.0.attn_output.weight", mt, E, E, 0, &seed);
    add(w, "blk.0.ffn_norm.weight", EDGELLM_TYPE_F32, E, 1, 1.0f, &seed);
    add(w, "blk.0.ffn_gate.weight", mt, E, F, 0, &seed);
    add(w, "blk.0.ffn_up.weight", mt, E, F, 0, &seed);
    add(w, "blk.0.ffn_down.weight", mt, F, E, 0, &seed);
    if (!strcmp(arch, "qwen2")) {
        add(w, "blk.0.attn_q.bias", EDGELLM_TYPE_F32, E, 1, 0.01f, &seed);
        add(w, "blk.0.attn_k.bias", EDGELLM_TYPE_F32, KV, 1, 0.01f, &seed);
        add(w, "blk.0.attn_v.bias", EDGELLM_TYPE_F32, KV, 1, 0.01f, &seed);
    }
    write_out(w, "gguf", file);
}

/* One tensor of every type that has a reference quantizer, 256 elements each. */
static void zoo(void)
{
    uint32_t seed = 7;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    int types[] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_BF16, EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q4_1,
                   EDGELLM_TYPE_Q5_0, EDGELLM_TYPE_Q5_1, EDGELLM_TYPE_Q8_0, EDGELLM_TYPE_Q2_K, EDGELLM_TYPE_Q3_K,
                   EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K, EDGELLM_TYPE_I4_G64_SYM,
                   EDGELLM_TYPE_I8_G128_ASYM};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "t.%s", edgellm_type_name(types[i]));
        add(w, name, types[i], 256, 1, 0, &seed);
    }
    float arr[3] = {1, 2, 3};
    edgellm_gguf_writer_set_arr(w, "x.floats", EDGELLM_GGUF_FLOAT32, arr, 3);
    edgellm_gguf_writer_set_bool(w, "x.flag", true);
    edgellm_gguf_writer_set_u64(w, "x.u64", 1ull << 40);
    write_out(w, "gguf", "zoo.gguf");
}

/* The stored q4_K_r16 layout (quantize --layout): 64-byte alignment, one {256, 16}
 * Q4_K_R16 matrix after a 32-byte F32 vector, beside the same rows in plain Q4_K. */
static void layout(void)
{
    uint32_t seed = 9;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    edgellm_gguf_writer_set_str(w, "edgellm.layout", "q4_K_r16");
    edgellm_gguf_writer_set_alignment(w, 64);
    add(w, "t.F32", EDGELLM_TYPE_F32, 8, 1, 0, &seed);
    add(w, "blk.0.attn_q.weight", EDGELLM_TYPE_Q4_K_R16, 256, 16, 0, &seed);
    add(w, "t.Q4_K", EDGELLM_TYPE_Q4_K, 256, 16, 0, &seed);
    write_out(w, "gguf", "layout-q4_K_r16.gguf");
}

/* A byte-level BPE vocabulary (gpt2 model) with merges and special tokens, no tensors. */
static void bpe_vocab(const char *file, const char *pre)
{
    static char texts[300][16];
    const char *tok[300];
    int32_t types[300];
    int n = 0;
    for (int b = 0; b < 256; b++) {
        char u[4];
        int l = edgellm_utf8_encode(edgellm_tok_byte_to_cp((uint8_t)b), u);
        memcpy(texts[n], u, (size_t)l);
        texts[n][l] = 0;
        types[n] = 1;
        tok[n] = texts[n];
        n++;
    }
    static const char *const merged[] = {"\xc4\xa0t", "he", "\xc4\xa0the", "in", "er", "\xc4\xa0" "a", "on", "re",
                                         "\xc4\xa0w", "or"};
    static const char *const merges[] = {"\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n", "e r", "\xc4\xa0 a", "o n", "r e",
                                         "\xc4\xa0 w", "o r"};
    for (int i = 0; i < 10; i++) { tok[n] = merged[i]; types[n++] = 1; }
    tok[n] = "<|endoftext|>"; types[n++] = 3;
    tok[n] = "<tool>"; types[n++] = 4;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    edgellm_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", tok, NULL, (uint64_t)n);
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, (uint64_t)n);
    edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 10);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)n - 2);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)n - 2);
    write_out(w, "gguf", file);
}

/* ---- llama2.c ---- */

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }

/* dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 6, seq_len 4. */
static void l2c(const char *file, int version, bool shared)
{
    int32_t h[7] = {8, 16, 1, 2, 1, shared ? 6 : -6, 4};
    const int dim = 8, hid = 16, L = 1, kv = 4, voc = 6, seq = 4, hs = 4;
    size_t n_floats = (size_t)voc * dim + L * dim + L * dim * dim + 2 * L * kv * dim + L * dim * dim + L * dim +
                      3 * (size_t)L * hid * dim + dim + (version == 0 ? 2 * (size_t)seq * hs / 2 : 0) +
                      (shared ? 0 : (size_t)voc * dim);
    uint8_t hdr[256] = {0};
    size_t hdr_len;
    if (version == 0) { memcpy(hdr, h, 28); hdr_len = 28; }
    else {
        uint32_t magic = 0x616b3432u;
        int32_t ver = 1;
        h[5] = 6;
        memcpy(hdr, &magic, 4); memcpy(hdr + 4, &ver, 4); memcpy(hdr + 8, h, 28);
        hdr[36] = shared;
        hdr_len = 256;
    }
    /* tokenizer.bin for 6 tokens */
    static const char *const pieces[6] = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x0A>", " a", "b"};
    uint8_t tokbuf[256];
    size_t tl = 0;
    int32_t max_len = 6;
    memcpy(tokbuf, &max_len, 4); tl = 4;
    for (int i = 0; i < 6; i++) {
        float sc = -(float)i;
        int32_t len = (int32_t)strlen(pieces[i]);
        memcpy(tokbuf + tl, &sc, 4); memcpy(tokbuf + tl + 4, &len, 4); tl += 8;
        memcpy(tokbuf + tl, pieces[i], (size_t)len); tl += (size_t)len;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/llama2c/%s", out_dir, file);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    uint8_t mode = 0;
    uint32_t model_size = (uint32_t)(hdr_len + 4 * n_floats);
    put(f, &mode, 1);
    put(f, &model_size, 4);
    put(f, hdr, hdr_len);
    uint32_t seed = 99;
    for (size_t i = 0; i < n_floats; i++) { float x = frand(&seed); put(f, &x, 4); }
    put(f, tokbuf, tl);
    fclose(f);
    /* the tokenizer alone, mode odd, n_vocab 6 */
    snprintf(path, sizeof path, "%s/llama2c/tok6.bin", out_dir);
    f = fopen(path, "wb");
    uint8_t m1[3] = {1, 5, 0};
    put(f, m1, 3);
    put(f, tokbuf, tl);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: make_seeds OUT_DIR\n"); return 2; }
    out_dir = argv[1];
    model("tiny-f32.gguf", "llama", EDGELLM_TYPE_F32, 8, 16, false, EDGELLM_TYPE_F32);
    model("tiny-f16-tied.gguf", "llama", EDGELLM_TYPE_F16, 8, 16, true, EDGELLM_TYPE_F16);
    model("tiny-q8_0.gguf", "llama", EDGELLM_TYPE_Q8_0, 32, 64, false, EDGELLM_TYPE_Q8_0);
    model("tiny-q4_0-tied.gguf", "llama", EDGELLM_TYPE_Q4_0, 32, 64, true, EDGELLM_TYPE_Q4_0);
    model("tiny-qwen2-bf16.gguf", "qwen2", EDGELLM_TYPE_BF16, 8, 16, false, EDGELLM_TYPE_F32);
    model("tiny-i4g64.gguf", "llama", EDGELLM_TYPE_I4_G64_SYM, 64, 64, false, EDGELLM_TYPE_F16);
    zoo();
    layout();
    bpe_vocab("bpe-gpt2.gguf", "gpt-2");
    bpe_vocab("bpe-llama3.gguf", "llama3");
    bpe_vocab("bpe-qwen2.gguf", "qwen2");
    l2c("legacy-shared.bin", 0, true);
    l2c("legacy-cls.bin", 0, false);
    l2c("v1-shared.bin", 1, true);
    return 0;
}
