/*
 * matmul.h — the one matrix product of edgellm: y = x · Wᵀ for a weight matrix of any
 * computable type, split over a thread pool.
 */
#ifndef EDGELLM_MATMUL_H
#define EDGELLM_MATMUL_H

#include "../common/threadpool.h"
#include "../tensor/types.h"

/* A weight matrix viewed in place (usually inside the GGUF mapping; borrowed).
 * GGUF ne={ne0, ne1}: ne1 rows of ne0 elements; row r starts at data + r*row_bytes. */
typedef struct {
    const void *data;
    int      type;        /* edgellm_type of the elements           */
    int64_t  ne0;         /* row length = input dimension           */
    int64_t  ne1;         /* rows = output dimension                */
    size_t   row_bytes;   /* edgellm_type_row_size(type, ne0)       */
} edgellm_tensor;

/* Scratch bytes edgellm_matmul needs for n activation rows against W: n rows converted to
 * traits(W.type)->vec_dot_type. 0 when that type is F32 (x is used as is) or on
 * overflow/unsupported row length (edgellm_matmul_supported tells them apart). */
size_t edgellm_matmul_scratch_size(const edgellm_tensor *W, int64_t n);

/* True when W's type can be multiplied (dispatch has the kernels) and its row length is a
 * whole number of blocks of the activation type. */
bool edgellm_matmul_supported(const edgellm_tensor *W);

/* y[n][W.ne1] = x[n][W.ne0] · Wᵀ, i.e. y[t][r] = vec_dot(W.ne0, row r of W, converted x[t]).
 *
 * The activation rows are first converted to the weight type's vec_dot_type (into
 * scratch, edgellm_matmul_scratch_size bytes; may be NULL when that size is 0). W's rows
 * are split evenly over the pool's threads; each thread walks its rows once per block of
 * tokens, so a weight row is read from memory once per block rather than once per token.
 * Each y[t][r] is one vec_dot call on the same data whatever n, the block or the thread:
 * results are bit-identical across thread counts and between prefill and decode.
 * Preconditions (checked by the model loader): edgellm_matmul_supported(W); y does not
 * overlap x. pool may be NULL (single thread). */
void edgellm_matmul(edgellm_threadpool *pool, float *y, const edgellm_tensor *W, const float *x, int64_t n,
                    void *scratch);

#endif
