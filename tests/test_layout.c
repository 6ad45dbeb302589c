/* test_layout.c — the stored q4_K_r16 layout (kernels/repack.h, `quantize --layout`):
 * a Q4_K_M model rewritten into the layout and back is byte-identical to the original
 * file; the layout file loads with its matrices used where they are mapped (AVX-512) or
 * unpacked at load (other CPUs, repacking off), and its logits equal the plain file's with
 * the in-place kernels bit for bit (prefill and token-by-token decode, 1 and 2 threads),
 * as do the plain file's with its Q4_K matrices repacked at load (q4_K_x16 at avx512);
 * requantizing from the layout gives the same file as from the plain one; a layout tensor
 * whose rows are not a multiple of 16 is refused by the GGUF reader; the low-memory mode
 * works on the mapped layout and refuses an unpacked copy. */
#include "test_util.h"
#include "format/gguf.h"
#include "kernels/dispatch.h"
#include "model/model.h"
#include <fcntl.h>

/* A random-weight llama-shape Q4_K_M model: 2 layers, n_embd 512, kv_dim 256, n_ff 768
 * (K-quant rows of 256; 48 and 16-row groups), vocab 320 (not a multiple of 16). */
static const char *q4km_path(void)
{
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/layout_q4km.gguf", test_tmpdir());
    edgellm_synth_params p = edgellm_synth_default_params();
    p.shape = (edgellm_shape){.arch = "llama", .n_layer = 2, .n_embd = 512, .n_head = 8, .n_head_kv = 4,
                              .n_ff = 768, .n_vocab = 320, .n_ctx_train = 128, .tied = 0,
                              .rope_theta = 10000, .rms_eps = 1e-5f};
    snprintf(p.shape.name, sizeof p.shape.name, "layout");
    p.type = "q4_k_m";
    p.seed = 11;
    p.n_threads = 2;
    p.std = 0.05f;
    edgellm_error err = {0};
    if (edgellm_synth(&p, path, NULL, NULL, &err) != EDGELLM_OK) {
        fprintf(stderr, "synth %s: %s\n", path, err.msg);
        exit(1);
    }
    return path;
}

/* Rewrite in to out with only the layout changed (type NULL: every type kept). */
static edgellm_status relayout(const char *in, const char *out, const char *layout, edgellm_quantize_report *r)
{
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = NULL;
    p.layout = layout;
    p.n_threads = 2;
    edgellm_error err = {0};
    edgellm_status rc = edgellm_quantize_file(in, out, &p, r, &err);
    if (rc) fprintf(stderr, "   quantize %s -> %s: %s\n", in, out, err.msg);
    return rc;
}

static bool same_bytes(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    void *x = read_file(a, &na), *y = read_file(b, &nb);
    const bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static const char *r16_path(void)
{
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/layout_r16.gguf", test_tmpdir());
    edgellm_quantize_report r;
    if (relayout(q4km_path(), path, "q4_K_r16", &r) != EDGELLM_OK) exit(1);
    edgellm_quantize_report_free(&r);
    return path;
}

static void test_round_trip_is_byte_identical(void)
{
    edgellm_quantize_report r;
    char back[512];
    snprintf(back, sizeof back, "%s/layout_back.gguf", test_tmpdir());
    CHECK_OK(relayout(q4km_path(), r16_path(), "q4_K_r16", &r) == EDGELLM_OK ? EDGELLM_OK : EDGELLM_ERR_IO);
    /* which tensors took the layout: the layers' Q4_K matrices, not token_embd, not Q6_K */
    int n_q4k_blk = 0;
    for (int i = 0; i < r.n_tensors; i++) {
        const edgellm_quantize_tensor *t = &r.tensors[i];
        const bool blk = !strncmp(t->name, "blk.", 4);
        if (t->src_type == EDGELLM_TYPE_Q4_K && blk && t->n_dims == 2) {
            n_q4k_blk++;
            CHECK_EQ(t->type, EDGELLM_TYPE_Q4_K_R16);
        } else {
            CHECK(t->type != EDGELLM_TYPE_Q4_K_R16);
            CHECK_EQ(t->type, t->src_type);
        }
        CHECK_EQ(t->dst_bytes, t->src_bytes);
        CHECK_EQ(t->quantized, 0);
    }
    CHECK(n_q4k_blk >= 8);
    CHECK_EQ(r.n_layout, n_q4k_blk);
    edgellm_quantize_report_free(&r);
    CHECK(!same_bytes(q4km_path(), r16_path()));
    /* the file: 64-byte alignment recorded, edgellm.layout named */
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(r16_path(), &g, &_e));
    if (g) {
        CHECK_EQ(edgellm_gguf_alignment(g), 64);
        edgellm_str s = {0};
        CHECK(edgellm_gguf_get_str(g, "edgellm.layout", &s) && edgellm_str_eq(s, "q4_K_r16"));
        edgellm_gguf_close(g);
    }
    /* and back: the original file, byte for byte */
    CHECK_OK(relayout(r16_path(), back, "plain", &r) == EDGELLM_OK ? EDGELLM_OK : EDGELLM_ERR_IO);
    CHECK_EQ(r.n_layout, 0);
    edgellm_quantize_report_free(&r);
    CHECK(same_bytes(q4km_path(), back));
    /* no layout asked: a stored layout stays as it is */
    char again[512];
    snprintf(again, sizeof again, "%s/layout_again.gguf", test_tmpdir());
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = NULL;
    p.layout = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_quantize_file(r16_path(), again, &p, NULL, &err), EDGELLM_ERR_MISUSE);   /* nothing asked */
    p.layout = "q4_K_r16";   /* a type's options without a type: nothing would apply them */
    p.output_type = EDGELLM_TYPE_Q4_K;
    CHECK_EQ(edgellm_quantize_file(r16_path(), again, &p, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "output_type") != NULL);
    p.output_type = -1;
    /* --target reads plain rows: a stored layout is refused, by name */
    edgellm_quantize_target_params tp = edgellm_quantize_target_default_params();
    static const char text[] = "Once upon a time there was a little dog. It liked to run in the park.";
    tp.target = "dppl:3%";
    tp.calib = text;
    tp.calib_len = sizeof text - 1;
    tp.quant.n_threads = 1;
    edgellm_quantize_target_report tr;
    CHECK_EQ(edgellm_quantize_target(r16_path(), again, &tp, &tr, &err), EDGELLM_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "q4_K_r16") && strstr(err.msg, "blk.0."));
    edgellm_quantize_target_report_free(&tr);
    p.layout = "q4_k_r8";
    CHECK_EQ(edgellm_quantize_file(r16_path(), again, &p, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "q4_k_r8") != NULL);
    CHECK(access(again, F_OK) != 0);
}

/* Logits of path's model for tok[n] at 1 and 2 threads, as one prefill and token by token:
 * out[4][n][V]. Also the model's counts of stored / unpacked / repacked matrices. */
static float *all_logits(const char *path, const int32_t *tok, int n, int V, int counts[3])
{
    edgellm_model *m = test_load_model(path);
    if (!m) return NULL;
    counts[0] = m->n_stored;
    counts[1] = m->n_unpacked;
    counts[2] = m->n_repacked;
    float *out = malloc(sizeof(float) * 4 * (size_t)n * (size_t)V);
    for (int k = 0; out && k < 4; k++) {
        float *l = test_run_logits(m, tok, n, 1 + k % 2, EDGELLM_TYPE_F32, k / 2);
        if (!l) { free(out); out = NULL; break; }
        memcpy(out + (size_t)k * n * V, l, sizeof(float) * (size_t)n * (size_t)V);
        free(l);
    }
    edgellm_model_free(m);
    return out;
}

/* At the active kernel level: the layout file (mapped with its kernel where the level has
 * one, else unpacked) against the plain file with the in-place kernels (repacking off). */
static void compare_at_level(const char *level)
{
    enum { N = 9, V = 320 };
    const int32_t tok[N] = {1, 17, 250, 3, 99, 300, 42, 42, 7};
    int plain_c[3], c[3], c_off[3];
    edgellm_kernels_set_repack(false);   /* the reference: plain rows, in-place kernels */
    float *ref = all_logits(q4km_path(), tok, N, V, plain_c);
    CHECK(ref != NULL);
    CHECK_EQ(plain_c[0] + plain_c[1] + plain_c[2], 0);
    /* repacking off changes nothing for a stored layout: nothing is copied */
    float *off = all_logits(r16_path(), tok, N, V, c_off);
    edgellm_kernels_set_repack(true);
    float *on = all_logits(r16_path(), tok, N, V, c);
    CHECK(off != NULL && on != NULL);
    /* the plain file repacked at load into the level's layout (q4_K_x16 at avx512) */
    int rep_c[3];
    float *rep = all_logits(q4km_path(), tok, N, V, rep_c);
    CHECK(rep != NULL);
    const bool layout = edgellm_kernels_repack(EDGELLM_TYPE_Q4_K, 512) != NULL;
    CHECK(layout ? rep_c[2] >= 8 : rep_c[2] == 0);   /* Q4_K, and Q6_K where it has a layout */
    CHECK_EQ(rep_c[0] + rep_c[1], 0);
    fprintf(stderr, "  level %s: plain file, %d matrices repacked at load\n", level, rep_c[2]);
    const bool kernel = edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, 512) != NULL;
    fprintf(stderr, "  level %s: layout kernel %s; stored %d, unpacked %d, repacked %d\n", level,
            kernel ? "yes" : "no", c[0], c[1], c[2]);
    CHECK(kernel ? c[0] >= 8 && c[1] == 0 : c[0] == 0 && c[1] >= 8);
    /* the stored matrices are never repacked; the file's other matrices with a layout
     * (Q6_K at avx512) are, as in the plain file */
    CHECK_EQ(c[2], rep_c[2] - (layout ? c[0] + c[1] : 0));
    /* the fixture's Q6_K matrices (3): repacked exactly where Q6_K has a layout */
    CHECK(edgellm_kernels_repack(EDGELLM_TYPE_Q6_K, 512) ? c[2] > 0 : c[2] == 0);
    CHECK(off == NULL || (c_off[0] == c[0] && c_off[1] == c[1] && c_off[2] == 0));
    const size_t n = 4 * (size_t)N * V;
    if (ref && off && on) {
        CHECK(memcmp(ref, off, n * sizeof(float)) == 0);
        CHECK(memcmp(ref, on, n * sizeof(float)) == 0);
        CHECK(rep == NULL || memcmp(ref, rep, n * sizeof(float)) == 0);
        CHECK(stddev(ref, n) > 0.01);   /* real logits, not zeros */
    }
    free(ref);
    free(off);
    free(on);
    free(rep);
}

static void test_layout_logits_equal_plain(void)
{
    compare_at_level(edgellm_kernels_name());
    /* a level without the layout's kernel: unpacked at load */
    static const char *const lower[] = {"avx2", "scalar", "neon"};
    for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++)
        if (edgellm_kernels_force(lower[i])) {
            compare_at_level(lower[i]);
            CHECK(edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, 512) == NULL);
            break;
        }
    edgellm_kernels_force(NULL);
}

static void test_requantize_from_layout(void)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/layout_q8_from_plain.gguf", test_tmpdir());
    snprintf(b, sizeof b, "%s/layout_q8_from_r16.gguf", test_tmpdir());
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = "q8_0";
    p.n_threads = 2;
    CHECK_OK(edgellm_quantize_file(q4km_path(), a, &p, NULL, &_e));
    CHECK_OK(edgellm_quantize_file(r16_path(), b, &p, NULL, &_e));
    CHECK(same_bytes(a, b));
    /* quantized straight into the layout: the same as quantizing, then relayouting */
    char c[512], d[512];
    snprintf(c, sizeof c, "%s/layout_q4k_direct.gguf", test_tmpdir());
    snprintf(d, sizeof d, "%s/layout_q4k_two_steps.gguf", test_tmpdir());
    p.type = "q4_k";
    p.layout = "q4_K_r16";
    edgellm_quantize_report r;
    CHECK_OK(edgellm_quantize_file(a, c, &p, &r, &_e));
    CHECK(r.n_layout >= 8);
    edgellm_quantize_report_free(&r);
    p.layout = NULL;
    char plain[512];
    snprintf(plain, sizeof plain, "%s/layout_q4k_plain.gguf", test_tmpdir());
    CHECK_OK(edgellm_quantize_file(a, plain, &p, NULL, &_e));
    CHECK_OK(relayout(plain, d, "q4_K_r16", NULL));
    CHECK(same_bytes(c, d));
}

static void test_hostile_row_count(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/layout_bad.gguf", test_tmpdir());
    static uint8_t data[20 * 144];
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    const int64_t ne[2] = {256, 20};   /* 20 rows: not a multiple of 16 */
    CHECK(w && edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", EDGELLM_TYPE_Q4_K_R16, 2, ne, data));
    CHECK_OK(edgellm_gguf_writer_write(w, path, &_e));
    edgellm_gguf_writer_free(w);
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_open(path, &g, &err), EDGELLM_ERR_FORMAT);
    CHECK(g == NULL);
    CHECK(strstr(err.msg, "blk.0.attn_q.weight") && strstr(err.msg, "16-row"));
    /* 3-D, 32 rows in all (a multiple of 16): still not a matrix */
    w = edgellm_gguf_writer_new();
    const int64_t ne3[3] = {256, 16, 2};
    static uint8_t data3[32 * 144];
    CHECK(w && edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", EDGELLM_TYPE_Q4_K_R16, 3, ne3, data3));
    CHECK_OK(edgellm_gguf_writer_write(w, path, &_e));
    edgellm_gguf_writer_free(w);
    CHECK_EQ(edgellm_gguf_open(path, &g, &err), EDGELLM_ERR_FORMAT);
    CHECK(g == NULL);
    CHECK(strstr(err.msg, "3 dimensions") != NULL);
    /* 0 rows of 2^34 columns (a multiple of 16 rows, no bytes): a valid empty tensor, and
     * info --check must not size anything by its row length (a fuzzer found that; under
     * ASan such an allocation is an out-of-memory abort) */
    w = edgellm_gguf_writer_new();
    const int64_t ne0[2] = {(int64_t)1 << 34, 0};
    CHECK(w && edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", EDGELLM_TYPE_Q4_K_R16, 2, ne0, data3));
    CHECK_OK(edgellm_gguf_writer_write(w, path, &_e));
    edgellm_gguf_writer_free(w);
    edgellm_check_report r;
    CHECK_OK(edgellm_check_file(path, &r, &_e));
    CHECK_EQ(r.found, 0);
}

/* The stored matrices at an address that is not 64-byte aligned (a caller's buffer, an fd
 * region at offset 32): unpacked at load, never handed to the layout kernel; same logits. */
static void test_misaligned_layout_is_unpacked(void)
{
    enum { N = 5, V = 320 };
    const int32_t tok[N] = {1, 17, 250, 3, 99};
    size_t size = 0;
    uint8_t *file = read_file(r16_path(), &size);
    uint8_t *buf = NULL;
    CHECK(file != NULL && posix_memalign((void **)&buf, 64, size + 64) == 0);
    if (!file || !buf) { free(file); free(buf); return; }
    edgellm_model *ref = test_load_model(r16_path());
    float *want = ref ? test_run_logits(ref, tok, N, 1, EDGELLM_TYPE_F32, 0) : NULL;
    CHECK(want != NULL);
    const bool kernel = edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, 512) != NULL;
    for (int shift = 0; shift <= 32; shift += 32) {
        memcpy(buf + shift, file, size);
        edgellm_model *m = NULL;
        CHECK_OK(edgellm_model_load_memory(buf + shift, size, "layout-in-memory", NULL, &m, &_e));
        if (!m) continue;
        CHECK_EQ(m->n_stored, kernel && shift == 0 ? ref->n_stored : 0);
        CHECK_EQ(m->n_unpacked, kernel && shift == 0 ? 0 : ref->n_stored + ref->n_unpacked);
        float *got = test_run_logits(m, tok, N, 1, EDGELLM_TYPE_F32, 0);
        CHECK(got && want && memcmp(got, want, sizeof(float) * N * V) == 0);
        free(got);
        edgellm_model_free(m);
    }
    /* an fd region at offset 32: the unpacking reads it with pread */
    char path[512];
    snprintf(path, sizeof path, "%s/layout_at_32.bin", test_tmpdir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        static const uint8_t zeros[32];
        CHECK(fwrite(zeros, 1, 32, f) == 32 && fwrite(file, 1, size, f) == size);
        fclose(f);
        int fd = open(path, O_RDONLY);
        edgellm_model *m = NULL;
        CHECK_OK(edgellm_model_load_fd(fd, 32, size, "layout-at-32", NULL, &m, &_e));
        if (fd >= 0) close(fd);
        if (m) {
            CHECK_EQ(m->n_stored, 0);
            CHECK(m->n_unpacked >= 8);
            float *got = test_run_logits(m, tok, N, 1, EDGELLM_TYPE_F32, 0);
            CHECK(got && want && memcmp(got, want, sizeof(float) * N * V) == 0);
            free(got);
            edgellm_model_free(m);
        }
    }
    free(want);
    edgellm_model_free(ref);
    free(file);
    free(buf);
}

/* --type without --layout keeps a stored layout for the matrices that stay Q4_K. */
static void test_requantize_keeps_layout(void)
{
    char out[512];
    snprintf(out, sizeof out, "%s/layout_q4km_again.gguf", test_tmpdir());
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = "q4_k_m";
    p.n_threads = 2;
    edgellm_quantize_report r;
    CHECK_OK(edgellm_quantize_file(r16_path(), out, &p, &r, &_e));
    CHECK(r.n_layout >= 8);
    for (int i = 0; i < r.n_tensors; i++)
        if (r.tensors[i].src_type == EDGELLM_TYPE_Q4_K_R16)
            CHECK(r.tensors[i].type != EDGELLM_TYPE_Q4_K);   /* still Q4_K, so still stored */
    edgellm_quantize_report_free(&r);
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(out, &g, &_e));
    if (g) CHECK_EQ(edgellm_gguf_alignment(g), 64);
    edgellm_gguf_close(g);
}

static void test_membudget_on_mapped_layout(void)
{
    if (!edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, 512)) {
        fprintf(stderr, "  no layout kernel on this CPU: the mapped case does not arise\n");
    } else {
        edgellm_model *m = test_load_model(r16_path());
        edgellm_ctx *c = NULL;
        edgellm_membudget *b = NULL;
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = 32;
        CHECK(m != NULL);
        if (m) {
            CHECK(m->repack_buf == NULL);
            CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
            CHECK_OK(edgellm_membudget_attach(c, 64u << 20, &b, &_e));
            /* the largest layer: its matrices' bytes in the file (all mapped) */
            uint64_t want = 0;
            for (int il = 0; il < 2; il++) {
                uint64_t sum = 0;
                char pre[16];
                snprintf(pre, sizeof pre, "blk.%d.", il);
                for (int64_t i = 0; i < edgellm_gguf_n_tensors(m->gguf); i++) {
                    const edgellm_gguf_tensor *gt = edgellm_gguf_tensor_at(m->gguf, i);
                    if (gt->n_dims == 2 && gt->name.len > strlen(pre) && !memcmp(gt->name.ptr, pre, strlen(pre)))
                        sum += gt->size_bytes;
                }
                want = sum > want ? sum : want;
            }
            edgellm_membudget_info info = {.size = sizeof info};
            if (b) edgellm_membudget_get_info(b, &info);
            CHECK_EQ(info.layer_bytes_max, want);
            int32_t t = 5;
            CHECK_OK(edgellm_decode(c, &t, 1, NULL, &_e));
            edgellm_membudget_detach(b);
            edgellm_ctx_free(c);
            edgellm_model_free(m);
        }
    }
    /* unpacked (a level without the kernel): owned memory, refused */
    if (!edgellm_kernels_force("avx2") && !edgellm_kernels_force("scalar")) return;
    edgellm_model *m = test_load_model(r16_path());
    CHECK(m != NULL);
    if (m) {
        edgellm_ctx *c = NULL;
        edgellm_membudget *b = NULL;
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = 32;
        CHECK_OK(edgellm_ctx_new(m, &cp, &c, &_e));
        edgellm_error err = {0};
        CHECK_EQ(edgellm_membudget_attach(c, 64u << 20, &b, &err), EDGELLM_ERR_UNSUPPORTED);
        CHECK(strstr(err.msg, "--layout plain") != NULL);
        edgellm_ctx_free(c);
        edgellm_model_free(m);
    }
    edgellm_kernels_force(NULL);
}

/* info --check reads a stored matrix's rows: a NaN scale (d) of row 21 of a layout tensor
 * is found at that row (head plane: group 1, super-block 0, bytes 2·5 .. 2·5+1). */
static void test_check_finds_nan_in_layout(void)
{
    edgellm_check_report r;
    CHECK_OK(edgellm_check_file(r16_path(), &r, &_e));
    CHECK_EQ(r.found, 0);
    CHECK_EQ(r.n_tensors_skipped, 0);
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(r16_path(), &g, &_e));
    if (!g) return;
    const edgellm_gguf_tensor *t = NULL;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(g) && !t; i++)
        if (edgellm_gguf_tensor_at(g, i)->type == EDGELLM_TYPE_Q4_K_R16) t = edgellm_gguf_tensor_at(g, i);
    CHECK(t != NULL);
    const uint64_t pos = t ? edgellm_gguf_data_offset(g) + t->offset : 0;
    const int64_t ne0 = t ? t->ne[0] : 0, rows = t ? t->ne[1] : 0;
    edgellm_gguf_close(g);
    if (!t || rows < 32) return;
    size_t n = 0;
    uint8_t *bytes = read_file(r16_path(), &n);
    CHECK(bytes != NULL);
    if (!bytes) return;
    const size_t nb = (size_t)(ne0 / 256);
    const size_t head = (size_t)pos + edgellm_repack_q4_K_r16_plane2(rows, ne0) + 1 * nb * 256 + 2 * 5;
    bytes[head] = 0x00;
    bytes[head + 1] = 0x7e;   /* F16 NaN */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/layout_nan.gguf", test_tmpdir());
    CHECK_EQ(write_file(bad, bytes, n), 0);
    free(bytes);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_check_file(bad, &r, &err), EDGELLM_ERR_NUMERIC);
    CHECK_EQ(r.found, 1);
    CHECK_EQ(r.row, 21);
}

int main(void)
{
    RUN(test_round_trip_is_byte_identical);
    RUN(test_layout_logits_equal_plain);
    RUN(test_requantize_from_layout);
    RUN(test_hostile_row_count);
    RUN(test_membudget_on_mapped_layout);
    RUN(test_misaligned_layout_is_unpacked);
    RUN(test_requantize_keeps_layout);
    RUN(test_check_finds_nan_in_layout);
    return test_summary();
}
