/*
 * repack.h — load-time repacked weight layouts: a weight matrix rewritten once, when the
 * model is loaded, into an order its tile kernel reads faster. The repacked bytes replace
 * the mapped ones (same size up to the padding of the last 16-row group); the products
 * over them equal those of the in-place kernels bit for bit (the same integer sums, the
 * same float steps). dispatch.h's edgellm_kernels_repack says which layout, if any, a
 * tensor type gets on this CPU at the active kernel level.
 *
 * Q4_K, 16-row groups ("q4_K_r16"), for R rows of nb = cols / 256 super-blocks
 * (GGUF's block_q4_K, blocks.h), G = ceil(R / 16) groups, rows padded to 16·G with zeros:
 *
 *   codes plane  [16·G rows][nb super-blocks][128 bytes], row r at (r·nb + i)·128: for
 *                half p = 0, 1 and j < 64, byte 64p + j = code(128p + j) | code(128p + 64 + j) << 4,
 *                code(e) the 4-bit code of element e of the super-block. One 64-byte load
 *                then gives, by & 15 and by >> 4, the 64 codes of chunk 2p and of chunk
 *                2p + 1 in element order, 64-byte aligned (the in-place kernel broadcasts
 *                32-byte halves from 144-byte blocks and shifts each).
 *   head plane   at byte 16·G·nb·128: [G groups][nb super-blocks][256 bytes]; group g,
 *                super-block i: bytes 0-31 d of rows 16g..16g+15 (halves), 32-63 dmin,
 *                64 + 12k .. 75 + 12k the 12 packed scale bytes of row 16g + k. The 16
 *                d·d_x and dmin·d_x products of a group are then two vector multiplies
 *                per token instead of one per row and token.
 *
 *   16·G·nb·144 bytes in all: the tensor's own size when R is a multiple of 16.
 * The tile kernel gets the codes plane at edgellm_gemm_args.w and the head plane at .w2.
 *
 * Stored in a file: a GGUF tensor of type EDGELLM_TYPE_Q4_K_R16 (edgellm-only, id 1012)
 * holds exactly these bytes for a {cols, R} matrix with R a multiple of 16 (no padding
 * rows), written by `edgellm quantize --layout q4_K_r16`. The loader would use the mapped
 * bytes with a tile kernel for the layout directly, and unpacks them into plain Q4_K rows
 * where the active level has none (or the data is not 64-byte aligned); no level has one at
 * present (dispatch.c: the in-place Q4_K kernels of k_avx512.h are faster), so such files are
 * always unpacked. EDGELLM_REPACK does not apply.
 */
#ifndef EDGELLM_REPACK_H
#define EDGELLM_REPACK_H

#include "gemm.h"
#include <stddef.h>
#include <stdint.h>

typedef struct edgellm_repack {
    const char *name;            /* layout name as --version prints it, e.g. "q4_K_r16" */
    int type;                    /* the tensor type it repacks                          */
    int stored_type;             /* the type id of the layout stored in a file
                                    (EDGELLM_TYPE_Q4_K_R16, `quantize --layout`)       */
    /* Bytes of the layout for rows × cols (0 on overflow). */
    size_t (*size)(int64_t rows, int64_t cols);
    /* Offset of the second plane (edgellm_gemm_args.w2 = base + plane2(rows, cols)). */
    size_t (*plane2)(int64_t rows, int64_t cols);
    /* Write rows [r0, r1) of the plain matrix (src: those rows, contiguous) into the
     * layout at dst (size(rows, cols) bytes). With r1 == rows the padding rows are zeroed
     * too. Any order of disjoint ranges; not thread-safe on one range. */
    void (*pack)(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src);
    /* Row r of the plain matrix back from the layout at base (out: one plain row). */
    void (*unpack_row)(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out);
    edgellm_gemm_kernel gemm;    /* the tile kernel over the layout (any n)             */
} edgellm_repack;

/* q4_K_r16 (portable C, repack.c). */
size_t edgellm_repack_q4_K_r16_size(int64_t rows, int64_t cols);
size_t edgellm_repack_q4_K_r16_plane2(int64_t rows, int64_t cols);
void edgellm_repack_q4_K_r16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src);
void edgellm_repack_q4_K_r16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out);
/* The q4_K_r16 descriptor with tile kernel GEMM (NULL: none, packing and unpacking only). */
#define EDGELLM_REPACK_Q4_K_R16(GEMM)                                                                    \
    {"q4_K_r16", EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q4_K_R16, edgellm_repack_q4_K_r16_size,                 \
     edgellm_repack_q4_K_r16_plane2, edgellm_repack_q4_K_r16_pack, edgellm_repack_q4_K_r16_unpack_row, \
     {NULL, GEMM, 0, 256}}
/* The layout without a kernel (gemm.gemm NULL): packing and unpacking on any CPU. */
extern const edgellm_repack edgellm_repack_q4_K_r16_portable;

/* Q4_K, 16 rows as lanes ("q4_K_x16"), load-time only: one 2304-byte block per 16-row group
 * g and super-block i, at (g·nb + i)·2304, groups in order, rows padded to 16·G with zeros;
 * the head first, so that a block is read at rising addresses:
 *   0 + 2k, 32 + 2k                  d, dmin of row 16g + k (halves)
 *   64 + 12k .. 75 + 12k             its 12 packed scale bytes
 *   256 + 64q + 4k .. + 3            dword q (q < 32) of row 16g + k's 128 code bytes
 *                                    (one 64-byte load: dword q of the 16 rows)
 * k_avx512.h's x86_q4_K_x16_step reads a block as it is (x86_q4_K_x16_build makes the same
 * codes from plain rows on the fly). One plane (plane2 = size: .w2 unused). */
#define EDGELLM_X16_BLOCK 2304
#define EDGELLM_X16_D 0
#define EDGELLM_X16_DMIN 32
#define EDGELLM_X16_SCALES 64
#define EDGELLM_X16_CODES 256
size_t edgellm_repack_q4_K_x16_size(int64_t rows, int64_t cols);
size_t edgellm_repack_q4_K_x16_plane2(int64_t rows, int64_t cols);
void edgellm_repack_q4_K_x16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src);
void edgellm_repack_q4_K_x16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out);
#define EDGELLM_REPACK_Q4_K_X16(GEMM)                                                                  \
    {"q4_K_x16", EDGELLM_TYPE_Q4_K, -1, edgellm_repack_q4_K_x16_size, edgellm_repack_q4_K_x16_plane2,  \
     edgellm_repack_q4_K_x16_pack, edgellm_repack_q4_K_x16_unpack_row, {NULL, GEMM, 0, 256}}

/* Q6_K, 16 rows as lanes ("q6_K_x16"), load-time only: one 3392-byte block per 16-row group
 * g and super-block i, at (g·nb + i)·3392, groups in order, rows padded to 16·G with zeros;
 * head first, every part at a 64-byte boundary:
 *   0 + 2k                           d of row 16g + k (half); bytes 32-63 zero
 *   64 + 16j + k                     scale j (j < 16) of row 16g + k
 *   320 + 64p + 4k .. + 3            ql bytes 4p .. 4p + 3 (p < 32) of row 16g + k
 *   2368 + 64q + 4k .. + 3           qh bytes 4q .. 4q + 3 (q < 16) of row 16g + k
 * 0.95 % larger than the plain rows (3392 / 3360 bytes; more when rows % 16 != 0).
 * k_avx512.h's x86_q6_K_x16_step reads a block as it is (x86_q6_K_x16_build makes the same
 * code dwords from plain rows). */
#define EDGELLM_Q6X16_BLOCK 3392
#define EDGELLM_Q6X16_D 0
#define EDGELLM_Q6X16_SCALES 64
#define EDGELLM_Q6X16_QL 320
#define EDGELLM_Q6X16_QH 2368
size_t edgellm_repack_q6_K_x16_size(int64_t rows, int64_t cols);
size_t edgellm_repack_q6_K_x16_plane2(int64_t rows, int64_t cols);
void edgellm_repack_q6_K_x16_pack(uint8_t *dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const void *src);
void edgellm_repack_q6_K_x16_unpack_row(const uint8_t *base, int64_t rows, int64_t cols, int64_t r, void *out);
#define EDGELLM_REPACK_Q6_K_X16(GEMM)                                                                  \
    {"q6_K_x16", EDGELLM_TYPE_Q6_K, -1, edgellm_repack_q6_K_x16_size, edgellm_repack_q6_K_x16_plane2,  \
     edgellm_repack_q6_K_x16_pack, edgellm_repack_q6_K_x16_unpack_row, {NULL, GEMM, 0, 256}}

#endif
