/*
 * gemm_k_body.h — tile kernels for Q4_K and Q6_K weights × Q8_K activations on AArch64,
 * written once and compiled twice like dot_q_body.h: by gemm_k_neon.c with ARM_DOT16 =
 * SMULL/SADALP (_neon) and by gemm_k_dotprod.c with ARM_DOT16 = SDOT (_dotprod). Include
 * with ARM_DOT16(acc, a, b) and ARM_SUFFIX defined. Contract in ../gemm.h; no prep (the
 * kernels read the Q8_K rows at xq).
 *
 * Arithmetic: exactly that of edgellm_dot_q4_K_q8_K_<suffix> / edgellm_dot_q6_K_q8_K_<suffix>
 * (dot_q_body.h) for every (row, token), so each output equals that vec_dot bit for bit:
 * per super-block the same exact int32 lanes (every code pairs with the same activation
 * byte in the same lane of the same 16-byte dot; lanes are exact integer sums, so the
 * order of the adds does not matter), scaled into a float4 accumulator by one fma with
 * d·d_x; Q4_K also adds the exact integer Σ m_j·(bsums_2j + bsums_2j+1) times dmin·d_x
 * into a scalar float in super-block order; finally arm_hsum4(acc) (- that scalar). The
 * loop differs from the vec_dot: each super-block's codes are unpacked to signed bytes and
 * its scales decoded once for up to 4 tokens (TC), whose accumulators stay in registers.
 * One token runs the same steps (the few-token tail): prefill and decode are bit-identical.
 */
#include "../gemm.h"
#include "neon_util.h"
#include "../../tensor/blocks.h"

#define ARM_CAT2(a, b) a##b
#define ARM_CAT(a, b) ARM_CAT2(a, b)
#define ARM_FN(base) ARM_CAT(base, ARM_SUFFIX)

#define TC 4                     /* tokens per register tile */
/* Rows per group: each token tile runs over a group's rows before the next tile, so the
 * tile's activations stay in L1 and the group's weights in L2 (as gemm_k_avx512_body.h);
 * decode (n = 1) still reads the rows one after another. */
#define ROW_GROUP 16

/* sumi += ARM_DOT16(q[v0], y + 16·v0) + ARM_DOT16(q[v0 + 1], y + 16·(v0 + 1)) times the
 * scale in lane L of S (constant lane: a macro, not a loop). */
#define Q4K_PAIR(v0, S, L)                                                         \
    do {                                                                           \
        int32x4_t s_ = ARM_DOT16(vdupq_n_s32(0), q[v0], vld1q_s8(y + 16 * (v0)));  \
        s_ = ARM_DOT16(s_, q[(v0) + 1], vld1q_s8(y + 16 * ((v0) + 1)));            \
        sumi = vmlaq_laneq_s32(sumi, s_, S, L);                                    \
    } while (0)

static inline __attribute__((always_inline)) void q4_K_tile(const edgellm_gemm_args *a, int64_t r, int64_t t0,
                                                            const int C)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    const edgellm_block_q4_K *w = (const edgellm_block_q4_K *)(a->w + (size_t)r * a->row_bytes);
    const edgellm_block_q8_K *x[TC];
    float32x4_t acc[TC];
    float accm[TC];
    for (int t = 0; t < C; t++) {
        x[t] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + t) * a->xq_row_bytes);
        acc[t] = vdupq_n_f32(0);
        accm[t] = 0;
    }
    const uint8x16_t m4 = vdupq_n_u8(15);
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *p = w[i].scales;
        int32_t sc[8];
        int16_t mn[8];
        for (int j = 0; j < 4; j++) {
            sc[j] = p[j] & 63;
            mn[j] = (int16_t)(p[j + 4] & 63);
        }
        for (int j = 4; j < 8; j++) {
            sc[j] = (p[j + 4] & 15) | (p[j - 4] >> 6) << 4;
            mn[j] = (int16_t)((p[j + 4] >> 4) | (p[j] >> 6) << 4);
        }
        const int32x4_t s_lo = vld1q_s32(sc), s_hi = vld1q_s32(sc + 4);
        const int16x8_t mv = vld1q_s16(mn);
        /* q[4c + 0..1]: low nibbles of bytes 32c..32c+31 (elements 64c..64c+31),
         * q[4c + 2..3]: their high nibbles (elements 64c+32..64c+63) */
        int8x16_t q[16];
        for (int c = 0; c < 4; c++) {
            const uint8x16_t q0 = vld1q_u8(w[i].qs + 32 * c), q1 = vld1q_u8(w[i].qs + 32 * c + 16);
            q[4 * c + 0] = vreinterpretq_s8_u8(vandq_u8(q0, m4));
            q[4 * c + 1] = vreinterpretq_s8_u8(vandq_u8(q1, m4));
            q[4 * c + 2] = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4));
            q[4 * c + 3] = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4));
        }
        const float dw = arm_h2f(w[i].d), dmw = arm_h2f(w[i].dmin);
        for (int t = 0; t < C; t++) {
            const edgellm_block_q8_K *b = &x[t][i];
            const int8_t *y = b->qs;
            /* Σ_j m_j·(bsums_2j + bsums_2j+1): pair sums |.| <= 4096, products <= 63·4096 */
            const int16x8_t bs = vpaddq_s16(vld1q_s16(b->bsums), vld1q_s16(b->bsums + 8));
            const int32_t summ = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(bs), vget_low_s16(mv)), bs, mv));
            int32x4_t sumi = vdupq_n_s32(0);
            Q4K_PAIR(0, s_lo, 0);
            Q4K_PAIR(2, s_lo, 1);
            Q4K_PAIR(4, s_lo, 2);
            Q4K_PAIR(6, s_lo, 3);
            Q4K_PAIR(8, s_hi, 0);
            Q4K_PAIR(10, s_hi, 1);
            Q4K_PAIR(12, s_hi, 2);
            Q4K_PAIR(14, s_hi, 3);
            acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(sumi), dw * b->d);
            accm[t] += dmw * b->d * (float)summ;
        }
    }
    for (int t = 0; t < C; t++) a->y[(t0 + t) * a->ldy + r] = arm_hsum4(acc[t]) - accm[t];
}

/* sumi += ARM_DOT16(q[v], y + 16·v) times scale v (lane v % 4 of sv[v / 4]). */
#define Q6K_ONE(v)                                                                            \
    sumi = vmlaq_laneq_s32(sumi, ARM_DOT16(vdupq_n_s32(0), q[v], vld1q_s8(y + 16 * (v))), sv[(v) / 4], \
                           (v) % 4)

static inline __attribute__((always_inline)) void q6_K_tile(const edgellm_gemm_args *a, int64_t r, int64_t t0,
                                                            const int C)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    const edgellm_block_q6_K *w = (const edgellm_block_q6_K *)(a->w + (size_t)r * a->row_bytes);
    const edgellm_block_q8_K *x[TC];
    float32x4_t acc[TC];
    for (int t = 0; t < C; t++) {
        x[t] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + t) * a->xq_row_bytes);
        acc[t] = vdupq_n_f32(0);
    }
    const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);
    for (int64_t i = 0; i < nb; i++) {
        /* q[v], v = 8h + 2k + e: the 16 elements 128h + 32k + 16e.. of the super-block, as
         * signed bytes (code - 32); they pair with activation bytes 16v.. and scale v */
        int8x16_t q[16];
        for (int h = 0; h < 2; h++)
            for (int e = 0; e < 2; e++) {
                const uint8x16_t l0 = vld1q_u8(w[i].ql + 64 * h + 16 * e);
                const uint8x16_t l1 = vld1q_u8(w[i].ql + 64 * h + 32 + 16 * e);
                const uint8x16_t qh = vld1q_u8(w[i].qh + 32 * h + 16 * e);
                uint8x16_t u[4];
                u[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(qh, m2), 4));
                u[1] = vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m2), 4));
                u[2] = vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m2), 4));
                u[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4));
                for (int k = 0; k < 4; k++) q[8 * h + 2 * k + e] = vsubq_s8(vreinterpretq_s8_u8(u[k]), vdupq_n_s8(32));
            }
        const int8x16_t s8 = vld1q_s8(w[i].scales);
        const int16x8_t s16l = vmovl_s8(vget_low_s8(s8)), s16h = vmovl_high_s8(s8);
        const int32x4_t sv[4] = {vmovl_s16(vget_low_s16(s16l)), vmovl_high_s16(s16l), vmovl_s16(vget_low_s16(s16h)),
                                 vmovl_high_s16(s16h)};
        const float dw = arm_h2f(w[i].d);
        for (int t = 0; t < C; t++) {
            const edgellm_block_q8_K *b = &x[t][i];
            const int8_t *y = b->qs;
            int32x4_t sumi = vdupq_n_s32(0);
            Q6K_ONE(0);
            Q6K_ONE(1);
            Q6K_ONE(2);
            Q6K_ONE(3);
            Q6K_ONE(4);
            Q6K_ONE(5);
            Q6K_ONE(6);
            Q6K_ONE(7);
            Q6K_ONE(8);
            Q6K_ONE(9);
            Q6K_ONE(10);
            Q6K_ONE(11);
            Q6K_ONE(12);
            Q6K_ONE(13);
            Q6K_ONE(14);
            Q6K_ONE(15);
            acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(sumi), dw * b->d);
        }
    }
    for (int t = 0; t < C; t++) a->y[(t0 + t) * a->ldy + r] = arm_hsum4(acc[t]);
}

void ARM_FN(edgellm_gemm_q4_K_)(const edgellm_gemm_args *a)
{
    for (int64_t g0 = a->r0; g0 < a->r1; g0 += ROW_GROUP) {
        const int64_t g1 = a->r1 - g0 < ROW_GROUP ? a->r1 : g0 + ROW_GROUP;
        int64_t t = 0;
        for (; t + TC <= a->n; t += TC)
            for (int64_t r = g0; r < g1; r++) q4_K_tile(a, r, t, TC);
        for (; t < a->n; t++)
            for (int64_t r = g0; r < g1; r++) q4_K_tile(a, r, t, 1);
    }
}

void ARM_FN(edgellm_gemm_q6_K_)(const edgellm_gemm_args *a)
{
    for (int64_t g0 = a->r0; g0 < a->r1; g0 += ROW_GROUP) {
        const int64_t g1 = a->r1 - g0 < ROW_GROUP ? a->r1 : g0 + ROW_GROUP;
        int64_t t = 0;
        for (; t + TC <= a->n; t += TC)
            for (int64_t r = g0; r < g1; r++) q6_K_tile(a, r, t, TC);
        for (; t < a->n; t++)
            for (int64_t r = g0; r < g1; r++) q6_K_tile(a, r, t, 1);
    }
}
