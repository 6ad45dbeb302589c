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
#include "../kernels/ops.h"
#include "kv_cache.h"
#include <stdatomic.h>

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

/* ---- RoPE frequency scaling (rope_scaling.c) ---- */
typedef enum {
    EDGELLM_ROPE_SCALING_NONE = 0,
    EDGELLM_ROPE_SCALING_LINEAR = 1,   /* angles / factor (position interpolation)        */
    EDGELLM_ROPE_SCALING_YARN = 2      /* YaRN: interpolation ramped over the dimensions   */
} edgellm_rope_scaling_type;

typedef struct {
    edgellm_rope_scaling_type type;    /* <arch>.rope.scaling.type                        */
    float factor;                      /* <arch>.rope.scaling.factor; 1: none             */
    int   n_ctx_orig;                  /* YaRN's original context (positions)             */
    float attn_factor;                 /* <arch>.rope.scaling.attn_factor (1)             */
    int   n_freq_factors;              /* elements of rope_freqs.weight; 0: absent        */
    bool  scaled;                      /* the table differs from plain RoPE               */
    edgellm_rope_scaling table;        /* what the rotation table applies (ops.h); its
                                        * freq_factors point into the mapping             */
} edgellm_rope_config;

/* Read a GGUF file's RoPE scaling (keys: rope_scaling.c) for architecture arch. rope_dim:
 * the model's rotated dimensions, checked against rope_freqs.weight; 0: unknown (taken from
 * the metadata, for a description). name is used in messages. EDGELLM_ERR_UNSUPPORTED for a
 * scaling type edgellm does not implement (longrope, ...), EDGELLM_ERR_FORMAT for a bad
 * value; both name the key. */
edgellm_status edgellm_rope_config_read(const edgellm_gguf *g, const char *name, const char *arch, int rope_dim,
                                        edgellm_rope_config *out, edgellm_error *err);
/* One line: "none", "linear, factor 4 (positions / 4)", "yarn, factor 4, original context
 * 32768, ...", "...; frequency factors from rope_freqs.weight (64 values, 1 .. 8)". */
void edgellm_rope_config_describe(const edgellm_rope_config *c, char *buf, size_t size);

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
    edgellm_rope_config rope;    /* frequency scaling (none unless the file says)   */
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

/* A layer's matrices in the forward pass's order, as an array initializer (const or not):
 *     const edgellm_tensor *m[EDGELLM_LAYER_N_MATRICES] = EDGELLM_LAYER_MATRICES(y); */
#define EDGELLM_LAYER_N_MATRICES 7
#define EDGELLM_LAYER_MATRICES(y) {&(y)->wq, &(y)->wk, &(y)->wv, &(y)->wo, &(y)->w_gate, &(y)->w_up, &(y)->w_down}

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
    void              *repack_buf;     /* owned: the repacked matrices (repack.h), or NULL */
    size_t             repack_bytes;
    int                n_repacked;     /* matrices whose data point into repack_buf   */
    int                n_stored;       /* matrices used in the file's stored layout
                                          (EDGELLM_TYPE_Q4_K_R16) where they are mapped */
    int                n_unpacked;     /* stored-layout matrices unpacked at load into
                                          plain rows in repack_buf (no kernel for the
                                          layout at this level, or misaligned data)   */
    double             repack_ms;      /* time the loader spent repacking/unpacking   */
};

/* True when p lies in memory the model owns (repack_buf), not in the file's mapping:
 * madvise(MADV_DONTNEED) must never be applied there (it would zero the weights). */
static inline bool edgellm_model_owns(const edgellm_model *m, const void *p)
{
    const uint8_t *b = m->repack_buf, *q = p;
    return b && q >= b && q < b + m->repack_bytes;
}

/* ---- context ---- */
/* One sequence of a context: cells 0 .. n-1 of its KV cache rows, in position order. */
typedef struct {
    int      n;                        /* cells in use                               */
    int32_t *pos;                      /* [n_ctx] position of each cell (increasing)  */
    int32_t *tok;                      /* [n_ctx] token id of each cell               */
    float   *logits;                   /* [n_vocab] of its last token in the last batch */
    bool     has_logits;
    int32_t  pending;                  /* a generated token not in the cache yet (the
                                        * last one of a generation: never decoded), -1:
                                        * none; it goes in first when a prompt is appended */
} edgellm_seq_state;

struct edgellm_ctx {
    const edgellm_model *model;        /* borrowed: must outlive the context         */
    edgellm_threadpool  *pool;         /* owned                                      */
    edgellm_kv_cache     kv;           /* owned; K and V, [n_layer][n_head_kv][n_seq][n_ctx][head_dim] */
    int    n_ctx;                      /* cells per sequence                          */
    int    n_seq;
    edgellm_seq_state *seqs;           /* [n_seq]                                     */
    int    n_batch;                    /* max tokens per forward chunk               */
    int    n_threads;
    atomic_int abort;                  /* edgellm_ctx_abort: stop the running call    */
    atomic_int busy;                   /* a generation job runs on the context        */
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
    float *out;                        /* [n_out][n_vocab]    logits of selected rows  */
    int    n_out;                      /* min(n_batch, n_seq)                         */
    int32_t *chunk_cell;               /* [n_batch] cells of the chunk's tokens        */
    /* Called by the forward pass before layer il's weights are read (il = n_layer: before
     * the output head), on the thread that runs the pass; NULL: none. For tools that manage
     * residency of the mapped weights (src/tools/memory.c). */
    void (*layer_hook)(void *user, int il);
    void  *layer_hook_user;
    /* Called before every matrix product with the weight and its n input rows
     * x[n][W->ne0] (activation statistics: src/tools/imatrix.c); NULL: none. Runs on the
     * thread that runs the forward pass. */
    void (*observe)(void *user, const edgellm_tensor *W, const float *x, int n);
    void *observe_user;
};

/* One chunk of a batch for the forward pass: token t (t < n <= c->n_batch, ids < n_vocab)
 * goes to sequence seq[t], cell cell[t] (cells below it of that sequence hold the tokens
 * it attends to), at position pos[t]. logits: NULL, or [n][n_vocab] for every row; the
 * rows rows[0..n_rows) (n_rows <= c->n_out) also go to dst[r] ([n_vocab] each). */
typedef struct {
    const int32_t *tokens, *seq, *cell, *pos;
    int n;
    float *logits;
    const int *rows;
    float *const *dst;
    int n_rows;
} edgellm_chunk;

/* Run a chunk through the model (llama.c), writing its K/V rows. Checks nothing
 * (edgellm_decode_batch validates first) and moves no sequence's count. EDGELLM_OK, or
 * EDGELLM_ERR_CANCELLED when c->abort was set (checked before every layer). */
edgellm_status edgellm_llama_forward(edgellm_ctx *c, const edgellm_chunk *ch);

/* edgellm_decode_batch without clearing c->abort: for loops inside the library (generation)
 * that must stay abortable between their calls (context.c). */
edgellm_status edgellm_decode_batch_internal(edgellm_ctx *c, const edgellm_batch *b, edgellm_error *err);

#endif
