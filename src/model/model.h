/*
 * model.h — internal structures of a loaded model and of a context (KV cache + scratch).
 *
 * A model is a GGUF mapping plus typed views of its tensors; it is read-only after load
 * and may be shared by several contexts. A context owns everything mutable for one
 * sequence: the KV cache, activation scratch sized at creation, the thread pool.
 * Nothing is allocated per token.
 *
 * Shapes: C order, outermost first. GGUF lists ne[] innermost first, so a matrix with
 * ne={n_embd, kv_dim} is [kv_dim][n_embd] here: kv_dim rows of n_embd elements.
 */
#ifndef EDGELLM_MODEL_H
#define EDGELLM_MODEL_H

#include "../common/threadpool.h"
#include "../format/gguf.h"
#include "../kernels/matmul.h"
#include "kv_cache.h"

/* ---- architectures (arch_table.c) ---- */
typedef enum {
    EDGELLM_ROPE_ADJACENT = 0,   /* pairs (x[2i], x[2i+1])              */
    EDGELLM_ROPE_NEOX = 1        /* pairs (x[i], x[i + rope_dim/2])     */
} edgellm_rope_layout;

typedef struct {
    const char *name;            /* value of general.architecture        */
    edgellm_rope_layout rope;
    bool qkv_bias;               /* blk.N.attn_{q,k,v}.bias present      */
} edgellm_arch;

/* The entry for an architecture name (len bytes, not NUL-terminated); NULL if unsupported. */
const edgellm_arch *edgellm_arch_find(const char *name, size_t len);
/* "llama, qwen2": the supported names, for error messages. */
const char *edgellm_arch_list(void);

/* ---- hyperparameters ---- */
typedef struct {
    int   n_vocab;               /* rows of token_embd                              */
    int   n_ctx_train;           /* <arch>.context_length                           */
    int   n_embd;                /* <arch>.embedding_length                         */
    int   n_layer;               /* <arch>.block_count                              */
    int   n_ff;                  /* <arch>.feed_forward_length                      */
    int   n_head;                /* <arch>.attention.head_count                     */
    int   n_head_kv;             /* <arch>.attention.head_count_kv (= n_head)       */
    int   head_dim;              /* n_embd / n_head                                 */
    int   kv_dim;                /* n_head_kv * head_dim                            */
    int   rope_dim;              /* <arch>.rope.dimension_count (= head_dim), even  */
    float rope_freq_base;        /* <arch>.rope.freq_base (= 10000)                 */
    float rms_eps;               /* <arch>.attention.layer_norm_rms_epsilon         */
} edgellm_hparams;

/* ---- weights: views into the mapping, borrowed, never freed ---- */
typedef struct {
    const float   *attn_norm;    /* [n_embd]                                        */
    edgellm_tensor wq;           /* [n_embd][n_embd];  GGUF ne={n_embd, n_embd}     */
    edgellm_tensor wk;           /* [kv_dim][n_embd];  GGUF ne={n_embd, kv_dim}     */
    edgellm_tensor wv;           /* [kv_dim][n_embd];  GGUF ne={n_embd, kv_dim}     */
    const float   *bq;           /* [n_embd]; NULL unless arch->qkv_bias            */
    const float   *bk;           /* [kv_dim]; NULL unless arch->qkv_bias            */
    const float   *bv;           /* [kv_dim]; NULL unless arch->qkv_bias            */
    edgellm_tensor wo;           /* [n_embd][n_embd]                                */
    const float   *ffn_norm;     /* [n_embd]                                        */
    edgellm_tensor w_gate;       /* [n_ff][n_embd];    GGUF ne={n_embd, n_ff}       */
    edgellm_tensor w_up;         /* [n_ff][n_embd]                                  */
    edgellm_tensor w_down;       /* [n_embd][n_ff];    GGUF ne={n_ff, n_embd}       */
} edgellm_layer;

struct edgellm_model {
    char              *path;           /* owned copy, for messages                   */
    edgellm_gguf      *gguf;           /* owns the mapping all views point into      */
    edgellm_tokenizer *tok;            /* owned; NULL when the tokenizer is unsupported */
    char tok_error[512];               /* why tok is NULL (the loader's message)        */
    const edgellm_arch *arch;
    edgellm_hparams    hp;
    edgellm_tensor     token_embd;     /* [n_vocab][n_embd]                          */
    const float       *output_norm;    /* [n_embd]                                   */
    edgellm_tensor     output;         /* [n_vocab][n_embd]; == token_embd when tied  */
    bool               tied_output;
    edgellm_layer     *layers;         /* [n_layer], owned array of views            */
    int                n_threads;      /* default for contexts (>= 1)                */
    uint64_t           n_params;       /* elements of all tensors in the file        */
    uint64_t           weight_bytes;   /* bytes of all tensor data                   */
};

/* ---- context ---- */
struct edgellm_ctx {
    const edgellm_model *model;        /* borrowed: must outlive the context         */
    edgellm_threadpool  *pool;         /* owned                                      */
    edgellm_kv_cache     kv;           /* owned; K and V, [n_layer][n_head_kv][n_ctx][head_dim] */
    int    n_ctx;
    int    n_past;                     /* positions filled in the cache              */
    int    n_batch;                    /* max tokens per forward chunk               */
    int    n_threads;
    /* activation scratch, one row per token of a chunk */
    float *x;                          /* [n_batch][n_embd]   residual stream         */
    float *xb;                         /* [n_batch][n_embd]   normed input / sublayer out */
    float *q;                          /* [n_batch][n_embd]                           */
    float *k;                          /* [n_batch][kv_dim]                           */
    float *v;                          /* [n_batch][kv_dim]                           */
    float *att;                        /* [n_batch][n_embd]   attention output        */
    float *hb;                         /* [n_batch][n_ff]     gate, then swiglu       */
    float *hb2;                        /* [n_batch][n_ff]     up                      */
    float *rope_cos;                   /* [n_batch][rope_dim/2]                       */
    float *rope_sin;                   /* [n_batch][rope_dim/2]                       */
    float *scores;                     /* [n_threads][n_ctx]  attention weights       */
    edgellm_matmul_runner mm;          /* matrix products: pool, activation conversion
                                        * scratch (owned), first-pass row order        */
    float *logits;                     /* [n_vocab]           last position           */
    bool   has_logits;
};

/* Run tokens[n] (1 <= n <= c->n_batch, ids < n_vocab) at positions pos0 .. pos0+n-1
 * (pos0+n <= n_ctx; cache rows 0..pos0-1 filled) through the model (llama.c), writing K/V
 * rows pos0.. . logits: NULL, or [n][n_vocab] to receive every row; last: NULL, or
 * [n_vocab] to receive the last row's logits (with logits == last == NULL no logits are
 * computed). Does not move n_past and checks nothing: edgellm_decode validates first. */
void edgellm_llama_forward(edgellm_ctx *c, const int32_t *tokens, int n, int pos0, float *logits, float *last);

#endif
