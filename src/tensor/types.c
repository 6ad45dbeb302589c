/* types.c — the traits table (see types.h). Quantized types register their converters and
 * reference dot products here (implementations: quant_*.c, declared in quant.h);
 * kernels/dispatch.c picks faster variants at run time.
 *
 * Activation types, as llama.cpp pairs them: Q4_0, Q5_0, Q8_0 and the symmetric group
 * types dot with Q8_0; Q4_1, Q5_1 and the asymmetric group types with Q8_1 (their min term
 * needs per-block activation sums); the K-quants with Q8_K. Q8_1 and Q8_K are activation
 * formats only (convertible, not computable as weights). */
#include "types.h"
#include "quant.h"

/* ---- float types ---- */
static void f32_to_float(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
static void f32_from_float(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
static void f16_to_float(const void *src, float *dst, int64_t n)
{
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = edgellm_f16_to_f32(edgellm_rd_u16(s + 2 * i));
}
/* dst may be unaligned (a row inside a file or a scratch buffer): store through memcpy */
static void f16_from_float(const float *src, void *dst, int64_t n)
{
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) { uint16_t h = edgellm_f32_to_f16(src[i]); memcpy(d + 2 * i, &h, 2); }
}
static void bf16_to_float(const void *src, float *dst, int64_t n)
{
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = edgellm_bf16_to_f32(edgellm_rd_u16(s + 2 * i));
}
static void bf16_from_float(const float *src, void *dst, int64_t n)
{
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) { uint16_t b = edgellm_f32_to_bf16(src[i]); memcpy(d + 2 * i, &b, 2); }
}
/* Reference dots accumulate in double: they define "correct", they are not tuned. */
static float dot_f32_ref(int64_t n, const void *w, const void *x)
{
    const float *a = w, *b = x;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return (float)s;
}
static float dot_f16_ref(int64_t n, const void *w, const void *x)
{
    const uint8_t *a = w;
    const float *b = x;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)edgellm_f16_to_f32(edgellm_rd_u16(a + 2 * i)) * b[i];
    return (float)s;
}
static float dot_bf16_ref(int64_t n, const void *w, const void *x)
{
    const uint8_t *a = w;
    const float *b = x;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)edgellm_bf16_to_f32(edgellm_rd_u16(a + 2 * i)) * b[i];
    return (float)s;
}

/* What edgellm does with a type, the fields after its layout (type_layout.h): computable,
 * dequantizer, reference quantizer, activation type, reference dot product. */
#define C_FLOAT(TOF, FROMF, DOT) true, TOF, FROMF, EDGELLM_TYPE_F32, DOT
#define C_STORED false, NULL, NULL, EDGELLM_TYPE_Q8_0, NULL   /* quantized, not supported   */
#define C_PLAIN false, NULL, NULL, EDGELLM_TYPE_F32, NULL     /* integer / F64, not supported */
/* A quantized type edgellm computes with: dequantizer, reference quantizer, activation
 * type and reference dot product. */
#define C_COMP(DEQ, Q, VT, DOT) true, DEQ, Q, VT, DOT
/* An activation-only type: converters, no dot product of its own. */
#define C_ACT(DEQ, Q) false, DEQ, Q, EDGELLM_TYPE_F32, NULL

/* The quantizers return their saturation count (quant.h); the traits want void. */
#define FROM_FLOAT(T) static void from_##T(const float *s, void *d, int64_t n) { (void)edgellm_quant_##T##_ref(s, d, n); }
FROM_FLOAT(q4_0) FROM_FLOAT(q4_1) FROM_FLOAT(q5_0) FROM_FLOAT(q5_1) FROM_FLOAT(q8_0) FROM_FLOAT(q8_1)
FROM_FLOAT(q2_K) FROM_FLOAT(q3_K) FROM_FLOAT(q4_K) FROM_FLOAT(q5_K) FROM_FLOAT(q6_K) FROM_FLOAT(q8_K)
#define FROM_FLOAT_GROUP(G) FROM_FLOAT(i4_g##G##_sym) FROM_FLOAT(i4_g##G##_asym) FROM_FLOAT(i8_g##G##_sym) \
    FROM_FLOAT(i8_g##G##_asym)
EDGELLM_GROUP_TYPES(FROM_FLOAT_GROUP)

/* ggml ids 0..39: one C_* line per row of EDGELLM_GGML_TYPE_LAYOUTS (type_layout.h). */
#define CODE_F32     C_FLOAT(f32_to_float, f32_from_float, dot_f32_ref)
#define CODE_F16     C_FLOAT(f16_to_float, f16_from_float, dot_f16_ref)
#define CODE_Q4_0    C_COMP(edgellm_dequant_q4_0, from_q4_0, EDGELLM_TYPE_Q8_0, edgellm_dot_q4_0_q8_0_ref)
#define CODE_Q4_1    C_COMP(edgellm_dequant_q4_1, from_q4_1, EDGELLM_TYPE_Q8_1, edgellm_dot_q4_1_q8_1_ref)
#define CODE_Q5_0    C_COMP(edgellm_dequant_q5_0, from_q5_0, EDGELLM_TYPE_Q8_0, edgellm_dot_q5_0_q8_0_ref)
#define CODE_Q5_1    C_COMP(edgellm_dequant_q5_1, from_q5_1, EDGELLM_TYPE_Q8_1, edgellm_dot_q5_1_q8_1_ref)
#define CODE_Q8_0    C_COMP(edgellm_dequant_q8_0, from_q8_0, EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_ref)
#define CODE_Q8_1    C_ACT(edgellm_dequant_q8_1, from_q8_1)
#define CODE_Q2_K    C_COMP(edgellm_dequant_q2_K, from_q2_K, EDGELLM_TYPE_Q8_K, edgellm_dot_q2_K_q8_K_ref)
#define CODE_Q3_K    C_COMP(edgellm_dequant_q3_K, from_q3_K, EDGELLM_TYPE_Q8_K, edgellm_dot_q3_K_q8_K_ref)
#define CODE_Q4_K    C_COMP(edgellm_dequant_q4_K, from_q4_K, EDGELLM_TYPE_Q8_K, edgellm_dot_q4_K_q8_K_ref)
#define CODE_Q5_K    C_COMP(edgellm_dequant_q5_K, from_q5_K, EDGELLM_TYPE_Q8_K, edgellm_dot_q5_K_q8_K_ref)
#define CODE_Q6_K    C_COMP(edgellm_dequant_q6_K, from_q6_K, EDGELLM_TYPE_Q8_K, edgellm_dot_q6_K_q8_K_ref)
#define CODE_Q8_K    C_ACT(edgellm_dequant_q8_K, from_q8_K)
#define CODE_IQ2_XXS C_STORED
#define CODE_IQ2_XS  C_STORED
#define CODE_IQ3_XXS C_STORED
#define CODE_IQ1_S   C_STORED
#define CODE_IQ4_NL  C_STORED
#define CODE_IQ3_S   C_STORED
#define CODE_IQ2_S   C_STORED
#define CODE_IQ4_XS  C_STORED
#define CODE_I8      C_PLAIN
#define CODE_I16     C_PLAIN
#define CODE_I32     C_PLAIN
#define CODE_I64     C_PLAIN
#define CODE_F64     C_PLAIN
#define CODE_IQ1_M   C_STORED
#define CODE_BF16    C_FLOAT(bf16_to_float, bf16_from_float, dot_bf16_ref)
#define CODE_TQ1_0   C_STORED
#define CODE_TQ2_0   C_STORED
#define CODE_MXFP4   C_STORED

#define GGML_ROW(ID, NAME, BLK, SZ, QUANT) [EDGELLM_TYPE_##ID] = { NAME, BLK, SZ, QUANT, CODE_##ID },
static const edgellm_type_traits ggml_traits[EDGELLM_TYPE_GGML_COUNT] = {
    EDGELLM_GGML_TYPE_LAYOUTS(GGML_ROW)
};

/* edgellm group-wise types (ids 1000..1011, layouts in blocks.h, code in quant_group.c)
 * and stored matrix layouts (1012: no per-row code; the model loader and quantize read
 * them through kernels/repack.h), indexed by id - 1000. */
#define EDGELLM_N_OWN_TYPES 13
#define T_GROUP(ID, NAME, BITS, ASYM, G, T, VT, VTN)                                                     \
    [ID - 1000] = { NAME, G, EDGELLM_GROUP_BLOCK_BYTES(BITS, ASYM, G), true,                                \
                    C_COMP(edgellm_dequant_##T, from_##T, VT, edgellm_dot_##T##_##VTN##_ref) }
#define OWN_ROWS(G)                                                                                     \
    T_GROUP(EDGELLM_TYPE_I4_G##G##_SYM, "I4_G" #G "_SYM", 4, 0, G, i4_g##G##_sym, EDGELLM_TYPE_Q8_0, q8_0),     \
    T_GROUP(EDGELLM_TYPE_I4_G##G##_ASYM, "I4_G" #G "_ASYM", 4, 1, G, i4_g##G##_asym, EDGELLM_TYPE_Q8_1, q8_1),  \
    T_GROUP(EDGELLM_TYPE_I8_G##G##_SYM, "I8_G" #G "_SYM", 8, 0, G, i8_g##G##_sym, EDGELLM_TYPE_Q8_0, q8_0),     \
    T_GROUP(EDGELLM_TYPE_I8_G##G##_ASYM, "I8_G" #G "_ASYM", 8, 1, G, i8_g##G##_asym, EDGELLM_TYPE_Q8_1, q8_1),
static const edgellm_type_traits own_traits[EDGELLM_N_OWN_TYPES] = {
    EDGELLM_GROUP_TYPES(OWN_ROWS)
    [EDGELLM_TYPE_Q4_K_R16 - 1000] = { "Q4_K_R16", 256, 144, true, false, NULL, NULL, EDGELLM_TYPE_Q8_K, NULL },
};

const edgellm_type_traits *edgellm_type_get_traits(int type)
{
    if (type >= 0 && type < EDGELLM_TYPE_GGML_COUNT) {
        const edgellm_type_traits *t = &ggml_traits[type];
        return t->name ? t : NULL;
    }
    if (type >= 1000 && type < 1000 + EDGELLM_N_OWN_TYPES) {
        const edgellm_type_traits *t = &own_traits[type - 1000];
        return t->name ? t : NULL;
    }
    return NULL;
}
