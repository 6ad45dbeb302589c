/*
 * type_layout.h — the tensor types a file may hold and how their data is laid out: per type
 * id its name, the elements per block and the bytes per block. This is what the GGUF reader
 * and writer need to size tensor data; the tensor layer's traits table (tensor/types.h)
 * adds converters and dot products to the same rows, built from the same list.
 *
 * ggml ids 0..39: facts from ggml-org/ggml src/ggml-common.h (block structs) and
 * include/ggml.h (enum ggml_type); removed ggml ids (4, 5, 31-33, 36-38) are unknown.
 * edgellm's group-wise types (ids 1000..1011): block structs in tensor/blocks.h.
 * edgellm's stored matrix layouts (id 1012, Q4_K_R16): a whole matrix in another byte
 * order (kernels/repack.h); sized as their base type, with rows in groups of row_group.
 * Internal to the library.
 */
#ifndef EDGELLM_TYPE_LAYOUT_H
#define EDGELLM_TYPE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every ggml type edgellm knows, in id order:
 * X(id suffix of EDGELLM_TYPE_*, name, elements per block, bytes per block, block-quantized). */
#define EDGELLM_GGML_TYPE_LAYOUTS(X)          \
    X(F32,     "F32",     1,   4,   false)    \
    X(F16,     "F16",     1,   2,   false)    \
    X(Q4_0,    "Q4_0",    32,  18,  true)     \
    X(Q4_1,    "Q4_1",    32,  20,  true)     \
    X(Q5_0,    "Q5_0",    32,  22,  true)     \
    X(Q5_1,    "Q5_1",    32,  24,  true)     \
    X(Q8_0,    "Q8_0",    32,  34,  true)     \
    X(Q8_1,    "Q8_1",    32,  36,  true)     \
    X(Q2_K,    "Q2_K",    256, 84,  true)     \
    X(Q3_K,    "Q3_K",    256, 110, true)     \
    X(Q4_K,    "Q4_K",    256, 144, true)     \
    X(Q5_K,    "Q5_K",    256, 176, true)     \
    X(Q6_K,    "Q6_K",    256, 210, true)     \
    X(Q8_K,    "Q8_K",    256, 292, true)     \
    X(IQ2_XXS, "IQ2_XXS", 256, 66,  true)     \
    X(IQ2_XS,  "IQ2_XS",  256, 74,  true)     \
    X(IQ3_XXS, "IQ3_XXS", 256, 98,  true)     \
    X(IQ1_S,   "IQ1_S",   256, 50,  true)     \
    X(IQ4_NL,  "IQ4_NL",  32,  18,  true)     \
    X(IQ3_S,   "IQ3_S",   256, 110, true)     \
    X(IQ2_S,   "IQ2_S",   256, 82,  true)     \
    X(IQ4_XS,  "IQ4_XS",  256, 136, true)     \
    X(I8,      "I8",      1,   1,   false)    \
    X(I16,     "I16",     1,   2,   false)    \
    X(I32,     "I32",     1,   4,   false)    \
    X(I64,     "I64",     1,   8,   false)    \
    X(F64,     "F64",     1,   8,   false)    \
    X(IQ1_M,   "IQ1_M",   256, 56,  true)     \
    X(BF16,    "BF16",    1,   2,   false)    \
    X(TQ1_0,   "TQ1_0",   256, 54,  true)     \
    X(TQ2_0,   "TQ2_0",   256, 66,  true)     \
    X(MXFP4,   "MXFP4",   32,  17,  true)

/* Group sizes G of the group-wise types: each has I4/I8 x SYM/ASYM (EDGELLM_TYPE_I4_G64_SYM
 * ...), G elements per block, named "I4_G64_SYM" ... */
#define EDGELLM_GROUP_TYPES(X) \
    X(64) X(128) X(256)

/* Bytes of one group block, by bits (4/8), asymmetry and group size. */
#define EDGELLM_GROUP_BLOCK_BYTES(bits, asym, G) (((asym) ? 4 : 2) + ((bits) == 4 ? (G) / 2 : (G)))

typedef struct {
    const char *name;               /* "Q4_0"                                         */
    int         blck_size;          /* elements per block (1 for F32/F16/BF16)        */
    size_t      type_size;          /* bytes per block                                */
    bool        is_quantized;       /* block-quantized                                */
    int         row_group;          /* > 1: a matrix layout whose row count must be a
                                       multiple of it (Q4_K_R16: 16); else 0            */
} edgellm_type_layout;

/* The layout of a type id; NULL for an id that is neither a ggml type nor an edgellm type.
 * Static data: thread-safe. */
const edgellm_type_layout *edgellm_type_layout_get(int type);

/* Bytes of a row of ne0 elements; 0 when ne0 is not a multiple of the block size or the
 * type is unknown. */
size_t edgellm_type_row_size(int type, int64_t ne0);

/* The block type whose blocks a stored matrix layout holds (Q4_K for Q4_K_R16): the same
 * bytes per block and values; type itself for every other type. */
int edgellm_type_stored_base(int type);

/* Parse a type name case-insensitively ("q4_0", "F16", "bf16"); -1 when unknown. */
int edgellm_type_from_name(const char *name);

#endif
