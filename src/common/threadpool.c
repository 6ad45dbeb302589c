/*
 * threadpool.c — persistent workers for edgellm's parallel-for (see threadpool.h).
 *
 * Protocol. The pool holds a task (fn, arg), a generation counter and a pending counter.
 *   run():    store fn/arg; pending = nth-1; generation++; wake sleeping workers; run
 *             ith 0 on the caller; wait until pending == 0.
 *   worker:   wait until generation differs from the last one it ran; run its share;
 *             decrement pending; the last one wakes the caller if it sleeps.
 * Both waits first spin on the atomics (a decode step runs ~6 tasks per layer, a few
 * microseconds apart, so a sleep/wake per task would dominate), then sleep on a condvar.
 * The spin is skipped when the pool has more threads than the process may use CPUs (its
 * affinity mask): spinning would then steal the CPU from the thread being waited for.
 *
 * The mutex is only taken when somebody sleeps. A waiter announces itself (sleepers++,
 * seq_cst, under the mutex) and then re-checks the condition before waiting; the waker
 * changes the condition (seq_cst) and then reads sleepers. In the single total order of
 * seq_cst operations either the waker sees the announcement (and signals under the mutex,
 * which the waiter holds until it waits) or the waiter's re-check sees the change: no
 * wake-up is lost.
 *
 * Costs measured on the 2-core Zen 5 VM (empty tasks back to back, TSC cycles): with the
 * mutex and broadcast on every run an empty run took 1.5-2.4k, without them 1.05-1.15k
 * (README, "Kernels, threads and speed", for what a decode token spends around the
 * hand-offs).
 */
#include "threadpool.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define SPIN_ITERS 20000   /* pause-loop iterations before sleeping (~0.4 ms on Zen 5)  */
#define YIELD_EVERY 256    /* sched_yield() this often while spinning: if the thread we
                            * wait for shares our CPU (a loaded machine, a narrow CPU
                            * affinity), let it run. Spinning ~2000 pauses before the
                            * first yield saved ~2.7k cycles on an idle machine but made
                            * hand-offs 7x slower with both threads on one CPU.         */

typedef struct {
    struct edgellm_threadpool *pool;
    int ith;
} worker_arg;

/* The hot fields sit 64 bytes apart (the allocation is only 16-byte aligned, so padding
 * rather than _Alignas): the caller's writes of fn/arg/generation, the workers' writes of
 * pending and the mutex never share a cache line. */
struct edgellm_threadpool {
    /* written by the caller per task, read by the workers */
    edgellm_task_fn fn;                /* the current task: written before generation++ */
    void *arg;
    atomic_uint generation;
    char pad0[64];
    /* written by the workers per task, read by the caller */
    atomic_int pending;                /* workers still running the current task        */
    char pad1[64];
    /* the sleeping path */
    pthread_mutex_t mu;
    pthread_cond_t start;              /* generation changed or stop set                 */
    pthread_cond_t done;               /* pending reached 0                              */
    atomic_int sleepers;               /* workers waiting (or about to) on `start`       */
    atomic_bool caller_sleeps;         /* the caller waits (or is about to) on `done`    */
    atomic_bool stop;
    int n_threads;
    bool spin;                         /* false when n_threads exceeds the usable CPUs   */
    int n_started;                     /* workers actually created                       */
    pthread_t threads[EDGELLM_MAX_THREADS];
    worker_arg args[EDGELLM_MAX_THREADS];
};

static inline void cpu_relax_or_yield(int i)
{
    if (i % YIELD_EVERY == YIELD_EVERY - 1) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One worker: ith fixed for its lifetime. */
static void *worker_main(void *varg)
{
    worker_arg wa = *(worker_arg *)varg;
    edgellm_threadpool *p = wa.pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load(&p->generation);
        if (g == seen && p->spin) {
            for (int i = 0; i < SPIN_ITERS && g == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed);
                 i++) {
                cpu_relax_or_yield(i);
                g = atomic_load(&p->generation);
            }
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->start, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = g;
        p->fn(p->arg, wa.ith, p->n_threads);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeps)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void stop_workers(edgellm_threadpool *p)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->threads[i], NULL);
    p->n_started = 0;
}

edgellm_status edgellm_threadpool_new(int n_threads, edgellm_threadpool **out, edgellm_error *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "thread pool: %d threads requested, expected 1..%d",
                            n_threads, EDGELLM_MAX_THREADS);
    edgellm_threadpool *p = edgellm_calloc(1, sizeof *p);
    if (!p) return edgellm_fail_nomem(err, "thread pool");
    p->n_threads = n_threads;
    const int usable = edgellm_usable_cpus(NULL, 0);   /* the affinity mask's CPUs */
    p->spin = usable <= 0 || n_threads <= usable;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_sleeps, false);
    for (int i = 1; i < n_threads; i++) {
        p->args[i].pool = p;
        p->args[i].ith = i;
        if (edgellm_thread_create(&p->threads[p->n_started], worker_main, &p->args[i]) != 0) {
            edgellm_threadpool_free(p);
            return edgellm_fail(err, EDGELLM_ERR_NOMEM, "thread pool: cannot start thread %d of %d", i,
                                n_threads);
        }
        p->n_started++;
    }
    *out = p;
    return EDGELLM_OK;
}

void edgellm_threadpool_free(edgellm_threadpool *p)
{
    if (!p) return;
    stop_workers(p);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->start);
    pthread_mutex_destroy(&p->mu);
    edgellm_free(p);
}

bool edgellm_threadpool_spins(const edgellm_threadpool *p) { return p && p->spin; }

int edgellm_threadpool_n_threads(const edgellm_threadpool *p) { return p ? p->n_threads : 1; }

void edgellm_threadpool_run(edgellm_threadpool *p, edgellm_task_fn fn, void *arg)
{
    if (!p || p->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n_threads - 1);
    atomic_fetch_add(&p->generation, 1);     /* publishes fn/arg (seq_cst) */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->start);
        pthread_mutex_unlock(&p->mu);
    }

    fn(arg, 0, p->n_threads);

    if (p->spin)
        for (int i = 0; i < SPIN_ITERS && atomic_load(&p->pending) != 0; i++) cpu_relax_or_yield(i);
    if (atomic_load(&p->pending) != 0) {
        pthread_mutex_lock(&p->mu);
        /* an exchange, not a store: a read-modify-write is a full barrier in every
         * implementation, so the load of pending below cannot be satisfied before the flag
         * is visible (an emulator such as qemu-user on an x86-64 host translates AArch64's
         * STLR + LDAR to a plain store and load, which the host may reorder: a lost wake-up) */
        (void)atomic_exchange(&p->caller_sleeps, true);
        while (atomic_load(&p->pending) != 0) pthread_cond_wait(&p->done, &p->mu);
        atomic_store(&p->caller_sleeps, false);
        pthread_mutex_unlock(&p->mu);
    }
}

void edgellm_split_range_ramp(int64_t rows, int per_row, double c0, int ith, int nth, int64_t *begin, int64_t *end)
{
    edgellm_split_range_cost(rows, per_row, c0, NULL, ith, nth, begin, end);
}

void edgellm_split_range_cost(int64_t rows, int per_row, double c0, const int32_t *w, int ith, int nth, int64_t *begin,
                              int64_t *end)
{
    const int64_t n_items = rows * per_row;
    double total = 0;
    if (w)
        for (int64_t r = 0; r < rows; r++) total += (double)per_row * (c0 + (double)w[r]);
    else
        total = (double)per_row * ((double)rows * c0 + (double)rows * (double)(rows - 1) / 2);
    const double lo = total * ith / nth, hi = total * (ith + 1) / nth;
    int64_t first = -1, last = n_items;
    double before = 0;   /* cost of all items before item i */
    for (int64_t r = 0; r < rows && last == n_items; r++) {
        const double c = c0 + (double)(w ? w[r] : r);
        for (int h = 0; h < per_row; h++, before += c) {
            const int64_t i = r * per_row + h;
            if (first < 0 && before >= lo) first = i;
            if (ith < nth - 1 && before >= hi) {
                last = i;
                break;
            }
        }
    }
    if (first < 0) first = last;
    *begin = first;
    *end = EDGELLM_MAX(first, last);
}
