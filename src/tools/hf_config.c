/*
 * hf_config.c — config.json of a Hugging Face checkpoint (and generation_config.json):
 * the hyperparameters a GGUF file carries, read with cJSON and checked.
 *
 * Field names are transformers' (src/transformers/models/llama/configuration_llama.py,
 * models/qwen2/configuration_qwen2.py); defaults for absent fields are those classes'
 * defaults (rms_norm_eps 1e-6, hidden_act "silu", num_key_value_heads = the head count).
 *
 *   architectures[0]               LlamaForCausalLM, MistralForCausalLM -> "llama";
 *                                  Qwen2ForCausalLM -> "qwen2"
 *   hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 *   num_key_value_heads, head_dim, vocab_size, max_position_embeddings, rms_norm_eps,
 *   rope_theta, tie_word_embeddings, bos/eos/pad_token_id
 *   rope_scaling (or rope_parameters, which newer transformers write and llama.cpp reads
 *   first): {"rope_type" (or "type"): "linear" | "yarn" | "llama3" | "default", "factor",
 *   "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
 *   "extrapolation_factor", "attention_factor" (or "attn_factor"), "beta_fast", "beta_slow"}
 *
 * Refused (EDGELLM_ERR_UNSUPPORTED: edgellm's llama/qwen2 forward pass has no such thing):
 * other architectures, hidden_act other than silu, attention_bias or mlp_bias on a llama,
 * partial_rotary_factor other than 1, rope types dynamic/longrope/su, yarn parameters other
 * than the ones the loader applies (extrapolation_factor 1, beta_fast 32, beta_slow 1,
 * attention_factor 0.1 ln(factor) + 1, truncate true), a text_config (multimodal) nesting.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include <math.h>

typedef struct {
    const cJSON *root;
    const char *path;
    edgellm_error *err;
} cfg_ctx;

/* Integer key: *out untouched when absent (or null). Errors name the file and key. */
static edgellm_status get_int(const cfg_ctx *x, const cJSON *obj, const char *key, bool required, int64_t lo,
                              int64_t hi, int64_t *out)
{
    const cJSON *v = edgellm_hf_get(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"%s\" is missing", x->path, key);
        return EDGELLM_OK;
    }
    if (!edgellm_hf_json_int(v, lo, hi, out))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"%s\" must be an integer in [%lld, %lld]", x->path, key,
                            (long long)lo, (long long)hi);
    return EDGELLM_OK;
}

static edgellm_status get_num(const cfg_ctx *x, const cJSON *obj, const char *key, double lo, double hi, double *out)
{
    const cJSON *v = edgellm_hf_get(obj, key);
    if (!v || cJSON_IsNull(v)) return EDGELLM_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"%s\" must be a number in [%g, %g]", x->path, key, lo,
                            hi);
    *out = v->valuedouble;
    return EDGELLM_OK;
}

/* A token id: an integer, or a list whose first element is used (list: all into ids[]). */
static void get_ids(const cJSON *obj, const char *key, int *first, int *ids, int *n_ids, int max_ids)
{
    const cJSON *v = edgellm_hf_get(obj, key);
    int64_t x;
    if (edgellm_hf_json_int(v, 0, INT32_MAX, &x)) {
        *first = (int)x;
        if (ids && *n_ids < max_ids) ids[(*n_ids)++] = (int)x;
        return;
    }
    if (!cJSON_IsArray(v)) return;
    for (const cJSON *e = v->child; e; e = e->next)
        if (edgellm_hf_json_int(e, 0, INT32_MAX, &x)) {
            if (*first < 0) *first = (int)x;
            if (ids && *n_ids < max_ids) ids[(*n_ids)++] = (int)x;
        }
}

static void folder_name(const char *dir, char *out, size_t size)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    snprintf(out, size, "%.*s", (int)(n - b), dir + b);
}

static void read_generation_config(const char *dir, edgellm_hf_config *c)
{
    char p[4096];
    cJSON *g = NULL;
    if (!edgellm_hf_path(p, sizeof p, dir, "generation_config.json") ||
        !edgellm_hf_has_file(dir, "generation_config.json") || edgellm_hf_json_load(p, &g, NULL) != EDGELLM_OK)
        return;
    int first = -1;
    c->n_gen_eos = 0;
    get_ids(g, "eos_token_id", &first, c->gen_eos, &c->n_gen_eos, (int)(sizeof c->gen_eos / sizeof c->gen_eos[0]));
    if (c->bos_id < 0) get_ids(g, "bos_token_id", &c->bos_id, NULL, NULL, 0);
    cJSON_Delete(g);
}

static void init_config(edgellm_hf_config *c)
{
    memset(c, 0, sizeof *c);
    c->tied = -1;
    c->rms_eps = 1e-6;
    c->bos_id = c->eos_id = c->pad_id = -1;
    c->yarn_ext_factor = c->yarn_attn_factor = c->yarn_beta_fast = c->yarn_beta_slow = NAN;
}

void edgellm_hf_config_vocab_only(const char *dir, edgellm_hf_config *c)
{
    char p[4096];
    cJSON *j = NULL;
    init_config(c);
    folder_name(dir, c->name, sizeof c->name);
    if (edgellm_hf_path(p, sizeof p, dir, "config.json") && edgellm_hf_has_file(dir, "config.json") &&
        edgellm_hf_json_load(p, &j, NULL) == EDGELLM_OK) {
        int64_t v;
        if (edgellm_hf_json_int(edgellm_hf_get(j, "vocab_size"), 1, INT32_MAX, &v)) c->n_vocab = (int)v;
        get_ids(j, "bos_token_id", &c->bos_id, NULL, NULL, 0);
        get_ids(j, "eos_token_id", &c->eos_id, NULL, NULL, 0);
        get_ids(j, "pad_token_id", &c->pad_id, NULL, NULL, 0);
        cJSON_Delete(j);
    }
    read_generation_config(dir, c);
}

static edgellm_status read_rope_scaling(const cfg_ctx *x, edgellm_hf_config *c)
{
    const cJSON *rp = edgellm_hf_get(x->root, "rope_parameters");
    if (!rp || cJSON_IsNull(rp)) rp = edgellm_hf_get(x->root, "rope_scaling");
    if (!rp || cJSON_IsNull(rp)) return EDGELLM_OK;
    if (!cJSON_IsObject(rp))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"rope_scaling\" must be an object or null", x->path);
    edgellm_status rc;
    if (c->rope_theta == 0 && (rc = get_num(x, rp, "rope_theta", 1e-6, 1e12, &c->rope_theta))) return rc;
    const cJSON *t = edgellm_hf_get(rp, "rope_type");
    if (!cJSON_IsString(t)) t = edgellm_hf_get(rp, "type");
    if (!cJSON_IsString(t) || !strcmp(t->valuestring, "default")) return EDGELLM_OK;
    const char *type = t->valuestring;
    if (strcmp(type, "linear") && strcmp(type, "yarn") && strcmp(type, "llama3"))
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: rope_scaling type \"%.32s\" is not supported (linear, yarn, llama3)",
                            x->path, type);
    snprintf(c->rope_type, sizeof c->rope_type, "%s", type);
    c->rope_factor = NAN;
    if ((rc = get_num(x, rp, "factor", 1e-6, 1e6, &c->rope_factor)) ||
        (rc = get_int(x, rp, "original_max_position_embeddings", false, 1, INT32_MAX, &c->rope_orig_ctx)))
        return rc;
    if (!strcmp(type, "llama3")) {
        /* llama.cpp's defaults when a field is absent (LlamaModel.generate_extra_tensors) */
        if (isnan(c->rope_factor)) c->rope_factor = 8.0;
        c->low_freq_factor = 1.0;
        c->high_freq_factor = 4.0;
        if (!c->rope_orig_ctx) c->rope_orig_ctx = 8192;
        if ((rc = get_num(x, rp, "low_freq_factor", 1e-6, 1e6, &c->low_freq_factor)) ||
            (rc = get_num(x, rp, "high_freq_factor", 1e-6, 1e6, &c->high_freq_factor)))
            return rc;
        if (c->high_freq_factor <= c->low_freq_factor)
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: rope_scaling high_freq_factor %g must exceed "
                                "low_freq_factor %g", x->path, c->high_freq_factor, c->low_freq_factor);
        return EDGELLM_OK;
    }
    if (isnan(c->rope_factor))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: rope_scaling of type %s needs \"factor\"", x->path, type);
    if (!strcmp(type, "yarn")) {
        if (!c->rope_orig_ctx)
            return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: rope_scaling of type yarn needs "
                                "\"original_max_position_embeddings\"", x->path);
        const cJSON *af = edgellm_hf_get(rp, "attention_factor");
        if ((rc = get_num(x, rp, "extrapolation_factor", -1e6, 1e6, &c->yarn_ext_factor)) ||
            (rc = get_num(x, rp, af ? "attention_factor" : "attn_factor", -1e6, 1e6, &c->yarn_attn_factor)) ||
            (rc = get_num(x, rp, "beta_fast", -1e6, 1e6, &c->yarn_beta_fast)) ||
            (rc = get_num(x, rp, "beta_slow", -1e6, 1e6, &c->yarn_beta_slow)))
            return rc;
        /* The loader runs YaRN with llama.cpp's constants (src/model/rope_scaling.c): ramp
         * extrapolation 1, beta_fast 32, beta_slow 1, truncated correction dims, magnitude
         * 0.1 ln(factor) + 1 (transformers' default attention_factor). Other values would be
         * written and not applied, so the model would run differently: refused, named. */
        const double mag = c->rope_factor > 1 ? 0.1 * log(c->rope_factor) + 1.0 : 1.0;
        const struct { const char *key; double have, want; } y[] = {
            {"extrapolation_factor", c->yarn_ext_factor, 1.0},
            {af ? "attention_factor" : "attn_factor", c->yarn_attn_factor, mag},
            {"beta_fast", c->yarn_beta_fast, 32.0},
            {"beta_slow", c->yarn_beta_slow, 1.0}};
        for (size_t i = 0; i < sizeof y / sizeof y[0]; i++)
            if (!isnan(y[i].have) && fabs(y[i].have - y[i].want) > 1e-4 * fabs(y[i].want))
                return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED,
                                    "%s: rope_scaling yarn \"%s\" %g is not supported: edgellm (as llama.cpp) "
                                    "applies %g", x->path, y[i].key, y[i].have, y[i].want);
        const cJSON *tr = edgellm_hf_get(rp, "truncate");
        if (cJSON_IsFalse(tr))
            return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: rope_scaling yarn \"truncate\": false is not "
                                "supported: edgellm (as llama.cpp) rounds the correction dims", x->path);
    }
    return EDGELLM_OK;
}

static edgellm_status read_config(const cfg_ctx *x, edgellm_hf_config *c)
{
    const cJSON *j = x->root;
    edgellm_status rc;
    if (!cJSON_IsObject(j)) return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: not a JSON object", x->path);
    const char *dup = edgellm_hf_json_dup_key(j);
    if (dup) return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"%.100s\" is given twice", x->path, dup);
    const cJSON *archs = edgellm_hf_get(j, "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? archs->child : NULL;
    if (!cJSON_IsString(a0))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: no \"architectures\" list naming the model class",
                            x->path);
    snprintf(c->hf_arch, sizeof c->hf_arch, "%s", a0->valuestring);
    if (!strcmp(a0->valuestring, "LlamaForCausalLM") || !strcmp(a0->valuestring, "MistralForCausalLM"))
        snprintf(c->arch, sizeof c->arch, "llama");
    else if (!strcmp(a0->valuestring, "Qwen2ForCausalLM")) snprintf(c->arch, sizeof c->arch, "qwen2");
    else
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: architecture %.64s is not supported (LlamaForCausalLM, "
                            "MistralForCausalLM, Qwen2ForCausalLM)",
                            x->path, a0->valuestring);
    if (edgellm_hf_get(j, "text_config"))
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: a \"text_config\" (multimodal model) is not supported", x->path);
    const int64_t MAXD = 1 << 20;
    int64_t n_layer = 0, n_embd = 0, n_head = 0, n_kv = -1, n_ff = 0, n_vocab = 0, head_dim = -1, n_ctx = 0;
    if ((rc = get_int(x, j, "hidden_size", true, 1, MAXD, &n_embd)) ||
        (rc = get_int(x, j, "intermediate_size", true, 1, MAXD, &n_ff)) ||
        (rc = get_int(x, j, "num_hidden_layers", true, 1, 1 << 14, &n_layer)) ||
        (rc = get_int(x, j, "num_attention_heads", true, 1, 1 << 14, &n_head)) ||
        (rc = get_int(x, j, "num_key_value_heads", false, 1, 1 << 14, &n_kv)) ||
        (rc = get_int(x, j, "head_dim", false, 2, MAXD, &head_dim)) ||
        (rc = get_int(x, j, "vocab_size", true, 1, INT32_MAX / 2, &n_vocab)) ||
        (rc = get_int(x, j, "max_position_embeddings", false, 1, INT32_MAX, &n_ctx)) ||
        (rc = get_num(x, j, "rms_norm_eps", 0, 1, &c->rms_eps)) ||
        (rc = get_num(x, j, "rope_theta", 1e-6, 1e12, &c->rope_theta)))
        return rc;
    c->n_layer = (int)n_layer;
    c->n_embd = (int)n_embd;
    c->n_head = (int)n_head;
    c->n_head_kv = n_kv > 0 ? (int)n_kv : (int)n_head;
    c->n_ff = (int)n_ff;
    c->n_vocab = (int)n_vocab;
    c->n_ctx = n_ctx;
    c->has_head_dim = head_dim > 0;
    if (!c->has_head_dim && n_embd % n_head)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT,
                            "%s: hidden_size %lld is not a multiple of num_attention_heads %lld", x->path,
                            (long long)n_embd, (long long)n_head);
    c->head_dim = c->has_head_dim ? (int)head_dim : (int)(n_embd / n_head);
    if (c->n_head % c->n_head_kv)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: num_attention_heads %d is not a multiple of "
                            "num_key_value_heads %d", x->path, c->n_head, c->n_head_kv);
    if (c->head_dim % 2)
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: head dimension %d is odd (RoPE rotates pairs)", x->path,
                            c->head_dim);
    const cJSON *act = edgellm_hf_get(j, "hidden_act");
    if (act && !cJSON_IsNull(act) && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu")))
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: hidden_act %.32s is not supported (silu)", x->path,
                            cJSON_IsString(act) ? act->valuestring : "(not a string)");
    if (!strcmp(c->arch, "llama"))
        for (const char *const *k = (const char *const[]){"attention_bias", "mlp_bias", NULL}; *k; k++)
            if (cJSON_IsTrue(edgellm_hf_get(j, *k)))
                return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: %s is true: llama models with biases are not "
                                    "supported", x->path, *k);
    double prf = 1.0;
    if ((rc = get_num(x, j, "partial_rotary_factor", 0, 1, &prf))) return rc;
    if (prf != 1.0)
        return edgellm_fail(x->err, EDGELLM_ERR_UNSUPPORTED, "%s: partial_rotary_factor %g is not supported", x->path,
                            prf);
    const cJSON *tie = edgellm_hf_get(j, "tie_word_embeddings");
    if (cJSON_IsBool(tie)) c->tied = cJSON_IsTrue(tie);
    else if (tie && !cJSON_IsNull(tie))
        return edgellm_fail(x->err, EDGELLM_ERR_FORMAT, "%s: \"tie_word_embeddings\" must be true or false", x->path);
    if ((rc = read_rope_scaling(x, c))) return rc;
    get_ids(j, "bos_token_id", &c->bos_id, NULL, NULL, 0);
    get_ids(j, "eos_token_id", &c->eos_id, NULL, NULL, 0);
    get_ids(j, "pad_token_id", &c->pad_id, NULL, NULL, 0);
    const cJSON *dt = edgellm_hf_get(j, "torch_dtype");
    if (!cJSON_IsString(dt)) dt = edgellm_hf_get(j, "dtype");
    if (cJSON_IsString(dt)) snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", dt->valuestring);
    return EDGELLM_OK;
}

edgellm_status edgellm_hf_config_load(const char *dir, edgellm_hf_config *c, edgellm_error *err)
{
    char p[4096];
    init_config(c);
    folder_name(dir, c->name, sizeof c->name);
    if (!edgellm_hf_path(p, sizeof p, dir, "config.json"))
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", dir);
    if (!edgellm_hf_has_file(dir, "config.json"))
        return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "%s: no config.json (is this a Hugging Face model folder?)",
                            dir);
    cJSON *j = NULL;
    edgellm_status rc = edgellm_hf_json_load(p, &j, err);
    if (rc != EDGELLM_OK) return rc;
    cfg_ctx x = {j, p, err};
    rc = read_config(&x, c);
    cJSON_Delete(j);
    if (rc == EDGELLM_OK) read_generation_config(dir, c);
    return rc;
}

/* Llama 3.1's frequency-dependent RoPE scaling, the factors llama.cpp stores as
 * rope_freqs.weight (ggml-org/llama.cpp convert_hf_to_gguf.py, LlamaModel.generate_extra_tensors;
 * conversion/llama.py in later trees): for each rotated pair i of head_dim d,
 *   freq_i = 1 / theta^(2i/d),  wavelen_i = 2 pi / freq_i,
 *   factor_i = 1                       when wavelen_i < orig_ctx / high_freq_factor,
 *            = factor                  when wavelen_i > orig_ctx / low_freq_factor,
 *            = 1 / ((1 - s) / factor + s) otherwise, s = (orig_ctx / wavelen_i - low) / (high - low).
 * Computed in float32 in the order the converter computes them (torch float32 tensors). */
void edgellm_hf_llama3_rope_factors(const edgellm_hf_config *c, float *factors)
{
    const int d = c->head_dim;
    const float base = (float)(c->rope_theta > 0 ? c->rope_theta : 10000.0);
    const double low = c->low_freq_factor, high = c->high_freq_factor, factor = c->rope_factor;
    const double old_ctx = (double)c->rope_orig_ctx;
    const double low_wl = old_ctx / low, high_wl = old_ctx / high;
    for (int i = 0; i < d / 2; i++) {
        const float freq = 1.0f / powf(base, (float)(2 * i) / (float)d);
        const float wavelen = (float)(2.0 * M_PI) / freq;
        if ((double)wavelen < high_wl) factors[i] = 1.0f;
        else if ((double)wavelen > low_wl) factors[i] = (float)factor;
        else {
            const float smooth = (float)(((float)(old_ctx / (double)wavelen)) - low) / (float)(high - low);
            factors[i] = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
    }
}

#endif /* EDGELLM_HAVE_CJSON */
