/* quant_names.c — names of quantization types and schemes for the tools' callers
 * (edgellm_tools.h: edgellm_quantize_scheme, edgellm_quantize_type_from_name), and the one
 * rule for which types an output or embedding override may name. */
#include "quantize.h"
#include "../tensor/types.h"

bool edgellm_quant_type_writable(int type)
{
    const edgellm_type_traits *t = type >= 0 ? edgellm_type_get_traits(type) : NULL;
    return t && t->from_float_ref && t->to_float &&
           (t->computable || type == EDGELLM_TYPE_F32 || type == EDGELLM_TYPE_F16 || type == EDGELLM_TYPE_BF16);
}

int edgellm_quantize_type_from_name(const char *name)
{
    const int t = name ? edgellm_type_from_name(name) : -1;
    return t >= 0 && edgellm_quant_type_writable(t) ? t : -1;
}

edgellm_status edgellm_quantize_scheme(const char *type, int group, int asym, edgellm_quant_scheme_info *out,
                                       edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_quantize_scheme: out is NULL");
    memset(out, 0, sizeof *out);
    edgellm_quant_scheme sc;
    const edgellm_status rc = edgellm_quant_scheme_parse(type, group, asym, &sc, err);
    if (rc != EDGELLM_OK) return rc;
    snprintf(out->name, sizeof out->name, "%s", sc.name);
    snprintf(out->label, sizeof out->label, "%s", sc.edgellm_only ? sc.label : "");
    out->base_type = sc.base_type;
    out->edgellm_only = sc.edgellm_only;
    return EDGELLM_OK;
}
