/*
 * hf_spm.c — SentencePiece model files (tokenizer.model of Llama 2, TinyLlama, Mistral),
 * read and written in C: a protobuf ModelProto (google/sentencepiece
 * src/sentencepiece_model.proto) of which edgellm uses
 *
 *   ModelProto      1 pieces (repeated SentencePiece)   2 trainer_spec   3 normalizer_spec
 *   SentencePiece   1 piece (string)   2 score (float)   3 type (enum, default NORMAL = 1:
 *                   NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6 —
 *                   the same numbers as GGUF's tokenizer.ggml.token_type)
 *   TrainerSpec     3 model_type (UNIGRAM 1 default, BPE 2, WORD 3, CHAR 4)   4 vocab_size
 *                   35 byte_fallback   40 unk_id (0)   41 bos_id (1)   42 eos_id (2)
 *                   43 pad_id (-1)   45 unk_piece   46 bos_piece   47 eos_piece   48 pad_piece
 *   NormalizerSpec  1 name   3 add_dummy_prefix (default true)   4 remove_extra_whitespaces
 *                   5 escape_whitespaces
 *
 * Protobuf encoding (protobuf.dev/programming-guides/encoding): each field is a varint key
 * (field number << 3 | wire type) then its value: wire type 0 a varint (7 bits per byte,
 * low group first, high bit = more; negative int32 as 10-byte two's complement), 1 eight
 * bytes, 2 a varint length and that many bytes (strings, sub-messages), 5 four bytes
 * (float, little-endian). Fields may come in any order; unknown fields are skipped.
 * Example, the first piece of Llama 2's tokenizer.model:
 *
 *   0a 0e          field 1 (pieces), length 14
 *     0a 05 3c 75 6e 6b 3e     piece "<unk>"
 *     15 00 00 00 00           score 0.0
 *     18 02                    type 2 (UNKNOWN)
 *
 * Reading checks every length against what is left, every varint's size (at most 10
 * bytes), types 1..6, finite scores and UTF-8 pieces; nothing is allocated from an
 * unchecked number. Only BPE models are read: the GGUF "llama" tokenizer merges by score,
 * which is what SentencePiece's BPE does, not its Unigram search.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include <math.h>

#define SPM_MAX_PIECES 10000000

typedef struct {
    const uint8_t *p, *end;
    const char *path;
    edgellm_error *err;
    edgellm_status rc;
} pb;

static bool pb_fail(pb *b, const char *what)
{
    if (b->rc == EDGELLM_OK)
        b->rc = edgellm_fail(b->err, EDGELLM_ERR_FORMAT, "%s: %s (not a SentencePiece model?)", b->path, what);
    return false;
}

static bool pb_varint(pb *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (b->p >= b->end) return pb_fail(b, "a number runs past the end");
        const uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) { *v = x; return true; }
    }
    return pb_fail(b, "a number of more than 10 bytes");
}

/* Read one field's key; *wt the wire type. */
static bool pb_key(pb *b, uint32_t *field, int *wt)
{
    uint64_t k;
    if (!pb_varint(b, &k)) return false;
    *field = (uint32_t)(k >> 3);
    *wt = (int)(k & 7);
    if (*field == 0 || (k >> 3) > 0x1fffffff) return pb_fail(b, "a field number out of range");
    return true;
}

/* A length-delimited value: its bytes [*s, *s + *n). */
static bool pb_bytes(pb *b, const uint8_t **s, size_t *n)
{
    uint64_t len;
    if (!pb_varint(b, &len)) return false;
    if (len > (uint64_t)(b->end - b->p)) return pb_fail(b, "a field runs past the end");
    *s = b->p;
    *n = (size_t)len;
    b->p += len;
    return true;
}

static bool pb_skip(pb *b, int wt)
{
    uint64_t v;
    const uint8_t *s;
    size_t n;
    switch (wt) {
    case 0: return pb_varint(b, &v);
    case 1: if (b->end - b->p < 8) return pb_fail(b, "a field runs past the end"); b->p += 8; return true;
    case 2: return pb_bytes(b, &s, &n);
    case 5: if (b->end - b->p < 4) return pb_fail(b, "a field runs past the end"); b->p += 4; return true;
    default: return pb_fail(b, "a field of an unknown wire type");
    }
}

static bool parse_piece(pb *b, const uint8_t *s, size_t n, edgellm_spm_model *m, int i)
{
    pb sub = {s, s + n, b->path, b->err, EDGELLM_OK};
    m->piece[i] = "";
    m->len[i] = 0;
    m->score[i] = 0;
    m->type[i] = 1;
    while (sub.p < sub.end) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (!pb_key(&sub, &f, &wt)) break;
        if (f == 1 && wt == 2) {
            const uint8_t *ps;
            size_t pn;
            if (!pb_bytes(&sub, &ps, &pn)) break;
            if (pn > UINT32_MAX || !edgellm_hf_utf8_ok((const char *)ps, pn)) {
                pb_fail(&sub, "a piece is not UTF-8");
                break;
            }
            m->piece[i] = (const char *)ps;
            m->len[i] = (uint32_t)pn;
        } else if (f == 2 && wt == 5) {
            if (sub.end - sub.p < 4) { pb_fail(&sub, "a score runs past the end"); break; }
            uint32_t u = edgellm_rd_u32(sub.p);
            memcpy(&m->score[i], &u, 4);
            sub.p += 4;
            if (!isfinite(m->score[i])) { pb_fail(&sub, "a piece's score is not a finite number"); break; }
        } else if (f == 3 && wt == 0) {
            if (!pb_varint(&sub, &v)) break;
            if (v < 1 || v > 6) { pb_fail(&sub, "a piece type outside 1..6"); break; }
            m->type[i] = (int32_t)v;
        } else if (!pb_skip(&sub, wt)) break;
    }
    if (sub.rc != EDGELLM_OK) { b->rc = sub.rc; return false; }
    return true;
}

static bool parse_trainer(pb *b, const uint8_t *s, size_t n, edgellm_spm_model *m)
{
    pb sub = {s, s + n, b->path, b->err, EDGELLM_OK};
    while (sub.p < sub.end) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (!pb_key(&sub, &f, &wt)) break;
        if (wt == 0 && (f == 3 || f == 35 || (f >= 40 && f <= 43))) {
            if (!pb_varint(&sub, &v)) break;
            const int64_t iv = (int64_t)v;   /* int32 fields: negatives are sign-extended to 64 bits */
            if (f == 3) m->model_type = (int)(v & 0xff);
            else if (f == 35) m->byte_fallback = v != 0;
            else {
                const int id = iv < -1 || iv > INT32_MAX ? -1 : (int)iv;
                if (f == 40) m->unk_id = id;
                else if (f == 41) m->bos_id = id;
                else if (f == 42) m->eos_id = id;
                else m->pad_id = id;
            }
        } else if (!pb_skip(&sub, wt)) break;
    }
    if (sub.rc != EDGELLM_OK) { b->rc = sub.rc; return false; }
    return true;
}

static bool parse_normalizer(pb *b, const uint8_t *s, size_t n, edgellm_spm_model *m)
{
    pb sub = {s, s + n, b->path, b->err, EDGELLM_OK};
    while (sub.p < sub.end) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (!pb_key(&sub, &f, &wt)) break;
        if (f == 3 && wt == 0) {
            if (!pb_varint(&sub, &v)) break;
            m->add_dummy_prefix = v != 0;
        } else if (!pb_skip(&sub, wt)) break;
    }
    if (sub.rc != EDGELLM_OK) { b->rc = sub.rc; return false; }
    return true;
}

void edgellm_spm_free(edgellm_spm_model *m)
{
    if (!m) return;
    edgellm_free(m->piece);
    edgellm_free(m->len);
    edgellm_free(m->score);
    edgellm_free(m->type);
    memset(m, 0, sizeof *m);
}

edgellm_status edgellm_spm_parse(const uint8_t *buf, size_t size, const char *path, edgellm_spm_model *m,
                                 edgellm_error *err)
{
    memset(m, 0, sizeof *m);
    m->model_type = 1;
    m->unk_id = 0;
    m->bos_id = 1;
    m->eos_id = 2;
    m->pad_id = -1;
    m->add_dummy_prefix = true;
    pb b = {buf, buf + size, path, err, EDGELLM_OK};
    /* pass 1: count the pieces (each a length-delimited field 1), so one allocation fits */
    size_t n = 0;
    while (b.p < b.end) {
        uint32_t f;
        int wt;
        if (!pb_key(&b, &f, &wt)) break;
        if (f == 1 && wt == 2) n++;
        if (!pb_skip(&b, wt)) break;
    }
    if (b.rc != EDGELLM_OK) return b.rc;
    if (n == 0 || n > SPM_MAX_PIECES)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %zu pieces (a SentencePiece model has 1 to %d)", path, n,
                            SPM_MAX_PIECES);
    m->piece = edgellm_calloc(n, sizeof *m->piece);
    m->len = edgellm_calloc(n, sizeof *m->len);
    m->score = edgellm_calloc(n, sizeof *m->score);
    m->type = edgellm_calloc(n, sizeof *m->type);
    if (!m->piece || !m->len || !m->score || !m->type) { edgellm_spm_free(m); return edgellm_fail_nomem(err, path); }
    b.p = buf;
    int i = 0;
    while (b.p < b.end) {
        uint32_t f;
        int wt;
        const uint8_t *s;
        size_t sn;
        if (!pb_key(&b, &f, &wt)) break;
        if (wt != 2) { if (!pb_skip(&b, wt)) break; continue; }
        if (!pb_bytes(&b, &s, &sn)) break;
        if (f == 1 && !parse_piece(&b, s, sn, m, i++)) break;
        if (f == 2 && !parse_trainer(&b, s, sn, m)) break;
        if (f == 3 && !parse_normalizer(&b, s, sn, m)) break;
    }
    m->n = (int)n;
    if (b.rc == EDGELLM_OK && m->model_type != 2)
        b.rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: a SentencePiece %s model; edgellm reads BPE models only",
                            path,
                            m->model_type == 1   ? "Unigram"
                            : m->model_type == 3 ? "word"
                            : m->model_type == 4 ? "char"
                                                 : "unknown");
    if (b.rc != EDGELLM_OK) edgellm_spm_free(m);
    return b.rc;
}

/* ------------------------------------------------------------------- writer ---- */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static void put_varint(FILE *f, uint64_t v)
{
    while (v >= 0x80) { fputc((int)(v & 0x7f) | 0x80, f); v >>= 7; }
    fputc((int)v, f);
}

static void put_key(FILE *f, uint32_t field, int wt) { put_varint(f, (uint64_t)field << 3 | (uint64_t)wt); }

static void put_bytes(FILE *f, uint32_t field, const char *s, uint64_t n)
{
    put_key(f, field, 2);
    put_varint(f, n);
    fwrite(s, 1, (size_t)n, f);
}

static void put_int(FILE *f, uint32_t field, int64_t v)
{
    put_key(f, field, 0);
    put_varint(f, (uint64_t)v);   /* negatives: 10 bytes of two's complement, as protobuf does */
}

static size_t int_field_len(uint32_t field, int64_t v)
{
    return varint_len((uint64_t)field << 3) + varint_len((uint64_t)v);
}
static size_t bytes_field_len(uint32_t field, uint64_t n)
{
    return varint_len((uint64_t)field << 3 | 2) + varint_len(n) + (size_t)n;
}

void edgellm_spm_write(FILE *f, const char *const *piece, const uint64_t *len, const float *score, const int32_t *type,
                       int n, bool add_dummy_prefix, int unk_id, int bos_id, int eos_id, int pad_id)
{
    bool has_byte = false;
    for (int i = 0; i < n; i++) {
        const size_t body = bytes_field_len(1, len[i]) + 5 + (type[i] != 1 ? int_field_len(3, type[i]) : 0);
        put_key(f, 1, 2);
        put_varint(f, body);
        put_bytes(f, 1, piece[i], len[i]);
        put_key(f, 2, 5);
        uint32_t u;
        memcpy(&u, &score[i], 4);
        for (int k = 0; k < 4; k++) fputc((int)(u >> (8 * k)) & 0xff, f);
        if (type[i] != 1) put_int(f, 3, type[i]);
        has_byte |= type[i] == 6;
    }
    /* trainer_spec: BPE, the vocabulary size, byte fallback, the special ids and pieces */
    const int ids[4] = {unk_id, bos_id, eos_id, pad_id};
    size_t tlen = int_field_len(3, 2) + int_field_len(4, n) + (has_byte ? int_field_len(35, 1) : 0);
    for (int k = 0; k < 4; k++) {
        tlen += int_field_len(40 + (uint32_t)k, ids[k] >= 0 && ids[k] < n ? ids[k] : -1);
        if (ids[k] >= 0 && ids[k] < n) tlen += bytes_field_len(45 + (uint32_t)k, len[ids[k]]);
    }
    put_key(f, 2, 2);
    put_varint(f, tlen);
    put_int(f, 3, 2);
    put_int(f, 4, n);
    if (has_byte) put_int(f, 35, 1);
    for (int k = 0; k < 4; k++) {
        const bool ok = ids[k] >= 0 && ids[k] < n;
        put_int(f, 40 + (uint32_t)k, ok ? ids[k] : -1);
        if (ok) put_bytes(f, 45 + (uint32_t)k, piece[ids[k]], len[ids[k]]);
    }
    /* normalizer_spec: identity, the dummy prefix, spaces kept and escaped as U+2581 */
    const size_t nlen =
        bytes_field_len(1, 8) + int_field_len(3, add_dummy_prefix) + int_field_len(4, 0) + int_field_len(5, 1);
    put_key(f, 3, 2);
    put_varint(f, nlen);
    put_bytes(f, 1, "identity", 8);
    put_int(f, 3, add_dummy_prefix);
    put_int(f, 4, 0);
    put_int(f, 5, 1);
}

#endif /* EDGELLM_HAVE_CJSON */
