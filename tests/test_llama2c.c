/* test_llama2c.c — the llama2.c importer.
 *
 * References: shared/models/stories260K/stories260K.gguf (converted from the same
 * checkpoint by llama.cpp's convert-llama2c-to-ggml, i.e. an independent converter): every
 * tensor must be bit-identical and the tokenizer arrays equal; the version-1 export of the
 * same weights must give the same tensors; and the converted model's logits must match
 * shared/data/reference/stories260K.exact.f32 (float64 reference) within 0.005 * std, the
 * F32 bound of shared/data/reference/README.md. Hostile inputs are built in a temp dir. */
#include "format/gguf.h"
#include "test_util.h"
#include <math.h>

/* ---- helpers ------------------------------------------------------------------------ */

/* A path in this binary's temp dir; each call gets its own slot, valid until exit. */
static const char *tmp_path(const char *name)
{
    static char slots[128][512];
    static int used;
    if (used == 128) { fprintf(stderr, "tmp_path: out of slots\n"); exit(1); }
    char *p = slots[used++];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* A tiny legacy checkpoint: dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 4 (sign
 * chooses the classifier), seq_len 4. Weights are w[i] = i * 0.001 (recognisable). */
enum { T_DIM = 8, T_HID = 16, T_L = 1, T_H = 2, T_KVH = 1, T_V = 4, T_SEQ = 4, T_HS = T_DIM / T_H, T_KV = T_KVH * T_HS };

static size_t tiny_floats(bool shared)
{
    size_t n = (size_t)T_V * T_DIM + T_L * T_DIM + T_L * T_DIM * T_DIM + 2 * T_L * T_KV * T_DIM + T_L * T_DIM * T_DIM +
               T_L * T_DIM + 3 * T_L * T_HID * T_DIM + T_DIM + 2 * T_SEQ * T_HS / 2;
    return shared ? n : n + (size_t)T_V * T_DIM;
}

/* Writes the checkpoint; extra_bytes < 0 truncates, > 0 appends zeros. */
static void write_tiny_model(const char *path, const int32_t hdr[7], bool shared, long extra_bytes)
{
    size_t nf = tiny_floats(shared);
    size_t size = 28 + nf * 4;
    unsigned char *b = calloc(1, size + 64);
    memcpy(b, hdr, 28);
    float *w = (float *)(b + 28);
    for (size_t i = 0; i < nf; i++) w[i] = (float)i * 0.001f;
    write_file(path, b, (size_t)((long)size + extra_bytes));
    free(b);
}

static void tiny_header(int32_t hdr[7], bool shared)
{
    int32_t h[7] = {T_DIM, T_HID, T_L, T_H, T_KVH, shared ? T_V : -T_V, T_SEQ};
    memcpy(hdr, h, sizeof h);
}

/* tokenizer.bin with the given pieces; len_override[i] >= -1000 replaces a stored length. */
static void write_tokenizer(const char *path, int32_t max_len, const char *const *pieces, int n, int bad_index,
                            int32_t bad_len, long extra_bytes)
{
    unsigned char buf[4096] = {0};
    size_t o = 0;
    memcpy(buf + o, &max_len, 4); o += 4;
    for (int i = 0; i < n; i++) {
        float score = -(float)i;
        int32_t len = (int32_t)strlen(pieces[i]);
        int32_t stored = i == bad_index ? bad_len : len;
        memcpy(buf + o, &score, 4); o += 4;
        memcpy(buf + o, &stored, 4); o += 4;
        memcpy(buf + o, pieces[i], (size_t)len); o += (size_t)len;
    }
    write_file(path, buf, (size_t)((long)o + extra_bytes));
}

static const char *const tiny_pieces[4] = {"<unk>", "\n<s>\n", "\n</s>\n", " a b"};

static edgellm_status convert(const char *model, const char *tok, const char *out, edgellm_error *err)
{
    memset(err, 0, sizeof *err);
    return edgellm_convert_llama2c(model, tok, out, err);
}

/* ---- against stories260K.gguf --------------------------------------------------------- */

static void compare_with_reference_gguf(const char *converted, const char *reference)
{
    edgellm_gguf *a = NULL, *b = NULL;
    edgellm_error err = {0};
    CHECK_OK(edgellm_gguf_open(converted, &a, &err));
    CHECK_OK(edgellm_gguf_open(reference, &b, &err));
    if (!a || !b) { fprintf(stderr, "   %s\n", err.msg); edgellm_gguf_close(a); edgellm_gguf_close(b); return; }

    CHECK_EQ(edgellm_gguf_n_tensors(a), edgellm_gguf_n_tensors(b));
    int same = 0;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(b); i++) {
        const edgellm_gguf_tensor *tb = edgellm_gguf_tensor_at(b, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)tb->name.len, tb->name.ptr);
        const edgellm_gguf_tensor *ta = edgellm_gguf_find_tensor(a, name);
        bool ok = ta && ta->type == tb->type && ta->n_dims == tb->n_dims && ta->size_bytes == tb->size_bytes &&
                  !memcmp(ta->ne, tb->ne, sizeof ta->ne) && !memcmp(ta->data, tb->data, tb->size_bytes);
        if (!ok) fprintf(stderr, "   tensor %s differs\n", name);
        same += ok;
    }
    CHECK_EQ(same, edgellm_gguf_n_tensors(b));

    /* tokenizer arrays */
    uint64_t na = 0, nb = 0;
    edgellm_gguf_vtype ea, eb;
    CHECK(edgellm_gguf_arr_info(a, "tokenizer.ggml.tokens", &ea, &na));
    CHECK(edgellm_gguf_arr_info(b, "tokenizer.ggml.tokens", &eb, &nb));
    CHECK_EQ(na, nb);
    int tok_same = 0;
    for (uint64_t j = 0; j < na && j < nb; j++) {
        edgellm_str sa, sb;
        if (edgellm_gguf_arr_str(a, "tokenizer.ggml.tokens", j, &sa) && edgellm_gguf_arr_str(b, "tokenizer.ggml.tokens", j, &sb) &&
            sa.len == sb.len && !memcmp(sa.ptr, sb.ptr, sa.len))
            tok_same++;
    }
    CHECK_EQ(tok_same, nb);
    const char *arrays[2] = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
    for (int k = 0; k < 2; k++) {
        CHECK(edgellm_gguf_arr_info(a, arrays[k], &ea, &na));
        CHECK(edgellm_gguf_arr_info(b, arrays[k], &eb, &nb));
        CHECK_EQ(ea, eb);
        CHECK_EQ(na, nb);
        const void *da = edgellm_gguf_arr_data(a, arrays[k]), *db = edgellm_gguf_arr_data(b, arrays[k]);
        CHECK(da && db && na == nb && !memcmp(da, db, na * edgellm_gguf_vtype_size(ea)));
    }
    /* hparams that must agree (context_length does not: the reference has the converter's
     * default 2048, we write the trained seq_len 512) */
    const char *keys[] = {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
                          "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
                          "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int64_t va = -1, vb = -2;
        CHECK(edgellm_gguf_get_i64(a, keys[k], &va));
        CHECK(edgellm_gguf_get_i64(b, keys[k], &vb));
        if (va != vb) fprintf(stderr, "   %s: %lld vs %lld\n", keys[k], (long long)va, (long long)vb);
        CHECK_EQ(va, vb);
    }
    float ea_f = 0, eb_f = 1;
    CHECK(edgellm_gguf_get_f32(a, "llama.attention.layer_norm_rms_epsilon", &ea_f));
    CHECK(edgellm_gguf_get_f32(b, "llama.attention.layer_norm_rms_epsilon", &eb_f));
    CHECK(ea_f == eb_f);
    int64_t ctx = 0;
    CHECK(edgellm_gguf_get_i64(a, "llama.context_length", &ctx));
    CHECK_EQ(ctx, 512);
    edgellm_str s;
    CHECK(edgellm_gguf_get_str(a, "general.architecture", &s) && edgellm_str_eq(s, "llama"));
    CHECK(edgellm_gguf_get_str(a, "tokenizer.ggml.model", &s) && edgellm_str_eq(s, "llama"));
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
}

static void test_llama2c_legacy_matches_stories260k_gguf(void)
{
    NEED_SHARED(bin, "models/stories260K/stories260K.bin");
    NEED_SHARED(tok, "models/stories260K/tok512.bin");
    NEED_SHARED(ref, "models/stories260K/stories260K.gguf");
    edgellm_error err;
    const char *out = tmp_path("stories_legacy.gguf");
    CHECK_OK(convert(bin, tok, out, &err));
    compare_with_reference_gguf(out, ref);
}

static void test_llama2c_v1_matches_stories260k_gguf(void)
{
    NEED_SHARED(bin, "models/stories260K/stories260K_v1.bin");
    NEED_SHARED(tok, "models/stories260K/tok512.bin");
    NEED_SHARED(ref, "models/stories260K/stories260K.gguf");
    edgellm_error err;
    const char *out = tmp_path("stories_v1.gguf");
    CHECK_OK(convert(bin, tok, out, &err));
    compare_with_reference_gguf(out, ref);
}

/* Logits of the converted model vs the float64 reference, on the reference token ids. */
static void test_llama2c_converted_logits_match_reference(void)
{
    NEED_SHARED(bin, "models/stories260K/stories260K.bin");
    NEED_SHARED(tok, "models/stories260K/tok512.bin");
    NEED_SHARED(ref_path, "data/reference/stories260K.exact.f32");
    NEED_SHARED(ids_path, "data/reference/stories260K.tokens.txt");
    edgellm_error err = {0};
    const char *out = tmp_path("stories_logits.gguf");
    CHECK_OK(convert(bin, tok, out, &err));

    char *txt = read_file(ids_path, NULL);
    int32_t ids[64];
    int n = 0;
    for (char *p = txt, *end; p && n < 64; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        ids[n++] = (int32_t)v;
    }
    free(txt);
    size_t ref_size = 0;
    float *ref = read_file(ref_path, &ref_size);
    CHECK(ref != NULL);
    CHECK(n > 0);
    if (!ref || n == 0) { free(ref); return; }
    const int n_vocab = (int)(ref_size / sizeof(float) / (size_t)n);
    CHECK_EQ((size_t)n * (size_t)n_vocab * sizeof(float), ref_size);

    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    edgellm_status rc = edgellm_model_load(out, NULL, &m, &err);
    CHECK_EQ(rc, EDGELLM_OK);
    if (rc != EDGELLM_OK) { fprintf(stderr, "   %s\n", err.msg); free(ref); return; }
    CHECK_OK(edgellm_ctx_new(m, NULL, &c, &err));
    float *logits = calloc((size_t)n * (size_t)n_vocab, sizeof(float));
    if (c) CHECK_OK(edgellm_decode(c, ids, n, logits, &err));
    double mean = 0, var = 0, maxdiff = 0;
    size_t total = (size_t)n * (size_t)n_vocab;
    for (size_t i = 0; i < total; i++) mean += ref[i];
    mean /= (double)total;
    for (size_t i = 0; i < total; i++) var += (ref[i] - mean) * (ref[i] - mean);
    double sd = sqrt(var / (double)total);
    for (size_t i = 0; i < total; i++) {
        double d = fabs((double)logits[i] - ref[i]);
        if (!(d <= maxdiff)) maxdiff = d;   /* NaN propagates as a failure */
    }
    fprintf(stderr, "   %d tokens x %d vocab: max |diff| = %.3g = %.5f std (bound 0.005 std, std %.3f)\n", n, n_vocab,
            maxdiff, maxdiff / sd, sd);
    CHECK(maxdiff <= 0.005 * sd);
    free(logits);
    free(ref);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* ---- a tiny synthetic checkpoint ---------------------------------------------------------- */

static void test_llama2c_tiny_separate_classifier(void)
{
    int32_t hdr[7];
    tiny_header(hdr, false);
    const char *model = tmp_path("tiny_sep.bin"), *tok = tmp_path("tiny.tok"), *out = tmp_path("tiny_sep.gguf");
    write_tiny_model(model, hdr, false, 0);
    write_tokenizer(tok, 6, tiny_pieces, 4, -1, 0, 0);
    edgellm_error err;
    CHECK_OK(convert(model, tok, out, &err));
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(out, &g, &err));
    if (!g) return;
    /* layout by hand: tok_emb at float 0, then rms_att (8), wq (64), wk (32), wv (32), wo (64),
     * rms_ffn (8), w1/w2/w3 (128 each), rms_final (8), freq_cis 2 x 8, wcls last */
    const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t && t->ne[0] == T_DIM && t->ne[1] == T_V && ((const float *)t->data)[1] == 0.001f);
    const size_t wcls_at = tiny_floats(false) - (size_t)T_V * T_DIM;
    t = edgellm_gguf_find_tensor(g, "output.weight");
    CHECK(t && t->ne[0] == T_DIM && t->ne[1] == T_V && ((const float *)t->data)[0] == (float)wcls_at * 0.001f);
    t = edgellm_gguf_find_tensor(g, "blk.0.attn_k.weight");
    CHECK(t && t->ne[0] == T_DIM && t->ne[1] == T_KV && ((const float *)t->data)[0] == (float)(32 + 8 + 64) * 0.001f);
    t = edgellm_gguf_find_tensor(g, "blk.0.ffn_down.weight");   /* w2: [dim][hidden] -> ne {hidden, dim} */
    CHECK(t && t->ne[0] == T_HID && t->ne[1] == T_DIM);
    t = edgellm_gguf_find_tensor(g, "output_norm.weight");
    CHECK(t && t->n_dims == 1 && ((const float *)t->data)[0] == (float)(32 + 8 + 64 + 64 + 64 + 8 + 3 * 128) * 0.001f);
    CHECK_EQ(edgellm_gguf_n_tensors(g), 3 + 9 * T_L);

    const char *want[4] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a" "\xe2\x96\x81" "b"};
    const int32_t want_type[4] = {2, 3, 3, 1};
    const int32_t *types = edgellm_gguf_arr_data(g, "tokenizer.ggml.token_type");
    for (int i = 0; i < 4; i++) {
        edgellm_str s = {0};
        CHECK(edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)i, &s) && edgellm_str_eq(s, want[i]));
        int32_t ty = -1;
        if (types) memcpy(&ty, types + i, 4);
        CHECK_EQ(ty, want_type[i]);
    }
    int64_t v = 0;
    CHECK(edgellm_gguf_get_i64(g, "llama.rope.dimension_count", &v) && v == T_HS);
    CHECK(edgellm_gguf_get_i64(g, "llama.attention.head_count_kv", &v) && v == T_KVH);
    CHECK(edgellm_gguf_get_i64(g, "llama.context_length", &v) && v == T_SEQ);
    edgellm_gguf_close(g);
}

static void test_llama2c_byte_pieces_typed(void)
{
    const char *pieces[5] = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x0A>", "<0xZZ>"};
    int32_t hdr[7] = {T_DIM, T_HID, T_L, T_H, T_KVH, 5, T_SEQ};
    const char *model = tmp_path("tiny5.bin"), *tok = tmp_path("tiny5.tok"), *out = tmp_path("tiny5.gguf");
    /* vocab 5: the shared tiny layout with one more embedding row */
    size_t nf = tiny_floats(true) + T_DIM;
    unsigned char *b = calloc(1, 28 + nf * 4);
    memcpy(b, hdr, 28);
    write_file(model, b, 28 + nf * 4);
    free(b);
    write_tokenizer(tok, 6, pieces, 5, -1, 0, 0);
    edgellm_error err;
    CHECK_OK(convert(model, tok, out, &err));
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(out, &g, &err));
    if (!g) return;
    const int32_t *types = edgellm_gguf_arr_data(g, "tokenizer.ggml.token_type");
    int32_t t3 = 0, t4 = 0;
    if (types) { memcpy(&t3, types + 3, 4); memcpy(&t4, types + 4, 4); }
    CHECK_EQ(t3, 6);
    CHECK_EQ(t4, 1);   /* not hex: an ordinary piece */
    /* shared classifier: output.weight is a copy of token_embd */
    const edgellm_gguf_tensor *a = edgellm_gguf_find_tensor(g, "token_embd.weight"), *o = edgellm_gguf_find_tensor(g, "output.weight");
    CHECK(a && o && a->size_bytes == o->size_bytes && !memcmp(a->data, o->data, a->size_bytes));
    edgellm_gguf_close(g);
}

/* ---- hostile inputs ----------------------------------------------------------------------- */

static void expect_fail(const char *model, const char *tok, edgellm_status want, const char *needle1, const char *needle2)
{
    const char *out = tmp_path("never.gguf");
    remove(out);
    edgellm_error err;
    edgellm_status rc = convert(model, tok, out, &err);
    CHECK_EQ(rc, want);
    if (needle1 && !strstr(err.msg, needle1)) { fprintf(stderr, "   message lacks '%s': %s\n", needle1, err.msg); CHECK(0); }
    if (needle2 && !strstr(err.msg, needle2)) { fprintf(stderr, "   message lacks '%s': %s\n", needle2, err.msg); CHECK(0); }
    CHECK(!file_exists(out));
}

static void test_llama2c_hostile_model(void)
{
    int32_t hdr[7];
    const char *tok = tmp_path("h.tok"), *m = tmp_path("h.bin");
    write_tokenizer(tok, 6, tiny_pieces, 4, -1, 0, 0);

    tiny_header(hdr, true);
    write_tiny_model(m, hdr, true, -4);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "h.bin", "4 bytes short");
    write_tiny_model(m, hdr, true, +4);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "h.bin", "4 bytes too many");
    write_tiny_model(m, hdr, false, 0);   /* says shared, carries a classifier: too long */
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "h.bin", "too many");

    tiny_header(hdr, true); hdr[0] = -8;
    write_tiny_model(m, hdr, true, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "h.bin", "dim is -8");
    tiny_header(hdr, true); hdr[2] = 0;
    write_tiny_model(m, hdr, true, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "n_layers is 0", NULL);
    tiny_header(hdr, true); hdr[3] = 3;
    write_tiny_model(m, hdr, true, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "n_heads 3 does not divide dim 8", NULL);
    tiny_header(hdr, true); hdr[4] = 3;
    write_tiny_model(m, hdr, true, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "n_kv_heads 3", NULL);
    tiny_header(hdr, true); hdr[5] = INT32_MIN;
    write_tiny_model(m, hdr, true, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "vocab_size", NULL);

    /* absurd sizes: must fail on the size check, allocating nothing from them */
    int32_t huge[7] = {1 << 30, 1 << 30, 1 << 30, 1, 1, 1 << 30, 1 << 30};
    write_tiny_model(m, huge, true, 0);
    long live = edgellm_test_live_allocs();
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "h.bin", NULL);
    CHECK_EQ(edgellm_test_live_allocs(), live);

    write_file(m, "\x01\x02", 2);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "too short", NULL);
    expect_fail(tmp_path("does-not-exist.bin"), tok, EDGELLM_ERR_IO, "does-not-exist.bin", NULL);

    /* a NaN weight */
    tiny_header(hdr, true);
    write_tiny_model(m, hdr, true, 0);
    size_t sz = 0;
    unsigned char *b = read_file(m, &sz);
    float nan = NAN;
    memcpy(b + 28 + 4 * 50, &nan, 4);
    write_file(m, b, sz);
    free(b);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "not a finite number", NULL);

    /* version-1 header with version 2 (the int8 export) */
    unsigned char v1[256 + 16] = {0};
    uint32_t magic = 0x616b3432u;
    int32_t ver = 2;
    memcpy(v1, &magic, 4);
    memcpy(v1 + 4, &ver, 4);
    tiny_header(hdr, true);
    memcpy(v1 + 8, hdr, 28);
    write_file(m, v1, sizeof v1);
    expect_fail(m, tok, EDGELLM_ERR_UNSUPPORTED, "version 2", NULL);
    /* version 1 with a bad shared flag */
    ver = 1;
    memcpy(v1 + 4, &ver, 4);
    v1[36] = 7;
    write_file(m, v1, sizeof v1);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "shared_classifier", NULL);
    /* version 1 cut short: header alone */
    v1[36] = 1;
    write_file(m, v1, 256);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "short", NULL);
}

static void test_llama2c_hostile_tokenizer(void)
{
    int32_t hdr[7];
    tiny_header(hdr, true);
    const char *m = tmp_path("ht.bin"), *tok = tmp_path("ht.tok");
    write_tiny_model(m, hdr, true, 0);

    write_tokenizer(tok, 6, tiny_pieces, 4, 3, -5, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "ht.tok", "token 3 has length -5");
    write_tokenizer(tok, 6, tiny_pieces, 4, 3, 6, 0);   /* 6 <= max, but only 4 bytes remain */
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "runs past the end", NULL);
    write_tokenizer(tok, 6, tiny_pieces, 4, 3, 100000, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "outside [0, max_token_length 6]", NULL);
    write_tokenizer(tok, 6, tiny_pieces, 3, -1, 0, 0);  /* 3 tokens for a 4-token model */
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "count mismatch", NULL);
    write_tokenizer(tok, 6, tiny_pieces, 4, -1, 0, 9);  /* trailing bytes: a 5th record */
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "count mismatch", NULL);
    write_tokenizer(tok, 0, tiny_pieces, 4, -1, 0, 0);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "max_token_length is 0", NULL);
    write_file(tok, "\x07", 1);
    expect_fail(m, tok, EDGELLM_ERR_FORMAT, "too short", NULL);
    expect_fail(m, tmp_path("no-such.tok"), EDGELLM_ERR_IO, "no-such.tok", NULL);
}

/* Fail every allocation in turn: NOMEM each time, nothing leaked, no output file. */
static void test_llama2c_oom_sweep(void)
{
    int32_t hdr[7];
    tiny_header(hdr, false);
    const char *m = tmp_path("oom.bin"), *tok = tmp_path("oom.tok"), *out = tmp_path("oom.gguf");
    write_tiny_model(m, hdr, false, 0);
    write_tokenizer(tok, 6, tiny_pieces, 4, -1, 0, 0);
    long live = edgellm_test_live_allocs();
    int n;
    for (n = 1; n < 10000; n++) {
        remove(out);
        edgellm_error err = {0};
        edgellm_test_alloc_fail_at(n);
        edgellm_status rc = edgellm_convert_llama2c(m, tok, out, &err);
        edgellm_test_alloc_fail_at(0);
        CHECK_EQ(edgellm_test_live_allocs(), live);
        if (rc == EDGELLM_OK) break;
        CHECK_EQ(rc, EDGELLM_ERR_NOMEM);
        CHECK(!file_exists(out));
    }
    fprintf(stderr, "   succeeded after %d failing allocation points\n", n - 1);
    CHECK(n > 5 && n < 10000);
}

/* ---- the CLI ------------------------------------------------------------------------------ */

static void test_llama2c_cli(void)
{
    char out[8192], cmd[2048];
    int32_t hdr[7];
    tiny_header(hdr, true);
    const char *m = tmp_path("cli.bin"), *tok = tmp_path("cli.tok"), *g = tmp_path("cli.gguf");
    write_tiny_model(m, hdr, true, 0);
    write_tokenizer(tok, 6, tiny_pieces, 4, -1, 0, 0);
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o %s", EDGELLM_CLI, m, tok, g);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(file_exists(g));
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s", EDGELLM_CLI, m, tok);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o %s --bogus", EDGELLM_CLI, m, tok, g);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o", EDGELLM_CLI, m, tok);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    write_tiny_model(m, hdr, true, -4);
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o %s", EDGELLM_CLI, m, tok, g);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "edgellm convert: ") && strstr(out, "cli.bin: ") && strstr(out, "4 bytes short"));
    CHECK(strstr(out, "usage:") == NULL);
    /* a bad command line: one line and a pointer to --help, not the whole usage */
    snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o %s --bogus", EDGELLM_CLI, m, tok, g);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "unknown option '--bogus'") && strstr(out, "see 'edgellm convert --help'") &&
          !strstr(out, "usage:"));

    /* -o naming an input (same string, another spelling, a hard link) is refused (exit 2), inputs intact */
    write_tiny_model(m, hdr, true, 0);
    size_t m_size = 0, t_size = 0;
    void *m_before = read_file(m, &m_size), *t_before = read_file(tok, &t_size);
    char alias[1024], link_path[1024];
    snprintf(alias, sizeof alias, "%s/./cli.bin", test_tmpdir());
    snprintf(link_path, sizeof link_path, "%s/cli-link.tok", test_tmpdir());
    unlink(link_path);
    CHECK(link(tok, link_path) == 0);
    const char *outs[] = {m, alias, tok, link_path};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s convert --llama2c %s --tokenizer %s -o %s", EDGELLM_CLI, m, tok, outs[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);   /* a bad command line, as for quantize */
        CHECK(strstr(out, "edgellm convert: ") && strstr(out, "output is the input"));
    }
    size_t m_after_size = 0, t_after_size = 0;
    void *m_after = read_file(m, &m_after_size), *t_after = read_file(tok, &t_after_size);
    CHECK(m_before && m_after && m_size == m_after_size && !memcmp(m_before, m_after, m_size));
    CHECK(t_before && t_after && t_size == t_after_size && !memcmp(t_before, t_after, t_size));
    free(m_before); free(m_after); free(t_before); free(t_after);
}

int main(void)
{
    RUN(test_llama2c_legacy_matches_stories260k_gguf);
    RUN(test_llama2c_v1_matches_stories260k_gguf);
    RUN(test_llama2c_converted_logits_match_reference);
    RUN(test_llama2c_tiny_separate_classifier);
    RUN(test_llama2c_byte_pieces_typed);
    RUN(test_llama2c_hostile_model);
    RUN(test_llama2c_hostile_tokenizer);
    RUN(test_llama2c_oom_sweep);
    RUN(test_llama2c_cli);
    return test_summary();
}
