/*
 * bench.c — edgellm_bench (`edgellm bench`): prompt-processing and text-generation speed,
 * time to first token, load time, peak memory, and decode speed as a fraction of the
 * memory-bandwidth roofline.
 *
 * Conventions follow llama-bench (ggml-org/llama.cpp tools/llama-bench/README.md, summarised
 * below):
 *   pp<N>  one edgellm_decode of N prompt tokens from an empty KV cache;
 *   tg<N>  N edgellm_decode calls of one token each, from an empty KV cache;
 *   "... @ d<D>"  the same test with D tokens already in the KV cache (llama-bench -d):
 *          the D tokens are decoded once per context and depth, untimed, and every run
 *          (warm-up included) starts from them (edgellm_ctx_truncate back to D: the same
 *          cache llama-bench's per-run refill gives, without D tokens of prefill per run);
 *   a warm-up precedes the timed runs (pp: one full prompt pass; tg: one token), each test
 *   is repeated n_reps times and reported as mean ± sample standard deviation of tokens
 *   per second (and of nanoseconds per run); tokenization and sampling are not timed —
 *   token ids are fixed pseudo-random ids in [0, n_vocab).
 * Additions:
 *   ttft_ms         prefill of n_prompt tokens + the first single-token decode (what a user
 *                   waits for before the first generated token), mean over the pp runs;
 *   load_ms         the first edgellm_model_load, after posix_fadvise(POSIX_FADV_DONTNEED)
 *                   asked the kernel to drop the file from the page cache (a cold load when
 *                   mincore then shows < 10 % of the file resident: load_cold = 1);
 *   load_warm_ms    mean of three further loads (file in the page cache); both include
 *                   repacking weights into a load-time layout (kernels/repack.h), whose
 *                   share of the first load is repack_ms;
 *   peak_rss_bytes  VmHWM after the tests (reset before the first load where Linux
 *                   allows; read before the bandwidth benchmark allocates its buffer):
 *                   mapped weights that were touched + KV cache + scratch;
 *   cpu_frac        CPU time the process received during the timed runs ÷ (wall time ×
 *                   threads): below 1 when threads waited for work or for a CPU;
 *   wait_frac       time the threads sat runnable in the run queue (schedstat run_delay)
 *                   ÷ (wall time × threads): on a shared machine, how much of the asked-for
 *                   cores other processes took — speeds measured with a high value
 *                   understate the code;
 *   roofline_frac   tg tok/s × bytes read per token ÷ read bandwidth, where bytes per
 *                   token = every weight tensor once, except the token-embedding table,
 *                   which contributes one row (a lookup) unless it is also the output head,
 *                   + the KV cache rows attended at the test's mean depth (D + (N+1)/2
 *                   for tgN @ dD).
 *                   Bandwidth, unless given (--bw-gbps): before the first tg repetition
 *                   and after each one, a plain read (membw.c's kernel, best of 2 passes)
 *                   of the model's own tensor data by the test's thread count — the bytes
 *                   decode reads, in the same memory state (with weights repacked at
 *                   load: the repacked buffer and a separate output matrix); a repetition is held to the
 *                   mean of the reads just before and just after it (one read before it
 *                   alone, a ~50 ms sample of a ~2 s run, swung the ratio by up to ±8
 *                   points between runs), and the roofline is the median of the
 *                   per-repetition ratios (bw_gbps: the median bandwidth). On
 *                   the shared dev VM the read bandwidth moved between ~36 and ~80 GB/s
 *                   (2 threads) within minutes, so a separate measurement made a poor
 *                   yardstick. One thread cannot drive what all cores can (~31 vs ~55
 *                   GB/s there), so 1-thread decode is held to what 1 thread reads;
 *   roofline_frac_all  tg tok/s × bytes per token ÷ the all-physical-cores bandwidth of
 *                   edgellm_membw_measure over a buffer at least as large as the bytes a
 *                   token reads, measured after the tests (the machine's figure, the one
 *                   `plan` uses).
 *                   Decode from memory cannot beat 1.0 (vllm-project/vllm#7379: tok/s <= bandwidth /
 *                   bytes); a model whose weights stay in the CPU caches can (the CLI then
 *                   adds a note).
 */
#include "bench.h"
#include "../model/model.h"
#include "plan.h"
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define WARM_LOADS 3

/* ---------------------------------------------------------------- helpers ---- */

uint64_t edgellm_bench_weight_bytes_per_token(const edgellm_model *m)
{
    if (!m) return 0;
    uint64_t sum = 0;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(m->gguf); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(m->gguf, i);
        if (edgellm_str_eq(t->name, "token_embd.weight")) {
            uint64_t rows = t->ne[0] ? t->n_elements / (uint64_t)t->ne[0] : 1;
            sum += rows ? t->size_bytes / rows : 0;                /* one row looked up */
            if (m->tied_output) sum += t->size_bytes;              /* and the whole head */
        } else {
            sum += t->size_bytes;
        }
    }
    return sum;
}

uint64_t edgellm_bench_kv_bytes_per_token(const edgellm_model *m, int n_attended, int kv_type)
{
    if (!m || n_attended <= 0) return 0;
    const uint64_t row = kv_type == EDGELLM_TYPE_F16 || kv_type == EDGELLM_TYPE_Q8_0
                             ? (uint64_t)edgellm_type_row_size(kv_type, m->hp.kv_dim)   /* Q8_0: 34 B per 32 */
                             : (uint64_t)m->hp.kv_dim * sizeof(float);
    return 2ull * (uint64_t)m->hp.n_layer * (uint64_t)n_attended * row;
}

void edgellm_bench_ftype_label(const edgellm_model *m, char *buf, size_t size)
{
    /* llama.cpp's general.file_type values (ggml-org/ggml docs/gguf.md) */
    static const struct { int id; const char *name; } ftypes[] = {
        {0, "F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"}, {8, "Q5_0"}, {9, "Q5_1"},
        {10, "Q2_K"}, {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"},
        {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},
    };
    int64_t ft;
    edgellm_str s;
    if (edgellm_gguf_get_i64(m->gguf, "general.file_type", &ft))
        for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
            if (ftypes[i].id == ft) { snprintf(buf, size, "%s", ftypes[i].name); return; }
    if (edgellm_gguf_get_str(m->gguf, "edgellm.quant.scheme", &s)) {
        snprintf(buf, size, "%.*s", (int)EDGELLM_MIN(s.len, (uint64_t)60), s.ptr);
        return;
    }
    /* the type holding the most bytes */
    uint64_t best = 0;
    int best_type = -1;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(m->gguf); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(m->gguf, i);
        uint64_t sum = 0;
        for (int64_t k = 0; k < edgellm_gguf_n_tensors(m->gguf); k++)
            if (edgellm_gguf_tensor_at(m->gguf, k)->type == t->type) sum += edgellm_gguf_tensor_at(m->gguf, k)->size_bytes;
        if (sum > best) { best = sum; best_type = t->type; }
    }
    snprintf(buf, size, "%s", edgellm_type_name(best_type));
}

uint64_t edgellm_bench_peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned long long kb = 0;
        int found = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) { found = 1; break; }
        fclose(f);
        if (found) return (uint64_t)kb * 1024;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) return (uint64_t)ru.ru_maxrss * 1024;   /* Linux: kB */
    return 0;
}

/* Ask the kernel to drop the file's cached pages; returns the fraction still resident
 * afterwards (mincore), or -1 when it cannot tell. */
static double drop_page_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* never wait on a FIFO */
    if (fd < 0) return -1;
    double frac = -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        long page = sysconf(_SC_PAGESIZE);
        size_t len = (size_t)st.st_size, n_pages = (len + (size_t)page - 1) / (size_t)page;
        void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        unsigned char *vec = map != MAP_FAILED ? edgellm_malloc(n_pages) : NULL;
        if (vec && mincore(map, len, vec) == 0) {
            size_t resident = 0;
            for (size_t i = 0; i < n_pages; i++) resident += vec[i] & 1;
            frac = (double)resident / (double)n_pages;
        }
        edgellm_free(vec);
        if (map != MAP_FAILED) munmap(map, len);
    }
    close(fd);
    return frac;
}

/* Reset the peak-RSS watermark (Linux >= 4.0: writing 5 to clear_refs); false if refused. */
static bool reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* CPU seconds (user + system) this process has used: CLOCK_PROCESS_CPUTIME_ID (the
 * scheduler's exact runtime, all threads, exited ones included). getrusage only as a
 * fallback: Linux splits its user/system times by timer ticks and keeps them monotonic,
 * so over a run of a few milliseconds their sum can be a tick off (a 1-thread pp16 of
 * stories260K showed 110 % CPU). */
static double cpu_seconds(void)
{
#if defined(CLOCK_PROCESS_CPUTIME_ID)
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Seconds all threads of this process spent runnable but not running (the second field of
 * /proc/self/task/TID/schedstat, ns); < 0 when the kernel does not expose it. */
static double runqueue_seconds(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    double sum = 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long run_ns, wait_ns;
        if (f && fscanf(f, "%llu %llu", &run_ns, &wait_ns) == 2) { sum += (double)wait_ns * 1e-9; n++; }
        if (f) fclose(f);
    }
    closedir(d);
    return n ? sum : -1;
}

static void stats(const double *x, int n, double *mean, double *sd)
{
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
}

/* Fixed pseudo-random token ids (an LCG), identical for every run. */
static void fill_tokens(int32_t *ids, int n, int n_vocab, uint32_t salt)
{
    uint32_t x = 2463534242u ^ salt;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        ids[i] = (int32_t)((x >> 8) % (uint32_t)n_vocab);
    }
}

/* ---------------------------------------------------------------- tests ---- */

/* Up to two byte ranges of the weights that decode streams (see edgellm_bench). */
typedef struct {
    const void *data[2];
    size_t bytes[2];
} weight_ranges;

/* Plain-read bandwidth of the ranges with n_threads threads, GB/s (0 when unknown). */
static double read_ranges_gbps(const weight_ranges *w, int n_threads)
{
    double bytes = 0, seconds = 0;
    for (int k = 0; k < 2; k++) {
        if (!w->data[k] || w->bytes[k] < ((size_t)1 << 20)) continue;   /* skip slivers */
        double g = edgellm_membw_read_gbps(w->data[k], w->bytes[k], n_threads, 2);
        if (!(g > 0)) return 0;
        bytes += (double)w->bytes[k];
        seconds += (double)w->bytes[k] / (g * 1e9);
    }
    return seconds > 0 ? bytes / seconds / 1e9 : 0;
}

typedef struct {
    edgellm_ctx *c;
    int depth;                  /* tokens in the cache when a run starts                    */
    int start_past;             /* edgellm_ctx_n_past when the last run started (= depth)   */
    const int32_t *pp_tok, *tg_tok;
    const edgellm_bench_params *p;
    edgellm_error *err;
    const weight_ranges *weights;   /* for the paired bandwidth read                       */
    uint64_t tg_bytes;          /* bytes a tg token reads (roofline)                        */
} runner;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Back to the state a run starts from: an empty cache, or the depth's tokens. */
static edgellm_status rewind_ctx(runner *r)
{
    edgellm_status rc = EDGELLM_OK;
    if (r->depth == 0) edgellm_ctx_reset(r->c);
    else rc = edgellm_ctx_truncate(r->c, r->depth, r->err);
    r->start_past = edgellm_ctx_n_past(r->c);
    return rc;
}

/* One pp run: ns of the prompt pass, and of prompt + first decode in *ttft_ns. */
static edgellm_status run_pp(runner *r, double *ns, double *ttft_ns)
{
    edgellm_status rc0 = rewind_ctx(r);
    if (rc0 != EDGELLM_OK) return rc0;
    double t0 = edgellm_time_ms();
    edgellm_status rc = edgellm_decode(r->c, r->pp_tok, r->p->n_prompt, NULL, r->err);
    double t1 = edgellm_time_ms();
    if (rc == EDGELLM_OK) rc = edgellm_decode(r->c, r->tg_tok, 1, NULL, r->err);
    double t2 = edgellm_time_ms();
    *ns = (t1 - t0) * 1e6;
    if (ttft_ns) *ttft_ns = (t2 - t0) * 1e6;
    return rc;
}

static edgellm_status run_tg(runner *r, int n, double *ns)
{
    edgellm_status rc0 = rewind_ctx(r);
    if (rc0 != EDGELLM_OK) return rc0;
    double t0 = edgellm_time_ms();
    for (int i = 0; i < n; i++) {
        edgellm_status rc = edgellm_decode(r->c, r->tg_tok + i, 1, NULL, r->err);
        if (rc != EDGELLM_OK) return rc;
    }
    *ns = (edgellm_time_ms() - t0) * 1e6;
    return EDGELLM_OK;
}

static edgellm_status run_test(runner *r, bool is_pp, int n_threads, edgellm_bench_result *res)
{
    const edgellm_bench_params *p = r->p;
    const int n = is_pp ? p->n_prompt : p->n_gen;
    double *ns = edgellm_calloc((size_t)p->n_reps, sizeof *ns), *ts = edgellm_calloc((size_t)p->n_reps, sizeof *ts);
    double *ttft = edgellm_calloc((size_t)p->n_reps, sizeof *ttft), dummy;
    double *gb = edgellm_calloc((size_t)p->n_reps, sizeof *gb), *frac = edgellm_calloc((size_t)p->n_reps, sizeof *frac);
    /* tg, bandwidth not given: before the first repetition and after every one, a plain
     * read of the model's own tensor data with the same threads (bytes the token reads, in
     * the same memory state); a repetition's bandwidth is the mean of the reads just before
     * and just after it, the roofline the median of the per-repetition ratios, which a
     * machine whose bandwidth drifts (shared hosts, thermal limits) does not skew */
    const bool paired = !is_pp && !(p->bw_gbps > 0) && r->weights && r->tg_bytes > 0;
    edgellm_status rc = EDGELLM_OK;
    if (!ns || !ts || !ttft || !gb || !frac) { rc = edgellm_fail_nomem(r->err, "bench"); goto done; }
    memset(res, 0, sizeof *res);
    res->n_prompt = is_pp ? n : 0;
    res->n_gen = is_pp ? 0 : n;
    res->n_threads = n_threads;
    res->n_reps = p->n_reps;
    if (p->warmup) rc = is_pp ? run_pp(r, &dummy, NULL) : run_tg(r, 1, &dummy);
    /* the run-queue read (a /proc walk) outside both windows: it is no run's work; the
     * CPU-time window nests inside the wall-time one (one thread: <= 100 %) */
    const double wait_t0 = edgellm_time_ms(), wait0 = runqueue_seconds(), wall0 = edgellm_time_ms(),
                 cpu0 = cpu_seconds();
    double gb_prev = paired ? read_ranges_gbps(r->weights, n_threads) : 0;
    for (int i = 0; rc == EDGELLM_OK && i < p->n_reps; i++) {
        rc = is_pp ? run_pp(r, &ns[i], &ttft[i]) : run_tg(r, n, &ns[i]);
        if (paired) {               /* the reads just before and just after this repetition */
            const double gb_next = read_ranges_gbps(r->weights, n_threads);
            gb[i] = gb_prev > 0 && gb_next > 0 ? 0.5 * (gb_prev + gb_next) : 0;
            gb_prev = gb_next;
        }
        ts[i] = ns[i] > 0 ? (double)n * 1e9 / ns[i] : 0;
        frac[i] = gb[i] > 0 ? ts[i] * (double)r->tg_bytes / (gb[i] * 1e9) : 0;
    }
    if (rc != EDGELLM_OK) goto done;
    res->n_depth = r->start_past;   /* where the runs started: the cache they attended to */
    if (res->n_depth > 0) snprintf(res->test, sizeof res->test, "%s%d @ d%d", is_pp ? "pp" : "tg", n, res->n_depth);
    else snprintf(res->test, sizeof res->test, "%s%d", is_pp ? "pp" : "tg", n);
    if (paired && gb[0] > 0) {
        res->bw_gbps = median(gb, p->n_reps);
        res->roofline_frac = median(frac, p->n_reps);
    }
    const double cpu1 = cpu_seconds();
    const double wall_s = (edgellm_time_ms() - wall0) * 1e-3;   /* reads included: same threads */
    res->cpu_frac = wall_s > 0 ? (cpu1 - cpu0) / (wall_s * n_threads) : 0;
    /* over its own window, which holds both /proc walks: the run-queue delay between the two
     * reads happened inside it, so the fraction stays <= 1 even for a test shorter than a walk */
    const double wait1 = runqueue_seconds(), wait_s = (edgellm_time_ms() - wait_t0) * 1e-3;
    res->wait_frac = wait_s > 0 && wait0 >= 0 && wait1 >= 0 ? (wait1 - wait0) / (wait_s * n_threads) : -1;
    stats(ns, p->n_reps, &res->avg_ns, &res->stddev_ns);
    stats(ts, p->n_reps, &res->avg_ts, &res->stddev_ts);
    for (int i = 0; i < p->n_reps && i < 32; i++) res->samples_ts[i] = ts[i];
    if (is_pp) {
        double sd;
        stats(ttft, p->n_reps, &res->ttft_ms, &sd);
        res->ttft_ms /= 1e6;
    }
done:
    edgellm_free(ns);
    edgellm_free(ts);
    edgellm_free(ttft);
    edgellm_free(gb);
    edgellm_free(frac);
    return rc;
}

/* Read bandwidth with n_threads threads, GB/s: over a buffer at least as large as what one
 * token reads (capped at 1 GiB), so a large last-level cache flatters neither the model nor
 * the benchmark; the budget grows with the buffer because first touches of a big buffer are
 * slow on some VMs. */
static edgellm_status measure_bw(const edgellm_bench_report *r, int n_threads, int bw_ms, double *gbps,
                                 edgellm_error *err)
{
    edgellm_membw_params bp = edgellm_membw_default_params();
    size_t want = (size_t)EDGELLM_MIN(r->weight_bytes_per_token, (uint64_t)1 << 30);
    bp.n_threads = n_threads;
    bp.buffer_bytes = EDGELLM_MAX(edgellm_membw_auto_bytes(), want);
    bp.max_ms = EDGELLM_MAX(bw_ms > 0 ? bw_ms : 1000, (int)(bp.buffer_bytes >> 20) * 8);
    edgellm_membw_result br;
    edgellm_status rc = edgellm_membw_measure(&bp, &br, err);
    if (rc == EDGELLM_OK) *gbps = br.best_gbps;
    return rc;
}

/* ---------------------------------------------------------------- entry ---- */

edgellm_bench_params edgellm_bench_default_params(void)
{
    edgellm_bench_params p;
    memset(&p, 0, sizeof p);
    p.n_prompt = 128;
    p.n_gen = 64;
    p.n_reps = 5;
    p.warmup = 1;
    p.cold_load = 1;
    p.bw_ms = 1000;
    return p;
}

static void describe(const edgellm_model *m, edgellm_bench_report *r)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    snprintf(r->arch, sizeof r->arch, "%s", info.arch);
    edgellm_bench_ftype_label(m, r->ftype, sizeof r->ftype);
    r->model_size = info.weight_bytes;
    r->model_n_params = info.n_params;
    r->weight_bytes_per_token = edgellm_bench_weight_bytes_per_token(m);
    char size[16];
    double np = (double)info.n_params;
    if (np >= 1e9) snprintf(size, sizeof size, "%.1fB", np / 1e9);
    else if (np >= 1e7) snprintf(size, sizeof size, "%.0fM", np / 1e6);
    else snprintf(size, sizeof size, "%.2gM", np / 1e6);   /* stories260K: 0.29M, not 0M */
    snprintf(r->model_type, sizeof r->model_type, "%s %s %s", info.arch, size, r->ftype);
}

edgellm_status edgellm_bench(const char *path, const edgellm_bench_params *pp, edgellm_bench_report *r,
                             edgellm_error *err)
{
    if (!path || !r) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: NULL path or report");
    edgellm_bench_params p = pp ? *pp : edgellm_bench_default_params();
    memset(r, 0, sizeof *r);
    r->kv_type = p.kv_type;
    if (p.n_prompt < 0 || p.n_gen < 0 || (p.n_prompt == 0 && p.n_gen == 0) || p.n_reps < 1 || p.n_reps > 1000 ||
        p.n_threads_list < 0 || p.n_threads_list > EDGELLM_BENCH_MAX_THREADS_LIST || p.n_prompt > (1 << 20) ||
        p.n_gen > (1 << 20))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: -p %d / -n %d must be >= 0 and not both 0; -r %d in "
                            "1..1000; at most %d thread counts", p.n_prompt, p.n_gen, p.n_reps,
                            EDGELLM_BENCH_MAX_THREADS_LIST);
    if (p.n_threads_list == 0) {
        p.threads[0] = EDGELLM_MIN(edgellm_n_physical_cores(), EDGELLM_MAX_THREADS);
        p.n_threads_list = 1;
    }
    if (p.n_depths < 0 || p.n_depths > EDGELLM_BENCH_MAX_DEPTHS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: %d depths, expected at most %d", p.n_depths,
                            EDGELLM_BENCH_MAX_DEPTHS);
    if (p.n_depths == 0) {
        p.depths[0] = 0;
        p.n_depths = 1;
    }
    int max_depth = 0;
    for (int i = 0; i < p.n_depths; i++) {
        if (p.depths[i] < 0 || p.depths[i] > (1 << 20))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: depth %d outside 0..%d", p.depths[i], 1 << 20);
        max_depth = EDGELLM_MAX(max_depth, p.depths[i]);
    }
    const int n_kinds = (p.n_prompt > 0) + (p.n_gen > 0);
    if (p.n_threads_list * p.n_depths * n_kinds > EDGELLM_BENCH_MAX_RESULTS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: %d thread counts x %d depths x %d tests is more than %d",
                            p.n_threads_list, p.n_depths, n_kinds, EDGELLM_BENCH_MAX_RESULTS);
    for (int i = 0; i < p.n_threads_list; i++)
        if (p.threads[i] < 1 || p.threads[i] > EDGELLM_MAX_THREADS)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: thread count %d outside 1..%d", p.threads[i],
                                EDGELLM_MAX_THREADS);

    edgellm_status rc = EDGELLM_OK;
    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    int32_t *pp_tok = NULL, *tg_tok = NULL, *dp_tok = NULL;

    (void)reset_peak_rss();   /* so an earlier model of the same process does not count */
    /* load: cold first (when the kernel lets us drop the cache), then warm */
    double resident = p.cold_load ? drop_page_cache(path) : -1;
    double t0 = edgellm_time_ms();
    if ((rc = edgellm_model_load(path, NULL, &m, err)) != EDGELLM_OK) return rc;
    r->load_ms = edgellm_time_ms() - t0;
    r->load_cold = resident >= 0 && resident < 0.10;
    r->n_repacked = m->n_repacked;
    r->repack_ms = m->repack_ms;
    r->n_stored = m->n_stored;
    double warm = 0;
    for (int i = 0; i < WARM_LOADS; i++) {
        edgellm_model_free(m);
        m = NULL;
        t0 = edgellm_time_ms();
        if ((rc = edgellm_model_load(path, NULL, &m, err)) != EDGELLM_OK) return rc;
        warm += edgellm_time_ms() - t0;
    }
    r->load_warm_ms = warm / WARM_LOADS;
    describe(m, r);
    /* what the paired bandwidth read streams: the tensor data section of the mapping, in
     * two ranges around the token-embedding table when a separate output matrix exists
     * (decode then reads one row of it; reading it all would also inflate the peak RSS) */
    weight_ranges wr = {0};
    if (m->repack_buf) {
        /* weights repacked at load (dispatch.h) are read from their owned buffer, not the
         * mapping: that buffer, and the output matrix when it stayed in the mapping (the
         * other matrices left in place, e.g. Q5_K_M's Q5_K ones, are not read: the
         * mapping's pages of the repacked ones must stay untouched for the peak RSS) */
        wr.data[0] = m->repack_buf;
        wr.bytes[0] = m->repack_bytes;
        if (!m->tied_output && m->output.data && !edgellm_model_owns(m, m->output.data)) {
            wr.data[1] = m->output.data;
            wr.bytes[1] = (size_t)m->output.ne1 * m->output.row_bytes;
        }
    } else if (edgellm_gguf_n_tensors(m->gguf) > 0) {
        const edgellm_gguf_tensor *t0 = edgellm_gguf_tensor_at(m->gguf, 0);
        const uint8_t *base = (const uint8_t *)t0->data - t0->offset;
        size_t size = (size_t)(edgellm_gguf_file_size(m->gguf) - edgellm_gguf_data_offset(m->gguf));
        const edgellm_gguf_tensor *emb = edgellm_gguf_find_tensor(m->gguf, "token_embd.weight");
        if (emb && edgellm_gguf_find_tensor(m->gguf, "output.weight")) {
            wr.data[0] = base;
            wr.bytes[0] = (size_t)emb->offset;
            wr.data[1] = (const uint8_t *)emb->data + emb->size_bytes;
            wr.bytes[1] = size - (size_t)(emb->offset + emb->size_bytes);
        } else {
            wr.data[0] = base;
            wr.bytes[0] = size;
        }
    }

    const int n_vocab = m->hp.n_vocab;
    pp_tok = edgellm_malloc((size_t)EDGELLM_MAX(p.n_prompt, 1) * sizeof *pp_tok);
    tg_tok = edgellm_malloc((size_t)EDGELLM_MAX(p.n_gen, 1) * sizeof *tg_tok);
    dp_tok = edgellm_malloc((size_t)EDGELLM_MAX(max_depth, 1) * sizeof *dp_tok);
    if (!pp_tok || !tg_tok || !dp_tok) { rc = edgellm_fail_nomem(err, path); goto done; }
    fill_tokens(pp_tok, p.n_prompt, n_vocab, 1);
    fill_tokens(tg_tok, EDGELLM_MAX(p.n_gen, 1), n_vocab, 2);
    fill_tokens(dp_tok, max_depth, n_vocab, 3);

    const int n_tests = p.n_threads_list * p.n_depths * n_kinds;
    int done_tests = 0;
    for (int ti = 0; ti < p.n_threads_list && rc == EDGELLM_OK; ti++) {
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = max_depth + p.n_prompt + EDGELLM_MAX(p.n_gen, 1) + 1;
        cp.n_threads = p.threads[ti];
        cp.kv_type = p.kv_type;
        if ((rc = edgellm_ctx_new(m, &cp, &c, err)) != EDGELLM_OK) break;
        for (int di = 0; di < p.n_depths && rc == EDGELLM_OK; di++) {
            const int depth = p.depths[di];
            runner run = {c, depth, 0, pp_tok, tg_tok, &p, err, &wr,
                          r->weight_bytes_per_token +
                              edgellm_bench_kv_bytes_per_token(m, depth + (p.n_gen + 1) / 2, p.kv_type)};
            if (depth > 0) {                /* the depth's tokens, once, untimed */
                edgellm_ctx_reset(c);
                if ((rc = edgellm_decode(c, dp_tok, depth, NULL, err)) != EDGELLM_OK) break;
            }
            for (int k = 0; k < 2 && rc == EDGELLM_OK; k++) {
                bool is_pp = k == 0;
                if ((is_pp ? p.n_prompt : p.n_gen) == 0) continue;
                if (p.progress) {
                    char what[64], at[24] = "";
                    if (depth > 0) snprintf(at, sizeof at, " @ d%d", depth);
                    snprintf(what, sizeof what, "%s%d%s, %d thread%s", is_pp ? "pp" : "tg", is_pp ? p.n_prompt : p.n_gen,
                             at, p.threads[ti], p.threads[ti] == 1 ? "" : "s");
                    if (p.progress(p.progress_user, (double)done_tests / n_tests, what)) {
                        rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: bench cancelled", path);
                        break;
                    }
                }
                edgellm_bench_result *res = &r->results[r->n_results];
                if ((rc = run_test(&run, is_pp, p.threads[ti], res)) != EDGELLM_OK) break;
                if (!is_pp) res->bytes_per_token = run.tg_bytes;
                r->n_results++;
                done_tests++;
            }
        }
        edgellm_ctx_free(c);
        c = NULL;
    }
    if (rc != EDGELLM_OK) goto done;
    r->peak_rss_bytes = edgellm_bench_peak_rss();

    /* the roofline: measured after the RSS snapshot (its buffer would inflate the peak) */
    r->bw_gbps = p.bw_gbps;
    if (!(r->bw_gbps > 0)) {
        /* the default thread count: the machine's figure, as plan uses it (each tg test's own
         * figure was read beside it, run_test) */
        r->bw_n_threads = EDGELLM_MIN(edgellm_n_physical_cores(), EDGELLM_MAX_THREADS);
        if ((rc = measure_bw(r, r->bw_n_threads, p.bw_ms, &r->bw_gbps, err)) != EDGELLM_OK) goto done;
        r->bw_measured = 1;
    }
    for (int i = 0; i < r->n_results; i++) {
        edgellm_bench_result *res = &r->results[i];
        if (res->n_gen == 0 || !(r->bw_gbps > 0)) continue;
        if (!(res->bw_gbps > 0)) res->bw_gbps = r->bw_gbps;   /* given (or the paired read failed) */
        if (!(res->roofline_frac > 0))
            res->roofline_frac = res->avg_ts * (double)res->bytes_per_token / (res->bw_gbps * 1e9);
        res->roofline_frac_all = res->avg_ts * (double)res->bytes_per_token / (r->bw_gbps * 1e9);
    }
    if (p.progress && p.progress(p.progress_user, 1.0, "done"))
        rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: bench cancelled", path);
done:
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    edgellm_free(pp_tok);
    edgellm_free(tg_tok);
    edgellm_free(dp_tok);
    return rc;
}

/* ------------------------------------------------------------ batched ---- */
/*
 * edgellm_batched_bench: llama.cpp's batched-bench (ggml-org/llama.cpp
 * tools/batched-bench/batched-bench.cpp), prompt not shared, decode pattern "0123 0123 ...":
 *   clear the cache; T_PP = one edgellm_decode_batch of B x PP tokens (sequence j at
 *   positions 0..PP-1, the last token of each giving logits); T_TG = TG calls of
 *   edgellm_decode_batch with one token per sequence at position PP + i;
 *   S_PP = B x PP / T_PP, S_TG = B x TG / T_TG, T = T_PP + T_TG, S = B x (PP + TG) / T,
 *   N_KV = B x (PP + TG).
 * batched-bench runs each configuration once after one 16-token warm-up; here the warm-up
 * is one PP pass of the largest B and one TG step (every weight read, the first-pass
 * schedule of matmul.c spent), and n_reps runs per B are averaged (time, then speed).
 * s_tg_peak (B / the fastest TG step of the runs) is added: on a shared machine the mean
 * S_TG mixes in steps that other processes slowed, the fastest step shows the code.
 */

edgellm_batched_bench_params edgellm_batched_bench_default_params(void)
{
    edgellm_batched_bench_params p;
    memset(&p, 0, sizeof p);
    p.n_prompt = 128;
    p.n_gen = 64;
    p.n_reps = 1;
    p.warmup = 1;
    return p;
}

/* One run of B sequences: the prompt pass and the TG steps, in seconds. */
static edgellm_status batched_run(edgellm_ctx *c, int B, int pp, int tg, const int32_t *tok, int32_t *bt, int32_t *bs,
                                  int32_t *bp, double *t_pp, double *t_tg, double *t_step_min, edgellm_error *err)
{
    edgellm_status rc = edgellm_seq_clear(c, -1, err);
    if (rc != EDGELLM_OK) return rc;
    int m = 0;
    for (int j = 0; j < B; j++)
        for (int i = 0; i < pp; i++) {
            bt[m] = tok[(size_t)j * (size_t)(pp + tg) + (size_t)i];
            bs[m] = j;
            bp[m++] = i;
        }
    double t0 = edgellm_time_ms();
    if (m > 0) {
        const edgellm_batch b = {.size = sizeof b, .n_tokens = m, .tokens = bt, .seq = bs, .pos = bp};
        if ((rc = edgellm_decode_batch(c, &b, err)) != EDGELLM_OK) return rc;
    }
    double t1 = edgellm_time_ms(), ts = t1;
    for (int i = 0; i < tg; i++) {
        for (int j = 0; j < B; j++) {
            bt[j] = tok[(size_t)j * (size_t)(pp + tg) + (size_t)(pp + i)];
            bs[j] = j;
            bp[j] = pp + i;
        }
        const edgellm_batch b = {.size = sizeof b, .n_tokens = B, .tokens = bt, .seq = bs, .pos = bp};
        if ((rc = edgellm_decode_batch(c, &b, err)) != EDGELLM_OK) return rc;
        const double te = edgellm_time_ms();
        if (i == 0 || (te - ts) / 1000.0 < *t_step_min) *t_step_min = (te - ts) / 1000.0;
        ts = te;
    }
    double t2 = edgellm_time_ms();
    *t_pp = (t1 - t0) / 1000.0;
    *t_tg = (t2 - t1) / 1000.0;
    return EDGELLM_OK;
}

edgellm_status edgellm_batched_bench(const char *path, const edgellm_batched_bench_params *pp,
                                     edgellm_batched_bench_fn on_row, void *user, edgellm_error *err)
{
    if (!path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batched bench: NULL path");
    edgellm_batched_bench_params p = pp ? *pp : edgellm_batched_bench_default_params();
    if (p.n_sizes == 0) {
        static const int dflt[] = {1, 2, 4, 8};
        memcpy(p.sizes, dflt, sizeof dflt);
        p.n_sizes = 4;
    }
    if (p.n_prompt < 0 || p.n_gen < 1 || p.n_prompt > (1 << 20) || p.n_gen > (1 << 20) || p.n_reps < 1 ||
        p.n_reps > 1000 || p.n_sizes < 0 || p.n_sizes > EDGELLM_BATCHED_MAX_SIZES)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batched bench: PP %d must be >= 0, TG %d >= 1, runs %d in "
                            "1..1000, at most %d batch sizes", p.n_prompt, p.n_gen, p.n_reps,
                            EDGELLM_BATCHED_MAX_SIZES);
    int max_b = 0;
    for (int i = 0; i < p.n_sizes; i++) {
        if (p.sizes[i] < 1 || p.sizes[i] > 64)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batched bench: batch size %d outside 1..64", p.sizes[i]);
        max_b = EDGELLM_MAX(max_b, p.sizes[i]);
    }
    if (p.n_threads <= 0) p.n_threads = EDGELLM_MIN(edgellm_n_physical_cores(), EDGELLM_MAX_THREADS);
    if (p.n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batched bench: thread count %d outside 1..%d", p.n_threads,
                            EDGELLM_MAX_THREADS);
    const int per_seq = p.n_prompt + p.n_gen;
    if ((int64_t)max_b * per_seq > (1 << 24))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batched bench: B %d x (PP + TG) %d cells is too many", max_b,
                            per_seq);

    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    int32_t *tok = NULL, *bt = NULL, *bs = NULL, *bp = NULL;
    edgellm_status rc = edgellm_model_load(path, NULL, &m, err);
    if (rc != EDGELLM_OK) return rc;
    edgellm_bench_report desc;   /* for describe(): model_type, sizes */
    memset(&desc, 0, sizeof desc);
    describe(m, &desc);
    edgellm_batched_bench_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.model_type, sizeof info.model_type, "%s", desc.model_type);
    info.model_size = desc.model_size;
    info.model_n_params = desc.model_n_params;
    info.n_threads = p.n_threads;
    info.kv_type = p.kv_type;

    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = per_seq;
    cp.n_threads = p.n_threads;
    cp.kv_type = p.kv_type;
    cp.n_seq = max_b;
    if ((rc = edgellm_ctx_new(m, &cp, &c, err)) != EDGELLM_OK) goto done;
    info.n_seq = c->n_seq;
    info.n_ctx = c->n_ctx;
    info.kv_bytes_per_seq = c->kv.size_bytes / (size_t)c->n_seq;

    const size_t n_tok = (size_t)max_b * (size_t)per_seq;
    tok = edgellm_malloc(n_tok * sizeof *tok);
    bt = edgellm_malloc(n_tok * sizeof *bt);
    bs = edgellm_malloc(n_tok * sizeof *bs);
    bp = edgellm_malloc(n_tok * sizeof *bp);
    if (!tok || !bt || !bs || !bp) { rc = edgellm_fail_nomem(err, path); goto done; }
    fill_tokens(tok, (int)n_tok, m->hp.n_vocab, 4);

    if (p.warmup) {
        double a, b, m1;
        if ((rc = batched_run(c, max_b, p.n_prompt, 1, tok, bt, bs, bp, &a, &b, &m1, err)) != EDGELLM_OK) goto done;
    }
    for (int si = 0; si < p.n_sizes; si++) {
        const int B = p.sizes[si];
        if (p.progress) {
            char what[64];
            snprintf(what, sizeof what, "B=%d: PP %d, TG %d, %d thread%s", B, p.n_prompt, p.n_gen, p.n_threads,
                     p.n_threads == 1 ? "" : "s");
            if (p.progress(p.progress_user, (double)si / p.n_sizes, what)) {
                rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: bench cancelled", path);
                goto done;
            }
        }
        edgellm_batched_bench_row row;
        memset(&row, 0, sizeof row);
        row.pp = p.n_prompt, row.tg = p.n_gen, row.b = B;
        row.n_kv = B * per_seq;
        const double wait_t0 = edgellm_time_ms(), wait0 = runqueue_seconds();
        double step_min = 0;
        for (int r = 0; r < p.n_reps; r++) {
            double a, b, m1 = 0;
            if ((rc = batched_run(c, B, p.n_prompt, p.n_gen, tok, bt, bs, bp, &a, &b, &m1, err)) != EDGELLM_OK) goto done;
            row.t_pp += a / p.n_reps;
            row.t_tg += b / p.n_reps;
            if (r == 0 || m1 < step_min) step_min = m1;
        }
        row.s_tg_peak = step_min > 0 ? B / step_min : 0;
        const double wait1 = runqueue_seconds(), wait_s = (edgellm_time_ms() - wait_t0) * 1e-3;
        row.wait_frac = wait_s > 0 && wait0 >= 0 && wait1 >= 0 ? (wait1 - wait0) / (wait_s * p.n_threads) : -1;
        row.s_pp = row.t_pp > 0 ? (double)B * p.n_prompt / row.t_pp : 0;
        row.s_tg = row.t_tg > 0 ? (double)B * p.n_gen / row.t_tg : 0;
        row.t = row.t_pp + row.t_tg;
        row.s = row.t > 0 ? (double)B * per_seq / row.t : 0;
        if (on_row && on_row(&info, &row, user)) {
            rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: bench cancelled", path);
            goto done;
        }
    }
    if (p.progress && p.progress(p.progress_user, 1.0, "done"))
        rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: bench cancelled", path);
done:
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    edgellm_free(tok);
    edgellm_free(bt);
    edgellm_free(bs);
    edgellm_free(bp);
    return rc;
}
