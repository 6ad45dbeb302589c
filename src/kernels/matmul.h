/*
 * matmul.h — the one matrix product of edgellm: y = x · Wᵀ for a weight matrix of any
 * computable type, split over a thread pool.
 */
#ifndef EDGELLM_MATMUL_H
#define EDGELLM_MATMUL_H

#include "../common/threadpool.h"
#include "../tensor/types.h"
#include "repack.h"

/* A weight matrix viewed in place (usually inside the GGUF mapping; borrowed).
 * GGUF ne={ne0, ne1}: ne1 rows of ne0 elements; row r starts at data + r*row_bytes. */
typedef struct {
    const void *data;
    int      type;        /* edgellm_type of the elements           */
    int64_t  ne0;         /* row length = input dimension           */
    int64_t  ne1;         /* rows = output dimension                */
    size_t   row_bytes;   /* edgellm_type_row_size(type, ne0)       */
    const edgellm_repack *repack;   /* NULL: plain rows at data; else data holds
                                     * this load-time layout (repack.h, owned by
                                     * whoever repacked it)               */
} edgellm_tensor;

/* Scratch bytes edgellm_matmul needs for n activation rows against W: n rows converted to
 * traits(W.type)->vec_dot_type, plus, for types with a tile kernel at some kernel level,
 * room for its packed activations. 0 when the activation type is F32 (x is used as is) or
 * on overflow/unsupported row length (edgellm_matmul_supported tells them apart). */
size_t edgellm_matmul_scratch_size(const edgellm_tensor *W, int64_t n);

/* True when W's type can be multiplied (dispatch has the kernels) and its row length is a
 * whole number of blocks of the activation type. */
bool edgellm_matmul_supported(const edgellm_tensor *W);

/* y[n][W.ne1] = x[n][W.ne0] · Wᵀ, i.e. y[t][r] = dot(W.ne0, row r of W, converted x[t]),
 * the dot being the dispatched vec_dot or, where the active level has one for W's type,
 * the tile kernel's arithmetic (gemm.h: AVX-512 Q4_0/Q8_0/Q4_K/Q6_K, AVX2 Q4_0/Q8_0).
 *
 * The activation rows are first converted to the weight type's vec_dot_type (into
 * scratch, edgellm_matmul_scratch_size bytes; may be NULL when that size is 0), and for
 * types with a tile kernel (gemm.h) packed for it. W's rows are shared among the pool's
 * threads in chunks of 16-row tiles; a weight row is read from memory once per block of
 * tokens rather than once per token. Each y[t][r] is computed by the same steps on the same
 * data whatever n, the chunk or the thread (one vec_dot call, or the tile kernel's fixed
 * sequence): results are bit-identical across thread counts and between prefill and
 * decode.
 * Preconditions (checked by the model loader): edgellm_matmul_supported(W); y does not
 * overlap x. pool may be NULL (single thread). */
void edgellm_matmul(edgellm_threadpool *pool, float *y, const edgellm_tensor *W, const float *x, int64_t n,
                    void *scratch);

/* One product of a batch: y[n][W->ne1] = x · Wᵀ. */
typedef struct {
    float *y;
    const edgellm_tensor *W;
} edgellm_matmul_job;

/* jobs[j].y = x · jobs[j].Wᵀ for k products that read the same activations x[n][cols]
 * (e.g. q/k/v, gate/up): x is converted once and the rows of all the matrices are shared
 * among the threads in one parallel run (fewer wake-ups than k calls of edgellm_matmul).
 * Results are bit-identical to k calls of edgellm_matmul. When the matrices differ in row
 * length or activation type the batch simply runs them one by one. scratch: at least the
 * largest edgellm_matmul_scratch_size of the matrices for n. No y may overlap x. */
void edgellm_matmul_batch(edgellm_threadpool *pool, const edgellm_matmul_job *jobs, int k, const float *x,
                          int64_t n, void *scratch);

/* How the threads share the rows of a batch (results do not depend on it).
 *  STREAM    each thread first takes one contiguous range of the rows (1/nth of them) and
 *            walks it front to back, so that it reads one long sequential stream; a thread
 *            that runs out takes the back half of the largest range left (work stealing).
 *            The default: 2-thread decode of a tinyllama ran 4-9 % faster than IN_ORDER
 *            (Q4_0, Q4_K_M; Q8_0 equal) on the 2-core dev VM.
 *  IN_ORDER  threads take chunks from the front of the rows, from one shared counter, by
 *            guided self-scheduling (Polychronopoulos & Kuck 1987): the rows are read
 *            roughly in file order. For the first pass over weights that may not be in the
 *            page cache yet: the page faults then fill the cache in file order. After a
 *            first pass by STREAM (two threads faulting in two far-apart places), every
 *            later 2-thread decode of a Q8_0 tinyllama ran ~30 % slower, whichever the
 *            scheduler, until the file left the page cache: the order in which the pages
 *            were first read stays in their physical placement. */
typedef enum { EDGELLM_MATMUL_STREAM = 0, EDGELLM_MATMUL_IN_ORDER = 1 } edgellm_matmul_sched;

/* edgellm_matmul_batch with the row sharing chosen. */
void edgellm_matmul_batch_sched(edgellm_threadpool *pool, const edgellm_matmul_job *jobs, int k, const float *x,
                                int64_t n, void *scratch, edgellm_matmul_sched sched);

/* The matrix products of a sequence of passes over one model's weights (a context owns
 * one for its forward passes): the pool and scratch they run on, and the row sharing. The
 * first pass reads the weights IN_ORDER: if the file is not in the page cache yet, its
 * pages are then placed in file order, which later passes stream fastest; once the caller
 * says a pass has read every matrix (edgellm_matmul_pass_done), the runner uses STREAM.
 * Zero-initialise, then set pool and scratch. Driven from one thread at a time (as its
 * pool). */
typedef struct {
    edgellm_threadpool *pool;   /* borrowed; NULL: the calling thread alone              */
    void *scratch;              /* borrowed; at least the largest edgellm_matmul_scratch_size
                                 * of the matrices and token counts it runs              */
    bool warm;                  /* a whole pass has read every matrix once                */
} edgellm_matmul_runner;

/* edgellm_matmul_batch on the runner's pool and scratch, the rows shared IN_ORDER before
 * the first edgellm_matmul_pass_done and STREAM after it. Results do not depend on it. */
void edgellm_matmul_run(edgellm_matmul_runner *r, const edgellm_matmul_job *jobs, int k, const float *x, int64_t n);

/* The caller's pass has read every weight matrix once: later runs stream (STREAM). */
void edgellm_matmul_pass_done(edgellm_matmul_runner *r);

#endif
