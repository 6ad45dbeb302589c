/*
 * dispatch.c — kernel choice per tensor type (contract in dispatch.h).
 *
 * Per level three tables: fast variants, one row per type (dot product, converters; a
 * NULL entry means "ask the level below", and below the lowest, the reference from the
 * traits table of src/tensor/types.c); attention per KV cache type (a type the level does
 * not list: the level below, down to the ref level's rows, which call the functions of
 * ops.h); and the level's own matrix-product tile kernels (gemm.h). Entries are looked up
 * on every call (a short scan, done once per matrix product or forward pass, not per row),
 * so traits filled in at run time are picked up too.
 *
 * Levels (lowest first): ref (the traits' kernels; attention by ops.h), scalar (portable
 * float dots), then per architecture avx2 < avx512 (x86-64) or neon < dotprod (AArch64).
 * Each has an id (edgellm_kernel_level) and says by a set of ISA bits what it needs of the
 * CPU (cpu_features.c); its name serves only to read EDGELLM_KERNELS and to print. The
 * default is the highest level the CPU runs; EDGELLM_KERNELS=ref|scalar|avx2|avx512|neon|
 * dotprod lowers it (a level the CPU lacks is capped to the best it has). A level inherits every function it does not define
 * from the levels below it; tile kernels are not inherited.
 *
 * To add a SIMD variant: write it beside its _ref twin in a file named by what it holds and
 * its ISA (src/kernels/x86/, src/kernels/arm/; listed in cmake/KernelFlags.cmake), test it
 * against the ref in tests/test_kernels_simd.c, and add a row to its level's table.
 */
#include "dispatch.h"
#include "cpu_features.h"
#include "dot_float.h"
#include "ops.h"
#include "arm/kernels_arm.h"
#include "x86/kernels_x86.h"
#include "../tensor/quant.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    int type;
    edgellm_vec_dot_fn vec_dot;        /* NULL: next level down, finally traits->vec_dot_ref */
    edgellm_from_float_fn from_float;  /* NULL: next level down, finally from_float_ref     */
    edgellm_to_float_fn to_float;      /* NULL: next level down, finally traits->to_float   */
} kernel_variant;

/* What a level or tile kernel needs of the CPU, as a set of bits (cpu_features.h). */
enum {
    ISA_AVX2 = 1u << 0, ISA_AVX512 = 1u << 1, ISA_GFNI = 1u << 2, ISA_NEON = 1u << 3, ISA_DOTPROD = 1u << 4,
    ISA_AMX = 1u << 5              /* cpu_features .amx, unless EDGELLM_AMX=0 */
};

/* The attention over a KV cache of kv_type. */
typedef struct {
    int kv_type;
    edgellm_attend_kv_fn attend;
} attend_variant;

/* A tile kernel of a level (gemm.h), for weights of `type`. */
typedef struct {
    int type;
    unsigned needs;             /* ISA bits beyond the level's (GFNI); else the next row */
    edgellm_gemm_kernel k;
} gemm_variant;

/* ---- attention: the references of ops.h and the SIMD kernels, under one signature ---- */

static void attend_f32_ref(const edgellm_attend_kernel *a, float *out, const float *q, const void *k, const void *v,
                           size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend(out, q, k, v, (int64_t)(stride / sizeof(float)), head_dim, n_pos, scale, scores, a->dot);
}

static void attend_f16_ref(const edgellm_attend_kernel *a, float *out, const float *q, const void *k, const void *v,
                           size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend_f16(out, q, k, v, (int64_t)(stride / sizeof(uint16_t)), head_dim, n_pos, scale, scores, a->dot);
}

/* Quantized rows: each dequantized into a stack row, then as attend_f32_ref. */
static void attend_quant_ref(const edgellm_attend_kernel *a, float *out, const float *q, const void *k, const void *v,
                             size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    float tmp[EDGELLM_ATTEND_QUANT_MAX_HEAD_DIM];   /* [head_dim] */
    edgellm_attend_quant(out, q, k, v, stride, head_dim, n_pos, scale, scores, a->dot, a->to_float, tmp);
}

#if defined(__x86_64__)
static void attend_f32_avx2(const edgellm_attend_kernel *a, float *out, const float *q, const void *k, const void *v,
                            size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend_avx2(out, q, k, v, (int64_t)(stride / sizeof(float)), head_dim, n_pos, scale, scores, a->dot);
}

static void attend_f16_avx2(const edgellm_attend_kernel *a, float *out, const float *q, const void *k, const void *v,
                            size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend_f16_avx2(out, q, k, v, (int64_t)(stride / sizeof(uint16_t)), head_dim, n_pos, scale, scores,
                            a->dot);
}

static void attend_f32_avx512(const edgellm_attend_kernel *a, float *out, const float *q, const void *k,
                              const void *v, size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend_avx512(out, q, k, v, (int64_t)(stride / sizeof(float)), head_dim, n_pos, scale, scores, a->dot);
}

static void attend_f16_avx512(const edgellm_attend_kernel *a, float *out, const float *q, const void *k,
                              const void *v, size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    edgellm_attend_f16_avx512(out, q, k, v, (int64_t)(stride / sizeof(uint16_t)), head_dim, n_pos, scale, scores,
                              a->dot);
}

/* The AVX-512 kernel takes head_dim a multiple of 32 up to 256; the reference the rest. */
static void attend_q8_0_avx512(const edgellm_attend_kernel *a, float *out, const float *q, const void *k,
                               const void *v, size_t stride, int head_dim, int64_t n_pos, float scale, float *scores)
{
    if (!edgellm_attend_q8_0_avx512(out, q, k, v, stride, head_dim, n_pos, scale, scores))
        attend_quant_ref(a, out, q, k, v, stride, head_dim, n_pos, scale, scores);
}
#endif

/* ---- the tables ---- */

/* Level "ref": the traits' kernels, and attention by the functions of ops.h. */
static const attend_variant ref_attend[] = {
    {EDGELLM_TYPE_F32, attend_f32_ref},
    {EDGELLM_TYPE_F16, attend_f16_ref},
    {EDGELLM_TYPE_Q8_0, attend_quant_ref},
};

static const kernel_variant portable_variants[] = {
    {EDGELLM_TYPE_F32, edgellm_dot_f32_fast, NULL, NULL},
    {EDGELLM_TYPE_F16, edgellm_dot_f16_fast, NULL, NULL},
    {EDGELLM_TYPE_BF16, edgellm_dot_bf16_fast, NULL, NULL},
};

#if defined(__x86_64__)
#define GROUP_AVX2_ROWS(G)                                                                              \
    {EDGELLM_TYPE_I4_G##G##_SYM, edgellm_dot_i4_g##G##_sym_q8_0_avx2, NULL, NULL},                       \
    {EDGELLM_TYPE_I4_G##G##_ASYM, edgellm_dot_i4_g##G##_asym_q8_1_avx2, NULL, NULL},                     \
    {EDGELLM_TYPE_I8_G##G##_SYM, edgellm_dot_i8_g##G##_sym_q8_0_avx2, NULL, NULL},                       \
    {EDGELLM_TYPE_I8_G##G##_ASYM, edgellm_dot_i8_g##G##_asym_q8_1_avx2, NULL, NULL},
static const kernel_variant avx2_variants[] = {
    {EDGELLM_TYPE_F32, edgellm_dot_f32_avx2, NULL, NULL},
    {EDGELLM_TYPE_F16, edgellm_dot_f16_avx2, edgellm_f16_from_float_avx2, NULL},
    {EDGELLM_TYPE_BF16, edgellm_dot_bf16_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q4_1, edgellm_dot_q4_1_q8_1_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q5_0, edgellm_dot_q5_0_q8_0_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q5_1, edgellm_dot_q5_1_q8_1_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_avx2, edgellm_quant_q8_0_avx2, NULL},
    {EDGELLM_TYPE_Q8_1, NULL, edgellm_quant_q8_1_avx2, NULL},
    {EDGELLM_TYPE_Q2_K, edgellm_dot_q2_K_q8_K_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q3_K, edgellm_dot_q3_K_q8_K_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q5_K, edgellm_dot_q5_K_q8_K_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_avx2, NULL, NULL},
    {EDGELLM_TYPE_Q8_K, NULL, edgellm_quant_q8_K_avx2, NULL},
    EDGELLM_GROUP_TYPES(GROUP_AVX2_ROWS)
};
static const kernel_variant avx512_variants[] = {
    {EDGELLM_TYPE_F16, edgellm_dot_f16_avx512, NULL, NULL},
    {EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_avx512, NULL, NULL},
    {EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_avx512, NULL, NULL},
    {EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_avx512, NULL, NULL},
    {EDGELLM_TYPE_Q5_K, edgellm_dot_q5_K_q8_K_avx512, NULL, NULL},
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_avx512, NULL, NULL},
};

static const attend_variant avx2_attend[] = {
    {EDGELLM_TYPE_F32, attend_f32_avx2},
    {EDGELLM_TYPE_F16, attend_f16_avx2},
};
/* The avx512 level's F32 dot stays avx2's: its F32 attention computes with that dot. */
static const attend_variant avx512_attend[] = {
    {EDGELLM_TYPE_F32, attend_f32_avx512},
    {EDGELLM_TYPE_F16, attend_f16_avx512},
    {EDGELLM_TYPE_Q8_0, attend_q8_0_avx512},
};

static const gemm_variant avx2_gemm[] = {
    {EDGELLM_TYPE_Q4_0, 0, {edgellm_gemm_prep_q4_0_avx2, edgellm_gemm_q4_0_avx2, EDGELLM_GEMM_Q8_0_XG, 32}},
    {EDGELLM_TYPE_Q8_0, 0, {edgellm_gemm_prep_q8_0_avx2, edgellm_gemm_q8_0_avx2, EDGELLM_GEMM_Q8_0_XG, 32}},
};
static const gemm_variant avx512_gemm[] = {
    {EDGELLM_TYPE_Q4_0, 0, {edgellm_gemm_prep_q4_0_avx512, edgellm_gemm_q4_0_avx512, EDGELLM_GEMM_Q8_0_XG, 32}},
    {EDGELLM_TYPE_Q8_0, 0, {edgellm_gemm_prep_q8_0_avx512, edgellm_gemm_q8_0_avx512, EDGELLM_GEMM_Q8_0_XG, 32}},
    {EDGELLM_TYPE_Q4_K, ISA_GFNI, {NULL, edgellm_gemm_q4_K_avx512_gfni, 0, 256}},
    {EDGELLM_TYPE_Q6_K, ISA_GFNI, {NULL, edgellm_gemm_q6_K_avx512_gfni, 0, 256}},
    {EDGELLM_TYPE_Q5_K, ISA_GFNI, {NULL, edgellm_gemm_q5_K_avx512_gfni, 0, 256}},
    {EDGELLM_TYPE_Q4_K, 0, {NULL, edgellm_gemm_q4_K_avx512, 0, 256}},
    {EDGELLM_TYPE_F16, 0, {NULL, edgellm_gemm_f16_avx512, 0, 1}},
    {EDGELLM_TYPE_Q5_K, 0, {NULL, edgellm_gemm_q5_K_avx512, 0, 256}},
    {EDGELLM_TYPE_Q6_K, 0, {NULL, edgellm_gemm_q6_K_avx512, 0, 256}},
};
#endif

#if defined(__aarch64__)
static const kernel_variant neon_variants[] = {
    {EDGELLM_TYPE_F32, edgellm_dot_f32_neon, NULL, NULL},
    {EDGELLM_TYPE_F16, edgellm_dot_f16_neon, NULL, NULL},
    {EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_neon, NULL, NULL},
    {EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_neon, edgellm_quant_q8_0_neon, NULL},
    {EDGELLM_TYPE_Q8_1, NULL, edgellm_quant_q8_1_neon, NULL},
    {EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_neon, NULL, NULL},
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_neon, NULL, NULL},
    {EDGELLM_TYPE_Q8_K, NULL, edgellm_quant_q8_K_neon, NULL},
};
static const gemm_variant neon_gemm[] = {
    {EDGELLM_TYPE_Q4_K, 0, {NULL, edgellm_gemm_q4_K_neon, 0, 256}},
    {EDGELLM_TYPE_Q6_K, 0, {NULL, edgellm_gemm_q6_K_neon, 0, 256}},
};
static const kernel_variant dotprod_variants[] = {
    {EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_dotprod, NULL, NULL},
};
static const gemm_variant dotprod_gemm[] = {
    {EDGELLM_TYPE_Q4_0, 0, {NULL, edgellm_gemm_q4_0_dotprod, 0, 32}},
    {EDGELLM_TYPE_Q8_0, 0, {NULL, edgellm_gemm_q8_0_dotprod, 0, 32}},
    {EDGELLM_TYPE_Q4_K, 0, {NULL, edgellm_gemm_q4_K_dotprod, 0, 256}},
    {EDGELLM_TYPE_Q6_K, 0, {NULL, edgellm_gemm_q6_K_dotprod, 0, 256}},
};
#endif

/* Load-time repacked layouts (repack.h), per level; preferred first. */
typedef struct {
    edgellm_kernel_level level;
    unsigned needs;             /* ISA bits beyond the level's                        */
    const edgellm_repack *r;
    const char *kernel;         /* how its kernel differs, for --version (NULL: no note) */
} repack_variant;
/* Q4_K and Q6_K at avx512: q4_K_x16 and q6_K_x16 (16 rows as lanes, the blocks
 * x86_q4_K_x16_step and x86_q6_K_x16_step read); with AMX the same q4_K_x16 blocks, read
 * by the tile unit from 16 tokens (gemm_k_amx.c). A stored q4_K_r16 matrix has no kernel
 * any more and is unpacked into plain rows at load. */
#if defined(__x86_64__)
static const edgellm_repack q4_K_x16_amx = EDGELLM_REPACK_Q4_K_X16(edgellm_gemm_q4_K_x16_amx);
static const edgellm_repack q4_K_x16_avx512_gfni = EDGELLM_REPACK_Q4_K_X16(edgellm_gemm_q4_K_x16_avx512_gfni);
static const edgellm_repack q4_K_x16_avx512 = EDGELLM_REPACK_Q4_K_X16(edgellm_gemm_q4_K_x16_avx512);
static const edgellm_repack q6_K_x16_avx512_gfni = EDGELLM_REPACK_Q6_K_X16(edgellm_gemm_q6_K_x16_avx512_gfni);
static const edgellm_repack q6_K_x16_avx512 = EDGELLM_REPACK_Q6_K_X16(edgellm_gemm_q6_K_x16_avx512);
static const repack_variant repacks[] = {
    {EDGELLM_KERNELS_AVX512, ISA_GFNI | ISA_AMX, &q4_K_x16_amx, "AMX from 16 tokens"},
    {EDGELLM_KERNELS_AVX512, ISA_GFNI, &q4_K_x16_avx512_gfni, NULL},
    {EDGELLM_KERNELS_AVX512, 0, &q4_K_x16_avx512, NULL},
    {EDGELLM_KERNELS_AVX512, ISA_GFNI, &q6_K_x16_avx512_gfni, NULL},
    {EDGELLM_KERNELS_AVX512, 0, &q6_K_x16_avx512, NULL},
};
#else
static const repack_variant repacks[1] = {{EDGELLM_KERNELS_REF, 0, NULL, NULL}};
#endif
#define N_REPACKS (sizeof repacks / sizeof repacks[0])

/* Kernel levels, lowest first: a level falls back to the ones below it, per type and per
 * function. Level 0 ("ref") is the traits' reference kernels alone. */
typedef struct {
    edgellm_kernel_level id;
    const char *name;
    unsigned needs;             /* ISA bits the CPU must have                        */
    const kernel_variant *table;
    size_t n;
    const attend_variant *attend;
    size_t n_attend;
    const gemm_variant *gemm;   /* the level's own tile kernels, preferred first      */
    size_t n_gemm;
} kernel_level;

#define ROWS(T) T, sizeof T / sizeof T[0]
#define NONE NULL, 0
static const kernel_level levels[] = {
    {EDGELLM_KERNELS_REF, "ref", 0, NONE, ROWS(ref_attend), NONE},
    {EDGELLM_KERNELS_SCALAR, "scalar", 0, ROWS(portable_variants), NONE, NONE},
#if defined(__x86_64__)
    {EDGELLM_KERNELS_AVX2, "avx2", ISA_AVX2, ROWS(avx2_variants), ROWS(avx2_attend), ROWS(avx2_gemm)},
    {EDGELLM_KERNELS_AVX512, "avx512", ISA_AVX512, ROWS(avx512_variants), ROWS(avx512_attend), ROWS(avx512_gemm)},
#elif defined(__aarch64__)
    {EDGELLM_KERNELS_NEON, "neon", ISA_NEON, ROWS(neon_variants), NONE, ROWS(neon_gemm)},
    {EDGELLM_KERNELS_DOTPROD, "dotprod", ISA_NEON | ISA_DOTPROD, ROWS(dotprod_variants), NONE, ROWS(dotprod_gemm)},
#endif
};
#define N_LEVELS ((int)(sizeof levels / sizeof levels[0]))

static size_t decode_prefetch;  /* edgellm_kernels_decode_prefetch                   */
static bool prefetch_threads;   /* ... also when several threads share a product    */
static unsigned cpu_isa;        /* ISA bits of this CPU                              */
static int best_level;          /* highest level this CPU runs                       */
static int default_level;       /* best_level, or what EDGELLM_KERNELS asked for      */
static atomic_int active_level;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static bool cpu_has(unsigned needs) { return (needs & ~cpu_isa) == 0; }

/* The index of a level named by the user (EDGELLM_KERNELS, edgellm_kernels_force), any
 * case, "portable" for "scalar"; -1 when none. */
static int level_index(const char *name)
{
    if (!strcasecmp(name, "portable")) name = "scalar";
    for (int i = 0; i < N_LEVELS; i++)
        if (!strcasecmp(levels[i].name, name)) return i;
    return -1;
}

/* Detect the CPU and read EDGELLM_KERNELS once. A level above what the CPU runs is
 * capped to the best one it runs; an unknown name is ignored. */
static void pick_variants(void)
{
    const edgellm_cpu_features *f = edgellm_cpu_get_features();
    cpu_isa = (f->avx2 ? ISA_AVX2 : 0u) | (f->avx512 ? ISA_AVX512 : 0u) | (f->gfni ? ISA_GFNI : 0u) |
              (f->neon ? ISA_NEON : 0u) | (f->dotprod ? ISA_DOTPROD : 0u);
    const char *amx = getenv("EDGELLM_AMX");
    if (f->amx && !(amx && !strcmp(amx, "0"))) cpu_isa |= ISA_AMX;
    best_level = 1;
    for (int i = 2; i < N_LEVELS && cpu_has(levels[i].needs); i++) best_level = i;
    default_level = best_level;
    const char *env = getenv("EDGELLM_KERNELS");
    const int want = env ? level_index(env) : -1;
    if (want >= 0) default_level = EDGELLM_MIN(want, best_level);
    atomic_store(&active_level, default_level);
    /* Zen 4 and Zen 5: 32 Q4_0 groups, 4 q4_K_x16 blocks; Zen 5 with any thread count;
     * Intel with AVX-512 (measured on a Sapphire Rapids-class VM) with any thread count */
    const bool zen45 = f->amd && (f->family == 0x19 || f->family == 0x1a);
    decode_prefetch = f->avx512 && (zen45 || f->intel) ? 9216 : 0;
    prefetch_threads = (f->amd && f->family == 0x1a) || f->intel;
    const char *pf = getenv("EDGELLM_PREFETCH");
    if (pf && *pf) (void)edgellm_kernels_parse_prefetch(pf, &decode_prefetch);   /* empty: as unset */
    const char *pt = getenv("EDGELLM_PREFETCH_THREADS");
    if (pt && (!strcmp(pt, "0") || !strcmp(pt, "1"))) prefetch_threads = pt[0] == '1';
}

bool edgellm_kernels_parse_prefetch(const char *s, size_t *bytes)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s)) return false;
    while (s[0] == '0' && s[1]) s++;               /* leading zeros: "00001024" is 1024 */
    if (strlen(s) > 7) return false;
    const long v = strtol(s, NULL, 10);
    if (v > 1048576) return false;
    *bytes = (size_t)v;
    return true;
}

size_t edgellm_kernels_decode_prefetch(int nth)
{
    pthread_once(&init_once, pick_variants);
    return nth <= 1 || prefetch_threads ? decode_prefetch : 0;
}

enum { FN_VEC_DOT, FN_FROM_FLOAT, FN_TO_FLOAT };

static bool has_fn(const kernel_variant *v, int which)
{
    return which == FN_VEC_DOT ? v->vec_dot != NULL : which == FN_FROM_FLOAT ? v->from_float != NULL : v->to_float != NULL;
}

/* The row of the highest level, from the active one down, that defines function `which`
 * for `type`; NULL when only the reference exists. */
static const kernel_variant *find_variant(int type, int which)
{
    pthread_once(&init_once, pick_variants);
    for (int l = atomic_load(&active_level); l >= 1; l--)
        for (size_t i = 0; i < levels[l].n; i++)
            if (levels[l].table[i].type == type && has_fn(&levels[l].table[i], which)) return &levels[l].table[i];
    return NULL;
}

edgellm_vec_dot_fn edgellm_kernels_vec_dot(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type, FN_VEC_DOT);
    return v ? v->vec_dot : t->vec_dot_ref;
}

edgellm_from_float_fn edgellm_kernels_from_float(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type, FN_FROM_FLOAT);
    return v ? v->from_float : t->from_float_ref;
}

edgellm_to_float_fn edgellm_kernels_to_float(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type, FN_TO_FLOAT);
    return v ? v->to_float : t->to_float;
}

bool edgellm_kernels_can_matmul(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t || !t->computable) return false;
    if (!edgellm_kernels_vec_dot(type) || !edgellm_kernels_to_float(type)) return false;
    if (t->vec_dot_type != EDGELLM_TYPE_F32 && !edgellm_kernels_from_float(t->vec_dot_type)) return false;
    return true;
}

const edgellm_gemm_kernel *edgellm_kernels_gemm(int type, int64_t cols)
{
    pthread_once(&init_once, pick_variants);
    const kernel_level *L = &levels[atomic_load(&active_level)];
    for (size_t i = 0; i < L->n_gemm; i++) {
        const gemm_variant *g = &L->gemm[i];
        if (g->type == type && cols % g->k.block == 0 && cpu_has(g->needs)) return &g->k;
    }
    return NULL;
}

size_t edgellm_kernels_gemm_packed_bytes(int type, int64_t cols)
{
    size_t best = 0;
    for (int l = 0; l < N_LEVELS; l++)
        for (size_t i = 0; i < levels[l].n_gemm; i++) {
            const edgellm_gemm_kernel *k = &levels[l].gemm[i].k;
            if (levels[l].gemm[i].type != type || cols % k->block || !k->group_bytes) continue;
            size_t bytes;
            if (!edgellm_mul_size((size_t)((cols / k->block + 15) / 16), k->group_bytes, &bytes)) return SIZE_MAX;
            best = EDGELLM_MAX(best, bytes);
        }
    return best;
}

edgellm_attend_kernel edgellm_kernels_attend(int kv_type)
{
    edgellm_attend_kernel a = {0};
    const edgellm_type_traits *t = edgellm_type_get_traits(kv_type);
    if (!t) return a;
    pthread_once(&init_once, pick_variants);
    for (int l = atomic_load(&active_level); l >= 0 && !a.run; l--)
        for (size_t i = 0; i < levels[l].n_attend && !a.run; i++)
            if (levels[l].attend[i].kv_type == kv_type) a.run = levels[l].attend[i].attend;
    if (!a.run) return a;
    a.dot = edgellm_kernels_vec_dot(t->vec_dot_type == EDGELLM_TYPE_F32 ? kv_type : EDGELLM_TYPE_F32);
    a.to_float = edgellm_kernels_to_float(kv_type);
    return a;
}

void edgellm_kernels_set_ref(bool ref)
{
    pthread_once(&init_once, pick_variants);
    atomic_store(&active_level, ref ? 0 : default_level);
}

bool edgellm_kernels_force(const char *name)
{
    pthread_once(&init_once, pick_variants);
    if (!name || !strcasecmp(name, "auto")) {
        atomic_store(&active_level, default_level);
        return true;
    }
    const int l = level_index(name);
    if (l < 0 || l > best_level) return false;
    atomic_store(&active_level, l);
    return true;
}

const char *edgellm_kernels_level_name(const char *name)
{
    const int i = name ? level_index(name) : -1;
    return i >= 0 ? levels[i].name : NULL;
}

const char *edgellm_kernels_name(void)
{
    pthread_once(&init_once, pick_variants);
    return levels[atomic_load(&active_level)].name;
}

edgellm_kernel_level edgellm_kernels_level(void)
{
    pthread_once(&init_once, pick_variants);
    return levels[atomic_load(&active_level)].id;
}

/* On by default wherever the active level has a layout for the type (repack_of_level);
 * off with EDGELLM_REPACK=0 (the CLI's --no-repack) or edgellm_kernels_set_repack(false). */
static atomic_int repack_mode = -1;   /* -1: the environment decides; 0 off; 1 on */

void edgellm_kernels_set_repack(bool on) { atomic_store(&repack_mode, on ? 1 : 0); }

static bool repack_enabled(void)
{
    const int m = atomic_load(&repack_mode);
    if (m >= 0) return m == 1;
    const char *e = getenv("EDGELLM_REPACK");
    return !(e && !strcmp(e, "0"));
}

/* The first variant of the active level this CPU runs for rows of cols elements whose
 * type (stored = false) or stored type (true) is `type`, enabled or not. */
static const edgellm_repack *repack_of_level(int type, bool stored, int64_t cols)
{
    pthread_once(&init_once, pick_variants);
    const edgellm_kernel_level id = levels[atomic_load(&active_level)].id;
    for (size_t i = 0; i < N_REPACKS; i++) {
        const repack_variant *v = &repacks[i];
        if (v->r && v->level == id && (stored ? v->r->stored_type : v->r->type) == type && cpu_has(v->needs) &&
            cols > 0 && cols % v->r->gemm.block == 0 && cols <= EDGELLM_GEMM_R16_MAX_COLS)
            return v->r;
    }
    return NULL;
}

const edgellm_repack *edgellm_kernels_repack(int type, int64_t cols)
{
    return repack_enabled() ? repack_of_level(type, false, cols) : NULL;
}

const edgellm_repack *edgellm_kernels_layout(int stored_type, int64_t cols)
{
    return repack_of_level(stored_type, true, cols);
}

bool edgellm_kernels_repack_usable(const edgellm_repack *r)
{
    if (!r) return false;
    pthread_once(&init_once, pick_variants);
    const edgellm_kernel_level id = levels[atomic_load(&active_level)].id;
    for (size_t i = 0; i < N_REPACKS; i++)
        if (repacks[i].r == r) return repacks[i].level == id && cpu_has(repacks[i].needs);
    return false;
}

const char *edgellm_kernels_repack_describe(char *buf, size_t n)
{
    /* every type with a layout at this level, in the order of repacks[] */
    size_t o = 0;
    if (n) buf[0] = 0;
    for (size_t i = 0; i < N_REPACKS; i++) {
        const edgellm_repack *r = repacks[i].r ? repack_of_level(repacks[i].r->type, false, EDGELLM_QK_K) : NULL;
        if (!r || r != repacks[i].r) continue;      /* the type's layout at this level, once */
        if (!repack_enabled()) {
            snprintf(buf, n, "off");
            return buf;
        }
        const int w = snprintf(buf + o, n > o ? n - o : 0, "%s%s for %s%s%s%s", o ? ", " : "", r->name,
                               edgellm_type_name(r->type), repacks[i].kernel ? " (" : "",
                               repacks[i].kernel ? repacks[i].kernel : "", repacks[i].kernel ? ")" : "");
        if (w > 0) o += (size_t)w;
    }
    if (!o) snprintf(buf, n, "none at level %s", edgellm_kernels_name());
    return buf;
}
