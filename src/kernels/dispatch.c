/*
 * dispatch.c — kernel choice per tensor type (contract in dispatch.h).
 *
 * One table of fast variants per level, one row per type; a NULL entry means "ask the
 * level below", and below the lowest, the reference from the traits table
 * (src/tensor/types.c). Entries are looked up on every call (a short scan, done once per
 * matrix product, not per row), so traits filled in at run time are picked up too.
 *
 * Levels (lowest first): ref (traits only), scalar (portable float dots), then per
 * architecture avx2 < avx512 (x86-64) or neon < dotprod (AArch64). The default is the
 * highest level the CPU runs (cpu_features.c); EDGELLM_KERNELS=ref|scalar|avx2|avx512|
 * neon|dotprod lowers it (a level the CPU lacks is capped to the best it has). A level
 * inherits every function it does not define from the levels below it.
 *
 * To add a SIMD variant: write it beside its _ref twin (src/kernels/x86/, src/kernels/arm/),
 * test it against the ref in tests/test_kernels_simd.c, and add a row to its level's table.
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
#include <stdlib.h>
#include <strings.h>

typedef struct {
    int type;
    edgellm_vec_dot_fn vec_dot;        /* NULL: next level down, finally traits->vec_dot_ref */
    edgellm_from_float_fn from_float;  /* NULL: next level down, finally from_float_ref     */
    edgellm_to_float_fn to_float;      /* NULL: next level down, finally traits->to_float   */
} kernel_variant;

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
    {EDGELLM_TYPE_F16, edgellm_dot_f16_avx2, NULL, NULL},
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
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_avx512, NULL, NULL},
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
static const kernel_variant dotprod_variants[] = {
    {EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_dotprod, NULL, NULL},
    {EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_dotprod, NULL, NULL},
};
#endif

/* Kernel levels, lowest first: a level falls back to the ones below it, per type and per
 * function. Level 0 ("ref") is the traits' reference kernels alone. */
typedef struct {
    const char *name;
    const kernel_variant *table;
    size_t n;
} kernel_level;

#define LEVEL(NAME, T) {NAME, T, sizeof T / sizeof T[0]}
static const kernel_level levels[] = {
    {"ref", NULL, 0},
    LEVEL("scalar", portable_variants),
#if defined(__x86_64__)
    LEVEL("avx2", avx2_variants),
    LEVEL("avx512", avx512_variants),
#elif defined(__aarch64__)
    LEVEL("neon", neon_variants),
    LEVEL("dotprod", dotprod_variants),
#endif
};
#define N_LEVELS ((int)(sizeof levels / sizeof levels[0]))

static size_t decode_prefetch;  /* edgellm_kernels_decode_prefetch                   */
static int best_level;          /* highest level this CPU runs                       */
static int default_level;       /* best_level, or what EDGELLM_KERNELS asked for      */
static atomic_int active_level;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static bool level_supported(int i)
{
    const edgellm_cpu_features *f = edgellm_cpu_get_features();
    const char *name = levels[i].name;
    if (!strcmp(name, "avx2")) return f->avx2;
    if (!strcmp(name, "avx512")) return f->avx512;
    if (!strcmp(name, "neon")) return f->neon;
    if (!strcmp(name, "dotprod")) return f->neon && f->dotprod;
    return true;
}

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
    best_level = 1;
    for (int i = 2; i < N_LEVELS && level_supported(i); i++) best_level = i;
    default_level = best_level;
    const char *env = getenv("EDGELLM_KERNELS");
    const int want = env ? level_index(env) : -1;
    if (want >= 0) default_level = EDGELLM_MIN(want, best_level);
    atomic_store(&active_level, default_level);
    const edgellm_cpu_features *f = edgellm_cpu_get_features();
    decode_prefetch = f->amd && f->family == 0x19 && f->avx512 ? 9216 : 0;   /* Zen 4: 32 Q4_0 groups */
    const char *pf = getenv("EDGELLM_PREFETCH");
    if (pf && *pf) (void)edgellm_kernels_parse_prefetch(pf, &decode_prefetch);   /* empty: as unset */
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

size_t edgellm_kernels_decode_prefetch(void)
{
    pthread_once(&init_once, pick_variants);
    return decode_prefetch;
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

void edgellm_kernels_set_ref(bool ref)
{
    pthread_once(&init_once, pick_variants);
    atomic_store(&active_level, ref ? 0 : default_level);
}

bool edgellm_kernels_force(const char *name)
{
    pthread_once(&init_once, pick_variants);
    if (!name || !strcmp(name, "auto")) {
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

#if defined(__x86_64__)
/* The attention kernels of attend_avx2.c serve the avx2 and avx512 levels (whose F32 dot
 * is avx2's). */
static bool attend_avx2_level(void)
{
    const char *l = edgellm_kernels_name();
    return !strcmp(l, "avx2") || !strcmp(l, "avx512");
}
#endif

edgellm_attend_fn edgellm_kernels_attend_f32(void)
{
#if defined(__x86_64__)
    if (!strcmp(edgellm_kernels_name(), "avx512")) return edgellm_attend_avx512;
    if (attend_avx2_level()) return edgellm_attend_avx2;
#endif
    return edgellm_attend;
}

edgellm_attend_q8_0_fn edgellm_kernels_attend_q8_0(void)
{
#if defined(__x86_64__)
    if (!strcmp(edgellm_kernels_name(), "avx512")) return edgellm_attend_q8_0_avx512;
#endif
    return NULL;
}

edgellm_attend_f16_fn edgellm_kernels_attend_f16(void)
{
#if defined(__x86_64__)
    if (!strcmp(edgellm_kernels_name(), "avx512")) return edgellm_attend_f16_avx512;
    if (attend_avx2_level()) return edgellm_attend_f16_avx2;
#endif
    return edgellm_attend_f16;
}
