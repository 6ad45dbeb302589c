/*
 * test_gguf_write.c — the GGUF v3 writer (src/format/gguf_write.c), checked two ways:
 *  - byte for byte against a small file laid out by hand from the spec (ggml-org/ggml
 *    docs/gguf.md), independent of the reader;
 *  - round trip through the reader (src/format/gguf_read.c): every metadata value type,
 *    arrays of every scalar type and of strings, tensors of F32/F16/Q8_0/BF16 sizes, and the
 *    alignment of every data offset.
 * Failure paths: a missing directory, a path through a regular file, a target that is a
 * directory, a write that runs out of space (RLIMIT_FSIZE) and allocation failures must
 * each give an error naming the path and leave no file (final or temporary) behind.
 */
#include "test_util.h"
#include "format/gguf.h"
#include "tensor/types.h"
#include "common/common.h"
#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

/* Number of entries in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* ---- an exact file from the spec ---- */

static void test_gguf_write_tiny_file_bytes(void)
{
    /* general.architecture = "llama"; one F32 tensor "t", ne={4}, values 1,2,3,4 */
    static const uint8_t expect_head[] = {
        0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0,           /* "GGUF", version 3           */
        1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, /* 1 tensor, 1 kv              */
        20, 0, 0, 0, 0, 0, 0, 0,                      /* key length                  */
        'g', 'e', 'n', 'e', 'r', 'a', 'l', '.', 'a', 'r', 'c', 'h', 'i', 't', 'e', 'c', 't', 'u', 'r', 'e',
        8, 0, 0, 0,                                   /* STRING                      */
        5, 0, 0, 0, 0, 0, 0, 0, 'l', 'l', 'a', 'm', 'a',
        1, 0, 0, 0, 0, 0, 0, 0, 't',                  /* tensor name                 */
        1, 0, 0, 0,                                   /* n_dims                      */
        4, 0, 0, 0, 0, 0, 0, 0,                       /* ne[0]                       */
        0, 0, 0, 0,                                   /* type F32                    */
        0, 0, 0, 0, 0, 0, 0, 0,                       /* offset 0                    */
    };
    const float v[4] = {1, 2, 3, 4};
    const int64_t ne[1] = {4};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(w != NULL);
    CHECK(edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_add_tensor(w, "t", EDGELLM_TYPE_F32, 1, ne, v));
    const char *path = tmp_path("tiny.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);

    size_t size = 0;
    uint8_t *got = read_file(path, &size);
    CHECK(got != NULL);
    if (!got) return;
    size_t head = sizeof expect_head, data_at = (head + 31) / 32 * 32;   /* 102 -> 128 */
    CHECK_EQ(head, 102);
    CHECK_EQ(size, data_at + 16 + 16);   /* data padded to 32 as well */
    CHECK(size >= head && memcmp(got, expect_head, head) == 0);
    int zeros = 1;
    for (size_t i = head; i < data_at && i < size; i++) zeros &= got[i] == 0;
    for (size_t i = data_at + 16; i < size; i++) zeros &= got[i] == 0;
    CHECK(zeros);
    CHECK(size >= data_at + 16 && memcmp(got + data_at, v, 16) == 0);
    free(got);
}

/* ---- round trip through the reader ---- */

static void check_arr(const edgellm_gguf *g, const char *key, edgellm_gguf_vtype et, const void *data, uint64_t n)
{
    edgellm_gguf_vtype t = EDGELLM_GGUF_TYPE_COUNT;
    uint64_t count = 0;
    CHECK(edgellm_gguf_arr_info(g, key, &t, &count));
    CHECK_EQ(t, et);
    CHECK_EQ(count, n);
    const void *p = edgellm_gguf_arr_data(g, key);
    CHECK(p != NULL);
    if (p) CHECK(memcmp(p, data, n * edgellm_gguf_vtype_size(et)) == 0);
    int64_t i = edgellm_gguf_find_key(g, key);
    CHECK(i >= 0);
    CHECK_EQ(edgellm_gguf_kv_type(g, i), EDGELLM_GGUF_ARRAY);
}

static void test_gguf_write_roundtrip_metadata(void)
{
    const uint8_t u8 = 200;
    const int8_t i8 = -100;
    const uint16_t u16 = 60000;
    const int16_t i16 = -30000;
    const int64_t i64 = -((int64_t)1 << 40) - 7;
    const double f64 = 0.1;
    const uint8_t bool_true = 1;

    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(w != NULL);
    if (!w) return;
    CHECK(edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.u8", EDGELLM_GGUF_UINT8, &u8));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.i8", EDGELLM_GGUF_INT8, &i8));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.u16", EDGELLM_GGUF_UINT16, &u16));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.i16", EDGELLM_GGUF_INT16, &i16));
    CHECK(edgellm_gguf_writer_set_u32(w, "s.u32", 4000000000u));
    CHECK(edgellm_gguf_writer_set_i32(w, "s.i32", -2000000000));
    CHECK(edgellm_gguf_writer_set_f32(w, "s.f32", 1e-5f));
    CHECK(edgellm_gguf_writer_set_bool(w, "s.bool", true));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.bool2", EDGELLM_GGUF_BOOL, &bool_true));
    CHECK(edgellm_gguf_writer_set_str(w, "s.str", "h\xC3\xA9llo"));
    CHECK(edgellm_gguf_writer_set_str(w, "s.empty", ""));
    CHECK(edgellm_gguf_writer_set_u64(w, "s.u64", 1234567890123ull));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.i64", EDGELLM_GGUF_INT64, &i64));
    CHECK(edgellm_gguf_writer_set_scalar(w, "s.f64", EDGELLM_GGUF_FLOAT64, &f64));
    /* set twice: first position, last value; and the type may change */
    CHECK(edgellm_gguf_writer_set_u32(w, "s.twice", 1));
    CHECK(edgellm_gguf_writer_set_str(w, "s.twice", "second"));
    /* invalid setter arguments */
    const uint8_t two = 2;
    CHECK(!edgellm_gguf_writer_set_scalar(w, "bad.bool", EDGELLM_GGUF_BOOL, &two));
    CHECK(!edgellm_gguf_writer_set_scalar(w, "bad.str", EDGELLM_GGUF_STRING, "x"));
    CHECK(!edgellm_gguf_writer_set_arr(w, "bad.arr", EDGELLM_GGUF_ARRAY, &two, 1));
    CHECK(!edgellm_gguf_writer_set_arr(w, "bad.boolarr", EDGELLM_GGUF_BOOL, &two, 1));

    /* arrays of every fixed-size type */
    const uint8_t a_u8[] = {0, 1, 255};
    const int8_t a_i8[] = {-128, 0, 127};
    const uint16_t a_u16[] = {1, 65535};
    const int16_t a_i16[] = {-32768, 32767, 5};
    const uint32_t a_u32[] = {7, 4294967295u};
    const int32_t a_i32[] = {-1, 2, -3, 4};
    const float a_f32[] = {0.5f, -1.25f, 3e38f};
    const uint8_t a_bool[] = {1, 0, 1, 1};
    const uint64_t a_u64[] = {UINT64_MAX, 0};
    const int64_t a_i64[] = {INT64_MIN, INT64_MAX, 0};
    const double a_f64[] = {1e300, -2.5};
    CHECK(edgellm_gguf_writer_set_arr(w, "a.u8", EDGELLM_GGUF_UINT8, a_u8, 3));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.i8", EDGELLM_GGUF_INT8, a_i8, 3));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.u16", EDGELLM_GGUF_UINT16, a_u16, 2));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.i16", EDGELLM_GGUF_INT16, a_i16, 3));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.u32", EDGELLM_GGUF_UINT32, a_u32, 2));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.i32", EDGELLM_GGUF_INT32, a_i32, 4));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.f32", EDGELLM_GGUF_FLOAT32, a_f32, 3));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.bool", EDGELLM_GGUF_BOOL, a_bool, 4));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.u64", EDGELLM_GGUF_UINT64, a_u64, 2));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.i64", EDGELLM_GGUF_INT64, a_i64, 3));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.f64", EDGELLM_GGUF_FLOAT64, a_f64, 2));
    CHECK(edgellm_gguf_writer_set_arr(w, "a.empty", EDGELLM_GGUF_INT32, NULL, 0));
    const char *strs[] = {"<unk>", "", "\xE2\x96\x81the", "a\nb"};
    CHECK(edgellm_gguf_writer_set_arr_str(w, "a.str", strs, NULL, 4));
    const char *bin[] = {"x\0y", "zz"};
    const uint64_t bin_len[] = {3, 1};
    CHECK(edgellm_gguf_writer_set_arr_str(w, "a.strlen", bin, bin_len, 2));

    const char *path = tmp_path("meta.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);

    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_open(path, &g, &err), EDGELLM_OK);
    if (!g) { fprintf(stderr, "   %s\n", err.msg); return; }
    CHECK_EQ(edgellm_gguf_version(g), 3);
    CHECK_EQ(edgellm_gguf_alignment(g), 32);
    CHECK_EQ(edgellm_gguf_n_tensors(g), 0);
    CHECK_EQ(edgellm_gguf_n_kv(g), 30);
    /* insertion order, with "s.twice" at its first position */
    CHECK(edgellm_str_eq(edgellm_gguf_key(g, 0), "general.architecture"));
    CHECK(edgellm_str_eq(edgellm_gguf_key(g, 1), "s.u8"));
    CHECK(edgellm_str_eq(edgellm_gguf_key(g, 15), "s.twice"));
    CHECK(edgellm_str_eq(edgellm_gguf_key(g, 29), "a.strlen"));

    static const struct { const char *key; edgellm_gguf_vtype t; int64_t v; } ints[] = {
        {"s.u8", EDGELLM_GGUF_UINT8, 200},       {"s.i8", EDGELLM_GGUF_INT8, -100},
        {"s.u16", EDGELLM_GGUF_UINT16, 60000},   {"s.i16", EDGELLM_GGUF_INT16, -30000},
        {"s.u32", EDGELLM_GGUF_UINT32, 4000000000LL}, {"s.i32", EDGELLM_GGUF_INT32, -2000000000},
        {"s.u64", EDGELLM_GGUF_UINT64, 1234567890123LL}, {"s.i64", EDGELLM_GGUF_INT64, -((int64_t)1 << 40) - 7},
        {"s.bool", EDGELLM_GGUF_BOOL, 1},        {"s.bool2", EDGELLM_GGUF_BOOL, 1},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        int64_t i = edgellm_gguf_find_key(g, ints[k].key), v = 0;
        CHECK(i >= 0);
        CHECK_EQ(edgellm_gguf_kv_type(g, i), ints[k].t);
        CHECK(edgellm_gguf_get_i64(g, ints[k].key, &v));
        CHECK_EQ(v, ints[k].v);
    }
    uint32_t u32 = 0;
    CHECK(edgellm_gguf_get_u32(g, "s.u32", &u32));
    CHECK_EQ(u32, 4000000000u);
    float f = 0;
    CHECK(edgellm_gguf_get_f32(g, "s.f32", &f));
    CHECK(f == 1e-5f);
    CHECK(edgellm_gguf_get_f32(g, "s.f64", &f));
    CHECK(f == 0.1f);
    CHECK_EQ(edgellm_gguf_kv_type(g, edgellm_gguf_find_key(g, "s.f64")), EDGELLM_GGUF_FLOAT64);
    bool b = false;
    CHECK(edgellm_gguf_get_bool(g, "s.bool", &b));
    CHECK(b);
    edgellm_str s = {0};
    CHECK(edgellm_gguf_get_str(g, "s.str", &s));
    CHECK(edgellm_str_eq(s, "h\xC3\xA9llo"));
    CHECK(edgellm_gguf_get_str(g, "s.empty", &s));
    CHECK_EQ(s.len, 0);
    CHECK(edgellm_gguf_get_str(g, "s.twice", &s));
    CHECK(edgellm_str_eq(s, "second"));
    CHECK_EQ(edgellm_gguf_find_key(g, "bad.bool"), -1);
    CHECK_EQ(edgellm_gguf_find_key(g, "bad.boolarr"), -1);

    check_arr(g, "a.u8", EDGELLM_GGUF_UINT8, a_u8, 3);
    check_arr(g, "a.i8", EDGELLM_GGUF_INT8, a_i8, 3);
    check_arr(g, "a.u16", EDGELLM_GGUF_UINT16, a_u16, 2);
    check_arr(g, "a.i16", EDGELLM_GGUF_INT16, a_i16, 3);
    check_arr(g, "a.u32", EDGELLM_GGUF_UINT32, a_u32, 2);
    check_arr(g, "a.i32", EDGELLM_GGUF_INT32, a_i32, 4);
    check_arr(g, "a.f32", EDGELLM_GGUF_FLOAT32, a_f32, 3);
    check_arr(g, "a.bool", EDGELLM_GGUF_BOOL, a_bool, 4);
    check_arr(g, "a.u64", EDGELLM_GGUF_UINT64, a_u64, 2);
    check_arr(g, "a.i64", EDGELLM_GGUF_INT64, a_i64, 3);
    check_arr(g, "a.f64", EDGELLM_GGUF_FLOAT64, a_f64, 2);
    edgellm_gguf_vtype et;
    uint64_t n = 99;
    CHECK(edgellm_gguf_arr_info(g, "a.empty", &et, &n));
    CHECK_EQ(n, 0);
    CHECK(edgellm_gguf_arr_info(g, "a.str", &et, &n));
    CHECK_EQ(et, EDGELLM_GGUF_STRING);
    CHECK_EQ(n, 4);
    for (uint64_t j = 0; j < 4; j++) {
        CHECK(edgellm_gguf_arr_str(g, "a.str", j, &s));
        CHECK(edgellm_str_eq(s, strs[j]));
    }
    CHECK(!edgellm_gguf_arr_str(g, "a.str", 4, &s));
    CHECK(edgellm_gguf_arr_str(g, "a.strlen", 0, &s));
    CHECK(s.len == 3 && memcmp(s.ptr, "x\0y", 3) == 0);
    CHECK(edgellm_gguf_arr_str(g, "a.strlen", 1, &s));
    CHECK(s.len == 1 && s.ptr[0] == 'z');

    char buf[128];
    edgellm_gguf_format_value(g, edgellm_gguf_find_key(g, "a.str"), buf, sizeof buf);
    CHECK(strstr(buf, "4") != NULL);
    edgellm_gguf_close(g);
}

static void test_gguf_write_roundtrip_tensors_aligned(void)
{
    /* shapes chosen so that most data sizes are not multiples of 32 */
    float f32a[7];                             /* ne={7}: 28 bytes          */
    uint16_t f16[5 * 3];                       /* ne={5,3}: 30 bytes         */
    uint8_t q8[3 * 2 * 34];                    /* Q8_0 ne={64,3}: 3 rows x 2 blocks x 34 = 204 bytes */
    uint16_t bf16[2 * 3 * 2 * 1];              /* ne={2,3,2,1}: 24 bytes      */
    float f32b[33];                            /* ne={33}: 132 bytes         */
    for (int i = 0; i < 7; i++) f32a[i] = (float)i - 3.5f;
    for (int i = 0; i < 15; i++) f16[i] = edgellm_f32_to_f16((float)i / 4);
    for (int i = 0; i < (int)sizeof q8; i++) q8[i] = (uint8_t)(i * 37 + 11);
    for (int i = 0; i < 12; i++) bf16[i] = edgellm_f32_to_bf16((float)i);
    for (int i = 0; i < 33; i++) f32b[i] = (float)i * 0.25f;
    const struct { const char *name; int type; uint32_t n_dims; int64_t ne[4]; const void *data; uint64_t size; } ts[] = {
        {"a.weight", EDGELLM_TYPE_F32, 1, {7}, f32a, 28},
        {"blk.0.attn_q.weight", EDGELLM_TYPE_F16, 2, {5, 3}, f16, 30},
        {"q", EDGELLM_TYPE_Q8_0, 2, {64, 3}, q8, 204},
        {"four_d", EDGELLM_TYPE_BF16, 4, {2, 3, 2, 1}, bf16, 24},
        {"z", EDGELLM_TYPE_F32, 1, {33}, f32b, 132},
    };
    const int nt = sizeof ts / sizeof ts[0];

    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(w != NULL);
    if (!w) return;
    CHECK(edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_set_str(w, "general.name", "odd-sizes"));   /* header length not a multiple of 32 */
    for (int i = 0; i < nt; i++)
        CHECK(edgellm_gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, ts[i].data));
    const char *path = tmp_path("tensors.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);

    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_open(path, &g, &err), EDGELLM_OK);
    if (!g) { fprintf(stderr, "   %s\n", err.msg); return; }
    CHECK_EQ(edgellm_gguf_n_tensors(g), nt);
    CHECK_EQ(edgellm_gguf_data_offset(g) % 32, 0);
    uint64_t expect_off = 0;
    for (int i = 0; i < nt; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(edgellm_str_eq(t->name, ts[i].name));
        CHECK(edgellm_gguf_find_tensor(g, ts[i].name) == t);
        CHECK_EQ(t->type, ts[i].type);
        CHECK_EQ(t->n_dims, ts[i].n_dims);
        for (uint32_t d = 0; d < 4; d++) CHECK_EQ(t->ne[d], d < ts[i].n_dims ? ts[i].ne[d] : 1);
        CHECK_EQ(t->size_bytes, ts[i].size);
        CHECK_EQ(t->offset, expect_off);   /* packed in call order, each at the next multiple of 32 */
        CHECK_EQ(t->offset % 32, 0);
        CHECK_EQ((edgellm_gguf_data_offset(g) + t->offset) % 32, 0);
        CHECK(memcmp(t->data, ts[i].data, (size_t)ts[i].size) == 0);
        expect_off = (expect_off + ts[i].size + 31) / 32 * 32;
    }
    CHECK_EQ(edgellm_gguf_file_size(g), edgellm_gguf_data_offset(g) + expect_off);
    CHECK_EQ(edgellm_gguf_tensor_at(g, 2)->n_elements, 192);
    edgellm_gguf_close(g);
}

static void test_gguf_write_copy_kv_roundtrip(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    edgellm_gguf *src = NULL, *g = NULL;
    CHECK_OK(edgellm_gguf_open(model, &src, NULL));
    if (!src) return;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(edgellm_gguf_writer_copy_kv(w, src));
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(src); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(src, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        CHECK(edgellm_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data));
    }
    const char *path = tmp_path("copy.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);
    CHECK_OK(edgellm_gguf_open(path, &g, NULL));
    if (g) {
        CHECK_EQ(edgellm_gguf_n_kv(g), edgellm_gguf_n_kv(src));
        for (int64_t i = 0; i < edgellm_gguf_n_kv(src) && i < edgellm_gguf_n_kv(g); i++) {
            edgellm_str a = edgellm_gguf_key(src, i), b = edgellm_gguf_key(g, i);
            CHECK(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len));
            CHECK_EQ(edgellm_gguf_kv_type(src, i), edgellm_gguf_kv_type(g, i));
            char va[256], vb[256];
            edgellm_gguf_format_value(src, i, va, sizeof va);
            edgellm_gguf_format_value(g, i, vb, sizeof vb);
            CHECK(!strcmp(va, vb));
        }
        edgellm_str s;
        CHECK(edgellm_gguf_arr_str(g, "tokenizer.ggml.tokens", 511, &s));
        edgellm_str s0;
        CHECK(edgellm_gguf_arr_str(src, "tokenizer.ggml.tokens", 511, &s0));
        CHECK(s.len == s0.len && !memcmp(s.ptr, s0.ptr, s.len));
        const void *sc = edgellm_gguf_arr_data(g, "tokenizer.ggml.scores"), *sc0 = edgellm_gguf_arr_data(src, "tokenizer.ggml.scores");
        CHECK(sc && sc0 && !memcmp(sc, sc0, 512 * 4));
        CHECK_EQ(edgellm_gguf_n_tensors(g), edgellm_gguf_n_tensors(src));
        for (int64_t i = 0; i < edgellm_gguf_n_tensors(src); i++) {
            const edgellm_gguf_tensor *a = edgellm_gguf_tensor_at(src, i), *b = edgellm_gguf_tensor_at(g, i);
            CHECK(b && a->size_bytes == b->size_bytes && !memcmp(a->data, b->data, a->size_bytes));
        }
        /* the source was itself written with 32-byte alignment in this order: identical file */
        size_t na = 0, nb = 0;
        void *fa = read_file(model, &na), *fb = read_file(path, &nb);
        CHECK(fa && fb && na == nb && !memcmp(fa, fb, na));
        free(fa);
        free(fb);
    }
    edgellm_gguf_close(g);
    edgellm_gguf_close(src);
}

/* copy_kv keeps every value bit for bit, including FLOAT64 and UINT64 >= 2^63. */
static void test_gguf_write_copy_kv_exact(void)
{
    const double f64 = 0.1;                   /* not representable as float */
    const uint64_t big = UINT64_MAX - 1;      /* does not fit int64 */
    const int8_t i8 = -5;
    const char *strs[] = {"x", "yy"};
    const int16_t arr[] = {-1, 2};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(edgellm_gguf_writer_set_scalar(w, "f64", EDGELLM_GGUF_FLOAT64, &f64));
    CHECK(edgellm_gguf_writer_set_u64(w, "u64", big));
    CHECK(edgellm_gguf_writer_set_scalar(w, "i8", EDGELLM_GGUF_INT8, &i8));
    CHECK(edgellm_gguf_writer_set_u32(w, "general.alignment", 32));   /* dropped by copy_kv */
    CHECK(edgellm_gguf_writer_set_arr_str(w, "strs", strs, NULL, 2));
    CHECK(edgellm_gguf_writer_set_arr(w, "arr", EDGELLM_GGUF_INT16, arr, 2));
    CHECK(edgellm_gguf_writer_set_str(w, "s", "v"));
    const char *p1 = tmp_path("exact1.gguf"), *p2 = tmp_path("exact2.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, p1, NULL));
    edgellm_gguf_writer_free(w);
    edgellm_gguf *a = NULL, *b = NULL;
    CHECK_OK(edgellm_gguf_open(p1, &a, NULL));
    if (!a) return;
    w = edgellm_gguf_writer_new();
    CHECK(edgellm_gguf_writer_copy_kv(w, a));
    CHECK_OK(edgellm_gguf_writer_write(w, p2, NULL));
    edgellm_gguf_writer_free(w);
    CHECK_OK(edgellm_gguf_open(p2, &b, NULL));
    if (b) {
        CHECK_EQ(edgellm_gguf_n_kv(b), edgellm_gguf_n_kv(a) - 1);
        CHECK_EQ(edgellm_gguf_find_key(b, "general.alignment"), -1);
        const void *d = edgellm_gguf_kv_data(b, edgellm_gguf_find_key(b, "f64"));
        CHECK(d && !memcmp(d, &f64, 8));
        d = edgellm_gguf_kv_data(b, edgellm_gguf_find_key(b, "u64"));
        CHECK(d && !memcmp(d, &big, 8));
        int64_t v = 0;
        CHECK(edgellm_gguf_get_i64(b, "i8", &v));
        CHECK_EQ(v, -5);
        edgellm_str s;
        CHECK(edgellm_gguf_arr_str(b, "strs", 1, &s) && edgellm_str_eq(s, "yy"));
        d = edgellm_gguf_arr_data(b, "arr");
        CHECK(d && !memcmp(d, arr, 4));
        CHECK(edgellm_gguf_get_str(b, "s", &s) && edgellm_str_eq(s, "v"));
    }
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
}

/* `edgellm info` on a file whose contents we chose: numbers checked by hand. */
static void test_gguf_write_cli_info_reports(void)
{
    static float emb[8 * 4];
    static uint8_t q8[3 * 2 * 34];
    const int64_t ne_emb[2] = {8, 4}, ne_q8[2] = {64, 3};
    const char *toks[] = {"<unk>", "<s>", "</s>", "hi"};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_set_u32(w, "llama.block_count", 7));
    CHECK(edgellm_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
    CHECK(edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"));
    CHECK(edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4));
    CHECK(edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1));
    CHECK(edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2));
    CHECK(edgellm_gguf_writer_add_tensor(w, "token_embd.weight", EDGELLM_TYPE_F32, 2, ne_emb, emb));
    CHECK(edgellm_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", EDGELLM_TYPE_Q8_0, 2, ne_q8, q8));
    const char *path = tmp_path("info.gguf");
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);

    char cmd[1024], out[16384];
    snprintf(cmd, sizeof cmd, "'%s' info '%s'", EDGELLM_CLI, path);
    int rc = run_capture(cmd, out, sizeof out);
    CHECK_EQ(rc, 0);
    /* params 32 + 192 = 224; bytes 128 + 204 = 332; 8 * 332 / 224 = 11.8571 bpw */
    static const char *want[] = {"GGUF v3", "alignment 32", "llama.block_count", " 7\n", "1e-05",
                                 "[4 x STRING]", "1 \"<s>\"", "2 \"</s>\"", "4 tokens", "{8, 4}", "{64, 3}", "Q8_0",
                                 " 204\n", "224 parameters", "332 bytes", "11.8571 bits per weight"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        CHECK(strstr(out, want[k]) != NULL);
        if (!strstr(out, want[k])) fprintf(stderr, "   missing '%s' in:\n%s\n", want[k], out);
    }
    snprintf(cmd, sizeof cmd, "'%s' info --help", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "usage: edgellm info") != NULL);
    snprintf(cmd, sizeof cmd, "'%s' info", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "'%s' info '%s/missing.gguf'", EDGELLM_CLI, test_tmpdir());
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(!strncmp(out, "edgellm info: ", 14) && strstr(out, "missing.gguf: ") != NULL);
}

/* ---- bad input to the writer ---- */

static void test_gguf_write_rejects_bad_tensors(void)
{
    static float data[64];
    const int64_t ne5[5] = {1, 1, 1, 1, 1}, q4[1] = {33}, neg[2] = {4, -1}, ok[1] = {4};
    const int64_t huge[4] = {INT64_MAX, INT64_MAX, 2, 1};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(!edgellm_gguf_writer_add_tensor(w, "n0", EDGELLM_TYPE_F32, 0, ne5, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "n5", EDGELLM_TYPE_F32, 5, ne5, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "q4", EDGELLM_TYPE_Q4_0, 1, q4, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "neg", EDGELLM_TYPE_F32, 2, neg, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "huge", EDGELLM_TYPE_F32, 4, huge, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "type4", 4, 1, ok, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "nodata", EDGELLM_TYPE_F32, 1, ok, NULL));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "", EDGELLM_TYPE_F32, 1, ok, data));
    char name64[65];
    memset(name64, 'n', 64);
    name64[64] = 0;
    CHECK(!edgellm_gguf_writer_add_tensor(w, name64, EDGELLM_TYPE_F32, 1, ok, data));   /* llama.cpp: < 64 bytes */
    name64[63] = 0;
    CHECK(edgellm_gguf_writer_add_tensor(w, name64, EDGELLM_TYPE_F32, 1, ok, data));
    CHECK(edgellm_gguf_writer_add_tensor(w, "dup", EDGELLM_TYPE_F32, 1, ok, data));
    CHECK(!edgellm_gguf_writer_add_tensor(w, "dup", EDGELLM_TYPE_F32, 1, ok, data));
    const char *path = tmp_path("misuse.gguf");
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_writer_write(w, path, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK(strstr(err.msg, "n0") != NULL);   /* the first problem is reported */
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ(count_files(test_tmpdir(), "misuse.gguf"), 0);
    edgellm_gguf_writer_free(w);
}

static edgellm_gguf_writer *small_writer(void)
{
    static const float data[4] = {1, 2, 3, 4};
    const int64_t ne[1] = {4};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    if (w && (!edgellm_gguf_writer_set_str(w, "general.architecture", "llama") ||
              !edgellm_gguf_writer_add_tensor(w, "t", EDGELLM_TYPE_F32, 1, ne, data))) {
        edgellm_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

static void expect_write_fails(const char *path, const char *dir, const char *prefix)
{
    edgellm_gguf_writer *w = small_writer();
    CHECK(w != NULL);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_writer_write(w, path, &err), EDGELLM_ERR_IO);
    CHECK(strstr(err.msg, path) != NULL);
    if (!strstr(err.msg, path)) fprintf(stderr, "   message: %s\n", err.msg);
    if (dir) CHECK_EQ(count_files(dir, prefix), 0);   /* neither final nor temporary file */
    edgellm_gguf_writer_free(w);
}

static void test_gguf_write_unwritable_paths(void)
{
    char path[700], dir[600];
    /* a directory that does not exist */
    snprintf(path, sizeof path, "%s/no/such/dir/out.gguf", test_tmpdir());
    expect_write_fails(path, NULL, NULL);
    /* a path through a regular file (ENOTDIR even for root) */
    snprintf(dir, sizeof dir, "%s/plainfile", test_tmpdir());
    CHECK_EQ(write_file(dir, "x", 1), 0);
    snprintf(path, sizeof path, "%s/out.gguf", dir);
    expect_write_fails(path, NULL, NULL);
    /* a directory where root cannot create files either */
    expect_write_fails("/proc/edgellm-test-out.gguf", "/proc", "edgellm-test-out");
    /* a read-only directory (only meaningful when not root) */
    if (geteuid() != 0) {
        snprintf(dir, sizeof dir, "%s/ro", test_tmpdir());
        CHECK_EQ(mkdir(dir, 0555), 0);
        snprintf(path, sizeof path, "%s/out.gguf", dir);
        expect_write_fails(path, dir, "out.gguf");
    }
    /* the target is a directory: the temporary is written, rename fails, temporary removed */
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    CHECK_EQ(mkdir(dir, 0755), 0);
    CHECK_EQ(mkdir(tmp_path("target/isdir.gguf"), 0755), 0);
    expect_write_fails(tmp_path("target/isdir.gguf"), dir, "isdir.gguf.tmp");
}

/* A write that runs out of room half way (RLIMIT_FSIZE below the file size, in a child so
 * the limit does not outlive the test) fails with an I/O error and leaves no file. */
/* A producer that, mid-write, does what the CLI's signal handler does. */
static edgellm_status produce_then_signal(void *user, uint64_t tag, edgellm_gguf_sink *sink, edgellm_error *err)
{
    const char *tmp = user;
    bool *existed = (bool *)(uintptr_t)tag;
    static const float zeros[16];   /* the tensor: 16 F32 */
    *existed = access(tmp, F_OK) == 0;
    edgellm_remove_temp_files();
    edgellm_gguf_sink_put(sink, zeros, sizeof zeros);
    return EDGELLM_OK;
}

/* The temporary-file registry behind edgellm_remove_temp_files (src/common/tmpfiles.c):
 * registered files and then folders go, nothing else does, an unregistered slot is not
 * touched again, a path too long or a full table is refused (-1); and the GGUF writer's
 * "OUT.tmp.PID" is registered while it is written: removed mid-write, the write fails
 * with the target path named and nothing under it. */
static void test_gguf_write_temp_registry(void)
{
    char dir[600], f1[700], f2[700];
    snprintf(dir, sizeof dir, "%s/reg", test_tmpdir());
    snprintf(f1, sizeof f1, "%s/a.tmp", dir);
    snprintf(f2, sizeof f2, "%s/keep", test_tmpdir());
    CHECK_EQ(mkdir(dir, 0755), 0);
    fclose(fopen(f1, "w"));
    fclose(fopen(f2, "w"));
    const int sd = edgellm_tmp_register(dir, true), s1 = edgellm_tmp_register(f1, false);
    CHECK(sd >= 0 && s1 >= 0 && sd != s1);
    edgellm_remove_temp_files();
    CHECK(access(f1, F_OK) != 0 && access(dir, F_OK) != 0 && access(f2, F_OK) == 0);
    edgellm_tmp_unregister(s1);
    edgellm_tmp_unregister(sd);
    CHECK_EQ(mkdir(dir, 0755), 0);
    fclose(fopen(f1, "w"));
    edgellm_remove_temp_files();            /* unregistered: stays */
    CHECK(access(f1, F_OK) == 0);
    char longp[5000];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    CHECK_EQ(edgellm_tmp_register(longp, false), -1);
    CHECK_EQ(edgellm_tmp_register("", false), -1);
    int slots[64], n = 0;
    while (n < 64 && (slots[n] = edgellm_tmp_register(f2, false)) >= 0) n++;
    CHECK(n >= 8 && n < 64);                /* a fixed table, then -1 */
    for (int i = 0; i < n; i++) edgellm_tmp_unregister(slots[i]);
    edgellm_remove_temp_files();
    CHECK(access(f2, F_OK) == 0);

    char path[700], tmp[800];
    snprintf(path, sizeof path, "%s/sig.gguf", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    const int64_t ne[1] = {16};
    bool existed = false;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    CHECK(edgellm_gguf_writer_add_tensor_stream(w, "t", EDGELLM_TYPE_F32, 1, ne, produce_then_signal, tmp,
                                                (uint64_t)(uintptr_t)&existed));
    edgellm_error err = {0};
    CHECK_EQ(edgellm_gguf_writer_write(w, path, &err), EDGELLM_ERR_IO);
    edgellm_gguf_writer_free(w);
    CHECK(existed);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK(access(tmp, F_OK) != 0 && access(path, F_OK) != 0);
    remove(f1);
    rmdir(dir);
}

static void test_gguf_write_disk_full_leaves_nothing(void)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/full", test_tmpdir());
    CHECK_EQ(mkdir(dir, 0755), 0);
    char path[700];
    snprintf(path, sizeof path, "%s/big.gguf", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        static float big[1 << 16];   /* 256 KiB of tensor data */
        const int64_t ne[1] = {1 << 16};
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {100000, 100000};
        setrlimit(RLIMIT_FSIZE, &rl);
        edgellm_gguf_writer *w = edgellm_gguf_writer_new();
        edgellm_gguf_writer_add_tensor(w, "big", EDGELLM_TYPE_F32, 1, ne, big);
        edgellm_error err = {0};
        edgellm_status rc = edgellm_gguf_writer_write(w, path, &err);
        edgellm_gguf_writer_free(w);
        if (rc != EDGELLM_ERR_IO || !strstr(err.msg, path)) {
            fprintf(stderr, "   disk full: rc %d, message '%s'\n", rc, err.msg);
            _exit(1);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(count_files(dir, "big.gguf"), 0);
}

/* An existing file is replaced only when the new one is complete. */
static void test_gguf_write_replaces_atomically(void)
{
    const char *path = tmp_path("replace.gguf");
    CHECK_EQ(write_file(path, "old", 3), 0);
    edgellm_gguf_writer *w = small_writer();
    CHECK_OK(edgellm_gguf_writer_write(w, path, NULL));
    edgellm_gguf_writer_free(w);
    size_t n = 0;
    void *p = read_file(path, &n);
    CHECK(p && n > 32 && !memcmp(p, "GGUF", 4));
    free(p);
    CHECK_EQ(count_files(test_tmpdir(), "replace.gguf"), 1);
}

/* Every allocation failure is reported as a false setter / NOMEM and leaks nothing. */
static void test_gguf_write_oom_sweep(void)
{
    long base = edgellm_test_live_allocs();
    const char *strs[] = {"a", "bb", "ccc"};
    const float data[32] = {0};
    const int64_t ne[1] = {32};
    const char *path = tmp_path("oom.gguf");
    int n;
    for (n = 1; n < 1000; n++) {
        edgellm_test_alloc_fail_at(n);
        edgellm_gguf_writer *w = edgellm_gguf_writer_new();
        bool ok = w != NULL;
        for (int k = 0; ok && k < 20; k++) {
            char key[32];
            snprintf(key, sizeof key, "k.%d", k);
            ok = edgellm_gguf_writer_set_u32(w, key, (uint32_t)k);
        }
        ok = ok && edgellm_gguf_writer_set_str(w, "k.0", "replaced") && edgellm_gguf_writer_set_arr_str(w, "s", strs, NULL, 3) &&
             edgellm_gguf_writer_set_arr(w, "f", EDGELLM_GGUF_FLOAT32, data, 32);
        for (int k = 0; ok && k < 20; k++) {
            char name[32];
            snprintf(name, sizeof name, "t.%d", k);
            ok = edgellm_gguf_writer_add_tensor(w, name, EDGELLM_TYPE_F32, 1, ne, data);
        }
        edgellm_status rc = ok ? edgellm_gguf_writer_write(w, path, NULL) : EDGELLM_ERR_NOMEM;
        edgellm_test_alloc_fail_at(0);
        edgellm_gguf_writer_free(w);
        CHECK_EQ(edgellm_test_live_allocs(), base);
        if (rc == EDGELLM_OK) break;
    }
    CHECK(n > 5 && n < 1000);
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(path, &g, NULL));
    CHECK_EQ(edgellm_gguf_n_tensors(g), 20);
    edgellm_gguf_close(g);
}

/* edgellm_out_open / _commit / _discard (src/common/tmpfiles.c), the one path every output
 * file takes: committed = the whole content under the name and no temporary; discarded =
 * the old content untouched; a symbolic link keeps being a link to the replaced file; a
 * path that is a pipe (and so a device such as /dev/null) is written in place, never
 * replaced by a regular file (the FIFO stands in for /dev/null: a regression then breaks
 * only a test file); a directory is refused up front; a temporary removed by a signal's
 * handler makes the commit fail with the target untouched. */
static void test_out_file_whole_or_nothing(void)
{
    char dir[600], path[700], lnk[700], fifo[700], buf[64];
    snprintf(dir, sizeof dir, "%s/outfile", test_tmpdir());
    CHECK_EQ(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/a.txt", dir);
    edgellm_out_file o;
    edgellm_error err = {0};
    CHECK_OK(edgellm_out_open(&o, path, "w", &err));
    fputs("new", o.f);
    CHECK(access(path, F_OK) != 0 && access(o.tmp, F_OK) == 0 && strstr(o.tmp, ".tmp.") != NULL);
    CHECK_OK(edgellm_out_commit(&o, &err));
    size_t n = 0;
    char *got = read_file(path, &n);
    CHECK(got && n == 3 && !memcmp(got, "new", 3));
    free(got);
    CHECK_EQ(count_files(dir, "a.txt.tmp"), 0);
    edgellm_out_discard(&o);                         /* after a commit: harmless */
    CHECK(access(path, F_OK) == 0);

    CHECK_OK(edgellm_out_open(&o, path, "w", &err));  /* discarded: the old content stays */
    fputs("half", o.f);
    edgellm_out_discard(&o);
    got = read_file(path, &n);
    CHECK(got && n == 3 && !memcmp(got, "new", 3));
    free(got);
    CHECK_EQ(count_files(dir, "a.txt.tmp"), 0);

    snprintf(lnk, sizeof lnk, "%s/link.txt", dir);  /* through a link: the file is replaced */
    CHECK_EQ(symlink("a.txt", lnk), 0);
    CHECK_OK(edgellm_out_open(&o, lnk, "w", &err));
    fputs("linked", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    struct stat st;
    CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
    got = read_file(path, &n);
    CHECK(got && n == 6 && !memcmp(got, "linked", 6));
    free(got);
    CHECK_EQ(count_files(dir, "link.txt"), 1);

    snprintf(fifo, sizeof fifo, "%s/pipe", dir);      /* not a regular file: in place */
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    const int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK_OK(edgellm_out_open(&o, fifo, "w", &err));
    CHECK(o.in_place && o.tmp[0] == 0);
    fputs("piped", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    CHECK_EQ(read(rd, buf, sizeof buf), 5);
    close(rd);
    CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_EQ(count_files(dir, "pipe"), 1);

    CHECK_EQ(edgellm_out_open(&o, dir, "w", &err), EDGELLM_ERR_IO);   /* a directory */
    CHECK(strstr(err.msg, "is a directory") != NULL && o.f == NULL);
    CHECK_EQ(count_files(test_tmpdir(), "outfile.tmp"), 0);

    /* a dangling link: the file it names is created, the link kept; a loop is refused */
    char dang[700], loop1[700], loop2[700], made[700];
    snprintf(dang, sizeof dang, "%s/dangling", dir);
    snprintf(made, sizeof made, "%s/made.txt", dir);
    CHECK_EQ(symlink("made.txt", dang), 0);
    CHECK_OK(edgellm_out_open(&o, dang, "w", &err));
    fputs("made", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    CHECK(lstat(dang, &st) == 0 && S_ISLNK(st.st_mode));
    got = read_file(made, &n);
    CHECK(got && n == 4 && !memcmp(got, "made", 4));
    free(got);
    snprintf(loop1, sizeof loop1, "%s/loop1", dir);
    snprintf(loop2, sizeof loop2, "%s/loop2", dir);
    CHECK_EQ(symlink("loop2", loop1), 0);
    CHECK_EQ(symlink("loop1", loop2), 0);
    CHECK_EQ(edgellm_out_open(&o, loop1, "w", &err), EDGELLM_ERR_IO);
    CHECK(lstat(loop1, &st) == 0 && S_ISLNK(st.st_mode) && o.f == NULL);

    /* a link planted at the temporary's name is not written through (O_EXCL | O_NOFOLLOW):
     * another name is taken; the replaced file's permissions carry over */
    char planted[800], precious[700];
    snprintf(precious, sizeof precious, "%s/precious", dir);
    snprintf(planted, sizeof planted, "%s.tmp.%ld", path, (long)getpid());
    CHECK_EQ(write_file(precious, "keep", 4), 0);
    CHECK_EQ(symlink(precious, planted), 0);
    CHECK_EQ(chmod(path, 0600), 0);
    CHECK_OK(edgellm_out_open(&o, path, "w", &err));
    CHECK(strcmp(o.tmp, planted) != 0);
    fputs("linked", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    got = read_file(precious, &n);
    CHECK(got && n == 4 && !memcmp(got, "keep", 4));
    free(got);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
    CHECK_EQ(unlink(planted), 0);

    /* a descriptor's file (/dev/fd/N -> /proc/self/fd/N): written in place, not replaced */
    char byfd[64], held[700];
    snprintf(held, sizeof held, "%s/held.txt", dir);
    const int hfd = open(held, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(hfd >= 0);
    struct stat before;
    CHECK_EQ(fstat(hfd, &before), 0);
    snprintf(byfd, sizeof byfd, "/dev/fd/%d", hfd);
    CHECK_OK(edgellm_out_open(&o, byfd, "w", &err));
    CHECK(o.in_place);
    fputs("viafd", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    CHECK(stat(held, &st) == 0 && st.st_ino == before.st_ino && st.st_size == 5);
    close(hfd);

    fflush(stdout);                                  /* "-": standard output, in place */
    const int saved = dup(STDOUT_FILENO), sfd = open(held, O_WRONLY | O_TRUNC);
    CHECK(saved >= 0 && sfd >= 0 && dup2(sfd, STDOUT_FILENO) >= 0);
    CHECK_OK(edgellm_out_open(&o, "-", "w", &err));
    CHECK(o.in_place);
    fputs("dash", o.f);
    CHECK_OK(edgellm_out_commit(&o, &err));
    CHECK(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    close(sfd);
    CHECK(stat(held, &st) == 0 && st.st_size == 4 && access("-", F_OK) != 0);

    /* edgellm_out_check answers as edgellm_out_open would, creating nothing: the folder that
     * counts is the link target's (a dangling link into a missing folder cannot be written,
     * though the link's own folder can) */
    char far[700];
    snprintf(far, sizeof far, "%s/far", dir);
    CHECK_EQ(symlink("no-such-dir/x.csv", far), 0);
    CHECK_EQ(edgellm_out_check(far), ENOENT);
    CHECK_EQ(edgellm_out_check(dir), EISDIR);
    CHECK_EQ(edgellm_out_check(loop1), ELOOP);
    CHECK_EQ(edgellm_out_check(""), EINVAL);
    CHECK_EQ(edgellm_out_check(path), 0);
    CHECK_EQ(edgellm_out_check(dang), 0);
    CHECK_EQ(edgellm_out_check(fifo), 0);
    CHECK_EQ(edgellm_out_check("-"), 0);
    CHECK_EQ(edgellm_out_check(tmp_path("new/x.gguf")), ENOENT);
    CHECK_EQ(count_files(dir, "far.tmp"), 0);
    CHECK_EQ(unlink(far), 0);

    /* "output is the input": the same name, a link or a hard link to a file; never a device */
    char hard[700];
    snprintf(hard, sizeof hard, "%s/hard.txt", dir);
    CHECK_EQ(link(path, hard), 0);
    CHECK(edgellm_same_file(path, path) && edgellm_same_file(lnk, path) && edgellm_same_file(hard, path));
    CHECK(!edgellm_same_file(path, precious) && !edgellm_same_file("/dev/null", "/dev/null"));
    CHECK(edgellm_same_file(tmp_path("not-yet.gguf"), tmp_path("not-yet.gguf")));   /* both would be written */
    CHECK_EQ(unlink(hard), 0);

    CHECK_OK(edgellm_out_open(&o, path, "w", &err));  /* a signal's handler took the temporary */
    fputs("lost", o.f);
    edgellm_remove_temp_files();
    CHECK_EQ(edgellm_out_commit(&o, &err), EDGELLM_ERR_IO);
    CHECK(strstr(err.msg, path) != NULL);
    got = read_file(path, &n);
    CHECK(got && n == 6 && !memcmp(got, "linked", 6));
    free(got);
    CHECK_EQ(count_files(dir, "a.txt.tmp"), 0);
}

int main(void)
{
    RUN(test_gguf_write_tiny_file_bytes);
    RUN(test_gguf_write_roundtrip_metadata);
    RUN(test_gguf_write_roundtrip_tensors_aligned);
    RUN(test_gguf_write_copy_kv_roundtrip);
    RUN(test_gguf_write_copy_kv_exact);
    RUN(test_gguf_write_cli_info_reports);
    RUN(test_gguf_write_rejects_bad_tensors);
    RUN(test_gguf_write_unwritable_paths);
    RUN(test_gguf_write_disk_full_leaves_nothing);
    RUN(test_gguf_write_temp_registry);
    RUN(test_gguf_write_replaces_atomically);
    RUN(test_gguf_write_oom_sweep);
    RUN(test_out_file_whole_or_nothing);
    return test_summary();
}
