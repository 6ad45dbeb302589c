/*
 * test_corpus.c — replays every file of tests/corpus/<target>/ through the parser its
 * fuzz target drives, exactly as the fuzzer fed it (input layouts: fuzz/fuzz_inputs.h),
 * and expects a clean outcome: a known status with a message (EDGELLM_OK or an error),
 * no crash, no signal, no leak, within a time limit. Under the sanitizer build
 * (-DEDGELLM_SANITIZE=ON) an over-read or UB in any of them fails the test.
 *
 * tests/corpus/ holds regression inputs: every crash, hang or oracle failure a fuzzer
 * (fuzz/run.sh) ever found, minimised, plus inputs that once broke a fuzz harness. Add a
 * file there whenever fuzzing finds something; the file name says what it was.
 *
 *   gguf/       edgellm_gguf_open_memory; when it opens: every value formatted for display
 *               (as `edgellm info` does), the tokenizer from its metadata,
 *               edgellm_check_file, then edgellm_model_load and a 2-token decode
 *   llama2c/    edgellm_llama2c_parse_memory / _parse_tokenizer_memory
 *   tokenizer/  edgellm_tokenize + detokenize with a real vocabulary (needs ../shared)
 *   json/       `edgellm plan --device-file FILE` and `edgellm plan --eval FILE`
 *   cli_args/   `edgellm ARGS...` with the argv the fuzzer built (sanitised the same way),
 *               run in an empty directory: exit status 0, 1 or 2
 * Each file runs in a forked child (a crash fails that file, not the whole test) with a
 * 30 s alarm.
 */
#include "test_util.h"
#include "../fuzz/fuzz_inputs.h"
#include "format/gguf.h"
#include "tools/llama2c.h"
#include "tokenizer/tokenizer_internal.h"
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>

/* tests/corpus of the source tree, found from this file's path (CMake compiles it by its
 * absolute path); EDGELLM_CORPUS in the environment overrides it. */
static const char *corpus_dir(void)
{
    static char dir[4096];
    if (getenv("EDGELLM_CORPUS")) return getenv("EDGELLM_CORPUS");
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash) snprintf(slash, sizeof dir - (size_t)(slash - dir), "/corpus");
        else snprintf(dir, sizeof dir, "corpus");
    }
    return dir;
}

static int known_status(edgellm_status s)
{
    return s == EDGELLM_OK || s == EDGELLM_ERR_IO || s == EDGELLM_ERR_FORMAT || s == EDGELLM_ERR_NOMEM ||
           s == EDGELLM_ERR_MISUSE || s == EDGELLM_ERR_UNSUPPORTED || s == EDGELLM_ERR_NUMERIC ||
           s == EDGELLM_ERR_NOT_FOUND || s == EDGELLM_ERR_CTX_FULL;
}

/* Exit code of a replay child: 0 clean, 3 bad status or missing message, 4 leak. */
static int clean(edgellm_status s, const edgellm_error *err)
{
    if (!known_status(s)) { fprintf(stderr, "   unknown status %d\n", (int)s); return 3; }
    if (s != EDGELLM_OK && !err->msg[0]) { fprintf(stderr, "   %s without a message\n", edgellm_status_name(s)); return 3; }
    return 0;
}

/* ------------------------------------------------------------ replays (in the child) */

static int replay_gguf(const uint8_t *data, size_t size, const char *path)
{
    long live = edgellm_test_live_allocs();
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    edgellm_status s = edgellm_gguf_open_memory(data, size, "corpus.gguf", &g, &err);
    int rc = clean(s, &err);
    if (s != EDGELLM_OK) return rc ? rc : (g != NULL ? 3 : 0);
    for (int64_t i = 0; i < edgellm_gguf_n_kv(g); i++) {   /* as `edgellm info` shows them */
        char *vb = malloc(256);                            /* heap, exact size: ASan sees a byte past it */
        edgellm_gguf_format_value(g, i, vb, 256);
        free(vb);
    }
    edgellm_tokenizer *t = NULL;
    s = edgellm_tokenizer_from_gguf(g, &t, &err);
    if ((rc = clean(s, &err))) return rc;
    if (t) {
        int32_t ids[64];
        int n = 0;
        s = edgellm_tokenize(t, "Hello world", 11, 1, ids, 64, &n, &err);
        if ((rc = clean(s, &err))) return rc;
        edgellm_tokenizer_free(t);
    }
    edgellm_gguf_close(g);
    edgellm_check_report cr;
    s = edgellm_check_file(path, &cr, &err);   /* every tensor dequantized and scanned */
    if ((rc = clean(s, &err))) return rc;
    if (s != EDGELLM_OK && s != EDGELLM_ERR_NUMERIC) return 3;
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = 1;
    edgellm_model *m = NULL;
    s = edgellm_model_load(path, &mp, &m, &err);
    if ((rc = clean(s, &err))) return rc;
    if (m) {
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = 4;
        cp.n_threads = 1;
        edgellm_ctx *c = NULL;
        s = edgellm_ctx_new(m, &cp, &c, &err);
        if ((rc = clean(s, &err))) return rc;
        if (c) {
            edgellm_model_info info = {.size = sizeof info};
            edgellm_model_get_info(m, &info);
            int32_t tok[2] = {0, info.n_vocab - 1};
            s = edgellm_decode(c, tok, 2, NULL, &err);
            if ((rc = clean(s, &err))) return rc;
            edgellm_ctx_free(c);
        }
        edgellm_model_free(m);
    }
    return edgellm_test_live_allocs() == live ? 0 : 4;
}

static int replay_llama2c(const uint8_t *data, size_t size)
{
    fuzz_llama2c_input in;
    if (!fuzz_llama2c_decode(data, size, &in)) return 0;
    long live = edgellm_test_live_allocs();
    edgellm_error err = {0};
    edgellm_status s;
    if (!in.tokenizer_only) {
        void *model = malloc(in.model_size ? in.model_size : 1);
        memcpy(model, in.model, in.model_size);
        s = edgellm_llama2c_parse_memory(model, in.model_size, in.tok, in.tok_size, "corpus.bin", &err);
        free(model);
    } else {
        s = edgellm_llama2c_parse_tokenizer_memory(in.tok, in.tok_size, in.n_vocab, "corpus.tok", &err);
    }
    int rc = clean(s, &err);
    return rc ? rc : edgellm_test_live_allocs() == live ? 0 : 4;
}

static int replay_tokenizer(const uint8_t *data, size_t size, edgellm_tokenizer **toks, int n_toks)
{
    if (size < 1 || n_toks < 1) return 0;
    const edgellm_tokenizer *t = toks[(data[0] & 0x7f) % n_toks];
    edgellm_error err = {0};
    int need = 0;
    edgellm_status s = edgellm_tokenize(t, (const char *)data + 1, size - 1, data[0] >> 7, NULL, 0, &need, &err);
    if (s != EDGELLM_OK && !(s == EDGELLM_ERR_MISUSE && need > 0)) return 3;
    int32_t *ids = malloc(((size_t)need + 1) * sizeof *ids);
    int n = 0;
    s = edgellm_tokenize(t, (const char *)data + 1, size - 1, data[0] >> 7, ids, need, &n, &err);
    if (s != EDGELLM_OK || n != need) { free(ids); return 3; }
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->n_vocab) { free(ids); return 3; }
    char *back = NULL;
    size_t blen = 0;
    s = edgellm_tokenizer_detokenize(t, ids, (size_t)n, &back, &blen, &err);
    edgellm_free(back);
    free(ids);
    return s == EDGELLM_OK ? 0 : 3;
}

/* Exec the CLI with argv in an empty directory, stdin/stdout on /dev/null. Returns its
 * exit status (0..255) or 128+signal. */
static int run_cli(char **argv, const char *cwd)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (chdir(cwd) != 0) _exit(125);
        alarm(30);
        execv(EDGELLM_CLI, argv);
        _exit(126);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* ------------------------------------------------------------ the driver */

typedef enum { T_GGUF, T_LLAMA2C, T_TOKENIZER, T_JSON, T_CLI } target;

static edgellm_tokenizer *toks[FUZZ_N_VOCABS];
static int n_toks;

/* Replay one file; returns true when clean. */
static bool replay_file(target tg, const char *path)
{
    size_t size = 0;
    uint8_t *p = read_file(path, &size);
    if (!p) { fprintf(stderr, "   %s: cannot read\n", path); return false; }
    if (tg == T_JSON) {   /* through the CLI: exit 0/1/2, never a signal */
        char *a1[] = {"edgellm", "plan", "--device-file", (char *)path, NULL};
        char *a2[] = {"edgellm", "plan", "--model", "llama-2-7b", "--eval", (char *)path, NULL};
        int r1 = run_cli(a1, test_tmpdir()), r2 = run_cli(a2, test_tmpdir());
        free(p);
        if (r1 > 2 || r2 > 2) fprintf(stderr, "   %s: plan exited %d / %d\n", path, r1, r2);
        return r1 <= 2 && r2 <= 2;
    }
    if (tg == T_CLI) {
        static char store[FUZZ_MAX_ARGS][FUZZ_MAX_ARG_LEN + 1];
        char *argv[FUZZ_MAX_ARGS + 3];
        fuzz_cli_decode(p, size, store, argv);
        int r = run_cli(argv, test_tmpdir());
        free(p);
        if (r > 2) fprintf(stderr, "   %s: edgellm %s ... exited %d\n", path, argv[1] ? argv[1] : "", r);
        return r <= 2;
    }
    char copy_path[600];
    snprintf(copy_path, sizeof copy_path, "%s/replay.gguf", test_tmpdir());
    if (tg == T_GGUF) write_file(copy_path, p, size);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        uint8_t *exact = malloc(size ? size : 1);   /* exactly `size` bytes: over-reads are caught */
        memcpy(exact, p, size);
        int rc = tg == T_GGUF ? replay_gguf(exact, size, copy_path)
               : tg == T_LLAMA2C ? replay_llama2c(exact, size)
               : replay_tokenizer(exact, size, toks, n_toks);
        free(exact);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    free(p);
    if (WIFSIGNALED(st)) { fprintf(stderr, "   %s: killed by signal %d\n", path, WTERMSIG(st)); return false; }
    if (WEXITSTATUS(st) != 0) { fprintf(stderr, "   %s: replay exited %d\n", path, WEXITSTATUS(st)); return false; }
    return true;
}

static int replay_dir(target tg, const char *sub)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%.3900s/%s", corpus_dir(), sub);
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "   %s: missing\n", dir); CHECK(0); return 0; }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bool ok = replay_file(tg, path);
        CHECK(ok);
        n++;
    }
    closedir(d);
    fprintf(stderr, "   %s: %d files replayed\n", sub, n);
    return n;
}

static void test_corpus_gguf(void) { CHECK(replay_dir(T_GGUF, "gguf") > 0); }
static void test_corpus_llama2c(void) { CHECK(replay_dir(T_LLAMA2C, "llama2c") > 0); }
static void test_corpus_json(void) { CHECK(replay_dir(T_JSON, "json") > 0); }
static void test_corpus_cli_args(void) { CHECK(replay_dir(T_CLI, "cli_args") > 0); }

static void test_corpus_tokenizer(void)
{
    NEED_SHARED(first, "data/vocab/ggml-vocab-llama-spm.gguf");
    (void)first;
    for (int i = 0; i < FUZZ_N_VOCABS; i++) {   /* the fuzzer's list, in its order */
        char rel[256];
        snprintf(rel, sizeof rel, "data/vocab/%s", FUZZ_VOCABS[i]);
        const char *path = shared_path(rel);
        if (path && edgellm_tokenizer_load(path, &toks[n_toks], NULL) == EDGELLM_OK) n_toks++;
    }
    CHECK_EQ(n_toks, FUZZ_N_VOCABS);
    CHECK(replay_dir(T_TOKENIZER, "tokenizer") > 0);
    for (int i = 0; i < n_toks; i++) edgellm_tokenizer_free(toks[i]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_corpus_gguf);
    RUN(test_corpus_llama2c);
    RUN(test_corpus_tokenizer);
    RUN(test_corpus_json);
    RUN(test_corpus_cli_args);
    return test_summary();
}
