/*
 * tiny_model.h — small llama-architecture GGUF models whose every weight a test chooses,
 * written with the internal writer (src/format/gguf.h). For behaviour that needs a model
 * doing one precise thing (emit a chosen token chain, reach a chosen activation size) where
 * a trained fixture would only do it by accident.
 *
 * tiny_new gives F32 weights, all zero except the norms (1); the test fills what it needs,
 * then tiny_write writes the file (metadata: llama.* hyperparameters, optionally a
 * SentencePiece vocabulary of 3 specials and the 256 byte tokens, and whatever the test
 * adds to t->w before writing). Shapes as model.h: wq [n_embd][n_embd], wk/wv
 * [kv_dim][n_embd], wo [n_embd][n_embd], w_gate/w_up [n_ff][n_embd], w_down [n_embd][n_ff],
 * token_embd/output [n_vocab][n_embd].
 */
#ifndef EDGELLM_TINY_MODEL_H
#define EDGELLM_TINY_MODEL_H

#include "format/gguf.h"
#include <stdio.h>
#include <stdlib.h>

#define TINY_MAX_LAYERS 4
#define TINY_BYTE_VOCAB 259       /* <unk> <s> </s> <0x00> .. <0xFF> */
#define TINY_BYTE(b) (3 + (b))    /* token id of byte b in that vocabulary */

typedef struct {
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx_train;
    int byte_vocab;               /* 1: write the byte vocabulary (n_vocab must be 259)  */
    float *token_embd, *output, *output_norm;
    struct {
        float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w_gate, *w_up, *w_down;
    } L[TINY_MAX_LAYERS];
    edgellm_gguf_writer *w;       /* extra metadata / tensors may be added before writing */
} tiny_model;

static __attribute__((unused)) float *tiny_zeros(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) { fprintf(stderr, "tiny_model: out of memory\n"); exit(1); }
    return p;
}

static __attribute__((unused)) float *tiny_ones(size_t n)
{
    float *p = tiny_zeros(n);
    for (size_t i = 0; i < n; i++) p[i] = 1.0f;
    return p;
}

static __attribute__((unused)) tiny_model *tiny_new(int n_vocab, int n_embd, int n_layer, int n_head, int n_head_kv,
                                                    int n_ff, int n_ctx_train)
{
    tiny_model *t = calloc(1, sizeof *t);
    if (!t || n_layer > TINY_MAX_LAYERS) { fprintf(stderr, "tiny_model: bad shape\n"); exit(1); }
    const size_t E = (size_t)n_embd, KV = (size_t)n_embd / (size_t)n_head * (size_t)n_head_kv, F = (size_t)n_ff;
    t->n_vocab = n_vocab, t->n_embd = n_embd, t->n_layer = n_layer, t->n_head = n_head;
    t->n_head_kv = n_head_kv, t->n_ff = n_ff, t->n_ctx_train = n_ctx_train;
    t->token_embd = tiny_zeros((size_t)n_vocab * E);
    t->output = tiny_zeros((size_t)n_vocab * E);
    t->output_norm = tiny_ones(E);
    for (int l = 0; l < n_layer; l++) {
        t->L[l].attn_norm = tiny_ones(E);
        t->L[l].ffn_norm = tiny_ones(E);
        t->L[l].wq = tiny_zeros(E * E);
        t->L[l].wk = tiny_zeros(KV * E);
        t->L[l].wv = tiny_zeros(KV * E);
        t->L[l].wo = tiny_zeros(E * E);
        t->L[l].w_gate = tiny_zeros(F * E);
        t->L[l].w_up = tiny_zeros(F * E);
        t->L[l].w_down = tiny_zeros(E * F);
    }
    t->w = edgellm_gguf_writer_new();
    return t;
}

static __attribute__((unused)) void tiny_free(tiny_model *t)
{
    if (!t) return;
    free(t->token_embd);
    free(t->output);
    free(t->output_norm);
    for (int l = 0; l < t->n_layer; l++) {
        float *p[9] = {t->L[l].attn_norm, t->L[l].ffn_norm, t->L[l].wq, t->L[l].wk, t->L[l].wv,
                       t->L[l].wo, t->L[l].w_gate, t->L[l].w_up, t->L[l].w_down};
        for (int i = 0; i < 9; i++) free(p[i]);
    }
    edgellm_gguf_writer_free(t->w);
    free(t);
}

/* Write the model to path; true on success (the writer's message on stderr otherwise). */
static __attribute__((unused)) bool tiny_write(tiny_model *t, const char *path)
{
    edgellm_gguf_writer *w = t->w;
    const int64_t E = t->n_embd, KV = E / t->n_head * t->n_head_kv, F = t->n_ff, V = t->n_vocab;
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    edgellm_gguf_writer_set_u32(w, "llama.context_length", (uint32_t)t->n_ctx_train);
    edgellm_gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)E);
    edgellm_gguf_writer_set_u32(w, "llama.block_count", (uint32_t)t->n_layer);
    edgellm_gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)F);
    edgellm_gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)t->n_head);
    edgellm_gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)t->n_head_kv);
    edgellm_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    static char names[TINY_BYTE_VOCAB][8];
    const char *tok[TINY_BYTE_VOCAB];
    float scores[TINY_BYTE_VOCAB];
    int32_t types[TINY_BYTE_VOCAB];
    if (t->byte_vocab) {
        for (int i = 0; i < TINY_BYTE_VOCAB; i++) {
            if (i < 3) snprintf(names[i], sizeof names[i], "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
            else snprintf(names[i], sizeof names[i], "<0x%02X>", i - 3);
            tok[i] = names[i];
            scores[i] = 0.0f;
            types[i] = i == 0 ? 2 : i < 3 ? 3 : 6;   /* unknown, control, byte */
        }
        edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
        edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", tok, NULL, TINY_BYTE_VOCAB);
        edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, scores, TINY_BYTE_VOCAB);
        edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, TINY_BYTE_VOCAB);
        edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
        edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
        edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    }
    const int64_t ne_emb[2] = {E, V}, ne_e[1] = {E}, ne_q[2] = {E, E}, ne_kv[2] = {E, KV}, ne_ff[2] = {E, F},
                  ne_dn[2] = {F, E};
    edgellm_gguf_writer_add_tensor(w, "token_embd.weight", EDGELLM_TYPE_F32, 2, ne_emb, t->token_embd);
    edgellm_gguf_writer_add_tensor(w, "output_norm.weight", EDGELLM_TYPE_F32, 1, ne_e, t->output_norm);
    edgellm_gguf_writer_add_tensor(w, "output.weight", EDGELLM_TYPE_F32, 2, ne_emb, t->output);
    char n[64];
#define TINY_T(suffix, nd, ne, data)                                                           \
    do {                                                                                       \
        snprintf(n, sizeof n, "blk.%d.%s", l, suffix);                                         \
        edgellm_gguf_writer_add_tensor(w, n, EDGELLM_TYPE_F32, nd, ne, data);                  \
    } while (0)
    for (int l = 0; l < t->n_layer; l++) {
        TINY_T("attn_norm.weight", 1, ne_e, t->L[l].attn_norm);
        TINY_T("attn_q.weight", 2, ne_q, t->L[l].wq);
        TINY_T("attn_k.weight", 2, ne_kv, t->L[l].wk);
        TINY_T("attn_v.weight", 2, ne_kv, t->L[l].wv);
        TINY_T("attn_output.weight", 2, ne_q, t->L[l].wo);
        TINY_T("ffn_norm.weight", 1, ne_e, t->L[l].ffn_norm);
        TINY_T("ffn_gate.weight", 2, ne_ff, t->L[l].w_gate);
        TINY_T("ffn_up.weight", 2, ne_ff, t->L[l].w_up);
        TINY_T("ffn_down.weight", 2, ne_dn, t->L[l].w_down);
    }
#undef TINY_T
    edgellm_error err = {0};
    if (edgellm_gguf_writer_write(w, path, &err) != EDGELLM_OK) {
        fprintf(stderr, "tiny_model: %s\n", err.msg);
        return false;
    }
    return true;
}

#endif
