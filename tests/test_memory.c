/* test_memory.c — the low-memory mode: peak RSS measured from /proc/self/status while a
 * synthesized 8-layer model decodes under a budget of about half its weights, with logits
 * bit-identical to the unbudgeted run; warm-up faults the weights in and leaves the context
 * empty; budgets below the minimum and mlock beyond RLIMIT_MEMLOCK are refused with the
 * numbers; bench's cold/warm first token and budget rows (library and CLI). */
#include "test_util.h"
#include <sys/resource.h>

/* A random-weight llama-shape model of n_layer layers (n_embd 512, 8 heads, vocab 1000) in
 * the given type, written to path; exits when it cannot be written. */
static void synth_model(const char *path, const char *name, int n_layer, int n_ff, const char *type, uint64_t seed)
{
    edgellm_synth_params p = edgellm_synth_default_params();
    p.shape = (edgellm_shape){.arch = "llama", .n_layer = n_layer, .n_embd = 512, .n_head = 8,
                              .n_head_kv = 8, .n_ff = n_ff, .n_vocab = 1000, .n_ctx_train = 256, .tied = 0,
                              .rope_theta = 10000, .rms_eps = 1e-5f};
    snprintf(p.shape.name, sizeof p.shape.name, "%s", name);
    p.type = type;
    p.seed = seed;
    p.n_threads = 2;
    edgellm_error err = {0};
    if (edgellm_synth(&p, path, NULL, NULL, &err) != EDGELLM_OK) {
        fprintf(stderr, "synth %s: %s\n", path, err.msg);
        exit(1);
    }
}

static const char *model_path(void)
{
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/mem8.gguf", test_tmpdir());
    synth_model(path, "mem8", 8, 1408, "q8_0", 3);
    return path;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Decode 24 tokens one at a time (as generation does); the last logits into out[n_vocab]. */
static void decode_some(edgellm_ctx *c, float *out, int n_vocab)
{
    for (int i = 0; i < 24; i++) {
        int32_t t = (int32_t)((i * 37 + 5) % n_vocab);
        CHECK_OK(edgellm_decode(c, &t, 1, NULL, &_e));
    }
    memcpy(out, edgellm_ctx_logits(c), sizeof(float) * (size_t)n_vocab);
}

static void test_budget_peak_rss(void)
{
    const char *path = model_path();
    const uint64_t size = file_size(path);
    edgellm_model *m = NULL;
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = 2;
    CHECK_OK(edgellm_model_load(path, &mp, &m, &_e));
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    float *ref = malloc(sizeof(float) * (size_t)info.n_vocab), *got = malloc(sizeof(float) * (size_t)info.n_vocab);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 64;
    edgellm_ctx *c = NULL;

    /* without a budget: every weight page ends up resident */
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
    edgellm_proc_mem before = {.size = sizeof before}, after = {.size = sizeof after};
    CHECK_OK(edgellm_proc_memory(&before, 1));
    decode_some(c, ref, info.n_vocab);
    CHECK_OK(edgellm_proc_memory(&after, 0));
    const double full_file_mib = after.rss_file_bytes / 1048576.0;
    edgellm_ctx_free(c);

    /* under half the file */
    const uint64_t budget = size / 2;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
    edgellm_membudget *b = NULL;
    CHECK_OK(edgellm_membudget_attach(c, budget, &b, &_e));
    edgellm_membudget_info bi = {.size = sizeof bi};
    edgellm_membudget_get_info(b, &bi);
    CHECK(bi.window_layers >= 1 && bi.window_layers < 8);
    CHECK_OK(edgellm_proc_memory(&before, 1));
    decode_some(c, got, info.n_vocab);
    CHECK_OK(edgellm_proc_memory(&after, 0));
    edgellm_membudget_get_info(b, &bi);
    fprintf(stderr, "  file %.1f MiB; RssFile without a budget %.1f MiB; budget %.1f MiB (window %d of 8 layers): "
                    "peak RSS %.1f MiB (anon before %.1f), RssFile %.1f MiB, %llu releases, peak reset %d\n",
            size / 1048576.0, full_file_mib, budget / 1048576.0, bi.window_layers, after.peak_rss_bytes / 1048576.0,
            before.rss_anon_bytes / 1048576.0, after.rss_file_bytes / 1048576.0, (unsigned long long)bi.n_released,
            before.peak_reset);
    CHECK(memcmp(ref, got, sizeof(float) * (size_t)info.n_vocab) == 0);   /* same numbers */
    CHECK(bi.n_released > 8);
    /* the weights this process holds: below the budget (plus the page-table slack of the
     * test program itself: its own binary's pages count as RssFile too) */
    CHECK(after.rss_file_bytes <= budget + (RSS_SANITIZED ? (32u << 20) : (8u << 20)));
    CHECK(full_file_mib * 1048576.0 > size * 0.8);
    if (before.peak_reset) {
        /* peak over the decode: the anonymous memory we had + the budget + slack */
        const uint64_t slack = RSS_SANITIZED ? (32u << 20) : (12u << 20);
        CHECK(after.peak_rss_bytes <= before.rss_anon_bytes + budget + slack);
        CHECK(after.peak_rss_bytes < before.rss_anon_bytes + size * 0.55 + slack);
    }
    edgellm_membudget_detach(b);
    edgellm_ctx_free(c);

    /* a budget below the output head + one layer is refused, with the minimum */
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
    edgellm_error err = {0};
    CHECK(edgellm_membudget_attach(c, 1 << 20, &b, &err) == EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "below the output head") != NULL);
    /* warm-up: weights resident, the context empty afterwards */
    double ms = 0;
    CHECK_OK(edgellm_warmup(c, &ms, &_e));
    CHECK(ms > 0);
    CHECK_EQ(edgellm_ctx_n_past(c), 0);
    CHECK_OK(edgellm_proc_memory(&after, 0));
    CHECK(after.rss_file_bytes > size * 0.9);
    int32_t t = 1;
    CHECK_OK(edgellm_decode(c, &t, 1, NULL, &_e));
    CHECK(edgellm_warmup(c, NULL, NULL) == EDGELLM_ERR_MISUSE);   /* not empty */
    edgellm_ctx_free(c);
    free(ref);
    free(got);
    edgellm_model_free(m);
}

static void test_mlock_limit(void)
{
    if (geteuid() == 0) {   /* root ignores RLIMIT_MEMLOCK; check the message in a child that drops it */
        fprintf(stderr, "  (root: mlock limit not enforced for root; the check runs as is)\n");
    }
    const char *path = model_path();
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {64 << 10, 64 << 10};
        setrlimit(RLIMIT_MEMLOCK, &rl);
        edgellm_model *m = NULL;
        edgellm_error err = {0};
        if (edgellm_model_load(path, NULL, &m, &err) != EDGELLM_OK) _exit(3);
        edgellm_status s = edgellm_model_mlock(m, &err);
        /* root may lock anyway (CAP_IPC_LOCK); otherwise the message names the limit */
        if (s == EDGELLM_OK) _exit(geteuid() == 0 ? 0 : 4);
        _exit(strstr(err.msg, "RLIMIT_MEMLOCK") ? 0 : 5);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* edgellm_bench_start and `edgellm bench --cold-warm --mem-budget`: the figures exist and
 * make sense (the file is this test's own, so the kernel may drop it; when it did not, the
 * output says so). */
static void test_bench_start(void)
{
    const char *path = model_path();
    const uint64_t size = file_size(path);
    edgellm_bench_start_params p = edgellm_bench_start_default_params();
    p.n_prompt = 8;
    p.n_gen = 4;
    p.n_threads = 1;
    p.cold_warm = 1;
    p.mem_budget_bytes = size / 2;
    edgellm_bench_start_report r;
    CHECK_OK(edgellm_bench_start(path, &p, &r, &_e));
    fprintf(stderr, "  cold: %.1f %% resident after the drop, load %.1f ms, first token %.1f ms; warm: warm-up %.1f ms, "
                    "first token %.1f ms; tg %.1f t/s, peak %.1f MiB without a budget, %.1f t/s, %.1f MiB with %.1f MiB\n",
            100 * r.cold_resident_frac, r.cold_load_ms, r.cold_ttft_ms, r.warmup_ms, r.warm_ttft_ms, r.full_tg_ts,
            r.full_peak_rss_bytes / 1048576.0, r.budget_tg_ts, r.budget_peak_rss_bytes / 1048576.0,
            p.mem_budget_bytes / 1048576.0);
    CHECK(r.cold_ttft_ms > 0 && r.warm_ttft_ms > 0 && r.warmup_ms > 0 && r.cold_load_ms > 0);
    CHECK(r.cold_resident_frac == -1 || (r.cold_resident_frac >= 0 && r.cold_resident_frac <= 1));
    CHECK_EQ(r.cold_dropped, r.cold_resident_frac >= 0 && r.cold_resident_frac < 0.10);
    CHECK(r.full_tg_ts > 0 && r.budget_tg_ts > 0);
    CHECK_EQ(r.n_layer, 8);
    CHECK(r.budget_window_layers >= 1 && r.budget_window_layers < 8);
    CHECK(r.full_peak_rss_bytes > 0 && r.budget_peak_rss_bytes > 0);
    if (!RSS_SANITIZED) CHECK(r.budget_peak_rss_bytes + size / 4 < r.full_peak_rss_bytes);
    p.n_prompt = 0;
    CHECK(edgellm_bench_start(path, &p, &r, NULL) == EDGELLM_ERR_MISUSE);

    char cmd[1400], out[600];
    snprintf(out, sizeof out, "%s/bench_start.md", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s bench -m %s -p 8 -n 4 -r 1 -t 1 --bw-gbps 5 --cold-warm --mem-budget %lluK >%s "
                              "2>/dev/null", EDGELLM_CLI, path, (unsigned long long)(size / 2048), out);
    CHECK_EQ(system(cmd), 0);
    size_t n = 0;
    char *md = read_file(out, &n);
    CHECK(md && strstr(md, "| start | load ms | warm-up ms | first token ms | page cache before the load |"));
    CHECK(md && strstr(md, "\n| cold | ") && strstr(md, "\n| warm (--warmup) | "));
    CHECK(md && (strstr(md, "dropped: ") || strstr(md, "NOT dropped: ")));
    CHECK(md && strstr(md, "| --mem-budget | tg t/s | peak RSS MiB | layers resident |") &&
          strstr(md, "\n| none | ") && strstr(md, " of 8 |"));
    free(md);
    snprintf(cmd, sizeof cmd, "%s bench -m %s -p 8 -n 4 -r 1 -t 1 --bw-gbps 5 --cold-warm -o json >%s 2>/dev/null",
             EDGELLM_CLI, path, out);
    CHECK_EQ(system(cmd), 0);
    md = read_file(out, &n);
    CHECK(md && strstr(md, "\"test\": \"start\"") && strstr(md, "\"cold_ttft_ms\": ") && strstr(md, "\"warm_ttft_ms\": "));
    free(md);
    snprintf(cmd, sizeof cmd, "%s bench -m %s --cold-warm -o csv >/dev/null 2>&1", EDGELLM_CLI, path);
    CHECK_EQ(WEXITSTATUS(system(cmd)), 2);
}

/* A model whose Q4_K matrices were repacked at load (owned memory, not the mapping: the
 * default where the kernel level has a layout) is refused by the budget with a message naming
 * the switch; loaded with EDGELLM_REPACK=0 it is accepted; `run --mem-budget` turns repacking
 * off by itself. Where this CPU has no layout the first load is already plain. */
static void test_budget_refuses_repacked(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mem_q4k.gguf", test_tmpdir());
    synth_model(path, "memk", 4, 1536, "q4_k", 5);   /* 1536: K-quant rows of 256 */
    const uint64_t budget = file_size(path) / 2;
    const char *saved = getenv("EDGELLM_REPACK");
    char saved_copy[16] = "";
    if (saved) snprintf(saved_copy, sizeof saved_copy, "%s", saved);
    bool refused = false;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) unsetenv("EDGELLM_REPACK");
        else setenv("EDGELLM_REPACK", "0", 1);
        edgellm_model *m = NULL;
        edgellm_ctx *c = NULL;
        edgellm_membudget *b = NULL;
        CHECK_OK(edgellm_model_load(path, NULL, &m, &_e));
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = 32;
        CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
        edgellm_error err = {0};
        const edgellm_status rc = edgellm_membudget_attach(c, budget, &b, &err);
        if (pass == 0 && rc != EDGELLM_OK) {
            refused = true;
            CHECK_EQ(rc, EDGELLM_ERR_UNSUPPORTED);
            CHECK(b == NULL);
            CHECK(strstr(err.msg, "repacked at load") && strstr(err.msg, "EDGELLM_REPACK=0"));
            /* --warmup and --mlock reach the repacked copy, not the mapping's pages of those
             * tensors: most of this file (its Q4_K matrices) stays out of the process */
            edgellm_proc_mem before = {.size = sizeof before}, after = {.size = sizeof after};
            CHECK_OK(edgellm_proc_memory(&before, 0));
            CHECK_OK(edgellm_warmup(c, NULL, &_e));
            CHECK_OK(edgellm_proc_memory(&after, 0));
            const double grew = (double)after.rss_file_bytes - (double)before.rss_file_bytes;
            fprintf(stderr, "  warm-up of the repacked model: file-backed RSS +%.1f MiB of a %.1f MiB file\n",
                    grew / 1048576.0, budget * 2 / 1048576.0);
            CHECK(grew < (double)budget * 2 * 0.5);
        } else {
            CHECK_EQ(rc, EDGELLM_OK);   /* plain weights: the budget applies */
            int32_t t = 7;
            CHECK_OK(edgellm_decode(c, &t, 1, NULL, &_e));
            edgellm_membudget_detach(b);
        }
        edgellm_ctx_free(c);
        edgellm_model_free(m);
    }
    fprintf(stderr, "  repacked at load by default on this CPU: %s\n", refused ? "yes (refused)" : "no");
    if (saved) setenv("EDGELLM_REPACK", saved_copy, 1);
    else unsetenv("EDGELLM_REPACK");
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "env -u EDGELLM_REPACK %s run -m %s -p 'Once upon a time' -n 4 -t 1 --mem-budget %lluK "
                              ">/dev/null 2>&1", EDGELLM_CLI, path, (unsigned long long)(budget / 1024));
    CHECK_EQ(system(cmd), 0);
    remove(path);
}

int main(void)
{
    RUN(test_budget_peak_rss);
    RUN(test_mlock_limit);
    RUN(test_bench_start);
    RUN(test_budget_refuses_repacked);
    return test_summary();
}
