/*
 * membw.c — memory-read bandwidth benchmark: how many bytes per second this machine's cores
 * can stream from DRAM. Decode at batch 1 reads every weight once per token, so this number
 * is the roofline of token generation (vllm-project/vllm#7379: tok/s <= read bandwidth / bytes read
 * per token). `edgellm plan --device host` and `edgellm bench --bandwidth` use it.
 *
 * Method (the read-only kernel of STREAM-like tools, written for this project):
 *   1. one buffer much larger than the last-level cache: clamp(4 x LLC, 128 MiB, 512 MiB),
 *      and at most a quarter of MemAvailable so a small device is not pushed into swap;
 *   2. fill it once (faults every page in, so no run pays for page faults); when that is
 *      slow (lazily backed VM memory) stop filling at half the time budget, >= 128 MiB;
 *   3. each run: n_threads threads each sum their own contiguous slice with 8 independent
 *      16-byte vector accumulators (GCC vector extension: SSE2 on x86-64, NEON on AArch64,
 *      no ISA flags needed), the wall time of the slowest thread counts;
 *   4. repeat until the time budget is spent (at least 3 runs), report the best run —
 *      best, not mean, because other processes only ever slow a run down.
 * Units: GB/s = 1e9 bytes per second (not GiB/s), as memory vendors and STREAM quote.
 *
 * Expected values: Raspberry Pi 5 ~11.6 GB/s at 4 threads (ggml-org/llama.cpp#26484),
 * dual-channel DDR5 desktops 40-70 GB/s (vllm-project/vllm#7379; ggml-org/llama.cpp#34).
 */
#include "edgellm_tools.h"
#include "../common/common.h"
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef uint64_t edgellm_membw_vec __attribute__((vector_size(16)));

#define MEMBW_MIN_BYTES ((size_t)128 << 20)
#define MEMBW_MAX_BYTES ((size_t)512 << 20)
#define MEMBW_MIN_FILL  ((size_t)128 << 20)
#define MEMBW_MAX_THREADS 256
#define MEMBW_MAX_RUNS 50

/* The sums of edgellm_membw_read_gbps land here, so the reads cannot be elided. */
static volatile uint64_t membw_sink;

typedef struct {
    const edgellm_membw_vec *base;   /* [n_vec] slice of the shared buffer */
    size_t n_vec;                    /* multiple of 8                      */
    uint64_t sink;                   /* keeps the loads from being elided  */
} membw_job;

static void *membw_worker(void *arg)
{
    membw_job *j = arg;
    const edgellm_membw_vec *p = j->base;
    edgellm_membw_vec a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < j->n_vec; i += 8) {
        a0 += p[i + 0]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3];
        a4 += p[i + 4]; a5 += p[i + 5]; a6 += p[i + 6]; a7 += p[i + 7];
    }
    edgellm_membw_vec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    j->sink = s[0] ^ s[1];
    return NULL;
}

/* Largest cache the C library reports (glibc reads cpuid / sysfs); 8 MiB when unknown. */
static size_t membw_llc_bytes(void)
{
    long best = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > best) best = l3;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > best) best = l2;
#endif
    return best > 0 ? (size_t)best : (size_t)8 << 20;
}

/* MemAvailable from /proc/meminfo in bytes; 0 when unknown. */
static uint64_t membw_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024u;
}

size_t edgellm_membw_auto_bytes(void)
{
    size_t llc = membw_llc_bytes();
    size_t want = llc > MEMBW_MAX_BYTES / 4 ? MEMBW_MAX_BYTES : 4 * llc;
    if (want < MEMBW_MIN_BYTES) want = MEMBW_MIN_BYTES;
    uint64_t avail = membw_mem_available();
    if (avail && want > avail / 4) want = (size_t)(avail / 4);
    if (want < ((size_t)16 << 20)) want = (size_t)16 << 20;
    return want;
}

edgellm_membw_params edgellm_membw_default_params(void)
{
    edgellm_membw_params p;
    memset(&p, 0, sizeof p);
    p.n_threads = 0;
    p.buffer_bytes = 0;
    p.max_ms = 1000;
    return p;
}

/* One timed run: every thread sums its slice once. Returns wall milliseconds or < 0 when a
 * thread could not be started. */
static double membw_run(const edgellm_membw_vec *buf, size_t n_vec, int n_threads, uint64_t *sink)
{
    pthread_t th[MEMBW_MAX_THREADS];
    membw_job jobs[MEMBW_MAX_THREADS];
    size_t per = (n_vec / (size_t)n_threads) & ~(size_t)7;
    double t0 = edgellm_time_ms();
    int started = 0;
    for (int t = 0; t < n_threads; t++) {
        jobs[t].base = buf + (size_t)t * per;
        jobs[t].n_vec = per;
        jobs[t].sink = 0;
        if (t == n_threads - 1) break;            /* the calling thread does the last slice */
        if (edgellm_thread_create(&th[t], membw_worker, &jobs[t]) != 0) break;
        started++;
    }
    bool ok = started == n_threads - 1;
    if (ok) membw_worker(&jobs[n_threads - 1]);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    double ms = edgellm_time_ms() - t0;
    for (int t = 0; t < n_threads; t++) *sink ^= jobs[t].sink;
    return ok ? ms : -1.0;
}

edgellm_status edgellm_membw_measure(const edgellm_membw_params *params, edgellm_membw_result *out,
                                     edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "membw: out is NULL");
    memset(out, 0, sizeof *out);
    edgellm_membw_params p = params ? *params : edgellm_membw_default_params();
    if (p.n_threads < 0 || p.n_threads > MEMBW_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "membw: n_threads %d outside [0, %d]", p.n_threads,
                            MEMBW_MAX_THREADS);
    if (p.max_ms <= 0) p.max_ms = 1000;
    int n_threads = p.n_threads > 0 ? p.n_threads : edgellm_n_physical_cores();
    if (n_threads < 1) n_threads = 1;
    size_t bytes = p.buffer_bytes ? p.buffer_bytes : edgellm_membw_auto_bytes();
    size_t unit = (size_t)n_threads * 8 * sizeof(edgellm_membw_vec);
    bytes = bytes / unit * unit;
    if (bytes < unit) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "membw: buffer of %zu bytes is too small", bytes);

    double t_start = edgellm_time_ms();
    edgellm_membw_vec *buf = edgellm_malloc(bytes);
    if (!buf) return edgellm_fail_nomem(err, "membw: read buffer");
    /* Transparent huge pages where the kernel offers them on request, so the fill below
     * covers the whole buffer even where first touches are slow (a 2-vCPU VM filled 168 of
     * 512 MiB in 0.5 s without). */
    edgellm_hint_huge_pages(buf, bytes);
    /* Fault the pages in before timing, 8 MiB at a time. Where first touches are slow (some
     * VMs back guest memory lazily: ~10 us per page) stop at half the budget and measure over
     * what was touched — but never less than MEMBW_MIN_FILL: a smaller buffer partly sits in
     * a large last-level cache and overstates DRAM bandwidth (on a 2-vCPU EPYC VM: 37 GB/s
     * at 32-64 MiB against 13-15 GB/s at 128-256 MiB, one thread). Accuracy wins over the
     * budget there. */
    size_t touched = 0, chunk = (size_t)8 << 20;
    while (touched < bytes) {
        size_t k = EDGELLM_MIN(chunk, bytes - touched);
        memset((char *)buf + touched, 0x5a, k);
        touched += k;
        if (touched >= MEMBW_MIN_FILL && edgellm_time_ms() - t_start > 0.5 * p.max_ms) break;
    }
    bytes = touched / unit * unit;

    size_t n_vec = bytes / sizeof *buf;
    size_t per = (n_vec / (size_t)n_threads) & ~(size_t)7;
    uint64_t read_bytes = (uint64_t)per * (uint64_t)n_threads * sizeof *buf;
    uint64_t sink = 0;
    double best_ms = 0, sum_gbps = 0, run_gbps[MEMBW_MAX_RUNS];
    int runs = 0;
    edgellm_status rc = EDGELLM_OK;
    /* what is left of the budget after the fill, but at least 30 % of it for runs */
    double t_runs = edgellm_time_ms();
    double run_budget = EDGELLM_MAX((double)p.max_ms - (t_runs - t_start), 0.3 * p.max_ms);
    while (runs < MEMBW_MAX_RUNS) {
        double ms = membw_run(buf, n_vec, n_threads, &sink);
        if (ms < 0) { rc = edgellm_fail(err, EDGELLM_ERR_IO, "membw: could not start %d threads", n_threads); break; }
        if (ms <= 0) ms = 1e-3;
        if (runs == 0 || ms < best_ms) best_ms = ms;
        run_gbps[runs] = (double)read_bytes / (ms * 1e-3) / 1e9;
        sum_gbps += run_gbps[runs];
        runs++;
        double spent = edgellm_time_ms() - t_runs;
        if (runs >= 3 && spent + ms > run_budget) break;
    }
    edgellm_free(buf);
    if (rc != EDGELLM_OK) return rc;
    out->best_gbps = (double)read_bytes / (best_ms * 1e-3) / 1e9;
    out->mean_gbps = sum_gbps / runs;
    for (int i = 1; i < runs; i++)   /* insertion sort: at most MEMBW_MAX_RUNS values */
        for (int j = i; j > 0 && run_gbps[j - 1] > run_gbps[j]; j--) {
            double t = run_gbps[j];
            run_gbps[j] = run_gbps[j - 1];
            run_gbps[j - 1] = t;
        }
    out->median_gbps = runs % 2 ? run_gbps[runs / 2] : 0.5 * (run_gbps[runs / 2 - 1] + run_gbps[runs / 2]);
    out->n_runs = runs;
    out->n_threads = n_threads;
    out->buffer_bytes = bytes;
    out->elapsed_ms = edgellm_time_ms() - t_start;
    out->checksum = sink;
    return EDGELLM_OK;
}

double edgellm_membw_read_gbps(const void *data, size_t bytes, int n_threads, int passes)
{
    if (!data || n_threads < 1 || n_threads > MEMBW_MAX_THREADS || passes < 1) return 0;
    uintptr_t a = ((uintptr_t)data + 15) & ~(uintptr_t)15;   /* 16-byte vectors */
    size_t skip = (size_t)(a - (uintptr_t)data);
    if (bytes <= skip) return 0;
    size_t n_vec = (bytes - skip) / sizeof(edgellm_membw_vec);
    size_t per = (n_vec / (size_t)n_threads) & ~(size_t)7;
    if (per == 0) return 0;
    double best = 0;
    uint64_t sink = 0;
    for (int i = 0; i < passes; i++) {
        double ms = membw_run((const edgellm_membw_vec *)a, per * (size_t)n_threads, n_threads, &sink);
        double gbps = ms > 0 ? (double)(per * (size_t)n_threads * sizeof(edgellm_membw_vec)) / (ms * 1e6) : 0;
        if (gbps > best) best = gbps;
    }
    membw_sink = sink;
    return best;
}
