/*
 * test_tools_api.c — the small public APIs the command line is built on, through the public
 * headers only (edgellm.h, edgellm_tools.h): the read-only GGUF metadata reader (against
 * stories260K.gguf, whose numbers `edgellm info` prints, and against hostile files: a bad
 * magic, every cut of the header, the regression corpus tests/corpus/gguf), the output-file
 * writer (whole or not at all, links, permissions, the signal-handler cleanup), UTF-8
 * (Unicode table 3-7 cases), the kernel description and supported architectures (against
 * `edgellm --version`), the environment check, the CPU name, and quantization names.
 */
#include "test_util.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>

/* ---------------------------------------------------------------- GGUF metadata ---- */

static bool str_is(const char *p, size_t n, const char *want) { return p && n == strlen(want) && !memcmp(p, want, n); }

/* stories260K.gguf: the figures `edgellm info` prints for it (GGUF v3, alignment 32,
 * tensor data at byte 14176, 19 keys, a 512-token SentencePiece vocabulary). */
static void test_gguf_meta_reads_stories260k(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_gguf_meta *g = NULL;
    edgellm_error err = {0};
    CHECK_OK(edgellm_gguf_meta_open(path, &g, &err));
    CHECK(g != NULL);
    if (!g) return;
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK_EQ(edgellm_gguf_meta_version(g), 3);
    CHECK_EQ(edgellm_gguf_meta_alignment(g), 32);
    CHECK_EQ(edgellm_gguf_meta_file_size(g), (uint64_t)st.st_size);
    CHECK_EQ(edgellm_gguf_meta_data_offset(g), 14176);
    CHECK_EQ(edgellm_gguf_meta_n_keys(g), 19);

    size_t len = 0;   /* file order: the tokenizer's keys come first in this file */
    const char *k = edgellm_gguf_meta_key(g, 0, &len);
    CHECK(str_is(k, len, "tokenizer.ggml.tokens"));
    CHECK(!strcmp(edgellm_gguf_meta_key_type(g, 0), "ARRAY"));
    k = edgellm_gguf_meta_key(g, 4, &len);
    CHECK(str_is(k, len, "general.architecture"));
    CHECK(!strcmp(edgellm_gguf_meta_key_type(g, 4), "STRING"));
    bool saw_ctx = false, saw_tokens = false;
    for (int64_t i = 0; i < edgellm_gguf_meta_n_keys(g); i++) {
        char v[256];
        k = edgellm_gguf_meta_key(g, i, &len);
        CHECK(k != NULL && len > 0);
        edgellm_gguf_meta_format_value(g, i, v, sizeof v);
        if (str_is(k, len, "llama.context_length")) {
            saw_ctx = true;
            CHECK(!strcmp(v, "2048"));
            CHECK(!strcmp(edgellm_gguf_meta_key_type(g, i), "UINT32"));
        }
        if (str_is(k, len, "tokenizer.ggml.tokens")) {
            saw_tokens = true;
            CHECK(!strcmp(v, "[512 x STRING]"));
            CHECK(!strcmp(edgellm_gguf_meta_key_type(g, i), "ARRAY"));
        }
        if (str_is(k, len, "llama.attention.layer_norm_rms_epsilon")) CHECK(!strcmp(v, "1e-05"));
        if (str_is(k, len, "general.architecture")) CHECK(!strcmp(v, "\"llama\""));
    }
    CHECK(saw_ctx && saw_tokens);

    /* getters by name; a mismatched type or an absent key leaves the output alone */
    const char *s = NULL;
    CHECK_EQ(edgellm_gguf_meta_get_str(g, "general.architecture", &s, &len), 1);
    CHECK(str_is(s, len, "llama"));
    int64_t v = -7;
    CHECK_EQ(edgellm_gguf_meta_get_int(g, "llama.context_length", &v), 1);
    CHECK_EQ(v, 2048);
    CHECK_EQ(edgellm_gguf_meta_get_int(g, "tokenizer.ggml.seperator_token_id", &v), 1);   /* UINT32 max */
    CHECK_EQ(v, 4294967295ll);
    v = -7;
    CHECK_EQ(edgellm_gguf_meta_get_int(g, "general.architecture", &v), 0);
    CHECK_EQ(edgellm_gguf_meta_get_int(g, "no.such.key", &v), 0);
    CHECK_EQ(v, -7);
    s = "untouched";
    CHECK_EQ(edgellm_gguf_meta_get_str(g, "llama.context_length", &s, &len), 0);
    CHECK(!strcmp(s, "untouched"));
    const char *et = NULL;
    uint64_t count = 0;
    CHECK_EQ(edgellm_gguf_meta_get_array(g, "tokenizer.ggml.tokens", &et, &count), 1);
    CHECK(et && !strcmp(et, "STRING"));
    CHECK_EQ(count, 512);
    CHECK_EQ(edgellm_gguf_meta_get_array(g, "tokenizer.ggml.scores", NULL, &count), 1);
    CHECK_EQ(edgellm_gguf_meta_get_array(g, "general.architecture", &et, &count), 0);
    CHECK_EQ(edgellm_gguf_meta_array_str(g, "tokenizer.ggml.tokens", 1, &s, &len), 1);
    CHECK(str_is(s, len, "<s>"));
    CHECK_EQ(edgellm_gguf_meta_array_str(g, "tokenizer.ggml.tokens", 512, &s, &len), 0);
    CHECK_EQ(edgellm_gguf_meta_array_str(g, "tokenizer.ggml.scores", 0, &s, &len), 0);   /* not strings */

    /* tensors: shapes, sizes and offsets agree with the header */
    const int64_t nt = edgellm_gguf_meta_n_tensors(g);
    CHECK(nt > 0);
    uint64_t end = 0;
    for (int64_t i = 0; i < nt; i++) {
        edgellm_gguf_tensor_info t;
        CHECK_OK(edgellm_gguf_meta_tensor(g, i, &t));
        CHECK(t.name && t.name_len > 0);
        CHECK(t.n_dims >= 1 && t.n_dims <= 4);
        uint64_t n = 1;
        for (int d = 0; d < 4; d++) {
            CHECK(t.ne[d] >= 1);
            n *= (uint64_t)t.ne[d];
        }
        CHECK_EQ(n, t.n_elements);
        CHECK(strcmp(edgellm_type_name(t.type), "?") != 0);
        if (t.type == EDGELLM_TYPE_F32) CHECK_EQ(t.size_bytes, 4 * t.n_elements);
        CHECK_EQ(t.offset % edgellm_gguf_meta_alignment(g), 0);
        if (t.offset + t.size_bytes > end) end = t.offset + t.size_bytes;
        if (str_is(t.name, t.name_len, "token_embd.weight")) {
            CHECK_EQ(t.n_dims, 2);
            CHECK_EQ(t.ne[0], 64);    /* n_embd: the row length */
            CHECK_EQ(t.ne[1], 512);   /* n_vocab */
        }
    }
    CHECK(edgellm_gguf_meta_data_offset(g) + end <= edgellm_gguf_meta_file_size(g));

    /* indices out of range */
    edgellm_gguf_tensor_info t;
    CHECK_EQ(edgellm_gguf_meta_tensor(g, nt, &t), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_gguf_meta_tensor(g, -1, &t), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_gguf_meta_tensor(g, 0, NULL), EDGELLM_ERR_MISUSE);
    len = 99;
    CHECK(edgellm_gguf_meta_key(g, -1, &len) == NULL);
    CHECK_EQ(len, 0);
    CHECK(edgellm_gguf_meta_key(g, edgellm_gguf_meta_n_keys(g), NULL) == NULL);
    CHECK(!strcmp(edgellm_gguf_meta_key_type(g, 1000), "?"));
    char vb[8] = "xxxxxxx";
    edgellm_gguf_meta_format_value(g, 1000, vb, sizeof vb);
    CHECK_EQ(vb[0], 0);
    edgellm_gguf_meta_close(g);
}

static void test_gguf_meta_null_handle(void)
{
    CHECK_EQ(edgellm_gguf_meta_version(NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_alignment(NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_file_size(NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_data_offset(NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_n_keys(NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_n_tensors(NULL), 0);
    CHECK(edgellm_gguf_meta_key(NULL, 0, NULL) == NULL);
    CHECK(!strcmp(edgellm_gguf_meta_key_type(NULL, 0), "?"));
    int64_t v = 5;
    CHECK_EQ(edgellm_gguf_meta_get_int(NULL, "x", &v), 0);
    CHECK_EQ(v, 5);
    CHECK_EQ(edgellm_gguf_meta_get_str(NULL, "x", NULL, NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_get_array(NULL, "x", NULL, NULL), 0);
    CHECK_EQ(edgellm_gguf_meta_array_str(NULL, "x", 0, NULL, NULL), 0);
    edgellm_gguf_tensor_info t;
    CHECK_EQ(edgellm_gguf_meta_tensor(NULL, 0, &t), EDGELLM_ERR_MISUSE);
    char b[4] = "abc";
    edgellm_gguf_meta_format_value(NULL, 0, b, sizeof b);
    CHECK_EQ(b[0], 0);
    edgellm_gguf_meta_format_value(NULL, 0, NULL, 0);   /* nothing to write: no crash */
    edgellm_gguf_meta_close(NULL);

    edgellm_gguf_meta *g = (edgellm_gguf_meta *)&t;   /* must be reset to NULL on failure */
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_meta_open(NULL, &g, &err), EDGELLM_ERR_MISUSE);
    CHECK(g == NULL);
    CHECK_EQ(edgellm_gguf_meta_open("x.gguf", NULL, &err), EDGELLM_ERR_MISUSE);
}

/* Open path and expect the status `want` with *out NULL and the message naming the file. */
static void expect_refused(const char *path, edgellm_status want)
{
    edgellm_gguf_meta *g = NULL;
    edgellm_error err = {0};
    const edgellm_status s = edgellm_gguf_meta_open(path, &g, &err);
    if (s != want) fprintf(stderr, "   %s: %s (%s)\n", path, edgellm_status_name(s), err.msg);
    CHECK_EQ(s, want);
    CHECK(g == NULL);
    CHECK(strstr(err.msg, path) != NULL);
    edgellm_gguf_meta_close(g);
}

static void test_gguf_meta_refuses_bad_files(void)
{
    char p[512];
    expect_refused("/nonexistent/edgellm/x.gguf", EDGELLM_ERR_IO);
    expect_refused(test_tmpdir(), EDGELLM_ERR_IO);   /* a directory */
    snprintf(p, sizeof p, "%s/empty.gguf", test_tmpdir());
    CHECK_EQ(write_file(p, "", 0), 0);
    expect_refused(p, EDGELLM_ERR_FORMAT);
    snprintf(p, sizeof p, "%s/text.gguf", test_tmpdir());
    CHECK_EQ(write_file(p, "root:x:0:0:root:/root:/bin/sh\n", 31), 0);
    expect_refused(p, EDGELLM_ERR_FORMAT);

    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    CHECK(data != NULL && size > 14176);
    if (!data) return;
    /* a bad magic */
    snprintf(p, sizeof p, "%s/badmagic.gguf", test_tmpdir());
    data[0] = 'X';
    CHECK_EQ(write_file(p, data, size), 0);
    expect_refused(p, EDGELLM_ERR_FORMAT);
    data[0] = 'G';
    /* a version the spec does not have */
    data[4] = 9;
    CHECK_EQ(write_file(p, data, size), 0);
    expect_refused(p, EDGELLM_ERR_FORMAT);
    data[4] = 3;
    /* cut short: every byte of the first 512, then a sample through the header and the
     * tensor data; every prefix is refused (the data section ends at the file's end) */
    snprintf(p, sizeof p, "%s/cut.gguf", test_tmpdir());
    CHECK_EQ(write_file(p, data, size), 0);
    const int fd = open(p, O_WRONLY);
    CHECK(fd >= 0);
    int n_cuts = 0, n_refused = 0;
    for (size_t cut = size - 1; fd >= 0 && cut > 0;) {
        if (ftruncate(fd, (off_t)cut) != 0) break;
        edgellm_gguf_meta *g = NULL;
        edgellm_error err = {0};
        const edgellm_status s = edgellm_gguf_meta_open(p, &g, &err);
        n_cuts++;
        if (s != EDGELLM_OK && g == NULL && err.msg[0]) n_refused++;
        else fprintf(stderr, "   cut at %zu: %s\n", cut, edgellm_status_name(s));
        edgellm_gguf_meta_close(g);
        const size_t data = 14176 + 4096;   /* tensor data: big steps; header: every 37th byte */
        if (cut > data) cut = cut - data > 65521 ? cut - 65521 : data;
        else cut -= cut > 512 ? 37 : 1;
    }
    if (fd >= 0) close(fd);
    if (n_cuts <= 800) fprintf(stderr, "   %d cuts\n", n_cuts);
    CHECK(n_cuts > 800);
    CHECK_EQ(n_refused, n_cuts);
    free(data);
}

/* tests/corpus/gguf: what fuzzing found. Each file opens or is refused with a message; an
 * opened one survives every accessor, format_value into every buffer size included (one
 * of them overflowed a small buffer once: format-value-escape-overflow.gguf). */
static void test_gguf_meta_corpus(void)
{
    char dir[1024];
    const char *slash = strrchr(__FILE__, '/');   /* CMake compiles tests by absolute path */
    snprintf(dir, sizeof dir, "%.*s/corpus/gguf", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return;
    int n_files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        n_files++;
        edgellm_gguf_meta *g = NULL;
        edgellm_error err = {0};
        if (edgellm_gguf_meta_open(p, &g, &err) != EDGELLM_OK) {
            CHECK(g == NULL);
            CHECK(strstr(err.msg, p) != NULL);
            continue;
        }
        for (int64_t i = 0; i < edgellm_gguf_meta_n_keys(g); i++) {
            size_t len;
            const char *k = edgellm_gguf_meta_key(g, i, &len);
            CHECK(k != NULL);
            CHECK(strcmp(edgellm_gguf_meta_key_type(g, i), "?") != 0);
            for (size_t size = 1; size <= 40; size++) {
                char buf[64];
                memset(buf, 0x5a, sizeof buf);
                edgellm_gguf_meta_format_value(g, i, buf, size);
                CHECK(memchr(buf, 0, size) != NULL);   /* NUL-terminated inside the buffer */
                bool untouched = true;
                for (size_t j = size; j < sizeof buf; j++) untouched &= buf[j] == 0x5a;
                CHECK(untouched);
            }
        }
        for (int64_t i = 0; i < edgellm_gguf_meta_n_tensors(g); i++) {
            edgellm_gguf_tensor_info t;
            CHECK_OK(edgellm_gguf_meta_tensor(g, i, &t));
        }
        edgellm_gguf_meta_close(g);
    }
    closedir(d);
    CHECK(n_files >= 3);
}

/* ---------------------------------------------------------------- output files ---- */

static int count_tmp_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

static void test_output_whole_or_nothing(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/out.txt", test_tmpdir());
    CHECK_EQ(write_file(p, "old\n", 4), 0);
    CHECK_EQ(chmod(p, 0640), 0);
    edgellm_output *o = NULL;
    edgellm_error err = {0};
    CHECK_OK(edgellm_output_open(p, "w", &o, &err));
    CHECK(o != NULL && edgellm_output_stream(o) != NULL);
    if (!o) return;
    fputs("new text\n", edgellm_output_stream(o));
    fflush(edgellm_output_stream(o));
    char *now = read_file(p, NULL);   /* the target is untouched until the commit */
    CHECK(now && !strcmp(now, "old\n"));
    free(now);
    CHECK_EQ(count_tmp_files(test_tmpdir(), "out.txt"), 1);
    CHECK_OK(edgellm_output_commit(o, &err));
    now = read_file(p, NULL);
    CHECK(now && !strcmp(now, "new text\n"));
    free(now);
    CHECK_EQ(count_tmp_files(test_tmpdir(), "out.txt"), 0);
    struct stat st;
    CHECK_EQ(stat(p, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0640);   /* the replaced file's permissions */

    /* discard: the target stays as it was, no temporary stays */
    CHECK_OK(edgellm_output_open(p, "wb", &o, &err));
    fputs("half", edgellm_output_stream(o));
    edgellm_output_discard(o);
    now = read_file(p, NULL);
    CHECK(now && !strcmp(now, "new text\n"));
    free(now);
    CHECK_EQ(count_tmp_files(test_tmpdir(), "out.txt"), 0);
    edgellm_output_discard(NULL);

    /* a symbolic link stays a link: the file it names is replaced */
    char link[512];
    snprintf(link, sizeof link, "%s/link.txt", test_tmpdir());
    CHECK_EQ(symlink("out.txt", link), 0);
    CHECK_OK(edgellm_output_open(link, "w", &o, &err));
    fputs("via link\n", edgellm_output_stream(o));
    CHECK_OK(edgellm_output_commit(o, &err));
    CHECK_EQ(lstat(link, &st), 0);
    CHECK(S_ISLNK(st.st_mode));
    now = read_file(p, NULL);
    CHECK(now && !strcmp(now, "via link\n"));
    free(now);

    /* in place: /dev/null is written, not replaced */
    CHECK_OK(edgellm_output_open("/dev/null", "w", &o, &err));
    fputs("x", edgellm_output_stream(o));
    CHECK_OK(edgellm_output_commit(o, &err));
    CHECK_EQ(stat("/dev/null", &st), 0);
    CHECK(S_ISCHR(st.st_mode));
}

static void test_output_refusals(void)
{
    edgellm_output *o = (edgellm_output *)1;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_output_open(test_tmpdir(), "w", &o, &err), EDGELLM_ERR_IO);
    CHECK(o == NULL);
    CHECK(strstr(err.msg, "is a directory") != NULL);
    CHECK_EQ(edgellm_output_open("", "w", &o, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_output_open(NULL, "w", &o, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_output_open("x", NULL, &o, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_output_open("x", "w", NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_output_open("/nonexistent/edgellm/out.txt", "w", &o, &err), EDGELLM_ERR_IO);
    CHECK(o == NULL);
    CHECK_EQ(edgellm_output_commit(NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(edgellm_output_stream(NULL) == NULL);

    CHECK_EQ(edgellm_output_check(test_tmpdir()), EISDIR);
    CHECK_EQ(edgellm_output_check(""), EINVAL);
    CHECK_EQ(edgellm_output_check(NULL), EINVAL);
    CHECK_EQ(edgellm_output_check("/nonexistent/edgellm/out.txt"), ENOENT);
    CHECK_EQ(edgellm_output_check("-"), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/new.txt", test_tmpdir());
    CHECK_EQ(edgellm_output_check(p), 0);
    CHECK_EQ(access(p, F_OK), -1);   /* nothing created */
}

/* What a signal handler does (edgellm_remove_temp_files): the temporary of an output being
 * written disappears, the target stays untouched, and the commit then fails. */
static void test_output_removed_by_signal_cleanup(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/sig.txt", test_tmpdir());
    edgellm_output *o = NULL;
    edgellm_error err = {0};
    CHECK_OK(edgellm_output_open(p, "w", &o, &err));
    if (!o) return;
    fputs("partial", edgellm_output_stream(o));
    CHECK_EQ(count_tmp_files(test_tmpdir(), "sig.txt"), 1);
    edgellm_remove_temp_files();
    CHECK_EQ(count_tmp_files(test_tmpdir(), "sig.txt"), 0);
    CHECK_EQ(edgellm_output_commit(o, &err), EDGELLM_ERR_IO);
    CHECK_EQ(access(p, F_OK), -1);
}

static void test_path_same_file(void)
{
    char a[512], b[512], l[512], h[512];
    snprintf(a, sizeof a, "%s/a.bin", test_tmpdir());
    snprintf(b, sizeof b, "%s/b.bin", test_tmpdir());
    snprintf(l, sizeof l, "%s/a.link", test_tmpdir());
    snprintf(h, sizeof h, "%s/a.hard", test_tmpdir());
    CHECK_EQ(write_file(a, "a", 1), 0);
    CHECK_EQ(write_file(b, "a", 1), 0);
    CHECK_EQ(symlink(a, l), 0);
    CHECK_EQ(link(a, h), 0);
    CHECK_EQ(edgellm_path_same_file(a, a), 1);
    CHECK_EQ(edgellm_path_same_file(a, l), 1);
    CHECK_EQ(edgellm_path_same_file(h, a), 1);
    CHECK_EQ(edgellm_path_same_file(a, b), 0);
    CHECK_EQ(edgellm_path_same_file("/dev/null", "/dev/null"), 0);   /* a device: nothing destroyed */
    CHECK_EQ(edgellm_path_same_file(NULL, a), 0);
    CHECK_EQ(edgellm_path_same_file(a, NULL), 0);
    CHECK_EQ(edgellm_path_same_file("/nonexistent/x", "/nonexistent/y"), 0);
}

/* ---------------------------------------------------------------- UTF-8 ---- */

static void test_utf8_char_len(void)
{
    CHECK_EQ(edgellm_utf8_char_len("a", 1), 1);
    CHECK_EQ(edgellm_utf8_char_len("\xc3\xa9", 2), 2);              /* U+00E9 */
    CHECK_EQ(edgellm_utf8_char_len("\xe2\x82\xac", 3), 3);          /* U+20AC */
    CHECK_EQ(edgellm_utf8_char_len("\xf0\x9f\x98\x80", 4), 4);      /* U+1F600 */
    CHECK_EQ(edgellm_utf8_char_len("\xf4\x8f\xbf\xbf", 4), 4);      /* U+10FFFF, the last */
    CHECK_EQ(edgellm_utf8_char_len("\xe2\x82\xac", 2), 0);          /* cut by len */
    CHECK_EQ(edgellm_utf8_char_len("\x80", 1), 0);                  /* lone continuation */
    CHECK_EQ(edgellm_utf8_char_len("\xc0\xaf", 2), 0);              /* overlong '/' */
    CHECK_EQ(edgellm_utf8_char_len("\xe0\x80\xaf", 3), 0);          /* overlong, 3 bytes */
    CHECK_EQ(edgellm_utf8_char_len("\xed\xa0\x80", 3), 0);          /* surrogate U+D800 */
    CHECK_EQ(edgellm_utf8_char_len("\xf4\x90\x80\x80", 4), 0);      /* above U+10FFFF */
    CHECK_EQ(edgellm_utf8_char_len("\xf5\x80\x80\x80", 4), 0);
    CHECK_EQ(edgellm_utf8_char_len("\xff", 1), 0);
    CHECK_EQ(edgellm_utf8_char_len("a", 0), 0);
    CHECK_EQ(edgellm_utf8_char_len(NULL, 4), 0);
}

static void test_utf8_sanitize(void)
{
    char out[32];
    const char *fffd = "\xef\xbf\xbd";
    CHECK_EQ(edgellm_utf8_sanitize("plain", 5, out, sizeof out), 5);
    CHECK(!strcmp(out, "plain"));
    CHECK_EQ(edgellm_utf8_sanitize("a\xff" "b", 3, out, sizeof out), 5);
    CHECK(!strcmp(out, "a\xef\xbf\xbd" "b"));
    /* each byte outside a well-formed character becomes one U+FFFD */
    CHECK_EQ(edgellm_utf8_sanitize("\xed\xa0\x80", 3, out, sizeof out), 9);
    CHECK(!memcmp(out, fffd, 3) && !memcmp(out + 3, fffd, 3) && !memcmp(out + 6, fffd, 3) && out[9] == 0);
    /* a NUL byte inside len is text like any other */
    CHECK_EQ(edgellm_utf8_sanitize("a\0b", 3, out, sizeof out), 3);
    CHECK(out[0] == 'a' && out[1] == 0 && out[2] == 'b' && out[3] == 0);
    /* too small: whole characters only, NUL-terminated, the full length returned */
    memset(out, 0x5a, sizeof out);
    CHECK_EQ(edgellm_utf8_sanitize("ab\xe2\x82\xac" "c", 6, out, 5), 6);
    CHECK(!strcmp(out, "ab"));
    CHECK_EQ((unsigned char)out[5], 0x5a);
    CHECK_EQ(edgellm_utf8_sanitize("ab\xff", 3, out, 3), 5);
    CHECK(!strcmp(out, "ab"));
    CHECK_EQ(edgellm_utf8_sanitize("\xff\xff", 2, NULL, 0), 6);   /* the size needed */
    out[0] = 'x';
    CHECK_EQ(edgellm_utf8_sanitize("abc", 3, out, 1), 3);
    CHECK_EQ(out[0], 0);
    CHECK_EQ(edgellm_utf8_sanitize("", 0, out, sizeof out), 0);
    CHECK_EQ(out[0], 0);
    CHECK_EQ(edgellm_utf8_sanitize(NULL, 5, out, sizeof out), 0);
}

/* ---------------------------------------------------------------- diagnostics ---- */

/* The kernels in use, as `edgellm --version` names them (same library, same CPU). */
static void test_kernels_describe(void)
{
    char k[128];
    const int n = edgellm_kernels_describe(k, sizeof k);
    CHECK(n > 0 && (size_t)n == strlen(k));
    static const char *levels[] = {"ref", "scalar", "avx2", "avx512", "neon", "dotprod"};
    bool known = false;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        const size_t l = strlen(levels[i]);
        known |= !strncmp(k, levels[i], l) && (k[l] == 0 || k[l] == ' ' || k[l] == ',');
    }
    CHECK(known);
    if (strncmp(k, "avx512", 6)) CHECK(strstr(k, "gfni") == NULL && strstr(k, "prefetch") == NULL);
    char small[4] = "xyz";
    CHECK_EQ(edgellm_kernels_describe(small, sizeof small), n);   /* snprintf: the full length */
    CHECK(strlen(small) == 3 && !strncmp(small, k, 3));
    CHECK_EQ(edgellm_kernels_describe(NULL, 0), n);

    if (getenv("EDGELLM_KERNELS") || getenv("EDGELLM_PREFETCH")) return;   /* the CLI reads them too */
    char out[512], want[256];
    CHECK_EQ(run_capture(EDGELLM_CLI " --version", out, sizeof out), 0);
    snprintf(want, sizeof want, "edgellm %s (kernels: %s)\n", edgellm_version(), k);
    if (strcmp(out, want)) fprintf(stderr, "   --version: %s   expected: %s", out, want);
    CHECK(!strcmp(out, want));
}

static void test_arch_supported(void)
{
    CHECK_EQ(edgellm_arch_supported("llama"), 1);
    CHECK_EQ(edgellm_arch_supported("qwen2"), 1);
    CHECK_EQ(edgellm_arch_supported("gemma2"), 0);
    CHECK_EQ(edgellm_arch_supported("llam"), 0);
    CHECK_EQ(edgellm_arch_supported("llama "), 0);
    CHECK_EQ(edgellm_arch_supported(""), 0);
    CHECK_EQ(edgellm_arch_supported(NULL), 0);
    /* every name listed runs */
    const char *names = edgellm_arch_names();
    CHECK(names && *names);
    char copy[128];
    snprintf(copy, sizeof copy, "%s", names ? names : "");
    int n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save), n++)
        CHECK_EQ(edgellm_arch_supported(t), 1);
    CHECK(n >= 2);
}

static void test_env_check(void)
{
    char saved_k[256] = "", saved_p[256] = "";
    const bool had_k = getenv("EDGELLM_KERNELS"), had_p = getenv("EDGELLM_PREFETCH");
    if (had_k) snprintf(saved_k, sizeof saved_k, "%s", getenv("EDGELLM_KERNELS"));
    if (had_p) snprintf(saved_p, sizeof saved_p, "%s", getenv("EDGELLM_PREFETCH"));
    char k[128], buf[1024];
    edgellm_kernels_describe(k, sizeof k);
    const char *active = strtok(k, " ,");   /* the level's name */

    unsetenv("EDGELLM_KERNELS");
    unsetenv("EDGELLM_PREFETCH");
    buf[0] = 'x';
    CHECK_EQ(edgellm_env_check(buf, sizeof buf), 0);
    CHECK_EQ(buf[0], 0);
    setenv("EDGELLM_KERNELS", "", 1);   /* empty: as unset */
    setenv("EDGELLM_PREFETCH", "", 1);
    CHECK_EQ(edgellm_env_check(buf, sizeof buf), 0);
    setenv("EDGELLM_KERNELS", active, 1);   /* the level running: nothing to say */
    setenv("EDGELLM_PREFETCH", "1024", 1);
    CHECK_EQ(edgellm_env_check(buf, sizeof buf), 0);

    setenv("EDGELLM_KERNELS", "avx9", 1);
    size_t n = edgellm_env_check(buf, sizeof buf);
    CHECK(n > 0 && n == strlen(buf));
    CHECK(!strncmp(buf, "EDGELLM_KERNELS=avx9 is not a kernel level of this build", 56));
    CHECK(buf[n - 1] == '\n' && strchr(buf, '\n') == buf + n - 1);   /* one line */
    setenv("EDGELLM_PREFETCH", "12x", 1);
    n = edgellm_env_check(buf, sizeof buf);
    CHECK(n == strlen(buf));
    const char *second = strchr(buf, '\n');
    CHECK(second && !strncmp(second + 1, "EDGELLM_PREFETCH=12x is not a byte count in [0, 1048576]", 56));
    CHECK(buf[n - 1] == '\n');
    CHECK_EQ(edgellm_env_check(NULL, 0), n);
    char small[10];
    CHECK_EQ(edgellm_env_check(small, sizeof small), n);
    CHECK(!strcmp(small, "EDGELLM_K"));

    if (had_k) setenv("EDGELLM_KERNELS", saved_k, 1);
    else unsetenv("EDGELLM_KERNELS");
    if (had_p) setenv("EDGELLM_PREFETCH", saved_p, 1);
    else unsetenv("EDGELLM_PREFETCH");
}

static void test_bench_cpu_info(void)
{
    char cpu[128];
    memset(cpu, 0x5a, sizeof cpu);
    edgellm_bench_cpu_info(cpu, sizeof cpu);
    CHECK(memchr(cpu, 0, sizeof cpu) != NULL);
    CHECK(strlen(cpu) > 0);
    char small[6];
    memset(small, 0x5a, sizeof small);
    edgellm_bench_cpu_info(small, sizeof small);
    CHECK(memchr(small, 0, sizeof small) != NULL);
    edgellm_bench_cpu_info(NULL, 0);
}

/* ---------------------------------------------------------------- quantization names ---- */

static void test_quantize_scheme(void)
{
    edgellm_quant_scheme_info sc;
    edgellm_error err = {0};
    CHECK_OK(edgellm_quantize_scheme("i4", 64, 1, &sc, &err));
    CHECK(!strcmp(sc.name, "I4_G64_ASYM"));
    CHECK(!strcmp(sc.label, "i4 g64 asym"));
    CHECK_EQ(sc.base_type, EDGELLM_TYPE_I4_G64_ASYM);
    CHECK_EQ(sc.edgellm_only, 1);
    CHECK_OK(edgellm_quantize_scheme("I8", 0, 0, &sc, &err));   /* group 0: 128 */
    CHECK(!strcmp(sc.label, "i8 g128 sym"));
    CHECK_EQ(sc.base_type, EDGELLM_TYPE_I8_G128_SYM);
    CHECK_OK(edgellm_quantize_scheme("q4_k_m", 0, 0, &sc, &err));
    CHECK(!strcmp(sc.name, "Q4_K_M"));
    CHECK(!strcmp(sc.label, ""));
    CHECK_EQ(sc.base_type, EDGELLM_TYPE_Q4_K);
    CHECK_EQ(sc.edgellm_only, 0);
    CHECK_OK(edgellm_quantize_scheme("Q8_0", 0, 0, &sc, &err));
    CHECK_EQ(sc.base_type, EDGELLM_TYPE_Q8_0);
    CHECK_EQ(edgellm_quantize_scheme("q4_0", 64, 0, &sc, &err), EDGELLM_ERR_MISUSE);   /* groups: i4/i8 only */
    CHECK(strstr(err.msg, "q4_0") != NULL);
    CHECK_EQ(edgellm_quantize_scheme("i4", 32, 0, &sc, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_quantize_scheme("q3_k_xl", 0, 0, &sc, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "q3_k_xl") != NULL);
    CHECK_EQ(edgellm_quantize_scheme(NULL, 0, 0, &sc, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_quantize_scheme("q8_0", 0, 0, NULL, &err), EDGELLM_ERR_MISUSE);
}

/* Names that override output/embedding types: what edgellm writes and computes with. */
static void test_quantize_type_from_name(void)
{
    CHECK_EQ(edgellm_quantize_type_from_name("q6_k"), EDGELLM_TYPE_Q6_K);
    CHECK_EQ(edgellm_quantize_type_from_name("F16"), EDGELLM_TYPE_F16);
    CHECK_EQ(edgellm_quantize_type_from_name("bf16"), EDGELLM_TYPE_BF16);
    CHECK_EQ(edgellm_quantize_type_from_name("f32"), EDGELLM_TYPE_F32);
    CHECK_EQ(edgellm_quantize_type_from_name("I4_G64_ASYM"), EDGELLM_TYPE_I4_G64_ASYM);
    CHECK_EQ(edgellm_quantize_type_from_name("q8_k"), -1);      /* an activation type: not for weights */
    CHECK_EQ(edgellm_quantize_type_from_name("iq2_xxs"), -1);   /* no quantizer */
    CHECK_EQ(edgellm_quantize_type_from_name("i32"), -1);
    CHECK_EQ(edgellm_quantize_type_from_name("q4_k_m"), -1);    /* a scheme, not a type */
    CHECK_EQ(edgellm_quantize_type_from_name(""), -1);
    CHECK_EQ(edgellm_quantize_type_from_name(NULL), -1);
    /* every id: accepted by name only for its own id, spelled as edgellm_type_name spells it */
    int n_ok = 0;
    for (int t = 0; t < 1100; t++) {
        const char *name = edgellm_type_name(t);
        if (!strcmp(name, "?")) continue;
        const int back = edgellm_quantize_type_from_name(name);
        CHECK(back == -1 || back == t);
        n_ok += back == t;
    }
    CHECK_EQ(n_ok, 25);   /* F32 F16 BF16, Q4_0 Q4_1 Q5_0 Q5_1 Q8_0, Q2_K..Q6_K, 12 group-wise types */
}

int main(void)
{
    RUN(test_gguf_meta_reads_stories260k);
    RUN(test_gguf_meta_null_handle);
    RUN(test_gguf_meta_refuses_bad_files);
    RUN(test_gguf_meta_corpus);
    RUN(test_output_whole_or_nothing);
    RUN(test_output_refusals);
    RUN(test_output_removed_by_signal_cleanup);
    RUN(test_path_same_file);
    RUN(test_utf8_char_len);
    RUN(test_utf8_sanitize);
    RUN(test_kernels_describe);
    RUN(test_arch_supported);
    RUN(test_env_check);
    RUN(test_bench_cpu_info);
    RUN(test_quantize_scheme);
    RUN(test_quantize_type_from_name);
    return test_summary();
}
