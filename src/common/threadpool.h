/*
 * threadpool.h — a pool of persistent worker threads running one parallel task at a time.
 *
 * edgellm_threadpool_run(p, fn, arg) calls fn(arg, ith, nth) once for every ith in
 * 0..nth-1 (nth = the pool's thread count; the calling thread is ith 0) and returns when
 * all calls have returned. Tasks split their work with edgellm_split_range, so each output
 * element is computed by exactly one thread with the same code: results never depend on
 * the thread count. Any nth in 1..EDGELLM_MAX_THREADS works, including more threads than
 * work items or CPUs (surplus threads get empty ranges).
 *
 * Thread safety: one pool must be driven from one thread at a time (a context owns its
 * pool). Tasks must not call edgellm_threadpool_run on the same pool.
 */
#ifndef EDGELLM_THREADPOOL_H
#define EDGELLM_THREADPOOL_H

#include "common.h"

#define EDGELLM_MAX_THREADS 64

typedef struct edgellm_threadpool edgellm_threadpool;

/* fn(arg, ith, nth): ith in 0..nth-1. */
typedef void (*edgellm_task_fn)(void *arg, int ith, int nth);

/* Start n_threads - 1 workers (the caller is thread 0). n_threads in 1..EDGELLM_MAX_THREADS,
 * else EDGELLM_ERR_MISUSE. EDGELLM_ERR_NOMEM when allocation or thread creation fails (no
 * thread is left running). Free with edgellm_threadpool_free. */
edgellm_status edgellm_threadpool_new(int n_threads, edgellm_threadpool **out, edgellm_error *err);

/* Stop and join the workers. NULL-safe. */
void edgellm_threadpool_free(edgellm_threadpool *p);

/* Threads of the pool (1 for a NULL pool). */
int edgellm_threadpool_n_threads(const edgellm_threadpool *p);

/* Whether waiting threads spin before they sleep: decided at creation, true when the pool's
 * threads fit the CPUs the process may use (its affinity mask; the online count where the
 * OS has no mask) or that number is unknown. false for a NULL pool. */
bool edgellm_threadpool_spins(const edgellm_threadpool *p);

/* Run fn on every thread of the pool and wait for all of them. A NULL pool runs
 * fn(arg, 0, 1) on the caller. */
void edgellm_threadpool_run(edgellm_threadpool *p, edgellm_task_fn fn, void *arg);

/* The share [*begin, *end) of n items that thread ith of nth computes: contiguous, sizes
 * differ by at most one, empty when ith >= n. */
static inline void edgellm_split_range(int64_t n, int ith, int nth, int64_t *begin, int64_t *end)
{
    *begin = n * ith / nth;
    *end = n * (ith + 1) / nth;
}

/* The share [*begin, *end) of rows × per_row items (item i is in row i / per_row) that
 * thread ith of nth computes when the items' costs grow along the rows: each item of row r
 * costs c0 + r (c0 >= 1). Thread k takes the items whose cumulative cost before them lies in
 * [k/nth, (k+1)/nth) of the total: contiguous, every item to exactly one thread, possibly
 * empty. For a causal attention's (token, head) items: token t of a chunk starting at pos0
 * sees pos0 + t + 1 positions (c0 = pos0 + 1), so equal item counts would give the last
 * thread of a prefill ~3x the work of the first. O(rows × per_row). */
void edgellm_split_range_ramp(int64_t rows, int per_row, double c0, int ith, int nth, int64_t *begin, int64_t *end);
/* The same with each item of row r costing c0 + w[r] (w[r] >= 0; w NULL: r, the ramp). For
 * a batch of several sequences: token t sees cell[t] + 1 cells of its own sequence. */
void edgellm_split_range_cost(int64_t rows, int per_row, double c0, const int32_t *w, int ith, int nth, int64_t *begin,
                              int64_t *end);

#endif
