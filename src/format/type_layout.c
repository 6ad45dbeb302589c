/* type_layout.c — the layout table of type_layout.h, and the lookups that need only the
 * layout: row sizes, names and parsing of names. */
#include "type_layout.h"
#include "../common/common.h"
#include <ctype.h>

#define GGML_ROW(ID, NAME, BLK, SZ, QUANT) [EDGELLM_TYPE_##ID] = { NAME, BLK, SZ, QUANT },
static const edgellm_type_layout ggml_layouts[EDGELLM_TYPE_GGML_COUNT] = {
    EDGELLM_GGML_TYPE_LAYOUTS(GGML_ROW)
};

/* Group-wise types and stored layouts, indexed by id - 1000. */
#define EDGELLM_N_OWN_TYPES 13
#define GROUP_ROW(ID, NAME, BITS, ASYM, G) [ID - 1000] = { NAME, G, EDGELLM_GROUP_BLOCK_BYTES(BITS, ASYM, G), true }
#define GROUP_ROWS(G)                                                       \
    GROUP_ROW(EDGELLM_TYPE_I4_G##G##_SYM, "I4_G" #G "_SYM", 4, 0, G),      \
    GROUP_ROW(EDGELLM_TYPE_I4_G##G##_ASYM, "I4_G" #G "_ASYM", 4, 1, G),    \
    GROUP_ROW(EDGELLM_TYPE_I8_G##G##_SYM, "I8_G" #G "_SYM", 8, 0, G),      \
    GROUP_ROW(EDGELLM_TYPE_I8_G##G##_ASYM, "I8_G" #G "_ASYM", 8, 1, G),
static const edgellm_type_layout own_layouts[EDGELLM_N_OWN_TYPES] = {
    EDGELLM_GROUP_TYPES(GROUP_ROWS)
    [EDGELLM_TYPE_Q4_K_R16 - 1000] = { "Q4_K_R16", 256, 144, true, 16 },
};

const edgellm_type_layout *edgellm_type_layout_get(int type)
{
    const edgellm_type_layout *l = NULL;
    if (type >= 0 && type < EDGELLM_TYPE_GGML_COUNT) l = &ggml_layouts[type];
    else if (type >= 1000 && type < 1000 + EDGELLM_N_OWN_TYPES) l = &own_layouts[type - 1000];
    return l && l->name ? l : NULL;
}

size_t edgellm_type_row_size(int type, int64_t ne0)
{
    const edgellm_type_layout *t = edgellm_type_layout_get(type);
    if (!t || ne0 < 0 || ne0 % t->blck_size != 0) return 0;
    uint64_t r;
    if (!edgellm_mul_u64((uint64_t)(ne0 / t->blck_size), t->type_size, &r)) return 0;
    return (size_t)r;
}

int edgellm_type_stored_base(int type) { return type == EDGELLM_TYPE_Q4_K_R16 ? EDGELLM_TYPE_Q4_K : type; }

const char *edgellm_type_name(int type)
{
    const edgellm_type_layout *t = edgellm_type_layout_get(type);
    return t ? t->name : "?";
}

int edgellm_type_from_name(const char *name)
{
    for (int i = 0; i < EDGELLM_TYPE_GGML_COUNT + EDGELLM_N_OWN_TYPES; i++) {
        int id = i < EDGELLM_TYPE_GGML_COUNT ? i : 1000 + (i - EDGELLM_TYPE_GGML_COUNT);
        const edgellm_type_layout *t = edgellm_type_layout_get(id);
        if (!t) continue;
        const char *a = t->name, *b = name;
        while (*a && *b && toupper((unsigned char)*a) == toupper((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return id;
    }
    return -1;
}
