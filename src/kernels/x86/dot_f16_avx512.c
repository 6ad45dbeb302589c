/*
 * dot_f16_avx512.c — F16 weights · F32 activations, AVX-512F.
 * Mirrors dot_f16_ref of src/tensor/types.c (double accumulation).
 * (No F32 twin: 64-byte loads of rows that are only 16/32-byte aligned split cache
 * lines, and an F32 AVX-512 dot measured 30% slower than edgellm_dot_f32_avx2 for
 * decode; aligning the loop would make the result depend on the address.)
 *
 * Order: four 16-lane FMA accumulators over elements 64k..64k+63 (acc j: 64k+16j..+15);
 * a remaining whole 16 to acc 0, the last n % 16 to acc 1 by a masked load; then
 * (acc0+acc1)+(acc2+acc3), 16 -> 8 lanes, and the fixed tree of avx2_util.h.
 * Tolerance: |fast - ref| <= (n/64 + 8)·2^-23·Σ|w·x|.
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include "kernels_x86.h"
#include "avx512_util.h"

static inline __m512 ld_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

float edgellm_dot_f16_avx512(int64_t n, const void *w, const void *x)
{
    const uint16_t *a = w;
    const float *b = x;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(ld_f16(a + i), _mm512_loadu_ps(b + i), acc0);
        acc1 = _mm512_fmadd_ps(ld_f16(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
        acc2 = _mm512_fmadd_ps(ld_f16(a + i + 32), _mm512_loadu_ps(b + i + 32), acc2);
        acc3 = _mm512_fmadd_ps(ld_f16(a + i + 48), _mm512_loadu_ps(b + i + 48), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(ld_f16(a + i), _mm512_loadu_ps(b + i), acc0);
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        const __m512 wv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, a + i));
        acc1 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, b + i), acc1);
    }
    return x86_hsum16(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}
#endif
