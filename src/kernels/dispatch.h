/*
 * dispatch.h — the single place where edgellm picks the kernel that runs for a tensor type.
 *
 * Everything that multiplies weights (src/kernels/matmul.c) or converts them asks here; no
 * other file chooses between a reference kernel and a fast one. By default a type gets
 * the fastest registered variant (today: the portable float dots of dot_float.c for
 * F32/F16/BF16; SIMD variants are registered in dispatch.c), otherwise the traits'
 * reference (src/tensor/types.c). Environment EDGELLM_KERNELS=ref (read once) forces the
 * reference kernels everywhere; edgellm_kernels_set_ref() does the same for tests.
 * EDGELLM_KERNELS=scalar|avx2|avx512|neon|dotprod (or edgellm_kernels_force) caps the
 * SIMD level instead.
 *
 * Contract for every variant: same signature and same result as its reference within the
 * tolerance stated by its file, and a result that depends only on the inputs (not on the
 * thread, the batch it belongs to, or the alignment of the row), so that prefill and
 * decode give bit-identical logits.
 */
#ifndef EDGELLM_DISPATCH_H
#define EDGELLM_DISPATCH_H

#include "../tensor/types.h"

/* Dot product of a weight row of `type` with an activation row of
 * traits(type)->vec_dot_type. NULL when the type has no dot product. */
edgellm_vec_dot_fn edgellm_kernels_vec_dot(int type);

/* Convert float activations into `type` (used with type = a vec_dot_type). NULL when the
 * type has no converter. For F32 it is a copy (callers skip it). */
edgellm_from_float_fn edgellm_kernels_from_float(int type);

/* Dequantize/convert a row of `type` to float. NULL when unsupported. */
edgellm_to_float_fn edgellm_kernels_to_float(int type);

/* True when matrices of `type` can be multiplied: traits say computable, dot product
 * present, converter to the activation type present (unless it is F32), and to_float
 * present (embedding rows). Row lengths must also be whole blocks of the activation type:
 * check edgellm_type_row_size(vec_dot_type, ne0) != 0 per tensor. Attention uses
 * edgellm_kernels_vec_dot(EDGELLM_TYPE_F32 or _F16, the KV cache type) for q·k. */
bool edgellm_kernels_can_matmul(int type);

/* edgellm_attend (ops.h, F32 cache) for the active level: a SIMD variant whose results
 * equal edgellm_attend called with dot = edgellm_kernels_vec_dot(EDGELLM_TYPE_F32) bit for
 * bit (x86 avx2/avx512: attend_avx2.c), else edgellm_attend itself. */
edgellm_attend_fn edgellm_kernels_attend_f32(void);
/* edgellm_attend_f16 (F16 cache) for the active level: a SIMD variant with the same bits
 * (x86 avx2: the values summed 8 columns at a time; avx512: attend_avx512.c), else
 * edgellm_attend_f16. */
edgellm_attend_f16_fn edgellm_kernels_attend_f16(void);
/* A kernel for a Q8_0 cache whose results equal edgellm_attend_quant with
 * edgellm_kernels_to_float(Q8_0) and edgellm_kernels_vec_dot(F32) bit for bit (x86 avx512:
 * attend_avx512.c), or NULL: use edgellm_attend_quant. */
edgellm_attend_q8_0_fn edgellm_kernels_attend_q8_0(void);

/* Force the reference kernels (true) or go back to the default choice (false). Not
 * thread-safe against running kernels: call between operations. */
void edgellm_kernels_set_ref(bool ref);

/* Force a kernel level by name: "ref", "scalar" (alias "portable"), "avx2", "avx512"
 * (x86-64), "neon", "dotprod" (AArch64); NULL or "auto" goes back to the default (the
 * best level of this CPU, or what EDGELLM_KERNELS asked for). Returns false, changing
 * nothing, for an unknown name or a level this CPU cannot run. Not thread-safe against
 * running kernels (as edgellm_kernels_set_ref). */
bool edgellm_kernels_force(const char *name);

/* The canonical name of a kernel level of this build ("portable" -> "scalar"), or NULL when
 * name is none (EDGELLM_KERNELS ignores it then). */
const char *edgellm_kernels_level_name(const char *name);
/* Name of the active level: "ref", "scalar", "avx2", "avx512", "neon" or "dotprod". */
const char *edgellm_kernels_name(void);

/* Software prefetch of decode: how many bytes past the weights being read the avx512
 * decode tile kernels of Q4_0, Q4_K and Q6_K prefetch into L2 (PREFETCHT1, one line per
 * 64 bytes read), when one thread computes a whole matrix product of one token (matmul.c);
 * 0 = none. Default 9216 on AMD family 0x19 with AVX-512 (Zen 4), where one thread then
 * decodes a tinyllama-shape Q4_0 model ~30 % faster (README "Kernels, threads and
 * speed"); 0 elsewhere: with two threads it was slower, and on a Zen 5 a prefetch of whole
 * rows ahead was measured 10-30 % slower. EDGELLM_PREFETCH=BYTES (read once) overrides it:
 * see edgellm_kernels_parse_prefetch; an empty value or one that does not parse is
 * ignored. Kernels of other levels never prefetch. */
size_t edgellm_kernels_decode_prefetch(void);
/* Parse an EDGELLM_PREFETCH value: decimal bytes in [0, 1048576], nothing else; false
 * otherwise (*bytes unchanged). */
bool edgellm_kernels_parse_prefetch(const char *s, size_t *bytes);

#endif
