/* test_threadpool.c — the persistent thread pool (src/common/threadpool.c): every thread
 * runs each task exactly once, work splits (even, and balanced by cost) cover every item
 * exactly once for any thread count 1..64 (including more threads than items),
 * back-to-back tasks never lose a wake-up, construction fails cleanly, and waiting threads spin only when the pool fits the
 * process's affinity mask (which also caps the default thread count). */
#include "test_util.h"
#include "common/threadpool.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- split_range ---- */
static void test_split_range_covers_exactly_once(void)
{
    int64_t ns[] = {0, 1, 2, 3, 7, 63, 64, 65, 1000, 4097};
    int bad = 0;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (int nth = 1; nth <= EDGELLM_MAX_THREADS; nth++) {
            int64_t expect_begin = 0, lo = ns[a], hi = 0;
            for (int ith = 0; ith < nth; ith++) {
                int64_t b, e;
                edgellm_split_range(ns[a], ith, nth, &b, &e);
                if (b != expect_begin || e < b) bad++;
                lo = EDGELLM_MIN(lo, e - b);
                hi = EDGELLM_MAX(hi, e - b);
                expect_begin = e;
            }
            if (expect_begin != ns[a] || hi - lo > 1) bad++;
        }
    CHECK_EQ(bad, 0);
}

/* The cost-balanced split: contiguous shares covering every item exactly once, each within
 * one item's cost of an equal share of the total. */
static void test_split_range_ramp_covers_exactly_once(void)
{
    static const int64_t rows[] = {0, 1, 2, 7, 64};
    static const int per_row[] = {1, 3, 32};
    static const double c0s[] = {1, 5, 1000};
    int bad = 0;
    for (size_t a = 0; a < sizeof rows / sizeof rows[0]; a++)
        for (size_t b = 0; b < sizeof per_row / sizeof per_row[0]; b++)
            for (size_t c = 0; c < sizeof c0s / sizeof c0s[0]; c++)
                for (int nth = 1; nth <= EDGELLM_MAX_THREADS; nth++) {
                    const int64_t n = rows[a] * per_row[b];
                    const double total = per_row[b] * (rows[a] * c0s[c] + rows[a] * (rows[a] - 1) / 2.0);
                    const double max_item = c0s[c] + (double)(rows[a] > 0 ? rows[a] - 1 : 0);
                    int64_t expect_begin = 0;
                    for (int ith = 0; ith < nth; ith++) {
                        int64_t lo, hi;
                        edgellm_split_range_ramp(rows[a], per_row[b], c0s[c], ith, nth, &lo, &hi);
                        if (lo != expect_begin || hi < lo) bad++;
                        double cost = 0;
                        for (int64_t i = lo; i < hi; i++) cost += c0s[c] + (double)(i / per_row[b]);
                        if (cost > total / nth + max_item) bad++;
                        expect_begin = hi;
                    }
                    if (expect_begin != n) bad++;
                }
    CHECK_EQ(bad, 0);
}

/* ---- run ---- */
typedef struct {
    atomic_int per_thread[EDGELLM_MAX_THREADS];
    atomic_int *hits;              /* [n_items] */
    int64_t n_items;
    atomic_int wrong_nth;
    int expect_nth;
} count_job;

static void count_task(void *arg, int ith, int nth)
{
    count_job *j = arg;
    if (nth != j->expect_nth || ith < 0 || ith >= nth) atomic_fetch_add(&j->wrong_nth, 1);
    atomic_fetch_add(&j->per_thread[ith], 1);
    int64_t b, e;
    edgellm_split_range(j->n_items, ith, nth, &b, &e);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&j->hits[i], 1);
}

static void test_pool_every_thread_count_covers_items(void)
{
    int64_t n_items_list[] = {0, 1, 3, 64, 1001};
    for (int nth = 1; nth <= EDGELLM_MAX_THREADS; nth++) {
        edgellm_threadpool *p = NULL;
        edgellm_error err = {0};
        CHECK_EQ(edgellm_threadpool_new(nth, &p, &err), EDGELLM_OK);
        if (!p) return;
        CHECK_EQ(edgellm_threadpool_n_threads(p), nth);
        for (size_t a = 0; a < sizeof n_items_list / sizeof n_items_list[0]; a++) {
            count_job j;
            memset(&j, 0, sizeof j);
            j.n_items = n_items_list[a];
            j.expect_nth = nth;
            j.hits = calloc((size_t)j.n_items + 1, sizeof *j.hits);
            edgellm_threadpool_run(p, count_task, &j);
            int bad = 0;
            for (int64_t i = 0; i < j.n_items; i++) bad += atomic_load(&j.hits[i]) != 1;
            for (int t = 0; t < nth; t++) bad += atomic_load(&j.per_thread[t]) != 1;
            for (int t = nth; t < EDGELLM_MAX_THREADS; t++) bad += atomic_load(&j.per_thread[t]) != 0;
            CHECK_EQ(bad, 0);
            CHECK_EQ(atomic_load(&j.wrong_nth), 0);
            free(j.hits);
        }
        edgellm_threadpool_free(p);
    }
}

/* Each task adds ith + 1 per thread, so after `runs` tasks the sum is runs·nth(nth+1)/2: a
 * task run twice or skipped shows in it, a lost wake-up hangs (ctest timeout). With sleepy
 * set, workers ith >= 1 sleep 2 ms inside every 8th task (longer than the caller's spin, so
 * the caller sleeps on the condvar and a worker must wake it) and the caller sleeps 2 ms
 * before every 5th (longer than the workers' spin: they sleep and the caller must wake
 * them). */
typedef struct {
    atomic_long sum;
    atomic_int round;
    bool sleepy;
} sum_job;

static void add_task(void *arg, int ith, int nth)
{
    (void)nth;
    sum_job *j = arg;
    if (j->sleepy && ith >= 1 && atomic_load(&j->round) % 8 == 7) usleep(2000);
    atomic_fetch_add(&j->sum, ith + 1);
}

static void check_sum_rounds(const int *counts, int n_counts, int runs_2, int runs_more, bool sleepy)
{
    for (int a = 0; a < n_counts; a++) {
        const int nth = counts[a], runs = nth <= 2 ? runs_2 : runs_more;
        edgellm_threadpool *p = NULL;
        CHECK_EQ(edgellm_threadpool_new(nth, &p, NULL), EDGELLM_OK);
        if (!p) return;
        sum_job j = {.sleepy = sleepy};
        atomic_init(&j.sum, 0);
        atomic_init(&j.round, 0);
        for (int r = 0; r < runs; r++) {
            atomic_store(&j.round, r);
            if (sleepy && r % 5 == 4) usleep(2000);
            edgellm_threadpool_run(p, add_task, &j);
        }
        CHECK_EQ(atomic_load(&j.sum), (long)runs * nth * (nth + 1) / 2);
        edgellm_threadpool_free(p);
    }
}

/* Many tiny tasks back to back. */
static void test_pool_back_to_back_tasks(void)
{
    static const int counts[] = {2, 3, 7, 16};
    check_sum_rounds(counts, 4, 20000, 3000, false);
}

/* Both sleeping paths, each woken by the other side. */
static void test_pool_wakes_sleepers_both_ways(void)
{
    static const int counts[] = {2, 3, 5};
    check_sum_rounds(counts, 3, 60, 60, true);
}

static void test_pool_null_runs_on_caller(void)
{
    count_job j;
    memset(&j, 0, sizeof j);
    j.n_items = 5;
    j.expect_nth = 1;
    j.hits = calloc(5, sizeof *j.hits);
    edgellm_threadpool_run(NULL, count_task, &j);
    for (int i = 0; i < 5; i++) CHECK_EQ(atomic_load(&j.hits[i]), 1);
    CHECK_EQ(edgellm_threadpool_n_threads(NULL), 1);
    edgellm_threadpool_free(NULL);   /* NULL-safe */
    free(j.hits);
}

static void test_pool_rejects_bad_counts_and_oom(void)
{
    edgellm_threadpool *p = (edgellm_threadpool *)1;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_threadpool_new(0, &p, &err), EDGELLM_ERR_MISUSE);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "1..64") != NULL);
    CHECK_EQ(edgellm_threadpool_new(EDGELLM_MAX_THREADS + 1, &p, &err), EDGELLM_ERR_MISUSE);
    long live = edgellm_test_live_allocs();
    edgellm_test_alloc_fail_at(1);
    CHECK_EQ(edgellm_threadpool_new(4, &p, &err), EDGELLM_ERR_NOMEM);
    edgellm_test_alloc_fail_at(0);
    CHECK(p == NULL);
    CHECK_EQ(edgellm_test_live_allocs(), live);
}

static void count_calls(void *arg, int ith, int nth)
{
    (void)ith;
    (void)nth;
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* The spin decision follows the affinity mask: a pool that fits the CPUs the process may
 * use spins, one with more threads than that sleeps at once (a spinning waiter would take
 * the CPU from the thread it waits for). Checked with this process's own mask and with
 * the mask cut to one CPU (restored after). */
static void test_pool_spins_only_when_it_fits_the_mask(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0) { printf("  (no affinity mask here)\n"); return; }
    const int n = CPU_COUNT(&all);
    edgellm_threadpool *p = NULL;
    if (n <= EDGELLM_MAX_THREADS) {
        CHECK_OK(edgellm_threadpool_new(n, &p, NULL));
        CHECK(edgellm_threadpool_spins(p));
        edgellm_threadpool_free(p);
    }
    if (n + 1 <= EDGELLM_MAX_THREADS) {
        CHECK_OK(edgellm_threadpool_new(n + 1, &p, NULL));
        CHECK(!edgellm_threadpool_spins(p));
        edgellm_threadpool_free(p);
    }
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) { CPU_SET(c, &one); break; }
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);   /* as under `taskset -c N` */
    CHECK_OK(edgellm_threadpool_new(2, &p, NULL));
    CHECK(!edgellm_threadpool_spins(p));
    atomic_int calls;
    atomic_init(&calls, 0);
    for (int r = 0; r < 100; r++) edgellm_threadpool_run(p, count_calls, &calls);   /* still runs every task */
    CHECK_EQ(atomic_load(&calls), 200);
    edgellm_threadpool_free(p);
    CHECK_OK(edgellm_threadpool_new(1, &p, NULL));
    CHECK(edgellm_threadpool_spins(p));
    edgellm_threadpool_free(p);
    /* the default thread count follows the mask too (/proc/cpuinfo still lists every core) */
    CHECK_EQ(edgellm_n_physical_cores(), 1);
    CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
    CHECK(edgellm_n_physical_cores() >= 1 && edgellm_n_physical_cores() <= n);
#else
    printf("  (no affinity mask on this OS)\n");
#endif
    CHECK(!edgellm_threadpool_spins(NULL));
}

/* Per thread of a run: whether SIGINT and SIGTERM are blocked there. */
typedef struct {
    atomic_int blocked[EDGELLM_MAX_THREADS];
} mask_job;

static void mask_task(void *arg, int ith, int nth)
{
    (void)nth;
    mask_job *j = arg;
    sigset_t m;
    pthread_sigmask(SIG_BLOCK, NULL, &m);
    atomic_store(&j->blocked[ith], sigismember(&m, SIGINT) == 1 && sigismember(&m, SIGTERM) == 1 &&
                                       sigismember(&m, SIGSEGV) == 0 && sigismember(&m, SIGPROF) == 0);
}

/* The pool's workers block asynchronous signals (edgellm_thread_create), so a SIGINT meant
 * for the process is handled by the application's thread, never by a worker while the
 * caller goes on; the caller's own mask is as it was (thread 0 of a run is the caller). */
static void test_pool_workers_block_async_signals(void)
{
    edgellm_threadpool *p = NULL;
    CHECK_EQ(edgellm_threadpool_new(4, &p, NULL), EDGELLM_OK);
    if (!p) return;
    mask_job j;
    memset(&j, 0, sizeof j);
    edgellm_threadpool_run(p, mask_task, &j);
    CHECK_EQ(atomic_load(&j.blocked[0]), 0);
    for (int t = 1; t < 4; t++) CHECK_EQ(atomic_load(&j.blocked[t]), 1);
    edgellm_threadpool_free(p);
    sigset_t m;
    pthread_sigmask(SIG_BLOCK, NULL, &m);
    CHECK(!sigismember(&m, SIGINT) && !sigismember(&m, SIGTERM));
}

int main(void)
{
    RUN(test_split_range_covers_exactly_once);
    RUN(test_split_range_ramp_covers_exactly_once);
    RUN(test_pool_every_thread_count_covers_items);
    RUN(test_pool_back_to_back_tasks);
    RUN(test_pool_wakes_sleepers_both_ways);
    RUN(test_pool_null_runs_on_caller);
    RUN(test_pool_rejects_bad_counts_and_oom);
    RUN(test_pool_spins_only_when_it_fits_the_mask);
    RUN(test_pool_workers_block_async_signals);
    return test_summary();
}
