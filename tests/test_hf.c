/*
 * test_hf.c — Hugging Face checkpoints <-> GGUF (src/tools/hf_*.c, `edgellm convert --hf`,
 * `edgellm export --hf`) against references edgellm did not produce:
 *  - llama.cpp's vocabulary files (../shared/data/vocab): the tokenizer.* arrays of the
 *    same tokenizers converted from Hugging Face files (../shared/data/hf), and the ids of
 *    llama.cpp's 46 test strings (.inp/.out, made by the Hugging Face tokenizers);
 *  - SentencePiece itself (python3-sentencepiece): ids of Llama 2's tokenizer.model on the
 *    same strings (tests/hf/llama2-spm.ids, made by tests/hf/spm_ids.py; rerun live when
 *    Debian's python3-sentencepiece is installed);
 *  - random-weight checkpoints and their logits written by tests/hf/hf_checkpoint.py with
 *    NumPy from transformers' model definition (skipped without python3-numpy);
 *  - round trips GGUF -> HF -> GGUF of edgellm synth models: the same logits, bit for bit;
 *  - hostile safetensors files (lengths, offsets, overlaps, dtypes, names) and broken
 *    folders: a status and a message naming the file, nothing else.
 */
#include "test_util.h"
#include "common/common.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer_internal.h"
#include "tools/hf.h"

#ifndef EDGELLM_HAVE_CJSON
int main(void)
{
    fprintf(stderr, "SKIP: built without cJSON (libcjson-dev): no Hugging Face import\n");
    return 77;
}
#else

#ifndef EDGELLM_TESTS_DIR
#define EDGELLM_TESTS_DIR "tests"
#endif

/* ------------------------------------------------------------------ helpers */

static void link_into(const char *dir, const char *src, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
    if (symlink(src, p) != 0) perror(p);
}

static const char *make_dir(const char *name)
{
    const char *d = test_tmp_path(name);
    mkdir(d, 0777);
    return d;
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK_EQ(write_file(p, text, strlen(text)), 0);
}

static edgellm_status convert(const char *dir, const char *out, const char *outtype, int vocab_only, edgellm_error *err)
{
    edgellm_hf_convert_params p = edgellm_hf_convert_default_params();
    p.outtype = outtype;
    p.vocab_only = vocab_only;
    p.n_threads = 2;
    edgellm_status rc = edgellm_convert_hf(dir, out, &p, NULL, err);
    if (rc != EDGELLM_OK) fprintf(stderr, "   convert %s: %s\n", dir, err->msg);
    return rc;
}

static edgellm_status export_hf(const char *in, const char *dir, int vocab_only, uint64_t shard, edgellm_error *err)
{
    edgellm_hf_export_params p = edgellm_hf_export_default_params();
    p.vocab_only = vocab_only;
    p.max_shard_bytes = shard;
    edgellm_status rc = edgellm_export_hf(in, dir, &p, NULL, err);
    if (rc != EDGELLM_OK) fprintf(stderr, "   export %s: %s\n", in, err->msg);
    return rc;
}

static edgellm_gguf *open_gguf(const char *path)
{
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_open(path, &g, &err) != EDGELLM_OK) fprintf(stderr, "   open %s: %s\n", path, err.msg);
    return g;
}

/* Element i of array key of g as bytes (strings) or the packed element (numbers). */
static bool elem(const edgellm_gguf *g, const char *key, uint64_t i, const void **p, uint64_t *n)
{
    edgellm_gguf_vtype t;
    uint64_t count;
    if (!edgellm_gguf_arr_info(g, key, &t, &count) || i >= count) return false;
    if (t == EDGELLM_GGUF_STRING) {
        edgellm_str s;
        if (!edgellm_gguf_arr_str(g, key, i, &s)) return false;
        *p = s.ptr;
        *n = s.len;
        return true;
    }
    const size_t es = edgellm_gguf_vtype_size(t);
    *p = (const uint8_t *)edgellm_gguf_arr_data(g, key) + i * es;
    *n = es;
    return true;
}

/* Indices where array key differs between a and b, into diff[max]; -1 when the arrays
 * have another length or type (or one is missing). */
static int64_t array_diff(const edgellm_gguf *a, const edgellm_gguf *b, const char *key, int64_t *diff, int64_t max)
{
    edgellm_gguf_vtype ta, tb;
    uint64_t na, nb;
    const bool ha = edgellm_gguf_arr_info(a, key, &ta, &na), hb = edgellm_gguf_arr_info(b, key, &tb, &nb);
    if (!ha && !hb) return 0;
    if (ha != hb || ta != tb || na != nb) return -1;
    int64_t n = 0;
    for (uint64_t i = 0; i < na; i++) {
        const void *pa, *pb;
        uint64_t la, lb;
        if (!elem(a, key, i, &pa, &la) || !elem(b, key, i, &pb, &lb)) return -1;
        if (la != lb || memcmp(pa, pb, (size_t)la)) {
            if (n < max) diff[n] = (int64_t)i;
            n++;
        }
    }
    return n;
}

static bool same_scalar(const edgellm_gguf *a, const edgellm_gguf *b, const char *key)
{
    const int64_t ia = edgellm_gguf_find_key(a, key), ib = edgellm_gguf_find_key(b, key);
    if (ia < 0 || ib < 0) return ia == ib;
    char va[256], vb[256];
    edgellm_gguf_format_value(a, ia, va, sizeof va);
    edgellm_gguf_format_value(b, ib, vb, sizeof vb);
    if (strcmp(va, vb)) fprintf(stderr, "   %s: %s vs %s\n", key, va, vb);
    return !strcmp(va, vb);
}

static int32_t *encode(const edgellm_tokenizer *t, const char *text, size_t len, int *n)
{
    int need = 0;
    edgellm_tokenize(t, text, len, 0, NULL, 0, &need, NULL);
    int32_t *ids = malloc((size_t)(need ? need : 1) * sizeof *ids);
    if (edgellm_tokenize(t, text, len, 0, ids, need, n, NULL) != EDGELLM_OK || *n != need) { free(ids); return NULL; }
    return ids;
}

/* The 46 strings of llama.cpp's .inp against expected ids (one line each); returns the
 * number of strings whose ids matched. */
static int check_vectors(const char *gguf, const char *inp_path, const char *ids_path)
{
    edgellm_tokenizer *t = NULL;
    edgellm_error err = {0};
    if (edgellm_tokenizer_load(gguf, &t, &err) != EDGELLM_OK) {
        fprintf(stderr, "   %s: %s\n", gguf, err.msg);
        return 0;
    }
    size_t inp_len = 0, out_len = 0;
    char *inp = read_file(inp_path, &inp_len), *out = read_file(ids_path, &out_len);
    static const char SEP[] = "\n__ggml_vocab_test__\n";
    int pass = 0, cases = 0;
    char *p = inp, *line = out;
    while (inp && out && p < inp + inp_len) {
        char *q = strstr(p, SEP);
        if (!q || !line || line >= out + out_len) break;
        char *eol = strchr(line, '\n');
        if (eol) *eol = 0;
        int32_t expect[1024];
        int n_expect = 0, n = 0;
        for (char *tok = strtok(line, " "); tok && n_expect < 1024; tok = strtok(NULL, " "))
            expect[n_expect++] = atoi(tok);
        int32_t *ids = encode(t, p, (size_t)(q - p), &n);
        cases++;
        if (ids && n == n_expect && !memcmp(ids, expect, (size_t)n * sizeof *ids)) pass++;
        else fprintf(stderr, "   %s: string %d \"%.40s\" gives other ids\n", gguf, cases, p);
        free(ids);
        p = q + sizeof SEP - 1;
        line = eol ? eol + 1 : out + out_len;
    }
    CHECK_EQ(cases, 46);
    free(inp);
    free(out);
    edgellm_tokenizer_free(t);
    return pass;
}

static void vocab_vectors(const char *gguf, const char *vocab)
{
    char rel[256];
    snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf.inp", vocab);
    const char *inp = shared_path(rel);
    snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf.out", vocab);
    const char *out = shared_path(rel);
    if (!inp || !out) return;   /* baichuan and gpt-neox have no test strings */
    CHECK_EQ(check_vectors(gguf, inp, out), 46);
}

/* ---------------------------------------------- vocabularies vs llama.cpp's files ---- */

static const char *const TOKENIZER_KEYS[] = {
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix", "tokenizer.chat_template"};

/* Llama 2's tokenizer.model (+ the Llama-2-7b-hf tokenizer files) gives llama.cpp's
 * ggml-vocab-llama-spm.gguf key for key: the same tokenizer.* keys, arrays and values. */
static void test_hf_vocab_spm_model_equals_llamacpp(void)
{
    NEED_SHARED(model, "models/llama2-tokenizer/tokenizer.model");
    NEED_SHARED(ref, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(hf, "data/hf/llama-2");
    const char *d = make_dir("llama2-spm");
    link_into(d, model, "tokenizer.model");
    char p[1024];
    for (const char *const *f =
             (const char *const[]){"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", NULL};
         *f; f++) {
        snprintf(p, sizeof p, "%s/%s", hf, *f);
        link_into(d, p, *f);
    }
    const char *out = test_tmp_path("llama2-spm.gguf");
    edgellm_error err = {0};
    CHECK_OK(convert(d, out, NULL, 1, &err));
    edgellm_gguf *a = open_gguf(out), *b = open_gguf(ref);
    CHECK(a && b);
    if (!a || !b) { edgellm_gguf_close(a); edgellm_gguf_close(b); return; }
    int64_t diff[8];
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.tokens", diff, 8), 0);
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.scores", diff, 8), 0);
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.token_type", diff, 8), 0);
    for (size_t k = 0; k < sizeof TOKENIZER_KEYS / sizeof *TOKENIZER_KEYS; k++)
        CHECK(same_scalar(a, b, TOKENIZER_KEYS[k]));
    /* no tokenizer.* key of one that the other lacks */
    for (int pass = 0; pass < 2; pass++) {
        const edgellm_gguf *x = pass ? b : a, *y = pass ? a : b;
        for (int64_t i = 0; i < edgellm_gguf_n_kv(x); i++) {
            edgellm_str k = edgellm_gguf_key(x, i);
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)EDGELLM_MIN(k.len, 127), k.ptr);
            if (!strncmp(key, "tokenizer.", 10) && edgellm_gguf_find_key(y, key) < 0) {
                fprintf(stderr, "   %s only in %s\n", key, pass ? "llama.cpp's" : "ours");
                CHECK(0);
            }
        }
    }
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    vocab_vectors(out, "llama-spm");
}

/* Phi-3's tokenizer.json alone (no tokenizer.model: the scores come back from the merge
 * order) gives ggml-vocab-phi-3.gguf's tokens and scores; the differences are named:
 *  - id 29871 "▁": Phi-3's tokenizer.model gives it -1e9, but no merge makes a single
 *    character, so the tokenizer.json does not place it (we give it its place among the
 *    characters; a SentencePiece BPE merge never reads the score of a single character);
 *  - ids 32011..32063 "[PADi]": unused here (type 5), unknown (2) in that file, which an
 *    older convert_hf_to_gguf.py wrote; its conversion/phi.py now fills them with UNUSED;
 *  - add_bos_token and the chat template: this tokenizer_config.json is a later revision
 *    (add_bos_token false, another template) than the one that file was made from. */
static void test_hf_vocab_phi3_json_equals_llamacpp(void)
{
    NEED_SHARED(ref, "data/vocab/ggml-vocab-phi-3.gguf");
    NEED_SHARED(hf, "data/hf/phi-3-mini-4k-instruct");
    const char *d = make_dir("phi3");
    char p[1024];
    for (const char *const *f = (const char *const[]){"tokenizer.json", "tokenizer_config.json", NULL}; *f; f++) {
        snprintf(p, sizeof p, "%s/%s", hf, *f);
        link_into(d, p, *f);
    }
    write_text(d, "config.json", "{\"architectures\": [\"Phi3ForCausalLM\"], \"vocab_size\": 32064}");
    const char *out = test_tmp_path("phi3.gguf");
    edgellm_error err = {0};
    CHECK_OK(convert(d, out, NULL, 1, &err));
    edgellm_gguf *a = open_gguf(out), *b = open_gguf(ref);
    CHECK(a && b);
    if (!a || !b) { edgellm_gguf_close(a); edgellm_gguf_close(b); return; }
    int64_t diff[64];
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.tokens", diff, 64), 0);
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.scores", diff, 64), 1);
    CHECK_EQ(diff[0], 29871);
    const int64_t nt = array_diff(a, b, "tokenizer.ggml.token_type", diff, 64);
    CHECK_EQ(nt, 53);
    for (int64_t i = 0; i < nt && i < 64; i++) CHECK_EQ(diff[i], 32011 + i);
    const int32_t *types = edgellm_gguf_arr_data(a, "tokenizer.ggml.token_type");
    int32_t t32011;
    memcpy(&t32011, (const uint8_t *)types + 4 * 32011, 4);
    CHECK_EQ(t32011, EDGELLM_TOKTYPE_UNUSED);
    for (const char *const *k =
             (const char *const[]){"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                                   "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                                   "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_eos_token", NULL};
         *k; k++)
        CHECK(same_scalar(a, b, *k));
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    vocab_vectors(out, "phi-3");
}

/* GPT-2's vocab.json + merges.txt (transformers' GPT2Tokenizer files) give
 * ggml-vocab-gpt-2.gguf's tokens, types, merges, pre-tokenizer and BOS/EOS; our file also
 * names <|endoftext|> the unknown token, as this folder's special_tokens_map.json does
 * (llama.cpp does not read that file). */
static void test_hf_vocab_gpt2_files_equal_llamacpp(void)
{
    NEED_SHARED(ref, "data/vocab/ggml-vocab-gpt-2.gguf");
    NEED_SHARED(hf, "data/hf/gpt2");
    const char *d = make_dir("gpt2");
    char p[1024];
    for (const char *const *f = (const char *const[]){"vocab.json", "merges.txt", "special_tokens_map.json", NULL}; *f;
         f++) {
        snprintf(p, sizeof p, "%s/%s", hf, *f);
        link_into(d, p, *f);
    }
    /* GPT-2's config.json (openai-community/gpt2) names the special ids */
    write_text(d, "config.json", "{\"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 50257, "
                                 "\"bos_token_id\": 50256, \"eos_token_id\": 50256}");
    const char *out = test_tmp_path("gpt2.gguf");
    edgellm_error err = {0};
    CHECK_OK(convert(d, out, NULL, 1, &err));
    edgellm_gguf *a = open_gguf(out), *b = open_gguf(ref);
    CHECK(a && b);
    if (!a || !b) { edgellm_gguf_close(a); edgellm_gguf_close(b); return; }
    int64_t diff[8];
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.tokens", diff, 8), 0);
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.token_type", diff, 8), 0);
    CHECK_EQ(array_diff(a, b, "tokenizer.ggml.merges", diff, 8), 0);
    for (const char *const *k = (const char *const[]){"tokenizer.ggml.model", "tokenizer.ggml.pre",
                                                       "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                                       "tokenizer.ggml.add_bos_token", NULL}; *k; k++)
        CHECK(same_scalar(a, b, *k));
    int64_t unk = -1;
    CHECK(edgellm_gguf_get_i64(a, "tokenizer.ggml.unknown_token_id", &unk));
    CHECK_EQ(unk, 50256);
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    vocab_vectors(out, "gpt-2");
}

/* Every vocabulary file of llama.cpp written as Hugging Face tokenizer files (export
 * --vocab-only) and read back gives the same arrays and the same ids on the test strings.
 * The pre-tokenizer comes back under the name of its family (mpt -> gpt-2, refact ->
 * starcoder: the same regexes, edgellm_pretok_from_name). deepseek-coder's file predates
 * llama.cpp's rule that texts like "<｜fim▁hole｜>" are control tokens (llama.cpp
 * #8228, 2024-07; that file: 2024-04), which the importer applies. */
static void test_hf_vocab_roundtrip_llamacpp_files(void)
{
    static const char *const VOCABS[] = {"llama-spm", "phi-3", "baichuan", "gpt-2", "mpt", "gpt-neox", "falcon",
                                         "starcoder", "refact", "deepseek-llm", "deepseek-coder"};
    for (size_t v = 0; v < sizeof VOCABS / sizeof *VOCABS; v++) {
        char rel[128], name[64];
        snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf", VOCABS[v]);
        const char *ref = shared_path(rel);
        if (!ref) { fprintf(stderr, "   SKIP %s: missing\n", rel); test_skipped++; continue; }
        snprintf(name, sizeof name, "rt-%s", VOCABS[v]);
        const char *d = test_tmp_path(name);
        edgellm_error err = {0};
        CHECK_OK(export_hf(ref, d, 1, 0, &err));
        edgellm_gguf *b = open_gguf(ref);
        uint64_t n = 0;
        edgellm_gguf_vtype et;
        CHECK(b && edgellm_gguf_arr_info(b, "tokenizer.ggml.tokens", &et, &n));
        char cfg[128];
        snprintf(cfg, sizeof cfg, "{\"vocab_size\": %llu}", (unsigned long long)n);
        write_text(d, "config.json", cfg);
        snprintf(name, sizeof name, "rt-%s.gguf", VOCABS[v]);
        const char *out = test_tmp_path(name);
        CHECK_OK(convert(d, out, NULL, 1, &err));
        edgellm_gguf *a = open_gguf(out);
        CHECK(a != NULL);
        if (!a || !b) { edgellm_gguf_close(a); edgellm_gguf_close(b); continue; }
        int64_t diff[16];
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.tokens", diff, 16), 0);
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.scores", diff, 16), 0);
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.merges", diff, 16), 0);
        const int64_t nt = array_diff(a, b, "tokenizer.ggml.token_type", diff, 16);
        if (!strcmp(VOCABS[v], "deepseek-coder")) {
            CHECK_EQ(
                nt,
                7); /* 32015..32021: <｜fim▁hole｜> <｜fim▁begin｜> <｜fim▁end｜> <pad> <|User|> <|Assistant|> <|EOT|> */
            for (int64_t i = 0; i < nt && i < 16; i++) CHECK_EQ(diff[i], 32015 + i);
        } else {
            CHECK_EQ(nt, 0);
        }
        for (const char *const *k =
                 (const char *const[]){"tokenizer.ggml.model", "tokenizer.ggml.bos_token_id",
                                       "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                                       "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
                                       "tokenizer.ggml.add_eos_token", "tokenizer.chat_template", NULL};
             *k; k++)
            CHECK(same_scalar(a, b, *k));
        edgellm_str pa = {"default", 7}, pb = {"default", 7};
        edgellm_gguf_get_str(a, "tokenizer.ggml.pre", &pa);
        edgellm_gguf_get_str(b, "tokenizer.ggml.pre", &pb);
        char sa[64], sb[64];
        snprintf(sa, sizeof sa, "%.*s", (int)EDGELLM_MIN(pa.len, 63), pa.ptr);
        snprintf(sb, sizeof sb, "%.*s", (int)EDGELLM_MIN(pb.len, 63), pb.ptr);
        edgellm_pretok ia = EDGELLM_PRETOK_DEFAULT, ib = EDGELLM_PRETOK_DEFAULT;
        CHECK(edgellm_pretok_from_name(sa, &ia) && edgellm_pretok_from_name(sb, &ib));
        CHECK_EQ(ia, ib);
        edgellm_gguf_close(a);
        edgellm_gguf_close(b);
        vocab_vectors(out, VOCABS[v]);
    }
}

/* SmolLM2's tokenizer.json: its pre_tokenizer (Digits individual + ByteLevel) is
 * StarCoder's, and it survives a round trip unchanged. */
static void test_hf_vocab_smollm2_pretokenizer(void)
{
    NEED_SHARED(hf, "data/hf/smollm2-135m-instruct");
    const char *out = test_tmp_path("smollm2-vocab.gguf"), *d = test_tmp_path("smollm2-rt");
    edgellm_hf_convert_params p = edgellm_hf_convert_default_params();
    p.vocab_only = 1;
    edgellm_hf_convert_report r;
    edgellm_error err = {0};
    CHECK_OK(edgellm_convert_hf(hf, out, &p, &r, &err));
    CHECK(!strcmp(r.pre, "starcoder") && !strcmp(r.tokenizer, "gpt2"));
    CHECK_EQ(r.n_vocab, 49152);
    CHECK_EQ(r.n_merges, 48900);
    edgellm_tokenizer *t = NULL;
    CHECK_OK(edgellm_tokenizer_load(out, &t, &err));
    if (t) {   /* digits one by one, as the Digits stage says */
        int n = 0;
        int32_t *ids = encode(t, "x 2024", 6, &n);
        CHECK(ids && n == 6);
        free(ids);
        CHECK_EQ(edgellm_token_bos(t), 1);   /* config.json bos_token_id */
        CHECK_EQ(edgellm_token_eos(t), 2);
        edgellm_tokenizer_free(t);
    }
    CHECK_OK(export_hf(out, d, 1, 0, &err));
    write_text(d, "config.json", "{\"vocab_size\": 49152}");
    const char *out2 = test_tmp_path("smollm2-vocab-rt.gguf");
    CHECK_OK(convert(d, out2, NULL, 1, &err));
    edgellm_gguf *a = open_gguf(out), *b = open_gguf(out2);
    int64_t diff[4];
    if (a && b) {
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.tokens", diff, 4), 0);
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.token_type", diff, 4), 0);
        CHECK_EQ(array_diff(a, b, "tokenizer.ggml.merges", diff, 4), 0);
        CHECK(same_scalar(a, b, "tokenizer.ggml.pre"));
    }
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
}

/* Phi-3's tokenizer.json rewritten the way newer transformers save SentencePiece-style
 * tokenizers (a Metaspace pre-tokenizer instead of the Prepend/Replace normalizers) gives
 * the same vocabulary; with prepend_scheme "never", add_space_prefix false. */
static void test_hf_vocab_metaspace_form(void)
{
    NEED_SHARED(hf, "data/hf/phi-3-mini-4k-instruct");
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer.json", hf);
    cJSON *j = NULL;
    CHECK_OK(edgellm_hf_json_load(p, &j, NULL));
    if (!j) return;
    const char *outs[2] = {test_tmp_path("metaspace-first.gguf"), test_tmp_path("metaspace-never.gguf")};
    for (int k = 0; k < 2; k++) {
        cJSON_ReplaceItemInObjectCaseSensitive(j, "normalizer", cJSON_CreateNull());
        cJSON *pre = cJSON_CreateObject();
        cJSON_AddStringToObject(pre, "type", "Metaspace");
        cJSON_AddStringToObject(pre, "replacement", "\xe2\x96\x81");
        cJSON_AddStringToObject(pre, "prepend_scheme", k ? "never" : "first");
        cJSON_AddFalseToObject(pre, "split");
        cJSON_ReplaceItemInObjectCaseSensitive(j, "pre_tokenizer", pre);
        char *text = cJSON_PrintUnformatted(j);
        const char *d = make_dir(k ? "metaspace-never" : "metaspace-first");
        write_text(d, "tokenizer.json", text);
        free(text);
        write_text(d, "config.json", "{\"vocab_size\": 32064}");
        edgellm_error err = {0};
        CHECK_OK(convert(d, outs[k], NULL, 1, &err));
    }
    cJSON_Delete(j);
    const char *ref = test_tmp_path("phi3.gguf");   /* test_hf_vocab_phi3_json_equals_llamacpp's */
    edgellm_gguf *a = open_gguf(outs[0]), *b = open_gguf(ref), *c = open_gguf(outs[1]);
    if (a && b && c) {
        int64_t diff[4];
        for (const char *const *key = (const char *const[]){"tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                                                             "tokenizer.ggml.token_type", NULL}; *key; key++) {
            CHECK_EQ(array_diff(a, b, *key, diff, 4), 0);
            CHECK_EQ(array_diff(c, b, *key, diff, 4), 0);
        }
        bool asp = true;
        CHECK(edgellm_gguf_find_key(a, "tokenizer.ggml.add_space_prefix") < 0);
        CHECK(edgellm_gguf_get_bool(c, "tokenizer.ggml.add_space_prefix", &asp) && !asp);
    }
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    edgellm_gguf_close(c);
}

/* Special tokens and templates: generation_config.json's list of ids that end generation
 * (EOS, then EOT and EOM), a named list of chat templates, a TemplateProcessing
 * post-processor that adds BOS; and the same keys after export and import. */
static void test_hf_vocab_special_tokens_and_templates(void)
{
    const char *d = make_dir("specials");
    write_text(
        d, "tokenizer.json",
        "{\"added_tokens\": [{\"id\": 3, \"content\": \"<|eot|>\", \"special\": true},"
        " {\"id\": 4, \"content\": \"<|eom|>\", \"special\": true}, {\"id\": 5, \"content\": \"<|end|>\", \"special\": "
        "true},"
        " {\"id\": 6, \"content\": \"<|begin|>\", \"special\": true}, {\"id\": 7, \"content\": \"  \", \"special\": "
        "false}], \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},"
        " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
        "\"<|begin|>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]},"
        " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [[\"a\", \"b\"]]}}");
    write_text(d, "tokenizer_config.json",
               "{\"bos_token\": {\"content\": \"<|begin|>\"}, \"chat_template\": [{\"name\": \"default\", "
               "\"template\": \"D\"}, {\"name\": \"tool use\", \"template\": \"T\"}]}");
    write_text(d, "generation_config.json", "{\"eos_token_id\": [5, 3, 4]}");
    write_text(d, "config.json", "{\"vocab_size\": 10}");
    const char *out = test_tmp_path("specials.gguf"), *ex = test_tmp_path("specials-hf"),
               *back = test_tmp_path("specials-rt.gguf");
    edgellm_error err = {0};
    CHECK_OK(convert(d, out, NULL, 1, &err));
    edgellm_gguf *g = open_gguf(out);
    if (g) {
        int64_t v = -1;
        bool b = false;
        CHECK(edgellm_gguf_get_i64(g, "tokenizer.ggml.bos_token_id", &v) && v == 6);
        CHECK(edgellm_gguf_get_i64(g, "tokenizer.ggml.eos_token_id", &v) && v == 5);
        CHECK(edgellm_gguf_get_i64(g, "tokenizer.ggml.eot_token_id", &v) && v == 3);
        CHECK(edgellm_gguf_get_i64(g, "tokenizer.ggml.eom_token_id", &v) && v == 4);
        CHECK(edgellm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && b);
        CHECK(edgellm_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b) && !b);
        edgellm_str s;
        CHECK(edgellm_gguf_get_str(g, "tokenizer.chat_template", &s) && edgellm_str_eq(s, "D"));
        CHECK(edgellm_gguf_get_str(g, "tokenizer.chat_template.tool_use", &s) && edgellm_str_eq(s, "T"));
        CHECK(edgellm_gguf_arr_str(g, "tokenizer.chat_templates", 0, &s) && edgellm_str_eq(s, "tool_use"));
        CHECK(edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", 8, &s) && edgellm_str_eq(s, "[PAD8]"));
        CHECK(edgellm_gguf_arr_str(g, "tokenizer.ggml.merges", 0, &s) && edgellm_str_eq(s, "a b"));
        const int32_t *types = edgellm_gguf_arr_data(g, "tokenizer.ggml.token_type");
        int32_t t[10];
        memcpy(t, types, sizeof t);
        CHECK(t[0] == 1 && t[3] == 3 && t[7] == 4 && t[8] == 5);
    }
    CHECK_OK(export_hf(out, ex, 1, 0, &err));
    write_text(ex, "config.json", "{\"vocab_size\": 10}");
    char gc[600];
    snprintf(gc, sizeof gc, "%s/generation_config.json", ex);
    write_file(gc, "{\"eos_token_id\": [5, 3, 4]}", 27);   /* export --vocab-only writes no generation_config.json */
    CHECK_OK(convert(ex, back, NULL, 1, &err));
    edgellm_gguf *r = open_gguf(back);
    if (g && r) {
        int64_t diff[4];
        for (const char *const *k = (const char *const[]){"tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                                          "tokenizer.ggml.merges", "tokenizer.chat_templates", NULL};
             *k; k++)
            CHECK_EQ(array_diff(g, r, *k, diff, 4), 0);
        for (const char *const *k =
                 (const char *const[]){"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                       "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                                       "tokenizer.ggml.add_bos_token", "tokenizer.chat_template",
                                       "tokenizer.chat_template.tool_use", "tokenizer.ggml.pre", NULL};
             *k; k++)
            CHECK(same_scalar(g, r, *k));
    }
    edgellm_gguf_close(g);
    edgellm_gguf_close(r);
}

/* The ids of Llama 2's tokenizer.model, imported in C, equal SentencePiece's own. */
static void test_hf_spm_ids_equal_sentencepiece(void)
{
    NEED_SHARED(model, "models/llama2-tokenizer/tokenizer.model");
    NEED_SHARED(inp, "data/vocab/ggml-vocab-llama-spm.gguf.inp");
    const char *golden = EDGELLM_TESTS_DIR "/hf/llama2-spm.ids";
    const char *d = make_dir("spm-only");
    link_into(d, model, "tokenizer.model");
    const char *out = test_tmp_path("spm-only.gguf");
    edgellm_error err = {0};
    CHECK_OK(convert(d, out, NULL, 1, &err));
    CHECK_EQ(check_vectors(out, inp, golden), 46);
    /* with python3-sentencepiece: the golden file is what it says today */
    char cmd[2048], res[64];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import sentencepiece' 2>/dev/null && /usr/bin/python3 %s/hf/spm_ids.py "
             "%s %s > %s && cmp -s %s %s && echo same",
             EDGELLM_TESTS_DIR, model, inp, test_tmp_path("spm-live.ids"), test_tmp_path("spm-live.ids"), golden);
    if (run_capture(cmd, res, sizeof res) == 0) CHECK(strstr(res, "same") != NULL);
    else fprintf(stderr, "   (python3-sentencepiece not installed: golden ids only)\n");
}

/* ------------------------------------------------------------------- weights ---- */

/* Logits of every position of tokens[n] through the model at path (n x n_vocab floats,
 * malloc'd); NULL on failure. */
static float *run_logits(const char *path, const int32_t *tokens, int n, int *n_vocab)
{
    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    float *out = NULL;
    if (edgellm_model_load(path, NULL, &m, &err) != EDGELLM_OK) {
        fprintf(stderr, "   %s: %s\n", path, err.msg);
        return NULL;
    }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    *n_vocab = info.n_vocab;
    if (edgellm_ctx_new(m, NULL, &c, &err) == EDGELLM_OK &&
        (out = calloc((size_t)n * (size_t)info.n_vocab, sizeof *out)) &&
        edgellm_decode(c, tokens, n, out, &err) != EDGELLM_OK) {
        fprintf(stderr, "   %s: %s\n", path, err.msg);
        free(out);
        out = NULL;
    }
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    return out;
}

static void same_logits(const char *a, const char *b)
{
    static const int32_t tok[] = {1, 5, 100, 7, 250, 3, 17, 42};
    int va = 0, vb = 0;
    float *la = run_logits(a, tok, 8, &va), *lb = run_logits(b, tok, 8, &vb);
    CHECK(la && lb && va == vb);
    if (la && lb && va == vb) CHECK(memcmp(la, lb, (size_t)8 * (size_t)va * sizeof(float)) == 0);
    free(la);
    free(lb);
}

/* Every tensor of a has the same name, type, shape and bytes in b. */
static void same_tensors(const char *pa, const char *pb)
{
    edgellm_gguf *a = open_gguf(pa), *b = open_gguf(pb);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ(edgellm_gguf_n_tensors(a), edgellm_gguf_n_tensors(b));
        for (int64_t i = 0; i < edgellm_gguf_n_tensors(a); i++) {
            const edgellm_gguf_tensor *x = edgellm_gguf_tensor_at(a, i);
            char name[96];
            snprintf(name, sizeof name, "%.*s", (int)EDGELLM_MIN(x->name.len, 95), x->name.ptr);
            const edgellm_gguf_tensor *y = edgellm_gguf_find_tensor(b, name);
            const bool same = y && x->type == y->type && x->n_elements == y->n_elements && x->ne[0] == y->ne[0] &&
                              x->size_bytes == y->size_bytes && !memcmp(x->data, y->data, (size_t)x->size_bytes);
            if (!same) fprintf(stderr, "   tensor %s differs between %s and %s\n", name, pa, pb);
            CHECK(same);
        }
    }
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
}

/* synth (random weights) -> export -> convert: the same tensors and the same logits. */
static void roundtrip_synth(const char *tag, const char *arch, int tied, const char *type, const char *outtype,
                            uint64_t shard_bytes, bool tensors_identical)
{
    edgellm_synth_params sp = edgellm_synth_default_params();
    snprintf(sp.shape.name, sizeof sp.shape.name, "%s", tag);
    snprintf(sp.shape.arch, sizeof sp.shape.arch, "%s", arch);
    sp.shape.n_layer = 2;
    sp.shape.n_embd = 64;
    sp.shape.n_head = 4;
    sp.shape.n_head_kv = 2;
    sp.shape.n_ff = 96;
    sp.shape.n_vocab = 320;
    sp.shape.n_ctx_train = 256;
    sp.shape.tied = tied;
    sp.shape.rope_theta = 10000.0f;
    sp.shape.rms_eps = 1e-5f;
    sp.type = type;
    sp.std = 0.2f;
    sp.seed = 7;
    sp.n_threads = 2;
    char n1[64], n2[64], n3[64];
    snprintf(n1, sizeof n1, "%s.gguf", tag);
    snprintf(n2, sizeof n2, "%s-hf", tag);
    snprintf(n3, sizeof n3, "%s-rt.gguf", tag);
    const char *src = test_tmp_path(n1), *dir = test_tmp_path(n2), *back = test_tmp_path(n3);
    edgellm_error err = {0};
    CHECK_OK(edgellm_synth(&sp, src, NULL, NULL, &err));
    edgellm_hf_export_report er;
    edgellm_hf_export_params ep = edgellm_hf_export_default_params();
    ep.max_shard_bytes = shard_bytes;
    CHECK_OK(edgellm_export_hf(src, dir, &ep, &er, &err));
    if (shard_bytes) CHECK(er.n_files > 1);
    CHECK_OK(convert(dir, back, outtype, 0, &err));
    if (tensors_identical) same_tensors(src, back);
    same_logits(src, back);
}

static void test_hf_roundtrip_llama_f32(void) { roundtrip_synth("rt-llama-f32", "llama", 0, "f32", NULL, 0, true); }
static void test_hf_roundtrip_qwen2_tied_f32_sharded(void)
{
    roundtrip_synth("rt-qwen2-f32", "qwen2", 1, "f32", NULL, 40000, true);
}
static void test_hf_roundtrip_llama_f16(void) { roundtrip_synth("rt-llama-f16", "llama", 1, "f16", NULL, 0, true); }
/* Q8_0 is dequantized on export and quantized again on import: the same bytes come back. */
static void test_hf_roundtrip_llama_q8_0(void) { roundtrip_synth("rt-llama-q8", "llama", 0, "q8_0", "q8_0", 0, true); }

/* ------------------------------------------------- independent checkpoints (NumPy) ---- */

static bool have_numpy(void)
{
    return run_capture("/usr/bin/python3 -c 'import numpy' 2>/dev/null", NULL, 0) == 0;
}

static const char *py_checkpoint(const char *preset, const char *extra)
{
    static char dir[512];
    char name[64], cmd[2048], out[4096];
    snprintf(name, sizeof name, "py-%s", preset);
    snprintf(dir, sizeof dir, "%s", test_tmp_path(name));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/hf/hf_checkpoint.py %s --preset %s %s", EDGELLM_TESTS_DIR, dir,
             preset, extra ? extra : "");
    int rc = run_capture(cmd, out, sizeof out);
    if (rc != 0) fprintf(stderr, "   %s: exit %d\n%s\n", cmd, rc, out);
    CHECK_EQ(rc, 0);
    return rc == 0 ? dir : NULL;
}

/* The converted model's logits equal NumPy's float64 forward pass of the checkpoint (the
 * Hugging Face model definition) to float32 accuracy: the permutation of Q/K, the names,
 * GQA, biases, tied heads, BF16 and shards all have to be right. */
static void check_python_logits(const char *preset, const char *extra)
{
    if (!have_numpy()) {
        fprintf(stderr, "   SKIP: /usr/bin/python3 with numpy (python3-numpy) not found\n");
        test_skipped++;
        return;
    }
    const char *dir = py_checkpoint(preset, extra);
    if (!dir) return;
    char gg[600], ref[600];
    snprintf(gg, sizeof gg, "%s.gguf", dir);
    snprintf(ref, sizeof ref, "%s/reference_logits.f32", dir);
    edgellm_error err = {0};
    CHECK_OK(convert(dir, gg, NULL, 0, &err));
    static const int32_t tok[] = {1, 7, 42, 3, 250, 99, 5, 17};
    size_t ref_bytes = 0;
    float *want = read_file(ref, &ref_bytes);
    int nv = 0;
    float *got = run_logits(gg, tok, 8, &nv);
    CHECK(want && got && ref_bytes == (size_t)8 * (size_t)nv * sizeof(float));
    if (want && got && ref_bytes == (size_t)8 * (size_t)nv * sizeof(float)) {
        const size_t n = (size_t)8 * (size_t)nv;
        const double sd = stddev(want, n), d = max_abs_diff(want, got, n);
        fprintf(stderr, "   %s: 8 x %d logits, max |diff| %.3g (std %.3g, bound 1e-5 std)\n", preset, nv, d, sd);
        CHECK(d <= 1e-5 * sd);
    }
    free(want);
    free(got);
}

static void test_hf_python_llama3_gqa_f32(void) { check_python_logits("llama3-gqa", NULL); }
static void test_hf_python_qwen2_bf16_shards(void) { check_python_logits("qwen2-bf16", NULL); }
static void test_hf_python_smollm2_real_config(void)
{
    NEED_SHARED(hf, "data/hf/smollm2-135m-instruct");
    char extra[600];
    snprintf(extra, sizeof extra, "--tokenizer-dir %s", hf);
    check_python_logits("smollm2", extra);
}

/* config.json's llama3 rope_scaling becomes rope_freqs.weight, equal to the factors of
 * Meta's reference formula computed by NumPy; export gives the same parameters back. */
static void test_hf_python_llama3_rope_freqs(void)
{
    if (!have_numpy()) { fprintf(stderr, "   SKIP: python3-numpy not found\n"); test_skipped++; return; }
    const char *dir = py_checkpoint("llama3-rope", NULL);
    if (!dir) return;
    char gg[600], exp[600], hf2[600], gg2[600];
    snprintf(gg, sizeof gg, "%s.gguf", dir);
    snprintf(exp, sizeof exp, "%s/expected_rope_freqs.f32", dir);
    snprintf(hf2, sizeof hf2, "%s-export", dir);
    snprintf(gg2, sizeof gg2, "%s-export.gguf", dir);
    edgellm_error err = {0};
    CHECK_OK(convert(dir, gg, NULL, 0, &err));
    size_t nb = 0;
    float *want = read_file(exp, &nb);
    edgellm_gguf *g = open_gguf(gg);
    const edgellm_gguf_tensor *t = g ? edgellm_gguf_find_tensor(g, "rope_freqs.weight") : NULL;
    CHECK(want && t && t->type == EDGELLM_TYPE_F32 && t->n_elements * 4 == nb);
    if (want && t && t->n_elements * 4 == nb) {
        const float *have = t->data;
        for (uint64_t i = 0; i < t->n_elements; i++) CHECK_NEAR(have[i], want[i], 1e-6 * want[i]);
    }
    int64_t v = 0;
    CHECK(g && !edgellm_gguf_get_i64(g, "llama.rope.scaling.original_context_length", &v));   /* llama3: tensor only */
    edgellm_gguf_close(g);
    free(want);
    CHECK_OK(export_hf(gg, hf2, 0, 0, &err));
    CHECK_OK(convert(hf2, gg2, NULL, 0, &err));
    same_tensors(gg, gg2);
}

/* config.json's rope_scaling of each type transformers and llama.cpp share (linear, yarn,
 * llama3) becomes the GGUF keys or tensor the model loader reads (src/model/rope_scaling.c),
 * and the converted model's logits equal NumPy's float64 forward pass with transformers'
 * scaled frequencies (modeling_rope_utils.py) at 80 positions, past YaRN's original context
 * of 64. Without the scaling the logits differ by 0.03 (llama3) to 2.3 (yarn) standard
 * deviations, against a bound of 1e-5. */
static void check_rope_preset(const char *preset, const char *want_type, float want_factor, int64_t want_orig,
                              const char *want_desc)
{
    if (!have_numpy()) { fprintf(stderr, "   SKIP: python3-numpy not found\n"); test_skipped++; return; }
    enum { N = 80 };
    int32_t tok[N];
    char list[N * 4 + 16], extra[N * 4 + 32];
    size_t o = 0;
    for (int i = 0; i < N; i++) {
        tok[i] = (i * 37 + 11) % 256;
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? "," : "", (int)tok[i]);
    }
    snprintf(extra, sizeof extra, "--tokens %s", list);
    const char *dir = py_checkpoint(preset, extra);
    if (!dir) return;
    char gg[600], ref[600];
    snprintf(gg, sizeof gg, "%s.gguf", dir);
    snprintf(ref, sizeof ref, "%s/reference_logits.f32", dir);
    edgellm_error err = {0};
    CHECK_OK(convert(dir, gg, NULL, 0, &err));

    edgellm_gguf *g = open_gguf(gg);
    CHECK(g != NULL);
    if (g) {
        edgellm_str st = {0};
        float f = 0;
        int64_t v = 0;
        const bool has_type = edgellm_gguf_get_str(g, "llama.rope.scaling.type", &st);
        if (want_type) CHECK(has_type && edgellm_str_eq(st, want_type));
        else CHECK(!has_type);
        if (want_factor > 0) CHECK(edgellm_gguf_get_f32(g, "llama.rope.scaling.factor", &f) && f == want_factor);
        const bool has_orig = edgellm_gguf_get_i64(g, "llama.rope.scaling.original_context_length", &v);
        if (want_orig) CHECK(has_orig && v == want_orig);
        else CHECK(!has_orig);
        CHECK((edgellm_gguf_find_tensor(g, "rope_freqs.weight") != NULL) == (want_type == NULL));
    }
    edgellm_gguf_close(g);

    /* what the loader makes of it, as `edgellm info` prints it */
    edgellm_gguf_meta *m = NULL;
    char desc[256] = "";
    CHECK_OK(edgellm_gguf_meta_open(gg, &m, &err));
    if (m) CHECK_OK(edgellm_gguf_meta_rope_scaling(m, desc, sizeof desc, &err));
    edgellm_gguf_meta_close(m);
    if (!strstr(desc, want_desc)) fprintf(stderr, "   rope scaling: '%s', expected '%s'\n", desc, want_desc);
    CHECK(strstr(desc, want_desc) != NULL);

    size_t ref_bytes = 0;
    float *want = read_file(ref, &ref_bytes);
    int nv = 0;
    float *got = run_logits(gg, tok, N, &nv);
    CHECK(want && got && ref_bytes == (size_t)N * (size_t)nv * sizeof(float));
    if (want && got && ref_bytes == (size_t)N * (size_t)nv * sizeof(float)) {
        const size_t n = (size_t)N * (size_t)nv;
        const double sd = stddev(want, n), d = max_abs_diff(want, got, n);
        fprintf(stderr, "   %s: %d x %d logits, max |diff| %.3g (std %.3g, bound 1e-5 std)\n", preset, N, nv, d, sd);
        CHECK(d <= 1e-5 * sd);
    }
    free(want);
    free(got);
}

static void test_hf_python_rope_linear(void)
{
    check_rope_preset("llama-linear", "linear", 4.0f, 0, "linear, factor 4");
}
static void test_hf_python_rope_yarn(void)
{
    check_rope_preset("llama-yarn", "yarn", 4.0f, 64, "yarn, factor 4, original context 64");
    /* YaRN parameters the loader would not apply are refused, named; the defaults pass */
    if (!have_numpy()) return;
    const char *dir = test_tmp_path("py-llama-yarn");
    char cmd[1200], out[600];
    snprintf(out, sizeof out, "%s-p.gguf", dir);
    static const char *const cases[][2] = {{"\"beta_fast\": 16", "beta_fast"},
                                          {"\"attention_factor\": 1.0", "attention_factor"},
                                          {"\"extrapolation_factor\": 0.5", "extrapolation_factor"},
                                          {"\"truncate\": False", "truncate"},
                                          {"\"attention_factor\": 1.138629, \"beta_fast\": 32", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import json,sys; p=sys.argv[1]+\"/config.json\"; "
                 "c=json.load(open(p)); c[\"rope_scaling\"]={\"rope_type\": \"yarn\", \"factor\": 4.0, "
                 "\"original_max_position_embeddings\": 64, %s}; json.dump(c, open(p, \"w\"))' %s", cases[i][0], dir);
        CHECK_EQ(run_capture(cmd, NULL, 0), 0);
        edgellm_error err = {0};
        const edgellm_status rc = convert(dir, out, NULL, 0, &err);
        if (cases[i][1]) {
            CHECK_EQ(rc, EDGELLM_ERR_UNSUPPORTED);
            CHECK(strstr(err.msg, cases[i][1]) && strstr(err.msg, "config.json"));
        } else {
            CHECK_OK(rc);
        }
    }
}
static void test_hf_python_rope_llama3(void)
{
    check_rope_preset("llama3-rope", NULL, 0, 0, "frequency factors from rope_freqs.weight (8 values, 1 .. 8)");
}

/* Converting with --outtype TYPE is the f32 conversion quantized by edgellm_quantize_file:
 * the same bytes, in one pass. */
static void test_hf_python_quantize_in_same_pass(void)
{
    if (!have_numpy()) { fprintf(stderr, "   SKIP: python3-numpy not found\n"); test_skipped++; return; }
    const char *dir = py_checkpoint("llama3-gqa", "--seed 3");
    if (!dir) return;
    char f32[600], direct[600], via[600];
    snprintf(f32, sizeof f32, "%s-f32.gguf", dir);
    snprintf(direct, sizeof direct, "%s-q.gguf", dir);
    snprintf(via, sizeof via, "%s-q-via.gguf", dir);
    edgellm_error err = {0};
    for (const char *const *type = (const char *const[]){"q4_k_m", "q8_0", "i4", NULL}; *type; type++) {
        CHECK_OK(convert(dir, f32, "f32", 0, &err));
        CHECK_OK(convert(dir, direct, *type, 0, &err));
        edgellm_quantize_params qp = edgellm_quantize_default_params();
        qp.type = *type;
        qp.n_threads = 2;
        CHECK_OK(edgellm_quantize_file(f32, via, &qp, NULL, &err));
        same_tensors(via, direct);
    }
}

/* ------------------------------------------------------------ hostile files ---- */

/* A safetensors file: the header text, then data_bytes bytes of data (0x11). */
static size_t make_st(uint8_t *buf, size_t cap, uint64_t hlen_override, const char *header, size_t data_bytes)
{
    const size_t h = strlen(header);
    if (8 + h + data_bytes > cap) return 0;
    const uint64_t hl = hlen_override ? hlen_override : h;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, 0x11, data_bytes);
    return 8 + h + data_bytes;
}

typedef struct {
    const char *what;
    uint64_t hlen;            /* 0: the header's own length                      */
    const char *header;
    size_t data;
    edgellm_status want;
    const char *needle;       /* in the message                                  */
} st_case;

static const st_case ST_CASES[] = {
    {"valid", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, EDGELLM_OK, NULL},
    {"valid, metadata and padding", 0,
     "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"BF16\",\"shape\":[1,3],"
     "\"data_offsets\":[0,6]},\"a\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[6,8]}}   ",
     8, EDGELLM_OK, NULL},
    {"huge header length", 0xffffffffffffull, "{}", 0, EDGELLM_ERR_FORMAT, "exceeds"},
    {"header past the end", 1000, "{}", 0, EDGELLM_ERR_FORMAT, "runs past the end"},
    {"not an object", 0, "[1, 2]", 0, EDGELLM_ERR_FORMAT, "start with '{'"},
    {"bad JSON", 0, "{\"a\": {\"dtype\": }", 0, EDGELLM_ERR_FORMAT, "not valid JSON"},
    {"garbage after JSON", 0, "{} x", 0, EDGELLM_ERR_FORMAT, "not valid JSON"},
    {"offsets past the end", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
     EDGELLM_ERR_FORMAT, "past the end of the data"},
    {"overlapping", 0,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     12, EDGELLM_ERR_FORMAT, "overlaps"},
    {"hole", 0,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
     12, EDGELLM_ERR_FORMAT, "belong to no tensor"},
    {"bytes after the last tensor", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 9,
     EDGELLM_ERR_FORMAT, "after the last tensor"},
    {"dtype x shape != bytes", 0, "{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
     EDGELLM_ERR_FORMAT, "is not the 8 bytes"},
    {"shape overflow", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
     EDGELLM_ERR_FORMAT, "overflows"},
    {"negative dimension", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
     EDGELLM_ERR_FORMAT, "shape[0]"},
    {"fractional dimension", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8,
     EDGELLM_ERR_FORMAT, "shape[0]"},
    {"offsets reversed", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, EDGELLM_ERR_FORMAT,
     "BEGIN <= END"},
    {"three offsets", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, EDGELLM_ERR_FORMAT,
     "BEGIN <= END"},
    {"duplicate names", 0,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, EDGELLM_ERR_FORMAT, "listed twice"},
    {"non-UTF-8 name", 0, "{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, EDGELLM_ERR_FORMAT,
     "not UTF-8"},
    {"empty name", 0, "{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, EDGELLM_ERR_FORMAT,
     "empty name"},
    {"unknown dtype", 0, "{\"a\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, EDGELLM_ERR_FORMAT,
     "not a safetensors dtype"},
    {"integer dtype", 0, "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, EDGELLM_ERR_UNSUPPORTED,
     "dtype I64"},
    {"too many dimensions", 0, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     EDGELLM_ERR_FORMAT, "9 dimensions"},
    {"metadata not strings", 0, "{\"__metadata__\":{\"n\":1}}", 0, EDGELLM_ERR_FORMAT, "__metadata__"},
    {"entry not an object", 0, "{\"a\":[1]}", 0, EDGELLM_ERR_FORMAT, "not a JSON object"},
    {"missing fields", 0, "{\"a\":{\"dtype\":\"F32\"}}", 0, EDGELLM_ERR_FORMAT, "needs"},
};

static void test_hf_hostile_safetensors_headers(void)
{
    static uint8_t buf[4096];
    for (size_t i = 0; i < sizeof ST_CASES / sizeof *ST_CASES; i++) {
        const st_case *c = &ST_CASES[i];
        const size_t n = make_st(buf, sizeof buf, c->hlen, c->header, c->data);
        edgellm_st_set *s = NULL;
        edgellm_error err = {0};
        const edgellm_status rc = edgellm_st_open_memory(buf, n, "hostile.safetensors", &s, &err);
        if (rc != c->want || (c->needle && !strstr(err.msg, c->needle)) ||
            (rc && !strstr(err.msg, "hostile.safetensors")))
            fprintf(stderr, "   case '%s': %s \"%s\"\n", c->what, edgellm_status_name(rc), err.msg);
        CHECK_EQ(rc, c->want);
        if (c->needle) CHECK(strstr(err.msg, c->needle) != NULL);
        if (rc) CHECK(s == NULL && strstr(err.msg, "hostile.safetensors") != NULL);
        edgellm_st_close(s);
    }
    /* shorter than the length field */
    edgellm_st_set *s = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_st_open_memory("\x02\0\0", 3, "short.safetensors", &s, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "too short") != NULL);
}

/* Allocation failure at every step of a parse: NOMEM or success, nothing leaked. */
static void test_hf_safetensors_oom_sweep(void)
{
    static uint8_t buf[1024];
    const size_t n = make_st(buf, sizeof buf, 0, ST_CASES[1].header, ST_CASES[1].data);
    for (long k = 1;; k++) {
        edgellm_st_set *s = NULL;
        const long live = edgellm_test_live_allocs();
        edgellm_test_alloc_fail_at(k);
        const edgellm_status rc = edgellm_st_open_memory(buf, n, "oom", &s, NULL);
        edgellm_test_alloc_fail_at(0);
        if (rc == EDGELLM_OK) { CHECK_EQ(edgellm_st_n_tensors(s), 2); edgellm_st_close(s); break; }
        CHECK_EQ(rc, EDGELLM_ERR_NOMEM);
        CHECK_EQ(edgellm_test_live_allocs(), live);
        if (k > 1000) { CHECK(0); break; }
    }
}

/* A checkpoint folder from a small valid llama (export of synth) to break in one place. */
static const char *broken_copy(const char *name)
{
    static int made;
    const char *src = test_tmp_path("broken-src.gguf"), *good = test_tmp_path("broken-good");
    edgellm_error err = {0};
    if (!made++) {
        edgellm_synth_params sp = edgellm_synth_default_params();
        snprintf(sp.shape.arch, sizeof sp.shape.arch, "llama");
        sp.shape.n_layer = 1; sp.shape.n_embd = 32; sp.shape.n_head = 2; sp.shape.n_head_kv = 2;
        sp.shape.n_ff = 64; sp.shape.n_vocab = 280; sp.shape.n_ctx_train = 64;
        sp.shape.rope_theta = 10000.0f; sp.shape.rms_eps = 1e-5f;
        sp.type = "f32";
        CHECK_OK(edgellm_synth(&sp, src, NULL, NULL, &err));
        CHECK_OK(export_hf(src, good, 0, 0, &err));
    }
    const char *d = make_dir(name);
    char p[1024];
    for (const char *const *f = (const char *const[]){"config.json", "tokenizer.model", "tokenizer_config.json",
                                                       "generation_config.json", "model.safetensors", NULL}; *f; f++) {
        snprintf(p, sizeof p, "cp %s/%s %s/", good, *f, d);
        run_capture(p, NULL, 0);
    }
    return d;
}

static void expect_convert_fails(const char *dir, edgellm_status want, const char *n1, const char *n2)
{
    edgellm_error err = {0};
    char out[600];
    snprintf(out, sizeof out, "%s.gguf", dir);
    edgellm_hf_convert_params p = edgellm_hf_convert_default_params();
    const edgellm_status rc = edgellm_convert_hf(dir, out, &p, NULL, &err);
    if (rc != want || (n1 && !strstr(err.msg, n1)) || (n2 && !strstr(err.msg, n2)))
        fprintf(stderr, "   %s: %s \"%s\" (want %s, \"%s\", \"%s\")\n", dir, edgellm_status_name(rc), err.msg,
                edgellm_status_name(want), n1 ? n1 : "", n2 ? n2 : "");
    CHECK_EQ(rc, want);
    if (n1) CHECK(strstr(err.msg, n1) != NULL);
    if (n2) CHECK(strstr(err.msg, n2) != NULL);
    struct stat st;
    CHECK(stat(out, &st) != 0);   /* nothing written */
}

static void test_hf_broken_folders(void)
{
    const char *d;
    char p[1024];
    /* a tensor missing from the checkpoint: the re-written file lacks it */
    d = broken_copy("missing-tensor");
    {
        edgellm_st_set *s = NULL;
        snprintf(p, sizeof p, "%s/model.safetensors", d);
        size_t n = 0;
        uint8_t *b = read_file(p, &n);
        CHECK_OK(edgellm_st_open_memory(b, n, p, &s, NULL));
        /* rename one tensor in place (same length): the layer's k_proj goes missing */
        char *at = b ? memmem(b, n, "self_attn.k_proj.weight", 23) : NULL;
        if (at) memcpy(at, "self_attn.x_proj", 16);
        write_file(p, b, n);
        edgellm_st_close(s);
        free(b);
    }
    expect_convert_fails(d, EDGELLM_ERR_FORMAT, "model.layers.0.self_attn.k_proj.weight", "missing");
    /* NaN in a weight */
    d = broken_copy("nan");
    {
        snprintf(p, sizeof p, "%s/model.safetensors", d);
        size_t n = 0;
        uint8_t *b = read_file(p, &n);
        if (b && n > 64) memcpy(b + n - 8, "\x00\x00\xc0\x7f", 4);   /* a quiet NaN in the last tensor */
        write_file(p, b, n);
        free(b);
    }
    expect_convert_fails(d, EDGELLM_ERR_NUMERIC, "NaN", NULL);
    /* an architecture edgellm does not run */
    d = broken_copy("arch");
    write_text(d, "config.json", "{\"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 280}");
    expect_convert_fails(d, EDGELLM_ERR_UNSUPPORTED, "GPT2LMHeadModel", "config.json");
    /* config.json that disagrees with the tensors */
    d = broken_copy("shape");
    snprintf(p, sizeof p, "sed -i 's/\"intermediate_size\": 64/\"intermediate_size\": 65/' %s/config.json", d);
    run_capture(p, NULL, 0);
    expect_convert_fails(d, EDGELLM_ERR_FORMAT, "mlp.gate_proj.weight", "[64, 32]");
    /* a hostile header in the folder names the file */
    d = broken_copy("header");
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    write_file(p, "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10);
    expect_convert_fails(d, EDGELLM_ERR_FORMAT, "model.safetensors", "header length");
    /* shards: the index names a file outside the folder */
    d = broken_copy("index-path");
    write_text(d, "model.safetensors.index.json",
               "{\"weight_map\": {\"model.norm.weight\": \"../model.safetensors\"}}");
    expect_convert_fails(d, EDGELLM_ERR_FORMAT, "model.norm.weight", "no plain file");
    /* shards: a tensor indexed to another file than the one holding it */
    d = broken_copy("index-wrong");
    snprintf(p, sizeof p, "cp %s/model.safetensors %s/model-2.safetensors", d, d);
    run_capture(p, NULL, 0);
    write_text(d, "model.safetensors.index.json", "{\"weight_map\": {\"model.norm.weight\": \"model-2.safetensors\"}}");
    expect_convert_fails(d, EDGELLM_ERR_FORMAT, "is not in", "index.json");
    /* no weights at all */
    d = broken_copy("no-weights");
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    unlink(p);
    expect_convert_fails(d, EDGELLM_ERR_NOT_FOUND, "no model.safetensors", NULL);
    /* a pre-tokenizer edgellm does not implement: refused with the pattern quoted */
    d = broken_copy("pretok");
    snprintf(p, sizeof p, "%s/tokenizer.model", d);
    unlink(p);
    write_text(d, "tokenizer.json",
               "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]},"
               " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
               "{\"Regex\": \"\\\\w+|[^\\\\w\\\\s]+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
               "{\"type\": \"ByteLevel\", \"use_regex\": false}]}}");
    expect_convert_fails(d, EDGELLM_ERR_UNSUPPORTED, "\\w+|[^\\w\\s]+", "tokenizer.json");
    /* Llama-2's tokenizer.json as ../shared keeps it: four tokens lost their U+00A0 (no-break
     * space) to U+0020, which leaves merges such as "   " that no reader can split */
    const char *l2 = shared_path("data/hf/llama-2/tokenizer.json");
    if (l2) {
        d = broken_copy("llama2-json");
        snprintf(p, sizeof p, "%s/tokenizer.model", d);
        unlink(p);
        link_into(d, l2, "tokenizer.json");
        write_text(d, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 32000}");
        edgellm_error err = {0};
        edgellm_hf_convert_params vp = edgellm_hf_convert_default_params();
        vp.vocab_only = 1;
        CHECK_EQ(edgellm_convert_hf(d, test_tmp_path("llama2-json.gguf"), &vp, NULL, &err), EDGELLM_ERR_FORMAT);
        CHECK(strstr(err.msg, "merges[18917]") != NULL);
    }
    /* export: into a folder that already holds files */
    edgellm_error err = {0};
    edgellm_hf_export_params ep = edgellm_hf_export_default_params();
    CHECK_EQ(edgellm_export_hf(test_tmp_path("broken-src.gguf"), d, &ep, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "not empty") != NULL);
    /* convert: the output is an input file */
    d = broken_copy("out-is-in");
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    edgellm_hf_convert_params cp = edgellm_hf_convert_default_params();
    CHECK_EQ(edgellm_convert_hf(d, p, &cp, NULL, &err), EDGELLM_ERR_MISUSE);
    /* an unknown --outtype */
    cp.outtype = "q3_xyz";
    CHECK_EQ(edgellm_convert_hf(d, test_tmp_path("never.gguf"), &cp, NULL, &err), EDGELLM_ERR_MISUSE);
}

/* ------------------------------------------------------------------------ CLI ---- */

static void test_hf_cli(void)
{
    char err[4096], args[2048];
    const char *src = test_tmp_path("cli-src.gguf"), *dir = test_tmp_path("cli-hf"),
               *back = test_tmp_path("cli-back.gguf");
    snprintf(args, sizeof args, "synth --n-embd 32 --n-layer 1 --n-head 2 --n-ff 64 --n-vocab 280 --type q8_0 -o %s",
             src);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 0);
    snprintf(args, sizeof args, "export --hf %s -o %s", src, dir);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 0);
    CHECK(strstr(err, "quantized tensors dequantized") != NULL);
    snprintf(args, sizeof args, "convert --hf %s -o %s --outtype q8_0 -t 2", dir, back);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 0);
    CHECK(strstr(err, "wrote") && strstr(err, "Q8_0") && strstr(err, "Q/K rows permuted"));
    same_logits(src, back);
    /* wrong command lines: exit 2; failed operations: exit 1 */
    snprintf(args, sizeof args, "convert --hf %s -o %s --outtype q3_xyz", dir, back);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 2);
    snprintf(args, sizeof args, "convert --hf %s --llama2c x.bin -o %s", dir, back);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 2);
    snprintf(args, sizeof args, "convert --hf %s/nonexistent -o %s", dir, back);
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "not a folder") != NULL);
    snprintf(args, sizeof args, "export --hf %s -o %s", src, dir);   /* not empty now */
    CHECK_EQ(test_run_cli(args, NULL, err, sizeof err), 2);
    CHECK_EQ(test_run_cli("export --hf", NULL, err, sizeof err), 2);
}

int main(void)
{
    RUN(test_hf_vocab_spm_model_equals_llamacpp);
    RUN(test_hf_vocab_phi3_json_equals_llamacpp);
    RUN(test_hf_vocab_gpt2_files_equal_llamacpp);
    RUN(test_hf_vocab_roundtrip_llamacpp_files);
    RUN(test_hf_vocab_smollm2_pretokenizer);
    RUN(test_hf_vocab_metaspace_form);
    RUN(test_hf_vocab_special_tokens_and_templates);
    RUN(test_hf_spm_ids_equal_sentencepiece);
    RUN(test_hf_roundtrip_llama_f32);
    RUN(test_hf_roundtrip_qwen2_tied_f32_sharded);
    RUN(test_hf_roundtrip_llama_f16);
    RUN(test_hf_roundtrip_llama_q8_0);
    RUN(test_hf_python_llama3_gqa_f32);
    RUN(test_hf_python_qwen2_bf16_shards);
    RUN(test_hf_python_smollm2_real_config);
    RUN(test_hf_python_llama3_rope_freqs);
    RUN(test_hf_python_rope_linear);
    RUN(test_hf_python_rope_yarn);
    RUN(test_hf_python_rope_llama3);
    RUN(test_hf_python_quantize_in_same_pass);
    RUN(test_hf_hostile_safetensors_headers);
    RUN(test_hf_safetensors_oom_sweep);
    RUN(test_hf_broken_folders);
    RUN(test_hf_cli);
    return test_summary();
}

#endif /* EDGELLM_HAVE_CJSON */
