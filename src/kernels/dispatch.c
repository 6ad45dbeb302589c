/*
 * dispatch.c — kernel choice per tensor type (contract in dispatch.h).
 *
 * The table below lists the fast variants, one row per weight type; a NULL entry means
 * "use the reference from the traits table" (src/tensor/types.c). Entries are looked up
 * on every call (a short scan, done once per matrix product, not per row), so traits
 * filled in at run time are picked up too.
 *
 * To add a SIMD variant: write it beside its _ref twin (src/kernels/x86/, src/kernels/arm/),
 * test it against the ref on awkward lengths, and select it in pick_variants() from the
 * CPU features, e.g. `if (cpu_has_avx2()) variants[i].vec_dot = edgellm_dot_q4_0_q8_0_avx2;`.
 */
#include "dispatch.h"
#include "dot_float.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct {
    int type;
    edgellm_vec_dot_fn vec_dot;        /* NULL: traits->vec_dot_ref      */
    edgellm_from_float_fn from_float;  /* NULL: traits->from_float_ref   */
    edgellm_to_float_fn to_float;      /* NULL: traits->to_float         */
} kernel_variant;

static kernel_variant variants[] = {
    {EDGELLM_TYPE_F32, edgellm_dot_f32_fast, NULL, NULL},
    {EDGELLM_TYPE_F16, edgellm_dot_f16_fast, NULL, NULL},
    {EDGELLM_TYPE_BF16, edgellm_dot_bf16_fast, NULL, NULL},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

static const char *variant_family = "portable";
static atomic_bool force_ref;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Read the environment once; CPU-feature selection of SIMD variants goes here too. */
static void pick_variants(void)
{
    const char *env = getenv("EDGELLM_KERNELS");
    if (env && !strcmp(env, "ref")) atomic_store(&force_ref, true);
}

static const kernel_variant *find_variant(int type)
{
    pthread_once(&init_once, pick_variants);
    if (atomic_load(&force_ref)) return NULL;
    for (size_t i = 0; i < N_VARIANTS; i++)
        if (variants[i].type == type) return &variants[i];
    return NULL;
}

edgellm_vec_dot_fn edgellm_kernels_vec_dot(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type);
    return v && v->vec_dot ? v->vec_dot : t->vec_dot_ref;
}

edgellm_from_float_fn edgellm_kernels_from_float(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type);
    return v && v->from_float ? v->from_float : t->from_float_ref;
}

edgellm_to_float_fn edgellm_kernels_to_float(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t) return NULL;
    const kernel_variant *v = find_variant(type);
    return v && v->to_float ? v->to_float : t->to_float;
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
    atomic_store(&force_ref, ref);
}

const char *edgellm_kernels_name(void)
{
    pthread_once(&init_once, pick_variants);
    return atomic_load(&force_ref) ? "ref" : variant_family;
}
