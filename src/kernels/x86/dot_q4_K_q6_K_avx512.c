/*
 * dot_q4_K_q6_K_avx512.c — Q4_K and Q6_K weights · Q8_K activations, AVX-512 + VNNI.
 * Mirror edgellm_dot_q4_K_q8_K_ref / edgellm_dot_q6_K_q8_K_ref (src/tensor/quant_k.c);
 * layouts in blocks.h. The arithmetic (exact int32 super-block sums, then one float chain
 * per row and token) is k_avx512.h's, for one row and one token;
 * the tile kernels of gemm_k_avx512_body.h run the same steps for tiles of rows and tokens, so
 * they equal these functions bit for bit (tests/test_gemm.c).
 * Tolerance as the AVX2 twins: |fast - ref| <= (nb + 4)·2^-22·Σ(|w·x| + |offset terms|).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "kernels_x86.h"
#include "k_avx512.h"

float edgellm_dot_q4_K_q8_K_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_K *xr[1] = {x};
    float y;
    x86_q4_K_row(w, xr, n / EDGELLM_QK_K, 1, &y, 0);
    return y;
}

float edgellm_dot_q6_K_q8_K_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_K *xr[1] = {x};
    float y;
    x86_q6_K_row(w, xr, n / EDGELLM_QK_K, 1, &y, 0);
    return y;
}
#endif
