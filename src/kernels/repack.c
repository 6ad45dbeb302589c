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
            /* qs byte 32c + l: element 64c + l (low nibble), 64c + 32 + l (high); chunks
             * 2p, 2p + 1 are bytes a = qs[64p + l], b = qs[64p + 32 + l] */
            for (int p = 0; p < 2; p++)
                for (int l = 0; l < 32; l++) {
                    const unsigned qa = b->qs[64 * p + l], qb = b->qs[64 * p + 32 + l];
                    c[64 * p + l] = (uint8_t)((qa & 15u) | (qb & 15u) << 4);
                    c[64 * p + 32 + l] = (uint8_t)(qa >> 4 | (qb & 0xf0u));
                }
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
        for (int p = 0; p < 2; p++)
            for (int l = 0; l < 32; l++) {
                const unsigned lo = c[64 * p + l], hi = c[64 * p + 32 + l];
                o[i].qs[64 * p + l] = (uint8_t)((lo & 15u) | hi << 4);
                o[i].qs[64 * p + 32 + l] = (uint8_t)(lo >> 4 | (hi & 0xf0u));
            }
    }
}

const edgellm_repack edgellm_repack_q4_K_r16_portable = EDGELLM_REPACK_Q4_K_R16(NULL);

/* q4_K_x16: one block of X16_BLOCK bytes per 16-row group and super-block (repack.h). */
#define X16_BLOCK EDGELLM_X16_BLOCK

size_t edgellm_repack_q4_K_x16_size(int64_t rows, int64_t cols) { return edgellm_repack_q4_K_r16_size(rows, cols); }

size_t edgellm_repack_q4_K_x16_plane2(int64_t rows, int64_t cols) { return edgellm_repack_q4_K_r16_size(rows, cols); }

void edgellm_repack_q4_K_x16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src)
{
    const int64_t nb = cols / EDGELLM_QK_K, rp = (rows + 15) / 16 * 16;
    const edgellm_block_q4_K *s = src;
    for (int64_t r = r0; r < (r1 == rows ? rp : r1); r++) {
        const int64_t g = r / 16, k = r % 16;
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = dst + ((size_t)g * (size_t)nb + (size_t)i) * X16_BLOCK;
            if (r >= rows) {                                /* padding row */
                for (int q = 0; q < 32; q++) memset(o + EDGELLM_X16_CODES + 64 * q + 4 * k, 0, 4);
                memset(o + EDGELLM_X16_D + 2 * k, 0, 2);
                memset(o + EDGELLM_X16_DMIN + 2 * k, 0, 2);
                memset(o + EDGELLM_X16_SCALES + 12 * k, 0, 12);
                continue;
            }
            const edgellm_block_q4_K *b = &s[(size_t)(r - r0) * (size_t)nb + (size_t)i];
            for (int q = 0; q < 32; q++) memcpy(o + EDGELLM_X16_CODES + 64 * q + 4 * k, b->qs + 4 * q, 4);
            memcpy(o + EDGELLM_X16_D + 2 * k, &b->d, 2);
            memcpy(o + EDGELLM_X16_DMIN + 2 * k, &b->dmin, 2);
            memcpy(o + EDGELLM_X16_SCALES + 12 * k, b->scales, 12);
        }
    }
}

void edgellm_repack_q4_K_x16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out)
{
    (void)rows;
    const int64_t nb = cols / EDGELLM_QK_K, g = r / 16, k = r % 16;
    edgellm_block_q4_K *b = out;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *o = base + ((size_t)g * (size_t)nb + (size_t)i) * X16_BLOCK;
        for (int q = 0; q < 32; q++) memcpy(b[i].qs + 4 * q, o + EDGELLM_X16_CODES + 64 * q + 4 * k, 4);
        memcpy(&b[i].d, o + EDGELLM_X16_D + 2 * k, 2);
        memcpy(&b[i].dmin, o + EDGELLM_X16_DMIN + 2 * k, 2);
        memcpy(b[i].scales, o + EDGELLM_X16_SCALES + 12 * k, 12);
    }
}

/* q6_K_x16: one block of EDGELLM_Q6X16_BLOCK bytes per 16-row group and super-block
 * (repack.h). */
size_t edgellm_repack_q6_K_x16_size(int64_t rows, int64_t cols)
{
    size_t b;
    const int64_t g = (rows + 15) / 16;
    if (rows < 0 || cols < 0 || !edgellm_mul_size((size_t)g, (size_t)(cols / EDGELLM_QK_K) * EDGELLM_Q6X16_BLOCK, &b))
        return 0;
    return b;
}

size_t edgellm_repack_q6_K_x16_plane2(int64_t rows, int64_t cols) { return edgellm_repack_q6_K_x16_size(rows, cols); }

void edgellm_repack_q6_K_x16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src)
{
    const int64_t nb = cols / EDGELLM_QK_K, rp = (rows + 15) / 16 * 16;
    const edgellm_block_q6_K *s = src;
    for (int64_t r = r0; r < (r1 == rows ? rp : r1); r++) {
        const int64_t g = r / 16, k = r % 16;
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = dst + ((size_t)g * (size_t)nb + (size_t)i) * EDGELLM_Q6X16_BLOCK;
            if (k == 0) memset(o + EDGELLM_Q6X16_D + 32, 0, 32);
            if (r >= rows) {                                /* padding row */
                memset(o + EDGELLM_Q6X16_D + 2 * k, 0, 2);
                for (int j = 0; j < 16; j++) o[EDGELLM_Q6X16_SCALES + 16 * j + k] = 0;
                for (int p = 0; p < 32; p++) memset(o + EDGELLM_Q6X16_QL + 64 * p + 4 * k, 0, 4);
                for (int q = 0; q < 16; q++) memset(o + EDGELLM_Q6X16_QH + 64 * q + 4 * k, 0, 4);
                continue;
            }
            const edgellm_block_q6_K *b = &s[(size_t)(r - r0) * (size_t)nb + (size_t)i];
            memcpy(o + EDGELLM_Q6X16_D + 2 * k, &b->d, 2);
            for (int j = 0; j < 16; j++) o[EDGELLM_Q6X16_SCALES + 16 * j + k] = (uint8_t)b->scales[j];
            for (int p = 0; p < 32; p++) memcpy(o + EDGELLM_Q6X16_QL + 64 * p + 4 * k, b->ql + 4 * p, 4);
            for (int q = 0; q < 16; q++) memcpy(o + EDGELLM_Q6X16_QH + 64 * q + 4 * k, b->qh + 4 * q, 4);
        }
    }
}

void edgellm_repack_q6_K_x16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out)
{
    (void)rows;
    const int64_t nb = cols / EDGELLM_QK_K, g = r / 16, k = r % 16;
    edgellm_block_q6_K *b = out;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *o = base + ((size_t)g * (size_t)nb + (size_t)i) * EDGELLM_Q6X16_BLOCK;
        memcpy(&b[i].d, o + EDGELLM_Q6X16_D + 2 * k, 2);
        for (int j = 0; j < 16; j++) b[i].scales[j] = (int8_t)o[EDGELLM_Q6X16_SCALES + 16 * j + k];
        for (int p = 0; p < 32; p++) memcpy(b[i].ql + 4 * p, o + EDGELLM_Q6X16_QL + 64 * p + 4 * k, 4);
        for (int q = 0; q < 16; q++) memcpy(b[i].qh + 4 * q, o + EDGELLM_Q6X16_QH + 64 * q + 4 * k, 4);
    }
}
