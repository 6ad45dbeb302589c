/*
 * quant.c — edgellm_quantize_row: one entry point that quantizes a row with the reference
 * quantizer of any type and counts saturated values (quant.h), for the quantize tool and
 * its report. Float targets: F32 is a copy; F16 saturates to ±65504 (counted) instead of
 * producing inf; BF16 covers the float range (round to nearest even).
 */
#include "quant.h"
#include "types.h"

typedef uint64_t (*quant_sat_fn)(const float *src, void *dst, int64_t n);

#define GROUP_ROWS(G)                                                                         \
    {EDGELLM_TYPE_I4_G##G##_SYM, edgellm_quant_i4_g##G##_sym_ref},                            \
    {EDGELLM_TYPE_I4_G##G##_ASYM, edgellm_quant_i4_g##G##_asym_ref},                          \
    {EDGELLM_TYPE_I8_G##G##_SYM, edgellm_quant_i8_g##G##_sym_ref},                            \
    {EDGELLM_TYPE_I8_G##G##_ASYM, edgellm_quant_i8_g##G##_asym_ref},

static const struct { int type; quant_sat_fn fn; } quantizers[] = {
    {EDGELLM_TYPE_Q4_0, edgellm_quant_q4_0_ref}, {EDGELLM_TYPE_Q4_1, edgellm_quant_q4_1_ref},
    {EDGELLM_TYPE_Q5_0, edgellm_quant_q5_0_ref}, {EDGELLM_TYPE_Q5_1, edgellm_quant_q5_1_ref},
    {EDGELLM_TYPE_Q8_0, edgellm_quant_q8_0_ref}, {EDGELLM_TYPE_Q8_1, edgellm_quant_q8_1_ref},
    {EDGELLM_TYPE_Q2_K, edgellm_quant_q2_K_ref}, {EDGELLM_TYPE_Q3_K, edgellm_quant_q3_K_ref},
    {EDGELLM_TYPE_Q4_K, edgellm_quant_q4_K_ref}, {EDGELLM_TYPE_Q5_K, edgellm_quant_q5_K_ref},
    {EDGELLM_TYPE_Q6_K, edgellm_quant_q6_K_ref}, {EDGELLM_TYPE_Q8_K, edgellm_quant_q8_K_ref},
    EDGELLM_GROUP_TYPES(GROUP_ROWS)
};

size_t edgellm_quantize_row(int type, const float *src, void *dst, int64_t n, edgellm_quant_stats *st)
{
    const size_t bytes = edgellm_type_row_size(type, n);
    if (bytes == 0 && n != 0) return 0;
    uint64_t sat = 0;
    if (type == EDGELLM_TYPE_F32) {
        memcpy(dst, src, bytes);
    } else if (type == EDGELLM_TYPE_F16) {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = edgellm_f32_to_f16(edgellm_q_sat(src[i], EDGELLM_HALF_MAX, &sat));
            memcpy(d + 2 * i, &h, 2);
        }
    } else if (type == EDGELLM_TYPE_BF16) {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = edgellm_f32_to_bf16(src[i]);
            memcpy(d + 2 * i, &h, 2);
        }
    } else {
        quant_sat_fn fn = NULL;
        for (size_t i = 0; i < sizeof quantizers / sizeof quantizers[0]; i++)
            if (quantizers[i].type == type) fn = quantizers[i].fn;
        if (!fn) return 0;
        sat = fn(src, dst, n);
    }
    if (st) {
        st->n_values += (uint64_t)n;
        st->n_saturated += sat;
    }
    return bytes;
}
