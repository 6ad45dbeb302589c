/*
 * shapes.c — the architecture shapes `edgellm synth --shape` can write (edgellm_shape_*,
 * edgellm_tools.h), so that speed and memory can be measured on a random-weight model of a
 * real model's exact size without downloading it. They are the entries of the one model
 * catalogue (model_catalog.c) that edgellm runs (llama, qwen2) and whose rope_theta and
 * rms_norm_eps are recorded; tests/test_synth_bench.c checks their parameter totals
 * against the published sizes.
 */
#include "plan.h"
#include <ctype.h>
#include <stdio.h>

static bool synthable(const edgellm_catalog_model *c)
{
    return c->rope_theta > 0 && c->rms_eps > 0 && (!strcmp(c->m.arch, "llama") || !strcmp(c->m.arch, "qwen2")) &&
           c->m.head_dim * c->m.n_head == c->m.n_embd;   /* synth derives head_dim from n_embd / n_head */
}

/* The catalogue entry of the i-th shape, or NULL. */
static const edgellm_catalog_model *shape_entry(int i)
{
    for (int k = 0; k < edgellm_model_catalog_n; k++)
        if (synthable(&edgellm_model_catalog[k]) && i-- == 0) return &edgellm_model_catalog[k];
    return NULL;
}

static void to_shape(const edgellm_catalog_model *c, edgellm_shape *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", c->m.name);
    snprintf(out->arch, sizeof out->arch, "%s", c->m.arch);
    out->n_layer = c->m.n_layer;
    out->n_embd = c->m.n_embd;
    out->n_head = c->m.n_head;
    out->n_head_kv = c->m.n_head_kv;
    out->n_ff = c->m.n_ff;
    out->n_vocab = c->m.n_vocab;
    out->n_ctx_train = c->m.n_ctx_train;
    out->tied = c->m.tied_embeddings;
    out->rope_theta = c->rope_theta;
    out->rms_eps = c->rms_eps;
    snprintf(out->source, sizeof out->source, "%s", c->m.source);
}

int edgellm_shape_count(void)
{
    int n = 0;
    while (shape_entry(n)) n++;
    return n;
}

edgellm_status edgellm_shape_at(int i, edgellm_shape *out)
{
    const edgellm_catalog_model *c = i >= 0 && out ? shape_entry(i) : NULL;
    if (!c) return EDGELLM_ERR_MISUSE;
    to_shape(c, out);
    return EDGELLM_OK;
}

edgellm_status edgellm_shape_find(const char *name, edgellm_shape *out, edgellm_error *err)
{
    if (!name || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "shape: NULL name or output");
    const edgellm_catalog_model *c;
    for (int i = 0; (c = shape_entry(i)); i++) {
        const char *a = name, *b = c->m.name;
        while (*a && *b && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b) {
            to_shape(c, out);
            return EDGELLM_OK;
        }
    }
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; (c = shape_entry(i)) && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", c->m.name);
    return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "unknown shape '%s' (built in: %s)", name, list);
}
