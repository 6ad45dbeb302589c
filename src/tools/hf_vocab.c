/*
 * hf_vocab.c — the vocabulary of a Hugging Face checkpoint as GGUF tokenizer.* keys.
 *
 * Sources, first found wins (as llama.cpp's converter tries them, convert_hf_to_gguf.py
 * LlamaModel.set_vocab: _set_vocab_sentencepiece, then the tokenizer.json vocabularies):
 *
 *  1. tokenizer.model (SentencePiece, hf_spm.c) -> tokenizer.ggml.model "llama": pieces,
 *     scores and types as the model file gives them; then added_tokens.json ({text: id},
 *     user-defined, score -1000) and tokenizer_config.json's added_tokens_decoder ({id:
 *     {content, special}}: control when special or when the text looks special, else
 *     user-defined with U+2581 turned back into spaces; score -1000) — the rules of
 *     llama.cpp's _create_vocab_sentencepiece (conversion/base.py).
 *  2. tokenizer.json, model "BPE" (huggingface/tokenizers' serialization):
 *     - byte-level BPE (a ByteLevel pre-tokenizer) -> "gpt2": vocab in id order, merges
 *       ("a b" strings, or ["a", "b"] pairs joined by a space, a space inside a part
 *       written U+0120 as llama.cpp's gguf-py vocab.py does), added tokens as control when
 *       "special" (or looking special) else user-defined, the pre-tokenizer identified
 *       from the pre_tokenizer section (hf_pretok.c);
 *     - SentencePiece-style BPE (byte_fallback, "▁" for spaces: a Metaspace pre-tokenizer
 *       or Prepend/Replace normalizers) -> "llama", with scores (below).
 *  3. vocab.json + merges.txt (transformers' GPT2Tokenizer files) -> "gpt2" with GPT-2's
 *     pre-tokenizer, which that class always applies (transformers
 *     models/gpt2/tokenization_gpt2.py).
 *
 * Scores of a SentencePiece-style tokenizer.json. SentencePiece's BPE trainer gives piece i
 * the score -(i - first) in the order it learnt them, and transformers' converter wrote the
 * merges sorted by the score of the piece they make (convert_slow_tokenizer.py,
 * SentencePieceExtractor), so the scores come back as -(id - first normal id) — except for
 * a piece whose first merge comes after the first merges of pieces with higher ids: its
 * score was lower than its id says. Those are the pieces a model's authors appended with
 * the score -1e9 (Llama 2's "▁▁", Phi-3's runs of "▁"), and they get -1e9 back. Phi-3's
 * tokenizer.json gives back its tokenizer.model's scores exactly this way.
 *
 * Special tokens: bos/eos/unk/pad named by tokenizer_config.json (a string or {"content"}),
 * else special_tokens_map.json, looked up among the added tokens, then the vocabulary; a
 * TemplateProcessing post-processor tells whether BOS / EOS are added, tokenizer_config's
 * add_bos_token / add_eos_token override it (gguf-py vocab.py SpecialVocab); config.json's
 * *_token_id fill what is still unknown, then the tokenizer.model's own ids.
 * generation_config.json's eos_token_id (an id or a list) sets the EOS when nothing else
 * did; further ids of its list become the EOT and EOM ids (which end generation).
 * Chat templates: tokenizer_config.json's chat_template — a string, or a list of {name,
 * template} whose "default" becomes tokenizer.chat_template and the others
 * tokenizer.chat_template.NAME with their names in tokenizer.chat_templates (gguf-py
 * gguf_writer.py add_chat_template) — else chat_template.jinja.
 * Every id must be below the vocabulary's size; texts must be UTF-8 and unique.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include "../format/gguf.h"
#include <math.h>
#include <stdlib.h>

#define T_NORMAL 1
#define T_UNKNOWN 2
#define T_CONTROL 3
#define T_USER 4
#define T_UNUSED 5
#define T_BYTE 6
#define MAX_VOCAB (1 << 24)

/* ------------------------------------------------------------ text -> id map ---- */

typedef struct {
    int32_t *slot;     /* [cap] id + 1, 0 empty */
    size_t cap;
    const edgellm_hf_vocab *v;
} text_map;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int32_t map_find(const text_map *m, const char *s, size_t n)
{
    if (!m->cap) return -1;
    for (size_t i = hash_bytes(s, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const int32_t e = m->slot[i];
        if (!e) return -1;
        const int32_t id = e - 1;
        if (m->v->len[id] == n && !memcmp(m->v->text[id], s, n)) return id;
    }
}

/* Build over the texts of v; *dup receives an id whose text an earlier id has (-1: none). */
static bool map_build(text_map *m, const edgellm_hf_vocab *v, int32_t *dup)
{
    m->v = v;
    m->cap = 16;
    while (m->cap < (size_t)v->n * 2) m->cap *= 2;
    if (!(m->slot = edgellm_calloc(m->cap, sizeof *m->slot))) return false;
    *dup = -1;
    for (int32_t id = 0; id < v->n; id++) {
        size_t i = hash_bytes(v->text[id], v->len[id]) & (m->cap - 1);
        for (; m->slot[i]; i = (i + 1) & (m->cap - 1)) {
            const int32_t o = m->slot[i] - 1;
            if (v->len[o] == v->len[id] && !memcmp(v->text[o], v->text[id], v->len[id])) break;
        }
        if (m->slot[i]) { if (*dup < 0) *dup = id; continue; }
        m->slot[i] = id + 1;
    }
    return true;
}

static void map_free(text_map *m) { edgellm_free(m->slot); m->slot = NULL; m->cap = 0; }

/* ---------------------------------------------------------------- context ---- */

typedef struct {
    const char *dir;
    edgellm_error *err;
    edgellm_hf_vocab *v;
    int n_model;                 /* the model's vocab_size (0: unknown)                 */
    const edgellm_hf_config *cfg;
    cJSON *tj;                   /* tokenizer.json (NULL: absent)                      */
    cJSON *tc;                   /* tokenizer_config.json                               */
    cJSON *sm;                   /* special_tokens_map.json                             */
    char tj_path[4096], tc_path[4096];
    text_map map;
    int model_ids[4];            /* tokenizer.model's bos, eos, unk, pad ids (-1: none)  */
} vctx;

static int find_token(vctx *x, const char *text);
static const char *special_text(vctx *x, const char *kind);

void edgellm_hf_vocab_free(edgellm_hf_vocab *v)
{
    if (!v) return;
    for (int i = 0; v->text && i < v->n; i++) edgellm_free(v->text[i]);
    for (int i = 0; v->merges && i < v->n_merges; i++) edgellm_free(v->merges[i]);
    for (int i = 0; i < v->n_tmpl; i++) { edgellm_free(v->tmpl_name[i]); edgellm_free(v->tmpl_text[i]); }
    edgellm_free(v->text);
    edgellm_free(v->len);
    edgellm_free(v->score);
    edgellm_free(v->type);
    edgellm_free(v->merges);
    edgellm_free(v->tmpl_name);
    edgellm_free(v->tmpl_text);
    edgellm_free(v->chat_template);
    memset(v, 0, sizeof *v);
}

/* Room for n tokens, every one "[PADi]" (unused; score -10000 for SentencePiece), as
 * llama.cpp fills ids that no token claims. */
static edgellm_status alloc_tokens(vctx *x, int n, const char *what)
{
    edgellm_hf_vocab *v = x->v;
    if (n <= 0 || n > MAX_VOCAB) return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: %d tokens", what, n);
    v->text = edgellm_calloc((size_t)n, sizeof *v->text);
    v->len = edgellm_calloc((size_t)n, sizeof *v->len);
    v->score = edgellm_calloc((size_t)n, sizeof *v->score);
    v->type = edgellm_calloc((size_t)n, sizeof *v->type);
    if (!v->text || !v->len || !v->score || !v->type) return edgellm_fail_nomem(x->err, what);
    v->n = n;
    for (int i = 0; i < n; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        if (!(v->text[i] = edgellm_strdup(pad))) return edgellm_fail_nomem(x->err, what);
        v->len[i] = strlen(pad);
        v->score[i] = -10000.0f;
        v->type[i] = T_UNUSED;
    }
    return EDGELLM_OK;
}

static edgellm_status set_text(vctx *x, int id, const char *s, size_t n, const char *what)
{
    if (!edgellm_hf_utf8_ok(s, n))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: token %d is not UTF-8", what, id);
    char *c = edgellm_strndup(s, n);
    if (!c) return edgellm_fail_nomem(x->err, what);
    edgellm_free(x->v->text[id]);
    x->v->text[id] = c;
    x->v->len[id] = n;
    return EDGELLM_OK;
}

/* llama.cpp's does_token_look_special (conversion/base.py): texts some models mark
 * non-special that are control tokens all the same. */
static bool looks_special(const char *t)
{
    const size_t n = strlen(t);
    if (!strcmp(t, "<pad>") || !strcmp(t, "<mask>") || !strcmp(t, "<2mass>") || !strcmp(t, "[@BOS@]")) return true;
    if (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) return true;
    if (n >= 8 && !strncmp(t, "<\xef\xbd\x9c", 4) && !strcmp(t + n - 4, "\xef\xbd\x9c>")) return true; /* <｜...｜> */
    return n >= 8 && !strncmp(t, "<unused", 7) && t[n - 1] == '>';
}

/* An added token: control or user-defined; user-defined texts have U+2581 back as spaces
 * (llama.cpp's "pre-normalize user-defined spaces"). */
static edgellm_status add_special(vctx *x, int id, const char *content, bool special, const char *what)
{
    edgellm_status rc;
    if (id < 0 || id >= x->v->n)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: added token %d is outside the %d-token vocabulary", what,
                            id, x->v->n);
    if (special || looks_special(content)) {
        if ((rc = set_text(x, id, content, strlen(content), what))) return rc;
        x->v->type[id] = T_CONTROL;
    } else {
        size_t n = strlen(content), o = 0;
        char *s = edgellm_malloc(n + 1);
        if (!s) return edgellm_fail_nomem(x->err, what);
        for (size_t i = 0; i < n; i++) {
            if (i + 3 <= n && !memcmp(content + i, "\xe2\x96\x81", 3)) { s[o++] = ' '; i += 2; }
            else s[o++] = content[i];
        }
        rc = set_text(x, id, s, o, what);
        edgellm_free(s);
        if (rc) return rc;
        x->v->type[id] = T_USER;
    }
    if (x->v->spm) x->v->score[id] = -1000.0f;
    return EDGELLM_OK;
}

/* The text of a special-token entry: "text" or {"content": "text"}; NULL otherwise. */
static const char *entry_text(const cJSON *e)
{
    if (cJSON_IsString(e)) return e->valuestring;
    const cJSON *c = edgellm_hf_get(e, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* --------------------------------------------------------- tokenizer.model ---- */

static edgellm_status load_spm(vctx *x, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    edgellm_spm_model m;
    edgellm_status rc = edgellm_hf_read_file(path, (size_t)1 << 30, &buf, &len, x->err);
    if (rc != EDGELLM_OK) return rc;
    if ((rc = edgellm_spm_parse((const uint8_t *)buf, len, path, &m, x->err)) != EDGELLM_OK) {
        edgellm_free(buf);
        return rc;
    }
    edgellm_hf_vocab *v = x->v;
    v->spm = true;
    v->pre = "default";
    snprintf(v->source, sizeof v->source, "tokenizer.model");
    if (x->n_model && m.n > x->n_model)
        rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: %d pieces, more than the model's vocab_size %d", path, m.n,
                          x->n_model);
    else rc = alloc_tokens(x, x->n_model ? x->n_model : m.n, path);
    for (int i = 0; i < m.n && rc == EDGELLM_OK; i++) {
        rc = set_text(x, i, m.piece[i], m.len[i], path);
        v->score[i] = m.score[i];
        v->type[i] = m.type[i];
    }
    if (rc == EDGELLM_OK && !m.add_dummy_prefix) v->add_space_prefix = 0;
    /* the model file's own special ids: the last resort (read_specials) */
    const int mids[4] = {m.bos_id, m.eos_id, m.unk_id, m.pad_id};
    for (int k = 0; k < 4; k++) x->model_ids[k] = mids[k] >= 0 && mids[k] < m.n ? mids[k] : -1;
    edgellm_spm_free(&m);
    edgellm_free(buf);
    if (rc != EDGELLM_OK) return rc;

    /* added_tokens.json: {"text": id} */
    char p[4096];
    if (edgellm_hf_path(p, sizeof p, x->dir, "added_tokens.json") && edgellm_hf_has_file(x->dir, "added_tokens.json")) {
        cJSON *a = NULL;
        if ((rc = edgellm_hf_json_load(p, &a, x->err)) != EDGELLM_OK) return rc;
        for (const cJSON *e = cJSON_IsObject(a) ? a->child : NULL; e && rc == EDGELLM_OK; e = e->next) {
            int64_t id;
            if (!edgellm_hf_json_int(e, 0, INT32_MAX, &id) || id >= v->n)
                rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"%.100s\" has no id below %d", p, e->string, v->n);
            else if ((rc = set_text(x, (int)id, e->string, strlen(e->string), p)) == EDGELLM_OK) {
                v->type[id] = T_USER;
                v->score[id] = -1000.0f;
            }
        }
        cJSON_Delete(a);
        if (rc != EDGELLM_OK) return rc;
    }
    /* tokenizer_config.json: added_tokens_decoder {"id": {"content", "special"}} */
    const cJSON *atd = edgellm_hf_get(x->tc, "added_tokens_decoder");
    for (const cJSON *e = cJSON_IsObject(atd) ? atd->child : NULL; e && rc == EDGELLM_OK; e = e->next) {
        char *end;
        const long id = strtol(e->string, &end, 10);
        const char *content = entry_text(e);
        if (*end || end == e->string || id < 0 || id > INT32_MAX || !content)
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: added_tokens_decoder entry \"%.40s\" is not {id: "
                                "{\"content\": ...}}", x->tc_path, e->string);
        rc = add_special(x, (int)id, content, cJSON_IsTrue(edgellm_hf_get(e, "special")), x->tc_path);
    }
    return rc;
}

/* ---------------------------------------------------------- tokenizer.json ---- */

/* A merges entry as "left right" into *out (edgellm_malloc'd). */
static edgellm_status merge_text(vctx *x, const cJSON *e, int r, char **out)
{
    *out = NULL;
    if (cJSON_IsString(e)) {
        const char *s = e->valuestring, *sp = s[0] ? strchr(s + 1, ' ') : NULL;
        if (!sp || !sp[1] || strchr(sp + 1, ' '))
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT,
                                "%s: merges[%d] \"%.60s\" is not two parts separated by one space",
                                x->tj_path, r, s);
        return (*out = edgellm_strdup(s)) ? EDGELLM_OK : edgellm_fail_nomem(x->err, x->tj_path);
    }
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(e->child) ||
        !cJSON_IsString(e->child->next) || !e->child->valuestring[0] || !e->child->next->valuestring[0])
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: merges[%d] is neither \"a b\" nor [\"a\", \"b\"]",
                            x->tj_path, r);
    /* pairs: join with a space; a space inside a part becomes U+0120 (2 bytes) */
    const char *a = e->child->valuestring, *b = e->child->next->valuestring;
    char *c = edgellm_malloc(2 * (strlen(a) + strlen(b)) + 2), *o = c;
    if (!c) return edgellm_fail_nomem(x->err, x->tj_path);
    for (const char *part = a;; part = b) {
        for (const char *q = part; *q; q++) {
            if (*q == ' ') { *o++ = (char)0xc4; *o++ = (char)0xa0; }
            else *o++ = *q;
        }
        if (part == b) break;
        *o++ = ' ';
    }
    *o = 0;
    *out = c;
    return EDGELLM_OK;
}

/* Read and check the merges: each part and their concatenation is a token (the rule of
 * huggingface/tokenizers' BPE builder). first_rank (may be NULL): per token, the rank of
 * the first merge making it (INT32_MAX: none). */
static edgellm_status load_merges(vctx *x, const cJSON *merges, int32_t *first_rank)
{
    edgellm_hf_vocab *v = x->v;
    const int n = cJSON_IsArray(merges) ? cJSON_GetArraySize(merges) : 0;
    if (merges && !cJSON_IsArray(merges) && !cJSON_IsNull(merges))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: model.merges is not a list", x->tj_path);
    if (!(v->merges = edgellm_calloc(n ? (size_t)n : 1, sizeof *v->merges)))
        return edgellm_fail_nomem(x->err, x->tj_path);
    char *buf = NULL;
    size_t cap = 0;
    int r = 0;
    for (const cJSON *e = n ? merges->child : NULL; e; e = e->next, r++) {
        char *m;
        edgellm_status rc = merge_text(x, e, r, &m);
        if (rc != EDGELLM_OK) { edgellm_free(buf); return rc; }
        v->merges[v->n_merges++] = m;
        const char *sp = strchr(m + 1, ' ');
        const size_t ln = (size_t)(sp - m), rn = strlen(sp + 1);
        if (ln + rn > cap) {
            char *nb = edgellm_realloc(buf, ln + rn);
            if (!nb) { edgellm_free(buf); return edgellm_fail_nomem(x->err, x->tj_path); }
            buf = nb;
            cap = ln + rn;
        }
        memcpy(buf, m, ln);
        memcpy(buf + ln, sp + 1, rn);
        const int32_t l = map_find(&x->map, m, ln), rr = map_find(&x->map, sp + 1, rn),
                      t = map_find(&x->map, buf, ln + rn);
        if (l < 0 || rr < 0 || t < 0) {
            edgellm_free(buf);
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: merges[%d] \"%.100s\": %s is not in the vocabulary",
                                x->tj_path, r, m,
                                l < 0    ? "the left part"
                                : rr < 0 ? "the right part"
                                         : "the merged token");
        }
        if (first_rank && first_rank[t] == INT32_MAX) first_rank[t] = r;
    }
    edgellm_free(buf);
    return EDGELLM_OK;
}

/* SentencePiece scores back from the merge order (the rule in the header comment). */
static void spm_scores(vctx *x, const int32_t *first_rank, const bool *added)
{
    edgellm_hf_vocab *v = x->v;
    int base = -1;
    for (int i = 0; i < v->n && base < 0; i++)
        if (v->type[i] == T_NORMAL && !added[i]) base = i;
    if (base < 0) return;
    int32_t min_after = INT32_MAX;   /* smallest first rank among higher ids */
    for (int i = v->n - 1; i >= base; i--) {
        if (v->type[i] != T_NORMAL || added[i]) continue;
        v->score[i] = -(float)(i - base);
        if (first_rank[i] == INT32_MAX) continue;
        if (first_rank[i] > min_after) v->score[i] = -1e9f;   /* made later than its id says */
        else min_after = first_rank[i];
    }
}

static bool is_byte_piece(const char *s, size_t n)
{
    static const char H[] = "0123456789ABCDEF";
    return n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && s[3] && s[4] && strchr(H, s[3]) && strchr(H, s[4]);
}

static bool is_metaspace_replace(const cJSON *n) /* {"type": "Replace", "pattern": {"String": " "}, "content": "▁"} */
{
    const cJSON *t = edgellm_hf_get(n, "type"), *p = edgellm_hf_get(edgellm_hf_get(n, "pattern"), "String");
    const cJSON *c = edgellm_hf_get(n, "content");
    return cJSON_IsString(t) && !strcmp(t->valuestring, "Replace") && cJSON_IsString(p) &&
           !strcmp(p->valuestring, " ") && cJSON_IsString(c) && !strcmp(c->valuestring, "\xe2\x96\x81");
}

static bool is_prepend(const cJSON *n)   /* {"type": "Prepend", "prepend": "▁"} */
{
    const cJSON *t = edgellm_hf_get(n, "type"), *p = edgellm_hf_get(n, "prepend");
    return cJSON_IsString(t) && !strcmp(t->valuestring, "Prepend") && cJSON_IsString(p) &&
           !strcmp(p->valuestring, "\xe2\x96\x81");
}

/* Whether the file describes SentencePiece-style text handling ("▁" for spaces); sets
 * add_space_prefix. EDGELLM_ERR_UNSUPPORTED for other normalizers. */
static edgellm_status spm_style(vctx *x, const cJSON *norm, const cJSON *pre, bool *yes)
{
    *yes = false;
    bool replace = false, prepend = false;
    if (norm && !cJSON_IsNull(norm)) {
        const cJSON *t = edgellm_hf_get(norm, "type");
        const cJSON *list =
            cJSON_IsString(t) && !strcmp(t->valuestring, "Sequence") ? edgellm_hf_get(norm, "normalizers") : NULL;
        for (const cJSON *e = list ? list->child : norm; e; e = list ? e->next : NULL) {
            if (is_metaspace_replace(e)) replace = true;
            else if (is_prepend(e)) prepend = true;
            else return EDGELLM_OK;   /* not SentencePiece's: the byte-level checks say what is wrong */
        }
    }
    const cJSON *pt = edgellm_hf_get(pre, "type");
    if (cJSON_IsString(pt) && !strcmp(pt->valuestring, "Metaspace")) {
        const cJSON *rep = edgellm_hf_get(pre, "replacement"), *ps = edgellm_hf_get(pre, "prepend_scheme");
        if (!cJSON_IsString(rep) || strcmp(rep->valuestring, "\xe2\x96\x81"))
            return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED,
                                "%s: a Metaspace pre-tokenizer whose replacement is not U+2581",
                                x->tj_path);
        replace = true;
        prepend = cJSON_IsString(ps) ? strcmp(ps->valuestring, "never") != 0
                                     : !cJSON_IsFalse(edgellm_hf_get(pre, "add_prefix_space"));
    } else if (pre && !cJSON_IsNull(pre)) {
        return EDGELLM_OK;
    }
    if (!replace) return EDGELLM_OK;
    *yes = true;
    x->v->add_space_prefix = prepend ? -1 : 0;   /* written only when false: true is the GGUF default */
    return EDGELLM_OK;
}

static edgellm_status load_tokenizer_json(vctx *x)
{
    edgellm_hf_vocab *v = x->v;
    edgellm_status rc;
    const cJSON *model = edgellm_hf_get(x->tj, "model");
    const cJSON *mt = edgellm_hf_get(model, "type"), *vocab = edgellm_hf_get(model, "vocab");
    if (!cJSON_IsObject(model)) return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: no \"model\" object", x->tj_path);
    if (cJSON_IsString(mt) && strcmp(mt->valuestring, "BPE"))
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: a %.32s tokenizer; edgellm converts BPE tokenizers",
                            x->tj_path, mt->valuestring);
    if (!cJSON_IsObject(vocab))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: no model.vocab object", x->tj_path);
    if (edgellm_hf_json_dup_key(vocab))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: token \"%.100s\" appears twice in model.vocab", x->tj_path,
                            edgellm_hf_json_dup_key(vocab));
    const cJSON *added = edgellm_hf_get(x->tj, "added_tokens");
    const cJSON *norm = edgellm_hf_get(x->tj, "normalizer"), *pre = edgellm_hf_get(x->tj, "pre_tokenizer");
    bool spm = false;
    if ((rc = spm_style(x, norm, pre, &spm))) return rc;
    v->spm = spm;
    snprintf(v->source, sizeof v->source, "tokenizer.json");
    if (!spm && (rc = edgellm_hf_pretok_identify(pre, norm, x->tj_path, &v->pre, x->err))) return rc;
    if (spm) v->pre = "default";

    /* size: the highest id + 1, or the model's vocab_size */
    int64_t max_id = -1, id;
    for (const cJSON *e = vocab->child; e; e = e->next) {
        if (!edgellm_hf_json_int(e, 0, MAX_VOCAB - 1, &id))
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: token \"%.100s\" has no id in [0, %d)", x->tj_path,
                                e->string, MAX_VOCAB);
        if (id > max_id) max_id = id;
    }
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e; e = e->next) {
        if (!edgellm_hf_json_int(edgellm_hf_get(e, "id"), 0, MAX_VOCAB - 1, &id) || !entry_text(e))
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: an added token without id or content", x->tj_path);
        if (id > max_id) max_id = id;
    }
    if (x->n_model && max_id >= x->n_model)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: token id %lld is not below the model's vocab_size %d",
                            x->tj_path, (long long)max_id, x->n_model);
    if ((rc = alloc_tokens(x, x->n_model ? x->n_model : (int)max_id + 1, x->tj_path))) return rc;
    bool *is_added = edgellm_calloc((size_t)v->n, 1), *seen = edgellm_calloc((size_t)v->n, 1);
    int32_t *first_rank = edgellm_malloc((size_t)v->n * sizeof *first_rank);
    if (!is_added || !seen || !first_rank) { rc = edgellm_fail_nomem(x->err, x->tj_path); goto done; }
    for (int i = 0; i < v->n; i++) first_rank[i] = INT32_MAX;
    const cJSON *unk = edgellm_hf_get(model, "unk_token");
    for (const cJSON *e = vocab->child; e && rc == EDGELLM_OK; e = e->next) {
        edgellm_hf_json_int(e, 0, MAX_VOCAB - 1, &id);
        if (seen[id]) {
            rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: id %lld is given to two tokens", x->tj_path,
                              (long long)id);
            break;
        }
        seen[id] = true;
        rc = set_text(x, (int)id, e->string, strlen(e->string), x->tj_path);
        v->type[id] = T_NORMAL;
        v->score[id] = 0;
        if (spm && is_byte_piece(e->string, strlen(e->string))) v->type[id] = T_BYTE;
        if (spm && cJSON_IsString(unk) && !strcmp(unk->valuestring, e->string)) v->type[id] = T_UNKNOWN;
    }
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e && rc == EDGELLM_OK; e = e->next) {
        edgellm_hf_json_int(edgellm_hf_get(e, "id"), 0, MAX_VOCAB - 1, &id);
        is_added[id] = true;
        rc = add_special(x, (int)id, entry_text(e), cJSON_IsTrue(edgellm_hf_get(e, "special")), x->tj_path);
    }
    int32_t dup;
    if (rc == EDGELLM_OK && !map_build(&x->map, v, &dup)) rc = edgellm_fail_nomem(x->err, x->tj_path);
    else if (rc == EDGELLM_OK && dup >= 0)
        rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: tokens %d and %d have the same text \"%.60s\"", x->tj_path,
                          map_find(&x->map, v->text[dup], v->len[dup]), dup, v->text[dup]);
    if (rc == EDGELLM_OK) rc = load_merges(x, edgellm_hf_get(model, "merges"), first_rank);
    if (rc == EDGELLM_OK && !spm && v->n_merges == 0)
        rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: a byte-level BPE vocabulary without merges", x->tj_path);
    if (rc == EDGELLM_OK && spm) {
        spm_scores(x, first_rank, is_added);
        /* SentencePiece vocabularies have no merges in GGUF: scores carry them */
        for (int i = 0; i < v->n_merges; i++) edgellm_free(v->merges[i]);
        v->n_merges = 0;
    }
    if (rc == EDGELLM_OK && cJSON_IsString(unk) && v->unk < 0)
        v->unk = map_find(&x->map, unk->valuestring, strlen(unk->valuestring));
done:
    edgellm_free(is_added);
    edgellm_free(seen);
    edgellm_free(first_rank);
    return rc;
}

/* ------------------------------------------------------ vocab.json + merges.txt ---- */

static edgellm_status load_slow_gpt2(vctx *x)
{
    char vp[4096], mp[4096];
    edgellm_hf_vocab *v = x->v;
    edgellm_status rc;
    cJSON *vocab = NULL, *merges = NULL;
    char *mtext = NULL;
    size_t mlen = 0;
    if (!edgellm_hf_path(vp, sizeof vp, x->dir, "vocab.json") || !edgellm_hf_path(mp, sizeof mp, x->dir, "merges.txt"))
        return edgellm_fail(x->err, EDGELLM_ERR_IO, "%s: path too long", x->dir);
    if ((rc = edgellm_hf_json_load(vp, &vocab, x->err)) ||
        (rc = edgellm_hf_read_file(mp, EDGELLM_HF_MAX_JSON_BYTES, &mtext, &mlen, x->err)))
        goto done;
    /* the same structures as a tokenizer.json: model {vocab, merges}, GPT-2's ByteLevel */
    if (!(x->tj = cJSON_CreateObject()) || !(merges = cJSON_CreateArray())) {
        rc = edgellm_fail_nomem(x->err, mp);
        goto done;
    }
    for (char *line = mtext, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = 0;
        if (!n || (line == mtext && !strncmp(line, "#version", 8))) continue;
        cJSON *s = cJSON_CreateString(line);
        if (!s || !cJSON_AddItemToArray(merges, s)) { cJSON_Delete(s); rc = edgellm_fail_nomem(x->err, mp); goto done; }
    }
    cJSON *model = cJSON_AddObjectToObject(x->tj, "model"), *pre = cJSON_AddObjectToObject(x->tj, "pre_tokenizer");
    if (!model || !pre || !cJSON_AddStringToObject(model, "type", "BPE") ||
        !cJSON_AddStringToObject(pre, "type", "ByteLevel")) {
        rc = edgellm_fail_nomem(x->err, mp);
        goto done;
    }
    if (!cJSON_AddItemToObject(model, "vocab", vocab)) { rc = edgellm_fail_nomem(x->err, vp); goto done; }
    vocab = NULL;
    if (!cJSON_AddItemToObject(model, "merges", merges)) { rc = edgellm_fail_nomem(x->err, mp); goto done; }
    merges = NULL;
    snprintf(x->tj_path, sizeof x->tj_path, "%s", vp);
    if ((rc = load_tokenizer_json(x)) != EDGELLM_OK) goto done;
    snprintf(v->source, sizeof v->source, "vocab.json + merges.txt");
    /* GPT2Tokenizer registers the tokens its special-token entries name as special */
    for (int k = 0; k < 4; k++) {
        static const char *const kinds[4] = {"bos", "eos", "unk", "pad"};
        const int id = find_token(x, special_text(x, kinds[k]));
        if (id >= 0) v->type[id] = T_CONTROL;
    }
done:
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    edgellm_free(mtext);
    return rc;
}

/* ------------------------------------------------------------ special tokens ---- */

static int find_token(vctx *x, const char *text)
{
    if (!text) return -1;
    const cJSON *added = edgellm_hf_get(x->tj, "added_tokens");
    for (const cJSON *e = cJSON_IsArray(added) ? added->child : NULL; e; e = e->next) {
        const char *c = entry_text(e);
        int64_t id;
        if (c && !strcmp(c, text) && edgellm_hf_json_int(edgellm_hf_get(e, "id"), 0, x->v->n - 1, &id)) return (int)id;
    }
    if (!x->map.cap) {
        int32_t dup;
        if (!map_build(&x->map, x->v, &dup)) return -1;
    }
    return map_find(&x->map, text, strlen(text));
}

/* The text tokenizer_config.json (or special_tokens_map.json) gives for "<kind>_token". */
static const char *special_text(vctx *x, const char *kind)
{
    char key[32];
    snprintf(key, sizeof key, "%s_token", kind);
    const char *t = entry_text(edgellm_hf_get(x->tc, key));
    return t ? t : entry_text(edgellm_hf_get(x->sm, key));
}

/* add_bos/add_eos from a TemplateProcessing post-processor (also inside a Sequence). */
static void read_post_processor(vctx *x, int *tmpl_bos, int *tmpl_eos)
{
    const cJSON *pp = edgellm_hf_get(x->tj, "post_processor");
    const cJSON *procs = edgellm_hf_get(pp, "processors");
    for (const cJSON *p = cJSON_IsArray(procs) ? procs->child : pp; p; p = cJSON_IsArray(procs) ? p->next : NULL) {
        const cJSON *t = edgellm_hf_get(p, "type"), *single = edgellm_hf_get(p, "single");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "TemplateProcessing") || !cJSON_IsArray(single)) continue;
        const int n = cJSON_GetArraySize(single);
        const cJSON *first = cJSON_GetArrayItem(single, 0), *last = cJSON_GetArrayItem(single, n - 1);
        const cJSON *fid = edgellm_hf_get(edgellm_hf_get(first, "SpecialToken"), "id");
        const cJSON *lid = edgellm_hf_get(edgellm_hf_get(last, "SpecialToken"), "id");
        if (n > 1) {
            *tmpl_bos = cJSON_IsString(fid) ? find_token(x, fid->valuestring) : -1;
            *tmpl_eos = cJSON_IsString(lid) ? find_token(x, lid->valuestring) : -1;
            x->v->add_bos = *tmpl_bos >= 0;
            x->v->add_eos = *tmpl_eos >= 0;
        }
    }
}

static edgellm_status check_id(vctx *x, int *id, const char *what)
{
    if (*id >= x->v->n)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT,
                            "%s: the %s token id %d is not below the vocabulary's %d tokens", x->dir, what, *id,
                            x->v->n);
    return EDGELLM_OK;
}

static edgellm_status read_specials(vctx *x)
{
    edgellm_hf_vocab *v = x->v;
    int *fields[4] = {&v->bos, &v->eos, &v->unk, &v->pad};
    const char *kinds[4] = {"bos", "eos", "unk", "pad"};
    for (int k = 0; k < 4; k++) {
        const char *t = special_text(x, kinds[k]);
        if (t && *fields[k] < 0) *fields[k] = find_token(x, t);
    }
    int tmpl_bos = -1, tmpl_eos = -1;
    read_post_processor(x, &tmpl_bos, &tmpl_eos);
    if (!x->tc) {   /* without tokenizer_config.json the template's tokens are BOS and EOS */
        if (v->bos < 0) v->bos = tmpl_bos;
        if (v->eos < 0 && tmpl_eos >= 0) v->eos = tmpl_eos;
    }
    const cJSON *ab = edgellm_hf_get(x->tc, "add_bos_token"), *ae = edgellm_hf_get(x->tc, "add_eos_token");
    if (cJSON_IsBool(ab)) v->add_bos = cJSON_IsTrue(ab);
    if (cJSON_IsBool(ae)) v->add_eos = cJSON_IsTrue(ae);
    if (x->cfg) {
        if (v->bos < 0) v->bos = x->cfg->bos_id;
        if (v->eos < 0) v->eos = x->cfg->eos_id;
        if (v->pad < 0) v->pad = x->cfg->pad_id;
    }
    for (int k = 0; k < 4; k++)
        if (*fields[k] < 0) *fields[k] = x->model_ids[k];
    /* generation_config.json: the ids that end generation */
    for (int i = 0; x->cfg && i < x->cfg->n_gen_eos; i++) {
        const int id = x->cfg->gen_eos[i];
        if (v->eos < 0) v->eos = id;
        else if (id == v->eos || id == v->eot || id == v->eom) continue;
        else if (v->eot < 0) v->eot = id;
        else if (v->eom < 0) v->eom = id;
    }
    edgellm_status rc;
    if ((rc = check_id(x, &v->bos, "BOS")) || (rc = check_id(x, &v->eos, "EOS")) ||
        (rc = check_id(x, &v->unk, "unknown")) || (rc = check_id(x, &v->pad, "padding")) ||
        (rc = check_id(x, &v->eot, "end-of-turn")) || (rc = check_id(x, &v->eom, "end-of-message")))
        return rc;
    return EDGELLM_OK;
}

/* chat_template of tokenizer_config.json (string or named list), else chat_template.jinja. */
static edgellm_status read_templates(vctx *x)
{
    edgellm_hf_vocab *v = x->v;
    const cJSON *ct = edgellm_hf_get(x->tc, "chat_template");
    if (cJSON_IsString(ct))
        return (v->chat_template = edgellm_strdup(ct->valuestring)) ? EDGELLM_OK
                                                                    : edgellm_fail_nomem(x->err, x->tc_path);
    if (cJSON_IsArray(ct)) {
        const int n = cJSON_GetArraySize(ct);
        v->tmpl_name = edgellm_calloc((size_t)n + 1, sizeof *v->tmpl_name);
        v->tmpl_text = edgellm_calloc((size_t)n + 1, sizeof *v->tmpl_text);
        if (!v->tmpl_name || !v->tmpl_text) return edgellm_fail_nomem(x->err, x->tc_path);
        for (const cJSON *e = ct->child; e; e = e->next) {
            const cJSON *nm = edgellm_hf_get(e, "name"), *tx = edgellm_hf_get(e, "template");
            if (!cJSON_IsString(nm) || !cJSON_IsString(tx) || !nm->valuestring[0])
                return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: chat_template list entries need \"name\" and "
                                    "\"template\" strings", x->tc_path);
            if (!strcmp(nm->valuestring, "default")) {
                edgellm_free(v->chat_template);
                if (!(v->chat_template = edgellm_strdup(tx->valuestring)))
                    return edgellm_fail_nomem(x->err, x->tc_path);
                continue;
            }
            char *name = edgellm_strdup(nm->valuestring), *text = edgellm_strdup(tx->valuestring);
            if (!name || !text) {
                edgellm_free(name);
                edgellm_free(text);
                return edgellm_fail_nomem(x->err, x->tc_path);
            }
            for (char *c = name; *c; c++)   /* gguf-py keeps [A-Za-z0-9] and writes '_' for the rest */
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
            v->tmpl_name[v->n_tmpl] = name;
            v->tmpl_text[v->n_tmpl++] = text;
        }
        return EDGELLM_OK;
    }
    if (ct && !cJSON_IsNull(ct))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: chat_template is neither a string nor a list", x->tc_path);
    if (edgellm_hf_has_file(x->dir, "chat_template.jinja")) {
        char p[4096];
        size_t len;
        if (!edgellm_hf_path(p, sizeof p, x->dir, "chat_template.jinja"))
            return edgellm_fail(x->err, EDGELLM_ERR_IO, "%s: path too long", x->dir);
        return edgellm_hf_read_file(p, (size_t)16 << 20, &v->chat_template, &len, x->err);
    }
    return EDGELLM_OK;
}

static edgellm_status load_optional_json(vctx *x, const char *name, char *path, size_t size, cJSON **out)
{
    *out = NULL;
    if (!edgellm_hf_path(path, size, x->dir, name))
        return edgellm_fail(x->err, EDGELLM_ERR_IO, "%s: path too long", x->dir);
    if (!edgellm_hf_has_file(x->dir, name)) return EDGELLM_OK;
    edgellm_status rc = edgellm_hf_json_load(path, out, x->err);
    if (rc == EDGELLM_OK && !cJSON_IsObject(*out))
        rc = edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: not a JSON object", path);
    return rc;
}

edgellm_status edgellm_hf_vocab_load(const char *dir, int n_vocab, const edgellm_hf_config *c, edgellm_hf_vocab *v,
                                     edgellm_error *err)
{
    vctx x = {.dir = dir, .err = err, .v = v, .n_model = n_vocab > 0 ? n_vocab : 0, .cfg = c,
              .model_ids = {-1, -1, -1, -1}};
    char sp[4096], mp[4096];
    memset(v, 0, sizeof *v);
    v->bos = v->eos = v->unk = v->pad = v->eot = v->eom = -1;
    v->add_bos = v->add_eos = v->add_space_prefix = -1;
    edgellm_status rc;
    if ((rc = load_optional_json(&x, "tokenizer_config.json", x.tc_path, sizeof x.tc_path, &x.tc)) ||
        (rc = load_optional_json(&x, "special_tokens_map.json", sp, sizeof sp, &x.sm)) ||
        (rc = load_optional_json(&x, "tokenizer.json", x.tj_path, sizeof x.tj_path, &x.tj)))
        goto done;
    if (edgellm_hf_has_file(dir, "tokenizer.model")) {
        if (!edgellm_hf_path(mp, sizeof mp, dir, "tokenizer.model"))
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", dir);
        else rc = load_spm(&x, mp);
    } else if (x.tj) {
        rc = load_tokenizer_json(&x);
    } else if (edgellm_hf_has_file(dir, "vocab.json") && edgellm_hf_has_file(dir, "merges.txt")) {
        rc = load_slow_gpt2(&x);
    } else {
        rc = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND,
                          "%s: no tokenizer.model, tokenizer.json or vocab.json + merges.txt", dir);
    }
    if (rc == EDGELLM_OK) rc = read_specials(&x);
    if (rc == EDGELLM_OK) rc = read_templates(&x);
    for (int i = 0; rc == EDGELLM_OK && i < v->n; i++)
        if (v->type[i] == T_UNUSED && strncmp(v->text[i], "[PAD", 4) == 0) v->n_padded++;
done:
    map_free(&x.map);
    cJSON_Delete(x.tj);
    cJSON_Delete(x.tc);
    cJSON_Delete(x.sm);
    if (rc != EDGELLM_OK) edgellm_hf_vocab_free(v);
    return rc;
}

/* ------------------------------------------------------------------ to GGUF ---- */

bool edgellm_hf_vocab_to_gguf(const edgellm_hf_vocab *v, edgellm_gguf_writer *w)
{
    bool ok = edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", v->spm ? "llama" : "gpt2") &&
              edgellm_gguf_writer_set_str(w, "tokenizer.ggml.pre", v->pre ? v->pre : "default") &&
              edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->text, v->len,
                                              (uint64_t)v->n);
    if (ok && v->spm)
        ok = edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, v->score, (uint64_t)v->n);
    ok = ok && edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, v->type, (uint64_t)v->n);
    if (ok && !v->spm)
        ok = edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, NULL,
                                             (uint64_t)v->n_merges);
    const struct { const char *key; int id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", v->bos}, {"tokenizer.ggml.eos_token_id", v->eos},
        {"tokenizer.ggml.unknown_token_id", v->unk}, {"tokenizer.ggml.padding_token_id", v->pad},
        {"tokenizer.ggml.eot_token_id", v->eot}, {"tokenizer.ggml.eom_token_id", v->eom},
    };
    for (size_t i = 0; ok && i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) ok = edgellm_gguf_writer_set_u32(w, ids[i].key, (uint32_t)ids[i].id);
    if (ok && v->add_bos >= 0) ok = edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    if (ok && v->add_eos >= 0) ok = edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", v->add_eos);
    if (ok && v->add_space_prefix == 0) ok = edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    if (ok && v->chat_template) ok = edgellm_gguf_writer_set_str(w, "tokenizer.chat_template", v->chat_template);
    for (int i = 0; ok && i < v->n_tmpl; i++) {
        char key[160];
        snprintf(key, sizeof key, "tokenizer.chat_template.%.120s", v->tmpl_name[i]);
        ok = edgellm_gguf_writer_set_str(w, key, v->tmpl_text[i]);
    }
    if (ok && v->n_tmpl)
        ok = edgellm_gguf_writer_set_arr_str(w, "tokenizer.chat_templates", (const char *const *)v->tmpl_name, NULL,
                                             (uint64_t)v->n_tmpl);
    return ok;
}

#endif /* EDGELLM_HAVE_CJSON */
