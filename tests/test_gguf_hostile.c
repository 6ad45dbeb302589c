/*
 * test_gguf_hostile.c — the GGUF reader against files built to lie (SQLite's "malformed
 * database files" idea, https://www.sqlite.org/testing.html; layout: ggml-org/ggml
 * docs/gguf.md).
 *
 * Each case below builds a small GGUF file in memory that breaks exactly one rule (a bad
 * magic, a count of 2^62, a string running past the end, a dimension product that
 * overflows, a tensor offset that wraps around 2^64, ...). Every case is fed to
 *   - edgellm_gguf_open_memory, in a forked child under RLIMIT_AS = 1 GiB and a 20 s alarm:
 *     it must return EDGELLM_ERR_FORMAT, leave *out NULL, name the file in the message,
 *     leak nothing, take < 2 s, and not die by a signal. The address-space limit catches
 *     allocations sized by an unchecked count (overcommit would otherwise hide them);
 *   - edgellm_gguf_open on the same bytes written to a file (the mmap path);
 *   - `edgellm info FILE`: exit status 1 and exactly one line "edgellm info: FILE: ...";
 *   - `edgellm run -m FILE -p hi -n 1` for a few of them, once `run` is implemented.
 * Two positive controls (the unmodified base file and a valid general.alignment = 64)
 * must open, so the builder itself is known to produce good files.
 *
 * Then stories260K.gguf is cut short at every byte of its header + metadata + tensor-info
 * region and at a sample of points inside the tensor data; every prefix must be refused.
 */
#include "test_util.h"
#include "format/gguf.h"
#include <time.h>

/* ------------------------------------------------------------ byte builder ---- */

typedef struct { uint8_t *p; size_t n, cap; } buf;

static void b_bytes(buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) { perror("realloc"); exit(1); }
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u8(buf *b, uint8_t v) { b_bytes(b, &v, 1); }
static void b_u32(buf *b, uint32_t v) { uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)}; b_bytes(b, x, 4); }
static void b_u64(buf *b, uint64_t v) { b_u32(b, (uint32_t)v); b_u32(b, (uint32_t)(v >> 32)); }
static void b_str(buf *b, const char *s) { b_u64(b, strlen(s)); b_bytes(b, s, strlen(s)); }
static void b_zeros(buf *b, size_t n) { while (n--) b_u8(b, 0); }
static void b_free(buf *b) { free(b->p); memset(b, 0, sizeof *b); }
static void b_set_u32(buf *b, size_t at, uint32_t v) { buf t = {b->p + at, 0, 4}; b_u32(&t, v); }
static void b_set_u64(buf *b, size_t at, uint64_t v) { buf t = {b->p + at, 0, 8}; b_u64(&t, v); }

/* kv helpers: key, type, value */
static void kv_str(buf *b, const char *k, const char *v) { b_str(b, k); b_u32(b, EDGELLM_GGUF_STRING); b_str(b, v); }
static void kv_u32(buf *b, const char *k, uint32_t v) { b_str(b, k); b_u32(b, EDGELLM_GGUF_UINT32); b_u32(b, v); }

typedef struct {
    const char *name;
    uint32_t    n_dims;
    int64_t     ne[6];      /* written: min(n_dims, 6) of them */
    uint32_t    type;
    uint64_t    offset;
} tinfo;

/* A whole file: header, the kv bytes as given, tensor infos, zero padding to `align` (32
 * when align is not a sane power of two: the padding of a hostile file is irrelevant),
 * then data_size bytes of a pattern. */
static void build(buf *b, uint32_t version, const buf *kvs, uint64_t n_kv, const tinfo *t, uint64_t n_t,
                  uint64_t align, uint64_t data_size)
{
    memset(b, 0, sizeof *b);
    b_u32(b, EDGELLM_GGUF_MAGIC);
    b_u32(b, version);
    b_u64(b, n_t);
    b_u64(b, n_kv);
    if (kvs && kvs->n) b_bytes(b, kvs->p, kvs->n);
    for (uint64_t i = 0; i < n_t; i++) {
        b_str(b, t[i].name);
        b_u32(b, t[i].n_dims);
        for (uint32_t d = 0; d < t[i].n_dims && d < 6; d++) b_u64(b, (uint64_t)t[i].ne[d]);
        b_u32(b, t[i].type);
        b_u64(b, t[i].offset);
    }
    if (align == 0 || align > 4096 || (align & (align - 1))) align = 32;
    b_zeros(b, (size_t)((align - b->n % align) % align));
    for (uint64_t i = 0; i < data_size; i++) b_u8(b, (uint8_t)(i * 7 + 1));
}

/* The base file: general.architecture = "llama" and two F32 tensors
 * alpha.weight ne={8} at 0 (32 bytes) and beta.weight ne={8,2} at 32 (64 bytes): 96 bytes of data. */
static const tinfo BASE_T[2] = {
    {"alpha.weight", 1, {8}, 0, 0},
    {"beta.weight", 2, {8, 2}, 0, 32},
};

static void base_kvs(buf *kvs) { memset(kvs, 0, sizeof *kvs); kv_str(kvs, "general.architecture", "llama"); }

/* base file with these tensor infos (n_t of them) and data_size bytes of data */
static void with_tensors(buf *b, const tinfo *t, uint64_t n_t, uint64_t data_size)
{
    buf kvs;
    base_kvs(&kvs);
    build(b, 3, &kvs, 1, t, n_t, 32, data_size);
    b_free(&kvs);
}
static void one_tensor(buf *b, tinfo t, uint64_t data_size) { with_tensors(b, &t, 1, data_size); }
/* base tensors plus one extra kv whose bytes the caller appends into kvs after the base */
static void with_extra_kv(buf *b, const buf *extra, uint64_t n_extra, uint64_t align)
{
    buf kvs;
    base_kvs(&kvs);
    b_bytes(&kvs, extra->p, extra->n);
    build(b, 3, &kvs, 1 + n_extra, BASE_T, 2, align, 96);
    b_free(&kvs);
}

/* ------------------------------------------------------------ the cases ---- */

static void mk_base(buf *b) { with_tensors(b, BASE_T, 2, 96); }
static void mk_align64(buf *b)
{
    buf e = {0};
    kv_u32(&e, "general.alignment", 64);
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 64;
    buf kvs;
    base_kvs(&kvs);
    b_bytes(&kvs, e.p, e.n);
    build(b, 3, &kvs, 2, t, 2, 64, 128);
    b_free(&kvs);
    b_free(&e);
}

static void mk_empty(buf *b) { memset(b, 0, sizeof *b); b_u8(b, 'G'); b->n = 0; }
static void mk_3_bytes(buf *b) { memset(b, 0, sizeof *b); b_bytes(b, "GGU", 3); }
static void mk_bad_magic(buf *b) { mk_base(b); b->p[3] = 'X'; }
static void mk_ggml_magic(buf *b) { mk_base(b); memcpy(b->p, "ggjt", 4); }
static void mk_version0(buf *b) { mk_base(b); b_set_u32(b, 4, 0); }
static void mk_version1(buf *b) { mk_base(b); b_set_u32(b, 4, 1); }
static void mk_version4(buf *b) { mk_base(b); b_set_u32(b, 4, 4); }
static void mk_version_max(buf *b) { mk_base(b); b_set_u32(b, 4, 0xFFFFFFFFu); }
static void mk_version_swapped(buf *b) { mk_base(b); b_set_u32(b, 4, 0x03000000u); }
static void mk_tensor_count_2p62(buf *b) { mk_base(b); b_set_u64(b, 8, 1ull << 62); }
static void mk_tensor_count_2p28(buf *b) { mk_base(b); b_set_u64(b, 8, 1ull << 28); }
static void mk_tensor_count_max(buf *b) { mk_base(b); b_set_u64(b, 8, UINT64_MAX); }
static void mk_kv_count_2p62(buf *b) { mk_base(b); b_set_u64(b, 16, 1ull << 62); }
static void mk_kv_count_2p28(buf *b) { mk_base(b); b_set_u64(b, 16, 1ull << 28); }
static void mk_kv_count_plus1(buf *b) { mk_base(b); b_set_u64(b, 16, 2); }   /* reads tensor infos as a kv */

static void mk_key_len_past_eof(buf *b) { mk_base(b); b_set_u64(b, 24, b->n); }
static void mk_key_len_2p63(buf *b) { mk_base(b); b_set_u64(b, 24, 1ull << 63); }
static void mk_key_len_max(buf *b) { mk_base(b); b_set_u64(b, 24, UINT64_MAX); }
static void mk_value_len_past_eof(buf *b)
{
    mk_base(b);
    b_set_u64(b, 24 + 8 + 20 + 4, b->n);   /* the "llama" string's length */
}
static void mk_value_len_2p63(buf *b) { mk_base(b); b_set_u64(b, 24 + 8 + 20 + 4, 1ull << 63); }
static void mk_value_len_wrap(buf *b) { mk_base(b); b_set_u64(b, 24 + 8 + 20 + 4, UINT64_MAX - 30); }
static void mk_tensor_name_len_huge(buf *b)
{
    mk_base(b);
    b_set_u64(b, 24 + 8 + 20 + 4 + 8 + 5, 1ull << 62);   /* first tensor name */
}

static void arr_case(buf *b, uint32_t et, uint64_t count, size_t payload)
{
    buf e = {0};
    b_str(&e, "x.arr");
    b_u32(&e, EDGELLM_GGUF_ARRAY);
    b_u32(&e, et);
    b_u64(&e, count);
    b_zeros(&e, payload);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_arr_u8_2p62(buf *b) { arr_case(b, EDGELLM_GGUF_UINT8, 1ull << 62, 16); }
static void mk_arr_u32_2p62_wraps(buf *b) { arr_case(b, EDGELLM_GGUF_UINT32, 1ull << 62, 16); }   /* 2^62*4 = 2^64 */
static void mk_arr_u64_2p61_wraps(buf *b) { arr_case(b, EDGELLM_GGUF_UINT64, 1ull << 61, 16); }   /* 2^61*8 = 2^64 */
static void mk_arr_str_2p62(buf *b) { arr_case(b, EDGELLM_GGUF_STRING, 1ull << 62, 16); }
static void mk_arr_str_2p28(buf *b) { arr_case(b, EDGELLM_GGUF_STRING, 1ull << 28, 64); }
static void mk_arr_arr_2p28(buf *b) { arr_case(b, EDGELLM_GGUF_ARRAY, 1ull << 28, 64); }
static void mk_arr_unknown_elem(buf *b) { arr_case(b, 13, 1, 16); }
static void mk_arr_elem_max(buf *b) { arr_case(b, 0xFFFFFFFFu, 1, 16); }
static void mk_arr_bool_2(buf *b)
{
    buf e = {0};
    b_str(&e, "x.flags");
    b_u32(&e, EDGELLM_GGUF_ARRAY);
    b_u32(&e, EDGELLM_GGUF_BOOL);
    b_u64(&e, 3);
    b_u8(&e, 1);
    b_u8(&e, 2);
    b_u8(&e, 0);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void nested_case(buf *b, int depth)
{
    buf e = {0};
    b_str(&e, "x.nest");
    b_u32(&e, EDGELLM_GGUF_ARRAY);
    for (int i = 0; i < depth; i++) {   /* array of 1 array of 1 array ... */
        b_u32(&e, EDGELLM_GGUF_ARRAY);
        b_u64(&e, 1);
    }
    b_u32(&e, EDGELLM_GGUF_UINT8);
    b_u64(&e, 1);
    b_u8(&e, 7);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_nested_2000(buf *b) { nested_case(b, 2000); }
static void mk_nested_200000(buf *b) { nested_case(b, 200000); }

static void scalar_case(buf *b, uint32_t type, const void *v, size_t n)
{
    buf e = {0};
    b_str(&e, "x.val");
    b_u32(&e, type);
    b_bytes(&e, v, n);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_vtype_13(buf *b) { scalar_case(b, 13, "\0\0\0\0\0\0\0\0", 8); }
static void mk_vtype_max(buf *b) { scalar_case(b, 0xFFFFFFFFu, "\0\0\0\0\0\0\0\0", 8); }
static void mk_bool_2(buf *b) { scalar_case(b, EDGELLM_GGUF_BOOL, "\x02", 1); }
static void mk_bool_255(buf *b) { scalar_case(b, EDGELLM_GGUF_BOOL, "\xFF", 1); }

static void mk_n_dims_0(buf *b) { one_tensor(b, (tinfo){"a", 0, {0}, 0, 0}, 32); }
static void mk_n_dims_5(buf *b) { one_tensor(b, (tinfo){"a", 5, {1, 1, 1, 1, 1}, 0, 0}, 32); }
static void mk_n_dims_max(buf *b) { one_tensor(b, (tinfo){"a", 0xFFFFFFFFu, {1, 1, 1, 1, 1, 1}, 0, 0}, 32); }
static void mk_dims_overflow(buf *b)   /* product ~ 3.7e27 */
{
    one_tensor(b, (tinfo){"a", 3, {4194305, 4194305, 211106198978564LL}, 0, 0}, 32);
}
static void mk_dims_overflow_exact(buf *b)   /* 2^32 * 2^32 = 2^64: wraps to 0 elements */
{
    one_tensor(b, (tinfo){"a", 2, {1LL << 32, 1LL << 32}, 0, 0}, 32);
}
static void mk_bytes_overflow(buf *b)   /* 2^62 F32 elements: 2^64 bytes */
{
    one_tensor(b, (tinfo){"a", 1, {1LL << 62}, 0, 0}, 32);
}
static void mk_dims_huge_no_overflow(buf *b)   /* 2^40 elements: fits, but not in the file */
{
    one_tensor(b, (tinfo){"a", 2, {1LL << 20, 1LL << 20}, 0, 0}, 32);
}
static void mk_dim_negative(buf *b) { one_tensor(b, (tinfo){"a", 2, {8, -1}, 0, 0}, 32); }
static void mk_dim_neg_pair(buf *b) { one_tensor(b, (tinfo){"a", 2, {-8, -1}, 0, 0}, 32); }   /* product +8 */
static void mk_dim_int64_min(buf *b) { one_tensor(b, (tinfo){"a", 1, {INT64_MIN}, 0, 0}, 32); }
static void mk_type_4(buf *b) { one_tensor(b, (tinfo){"a", 1, {32}, 4, 0}, 128); }
static void mk_type_31(buf *b) { one_tensor(b, (tinfo){"a", 1, {32}, 31, 0}, 128); }
static void mk_type_999(buf *b) { one_tensor(b, (tinfo){"a", 1, {32}, 999, 0}, 128); }
static void mk_type_max(buf *b) { one_tensor(b, (tinfo){"a", 1, {32}, 0xFFFFFFFFu, 0}, 128); }
static void mk_q4_0_ne0_33(buf *b) { one_tensor(b, (tinfo){"a", 2, {33, 2}, 2, 0}, 64); }
static void mk_q4_k_ne0_32(buf *b) { one_tensor(b, (tinfo){"a", 1, {32}, 12, 0}, 160); }

static void align_case(buf *b, uint32_t type, const void *v, size_t n)
{
    buf e = {0};
    b_str(&e, "general.alignment");
    b_u32(&e, type);
    b_bytes(&e, v, n);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_align_0(buf *b) { align_case(b, EDGELLM_GGUF_UINT32, "\0\0\0\0", 4); }
static void mk_align_3(buf *b) { align_case(b, EDGELLM_GGUF_UINT32, "\3\0\0\0", 4); }
static void mk_align_48(buf *b) { align_case(b, EDGELLM_GGUF_UINT32, "\x30\0\0\0", 4); }   /* not a power of 2 */
static void mk_align_2p31(buf *b) { align_case(b, EDGELLM_GGUF_UINT32, "\0\0\0\x80", 4); }
static void mk_align_u64(buf *b) { align_case(b, EDGELLM_GGUF_UINT64, "\x20\0\0\0\0\0\0\0", 8); }
static void mk_align_str(buf *b) { align_case(b, EDGELLM_GGUF_STRING, "\2\0\0\0\0\0\0\0" "32", 10); }

static void mk_offset_misaligned(buf *b)
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 36;
    with_tensors(b, t, 2, 100);
}
static void mk_offset_past_end(buf *b)
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 4096;
    with_tensors(b, t, 2, 96);
}
static void mk_offset_end_straddles(buf *b)   /* starts inside, ends 32 bytes past the end */
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 64;
    with_tensors(b, t, 2, 96);
}
static void mk_offset_wraps(buf *b)   /* offset + 64 wraps to 32 */
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = UINT64_MAX - 31;
    with_tensors(b, t, 2, 96);
}
static void mk_offset_2p63(buf *b)
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 1ull << 63;
    with_tensors(b, t, 2, 96);
}
static void mk_overlap_same(buf *b)
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].offset = 0;
    with_tensors(b, t, 2, 96);
}
static void mk_overlap_partial(buf *b)   /* c ne={16} at 0 covers 0..64; beta at 32 */
{
    tinfo t[2] = {{"c", 1, {16}, 0, 0}, BASE_T[1]};
    with_tensors(b, t, 2, 96);
}
static void mk_overlap_reordered(buf *b)   /* listed in reverse order of their offsets */
{
    tinfo t[3] = {{"late", 1, {8}, 0, 64}, {"big", 1, {24}, 0, 0}, {"early", 1, {8}, 0, 32}};
    with_tensors(b, t, 3, 96);
}
static void mk_dup_tensor(buf *b)
{
    tinfo t[2] = {BASE_T[0], BASE_T[1]};
    t[1].name = "alpha.weight";
    with_tensors(b, t, 2, 96);
}
static void mk_dup_kv(buf *b)
{
    buf e = {0};
    kv_str(&e, "general.architecture", "qwen2");
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_empty_key(buf *b)   /* the second key (index 1) is "" */
{
    buf e = {0};
    kv_u32(&e, "", 7);
    with_extra_kv(b, &e, 1, 32);
    b_free(&e);
}
static void mk_data_short(buf *b) { mk_base(b); b->n -= 1; }
static void mk_data_missing(buf *b) { mk_base(b); b->n -= 96; }

typedef struct {
    const char *name;           /* also the file name: hostile/<name>.gguf      */
    void (*make)(buf *);
    const char *expect;         /* substring the message must contain, or NULL   */
    const char *expect_alt;     /* ... or this one                              */
} hostile_case;

static const hostile_case CASES[] = {
    {"empty", mk_empty, NULL, NULL},
    {"three_bytes", mk_3_bytes, NULL, NULL},
    {"bad_magic", mk_bad_magic, "magic", NULL},
    {"ggml_magic", mk_ggml_magic, "magic", NULL},
    {"version0", mk_version0, NULL, NULL},
    {"version1", mk_version1, "GGUFv1", "version 1"},
    {"version4", mk_version4, "4", NULL},
    {"version_max", mk_version_max, NULL, NULL},
    {"version_byteswapped", mk_version_swapped, NULL, NULL},
    {"tensor_count_2p62", mk_tensor_count_2p62, NULL, NULL},
    {"tensor_count_2p28", mk_tensor_count_2p28, NULL, NULL},
    {"tensor_count_max", mk_tensor_count_max, NULL, NULL},
    {"kv_count_2p62", mk_kv_count_2p62, NULL, NULL},
    {"kv_count_2p28", mk_kv_count_2p28, NULL, NULL},
    {"kv_count_plus1", mk_kv_count_plus1, NULL, NULL},
    {"key_len_past_eof", mk_key_len_past_eof, NULL, NULL},
    {"key_len_2p63", mk_key_len_2p63, NULL, NULL},
    {"key_len_max", mk_key_len_max, NULL, NULL},
    {"value_len_past_eof", mk_value_len_past_eof, NULL, NULL},
    {"value_len_2p63", mk_value_len_2p63, NULL, NULL},
    {"value_len_wrap", mk_value_len_wrap, NULL, NULL},
    {"tensor_name_len_2p62", mk_tensor_name_len_huge, NULL, NULL},
    {"arr_u8_count_2p62", mk_arr_u8_2p62, NULL, NULL},
    {"arr_u32_count_2p62_wraps", mk_arr_u32_2p62_wraps, NULL, NULL},
    {"arr_u64_count_2p61_wraps", mk_arr_u64_2p61_wraps, NULL, NULL},
    {"arr_str_count_2p62", mk_arr_str_2p62, NULL, NULL},
    {"arr_str_count_2p28", mk_arr_str_2p28, NULL, NULL},
    {"arr_arr_count_2p28", mk_arr_arr_2p28, NULL, NULL},
    {"arr_elem_type_13", mk_arr_unknown_elem, NULL, NULL},
    {"arr_elem_type_max", mk_arr_elem_max, NULL, NULL},
    {"arr_bool_2", mk_arr_bool_2, NULL, NULL},
    {"nested_2000", mk_nested_2000, NULL, NULL},
    {"nested_200000", mk_nested_200000, NULL, NULL},
    {"value_type_13", mk_vtype_13, NULL, NULL},
    {"value_type_max", mk_vtype_max, NULL, NULL},
    {"bool_2", mk_bool_2, NULL, NULL},
    {"bool_255", mk_bool_255, NULL, NULL},
    {"n_dims_0", mk_n_dims_0, NULL, NULL},
    {"n_dims_5", mk_n_dims_5, NULL, NULL},
    {"n_dims_max", mk_n_dims_max, NULL, NULL},
    {"dims_product_overflow", mk_dims_overflow, NULL, NULL},
    {"dims_product_2p64", mk_dims_overflow_exact, NULL, NULL},
    {"bytes_overflow", mk_bytes_overflow, NULL, NULL},
    {"dims_2p40_elements", mk_dims_huge_no_overflow, NULL, NULL},
    {"dim_negative", mk_dim_negative, NULL, NULL},
    {"dims_two_negative", mk_dim_neg_pair, NULL, NULL},
    {"dim_int64_min", mk_dim_int64_min, NULL, NULL},
    {"tensor_type_4", mk_type_4, NULL, NULL},
    {"tensor_type_31", mk_type_31, NULL, NULL},
    {"tensor_type_999", mk_type_999, NULL, NULL},
    {"tensor_type_max", mk_type_max, NULL, NULL},
    {"q4_0_ne0_33", mk_q4_0_ne0_33, NULL, NULL},
    {"q4_k_ne0_32", mk_q4_k_ne0_32, NULL, NULL},
    {"alignment_0", mk_align_0, "alignment", NULL},
    {"alignment_3", mk_align_3, "alignment", NULL},
    {"alignment_48", mk_align_48, "alignment", NULL},
    {"alignment_2p31", mk_align_2p31, NULL, NULL},
    {"alignment_u64", mk_align_u64, "alignment", NULL},
    {"alignment_string", mk_align_str, "alignment", NULL},
    {"offset_misaligned", mk_offset_misaligned, "beta.weight", NULL},
    {"offset_past_end", mk_offset_past_end, "beta.weight", NULL},
    {"offset_straddles_end", mk_offset_end_straddles, "beta.weight", NULL},
    {"offset_wraps", mk_offset_wraps, "beta.weight", NULL},
    {"offset_2p63", mk_offset_2p63, "beta.weight", NULL},
    {"overlap_same_offset", mk_overlap_same, NULL, NULL},
    {"overlap_partial", mk_overlap_partial, NULL, NULL},
    {"overlap_reordered", mk_overlap_reordered, NULL, NULL},
    {"duplicate_tensor", mk_dup_tensor, "alpha.weight", NULL},
    {"duplicate_kv", mk_dup_kv, "general.architecture", NULL},
    {"empty_key", mk_empty_key, "metadata key 1 is empty", NULL},
    {"data_short_1_byte", mk_data_short, "beta.weight", NULL},
    {"data_missing", mk_data_missing, NULL, NULL},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* ------------------------------------------------------------ isolation ---- */

typedef struct {
    int    rc;           /* edgellm_status, or -1 */
    int    got_handle;   /* *out != NULL          */
    long   leaked;       /* live allocations left after the failed open */
    double ms;
    char   msg[512];
} open_result;

/* The child's side of open_isolated. */
typedef struct { const uint8_t *data; size_t size; const char *name; } open_job;

static void open_child(void *arg, void *out)
{
    const open_job *j = arg;
    open_result *res = out;
    void *copy = malloc(j->size ? j->size : 1);
    if (j->size) memcpy(copy, j->data, j->size);
    long before = edgellm_test_live_allocs();
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    double t0 = edgellm_time_ms();
    res->rc = edgellm_gguf_open_memory(copy, j->size, j->name, &g, &err);
    res->ms = edgellm_time_ms() - t0;
    res->got_handle = g != NULL;
    edgellm_gguf_close(g);
    res->leaked = edgellm_test_live_allocs() - before;
    memcpy(res->msg, err.msg, sizeof res->msg);
    free(copy);
}

/* edgellm_gguf_open_memory over a private copy of exactly `size` bytes (so that an
 * over-read is an over-read for ASan/valgrind), in a forked child with a 1 GiB address
 * space and a 20 s alarm (test_run_isolated). Returns false when the child died (r->msg
 * says how). */
static bool open_isolated(const uint8_t *data, size_t size, const char *name, open_result *r)
{
    open_job j = {data, size, name};
    if (test_run_isolated(open_child, &j, r, sizeof *r, 20, r->msg, sizeof r->msg)) return true;
    r->rc = -1;
    return false;
}

static bool contains_ci(const char *hay, const char *needle) { return needle && strcasestr(hay, needle) != NULL; }

/* The checks every rejected input must pass. Returns true when all did. */
static bool check_rejected(const open_result *r, const char *name, const char *expect, const char *expect_alt)
{
    int f0 = test_failures;
    CHECK_EQ(r->rc, EDGELLM_ERR_FORMAT);
    CHECK(!r->got_handle);
    CHECK_EQ(r->leaked, 0);
    CHECK(r->ms < 2000);
    CHECK(strstr(r->msg, name) != NULL);
    if (expect) CHECK(contains_ci(r->msg, expect) || contains_ci(r->msg, expect_alt));
    if (test_failures != f0)
        fprintf(stderr, "   %s: rc %s, %.1f ms, leaked %ld, message: %s\n", name,
                r->rc >= 0 ? edgellm_status_name((edgellm_status)r->rc) : "(died)", r->ms, r->leaked, r->msg);
    return test_failures == f0;
}

/* ------------------------------------------------------------ tests ---- */

static void test_hostile_controls_open(void)
{
    void (*makers[2])(buf *) = {mk_base, mk_align64};
    for (int k = 0; k < 2; k++) {
        buf b;
        makers[k](&b);
        open_result r;
        CHECK(open_isolated(b.p, b.n, "control.gguf", &r));
        CHECK_EQ(r.rc, EDGELLM_OK);
        CHECK_EQ(r.leaked, 0);
        if (r.rc != EDGELLM_OK) fprintf(stderr, "   control %d: %s\n", k, r.msg);
        edgellm_gguf *g = NULL;
        CHECK_OK(edgellm_gguf_open_memory(b.p, b.n, "control.gguf", &g, NULL));
        if (g) {
            const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(g, "beta.weight");
            CHECK(t && t->n_elements == 16 && t->size_bytes == 64);
            CHECK(t && (const uint8_t *)t->data == b.p + edgellm_gguf_data_offset(g) + (k ? 64 : 32));
            CHECK_EQ(edgellm_gguf_alignment(g), k ? 64 : 32);
        }
        edgellm_gguf_close(g);
        b_free(&b);
    }
}

static void test_hostile_memory_rejects_each(void)
{
    for (int i = 0; i < N_CASES; i++) {
        buf b;
        CASES[i].make(&b);
        char name[128];
        snprintf(name, sizeof name, "hostile/%s.gguf", CASES[i].name);
        open_result r;
        open_isolated(b.p, b.n, name, &r);
        check_rejected(&r, name, CASES[i].expect, CASES[i].expect_alt);
        if (getenv("EDGELLM_TEST_VERBOSE")) fprintf(stderr, "   %-26s %6zu B %7.3f ms  %s\n", CASES[i].name, b.n, r.ms, r.msg);
        b_free(&b);
    }
}

/* Writes each case to <tmp>/<name>.gguf; returns the path (static storage per call). */
static const char *write_case(int i)
{
    static char path[512];
    buf b;
    CASES[i].make(&b);
    snprintf(path, sizeof path, "%s/%s.gguf", test_tmpdir(), CASES[i].name);
    if (write_file(path, b.p, b.n) != 0) { perror(path); exit(1); }
    b_free(&b);
    return path;
}

static void test_hostile_file_open_rejects_each(void)
{
    for (int i = 0; i < N_CASES; i++) {
        const char *path = write_case(i);
        edgellm_gguf *g = NULL;
        edgellm_error err = {0};
        long before = edgellm_test_live_allocs();
        edgellm_status rc = edgellm_gguf_open(path, &g, &err);
        CHECK_EQ(rc, EDGELLM_ERR_FORMAT);
        CHECK(g == NULL);
        CHECK(strstr(err.msg, path) != NULL);
        CHECK_EQ(edgellm_test_live_allocs(), before);
        if (rc != EDGELLM_ERR_FORMAT || !strstr(err.msg, path))
            fprintf(stderr, "   %s: %s: %s\n", CASES[i].name, edgellm_status_name(rc), err.msg);
        edgellm_gguf_close(g);
    }
}

/* One line, "edgellm CMD: PATH: ...", exit 1, no signal. */
static void check_cli_line(const char *cmd, const char *path, int rc, const char *out)
{
    char prefix[700];
    snprintf(prefix, sizeof prefix, "edgellm %s: %s: ", cmd, path);
    int f0 = test_failures;
    CHECK_EQ(rc, 1);
    CHECK(!strncmp(out, prefix, strlen(prefix)));
    const char *nl = strchr(out, '\n');
    CHECK(nl != NULL && nl[1] == 0);   /* exactly one line */
    if (test_failures != f0) fprintf(stderr, "   %s %s: exit %d, output:\n%s\n", cmd, path, rc, out);
}

static void test_hostile_cli_info_rejects_each(void)
{
    for (int i = 0; i < N_CASES; i++) {
        const char *path = write_case(i);
        char cmd[1024], out[4096];
        snprintf(cmd, sizeof cmd, "'%s' info '%s'", EDGELLM_CLI, path);
        double t0 = edgellm_time_ms();
        int rc = run_capture(cmd, out, sizeof out);
        CHECK(edgellm_time_ms() - t0 < 5000);
        check_cli_line("info", path, rc, out);
    }
}

/* `edgellm run` on a few hostile files, once run is more than a stub. */
static void test_hostile_cli_run_rejects(void)
{
    char cmd[1024], out[4096];
    const char *path = write_case(0);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p hi -n 1", EDGELLM_CLI, path);
    run_capture(cmd, out, sizeof out);
    if (strstr(out, "not implemented")) {
        fprintf(stderr, "   SKIP: edgellm run is not implemented yet\n");
        test_skipped++;
        return;
    }
    static const char *names[] = {"bad_magic", "version1", "tensor_count_2p62", "arr_str_count_2p28",
                                  "nested_200000", "dims_product_overflow", "offset_wraps", "data_short_1_byte"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        int i = 0;
        while (i < N_CASES && strcmp(CASES[i].name, names[k])) i++;
        if (i == N_CASES) continue;
        path = write_case(i);
        snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p hi -n 1", EDGELLM_CLI, path);
        int rc = run_capture(cmd, out, sizeof out);
        CHECK_EQ(rc, 1);
        CHECK(strstr(out, path) != NULL);
        if (rc != 1) fprintf(stderr, "   run %s: exit %d: %s\n", names[k], rc, out);
    }
    /* a well-formed GGUF that is not a model (llama, but no hyperparameters, odd tensors) */
    char base_path[600];
    snprintf(base_path, sizeof base_path, "%s/not_a_model.gguf", test_tmpdir());
    buf b;
    mk_base(&b);
    CHECK_EQ(write_file(base_path, b.p, b.n), 0);
    b_free(&b);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p hi -n 1", EDGELLM_CLI, base_path);
    int rc = run_capture(cmd, out, sizeof out);
    CHECK_EQ(rc, 1);
    CHECK(strstr(out, base_path) != NULL);
    if (rc != 1) fprintf(stderr, "   run not_a_model: exit %d: %s\n", rc, out);
}

/* Offset where tensor data starts in a well-formed file (parsed here, independently). */
static size_t data_start(const uint8_t *p, size_t n)
{
    size_t at = 24;
    uint64_t n_t = edgellm_rd_u64(p + 8), n_kv = edgellm_rd_u64(p + 16);
    static const size_t fixed[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    for (uint64_t i = 0; i < n_kv; i++) {
        at += 8 + edgellm_rd_u64(p + at);
        uint32_t t = edgellm_rd_u32(p + at);
        at += 4;
        if (t == EDGELLM_GGUF_STRING) at += 8 + edgellm_rd_u64(p + at);
        else if (t == EDGELLM_GGUF_ARRAY) {
            uint32_t et = edgellm_rd_u32(p + at);
            uint64_t c = edgellm_rd_u64(p + at + 4);
            at += 12;
            if (et == EDGELLM_GGUF_STRING)
                for (uint64_t j = 0; j < c; j++) at += 8 + edgellm_rd_u64(p + at);
            else at += c * fixed[et];
        } else at += fixed[t];
    }
    for (uint64_t i = 0; i < n_t; i++) {
        at += 8 + edgellm_rd_u64(p + at);
        uint32_t nd = edgellm_rd_u32(p + at);
        at += 4 + 8 * nd + 4 + 8;
    }
    (void)n;
    return (at + 31) / 32 * 32;
}

/* Every prefix of the header/metadata region, and a sample inside the data, is refused. */
static void test_hostile_truncated_model_memory(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    size_t size = 0;
    uint8_t *p = read_file(model, &size);
    CHECK(p != NULL);
    if (!p) return;
    size_t data_at = data_start(p, size);
    CHECK_EQ(data_at, 14176);
    /* all prefixes up to the data start, one child for the whole sweep (forks are not free) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        test_child_limits(120);
        int bad = 0;
        long base = edgellm_test_live_allocs();
        double worst_ms = 0;
        for (size_t cut = 0; cut <= data_at; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, p, cut);
            edgellm_gguf *g = NULL;
            edgellm_error err = {0};
            double t0 = edgellm_time_ms();
            edgellm_status rc = edgellm_gguf_open_memory(copy, cut, "stories260K.gguf", &g, &err);
            double ms = edgellm_time_ms() - t0;
            worst_ms = ms > worst_ms ? ms : worst_ms;
            if (rc != EDGELLM_ERR_FORMAT || g || !strstr(err.msg, "stories260K.gguf") ||
                edgellm_test_live_allocs() != base) {
                if (bad++ < 10)
                    fprintf(stderr, "   cut at %zu: %s, handle %p, live %ld: %s\n", cut, edgellm_status_name(rc), (void *)g,
                            edgellm_test_live_allocs() - base, err.msg);
            }
            edgellm_gguf_close(g);
            free(copy);
        }
        fprintf(stderr, "   %zu header cuts, worst open %.2f ms, %d bad\n", data_at + 1, worst_ms, bad);
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (WIFSIGNALED(st)) fprintf(stderr, "   header sweep killed by signal %d\n", WTERMSIG(st));

    /* a sample inside the data: each names a tensor whose data is cut */
    size_t cuts[64];
    int n_cuts = 0;
    for (size_t c = data_at + 1; c < size && n_cuts < 56; c += (size - data_at) / 50 + 7) cuts[n_cuts++] = c;
    cuts[n_cuts++] = data_at + 131072 - 1;   /* end of token_embd.weight - 1 */
    cuts[n_cuts++] = data_at + 131072;       /* exactly after token_embd.weight */
    cuts[n_cuts++] = size - 1;
    cuts[n_cuts++] = size - 256;
    for (int k = 0; k < n_cuts; k++) {
        open_result r;
        open_isolated(p, cuts[k], "stories260K.gguf", &r);
        if (!check_rejected(&r, "stories260K.gguf", ".weight", NULL)) fprintf(stderr, "   (data cut at %zu)\n", cuts[k]);
    }
    /* the control: the whole file opens */
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open_memory(p, size, "stories260K.gguf", &g, NULL));
    CHECK_EQ(edgellm_gguf_data_offset(g), data_at);
    edgellm_gguf_close(g);
    free(p);
}

static void test_hostile_truncated_model_cli(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    size_t size = 0;
    uint8_t *p = read_file(model, &size);
    CHECK(p != NULL);
    if (!p) return;
    static const size_t cuts[] = {0, 1, 4, 8, 23, 24, 31, 100, 1000, 5000, 11346, 11347, 11400, 14151, 14152,
                                  14176, 14177, 500000, 1185375};
    char path[512], cmd[1024], out[4096];
    snprintf(path, sizeof path, "%s/stories260K_cut.gguf", test_tmpdir());
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        if (write_file(path, p, cuts[k]) != 0) { perror(path); break; }
        snprintf(cmd, sizeof cmd, "'%s' info '%s'", EDGELLM_CLI, path);
        int rc = run_capture(cmd, out, sizeof out);
        check_cli_line("info", path, rc, out);
    }
    free(p);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_hostile_controls_open);
    RUN(test_hostile_memory_rejects_each);
    RUN(test_hostile_file_open_rejects_each);
    RUN(test_hostile_cli_info_rejects_each);
    RUN(test_hostile_cli_run_rejects);
    RUN(test_hostile_truncated_model_memory);
    RUN(test_hostile_truncated_model_cli);
    return test_summary();
}
