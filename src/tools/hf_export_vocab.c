/*
 * hf_export_vocab.c — the tokenizer files `edgellm export --hf` writes for a GGUF
 * vocabulary, so that hf_vocab.c reads the same vocabulary back:
 *
 *   "llama" (SentencePiece)  tokenizer.model: every token as a piece with its score and type
 *                            (hf_spm.c), the special ids in the trainer spec, the dummy
 *                            prefix from tokenizer.ggml.add_space_prefix — nothing lost
 *   "gpt2" (byte-level BPE)  tokenizer.json (huggingface/tokenizers' format): model BPE with
 *                            the vocabulary in id order and the merges as "a b" strings,
 *                            control / user-defined / unknown tokens as added_tokens
 *                            ("special" for all but user-defined), the pre_tokenizer section
 *                            of tokenizer.ggml.pre (hf_pretok.c), a TemplateProcessing
 *                            post-processor when BOS / EOS are added, ByteLevel decoder;
 *                            "[PADi]" unused fillers are left out (the importer pads to
 *                            config.json's vocab_size again)
 *   both                     tokenizer_config.json: bos/eos/unk/pad tokens by text,
 *                            add_bos_token / add_eos_token when the GGUF says, the chat
 *                            template (a string, or a list of {name, template} when the GGUF
 *                            has named ones), model_max_length
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include "../format/gguf.h"
#include "../tokenizer/tokenizer_internal.h"


typedef struct {
    const edgellm_gguf *g;
    const char *in;            /* the GGUF's path, for messages                      */
    int64_t n_ctx;             /* model_max_length; 0: not written                   */
    edgellm_hf_outdir *d;
    edgellm_error *err;
} xctx;

static edgellm_status open_out(xctx *j, const char *name, edgellm_output **o)
{
    return edgellm_hf_outdir_open(j->d, name, o);
}
static edgellm_status done(xctx *j, const char *name, edgellm_output *o)
{
    return edgellm_hf_outdir_commit(j->d, name, o);
}

/* Token id's text (NUL-terminated copy in buf, cut to fit); "" when absent. */
static const char *token_text(const edgellm_gguf *g, int id, char *buf, size_t size)
{
    edgellm_str s;
    buf[0] = 0;
    if (id >= 0 && edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)id, &s)) {
        size_t n = s.len < size - 1 ? (size_t)s.len : size - 1;
        memcpy(buf, s.ptr, n);
        buf[n] = 0;
    }
    return buf;
}


typedef struct {
    const edgellm_gguf *g;
    uint64_t n;
    const int32_t *type;     /* may be NULL: all normal */
    const float *score;      /* may be NULL */
} ex_vocab;

static int vtype(const ex_vocab *v, uint64_t i)
{
    int32_t t = EDGELLM_TOKTYPE_NORMAL;
    if (v->type) memcpy(&t, (const uint8_t *)v->type + 4 * i, 4);
    return t;
}

static edgellm_status write_spm(xctx *j, const ex_vocab *v)
{
    const char **piece = edgellm_malloc((size_t)v->n * sizeof *piece);
    uint64_t *len = edgellm_malloc((size_t)v->n * sizeof *len);
    float *score = edgellm_calloc((size_t)v->n, sizeof *score);
    int32_t *type = edgellm_malloc((size_t)v->n * sizeof *type);
    edgellm_status rc = EDGELLM_OK;
    if (!piece || !len || !score || !type) rc = edgellm_fail_nomem(j->err, j->in);
    for (uint64_t i = 0; i < v->n && rc == EDGELLM_OK; i++) {
        edgellm_str s;
        edgellm_gguf_arr_str(v->g, "tokenizer.ggml.tokens", i, &s);
        piece[i] = s.ptr;
        len[i] = s.len;
        if (v->score) memcpy(&score[i], (const uint8_t *)v->score + 4 * i, 4);
        type[i] = vtype(v, i);
        if (type[i] < 1 || type[i] > 6) type[i] = 1;
    }
    bool asp = true;
    edgellm_gguf_get_bool(v->g, "tokenizer.ggml.add_space_prefix", &asp);
    edgellm_output *o = NULL;
    if (rc == EDGELLM_OK && (rc = open_out(j, "tokenizer.model", &o)) == EDGELLM_OK) {
        edgellm_spm_write(edgellm_output_stream(o), piece, len, score, type, (int)v->n, asp,
                          edgellm_hf_gguf_id(v->g, "tokenizer.ggml.unknown_token_id"),
                          edgellm_hf_gguf_id(v->g, "tokenizer.ggml.bos_token_id"),
                          edgellm_hf_gguf_id(v->g, "tokenizer.ggml.eos_token_id"),
                          edgellm_hf_gguf_id(v->g, "tokenizer.ggml.padding_token_id"));
        rc = done(j, "tokenizer.model", o);
    }
    edgellm_free(piece);
    edgellm_free(len);
    edgellm_free(score);
    edgellm_free(type);
    return rc;
}

/* "[PADi]" with i its own id: a filler the importer recreates from vocab_size. */
static bool is_filler(edgellm_str s, uint64_t id)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "[PAD%llu]", (unsigned long long)id);
    return s.len == (uint64_t)n && !memcmp(s.ptr, buf, (size_t)n);
}

static edgellm_status write_bpe(xctx *j, const ex_vocab *v)
{
    edgellm_str pre = {"default", 7};
    edgellm_gguf_get_str(v->g, "tokenizer.ggml.pre", &pre);
    char pre_name[64];
    snprintf(pre_name, sizeof pre_name, "%.*s", (int)EDGELLM_MIN(pre.len, 63), pre.ptr);
    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, "tokenizer.json", &o);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(o);
    fputs("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [", f);
    int n_added = 0;
    for (uint64_t i = 0; i < v->n; i++) {
        const int t = vtype(v, i);
        if (t != EDGELLM_TOKTYPE_CONTROL && t != EDGELLM_TOKTYPE_USER_DEFINED && t != EDGELLM_TOKTYPE_UNKNOWN) continue;
        edgellm_str s;
        edgellm_gguf_arr_str(v->g, "tokenizer.ggml.tokens", i, &s);
        fprintf(f, "%s\n    {\"id\": %llu, \"content\": ", n_added++ ? "," : "", (unsigned long long)i);
        edgellm_hf_json_put_str(f, s.ptr, (size_t)s.len);
        fprintf(
            f, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": %s, \"special\": %s}",
            t == EDGELLM_TOKTYPE_USER_DEFINED ? "true" : "false", t == EDGELLM_TOKTYPE_USER_DEFINED ? "false" : "true");
    }
    fputs("\n  ],\n  \"normalizer\": null,\n  \"pre_tokenizer\": ", f);
    if (!edgellm_hf_pretok_write(f, pre_name)) {
        edgellm_output_discard(o);
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED, "%s: pre-tokenizer '%s' has no tokenizer.json form", j->in,
                            pre_name);
    }
    /* BOS / EOS added around every sequence when the GGUF says so */
    bool add_bos = false, add_eos = false;
    edgellm_gguf_get_bool(v->g, "tokenizer.ggml.add_bos_token", &add_bos);
    edgellm_gguf_get_bool(v->g, "tokenizer.ggml.add_eos_token", &add_eos);
    const int bos = edgellm_hf_gguf_id(v->g, "tokenizer.ggml.bos_token_id"),
              eos = edgellm_hf_gguf_id(v->g, "tokenizer.ggml.eos_token_id");
    char bt[256], et[256];
    token_text(v->g, bos, bt, sizeof bt);
    token_text(v->g, eos, et, sizeof et);
    fputs(",\n  \"post_processor\": ", f);
    if ((add_bos && bos >= 0) || (add_eos && eos >= 0)) {
        fputs("{\"type\": \"TemplateProcessing\", \"single\": [", f);
        if (add_bos && bos >= 0) {
            fputs("{\"SpecialToken\": {\"id\": ", f);
            edgellm_hf_json_put_str(f, bt, strlen(bt));
            fputs(", \"type_id\": 0}}, ", f);
        }
        fputs("{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}", f);
        if (add_eos && eos >= 0) {
            fputs(", {\"SpecialToken\": {\"id\": ", f);
            edgellm_hf_json_put_str(f, et, strlen(et));
            fputs(", \"type_id\": 0}}", f);
        }
        fputs("], \"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", "
              "\"type_id\": 1}}], \"special_tokens\": {",
              f);
        int k = 0;
        const char *texts[2] = {add_bos && bos >= 0 ? bt : NULL,
                                add_eos && eos >= 0 && (!add_bos || eos != bos) ? et : NULL};
        const int ids[2] = {bos, eos};
        for (int q = 0; q < 2; q++) {
            if (!texts[q]) continue;
            fputs(k++ ? ", " : "", f);
            edgellm_hf_json_put_str(f, texts[q], strlen(texts[q]));
            fputs(": {\"id\": ", f);
            edgellm_hf_json_put_str(f, texts[q], strlen(texts[q]));
            fprintf(f, ", \"ids\": [%d], \"tokens\": [", ids[q]);
            edgellm_hf_json_put_str(f, texts[q], strlen(texts[q]));
            fputs("]}", f);
        }
        fputs("}}", f);
    } else {
        fputs("null", f);
    }
    fputs(",\n  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, "
          "\"use_regex\": true},\n",
          f);
    edgellm_pretok id = EDGELLM_PRETOK_DEFAULT;
    edgellm_pretok_from_name(pre_name, &id);
    fprintf(f,
            "  \"model\": {\n    \"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
            "\"continuing_subword_prefix\": null,"
            " \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": %s,\n"
            "    \"vocab\": {",
            id == EDGELLM_PRETOK_LLAMA3 ? "true" : "false");
    int n_out = 0;
    for (uint64_t i = 0; i < v->n; i++) {
        edgellm_str s;
        edgellm_gguf_arr_str(v->g, "tokenizer.ggml.tokens", i, &s);
        if (vtype(v, i) == EDGELLM_TOKTYPE_UNUSED && is_filler(s, i)) continue;
        fputs(n_out++ ? ", " : "", f);
        edgellm_hf_json_put_str(f, s.ptr, (size_t)s.len);
        fprintf(f, ": %llu", (unsigned long long)i);
    }
    fputs("},\n    \"merges\": [", f);
    uint64_t nm = 0;
    edgellm_gguf_vtype et2;
    if (edgellm_gguf_arr_info(v->g, "tokenizer.ggml.merges", &et2, &nm) && et2 == EDGELLM_GGUF_STRING)
        for (uint64_t i = 0; i < nm; i++) {
            edgellm_str s;
            edgellm_gguf_arr_str(v->g, "tokenizer.ggml.merges", i, &s);
            fputs(i ? ", " : "", f);
            edgellm_hf_json_put_str(f, s.ptr, (size_t)s.len);
        }
    fputs("]\n  }\n}\n", f);
    return done(j, "tokenizer.json", o);
}

static void put_token_entry(FILE *f, const edgellm_gguf *g, const char *key, const char *kv)
{
    char buf[512];
    const int id = edgellm_hf_gguf_id(g, kv);
    if (id < 0 || !*token_text(g, id, buf, sizeof buf)) return;
    fprintf(f, ",\n  \"%s\": ", key);
    edgellm_hf_json_put_str(f, buf, strlen(buf));
}

static edgellm_status write_tokenizer_config(xctx *j, bool spm)
{
    const edgellm_gguf *g = j->g;
    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, "tokenizer_config.json", &o);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(o);
    fprintf(f, "{\n  \"tokenizer_class\": \"%s\",\n  \"clean_up_tokenization_spaces\": false",
            spm ? "LlamaTokenizer" : "PreTrainedTokenizerFast");
    bool b;
    if (edgellm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b))
        fprintf(f, ",\n  \"add_bos_token\": %s", b ? "true" : "false");
    if (edgellm_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b))
        fprintf(f, ",\n  \"add_eos_token\": %s", b ? "true" : "false");
    put_token_entry(f, g, "bos_token", "tokenizer.ggml.bos_token_id");
    put_token_entry(f, g, "eos_token", "tokenizer.ggml.eos_token_id");
    put_token_entry(f, g, "unk_token", "tokenizer.ggml.unknown_token_id");
    put_token_entry(f, g, "pad_token", "tokenizer.ggml.padding_token_id");
    const int64_t n_ctx = j->n_ctx;
    if (n_ctx > 0) fprintf(f, ",\n  \"model_max_length\": %lld", (long long)n_ctx);
    edgellm_str s;
    edgellm_gguf_vtype et;
    uint64_t n_named = 0;
    const bool has_default = edgellm_gguf_get_str(g, "tokenizer.chat_template", &s);
    if (edgellm_gguf_arr_info(g, "tokenizer.chat_templates", &et, &n_named) && et == EDGELLM_GGUF_STRING && n_named) {
        fputs(",\n  \"chat_template\": [", f);
        int k = 0;
        if (has_default) {
            fputs("{\"name\": \"default\", \"template\": ", f);
            edgellm_hf_json_put_str(f, s.ptr, (size_t)s.len);
            fputs("}", f);
            k++;
        }
        for (uint64_t i = 0; i < n_named; i++) {
            edgellm_str nm, tx;
            char key[192];
            if (!edgellm_gguf_arr_str(g, "tokenizer.chat_templates", i, &nm) || nm.len > 120) continue;
            snprintf(key, sizeof key, "tokenizer.chat_template.%.*s", (int)nm.len, nm.ptr);
            if (!edgellm_gguf_get_str(g, key, &tx)) continue;
            fputs(k++ ? ", {\"name\": " : "{\"name\": ", f);
            edgellm_hf_json_put_str(f, nm.ptr, (size_t)nm.len);
            fputs(", \"template\": ", f);
            edgellm_hf_json_put_str(f, tx.ptr, (size_t)tx.len);
            fputs("}", f);
        }
        fputs("]", f);
    } else if (has_default) {
        fputs(",\n  \"chat_template\": ", f);
        edgellm_hf_json_put_str(f, s.ptr, (size_t)s.len);
    }
    fputs("\n}\n", f);
    return done(j, "tokenizer_config.json", o);
}

edgellm_status edgellm_hf_export_tokenizer(const edgellm_gguf *g, const char *in_path, int64_t n_ctx,
                                           edgellm_hf_outdir *d, const char **file)
{
    xctx ctx = {g, in_path, n_ctx, d, d->err}, *j = &ctx;
    *file = NULL;
    edgellm_str model;
    ex_vocab v = {.g = j->g};
    edgellm_gguf_vtype et;
    if (!edgellm_gguf_get_str(j->g, "tokenizer.ggml.model", &model) ||
        !edgellm_gguf_arr_info(j->g, "tokenizer.ggml.tokens", &et, &v.n) || et != EDGELLM_GGUF_STRING || !v.n)
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: no tokenizer (tokenizer.ggml.model and .tokens)", j->in);
    uint64_t cnt;
    if (edgellm_gguf_arr_info(j->g, "tokenizer.ggml.token_type", &et, &cnt) && cnt == v.n && et == EDGELLM_GGUF_INT32)
        v.type = edgellm_gguf_arr_data(j->g, "tokenizer.ggml.token_type");
    if (edgellm_gguf_arr_info(j->g, "tokenizer.ggml.scores", &et, &cnt) && cnt == v.n && et == EDGELLM_GGUF_FLOAT32)
        v.score = edgellm_gguf_arr_data(j->g, "tokenizer.ggml.scores");
    const bool spm = edgellm_str_eq(model, "llama");
    if (!spm && !edgellm_str_eq(model, "gpt2"))
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: tokenizer model '%.*s' cannot be exported (llama, gpt2)", j->in,
                            (int)EDGELLM_MIN(model.len, 32), model.ptr);
    *file = spm ? "tokenizer.model" : "tokenizer.json";
    edgellm_status rc = spm ? write_spm(j, &v) : write_bpe(j, &v);
    if (rc == EDGELLM_OK) rc = write_tokenizer_config(j, spm);
    return rc;
}

#endif /* EDGELLM_HAVE_CJSON */
