/*
 * blocks.h — the byte layout of every quantized block edgellm reads, writes or computes
 * with: one struct per format, its element count, what each field holds, bits per weight,
 * and a static assertion that sizeof equals the sum of the fields (padding fails the build).
 *
 * ggml formats: layouts are facts from ggml-org/ggml src/ggml-common.h (struct by struct,
 * each with a static_assert of its size). A "half" is an IEEE binary16 stored as uint16_t
 * (convert with edgellm_f16_to_f32 / edgellm_f32_to_f16). All multi-byte fields are
 * little-endian on disk; edgellm only runs on little-endian hosts.
 *
 * edgellm group-wise formats (ids 1000..1011, edgellm-only files): designed here, see the
 * section at the end.
 *
 * Nibble order used by every 4-bit format whose block is split in 32-element chunks
 * (Q4_0, Q4_1, Q5_*, I4_*): in chunk c, byte j (0..15) holds element 32c+j in its low
 * nibble and element 32c+j+16 in its high nibble.
 */
#ifndef EDGELLM_BLOCKS_H
#define EDGELLM_BLOCKS_H

#include "../format/type_layout.h"   /* EDGELLM_GROUP_TYPES, EDGELLM_GROUP_BLOCK_BYTES */
#include <stdint.h>

/* ================================ 32-element blocks ================================= */

#define EDGELLM_QK4_0 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    uint8_t  qs[EDGELLM_QK4_0 / 2];      /* nibbles q (0..15); w = (q - 8) * d             */
} edgellm_block_q4_0;                    /* 18 bytes / 32 weights = 4.5 bpw                */
_Static_assert(sizeof(edgellm_block_q4_0) == 2 + EDGELLM_QK4_0 / 2, "q4_0 is 18 bytes");

#define EDGELLM_QK4_1 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    uint16_t m;                          /* half: minimum (offset)                        */
    uint8_t  qs[EDGELLM_QK4_1 / 2];      /* nibbles q (0..15); w = q * d + m               */
} edgellm_block_q4_1;                    /* 20 bytes / 32 weights = 5.0 bpw                */
_Static_assert(sizeof(edgellm_block_q4_1) == 4 + EDGELLM_QK4_1 / 2, "q4_1 is 20 bytes");

#define EDGELLM_QK5_0 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    uint8_t  qh[4];                      /* bit j of the LE u32 = 5th bit of element j     */
    uint8_t  qs[EDGELLM_QK5_0 / 2];      /* low 4 bits, nibble order above                 */
} edgellm_block_q5_0;                    /* 22 bytes / 32 = 5.5 bpw; w = (q - 16) * d      */
_Static_assert(sizeof(edgellm_block_q5_0) == 2 + 4 + EDGELLM_QK5_0 / 2, "q5_0 is 22 bytes");

#define EDGELLM_QK5_1 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    uint16_t m;                          /* half: minimum                                 */
    uint8_t  qh[4];                      /* 5th bits, as in Q5_0                           */
    uint8_t  qs[EDGELLM_QK5_1 / 2];      /* low 4 bits                                     */
} edgellm_block_q5_1;                    /* 24 bytes / 32 = 6.0 bpw; w = q * d + m         */
_Static_assert(sizeof(edgellm_block_q5_1) == 4 + 4 + EDGELLM_QK5_1 / 2, "q5_1 is 24 bytes");

#define EDGELLM_QK8_0 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    int8_t   qs[EDGELLM_QK8_0];          /* w = q * d, q in -127..127 as quantized         */
} edgellm_block_q8_0;                    /* 34 bytes / 32 = 8.5 bpw                        */
_Static_assert(sizeof(edgellm_block_q8_0) == 2 + EDGELLM_QK8_0, "q8_0 is 34 bytes");

#define EDGELLM_QK8_1 32
typedef struct {
    uint16_t d;                          /* half: scale                                   */
    uint16_t s;                          /* half: d * sum(qs) (activation-side helper)     */
    int8_t   qs[EDGELLM_QK8_1];          /* w = q * d                                      */
} edgellm_block_q8_1;                    /* 36 bytes / 32 = 9.0 bpw                        */
_Static_assert(sizeof(edgellm_block_q8_1) == 4 + EDGELLM_QK8_1, "q8_1 is 36 bytes");

/* ============================ 256-element super-blocks ============================== */

#define EDGELLM_QK_K 256
#define EDGELLM_K_SCALE_SIZE 12

/* Q2_K: 16 sub-blocks of 16; w = d*(sc&15)*q - dmin*(sc>>4), q 2 bits.
 * qs: for half h (128 elements) and shift s (0,2,4,6): byte 32h+l, bits s..s+1 hold
 * element 128h + 32*(s/2) + l (l = 0..31). */
typedef struct {
    uint8_t  scales[EDGELLM_QK_K / 16];  /* low nibble: scale, high nibble: min (4 bits)   */
    uint8_t  qs[EDGELLM_QK_K / 4];       /* 2-bit quants                                  */
    uint16_t d;                          /* half: super-scale of the scales               */
    uint16_t dmin;                       /* half: super-scale of the mins                 */
} edgellm_block_q2_K;                    /* 84 bytes / 256 = 2.625 bpw                     */
_Static_assert(sizeof(edgellm_block_q2_K) == 16 + 64 + 4, "q2_K is 84 bytes");

/* Q3_K: 16 sub-blocks of 16; w = d*(sc-32)*(q - (hbit ? 0 : 4)), q = 2 low bits.
 * Low bits packed like Q2_K; hmask bit b of byte m = high bit of element 32b + m.
 * scales: 16 6-bit values; low nibbles of sub-blocks 0..7 in bytes 0..7 (low half) and
 * 8..15 in bytes 0..7 (high half); the 2 high bits of sub-block j in byte 8 + j%4, at bit
 * 2*(j/4). */
typedef struct {
    uint8_t  hmask[EDGELLM_QK_K / 8];    /* high bit of each quant                         */
    uint8_t  qs[EDGELLM_QK_K / 4];       /* low 2 bits                                     */
    uint8_t  scales[12];                 /* 16 6-bit scales, offset 32                     */
    uint16_t d;                          /* half: super-scale                              */
} edgellm_block_q3_K;                    /* 110 bytes / 256 = 3.4375 bpw                   */
_Static_assert(sizeof(edgellm_block_q3_K) == 32 + 64 + 12 + 2, "q3_K is 110 bytes");

/* Q4_K: 8 sub-blocks of 32; w = d*sc*q - dmin*m, q 4 bits, sc/m 6 bits (packing: see
 * edgellm_k_scale_min in quant_k.c). qs: each 64 elements take 32 bytes, element j in the
 * low nibble of byte j, element j+32 in its high nibble. */
typedef struct {
    uint16_t d;                          /* half: super-scale of the scales               */
    uint16_t dmin;                       /* half: super-scale of the mins                 */
    uint8_t  scales[EDGELLM_K_SCALE_SIZE]; /* 8 scales + 8 mins, 6 bits each              */
    uint8_t  qs[EDGELLM_QK_K / 2];       /* 4-bit quants                                  */
} edgellm_block_q4_K;                    /* 144 bytes / 256 = 4.5 bpw                      */
_Static_assert(sizeof(edgellm_block_q4_K) == 4 + 12 + 128, "q4_K is 144 bytes");

/* Q5_K: as Q4_K plus a 5th bit: element 64c + j (j < 32) has its high bit in bit 2c of
 * qh[j], element 64c + 32 + j in bit 2c+1. */
typedef struct {
    uint16_t d;                          /* half                                          */
    uint16_t dmin;                       /* half                                          */
    uint8_t  scales[EDGELLM_K_SCALE_SIZE]; /* as Q4_K                                      */
    uint8_t  qh[EDGELLM_QK_K / 8];       /* 5th bits                                      */
    uint8_t  qs[EDGELLM_QK_K / 2];       /* low 4 bits, as Q4_K                           */
} edgellm_block_q5_K;                    /* 176 bytes / 256 = 5.5 bpw                      */
_Static_assert(sizeof(edgellm_block_q5_K) == 4 + 12 + 32 + 128, "q5_K is 176 bytes");

/* Q6_K: 16 sub-blocks of 16; w = d*sc*(q-32), q 6 bits, sc int8.
 * Per 128-element half h: ql[64h + l] low nibble = element 128h+l, high nibble = element
 * 128h+l+64; ql[64h+32+l] low = 128h+l+32, high = 128h+l+96 (l < 32); qh[32h + l] bits
 * 0-1, 2-3, 4-5, 6-7 = high 2 bits of elements 128h + l, +32, +64, +96. */
typedef struct {
    uint8_t  ql[EDGELLM_QK_K / 2];       /* low 4 bits                                    */
    uint8_t  qh[EDGELLM_QK_K / 4];       /* high 2 bits                                   */
    int8_t   scales[EDGELLM_QK_K / 16];  /* 8-bit sub-block scales                         */
    uint16_t d;                          /* half: super-scale                              */
} edgellm_block_q6_K;                    /* 210 bytes / 256 = 6.5625 bpw                   */
_Static_assert(sizeof(edgellm_block_q6_K) == 128 + 64 + 16 + 2, "q6_K is 210 bytes");

/* Q8_K: activation side of the K-quant dot products; never stored in files. */
typedef struct {
    float    d;                          /* float (not half) scale                        */
    int8_t   qs[EDGELLM_QK_K];           /* x = q * d                                     */
    int16_t  bsums[EDGELLM_QK_K / 16];   /* sum of qs over each group of 16                */
} edgellm_block_q8_K;                    /* 292 bytes / 256 = 9.125 bpw                    */
_Static_assert(sizeof(edgellm_block_q8_K) == 4 + 256 + 32, "q8_K is 292 bytes");

/* ====================== edgellm group-wise integer formats ==========================
 *
 * One block = one group of G = 64, 128 or 256 consecutive weights of a row (the group
 * size is part of the type: I4_G128_SYM etc.). Chosen so that the existing 32-element
 * machinery applies chunk by chunk: G is a multiple of 32, 4-bit codes use the Q4_0 nibble
 * order inside each 32-element chunk, and dot products pair each chunk with one Q8_0
 * (symmetric) or Q8_1 (asymmetric: needs per-chunk activation sums) block.
 *
 *   type           fields (in order)                      bytes (G=64/128/256)  bpw
 *   I4_G*_SYM      half d;          u8 qs[G/2]            34 / 66 / 130         4.25 / 4.125 / 4.0625
 *   I4_G*_ASYM     half d; half m;  u8 qs[G/2]            36 / 68 / 132         4.5  / 4.25  / 4.125
 *   I8_G*_SYM      half d;          i8 qs[G]              66 / 130 / 258        8.25 / 8.125 / 8.0625
 *   I8_G*_ASYM     half d; half m;  u8 qs[G]              68 / 132 / 260        8.5  / 8.25  / 8.125
 *
 * Values:
 *   I4 SYM   w = (q - 8) * d, q = nibble 0..15 (offset-8, i.e. signed range -8..7, as Q4_0)
 *   I4 ASYM  w = q * d + m,   q = nibble 0..15
 *   I8 SYM   w = q * d,       q = int8, quantizer uses -127..127 (like Q8_0)
 *   I8 ASYM  w = q * d + m,   q = uint8 0..255
 * The asymmetric form is the deployment guide's zero-point quantization,
 * w = (q - z) * scale, with the zero point kept as a real offset m = -z * d (fp16), which
 * the dot product needs anyway (m * sum(x)) and which does not round z to an integer.
 */
#define EDGELLM_DEFINE_GROUP_BLOCKS(G)                                                          \
    typedef struct { uint16_t d; uint8_t qs[(G) / 2]; } edgellm_block_i4_g##G##_sym;            \
    typedef struct { uint16_t d; uint16_t m; uint8_t qs[(G) / 2]; } edgellm_block_i4_g##G##_asym; \
    typedef struct { uint16_t d; int8_t qs[G]; } edgellm_block_i8_g##G##_sym;                   \
    typedef struct { uint16_t d; uint16_t m; uint8_t qs[G]; } edgellm_block_i8_g##G##_asym;     \
    _Static_assert(sizeof(edgellm_block_i4_g##G##_sym) == 2 + (G) / 2, "i4 sym size");        \
    _Static_assert(sizeof(edgellm_block_i4_g##G##_asym) == 4 + (G) / 2, "i4 asym size");      \
    _Static_assert(sizeof(edgellm_block_i8_g##G##_sym) == 2 + (G), "i8 sym size");           \
    _Static_assert(sizeof(edgellm_block_i8_g##G##_asym) == 4 + (G), "i8 asym size");

EDGELLM_GROUP_TYPES(EDGELLM_DEFINE_GROUP_BLOCKS)

#endif
