/*
 * hf_pretok.c — which pre-tokenizer a byte-level BPE tokenizer.json uses, read from its own
 * "pre_tokenizer" section, and the section edgellm writes back on export.
 *
 * A Hugging Face pre-tokenizer (huggingface/tokenizers, tokenizers/src/pre_tokenizers/) is
 * a Sequence of stages, each splitting every piece of the previous one; edgellm's
 * pre-tokenizers (src/tokenizer/tok_pretok.c, the edgellm_pretok enum) are lists of regex
 * stages of the same kind. Each stage of the file is rewritten as the regex it applies:
 *
 *   Split {pattern: {Regex: P}, behavior: Isolated, invert: false}   P
 *   Digits {individual_digits: true}                                 \p{N}
 *   Digits {individual_digits: false}                                \p{N}+
 *   Punctuation {behavior: Contiguous}                               [\p{P}\$\+<=>\^~\|`]+
 *       (Rust's is_ascii_punctuation or Unicode P*: the ASCII symbols $+<=>^`|~ added to \p{P})
 *   ByteLevel {use_regex: true}                                      GPT-2's regex, then the
 *                                                                    byte-to-character map
 *   ByteLevel {use_regex: false}                                     the map only
 *
 * where GPT-2's regex is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (tokenizers/src/pre_tokenizers/byte_level.rs). Regex escapes \r \n \t are read as the
 * characters they stand for, so "[\\r\\n]" and a literal CR LF compare equal. The list is
 * then compared, stage for stage, with the lists below; nothing else is guessed (no hash of
 * token ids, as llama.cpp's convert_hf_to_gguf.py get_vocab_base_pre does). The regexes of
 * each list are those llama.cpp implements for the name (src/llama-vocab.cpp, which quotes
 * the tokenizer.json it mirrors), written as the published tokenizer.json files write them:
 * Llama 3 (meta-llama/Meta-Llama-3-8B), Qwen2, SmolLM/StarCoder2, GPT-2, DeepSeek.
 *
 * The normalizer must be absent or NFC (Qwen2's; edgellm, like llama.cpp, does not
 * re-normalize text: NFC input is unchanged by it). A ByteLevel with add_prefix_space true,
 * a Split of a literal string or with another behavior, and any other stage type are
 * refused with the stage quoted.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include "../tokenizer/tokenizer_internal.h"

#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define PUNCT_REGEX "[\\p{P}\\$\\+<=>\\^~\\|`]+"
#define MAX_STAGES 16

/* A stage as the file writes it: Split(Regex) 'S', Digits individual 'D' / contiguous 'd',
 * Punctuation contiguous 'P', ByteLevel with regex 'B' / without 'b'. */
typedef struct { char kind; const char *regex; } pt_stage;

typedef struct {
    const char *name;          /* tokenizer.ggml.pre written                         */
    edgellm_pretok id;
    pt_stage stages[8];        /* ends with kind 0                                   */
} pt_known;

static const pt_known KNOWN[] = {
    {"gpt-2", EDGELLM_PRETOK_GPT2, {{'B', NULL}}},
    {"starcoder", EDGELLM_PRETOK_STARCODER, {{'D', NULL}, {'B', NULL}}},
    {"llama-bpe",
     EDGELLM_PRETOK_LLAMA3,
     {{'S', "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
            "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
      {'b', NULL}}},
    {"qwen2",
     EDGELLM_PRETOK_QWEN2,
     {{'S', "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
            "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
      {'b', NULL}}},
    {"deepseek-llm",
     EDGELLM_PRETOK_DEEPSEEK_LLM,
     {{'S', "[\r\n]"},
      {'S', "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-"
            "Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-"
            "ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+"},
      {'S', "\\s?[!-/:-~！-／：-～‘-‟　-。]+"},
      {'S', "\\s+$"},
      {'S', "[一-龥ࠀ-一가-퟿]+"},
      {'d', NULL},
      {'b', NULL}}},
    {"deepseek-coder",
     EDGELLM_PRETOK_DEEPSEEK_CODER,
     {{'S', "[\r\n]"},
      {'S', "\\s?\\p{L}+"},
      {'S', "\\s?\\p{P}+"},
      {'S', "[一-龥ࠀ-一가-퟿]+"},
      {'D', NULL},
      {'b', NULL}}},
    {"falcon", EDGELLM_PRETOK_FALCON, {{'P', NULL}, {'B', NULL}, {'S', "[0-9][0-9][0-9]"}}},
    {"default",
     EDGELLM_PRETOK_DEFAULT,
     {{'S', "[\\p{P}\\$\\+<=>\\^~\\|]+"}, {'B', NULL}, {'S', "\\p{N}+"}, {'S', "[0-9][0-9][0-9]"}}},
};
#define N_KNOWN (sizeof KNOWN / sizeof KNOWN[0])

/* ------------------------------------------------------------- canonical form ---- */

#define BYTE_MAP "\x01byte-level map"   /* the list entry of the byte-to-character map */

typedef struct {
    char *s[2 * MAX_STAGES];   /* regexes (escapes \r \n \t resolved) and BYTE_MAP marks */
    int n;
    int n_byte_level;
} pt_list;

static void list_free(pt_list *l)
{
    for (int i = 0; i < l->n; i++) edgellm_free(l->s[i]);
    l->n = 0;
}

/* Append regex (resolving \r \n \t; other escapes kept as written). false: full or OOM. */
static bool list_add(pt_list *l, const char *regex)
{
    if (l->n >= 2 * MAX_STAGES) return false;
    const size_t n = strlen(regex);
    char *c = edgellm_malloc(n + 1), *o = c;
    if (!c) return false;
    for (size_t i = 0; i < n; i++) {
        if (regex[i] == '\\' && i + 1 < n) {
            const char e = regex[i + 1];
            if (e == 'r' || e == 'n' || e == 't') { *o++ = e == 'r' ? '\r' : e == 'n' ? '\n' : '\t'; i++; continue; }
            *o++ = regex[i++];   /* an escape pair is copied whole: "\\\\r" stays backslash + r */
        }
        *o++ = regex[i];
    }
    *o = 0;
    l->s[l->n++] = c;
    return true;
}

static bool list_add_stage(pt_list *l, char kind, const char *regex)
{
    switch (kind) {
    case 'S': return list_add(l, regex);
    case 'D': return list_add(l, "\\p{N}");
    case 'd': return list_add(l, "\\p{N}+");
    case 'P': return list_add(l, PUNCT_REGEX);
    case 'B': l->n_byte_level++; return list_add(l, GPT2_REGEX) && list_add(l, BYTE_MAP);
    case 'b': l->n_byte_level++; return list_add(l, BYTE_MAP);
    default: return false;
    }
}

static bool known_list(const pt_known *k, pt_list *l)
{
    memset(l, 0, sizeof *l);
    for (const pt_stage *s = k->stages; s->kind; s++)
        if (!list_add_stage(l, s->kind, s->regex)) return false;
    return true;
}

/* A stage described for a message: "Split regex \"...\"" (cut to fit). */
static void describe(const cJSON *st, char *buf, size_t size)
{
    const cJSON *type = edgellm_hf_get(st, "type"), *pat = edgellm_hf_get(st, "pattern");
    const cJSON *rx = edgellm_hf_get(pat, "Regex"), *str = edgellm_hf_get(pat, "String");
    const char *t = cJSON_IsString(type) ? type->valuestring : "(no type)";
    if (cJSON_IsString(rx)) snprintf(buf, size, "%.32s regex \"%.300s\"", t, rx->valuestring);
    else if (cJSON_IsString(str)) snprintf(buf, size, "%.32s string \"%.300s\"", t, str->valuestring);
    else snprintf(buf, size, "%.32s", t);
}

typedef struct {
    const char *path;
    edgellm_error *err;
} pt_ctx;

static edgellm_status unsupported(const pt_ctx *x, const cJSON *st, const char *why)
{
    char d[400];
    describe(st, d, sizeof d);
    return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: pre-tokenizer stage %s %s", x->path, d, why);
}

/* Flatten a pre_tokenizer value (a stage or a Sequence of them) into l. */
static edgellm_status flatten(const pt_ctx *x, const cJSON *st, pt_list *l, int depth)
{
    const cJSON *type = edgellm_hf_get(st, "type");
    if (!cJSON_IsString(type))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: a pre_tokenizer without \"type\"", x->path);
    const char *t = type->valuestring;
    bool ok = true;
    if (!strcmp(t, "Sequence")) {
        const cJSON *seq = edgellm_hf_get(st, "pretokenizers");
        if (!cJSON_IsArray(seq) || depth > 4)
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT,
                                "%s: a Sequence pre_tokenizer needs a \"pretokenizers\" list", x->path);
        for (const cJSON *e = seq->child; e; e = e->next) {
            edgellm_status rc = flatten(x, e, l, depth + 1);
            if (rc != EDGELLM_OK) return rc;
        }
        return EDGELLM_OK;
    } else if (!strcmp(t, "Split")) {
        const cJSON *pat = edgellm_hf_get(st, "pattern"), *rx = edgellm_hf_get(pat, "Regex");
        const cJSON *beh = edgellm_hf_get(st, "behavior"), *inv = edgellm_hf_get(st, "invert");
        if (!cJSON_IsString(rx))
            return unsupported(x, st, "splits on a literal string: edgellm implements regex splits");
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") || cJSON_IsTrue(inv))
            return unsupported(x, st, "is not an isolated, non-inverted split");
        ok = list_add(l, rx->valuestring);
    } else if (!strcmp(t, "Digits")) {
        ok = list_add_stage(l, cJSON_IsTrue(edgellm_hf_get(st, "individual_digits")) ? 'D' : 'd', NULL);
    } else if (!strcmp(t, "Punctuation")) {
        const cJSON *beh = edgellm_hf_get(st, "behavior");
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Contiguous"))
            return unsupported(x, st, "has a behavior other than Contiguous");
        ok = list_add_stage(l, 'P', NULL);
    } else if (!strcmp(t, "ByteLevel")) {
        if (cJSON_IsTrue(edgellm_hf_get(st, "add_prefix_space")))
            return unsupported(x, st, "has add_prefix_space true: edgellm adds no space before byte-level BPE text");
        ok = list_add_stage(l, cJSON_IsFalse(edgellm_hf_get(st, "use_regex")) ? 'b' : 'B', NULL);
    } else {
        return unsupported(x, st, "is not one edgellm implements (Split, Digits, Punctuation, ByteLevel)");
    }
    if (!ok)
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: more than %d pre-tokenizer stages", x->path,
                            MAX_STAGES);
    return EDGELLM_OK;
}

static bool lists_equal(const pt_list *a, const pt_list *b)
{
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->s[i], b->s[i])) return false;
    return true;
}

/* Whether regex s is a stage of some known pre-tokenizer (for the message). */
static bool stage_known(const char *s)
{
    for (size_t k = 0; k < N_KNOWN; k++) {
        pt_list l;
        bool found = false;
        if (known_list(&KNOWN[k], &l))
            for (int i = 0; i < l.n && !found; i++) found = !strcmp(l.s[i], s);
        list_free(&l);
        if (found) return true;
    }
    return false;
}

static edgellm_status check_normalizer(const pt_ctx *x, const cJSON *n, int depth)
{
    if (!n || cJSON_IsNull(n)) return EDGELLM_OK;
    const cJSON *type = edgellm_hf_get(n, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "(no type)";
    if (!strcmp(t, "NFC")) return EDGELLM_OK;
    if (!strcmp(t, "Sequence") && depth < 4) {
        const cJSON *seq = edgellm_hf_get(n, "normalizers");
        for (const cJSON *e = cJSON_IsArray(seq) ? seq->child : NULL; e; e = e->next) {
            edgellm_status rc = check_normalizer(x, e, depth + 1);
            if (rc != EDGELLM_OK) return rc;
        }
        return EDGELLM_OK;
    }
    return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: normalizer %.32s is not supported for byte-level BPE "
                        "(none or NFC)", x->path, t);
}

edgellm_status edgellm_hf_pretok_identify(const cJSON *pre_tokenizer, const cJSON *normalizer, const char *path,
                                          const char **gguf_pre, edgellm_error *err)
{
    const pt_ctx x = {path, err};
    pt_list in = {0};
    edgellm_status rc = check_normalizer(&x, normalizer, 0);
    if (rc == EDGELLM_OK && (!pre_tokenizer || cJSON_IsNull(pre_tokenizer)))
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: byte-level BPE without a pre_tokenizer section", path);
    if (rc == EDGELLM_OK) rc = flatten(&x, pre_tokenizer, &in, 0);
    if (rc == EDGELLM_OK && in.n_byte_level != 1)
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: %d ByteLevel pre-tokenizers (byte-level BPE has one)",
                          path, in.n_byte_level);
    for (size_t k = 0; k < N_KNOWN && rc == EDGELLM_OK; k++) {
        pt_list kl;
        const bool ok = known_list(&KNOWN[k], &kl), same = ok && lists_equal(&in, &kl);
        list_free(&kl);
        if (!ok) rc = edgellm_fail_nomem(err, path);
        else if (same) {
            *gguf_pre = KNOWN[k].name;
            list_free(&in);
            return EDGELLM_OK;
        }
    }
    if (rc == EDGELLM_OK) {
        int i = 0;
        while (i < in.n && (!strcmp(in.s[i], BYTE_MAP) || stage_known(in.s[i]))) i++;
        if (i < in.n)
            rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: pre-tokenizer regex \"%.300s\" is not one edgellm "
                              "implements", path, in.s[i]);
        else
            rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                              "%s: pre-tokenizer of %d stages (first \"%.200s\") is not a "
                              "sequence edgellm implements (gpt-2, starcoder, llama-bpe, qwen2, deepseek-llm, "
                              "deepseek-coder, falcon, default)",
                              path, in.n, in.n ? in.s[0] : "");
    }
    list_free(&in);
    return rc;
}

/* ------------------------------------------------------------------- export ---- */

static void put_split(FILE *f, const char *regex)
{
    fputs("{\"type\": \"Split\", \"pattern\": {\"Regex\": ", f);
    edgellm_hf_json_put_str(f, regex, strlen(regex));
    fputs("}, \"behavior\": \"Isolated\", \"invert\": false}", f);
}

static void put_stage(FILE *f, const pt_stage *s)
{
    switch (s->kind) {
    case 'S': put_split(f, s->regex); break;
    case 'D': fputs("{\"type\": \"Digits\", \"individual_digits\": true}", f); break;
    case 'd': fputs("{\"type\": \"Digits\", \"individual_digits\": false}", f); break;
    case 'P': fputs("{\"type\": \"Punctuation\", \"behavior\": \"Contiguous\"}", f); break;
    default:
        fprintf(f, "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": %s}",
                s->kind == 'B' ? "true" : "false");
    }
}

bool edgellm_hf_pretok_write(FILE *f, const char *gguf_pre)
{
    edgellm_pretok id;
    if (!gguf_pre || !*gguf_pre) gguf_pre = "default";
    if (!edgellm_pretok_from_name(gguf_pre, &id)) return false;
    for (size_t k = 0; k < N_KNOWN; k++) {
        if (KNOWN[k].id != id) continue;
        const pt_stage *s = KNOWN[k].stages;
        if (!s[1].kind) { put_stage(f, s); return true; }
        fputs("{\"type\": \"Sequence\", \"pretokenizers\": [", f);
        for (int i = 0; s[i].kind; i++) {
            if (i) fputs(", ", f);
            put_stage(f, &s[i]);
        }
        fputs("]}", f);
        return true;
    }
    return false;
}

#endif /* EDGELLM_HAVE_CJSON */
