/*
 * repack.c — the portable side of the repacked layouts of repack.h: sizes, packing and
 * unpacking (layout described there; block_q4_K in ../tensor/blocks.h).
 */
#include "repack.h"
#include "../common/common.h"
#include "../tensor/blocks.h"
#include <string.h>

#define R16_HEAD 256             /* head bytes per group and super-block */

size_t edgellm_repack_q4_K_r16_plane2(int64_t rows, int64_t cols)
{
    size_t b;
    const int64_t g = (rows + 15) / 16;
    if (rows < 0 || cols < 0 || !edgellm_mul_size((size_t)g * 16, (size_t)(cols / EDGELLM_QK_K) * 128, &b)) return 0;
    return b;
}

size_t edgellm_repack_q4_K_r16_size(int64_t rows, int64_t cols)
{
    size_t b;
    const int64_t g = (rows + 15) / 16;
    if (rows < 0 || cols < 0 || !edgellm_mul_size((size_t)g * 16, (size_t)(cols / EDGELLM_QK_K) * 144, &b)) return 0;
    return b;
}

/* The 4-bit code of element e (< 256) of a block_q4_K's qs. */
static inline unsigned q4_K_code(const uint8_t *qs, int e)
{
    const int c = e / 64, l = e % 64;
    const uint8_t b = qs[32 * c + l % 32];
    return l < 32 ? b & 15u : b >> 4;
}

void edgellm_repack_q4_K_r16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src)
{
    const int64_t nb = cols / EDGELLM_QK_K, rp = (rows + 15) / 16 * 16;
    uint8_t *head = dst + edgellm_repack_q4_K_r16_plane2(rows, cols);
    const edgellm_block_q4_K *s = src;
    for (int64_t r = r0; r < (r1 == rows ? rp : r1); r++) {
        uint8_t *codes = dst + (size_t)r * (size_t)nb * 128;
        const int64_t g = r / 16, k = r % 16;
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *c = codes + (size_t)i * 128, *h = head + ((size_t)g * (size_t)nb + (size_t)i) * R16_HEAD;
            if (r >= rows) {                                /* padding row */
                memset(c, 0, 128);
                memset(h + 2 * k, 0, 2);
                memset(h + 32 + 2 * k, 0, 2);
                memset(h + 64 + 12 * k, 0, 12);
                continue;
            }
            const edgellm_block_q4_K *b = &s[(size_t)(r - r0) * (size_t)nb + (size_t)i];
            for (int p = 0; p < 2; p++)
                for (int j = 0; j < 64; j++)
                    c[64 * p + j] = (uint8_t)(q4_K_code(b->qs, 128 * p + j) | q4_K_code(b->qs, 128 * p + 64 + j) << 4);
            memcpy(h + 2 * k, &b->d, 2);
            memcpy(h + 32 + 2 * k, &b->dmin, 2);
            memcpy(h + 64 + 12 * k, b->scales, 12);
        }
    }
}

void edgellm_repack_q4_K_r16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out)
{
    const int64_t nb = cols / EDGELLM_QK_K, g = r / 16, k = r % 16;
    const uint8_t *codes = base + (size_t)r * (size_t)nb * 128;
    const uint8_t *head = base + edgellm_repack_q4_K_r16_plane2(rows, cols);
    edgellm_block_q4_K *o = out;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *c = codes + (size_t)i * 128, *h = head + ((size_t)g * (size_t)nb + (size_t)i) * R16_HEAD;
        memcpy(&o[i].d, h + 2 * k, 2);
        memcpy(&o[i].dmin, h + 32 + 2 * k, 2);
        memcpy(o[i].scales, h + 64 + 12 * k, 12);
        for (int e = 0; e < 256; e++) {                 /* element e = 128p + 64h + j */
            const int p = e / 128, hi = e % 128 >= 64, j = e % 64;
            const unsigned code = hi ? c[64 * p + j] >> 4 : c[64 * p + j] & 15u;
            const int cc = e / 64, l = e % 64;
            uint8_t *q = &o[i].qs[32 * cc + l % 32];
            *q = (uint8_t)(l < 32 ? (*q & 0xf0u) | code : (*q & 0x0fu) | code << 4);
        }
    }
}
