/*
 * gemm_q_dotprod.c — tile kernels for Q4_0 and Q8_0 weights × Q8_0 activations on AArch64
 * with FEAT_DotProd (SDOT); contract in ../gemm.h, compiled with -march=armv8.2-a+dotprod.
 *
 * Arithmetic: exactly that of edgellm_dot_q4_0_q8_0_dotprod / edgellm_dot_q8_0_q8_0_dotprod
 * (dot_q_body.h), step for step, for every (row, token): per block the exact int32 lanes of
 * two SDOTs, acc += float(lanes)·(d_w·d_x) by vfmaq_n_f32 into acc0 (even blocks) or acc1
 * (odd blocks), then arm_hsum4(acc0 + acc1). The loop differs: each weight block is loaded
 * and unpacked once for up to 4 tokens, whose accumulators stay in registers. Activations
 * are the plain Q8_0 rows (no prep). One token runs the same steps: prefill and decode are
 * bit-identical, and equal to the vec_dot (tests/test_gemm.c).
 */
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include "../gemm.h"
#include "neon_util.h"
#include "../../tensor/blocks.h"

#define TC 4                     /* tokens per register tile */

static inline __attribute__((always_inline)) void q8_rows(const edgellm_gemm_args *a, int64_t r, int64_t t0, bool q4,
                                                          const int C)
{
    const int64_t nb = a->cols / EDGELLM_QK8_0;
    const uint8_t *row = a->w + (size_t)r * a->row_bytes;
    const edgellm_block_q8_0 *x[TC];
    float32x4_t acc[TC][2];
    for (int t = 0; t < C; t++) {
        x[t] = (const edgellm_block_q8_0 *)(a->xq + (size_t)(t0 + t) * a->xq_row_bytes);
        acc[t][0] = acc[t][1] = vdupq_n_f32(0);
    }
    for (int64_t i = 0; i < nb; i++) {
        int8x16_t w0, w1;
        float dw;
        if (q4) {
            const edgellm_block_q4_0 *blk = (const edgellm_block_q4_0 *)row + i;
            const uint8x16_t q = vld1q_u8(blk->qs);
            w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), vdupq_n_s8(8));
            w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
            dw = arm_h2f(blk->d);
        } else {
            const edgellm_block_q8_0 *blk = (const edgellm_block_q8_0 *)row + i;
            w0 = vld1q_s8(blk->qs);
            w1 = vld1q_s8(blk->qs + 16);
            dw = arm_h2f(blk->d);
        }
        const int e = (int)(i & 1);
        for (int t = 0; t < C; t++) {
            const edgellm_block_q8_0 *b = &x[t][i];
            int32x4_t s = vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(b->qs));
            s = vdotq_s32(s, w1, vld1q_s8(b->qs + 16));
            acc[t][e] = vfmaq_n_f32(acc[t][e], vcvtq_f32_s32(s), dw * arm_h2f(b->d));
        }
    }
    for (int t = 0; t < C; t++) a->y[(t0 + t) * a->ldy + r] = arm_hsum4(vaddq_f32(acc[t][0], acc[t][1]));
}

static void gemm(const edgellm_gemm_args *a, bool q4)
{
    for (int64_t r = a->r0; r < a->r1; r++) {
        int64_t t = 0;
        for (; t + TC <= a->n; t += TC) q8_rows(a, r, t, q4, TC);
        for (; t < a->n; t++) q8_rows(a, r, t, q4, 1);
    }
}

void edgellm_gemm_q4_0_dotprod(const edgellm_gemm_args *a) { gemm(a, true); }
void edgellm_gemm_q8_0_dotprod(const edgellm_gemm_args *a) { gemm(a, false); }
#endif
