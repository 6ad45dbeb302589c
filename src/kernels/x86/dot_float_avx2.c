/*
 * dot_float_avx2.c — F32 / F16 / BF16 weights · F32 activations, AVX2+FMA+F16C.
 * Mirror the double-accumulating dot_f32_ref / dot_f16_ref / dot_bf16_ref of
 * src/tensor/types.c (the portable float kernels are src/kernels/dot_float_scalar.c).
 *
 * Order: four 8-lane FMA accumulators take elements 32k..32k+31 (acc j gets 32k+8j..+7);
 * a remaining whole 8 goes to acc 0, the last n % 8 elements to acc 1 through a masked
 * load; then (acc0+acc1)+(acc2+acc3) and the fixed 8-lane tree of avx2_util.h.
 * F16 -> float by F16C (exact, subnormals included), BF16 by a 16-bit shift (exact).
 * Also float -> F16 rows (the F16 KV cache's store) by F16C's VCVTPS2PH with round-to-nearest-
 * even, as types.c's reference (its NaN: quiet, the top 10 payload bits kept; the same).
 * Tolerance: |fast - ref| <= (n/32 + 8)·2^-23·Σ|w·x|.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"

static inline __m256 ld_f16(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline __m256 ld_bf16(const uint8_t *p)
{
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* The tail of r < 8 half/bfloat elements, zero-padded. */
static inline __m256 ld16_tail(const uint8_t *p, int64_t r, int bf)
{
    uint16_t h[8] = {0};
    memcpy(h, p, (size_t)r * 2);
    return bf ? ld_bf16((const uint8_t *)h) : ld_f16((const uint8_t *)h);
}

float edgellm_dot_f32_avx2(int64_t n, const void *w, const void *x) { return x86_dot_f32(n, w, x); }

static inline float dot16(int64_t n, const uint8_t *a, const float *b, int bf)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
#define LD(p) (bf ? ld_bf16(p) : ld_f16(p))
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(LD(a + 2 * i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(LD(a + 2 * i + 16), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(LD(a + 2 * i + 32), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(LD(a + 2 * i + 48), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(LD(a + 2 * i), _mm256_loadu_ps(b + i), acc0);
#undef LD
    if (i < n) {
        const __m256i m = x86_tail_mask8(n - i);
        acc1 = _mm256_fmadd_ps(ld16_tail(a + 2 * i, n - i, bf), _mm256_maskload_ps(b + i, m), acc1);
    }
    return x86_hsum8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
}

float edgellm_dot_f16_avx2(int64_t n, const void *w, const void *x) { return dot16(n, w, x, 0); }
float edgellm_dot_bf16_avx2(int64_t n, const void *w, const void *x) { return dot16(n, w, x, 1); }
void edgellm_f16_from_float_avx2(const float *src, void *dst, int64_t n)
{
    uint8_t *d = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) {
        const uint16_t h = edgellm_f32_to_f16(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}
#endif
