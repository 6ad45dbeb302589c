/*
 * llama2c_import.c — convert a llama2.c checkpoint and its tokenizer.bin into GGUF v3.
 *
 * Formats (karpathy/llama2.c run.c and export.py; summarised in shared/models/PROVENANCE.md).
 * All integers and floats little-endian.
 *
 * Legacy checkpoint ("version 0", run.c):
 *   offset 0   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *              (28 bytes; vocab_size < 0 means a separate classifier follows the weights)
 *   offset 28  f32 weights, each array layer-major ([n_layers][...]):
 *              tok_embeddings [vocab][dim]
 *              rms_att        [L][dim]
 *              wq             [L][n_heads*head_size][dim]      (head_size = dim / n_heads)
 *              wk             [L][n_kv_heads*head_size][dim]
 *              wv             [L][n_kv_heads*head_size][dim]
 *              wo             [L][dim][n_heads*head_size]
 *              rms_ffn        [L][dim]
 *              w1             [L][hidden][dim]      gate
 *              w2             [L][dim][hidden]      down
 *              w3             [L][hidden][dim]      up
 *              rms_final      [dim]
 *              freq_cis_real  [seq_len][head_size/2]           (skipped: RoPE is recomputed)
 *              freq_cis_imag  [seq_len][head_size/2]           (skipped)
 *              wcls           [vocab][dim]                     (only when vocab_size < 0)
 *   Example, stories260K.bin: 40 00 00 00 | ac 00 00 00 | 05 00 00 00 | 08 00 00 00 |
 *   04 00 00 00 | 00 02 00 00 | 00 02 00 00  = dim 64, hidden 172, 5 layers, 8 heads,
 *   4 kv heads, vocab +512 (shared classifier), seq_len 512; then 264,128 floats.
 *
 * Version-1 checkpoint (export.py version1_export), 256-byte header:
 *   offset 0   uint32 magic 0x616b3432 ("ak42"; bytes 32 34 6b 61)
 *   offset 4   int32 version = 1       (version 2 is the int8 export: not supported)
 *   offset 8   int32 x 7, as above (vocab_size positive)
 *   offset 36  uint8 shared_classifier
 *   offset 37  zero padding up to 256
 *   offset 256 f32: rms_att [L][dim], rms_ffn [L][dim], rms_final [dim],
 *              tok_embeddings [vocab][dim], wq, wk, wv, wo, w1, w2, w3 (each [L][..] as
 *              above), then wcls [vocab][dim] when shared_classifier == 0. No freq_cis.
 *
 * tokenizer.bin: int32 max_token_length, then per token: f32 score, int32 len, len bytes.
 *   The count is not stored: it must equal the model's vocab_size, and the file must end
 *   exactly after the last record.
 *
 * Validation before anything is trusted: every header value positive, heads divide dim,
 * kv heads divide heads, even head_size (RoPE rotates pairs), the file size equal to the
 * header plus the weight bytes those numbers imply (overflow-checked), every weight finite,
 * every tokenizer length inside [0, max_token_length] and inside the file. Nothing is
 * allocated from an unchecked number.
 *
 * GGUF mapping (the names and layout of ggml-org/models tinyllamas/stories260K.gguf, which
 * llama.cpp's converter produced from the same checkpoint):
 *   llama.* hparams: context_length = seq_len, embedding_length = dim, feed_forward_length
 *   = hidden, block_count, attention.head_count(_kv), rope.dimension_count = head_size,
 *   attention.layer_norm_rms_epsilon = 1e-5 (run.c's constant), rope.freq_base = 10000.
 *   Tensors (all F32, GGUF ne = {row length, rows}):
 *     token_embd.weight {dim, vocab}   output_norm.weight {dim}   output.weight {dim, vocab}
 *     (a copy of token_embd when the classifier is shared: the file always has output.weight)
 *     blk.N.attn_q {dim, dim} attn_k/attn_v {dim, kv_dim} attn_output {dim, dim}
 *     attn_norm {dim} ffn_gate = w1 {dim, hidden} ffn_down = w2 {hidden, dim}
 *     ffn_up = w3 {dim, hidden} ffn_norm {dim}
 *   Q and K are NOT permuted: llama2.c's RoPE rotates adjacent pairs (x[2i], x[2i+1]) of
 *   each head in the stored row order, which is exactly the layout GGUF "llama" expects
 *   (llama.cpp's HF converter permutes HF weights *into* this layout).
 *   Tokenizer: model "llama", tokens with ' ' written as U+2581 ("▁", SentencePiece's
 *   space), "\n<s>\n" / "\n</s>\n" written "<s>" / "</s>"; token_type 2 (unknown) for
 *   <unk>, 3 (control) for <s> and </s>, 6 (byte) for "<0xXX>", 1 (normal) otherwise;
 *   bos 1, eos 2, unk 0.
 */
#define _POSIX_C_SOURCE 200809L
#include "../format/gguf.h"
#include "llama2c.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#define EDGELLM_LLAMA2C_MAGIC_V1 0x616b3432u
#define EDGELLM_LLAMA2C_V1_HEADER 256
#define EDGELLM_LLAMA2C_V0_HEADER 28

typedef struct {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int     version;       /* 0 legacy, 1 "ak42"                        */
    bool    shared_cls;    /* classifier == token embeddings            */
    int32_t head_size;     /* dim / n_heads                             */
    int32_t kv_dim;        /* n_kv_heads * head_size                    */
    uint64_t header_bytes;
} edgellm_l2c_config;

/* Base pointers of each weight array inside the mapping (all f32). */
typedef struct {
    const float *tok_emb;   /* [vocab][dim]        */
    const float *rms_att;   /* [L][dim]            */
    const float *wq;        /* [L][dim][dim]       */
    const float *wk;        /* [L][kv_dim][dim]    */
    const float *wv;        /* [L][kv_dim][dim]    */
    const float *wo;        /* [L][dim][dim]       */
    const float *rms_ffn;   /* [L][dim]            */
    const float *w1;        /* [L][hidden][dim]    */
    const float *w2;        /* [L][dim][hidden]    */
    const float *w3;        /* [L][hidden][dim]    */
    const float *rms_final; /* [dim]               */
    const float *wcls;      /* [vocab][dim]        */
} edgellm_l2c_weights;

/* ---- the checkpoint header ---------------------------------------------------------- */

static edgellm_status parse_header(const uint8_t *b, uint64_t size, const char *path, edgellm_l2c_config *c,
                                   edgellm_error *err)
{
    memset(c, 0, sizeof *c);
    if (size < EDGELLM_LLAMA2C_V0_HEADER)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes is too short for a llama2.c header (28 bytes)",
                            path, (unsigned long long)size);
    const uint8_t *params;
    if (edgellm_rd_u32(b) == EDGELLM_LLAMA2C_MAGIC_V1) {
        if (size < EDGELLM_LLAMA2C_V1_HEADER)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: version-1 header needs 256 bytes, the file has %llu",
                                path, (unsigned long long)size);
        int32_t version = (int32_t)edgellm_rd_u32(b + 4);
        if (version != 1)
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                                "%s: llama2.c export version %d is not supported (only legacy and version 1, fp32)",
                                path, (int)version);
        c->version = 1;
        params = b + 8;
        uint8_t shared = b[36];
        if (shared > 1)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: shared_classifier flag is %u, expected 0 or 1", path, shared);
        c->shared_cls = shared == 1;
        c->header_bytes = EDGELLM_LLAMA2C_V1_HEADER;
    } else {
        c->version = 0;
        params = b;
        c->header_bytes = EDGELLM_LLAMA2C_V0_HEADER;
    }
    int32_t v[7];
    for (int i = 0; i < 7; i++) v[i] = (int32_t)edgellm_rd_u32(params + 4 * i);
    c->dim = v[0]; c->hidden_dim = v[1]; c->n_layers = v[2]; c->n_heads = v[3];
    c->n_kv_heads = v[4]; c->vocab_size = v[5]; c->seq_len = v[6];
    if (c->version == 0) {
        c->shared_cls = c->vocab_size > 0;
        if (c->vocab_size < 0 && c->vocab_size != INT32_MIN) c->vocab_size = -c->vocab_size;
    }
    static const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    const int32_t vals[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len};
    for (int i = 0; i < 7; i++)
        if (vals[i] <= 0)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                                "%s: header field %s is %d, must be positive (is this a llama2.c checkpoint?)", path,
                                names[i], (int)vals[i]);
    if (c->dim % c->n_heads != 0)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: n_heads %d does not divide dim %d", path, c->n_heads, c->dim);
    if (c->n_heads % c->n_kv_heads != 0)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: n_kv_heads %d does not divide n_heads %d", path,
                            c->n_kv_heads, c->n_heads);
    c->head_size = c->dim / c->n_heads;
    if (c->head_size % 2 != 0)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: head size %d is odd (RoPE rotates pairs)", path, c->head_size);
    c->kv_dim = c->n_kv_heads * c->head_size;
    return EDGELLM_OK;
}

/* Walk the weight arrays in file order: assigns w (when base != NULL) and returns the
 * float count in *n_floats. false on uint64 overflow. */
static bool layout(const edgellm_l2c_config *c, const float *base, edgellm_l2c_weights *w, uint64_t *n_floats)
{
    const uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    const uint64_t kv = (uint64_t)c->kv_dim, voc = (uint64_t)c->vocab_size;
    uint64_t off = 0;
    bool ok = true;
    memset(w, 0, sizeof *w);
#define TAKE(field, a, b, cc) do { uint64_t _n; \
        ok = ok && edgellm_mul_u64((a), (b), &_n) && edgellm_mul_u64(_n, (cc), &_n); \
        if (ok && base) w->field = base + off; \
        ok = ok && edgellm_add_u64(off, _n, &off); } while (0)
#define SKIP(a, b) do { uint64_t _n; ok = ok && edgellm_mul_u64((a), (b), &_n) && edgellm_add_u64(off, _n, &off); } while (0)
    if (c->version == 0) {
        TAKE(tok_emb, voc, dim, 1);
        TAKE(rms_att, L, dim, 1);
        TAKE(wq, L, dim, dim);
        TAKE(wk, L, kv, dim);
        TAKE(wv, L, kv, dim);
        TAKE(wo, L, dim, dim);
        TAKE(rms_ffn, L, dim, 1);
        TAKE(w1, L, hid, dim);
        TAKE(w2, L, dim, hid);
        TAKE(w3, L, hid, dim);
        TAKE(rms_final, dim, 1, 1);
        SKIP((uint64_t)c->seq_len, (uint64_t)c->head_size / 2);   /* freq_cis_real */
        SKIP((uint64_t)c->seq_len, (uint64_t)c->head_size / 2);   /* freq_cis_imag */
    } else {
        TAKE(rms_att, L, dim, 1);
        TAKE(rms_ffn, L, dim, 1);
        TAKE(rms_final, dim, 1, 1);
        TAKE(tok_emb, voc, dim, 1);
        TAKE(wq, L, dim, dim);
        TAKE(wk, L, kv, dim);
        TAKE(wv, L, kv, dim);
        TAKE(wo, L, dim, dim);
        TAKE(w1, L, hid, dim);
        TAKE(w2, L, dim, hid);
        TAKE(w3, L, hid, dim);
    }
    if (c->shared_cls) {
        if (base) w->wcls = w->tok_emb;
    } else {
        TAKE(wcls, voc, dim, 1);
    }
#undef TAKE
#undef SKIP
    *n_floats = off;
    return ok;
}

/* First non-finite value of a weight array, as an index; -1 when all are finite. */
static int64_t first_non_finite(const float *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) if (!isfinite(p[i])) return (int64_t)i;
    return -1;
}

static edgellm_status check_finite(const edgellm_l2c_config *c, const edgellm_l2c_weights *w, const char *path,
                                   edgellm_error *err)
{
    const uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    const uint64_t kv = (uint64_t)c->kv_dim, voc = (uint64_t)c->vocab_size;
    const struct { const char *name; const float *p; uint64_t n; } arr[] = {
        {"tok_embeddings", w->tok_emb, voc * dim}, {"rms_att", w->rms_att, L * dim},
        {"wq", w->wq, L * dim * dim},              {"wk", w->wk, L * kv * dim},
        {"wv", w->wv, L * kv * dim},               {"wo", w->wo, L * dim * dim},
        {"rms_ffn", w->rms_ffn, L * dim},          {"w1", w->w1, L * hid * dim},
        {"w2", w->w2, L * dim * hid},              {"w3", w->w3, L * hid * dim},
        {"rms_final", w->rms_final, dim},          {"wcls", w->wcls, c->shared_cls ? 0 : voc * dim},
    };
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
        int64_t bad = first_non_finite(arr[i].p, arr[i].n);
        if (bad >= 0)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: weight %s[%lld] is not a finite number", path,
                                arr[i].name, (long long)bad);
    }
    return EDGELLM_OK;
}

/* ---- tokenizer.bin -------------------------------------------------------------------- */

typedef struct {
    char    **text;    /* [n] converted token strings (owned)   */
    uint64_t *len;     /* [n] their byte lengths                */
    float    *score;   /* [n]                                   */
    int32_t  *type;    /* [n] GGUF token types                  */
    int       n;
} edgellm_l2c_vocab;

static void vocab_free(edgellm_l2c_vocab *v)
{
    if (v->text)
        for (int i = 0; i < v->n; i++) edgellm_free(v->text[i]);
    edgellm_free(v->text);
    edgellm_free(v->len);
    edgellm_free(v->score);
    edgellm_free(v->type);
    memset(v, 0, sizeof *v);
}

static bool is_byte_piece(const uint8_t *s, int32_t n)   /* "<0xXX>", hex digits upper or lower */
{
    if (n != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return false;
    for (int i = 3; i < 5; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Convert one raw piece to its GGUF text and type. Returns a new string (NULL on OOM). */
static char *convert_piece(int id, const uint8_t *s, int32_t n, uint64_t *out_len, int32_t *type)
{
    static const char *bos_txt = "\n<s>\n", *eos_txt = "\n</s>\n";
    if (id == 0 && n == 5 && !memcmp(s, "<unk>", 5)) { *type = 2; *out_len = 5; return edgellm_strdup("<unk>"); }
    if (id == 1 && n == 5 && !memcmp(s, bos_txt, 5)) { *type = 3; *out_len = 3; return edgellm_strdup("<s>"); }
    if (id == 2 && n == 6 && !memcmp(s, eos_txt, 6)) { *type = 3; *out_len = 4; return edgellm_strdup("</s>"); }
    *type = is_byte_piece(s, n) ? 6 : 1;
    size_t spaces = 0;
    for (int32_t i = 0; i < n; i++) spaces += s[i] == ' ';
    size_t total = (size_t)n + 2 * spaces;   /* ' ' (1 byte) -> U+2581 (3 bytes: e2 96 81) */
    char *t = edgellm_malloc(total + 1);
    if (!t) return NULL;
    size_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        if (s[i] == ' ') { t[o++] = (char)0xe2; t[o++] = (char)0x96; t[o++] = (char)0x81; }
        else t[o++] = (char)s[i];
    }
    t[o] = 0;
    *out_len = o;
    return t;
}

/* Parse the tokenizer.bin bytes buf[0..size) (size >= 4) into v; path names it in messages. */
static edgellm_status parse_vocab(const uint8_t *buf, uint64_t size, const char *path, int n_vocab,
                                  edgellm_l2c_vocab *v, edgellm_error *err)
{
    edgellm_status rc = EDGELLM_OK;
    int32_t max_len = (int32_t)edgellm_rd_u32(buf);
    if (max_len <= 0) { rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: max_token_length is %d, must be positive", path, (int)max_len); goto done; }
    /* each record is at least 8 bytes: a vocabulary larger than the file allows is a lie */
    if ((uint64_t)n_vocab > (size - 4) / 8) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the model has %d tokens but this %llu-byte file can hold at most %llu",
                          path, n_vocab, (unsigned long long)size, (unsigned long long)((size - 4) / 8));
        goto done;
    }
    v->text = edgellm_calloc((size_t)n_vocab, sizeof *v->text);
    v->len = edgellm_calloc((size_t)n_vocab, sizeof *v->len);
    v->score = edgellm_calloc((size_t)n_vocab, sizeof *v->score);
    v->type = edgellm_calloc((size_t)n_vocab, sizeof *v->type);
    v->n = n_vocab;
    if (!v->text || !v->len || !v->score || !v->type) { rc = edgellm_fail_nomem(err, path); goto done; }

    uint64_t off = 4;
    for (int i = 0; i < n_vocab; i++) {
        if (size - off < 8) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: ends at token %d of %d (the model's vocab_size): count mismatch",
                              path, i, n_vocab);
            goto done;
        }
        uint32_t sbits = edgellm_rd_u32(buf + off);
        float score;
        memcpy(&score, &sbits, 4);
        int32_t n = (int32_t)edgellm_rd_u32(buf + off + 4);
        off += 8;
        if (!isfinite(score)) { rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: token %d has a non-finite score", path, i); goto done; }
        if (n < 0 || n > max_len) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: token %d has length %d, outside [0, max_token_length %d]",
                              path, i, (int)n, (int)max_len);
            goto done;
        }
        if ((uint64_t)n > size - off) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: token %d (%d bytes at offset %llu) runs past the end of the file",
                              path, i, (int)n, (unsigned long long)off);
            goto done;
        }
        v->score[i] = score;
        if (!(v->text[i] = convert_piece(i, buf + off, n, &v->len[i], &v->type[i]))) { rc = edgellm_fail_nomem(err, path); goto done; }
        off += (uint64_t)n;
    }
    if (off != size) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT,
                          "%s: %llu bytes remain after the %d tokens the model expects: count mismatch (wrong tokenizer?)",
                          path, (unsigned long long)(size - off), n_vocab);
        goto done;
    }
done:
    if (rc != EDGELLM_OK) vocab_free(v);
    return rc;
}

static edgellm_status read_vocab(const char *path, int n_vocab, edgellm_l2c_vocab *v, edgellm_error *err)
{
    edgellm_status rc = EDGELLM_OK;
    uint8_t *buf = NULL;
    memset(v, 0, sizeof *v);
    const int vfd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO: refused below, not waited on */
    FILE *f = vfd >= 0 ? fdopen(vfd, "rb") : NULL;
    if (!f) {
        const int e = errno;
        if (vfd >= 0) close(vfd);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < 4) { rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: too short for a tokenizer.bin header", path); goto done; }
    if (size > ((uint64_t)1 << 31)) { rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes is too large for a tokenizer.bin", path, (unsigned long long)size); goto done; }
    if (!(buf = edgellm_malloc((size_t)size))) { rc = edgellm_fail_nomem(err, path); goto done; }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) { rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: read failed", path); goto done; }
    rc = parse_vocab(buf, size, path, n_vocab, v, err);
done:
    edgellm_free(buf);
    fclose(f);
    return rc;
}

/* ---- GGUF output ------------------------------------------------------------------------ */

static bool add_f32(edgellm_gguf_writer *w, const char *name, const float *data, int64_t ne0, int64_t ne1)
{
    int64_t ne[2] = {ne0, ne1};
    return edgellm_gguf_writer_add_tensor(w, name, EDGELLM_TYPE_F32, ne1 > 1 ? 2 : 1, ne, data);
}

static bool set_metadata(edgellm_gguf_writer *w, const edgellm_l2c_config *c, const edgellm_l2c_vocab *v,
                         const char *name)
{
    bool ok = true;
    ok = ok && edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    ok = ok && edgellm_gguf_writer_set_str(w, "general.name", name);
    ok = ok && edgellm_gguf_writer_set_u32(w, "general.file_type", 0);   /* ALL_F32 */
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.context_length", (uint32_t)c->seq_len);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)c->dim);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)c->hidden_dim);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.block_count", (uint32_t)c->n_layers);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    ok = ok && edgellm_gguf_writer_set_u32(w, "llama.rope.dimension_count", (uint32_t)c->head_size);
    ok = ok && edgellm_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    ok = ok && edgellm_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    ok = ok && edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    ok = ok && edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->text, v->len,
                                               (uint64_t)v->n);
    ok = ok && edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, v->score, (uint64_t)v->n);
    ok = ok && edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, v->type, (uint64_t)v->n);
    ok = ok && edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    ok = ok && edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    ok = ok && edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    ok = ok && edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    ok = ok && edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    return ok;
}

static bool add_tensors(edgellm_gguf_writer *w, const edgellm_l2c_config *c, const edgellm_l2c_weights *p)
{
    const int64_t dim = c->dim, hid = c->hidden_dim, kv = c->kv_dim, voc = c->vocab_size;
    bool ok = true;
    ok = ok && add_f32(w, "token_embd.weight", p->tok_emb, dim, voc);    /* [vocab][dim] */
    ok = ok && add_f32(w, "output_norm.weight", p->rms_final, dim, 1);   /* [dim]        */
    ok = ok && add_f32(w, "output.weight", p->wcls, dim, voc);           /* [vocab][dim] */
    for (int l = 0; ok && l < c->n_layers; l++) {
        char name[64];
#define T(suffix, ptr, ne0, ne1) do { snprintf(name, sizeof name, "blk.%d." suffix ".weight", l); \
        ok = ok && add_f32(w, name, (ptr), (ne0), (ne1)); } while (0)
        T("attn_q", p->wq + (size_t)l * dim * dim, dim, dim);          /* [dim][dim]       */
        T("attn_k", p->wk + (size_t)l * kv * dim, dim, kv);            /* [kv_dim][dim]    */
        T("attn_v", p->wv + (size_t)l * kv * dim, dim, kv);            /* [kv_dim][dim]    */
        T("attn_output", p->wo + (size_t)l * dim * dim, dim, dim);     /* [dim][dim]       */
        T("attn_norm", p->rms_att + (size_t)l * dim, dim, 1);          /* [dim]            */
        T("ffn_gate", p->w1 + (size_t)l * hid * dim, dim, hid);        /* [hidden][dim]    */
        T("ffn_down", p->w2 + (size_t)l * dim * hid, hid, dim);        /* [dim][hidden]    */
        T("ffn_up", p->w3 + (size_t)l * hid * dim, dim, hid);          /* [hidden][dim]    */
        T("ffn_norm", p->rms_ffn + (size_t)l * dim, dim, 1);           /* [dim]            */
#undef T
    }
    return ok;
}

/* Header, exact file size and finite weights of a checkpoint mapped at map[0..size);
 * fills c and the weight pointers (into map). */
static edgellm_status check_checkpoint(const void *map, uint64_t size, const char *model_path, edgellm_l2c_config *cfg,
                                       edgellm_l2c_weights *wt, edgellm_error *err)
{
    edgellm_status rc;
    if ((rc = parse_header(map, size, model_path, cfg, err)) != EDGELLM_OK) return rc;
    const edgellm_l2c_config c = *cfg;
    uint64_t n_floats, expect;
    if (!layout(&c, NULL, wt, &n_floats) || !edgellm_mul_u64(n_floats, 4, &expect) ||
        !edgellm_add_u64(expect, c.header_bytes, &expect))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: header dimensions overflow a 64-bit size", model_path);
    if (expect != size) {
        bool short_file = size < expect;
        return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                            "%s: the header (%s, dim %d, hidden %d, %d layers, %d/%d heads, vocab %d%s, seq_len %d) implies "
                            "%llu bytes but the file has %llu (%llu bytes %s)",
                            model_path, c.version ? "version 1" : "legacy", c.dim, c.hidden_dim, c.n_layers, c.n_heads,
                            c.n_kv_heads, c.vocab_size, c.shared_cls ? " shared" : " + classifier", c.seq_len,
                            (unsigned long long)expect, (unsigned long long)size,
                            (unsigned long long)(short_file ? expect - size : size - expect), short_file ? "short" : "too many");
    }
    layout(&c, (const float *)((const uint8_t *)map + c.header_bytes), wt, &n_floats);
    return check_finite(&c, wt, model_path, err);
}

edgellm_status edgellm_llama2c_parse_memory(const void *model, size_t model_size, const void *tokenizer,
                                            size_t tokenizer_size, const char *name, edgellm_error *err)
{
    edgellm_status rc = EDGELLM_OK;
    edgellm_l2c_vocab vocab = {0};
    edgellm_gguf_writer *w = NULL;
    edgellm_l2c_config c;
    edgellm_l2c_weights wt;
    if (!name) name = "llama2.c checkpoint";
    if ((!model && model_size) || (!tokenizer && tokenizer_size))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: NULL buffer", name);
    if (model_size < EDGELLM_LLAMA2C_V0_HEADER)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %zu bytes is too short for a llama2.c header (28 bytes)", name,
                            model_size);
    if (((uintptr_t)model & 3) != 0)   /* the weights are read as floats in place */
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: the checkpoint buffer must be 4-byte aligned", name);
    if ((rc = check_checkpoint(model, model_size, name, &c, &wt, err)) != EDGELLM_OK) return rc;
    if (!tokenizer) return EDGELLM_OK;
    if (tokenizer_size < 4)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: too short for a tokenizer.bin header", name);
    if ((rc = parse_vocab(tokenizer, tokenizer_size, name, c.vocab_size, &vocab, err)) != EDGELLM_OK) goto done;
    if (!(w = edgellm_gguf_writer_new()) || !set_metadata(w, &c, &vocab, name) || !add_tensors(w, &c, &wt))
        rc = edgellm_fail_nomem(err, name);
done:
    edgellm_gguf_writer_free(w);
    vocab_free(&vocab);
    return rc;
}

edgellm_status edgellm_llama2c_parse_tokenizer_memory(const void *tokenizer, size_t tokenizer_size, int n_vocab,
                                                      const char *name, edgellm_error *err)
{
    edgellm_l2c_vocab vocab = {0};
    if (!name) name = "tokenizer.bin";
    if ((!tokenizer && tokenizer_size) || n_vocab < 1)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: NULL buffer or n_vocab %d < 1", name, n_vocab);
    if (tokenizer_size < 4)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: too short for a tokenizer.bin header", name);
    edgellm_status rc = parse_vocab(tokenizer, tokenizer_size, name, n_vocab, &vocab, err);
    vocab_free(&vocab);
    return rc;
}

/* general.name: the checkpoint's file name without directory and extension. */
static void model_name(const char *path, char *out, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
}


edgellm_status edgellm_convert_llama2c(const char *model_path, const char *tokenizer_path, const char *out_path,
                                       edgellm_error *err)
{
    edgellm_status rc = EDGELLM_OK;
    int fd = -1;
    void *map = MAP_FAILED;
    uint64_t size = 0;
    edgellm_l2c_vocab vocab = {0};
    edgellm_gguf_writer *w = NULL;
    edgellm_l2c_config c;
    edgellm_l2c_weights wt;

    if (!model_path || !tokenizer_path || !out_path)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "model, tokenizer and output paths are required");
    if (edgellm_same_file(model_path, out_path))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is the input model file", out_path);
    if (edgellm_same_file(tokenizer_path, out_path))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is the input tokenizer file", out_path);

    if ((fd = open(model_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {   /* a FIFO: refused below, not waited on */
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", model_path, strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", model_path);
        goto done;
    }
    size = (uint64_t)st.st_size;
    if (size < EDGELLM_LLAMA2C_V0_HEADER) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes is too short for a llama2.c header (28 bytes)",
                          model_path, (unsigned long long)size);
        goto done;
    }
    if ((uint64_t)(size_t)size != size) {
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: too large to map on this platform", model_path);
        goto done;
    }
    map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: mmap: %s", model_path, strerror(errno));
        goto done;
    }

    if ((rc = check_checkpoint(map, size, model_path, &c, &wt, err)) != EDGELLM_OK) goto done;

    if ((rc = read_vocab(tokenizer_path, c.vocab_size, &vocab, err)) != EDGELLM_OK) goto done;

    char name[256];
    model_name(model_path, name, sizeof name);
    if (!(w = edgellm_gguf_writer_new()) || !set_metadata(w, &c, &vocab, name) || !add_tensors(w, &c, &wt)) {
        rc = edgellm_fail_nomem(err, out_path);
        goto done;
    }
    rc = edgellm_gguf_writer_write(w, out_path, err);

done:
    edgellm_gguf_writer_free(w);
    vocab_free(&vocab);
    if (map != MAP_FAILED) munmap(map, (size_t)size);
    if (fd >= 0) close(fd);
    return rc;
}
