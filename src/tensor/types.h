/*
 * types.h — the traits table of tensor types: the layout of format/type_layout.h (name,
 * block size, bytes per block) with the converters and the reference dot product. One entry
 * per edgellm_type (ggml ids 0..39, edgellm's group-wise types at 1000+), the same ids as
 * the layout table. Layouts: ggml-org/ggml src/ggml-common.h.
 *
 * Matrix products: a weight row of type T is multiplied with an activation row that has
 * first been converted to traits(T)->vec_dot_type (F32 for float weights, Q8_0 / Q8_K for
 * quantized weights, as llama.cpp does). vec_dot(n, w_row, x_row) returns the dot product
 * of n elements as float.
 */
#ifndef EDGELLM_TYPES_H
#define EDGELLM_TYPES_H

#include "../common/common.h"
#include "../format/type_layout.h"

typedef void  (*edgellm_to_float_fn)(const void *src, float *dst, int64_t n);     /* n % blck == 0 */
typedef void  (*edgellm_from_float_fn)(const float *src, void *dst, int64_t n);   /* n % blck == 0 */
typedef float (*edgellm_vec_dot_fn)(int64_t n, const void *w, const void *x);

typedef struct {
    /* the type's edgellm_type_layout, field by field */
    const char *name;               /* "Q4_0"                                         */
    int         blck_size;          /* elements per block (1 for F32/F16/BF16)        */
    size_t      type_size;          /* bytes per block                                */
    bool        is_quantized;
    bool        computable;         /* edgellm can run matrices of this type          */
    edgellm_to_float_fn   to_float;        /* dequantize (NULL: not supported)        */
    edgellm_from_float_fn from_float_ref;  /* reference quantizer (NULL: none)         */
    int                   vec_dot_type;    /* activation type for vec_dot             */
    edgellm_vec_dot_fn    vec_dot_ref;     /* scalar reference dot (NULL: none)        */
} edgellm_type_traits;

/* NULL for an id that is neither a ggml type nor an edgellm type. Removed ggml ids
 * (4, 5, 31-33, 36-38) are unknown. */
const edgellm_type_traits *edgellm_type_get_traits(int type);

/* edgellm_type_row_size and edgellm_type_from_name: type_layout.h. */

#endif
