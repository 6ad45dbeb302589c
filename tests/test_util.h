/*
 * test_util.h — the whole test harness: a few macros, fixture lookup and a runner.
 * Each tests/test_<module>.c defines test functions and a main() that calls RUN() on each,
 * then returns test_summary(). Exit 0 = pass, 1 = fail, 77 = skipped (CTest SKIP_RETURN_CODE).
 *
 * Running some cases only: EDGELLM_TEST_FILTER holds comma-separated patterns matched
 * against the test function's name; a pattern with *, ? or [ is a glob over the whole name
 * (fnmatch), any other pattern matches as a substring. Cases it leaves out are not run and
 * not counted; when it leaves out every case of a program, the program says so and exits
 * 77 (skipped). Example: EDGELLM_TEST_FILTER=ppl ./build/test_eval, or scripts/test.sh -k ppl.
 *
 * Fixtures: shared_path("models/...") looks in $EDGELLM_SHARED (default: the EDGELLM_SHARED
 * folder set by CMake, ../shared), then, for files only, in tests/fixtures (the small
 * fixtures kept in the repository, byte-identical copies; tests/fixtures/PROVENANCE.md).
 * A folder (e.g. "data/vocab") is found only in the shared folder: tests that take one
 * expect all of its files. docs/testing.md says how to run the suite.
 */
#ifndef EDGELLM_TEST_UTIL_H
#define EDGELLM_TEST_UTIL_H

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700   /* nftw */
#endif
#include "edgellm_tools.h"
#include <fnmatch.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* AddressSanitizer keeps freed memory in quarantine and its instrumented binary is larger:
 * resident-memory bounds get more room there (gcc: __SANITIZE_ADDRESS__; clang: __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_SANITIZED 1
#endif
#endif
#ifndef RSS_SANITIZED
#define RSS_SANITIZED 0
#endif

#ifdef EDGELLM_COVERAGE
/* Coverage builds (scripts/coverage.sh, gcc --coverage) write their counters at exit();
 * forked test children end with _exit(), so they write them first, or what the children
 * ran (hostile-input parsing) would not count. */
void __gcov_dump(void);
#define _exit(status) (__gcov_dump(), _exit(status))
#endif

static int test_failures = 0, test_checks = 0, test_ran = 0, test_skipped = 0;

#define CHECK(cond) do { test_checks++; if (!(cond)) { test_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); test_checks++; \
    if (_a != _b) { test_failures++; fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (a), _b = (b); test_checks++; \
    if (!(fabs(_a - _b) <= (tol))) { test_failures++; fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %g, %s = %g, tol %g\n", \
    __FILE__, __LINE__, #a, _a, #b, _b, (double)(tol)); } } while (0)
#define CHECK_OK(expr) do { edgellm_error _e = {0}; (void)_e; edgellm_status _s = (expr); test_checks++; \
    if (_s != EDGELLM_OK) { test_failures++; fprintf(stderr, "%s:%d: %s returned %s\n", __FILE__, __LINE__, #expr, \
    edgellm_status_name(_s)); } } while (0)

static int test_filtered = 0;   /* cases left out by EDGELLM_TEST_FILTER */

/* Whether the test function `name` runs under EDGELLM_TEST_FILTER (unset or empty: all). */
static __attribute__((unused)) bool test_selected(const char *name)
{
    const char *f = getenv("EDGELLM_TEST_FILTER");
    if (!f || !*f) return true;
    for (const char *p = f; *p;) {
        size_t n = strcspn(p, ",");
        char pat[256];
        if (n > 0 && n < sizeof pat) {
            memcpy(pat, p, n);
            pat[n] = 0;
            if (strpbrk(pat, "*?[") ? fnmatch(pat, name, 0) == 0 : strstr(name, pat) != NULL) return true;
        }
        p += n + (p[n] == ',');
    }
    return false;
}

#define RUN(fn) do { if (!test_selected(#fn)) { test_filtered++; break; } \
    int _f = test_failures; fprintf(stderr, "-- %s\n", #fn); fn(); test_ran++; \
    if (test_failures != _f) fprintf(stderr, "   FAILED: %s\n", #fn); } while (0)

/* Path of a fixture: rel under $EDGELLM_SHARED (default EDGELLM_SHARED, ../shared) when it
 * exists there; else, when rel is a file, under tests/fixtures (EDGELLM_TEST_FIXTURES, set
 * by CMake); else NULL. The path lives in one of 8 rotating buffers. */
static __attribute__((unused)) const char *shared_path(const char *rel)
{
    static char buf[8][4096];
    static int slot = 0;
    char *p = buf[slot++ & 7];
    const char *root = getenv("EDGELLM_SHARED") ? getenv("EDGELLM_SHARED") : EDGELLM_SHARED;
    snprintf(p, 4096, "%s/%s", root, rel);
    struct stat st;
    if (stat(p, &st) == 0) return p;
#ifdef EDGELLM_TEST_FIXTURES
    snprintf(p, 4096, "%s/%s", EDGELLM_TEST_FIXTURES, rel);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) return p;
#endif
    return NULL;
}

/* Skip the current test function when a fixture is missing. */
#define NEED_SHARED(var, rel) const char *var = shared_path(rel); \
    if (!var) { fprintf(stderr, "   SKIP: fixture %s not found under ../shared or tests/fixtures\n", rel); \
                test_skipped++; return; }

/* Read a whole file; caller frees. NULL on failure. */
static __attribute__((unused)) void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { ((char *)buf)[n] = 0; if (size) *size = (size_t)n; }
    return buf;
}

/* Whitespace-separated integers of a text file (the fixtures' token ids) into out[max];
 * returns how many were read (0 when the file cannot be read). */
static __attribute__((unused)) int read_tokens(const char *path, int32_t *out, int max)
{
    char *s = read_file(path, NULL);
    if (!s) return 0;
    int n = 0;
    char *p = s, *end;
    for (long v; n < max && (v = strtol(p, &end, 10), end != p); p = end) out[n++] = (int32_t)v;
    free(s);
    return n;
}

/* Population standard deviation of x[n] (the "s" that logit tolerances are scaled by). */
static __attribute__((unused)) double stddev(const float *x, size_t n)
{
    double m = 0, v = 0;
    for (size_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    return sqrt(v / (double)n);
}

/* max_i |a[i] - b[i]|, in double. */
static __attribute__((unused)) double max_abs_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static __attribute__((unused)) int write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, size, f);
    fclose(f);
    return w == size ? 0 : -1;
}

/* The folder test_tmpdir() made, and the process that made it: only that process removes it
 * (forked children exit too, and must not delete it under their parent). */
static char test_tmpdir_path[256];   /* small: tests build paths of it in fixed buffers */
static pid_t test_tmpdir_owner;

static __attribute__((unused)) int test_tmpdir_rm_one(const char *path, const struct stat *sb, int flag,
                                                      struct FTW *ftw)
{
    (void)sb; (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;   /* keep going: remove what can be removed */
}

static __attribute__((unused)) void test_tmpdir_cleanup(void)
{
    if (!test_tmpdir_path[0] || getpid() != test_tmpdir_owner) return;
    const char *keep = getenv("EDGELLM_KEEP_TEST_TMP");
    if (keep && *keep) { fprintf(stderr, "test files kept in %s\n", test_tmpdir_path); return; }
    nftw(test_tmpdir_path, test_tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh temporary directory for this test binary, under $TMPDIR (default /tmp); removed
 * recursively at exit by the process that created it, unless EDGELLM_KEEP_TEST_TMP is set. */
static __attribute__((unused)) const char *test_tmpdir(void)
{
    if (!test_tmpdir_path[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base) base = "/tmp";
        size_t bl = strlen(base);
        while (bl > 1 && base[bl - 1] == '/') bl--;
        char dir[sizeof test_tmpdir_path];
        int n = snprintf(dir, sizeof dir, "%.*s/edgellm-test-XXXXXX", (int)bl, base);
        if (n < 0 || (size_t)n >= sizeof dir) { fprintf(stderr, "TMPDIR %s is too long\n", base); exit(1); }
        if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
        memcpy(test_tmpdir_path, dir, sizeof dir);
        test_tmpdir_owner = getpid();
        atexit(test_tmpdir_cleanup);
    }
    return test_tmpdir_path;
}

/* Run a shell command, capture stdout+stderr into out (NUL-terminated, truncated to size);
 * returns the exit status, or 128+signal when killed by a signal. */
static __attribute__((unused)) int run_capture(const char *cmd, char *out, size_t size)
{
    char full[8192 + 16];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = 0, r;
    char tmp[4096];
    while ((r = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && n + 1 < size) { size_t c = r < size - 1 - n ? r : size - 1 - n; memcpy(out + n, tmp, c); n += c; }
    }
    if (out && size) out[n] = 0;
    int st = pclose(p);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------ isolated runs (hostile inputs) ---- */

#if defined(__SANITIZE_ADDRESS__)
#  define TEST_UNDER_ASAN 1   /* ASan reserves terabytes of shadow: RLIMIT_AS cannot be used */
#else
#  define TEST_UNDER_ASAN 0
#endif

/* For a forked child about to run untrusted input: cap its address space at 1 GiB (not
 * under ASan), so a huge allocation fails instead of swapping, and kill it with SIGALRM
 * after `seconds`, so a hang ends. */
static __attribute__((unused)) void test_child_limits(unsigned seconds)
{
    if (!TEST_UNDER_ASAN) {
        struct rlimit rl = {1ul << 30, 1ul << 30};
        setrlimit(RLIMIT_AS, &rl);
    }
    alarm(seconds);
}

/* Run fn(arg, res) in a forked child under test_child_limits(seconds); the child sends the
 * res_size bytes of *res back through a pipe (res is zeroed first, here and in the child).
 * Returns true when they arrived. Otherwise (the child was killed by a signal, or exited
 * without a result) writes what happened to why[why_size] (may point into *res) and returns
 * false. The child ends with _exit: no atexit handlers, no stdio flush. */
static __attribute__((unused)) bool test_run_isolated(void (*fn)(void *arg, void *res), void *arg, void *res,
                                                      size_t res_size, unsigned seconds, char *why, size_t why_size)
{
    memset(res, 0, res_size);
    int fd[2];
    if (pipe(fd) != 0) { perror("pipe"); exit(1); }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(1); }
    if (pid == 0) {
        close(fd[0]);
        test_child_limits(seconds);
        fn(arg, res);
        ssize_t w = write(fd[1], res, res_size);
        _exit(w == (ssize_t)res_size ? 0 : 3);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], res, res_size);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) {
        snprintf(why, why_size, "child killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        return false;
    }
    if (n != (ssize_t)res_size) {
        snprintf(why, why_size, "child exited %d without a result", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return false;
    }
    return true;
}

/* RFC 4180 CSV text in which every record (ending in a newline) has `fields` fields: how
 * many records; -1 when one has another count, a quote is left open or a field has text
 * after its closing quote (quoted fields may hold commas, doubled quotes and newlines). */
static __attribute__((unused)) int csv_records(const char *s, int fields)
{
    int records = 0, n = 1;
    bool all = true;
    while (*s) {
        if (*s == '"') {                             /* quoted field */
            for (s++;; s++) {
                if (!*s) return -1;
                if (*s == '"' && s[1] == '"') s++;
                else if (*s == '"') break;
            }
            s++;
            if (*s && *s != ',' && *s != '\n') return -1;
            continue;
        }
        if (*s == ',') n++;
        else if (*s == '\n') {
            all &= n == fields;
            records++;
            n = 1;
        }
        s++;
    }
    return all ? records : -1;
}

/* Path of `name` in the test's temporary directory, in one of 64 rotating buffers (a path
 * stays valid for the next 63 calls). */
static __attribute__((unused)) const char *test_tmp_path(const char *name)
{
    static char slots[64][512];
    static int used;
    char *p = slots[used++ & 63];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* Run the edgellm CLI (EDGELLM_CLI, set by CMake) with args through the shell; stdout goes
 * to *out_stdout (malloc'ed, "" when there was none; freed here when out_stdout is NULL),
 * stderr to err_buf. Returns the exit status. */
static __attribute__((unused)) int test_run_cli(const char *args, char **out_stdout, char *err_buf, size_t err_size)
{
    static int n;
    char so[600], cmd[8192];
    snprintf(so, sizeof so, "%s/stdout.%d", test_tmpdir(), n++);
    snprintf(cmd, sizeof cmd, "{ %s %s >%s; }", EDGELLM_CLI, args, so);
    int rc = run_capture(cmd, err_buf, err_size);
    size_t sz = 0;
    char *s = read_file(so, &sz);
    if (out_stdout) *out_stdout = s ? s : calloc(1, 1);
    else free(s);
    return rc;
}

static __attribute__((unused)) int test_summary(void)
{
    if (test_filtered && !test_ran) {
        fprintf(stderr, "no test matches EDGELLM_TEST_FILTER=%s (%d tests left out)\n", getenv("EDGELLM_TEST_FILTER"),
                test_filtered);
        return 77;
    }
    fprintf(stderr, "%d tests, %d checks, %d failed checks, %d skipped", test_ran, test_checks, test_failures,
            test_skipped);
    if (test_filtered) fprintf(stderr, "; %d left out by EDGELLM_TEST_FILTER", test_filtered);
    fputc('\n', stderr);
    if (test_failures) return 1;
    if (test_skipped && test_skipped == test_ran) return 77;
    return 0;
}

/* A model loaded with the default parameters; NULL (the reason on stderr) on failure. */
static __attribute__((unused)) edgellm_model *test_load_model(const char *path)
{
    edgellm_model *m = NULL;
    edgellm_error err = {0};
    edgellm_model_params mp = edgellm_model_default_params();
    if (edgellm_model_load(path, &mp, &m, &err) != EDGELLM_OK) fprintf(stderr, "   load: %s\n", err.msg);
    return m;
}

/* logits [n][n_vocab] (malloc'd) with a KV cache of kv_type and n_threads, fed in chunks of
 * `chunk` tokens (0: one prefill, 1: token by token); NULL on failure. */
static __attribute__((unused)) float *test_run_logits(const edgellm_model *m, const int32_t *tok, int n,
                                                      int n_threads, int kv_type, int chunk)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_threads = n_threads;
    cp.kv_type = kv_type;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err) != EDGELLM_OK) { fprintf(stderr, "   %s\n", err.msg); return NULL; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    const size_t V = (size_t)info.n_vocab;
    float *out = malloc((size_t)n * V * sizeof(float));
    edgellm_status rc = out ? EDGELLM_OK : EDGELLM_ERR_NOMEM;
    int step = chunk > 0 ? chunk : n;
    for (int i = 0; i < n && rc == EDGELLM_OK; i += step) {
        int k = n - i < step ? n - i : step;
        rc = edgellm_decode(c, tok + i, k, out + (size_t)i * V, &err);
    }
    if (rc != EDGELLM_OK) { fprintf(stderr, "   decode: %s\n", err.msg); free(out); out = NULL; }
    edgellm_ctx_free(c);
    return out;
}

/* The logits of a fixture model (its tokens at tok_rel, 2 threads) with a KV cache of
 * kv_type ("name" in messages) stay within tol · s of the F32-cache logits (s: their std
 * dev) and within tol · s of the float64 reference at exact_rel (s: its std dev), and differ
 * from the F32-cache logits somewhere (the kv_type path really ran). */
static __attribute__((unused)) void test_kv_close_to_f32(const char *model_rel, const char *exact_rel,
                                                         const char *tok_rel, int kv_type, const char *name,
                                                         double tol)
{
    NEED_SHARED(mpath, model_rel);
    NEED_SHARED(epath, exact_rel);
    NEED_SHARED(tpath, tok_rel);
    int32_t tok[512];
    int n = read_tokens(tpath, tok, 512);
    CHECK(n > 0);
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL);
    if (!m || n <= 0) { edgellm_model_free(m); return; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    size_t total = (size_t)n * (size_t)info.n_vocab, esize = 0;
    float *exact = read_file(epath, &esize);
    float *a = test_run_logits(m, tok, n, 2, EDGELLM_TYPE_F32, 0);
    float *b = test_run_logits(m, tok, n, 2, kv_type, 0);
    CHECK(a && b && exact && esize == total * 4);
    if (a && b && exact && esize == total * 4) {
        double s = stddev(a, total), d = max_abs_diff(a, b, total), de = max_abs_diff(exact, b, total);
        fprintf(stderr, "   %s (%d tokens): max|%s - f32kv| = %.3g = %.4f s; max|%s - exact| = %.4f s\n", model_rel,
                n, name, d, d / s, name, de / stddev(exact, total));
        CHECK(d <= tol * s);
        CHECK(de <= tol * stddev(exact, total));
        CHECK(d > 0);
    }
    free(a);
    free(b);
    free(exact);
    edgellm_model_free(m);
}

/* With a KV cache of kv_type, a fixture model's logits over its tokens are the same bits
 * whether fed as one prefill, token by token or in chunks of 5, and with 1, 2 or 3 threads. */
static __attribute__((unused)) void test_kv_bitexact(const char *model_rel, const char *tok_rel, int kv_type)
{
    NEED_SHARED(mpath, model_rel);
    NEED_SHARED(tpath, tok_rel);
    int32_t tok[512];
    int n = read_tokens(tpath, tok, 512);
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL && n > 1);
    if (!m || n <= 1) { edgellm_model_free(m); return; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    size_t bytes = (size_t)n * (size_t)info.n_vocab * sizeof(float);
    float *pre1 = test_run_logits(m, tok, n, 1, kv_type, 0);
    float *pre2 = test_run_logits(m, tok, n, 2, kv_type, 0);
    float *dec1 = test_run_logits(m, tok, n, 1, kv_type, 1);
    float *dec2 = test_run_logits(m, tok, n, 2, kv_type, 1);
    float *dec3 = test_run_logits(m, tok, n, 3, kv_type, 1);
    float *chk = test_run_logits(m, tok, n, 2, kv_type, 5);
    CHECK(pre1 && pre2 && dec1 && dec2 && dec3 && chk);
    if (pre1 && pre2 && dec1 && dec2 && dec3 && chk) {
        CHECK(memcmp(pre1, dec1, bytes) == 0);   /* prefill == decode   */
        CHECK(memcmp(pre1, pre2, bytes) == 0);   /* 1 thread == 2       */
        CHECK(memcmp(dec1, dec2, bytes) == 0);
        CHECK(memcmp(dec1, dec3, bytes) == 0);   /* == 3                */
        CHECK(memcmp(pre1, chk, bytes) == 0);    /* chunks of 5         */
    }
    free(pre1); free(pre2); free(dec1); free(dec2); free(dec3); free(chk);
    edgellm_model_free(m);
}

#endif
