/*
 * dot_group_avx2.c — edgellm's group-wise I4/I8 types (G = 64, 128, 256; symmetric against
 * Q8_0, asymmetric against Q8_1 activations), AVX2+FMA+F16C. Mirror
 * edgellm_dot_i{4,8}_g*_{sym_q8_0,asym_q8_1}_ref (src/tensor/quant_group.c); layouts in
 * blocks.h: [half d][half m, asym][codes], I4 codes in Q4_0's nibble order per 32-chunk.
 *
 * Per 32-element chunk c of a group (activation block xb), exact in int32 (8 lanes):
 *   I4 SYM   Σ (q-8)·x  = maddubs(q, x) - maddubs(8, x)
 *   I4 ASYM  Σ q·x, Σ x (maddubs)
 *   I8 SYM   Σ q·x      (int16 madd: any int8 pair)
 *   I8 ASYM  Σ q·x      (u8 codes up to 255 overflow maddubs: int16 madd), Σ x
 * then acc += (d·d_x)·S (+ (m·d_x)·Σx) in 8 float lanes.
 * Tolerance: |fast - ref| <= (nc + 4)·2^-22·Σ(|w·x| + |m·x|), nc = chunks.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

static inline __m256i dot_u8s8_wide(const uint8_t *a, const int8_t *b)
{
    const __m256i a0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)a));
    const __m256i a1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(a + 16)));
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
    return _mm256_add_epi32(_mm256_madd_epi16(a0, b0), _mm256_madd_epi16(a1, b1));
}

static inline float dot_group(int bits, int asym, int G, int64_t n, const void *w, const void *x)
{
    const uint8_t *in = w;
    const edgellm_block_q8_0 *x0 = x;
    const edgellm_block_q8_1 *x1 = x;
    const size_t bytes = (size_t)EDGELLM_GROUP_BLOCK_BYTES(bits, asym, G);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t g = 0; g < n / G; g++, in += bytes) {
        uint16_t dh, mh = 0;
        memcpy(&dh, in, 2);
        if (asym) memcpy(&mh, in + 2, 2);
        const float d = x86_h2f(dh), m = x86_h2f(mh);
        const uint8_t *qs = in + (asym ? 4 : 2);
        for (int c = 0; c < G / 32; c++) {
            const int64_t xb = g * (G / 32) + c;
            const int8_t *xq = asym ? x1[xb].qs : x0[xb].qs;
            const float dx = x86_h2f(asym ? x1[xb].d : x0[xb].d);
            const __m256i y = _mm256_loadu_si256((const __m256i *)xq);
            __m256i s;
            if (bits == 4) {
                const __m256i q = x86_nibbles32(qs + 16 * c);
                s = asym ? x86_dot_u8s8(q, y)
                         : _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(q, y),
                                                              _mm256_maddubs_epi16(_mm256_set1_epi8(8), y)),
                                             _mm256_set1_epi16(1));
            } else {
                s = asym ? dot_u8s8_wide(qs + 32 * c, xq) : x86_dot_s8s8((const int8_t *)(qs + 32 * c), xq);
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(s), acc);
            if (asym) acc = _mm256_fmadd_ps(_mm256_set1_ps(m * dx), _mm256_cvtepi32_ps(x86_sum_s8(y)), acc);
        }
    }
    return x86_hsum8(acc);
}

#define GROUP_AVX2(G)                                                                           \
    float edgellm_dot_i4_g##G##_sym_q8_0_avx2(int64_t n, const void *w, const void *x)          \
    { return dot_group(4, 0, G, n, w, x); }                                                     \
    float edgellm_dot_i4_g##G##_asym_q8_1_avx2(int64_t n, const void *w, const void *x)         \
    { return dot_group(4, 1, G, n, w, x); }                                                     \
    float edgellm_dot_i8_g##G##_sym_q8_0_avx2(int64_t n, const void *w, const void *x)          \
    { return dot_group(8, 0, G, n, w, x); }                                                     \
    float edgellm_dot_i8_g##G##_asym_q8_1_avx2(int64_t n, const void *w, const void *x)         \
    { return dot_group(8, 1, G, n, w, x); }
GROUP_AVX2(64) GROUP_AVX2(128) GROUP_AVX2(256)
#endif
