/* test_api.c — the embedding basics of the core API (include/edgellm.h): version calls,
 * sized structs (a caller built against an older, smaller struct keeps working; size 0 is
 * refused), the log callback, and loading from memory and from a file descriptor region
 * (same logits, bit for bit, as loading the file by path). */
#include "test_util.h"
#include <fcntl.h>
#include <sched.h>

static void test_version_matches_header(void)
{
    CHECK(strcmp(edgellm_version(), EDGELLM_VERSION) == 0);
    CHECK_EQ(edgellm_version_number(), EDGELLM_VERSION_NUMBER);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", EDGELLM_VERSION_MAJOR, EDGELLM_VERSION_MINOR, EDGELLM_VERSION_PATCH);
    CHECK(strcmp(v, EDGELLM_VERSION) == 0);
}

static void test_sized_params_refuse_size_zero(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_error err = {0};
    edgellm_model *m = NULL;
    edgellm_model_params mp = {0};   /* not from edgellm_model_default_params */
    CHECK_EQ(edgellm_model_load(path, &mp, &m, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "edgellm_model_params") != NULL);
    CHECK(m == NULL);
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    if (!m) return;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.size = 0;
    edgellm_ctx *c = NULL;
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "edgellm_ctx_params") != NULL);
    edgellm_sampler_params sp = edgellm_sampler_default_params();
    sp.size = 0;
    edgellm_sampler *s = NULL;
    CHECK_EQ(edgellm_sampler_new(&sp, 10, &s, &err), EDGELLM_ERR_MISUSE);
    edgellm_model_info info = {0};
    CHECK_EQ(edgellm_model_get_info(m, &info), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_model_get_info(NULL, &info), EDGELLM_ERR_MISUSE);
    edgellm_model_free(m);
}

/* A caller compiled against a header whose struct ended earlier: fields past its size
 * take their defaults (params), or are not written (results). */
static void test_sized_structs_from_an_older_header(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_model *m = NULL;
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    if (!m) return;
    /* ctx params that end before kv_type: the default F32 cache, whatever the bytes beyond */
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 64;
    cp.kv_type = 12345;                           /* beyond the old size: never read */
    cp.size = offsetof(edgellm_ctx_params, kv_type);
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    CHECK_EQ(edgellm_ctx_n_ctx(c), 64);
    edgellm_ctx_free(c);
    /* info that ends after n_vocab: n_ctx_train and later are left as they were */
    edgellm_model_info info;
    memset(&info, 0x55, sizeof info);
    info.size = offsetof(edgellm_model_info, n_ctx_train);
    CHECK_OK(edgellm_model_get_info(m, &info));
    CHECK(strcmp(info.arch, "llama") == 0);
    CHECK_EQ(info.n_vocab, 512);
    CHECK_EQ(info.n_ctx_train, 0x55555555);
    CHECK_EQ(info.size, offsetof(edgellm_model_info, n_ctx_train));
    edgellm_model_free(m);
}

typedef struct {
    int n;
    edgellm_log_level last_level;
    char last[1024];
} log_seen;

static void on_log(edgellm_log_level level, const char *msg, void *user)
{
    log_seen *s = user;
    s->n++;
    s->last_level = level;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

static void test_log_callback(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    log_seen seen = {0};
    edgellm_model *m = NULL;
    edgellm_log_set(on_log, &seen, EDGELLM_LOG_WARN);   /* info is above the level: nothing */
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    edgellm_model_free(m);
    CHECK_EQ(seen.n, 0);
    edgellm_log_set(on_log, &seen, EDGELLM_LOG_INFO);
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    CHECK_EQ(seen.n, 1);
    CHECK_EQ(seen.last_level, EDGELLM_LOG_INFO);
    CHECK(strstr(seen.last, "stories260K.gguf") && strstr(seen.last, "llama"));
    edgellm_log_set(NULL, NULL, EDGELLM_LOG_DEBUG);      /* off again */
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, NULL, &c, NULL));
    CHECK_EQ(seen.n, 1);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* Last-position logits of a fixed prompt, for comparing loads. */
static bool logits_of(edgellm_model *m, float *out, int n_vocab)
{
    edgellm_ctx *c = NULL;
    if (edgellm_ctx_new(m, NULL, &c, NULL) != EDGELLM_OK) return false;
    const int32_t toks[] = {1, 403, 407, 261, 378, 286};
    bool ok = edgellm_decode(c, toks, 6, NULL, NULL) == EDGELLM_OK;
    if (ok) memcpy(out, edgellm_ctx_logits(c), (size_t)n_vocab * sizeof *out);
    edgellm_ctx_free(c);
    return ok;
}

static void test_load_memory_and_fd_match_the_file(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    size_t size = 0;
    void *bytes = read_file(path, &size);
    CHECK(bytes != NULL);
    if (!bytes) return;
    edgellm_model *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(edgellm_model_load(path, NULL, &a, NULL));
    CHECK_OK(edgellm_model_load_memory(bytes, size, "asset:stories", NULL, &b, NULL));
    /* the model inside a bigger file at an offset that is not page aligned, but a multiple
     * of 4 (an APK asset after zipalign) */
    char tmp[] = "/tmp/edgellm-api-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    const size_t pad = 12344;
    char *zeros = calloc(1, pad);
    CHECK(write(fd, zeros, pad) == (ssize_t)pad && write(fd, bytes, size) == (ssize_t)size &&
          write(fd, zeros, 100) == 100);
    { edgellm_error e = {0}; CHECK_OK(edgellm_model_load_fd(fd, pad, size, NULL, NULL, &c, &e)); if (!c) fprintf(stderr, "%s\n", e.msg); }
    if (a && b && c) {
        float *la = malloc(512 * sizeof(float)), *lb = malloc(512 * sizeof(float)), *lc = malloc(512 * sizeof(float));
        CHECK(logits_of(a, la, 512) && logits_of(b, lb, 512) && logits_of(c, lc, 512));
        CHECK(memcmp(la, lb, 512 * sizeof(float)) == 0);
        CHECK(memcmp(la, lc, 512 * sizeof(float)) == 0);
        free(la), free(lb), free(lc);
    }
    edgellm_model_free(c);
    /* size 0: to the end of the file — here 100 trailing zero bytes beyond the model, which
     * a GGUF reader sees as data after the last tensor: still the same model */
    edgellm_error err = {0};
    c = NULL;
    edgellm_status rc = edgellm_model_load_fd(fd, pad, 0, "apk", NULL, &c, &err);
    CHECK(rc == EDGELLM_OK || strstr(err.msg, "apk") != NULL);
    edgellm_model_free(c);
    /* a region beyond the end, a bad descriptor, a truncated region: clear errors */
    c = NULL;
    CHECK_EQ(edgellm_model_load_fd(fd, pad, size + 1000, "apk", NULL, &c, &err), EDGELLM_ERR_IO);
    CHECK(strstr(err.msg, "apk") && strstr(err.msg, "beyond the end"));
    CHECK_EQ(edgellm_model_load_fd(-1, 0, 0, NULL, NULL, &c, &err), EDGELLM_ERR_MISUSE);
    char *odd = malloc(size + 1);                 /* float tensors at an odd address */
    memcpy(odd + 1, bytes, size);
    CHECK_EQ(edgellm_model_load_memory(odd + 1, size, "odd", NULL, &c, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "odd") && strstr(err.msg, "aligned"));
    free(odd);
    CHECK_EQ(edgellm_model_load_fd(fd, pad, size / 2, "half", NULL, &c, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "half") != NULL);
    CHECK_EQ(edgellm_model_load_memory(bytes, size / 3, NULL, NULL, &c, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "(memory)") != NULL);
    CHECK_EQ(edgellm_model_load_memory(NULL, 10, "x", NULL, &c, &err), EDGELLM_ERR_MISUSE);
    CHECK(c == NULL);
    close(fd);
    unlink(tmp);
    free(zeros);
    edgellm_model_free(a);
    edgellm_model_free(b);   /* before the buffer it borrows */
    free(bytes);
}

/* Regression: 64 threads on 2 CPUs decoded ~50x slower than 1 thread (every
 * hand-off waited for a descheduled thread). A context now runs at most as many threads as
 * the process may use CPUs, says so once through the log, and computes the same logits.
 * Checked with the affinity mask cut to one CPU (restored after), as under `taskset -c N`. */
static void test_regress_threads_capped_at_usable_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0) { printf("  (no affinity mask here)\n"); return; }
    edgellm_model *m = NULL;
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    if (!m) return;
    const int32_t toks[3] = {1, 200, 300};
    float *ref = malloc(3 * 512 * sizeof(float)), *got = malloc(3 * 512 * sizeof(float));
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_threads = 1;
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    CHECK_OK(edgellm_decode(c, toks, 3, ref, NULL));
    edgellm_ctx_free(c);
    CPU_ZERO(&one);
    for (int k = 0; k < CPU_SETSIZE; k++)
        if (CPU_ISSET(k, &all)) { CPU_SET(k, &one); break; }
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    log_seen seen = {0};
    edgellm_log_set(on_log, &seen, EDGELLM_LOG_WARN);
    cp.n_threads = 8;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    CHECK_EQ(edgellm_ctx_n_threads(c), 1);
    CHECK_EQ(seen.n, 1);
    CHECK(strstr(seen.last, "8 threads requested") && strstr(seen.last, "1 CPU") && strstr(seen.last, "stories260K"));
    CHECK_OK(edgellm_decode(c, toks, 3, got, NULL));
    CHECK(memcmp(ref, got, 3 * 512 * sizeof(float)) == 0);
    edgellm_ctx_free(c);
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));   /* said once */
    CHECK_EQ(seen.n, 1);
    edgellm_ctx_free(c);
    edgellm_log_set(NULL, NULL, EDGELLM_LOG_DEBUG);
    CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
    cp.n_threads = 1;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    CHECK_EQ(edgellm_ctx_n_threads(c), 1);
    edgellm_ctx_free(c);
    free(ref);
    free(got);
    edgellm_model_free(m);
#else
    printf("  (no affinity mask on this OS)\n");
#endif
}

int main(void)
{
    RUN(test_version_matches_header);
    RUN(test_sized_params_refuse_size_zero);
    RUN(test_sized_structs_from_an_older_header);
    RUN(test_log_callback);
    RUN(test_load_memory_and_fd_match_the_file);
    RUN(test_regress_threads_capped_at_usable_cpus);
    return test_summary();
}
