/*
 * test_tokenizer.c — the tokenizers (src/tokenizer/tokenizer.c, tok_spm.c, tok_bpe.c,
 * tok_pretok.c, unicode.c) against independent references:
 *  - llama.cpp's tokenizer test vectors (shared/data/vocab/ggml-vocab-*.gguf.inp/.out): ids
 *    produced by the vocabularies' reference Hugging Face tokenizers, 46 strings per vocab;
 *    every id must match exactly, and decoding must give the text back;
 *  - the stories260K prompt ids (shared/data/reference/stories260K.tokens.txt);
 *  - Unicode facts (categories of hand-picked code points from the Unicode charts,
 *    well-formed UTF-8 per Unicode §3.9 Table 3-7);
 *  - hostile input: invalid UTF-8, empty text, 1 MB texts (time-bounded), malformed
 *    metadata, allocation failure at every step of a load;
 *  - the `edgellm tokenize` command line.
 */
#include "test_util.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"
#include "common/common.h"
#include <time.h>

/* ------------------------------------------------------------------ helpers */

static edgellm_tokenizer *load_vocab(const char *path)
{
    edgellm_tokenizer *t = NULL;
    edgellm_error err = {0};
    edgellm_status rc = edgellm_tokenizer_load(path, &t, &err);
    if (rc != EDGELLM_OK) fprintf(stderr, "   load %s: %s (%s)\n", path, edgellm_status_name(rc), err.msg);
    return t;
}

/* Tokenize into a malloc'd array; *n = count; NULL on failure. */
static int32_t *encode(const edgellm_tokenizer *t, const char *text, size_t len, int add_special, int *n)
{
    int need = 0;
    edgellm_error err = {0};
    edgellm_status rc = edgellm_tokenize(t, text, len, add_special, NULL, 0, &need, &err);
    if (rc != EDGELLM_OK && rc != EDGELLM_ERR_MISUSE) return NULL;
    int32_t *ids = malloc((size_t)(need ? need : 1) * sizeof *ids);
    rc = edgellm_tokenize(t, text, len, add_special, ids, need, n, &err);
    if (rc != EDGELLM_OK || *n != need) { free(ids); return NULL; }
    return ids;
}

static char *decode(const edgellm_tokenizer *t, const int32_t *ids, int n, size_t *len)
{
    char *s = NULL;
    if (edgellm_tokenizer_detokenize(t, ids, (size_t)n, &s, len, NULL) != EDGELLM_OK) return NULL;
    return s;
}

static void print_ids(const char *label, const int32_t *ids, int n)
{
    fprintf(stderr, "      %s:", label);
    for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

/* ------------------------------------------------------------------ test vectors */

/* Every vocabulary with test vectors. llama-spm and phi-3 are SentencePiece ("llama"), the
 * others byte-level BPE ("gpt2") with the pre-tokenizer named like the file. */
static const char *const VOCABS[] = {
    "llama-spm", "phi-3", "gpt-2", "mpt", "falcon", "starcoder", "refact", "deepseek-llm", "deepseek-coder",
};

/* Run one vocabulary's vectors; returns the number of strings whose encoding matched. */
static int run_vectors(const char *name, int *n_cases, int *n_roundtrip)
{
    char rel[256];
    snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf", name);
    const char *gguf = shared_path(rel);
    snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf.inp", name);
    const char *inp_path = shared_path(rel);
    snprintf(rel, sizeof rel, "data/vocab/ggml-vocab-%s.gguf.out", name);
    const char *out_path = shared_path(rel);
    *n_cases = *n_roundtrip = 0;
    if (!gguf || !inp_path || !out_path) { fprintf(stderr, "   SKIP %s: files missing\n", name); return -1; }

    edgellm_tokenizer *t = load_vocab(gguf);
    CHECK(t != NULL);
    if (!t) return 0;
    size_t inp_len = 0, out_len = 0;
    char *inp = read_file(inp_path, &inp_len), *out = read_file(out_path, &out_len);
    CHECK(inp && out);

    /* .inp: each string is followed by "\n__ggml_vocab_test__\n" (the string may be empty
     * or itself end with newlines). .out: one line of space-separated ids per string. */
    static const char SEP[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof SEP - 1;
    char *p = inp, *line = out;
    int pass = 0;
    while (p < inp + inp_len) {
        char *q = strstr(p, SEP);
        CHECK(q != NULL);
        if (!q || !line || line >= out + out_len) break;
        size_t len = (size_t)(q - p);
        char *eol = strchr(line, '\n');
        if (eol) *eol = 0;

        int32_t expect[1024];
        int n_expect = 0;
        for (char *tok = strtok(line, " "); tok && n_expect < 1024; tok = strtok(NULL, " "))
            expect[n_expect++] = (int32_t)atoi(tok);

        int n = 0;
        int32_t *ids = encode(t, p, len, 0, &n);
        CHECK(ids != NULL);
        bool same = ids && n == n_expect && !memcmp(ids, expect, (size_t)n * sizeof *ids);
        (*n_cases)++;
        if (same) pass++;
        else {
            fprintf(stderr, "   %s: case %d \"%.*s\" differs\n", name, *n_cases, (int)EDGELLM_MIN(len, 60), p);
            print_ids("expected", expect, n_expect);
            if (ids) print_ids("got     ", ids, n);
        }
        CHECK(same);

        /* decoding the expected ids gives the text back */
        size_t dlen = 0;
        char *text = decode(t, expect, n_expect, &dlen);
        bool rt = text && dlen == len && !memcmp(text, p, len);
        if (rt) (*n_roundtrip)++;
        else fprintf(stderr, "   %s: case %d does not decode back: \"%s\"\n", name, *n_cases, text ? text : "(null)");
        CHECK(rt);
        edgellm_free(text);
        free(ids);

        p = q + sep_len;
        line = eol ? eol + 1 : out + out_len;
    }
    CHECK(*n_cases == 46);
    free(inp);
    free(out);
    edgellm_tokenizer_free(t);
    return pass;
}

static void test_tokenizer_vectors_all_vocabs(void)
{
    NEED_SHARED(dir, "data/vocab");
    (void)dir;
    for (size_t i = 0; i < sizeof VOCABS / sizeof VOCABS[0]; i++) {
        int n_cases = 0, n_rt = 0;
        int pass = run_vectors(VOCABS[i], &n_cases, &n_rt);
        if (pass >= 0)
            fprintf(stderr, "   %-15s encode %2d/%d  decode %2d/%d\n", VOCABS[i], pass, n_cases, n_rt, n_cases);
    }
}

/* Control and unknown tokens typed as text stay text unless special-token parsing is asked
 * for (llama.cpp's parse_special), in every shared vocabulary edgellm reads; with it, each
 * becomes its id. Texts llama.cpp forces to control (the end-of-turn list, "</s>") follow
 * the same rule whatever their stored type: phi-3 stores "</s>" as user-defined, so
 * "a </s> b" used to end a turn from user text. */
static void test_tokenizer_control_tokens_need_special(void)
{
    NEED_SHARED(dir, "data/vocab");
    static const char *const all[] = {"llama-spm", "phi-3", "gpt-2", "mpt", "falcon", "starcoder", "refact",
                                      "deepseek-llm", "deepseek-coder", "command-r", "qwen2", "llama-bpe",
                                      "baichuan", "gpt-neox", "aquila"};
    int n_vocabs = 0, n_control = 0;
    for (size_t v = 0; v < sizeof all / sizeof all[0]; v++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, all[v]);
        edgellm_tokenizer *t = NULL;
        if (edgellm_tokenizer_load(path, &t, NULL) != EDGELLM_OK) continue;   /* absent or unsupported */
        n_vocabs++;
        for (int32_t id = 0; id < t->n_vocab; id++) {
            if (!(t->attr[id] & (EDGELLM_TOKATTR_CONTROL | EDGELLM_TOKATTR_UNKNOWN)) || !t->text_len[id]) continue;
            const char *text = edgellm_tok_text(t, id);
            int32_t ids[512];
            int n = 0;
            n_control++;
            if (edgellm_tokenize(t, text, t->text_len[id], 0, ids, 512, &n, NULL) != EDGELLM_OK) { CHECK(0); continue; }
            bool found = false;
            for (int i = 0; i < n; i++) found |= ids[i] == id;
            if (found) fprintf(stderr, "   %s: '%s' (%d) parsed without special parsing\n", all[v], text, id);
            CHECK(!found);
            CHECK_OK(edgellm_tokenize(t, text, t->text_len[id], EDGELLM_TOKENIZE_SPECIAL, ids, 512, &n, NULL));
            found = false;
            for (int i = 0; i < n; i++) found |= ids[i] == id;
            if (!found) fprintf(stderr, "   %s: '%s' (%d) not parsed with special parsing\n", all[v], text, id);
            CHECK(found);
        }
        edgellm_tokenizer_free(t);
    }
    fprintf(stderr, "   %d vocabularies, %d control/unknown tokens\n", n_vocabs, n_control);
    CHECK(n_vocabs >= 9);
    /* phi-3: "</s>" in user text is text; EOS only when asked; it ends a generation */
    char path[4096];
    snprintf(path, sizeof path, "%s/ggml-vocab-phi-3.gguf", dir);
    edgellm_tokenizer *t = NULL;
    CHECK_OK(edgellm_tokenizer_load(path, &t, NULL));
    if (!t) return;
    int32_t ids[64];
    int n = 0;
    CHECK_OK(edgellm_tokenize(t, "a </s> b", 8, 0, ids, 64, &n, NULL));
    for (int i = 0; i < n; i++) CHECK(ids[i] != 2);
    size_t dlen = 0;
    char *back = decode(t, ids, n, &dlen);
    CHECK(back && dlen == 8 && !memcmp(back, "a </s> b", 8));
    edgellm_free(back);
    CHECK_OK(edgellm_tokenize(t, "a </s> b", 8, EDGELLM_TOKENIZE_SPECIAL, ids, 64, &n, NULL));
    bool eos = false;
    for (int i = 0; i < n; i++) eos |= ids[i] == 2;
    CHECK(eos);
    CHECK(edgellm_token_is_eog(t, 2));
    const int32_t end = edgellm_tok_lookup(t, "<|end|>", 7);
    CHECK(end >= 0 && edgellm_token_is_eog(t, end));    /* phi-3's end of turn */
    CHECK(!edgellm_token_is_eog(t, 1) && !edgellm_token_is_eog(t, -1) && !edgellm_token_is_eog(NULL, 2));
    /* protected spans: inside one even special parsing leaves "<|end|>" as text */
    const char *chat = "<|user|>\nhi <|end|> there<|end|>\n";
    const size_t spans[1][2] = {{9, 24}};                /* "hi <|end|> there" */
    CHECK_OK(edgellm_tokenize_protected(t, chat, strlen(chat), EDGELLM_TOKENIZE_SPECIAL, spans, 1, ids, 64, &n, NULL));
    int n_end = 0;
    for (int i = 0; i < n; i++) n_end += ids[i] == end;
    CHECK_EQ(n_end, 1);                                  /* the template's, not the user's */
    const size_t bad[1][2] = {{30, 10}};
    edgellm_error err = {0};
    CHECK_EQ(edgellm_tokenize_protected(t, chat, strlen(chat), 0, bad, 1, ids, 64, &n, &err), EDGELLM_ERR_MISUSE);
    edgellm_tokenizer_free(t);
}

/* The model field of each vocabulary file decides the algorithm (llama-spm and phi-3 are
 * SentencePiece although their pre is "default"). */
static void test_tokenizer_model_kinds(void)
{
    NEED_SHARED(spm, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-gpt-2.gguf");
    edgellm_tokenizer *a = load_vocab(spm), *b = load_vocab(bpe);
    CHECK(a && b);
    if (a && b) {
        CHECK(!strcmp(edgellm_tokenizer_model(a), "llama"));
        CHECK(!strcmp(edgellm_tokenizer_model(b), "gpt2"));
        CHECK_EQ(edgellm_tokenizer_n_vocab(a), 32000);
        CHECK_EQ(edgellm_tokenizer_n_vocab(b), 50257);
        CHECK_EQ(edgellm_token_bos(a), 1);
        CHECK_EQ(edgellm_token_eos(a), 2);
        CHECK_EQ(edgellm_token_eos(b), 50256);
        CHECK(!strcmp(edgellm_token_text(b, 995), "\xC4\xA0world"));   /* "Ġworld" */
        CHECK(edgellm_token_text(b, 50257) == NULL);
        CHECK(edgellm_token_text(b, -1) == NULL);
        /* llama adds BOS by default, gpt2 (no add_bos_token key) does not */
        int n = 0;
        int32_t *ids = encode(a, "Hello", 5, 1, &n);
        CHECK(ids && n >= 2 && ids[0] == 1);
        free(ids);
        ids = encode(b, "Hello", 5, 1, &n);
        CHECK(ids && n == 1 && ids[0] == 15496);
        free(ids);
    }
    edgellm_tokenizer_free(a);
    edgellm_tokenizer_free(b);
}

static void test_tokenizer_stories260k_prompt(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    NEED_SHARED(ref, "data/reference/stories260K.tokens.txt");
    static const char PROMPT[] =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
    char *txt = read_file(ref, NULL);
    CHECK(txt != NULL);
    int32_t expect[256];
    int n_expect = 0;
    for (char *tok = strtok(txt, " \n"); tok && n_expect < 256; tok = strtok(NULL, " \n")) expect[n_expect++] = atoi(tok);
    free(txt);
    edgellm_tokenizer *t = load_vocab(model);
    CHECK(t != NULL);
    if (!t) return;
    int n = 0;
    int32_t *ids = encode(t, PROMPT, strlen(PROMPT), 1, &n);
    CHECK(ids != NULL);
    CHECK_EQ(n, n_expect);
    CHECK(ids && n == n_expect && !memcmp(ids, expect, (size_t)n * sizeof *ids));
    if (ids && (n != n_expect || memcmp(ids, expect, (size_t)n * sizeof *ids))) {
        print_ids("expected", expect, n_expect);
        print_ids("got     ", ids, n);
    }
    size_t dlen;
    char *back = decode(t, ids, n, &dlen);
    CHECK(back && !strcmp(back, PROMPT));
    edgellm_free(back);
    free(ids);
    edgellm_tokenizer_free(t);
}

/* ------------------------------------------------------------------ pre-tokenizers */

/* Expected pieces (byte lengths) from an independent regex engine: Python's `regex` module
 * (2026.5.9) applying each pre-tokenizer's expressions, stage by stage, with isolated
 * splitting (the regex strings are listed in src/tokenizer/tok_pretok.c). The same check
 * passed on 6000 random strings per pre-tokenizer during development. */
static const char *const PRETOK_TEXTS[] = {
    "Hello, y'all! How're you\x3F""  I'M fine\x0A""\x0A""",
    "  \x09"" x  \x0A"" 12345678 3.14 \xC2""\xBD"" \xE2""\x85""\xA3""\xD9""\xA3""",
    "na\xC3""\xAF""ve caf\xC3""\xA9"" \xE2""\x80""\x94"" 'Ve 'LL\x0D""\x0A""\x0D""\x0A""  end  ",
    "\xED""\x95""\x9C""\xEA""\xB5""\xAD""\xEC""\x96""\xB4"" \xE4""\xB8""\xAD""\xE6""\x96""\x87""\xE3""\x83""\x86""\xE3""\x82""\xAD""\xE3""\x82""\xB9""\xE3""\x83""\x88"" \xE1""\x9E""\x80""\xE1""\x9F""\x92""\xE1""\x9E""\x9A""\xE1""\x9E""\xBB""\xE1""\x9E""\x98"" \xF0""\x9F""\x98""\x80""\xE2""\x80""\x8D""\xF0""\x9F""\x99""\x82"" \xEF""\xBC""\x81""\xEF""\xBC""\x88""\xE3""\x80""\x82""\xEF""\xBC""\x89""",
    "a\xE3""\x80""\x80""b\xC2""\xA0""c\xE2""\x80""\xA8""d \xCC""\x81""e $+<=>^~|` 999",
    "x\x0A"" \x0A""",
    "   ",
    "'s's''ve",
};
static const struct { const char *pre; const char *lens[8]; } PRETOK_EXPECT[] = {
    { "gpt-2", {
        "5 1 2 1 3 1 4 3 4 1 1 2 1 1 5 2",
        "3 2 3 9 2 1 2 3 6",
        "6 6 4 2 2 2 2 5 4 2",
        "9 19 4 3 3 3 3 12 13",
        "1 3 1 2 1 3 1 3 1 10 4",
        "1 3",
        "3",
        "2 2 2 2",
    } },
    { "default", {
        "5 1 2 1 3 1 4 1 2 4 1 1 2 1 1 5 2",
        "3 2 3 1 3 3 2 1 1 1 2 1 2 1 5",
        "6 6 1 3 1 1 2 1 1 2 5 4 2",
        "9 19 4 3 3 3 3 12 1 12",
        "1 3 1 2 1 3 1 3 1 1 8 1 1 3",
        "1 3",
        "3",
        "1 1 1 1 2 2",
    } },
    { "falcon", {
        "5 1 2 1 3 1 4 1 2 4 1 1 2 1 1 5 2",
        "3 2 3 1 3 3 2 2 1 2 3 6",
        "6 6 1 3 1 1 2 1 1 2 5 4 2",
        "9 19 4 3 3 3 3 12 1 12",
        "1 3 1 2 1 3 1 3 1 1 9 1 3",
        "1 3",
        "3",
        "1 1 1 1 2 2",
    } },
    { "starcoder", {
        "5 1 2 1 3 1 4 3 4 1 1 2 1 1 5 2",
        "3 2 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2 1 3 2",
        "6 6 4 2 2 2 2 5 4 2",
        "9 19 4 3 3 3 3 12 13",
        "1 3 1 2 1 3 1 3 1 10 1 1 1 1",
        "1 3",
        "3",
        "2 2 2 2",
    } },
    { "deepseek-llm", {
        "5 1 2 1 3 1 4 1 2 4 1 1 2 1 1 5 1 1",
        "3 2 2 1 1 8 1 1 1 2 1 2 1 3 2",
        "2 2 2 4 2 1 3 2 2 2 2 1 1 1 1 1 4 2",
        "9 1 18 1 15 5 3 4 7 3 3",
        "1 3 1 3 3 1 3 1 10 1 3",
        "1 1 1 1",
        "3",
        "1 1 1 1 2 2",
    } },
    { "deepseek-coder", {
        "5 1 2 1 3 1 4 1 2 4 1 1 2 1 1 5 1 1",
        "3 2 2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2 1 3 2",
        "6 6 1 3 2 2 2 2 1 1 1 1 1 4 2",
        "9 1 18 1 3 3 3 3 3 5 3 4 7 3 3",
        "1 3 1 3 3 1 3 1 11 1 1 1",
        "1 1 1 1",
        "3",
        "1 1 1 1 2 2",
    } },
    { "llama3", {
        "5 1 2 4 1 4 3 4 1 1 2 2 5 2",
        "3 2 3 1 3 3 2 1 1 1 2 1 2 1 5",
        "6 6 4 2 2 2 2 4 1 4 2",
        "9 19 4 6 6 12 13",
        "1 4 3 4 3 1 10 1 3",
        "1 3",
        "3",
        "2 2 2 2",
    } },
    { "qwen2", {
        "5 1 2 4 1 4 3 4 1 1 2 2 5 2",
        "3 2 3 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2 1 3 2",
        "6 6 4 2 2 2 2 4 1 4 2",
        "9 19 4 6 6 12 13",
        "1 4 3 4 3 1 10 1 1 1 1",
        "1 3",
        "3",
        "2 2 2 2",
    } },
};

static void test_pretokenize_matches_regex_engine(void)
{
    for (size_t k = 0; k < sizeof PRETOK_EXPECT / sizeof PRETOK_EXPECT[0]; k++) {
        edgellm_pretok pre;
        CHECK(edgellm_pretok_from_name(PRETOK_EXPECT[k].pre, &pre));
        for (size_t i = 0; i < sizeof PRETOK_TEXTS / sizeof PRETOK_TEXTS[0]; i++) {
            size_t *cuts = NULL, n = 0;
            CHECK_OK(edgellm_pretokenize(pre, PRETOK_TEXTS[i], strlen(PRETOK_TEXTS[i]), &cuts, &n));
            char got[512] = "";
            size_t o = 0;
            for (size_t c = 0; c + 1 < n && o < sizeof got - 16; c++)
                o += (size_t)snprintf(got + o, sizeof got - o, c ? " %zu" : "%zu", cuts[c + 1] - cuts[c]);
            bool same = !strcmp(got, PRETOK_EXPECT[k].lens[i]);
            if (!same)
                fprintf(stderr, "   %s text %zu: got \"%s\" expected \"%s\"\n", PRETOK_EXPECT[k].pre, i, got,
                        PRETOK_EXPECT[k].lens[i]);
            CHECK(same);
            edgellm_free(cuts);
        }
    }
    edgellm_pretok pre;
    CHECK(!edgellm_pretok_from_name("no-such-pre", &pre));
}

/* ------------------------------------------------------------------ pieces */

static void test_tokenizer_token_to_piece(void)
{
    NEED_SHARED(spm, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-gpt-2.gguf");
    edgellm_tokenizer *a = load_vocab(spm), *b = load_vocab(bpe);
    CHECK(a && b);
    if (!a || !b) goto done;
    char buf[64];
    /* SPM: "▁Hello" (15043) -> " Hello"; <0x0A> (13) -> "\n"; <s> (control) -> "" */
    CHECK_EQ(edgellm_token_to_piece(a, 15043, buf, sizeof buf), 6);
    CHECK(!memcmp(buf, " Hello", 6));
    CHECK_EQ(edgellm_token_to_piece(a, 13, buf, sizeof buf), 1);
    CHECK_EQ(buf[0], '\n');
    CHECK_EQ(edgellm_token_to_piece(a, 1, buf, sizeof buf), 0);
    CHECK_EQ(edgellm_token_to_piece(a, 32000, buf, sizeof buf), -1);
    CHECK_EQ(edgellm_token_to_piece(a, -5, buf, sizeof buf), -1);
    /* too small a buffer: the needed size, nothing written past buf_size */
    memset(buf, 'x', sizeof buf);
    CHECK_EQ(edgellm_token_to_piece(a, 15043, buf, 3), 6);
    CHECK(!memcmp(buf, " He", 3) && buf[3] == 'x');
    CHECK_EQ(edgellm_token_to_piece(a, 15043, NULL, 0), 6);
    /* BPE: "Ġworld" (995) -> " world"; "Ċ" (198) -> "\n"; <|endoftext|> -> "" */
    CHECK_EQ(edgellm_token_to_piece(b, 995, buf, sizeof buf), 6);
    CHECK(!memcmp(buf, " world", 6));
    CHECK_EQ(edgellm_token_to_piece(b, 198, buf, sizeof buf), 1);
    CHECK_EQ(buf[0], '\n');
    CHECK_EQ(edgellm_token_to_piece(b, 50256, buf, sizeof buf), 0);
done:
    edgellm_tokenizer_free(a);
    edgellm_tokenizer_free(b);
}

static void test_tokenizer_max_tokens(void)
{
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-gpt-2.gguf");
    edgellm_tokenizer *t = load_vocab(bpe);
    CHECK(t != NULL);
    if (!t) return;
    int32_t ids[2] = {-7, -7};
    int n = -1;
    edgellm_error err = {0};
    /* " Hello world" is 2 tokens; "Hello, world!" is 4 */
    CHECK_EQ(edgellm_tokenize(t, "Hello, world!", 13, 0, ids, 2, &n, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(n, 4);
    CHECK(err.msg[0] != 0);
    CHECK_EQ(edgellm_tokenize(t, "Hello world", 11, 0, ids, 2, &n, NULL), EDGELLM_OK);
    CHECK_EQ(n, 2);
    CHECK(ids[0] == 15496 && ids[1] == 995);
    CHECK_EQ(edgellm_tokenize(NULL, "x", 1, 0, ids, 2, &n, NULL), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_tokenize(t, NULL, 1, 0, ids, 2, &n, NULL), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_tokenize(t, "x", 1, 0, NULL, 2, &n, NULL), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_tokenize(t, NULL, 0, 0, NULL, 0, &n, NULL), EDGELLM_OK);
    CHECK_EQ(n, 0);
    edgellm_tokenizer_free(t);
}

/* ------------------------------------------------------------------ special tokens */

static void test_tokenizer_user_defined_tokens(void)
{
    NEED_SHARED(coder, "data/vocab/ggml-vocab-deepseek-coder.gguf");
    edgellm_tokenizer *t = load_vocab(coder);
    CHECK(t != NULL);
    if (!t) return;
    /* "<|User|>" (32019) and "<|EOT|>" (32021) are user-defined: matched literally */
    static const char TEXT[] = "<|User|>hi<|EOT|>";
    int n = 0;
    int32_t *ids = encode(t, TEXT, strlen(TEXT), 0, &n);
    CHECK(ids && n == 3 && ids[0] == 32019 && ids[2] == 32021);
    size_t dlen;
    char *back = decode(t, ids, n, &dlen);
    CHECK(back && !strcmp(back, TEXT));
    edgellm_free(back);
    free(ids);
    /* the control token "<｜begin▁of▁sentence｜>" (32013) typed as text stays text */
    static const char CTRL[] = "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
    ids = encode(t, CTRL, strlen(CTRL), 0, &n);
    CHECK(ids && n > 1);
    for (int i = 0; ids && i < n; i++) CHECK(ids[i] != 32013);
    free(ids);
    /* add_special: BOS 32013 (add_bos_token = true in this file) */
    ids = encode(t, "x", 1, 1, &n);
    CHECK(ids && n == 2 && ids[0] == 32013);
    free(ids);
    edgellm_tokenizer_free(t);
}

/* ------------------------------------------------------------------ Unicode */

static void test_unicode_categories(void)
{
    /* spot checks from the Unicode code charts */
    CHECK_EQ(edgellm_unicode_category('A'), EDGELLM_UCAT_Lu);
    CHECK_EQ(edgellm_unicode_category('z'), EDGELLM_UCAT_Ll);
    CHECK_EQ(edgellm_unicode_category('7'), EDGELLM_UCAT_Nd);
    CHECK_EQ(edgellm_unicode_category(0xBD), EDGELLM_UCAT_No);      /* ½ */
    CHECK_EQ(edgellm_unicode_category(0x2163), EDGELLM_UCAT_Nl);    /* Ⅳ */
    CHECK_EQ(edgellm_unicode_category(0x4E00), EDGELLM_UCAT_Lo);    /* 一 */
    CHECK_EQ(edgellm_unicode_category(0x0301), EDGELLM_UCAT_Mn);    /* combining acute */
    CHECK_EQ(edgellm_unicode_category(0x17B6), EDGELLM_UCAT_Mc);    /* Khmer vowel sign aa */
    CHECK_EQ(edgellm_unicode_category(0x20AC), EDGELLM_UCAT_Sc);    /* € */
    CHECK_EQ(edgellm_unicode_category('+'), EDGELLM_UCAT_Sm);
    CHECK_EQ(edgellm_unicode_category('^'), EDGELLM_UCAT_Sk);
    CHECK_EQ(edgellm_unicode_category(0x1F600), EDGELLM_UCAT_So);   /* 😀 */
    CHECK_EQ(edgellm_unicode_category('!'), EDGELLM_UCAT_Po);
    CHECK_EQ(edgellm_unicode_category('('), EDGELLM_UCAT_Ps);
    CHECK_EQ(edgellm_unicode_category('_'), EDGELLM_UCAT_Pc);
    CHECK_EQ(edgellm_unicode_category(0x3000), EDGELLM_UCAT_Zs);
    CHECK_EQ(edgellm_unicode_category(0x2028), EDGELLM_UCAT_Zl);
    CHECK_EQ(edgellm_unicode_category('\n'), EDGELLM_UCAT_Cc);
    CHECK_EQ(edgellm_unicode_category(0x200D), EDGELLM_UCAT_Cf);    /* ZWJ */
    CHECK_EQ(edgellm_unicode_category(0xD800), EDGELLM_UCAT_Cs);
    CHECK_EQ(edgellm_unicode_category(0xE000), EDGELLM_UCAT_Co);
    CHECK_EQ(edgellm_unicode_category(0x0378), EDGELLM_UCAT_Cn);    /* unassigned */
    CHECK_EQ(edgellm_unicode_category(0x110000), EDGELLM_UCAT_Cn);
    CHECK_EQ(edgellm_unicode_category(EDGELLM_UNICODE_INVALID), EDGELLM_UCAT_Cn);
    CHECK(edgellm_unicode_is_space(' ') && edgellm_unicode_is_space('\t') && edgellm_unicode_is_space(0x3000));
    CHECK(edgellm_unicode_is_space(0x85) && edgellm_unicode_is_space(0xA0) && edgellm_unicode_is_space(0x200A));
    CHECK(!edgellm_unicode_is_space(0x200B) && !edgellm_unicode_is_space('x') && !edgellm_unicode_is_space(0x1C));
}

static void test_unicode_utf8_decode(void)
{
    size_t n;
    CHECK_EQ(edgellm_utf8_decode("A", 1, &n), 'A');
    CHECK_EQ(n, 1);
    CHECK_EQ(edgellm_utf8_decode("\xC3\xA4", 2, &n), 0xE4);
    CHECK_EQ(n, 2);
    CHECK_EQ(edgellm_utf8_decode("\xE2\x96\x81", 3, &n), 0x2581);
    CHECK_EQ(n, 3);
    CHECK_EQ(edgellm_utf8_decode("\xF0\x9F\x98\x80", 4, &n), 0x1F600);
    CHECK_EQ(n, 4);
    /* ill-formed: each consumes exactly one byte */
    static const char *const BAD[] = {
        "\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF0\x80\x80\x80",
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xC3", "\xE2\x96", "\xC3\x41",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        CHECK_EQ(edgellm_utf8_decode(BAD[i], strlen(BAD[i]), &n), EDGELLM_UNICODE_INVALID);
        CHECK_EQ(n, 1);
    }
    char out[4];
    CHECK_EQ(edgellm_utf8_encode(0x2581, out), 3);
    CHECK(!memcmp(out, "\xE2\x96\x81", 3));
    CHECK_EQ(edgellm_utf8_encode(0xD800, out), 0);
    CHECK_EQ(edgellm_utf8_encode(0x110000, out), 0);
}

/* ------------------------------------------------------------------ hostile input */

/* True when ids contain a user-defined token, which decodes to its literal text rather than
 * through the byte-level mapping: DeepSeek's vocabs hold 'À' 'Á' 'õ'..'ÿ' (the characters
 * of bytes C0, C1, F5..FF, never valid in UTF-8) as user-defined tokens, and literal "ÿ"
 * in text must decode to "ÿ". */
static bool has_user_defined(const edgellm_tokenizer *t, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++)
        if (t->type[ids[i]] == EDGELLM_TOKTYPE_USER_DEFINED) return true;
    return false;
}

/* Invalid UTF-8 (a lone FF FE, a cut sequence, an encoded surrogate, a stray continuation,
 * a cut 4-byte sequence, an overlong C0) never fails to encode. SentencePiece keeps every
 * byte (byte-fallback tokens), so decode(encode(x)) == x. Byte-level BPE reads each invalid
 * byte as U+FFFD, as llama.cpp does (unicode_cpts_from_utf8, PR #11729), so its ids are
 * llama.cpp's and decode gives x with those bytes as EF BF BD; every byte value alone does
 * the same (bytes 00-7F and valid text round-trip exactly). */
static void test_tokenizer_invalid_utf8_roundtrip(void)
{
    NEED_SHARED(spm, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-gpt-2.gguf");
    NEED_SHARED(ds, "data/vocab/ggml-vocab-deepseek-llm.gguf");
    const char *paths[3] = {spm, bpe, ds};
    static const char BAD[] = "ok \xFF\xFE caf\xC3 \xE2\x82 \xED\xA0\x80 \x80x\xC3\xA4 \xF0\x9F\x98 end\xC0";
    /* BAD as byte-level BPE reads it: each invalid byte (12 of them) -> U+FFFD */
    static const char FIXED[] = "ok \xEF\xBF\xBD\xEF\xBF\xBD caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD "
                                "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBDx\xC3\xA4 "
                                "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end\xEF\xBF\xBD";
    for (int v = 0; v < 3; v++) {
        edgellm_tokenizer *t = load_vocab(paths[v]);
        CHECK(t != NULL);
        if (!t) continue;
        const bool byte_level = v > 0;
        const char *want = byte_level ? FIXED : BAD;
        const size_t want_len = byte_level ? sizeof FIXED - 1 : sizeof BAD - 1;
        int n = 0, n2 = 0;
        int32_t *ids = encode(t, BAD, sizeof BAD - 1, 0, &n);
        CHECK(ids && n > 0);
        for (int i = 0; ids && i < n; i++) CHECK(ids[i] >= 0 && ids[i] < edgellm_tokenizer_n_vocab(t));
        if (byte_level) {                      /* the same ids as for the text with U+FFFD */
            int32_t *ids2 = encode(t, FIXED, sizeof FIXED - 1, 0, &n2);
            CHECK(ids && ids2 && n == n2 && !memcmp(ids, ids2, (size_t)n * sizeof *ids));
            free(ids2);
        }
        size_t dlen = 0;
        char *back = ids ? decode(t, ids, n, &dlen) : NULL;
        CHECK(back != NULL);
        if (ids && !has_user_defined(t, ids, n))
            CHECK(back && dlen == want_len && !memcmp(back, want, dlen));
        edgellm_free(back);
        free(ids);
        /* every single byte value on its own */
        int exact = 0;
        for (int b = 0; b < 256; b++) {
            char c = (char)b;
            ids = encode(t, &c, 1, 0, &n);
            CHECK(ids && n >= 1);
            back = ids ? decode(t, ids, n, &dlen) : NULL;
            CHECK(back != NULL);
            if (ids && !has_user_defined(t, ids, n)) {
                if (!byte_level || b < 0x80) CHECK(back && dlen == 1 && back[0] == c);
                else CHECK(back && dlen == 3 && !memcmp(back, "\xEF\xBF\xBD", 3));
                exact++;
            }
            edgellm_free(back);
            free(ids);
        }
        CHECK_EQ(exact, 256);   /* no byte alone meets a user-defined token any more */
        edgellm_tokenizer_free(t);
    }
}

/* GPT-NeoX's vocabulary (mpt) has no token for the bytes C0, C1, F5..FF. They never occur in
 * UTF-8, and as invalid bytes they are read as U+FFFD, whose bytes it has: "a\xC0b" gives
 * "a", U+FFFD, "b" — never its "unknown" id, which is <|endoftext|> (id 0). */
static void test_tokenizer_bpe_missing_byte_dropped(void)
{
    NEED_SHARED(mpt, "data/vocab/ggml-vocab-mpt.gguf");
    edgellm_tokenizer *t = load_vocab(mpt);
    CHECK(t != NULL);
    if (!t) return;
    int n = -1;
    int32_t *ids = encode(t, "\xFF", 1, 0, &n);
    size_t dlen = 0;
    char *back = ids ? decode(t, ids, n, &dlen) : NULL;
    CHECK(ids && n >= 1 && back && !strcmp(back, "\xEF\xBF\xBD"));
    edgellm_free(back);
    free(ids);
    ids = encode(t, "a\xC0" "b", 3, 0, &n);
    back = ids ? decode(t, ids, n, &dlen) : NULL;
    CHECK(back && !strcmp(back, "a\xEF\xBF\xBD" "b"));
    for (int i = 0; ids && i < n; i++) CHECK(ids[i] != 0);
    edgellm_free(back);
    free(ids);
    edgellm_tokenizer_free(t);
}

static void test_tokenizer_empty_text(void)
{
    NEED_SHARED(spm, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-falcon.gguf");
    edgellm_tokenizer *a = load_vocab(spm), *b = load_vocab(bpe);
    CHECK(a && b);
    int32_t ids[4];
    int n = -1;
    if (a) {
        CHECK_EQ(edgellm_tokenize(a, "", 0, 0, ids, 4, &n, NULL), EDGELLM_OK);
        CHECK_EQ(n, 0);
        CHECK_EQ(edgellm_tokenize(a, "", 0, 1, ids, 4, &n, NULL), EDGELLM_OK);   /* just BOS */
        CHECK(n == 1 && ids[0] == 1);
    }
    if (b) {
        CHECK_EQ(edgellm_tokenize(b, "", 0, 1, ids, 4, &n, NULL), EDGELLM_OK);   /* falcon: no BOS */
        CHECK_EQ(n, 0);
    }
    edgellm_tokenizer_free(a);
    edgellm_tokenizer_free(b);
}

#if defined(__SANITIZE_ADDRESS__)
#define SLOWDOWN 5      /* AddressSanitizer builds run several times slower */
#else
#define SLOWDOWN 1
#endif

/* CPU time of this process in ms (other jobs on a shared machine do not count). */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* 1 MB texts must tokenize in well under a few seconds: ordinary prose, one 1 MB word
 * (worst case for the merge loop) and 1 MB of blanks. Budget: 2 s of CPU time each
 * (measured: 0.1-0.5 s on one core of the development machine). */
static void test_tokenizer_long_text_is_fast(void)
{
    NEED_SHARED(spm, "data/vocab/ggml-vocab-llama-spm.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-gpt-2.gguf");
    NEED_SHARED(mpt, "data/vocab/ggml-vocab-mpt.gguf");
    NEED_SHARED(story, "models/text/tinystories_sample.txt");
    size_t slen = 0;
    char *sample = read_file(story, &slen);
    CHECK(sample && slen > 0);
    if (!sample) return;
    const size_t N = 1 << 20;
    char *prose = malloc(N), *word = malloc(N), *blanks = malloc(N);
    for (size_t i = 0; i < N; i++) {
        prose[i] = sample[i % slen];
        word[i] = "abcdefghij"[i % 7];
        blanks[i] = i % 1000 == 999 ? '\n' : ' ';
    }
    const char *paths[3] = {spm, bpe, mpt};
    const char *texts[3] = {prose, word, blanks};
    const char *names[3] = {"prose", "one word", "blanks"};
    for (int v = 0; v < 3; v++) {
        edgellm_tokenizer *t = load_vocab(paths[v]);
        CHECK(t != NULL);
        if (!t) continue;
        for (int k = 0; k < 3; k++) {
            double t0 = cpu_ms();
            int n = 0;
            int32_t *ids = encode(t, texts[k], N, 0, &n);
            double ms = cpu_ms() - t0;
            fprintf(stderr, "   %s, 1 MiB %s: %d tokens in %.0f ms CPU\n", edgellm_tokenizer_model(t), names[k], n, ms);
            CHECK(ids != NULL && n > 0);
            CHECK(ms < 2000 * SLOWDOWN);
            size_t dlen = 0;
            char *back = ids ? decode(t, ids, n, &dlen) : NULL;
            CHECK(back && dlen == N && !memcmp(back, texts[k], N));
            edgellm_free(back);
            free(ids);
        }
        edgellm_tokenizer_free(t);
    }
    free(prose);
    free(word);
    free(blanks);
    free(sample);
}

/* ------------------------------------------------------------------ malformed metadata */

static const char *tmp_file(const char *name)
{
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* A tiny vocabulary written with the GGUF writer; `breakage` selects one defect. */
static const char *write_vocab(const char *name, int breakage)
{
    static const char *const TOKS[] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\xE2\x96\x81", "\xE2\x96\x81" "ab"};
    float scores[8] = {0, 0, 0, -1, -2, -0.5f, -3, -0.1f};
    int32_t types[8] = {2, 3, 3, 1, 1, 1, 1, 1};
    const char *path = tmp_file(name);
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(w != NULL);
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", breakage == 1 ? "bert" : "llama");
    edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", TOKS, NULL, 8);
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, scores, breakage == 2 ? 7 : 8);
    if (breakage == 3) types[4] = 9;
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, 8);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", breakage == 4 ? 8 : 1);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (breakage == 5) {  /* gpt2 with an unknown pre-tokenizer */
        edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
        edgellm_gguf_writer_set_str(w, "tokenizer.ggml.pre", "no-such-pre");
    }
    if (breakage == 6) edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");   /* no merges */
    edgellm_error err = {0};
    CHECK_OK(edgellm_gguf_writer_write(w, path, &err));
    edgellm_gguf_writer_free(w);
    return path;
}

static void test_tokenizer_malformed_metadata(void)
{
    const char *good = write_vocab("good.gguf", 0);
    edgellm_tokenizer *t = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_tokenizer_load(good, &t, &err), EDGELLM_OK);
    if (t) {   /* "ab ab" -> "▁ab" "▁ab"; "ba" -> "▁" "b" "a" */
        int n = 0;
        int32_t *ids = encode(t, "ab ab", 5, 0, &n);
        CHECK(ids && n == 2 && ids[0] == 7 && ids[1] == 7);
        free(ids);
        ids = encode(t, "ba", 2, 0, &n);
        CHECK(ids && n == 3 && ids[0] == 6 && ids[1] == 4 && ids[2] == 3);
        free(ids);
        ids = encode(t, "c", 1, 0, &n);   /* no byte tokens: <unk> */
        CHECK(ids && n == 2 && ids[1] == 0);
        free(ids);
        edgellm_tokenizer_free(t);
    }
    static const struct { int breakage; edgellm_status rc; const char *name; } CASES[] = {
        {1, EDGELLM_ERR_UNSUPPORTED, "bert.gguf"},      {2, EDGELLM_ERR_FORMAT, "short_scores.gguf"},
        {3, EDGELLM_ERR_FORMAT, "bad_type.gguf"},       {4, EDGELLM_ERR_FORMAT, "bos_range.gguf"},
        {5, EDGELLM_ERR_UNSUPPORTED, "bad_pre.gguf"},   {6, EDGELLM_ERR_FORMAT, "no_merges.gguf"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const char *path = write_vocab(CASES[i].name, CASES[i].breakage);
        t = (edgellm_tokenizer *)1;
        memset(&err, 0, sizeof err);
        CHECK_EQ(edgellm_tokenizer_load(path, &t, &err), CASES[i].rc);
        CHECK(t == NULL);
        CHECK(strstr(err.msg, CASES[i].name) != NULL);   /* the message names the file */
    }
    CHECK_EQ(edgellm_tokenizer_load("/nonexistent/x.gguf", &t, &err), EDGELLM_ERR_IO);
    CHECK(strstr(err.msg, "/nonexistent/x.gguf") != NULL);
}

static void test_tokenizer_bert_unsupported(void)
{
    NEED_SHARED(bert, "data/vocab/ggml-vocab-bert-bge.gguf");
    edgellm_tokenizer *t = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_tokenizer_load(bert, &t, &err), EDGELLM_ERR_UNSUPPORTED);
    CHECK(t == NULL);
    CHECK(strstr(err.msg, "bert") != NULL);
}

/* Fail every allocation of a load in turn: each must fail cleanly and leak nothing. */
static void test_tokenizer_load_oom_sweep(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    NEED_SHARED(bpe, "data/vocab/ggml-vocab-refact.gguf");
    const char *paths[2] = {model, bpe};
    for (int v = 0; v < 2; v++) {
        long live0 = edgellm_test_live_allocs();
        int n_fail = 0;
        for (int n = 1; n < 10000; n++) {
            edgellm_tokenizer *t = NULL;
            edgellm_test_alloc_fail_at(n);
            edgellm_status rc = edgellm_tokenizer_load(paths[v], &t, NULL);
            edgellm_test_alloc_fail_at(0);
            if (rc == EDGELLM_OK) {
                int cnt = 0;
                int32_t ids[64];
                /* then fail each allocation of an encode */
                for (int k = 1; k < 100; k++) {
                    edgellm_test_alloc_fail_at(k);
                    edgellm_status r2 = edgellm_tokenize(t, "Hello world, 123!", 17, 1, ids, 64, &cnt, NULL);
                    edgellm_test_alloc_fail_at(0);
                    if (r2 == EDGELLM_OK) break;
                    CHECK_EQ(r2, EDGELLM_ERR_NOMEM);
                }
                edgellm_tokenizer_free(t);
                break;
            }
            n_fail++;
            CHECK_EQ(rc, EDGELLM_ERR_NOMEM);
            CHECK(t == NULL);
            CHECK_EQ(edgellm_test_live_allocs(), live0);
        }
        CHECK(n_fail > 3);
        CHECK_EQ(edgellm_test_live_allocs(), live0);
    }
}

/* ------------------------------------------------------------------ CLI */

static void test_cli_tokenize(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    NEED_SHARED(vocab, "data/vocab/ggml-vocab-gpt-2.gguf");
    char cmd[8192], out[8192];
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p 'Once upon a time' --ids", EDGELLM_CLI, model);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "1 403 407 261 378\n"));
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p 'Once upon a time' --ids --no-bos", EDGELLM_CLI, model);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "403 407 261 378\n"));
    /* one line per token on a vocab-only file */
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p 'Hello world'", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "15496\t'Hello'\n995\t' world'\n"));
    /* control bytes and split characters are escaped: "\n" is token 198, "多" (E5 A4 9A)
     * is two GPT-2 tokens, E5 A4 (13783, "å¤") and 9A (248) */
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p \"$(printf 'x\\n\\345\\244\\232')\"", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "87\t'x'\n198\t'\\n'\n13783\t'\\xE5\\xA4'\n248\t'\\x9A'\n"));
    /* -f reads the file verbatim (trailing newline included) */
    const char *f = tmp_file("prompt.txt");
    write_file(f, "Hello world\n", 12);
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -f %s --ids", EDGELLM_CLI, vocab, f);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "15496 995 198\n"));
    /* errors */
    snprintf(cmd, sizeof cmd, "%s tokenize -m /nonexistent/m.gguf -p hi", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "/nonexistent/m.gguf") != NULL);
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -f /nonexistent/p.txt", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "/nonexistent/p.txt") != NULL);
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p hi --bogus", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s tokenize -p hi", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s tokenize -m %s -p a -f b", EDGELLM_CLI, vocab);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
}

int main(void)
{
    RUN(test_unicode_categories);
    RUN(test_unicode_utf8_decode);
    RUN(test_pretokenize_matches_regex_engine);
    RUN(test_tokenizer_model_kinds);
    RUN(test_tokenizer_vectors_all_vocabs);
    RUN(test_tokenizer_stories260k_prompt);
    RUN(test_tokenizer_token_to_piece);
    RUN(test_tokenizer_max_tokens);
    RUN(test_tokenizer_user_defined_tokens);
    RUN(test_tokenizer_control_tokens_need_special);
    RUN(test_tokenizer_invalid_utf8_roundtrip);
    RUN(test_tokenizer_bpe_missing_byte_dropped);
    RUN(test_tokenizer_empty_text);
    RUN(test_tokenizer_long_text_is_fast);
    RUN(test_tokenizer_malformed_metadata);
    RUN(test_tokenizer_bert_unsupported);
    RUN(test_tokenizer_load_oom_sweep);
    RUN(test_cli_tokenize);
    return test_summary();
}
