/*
 * shapes.c — built-in architecture shapes of real models (`edgellm synth --shape`), so that
 * speed and memory can be measured on a random-weight model of the exact size without
 * downloading it.
 *
 * Every number is a field of the model's Hugging Face `config.json`:
 *   hidden_size -> n_embd, num_hidden_layers -> n_layer, num_attention_heads -> n_head,
 *   num_key_value_heads -> n_head_kv, intermediate_size -> n_ff, vocab_size -> n_vocab,
 *   max_position_embeddings -> n_ctx_train (unless the model card states a shorter
 *   supported context, noted), tie_word_embeddings -> tied, rope_theta, rms_norm_eps.
 * The same shapes (without rope/eps) are in plan_catalog.c, which cites the same files;
 * tests/test_synth_bench.c checks the parameter totals against the published sizes.
 *
 * Not reproduced: Llama 3.2's "llama3" rope scaling (rope_scaling.factor 32), which changes
 * the rotation frequencies, not the shape or the cost of a token.
 */
#include "../common/common.h"
#include <ctype.h>
#include <stdio.h>

#define S(NAME, ARCH, L, E, H, KV, FF, V, CTX, TIED, THETA, EPS, SRC) \
    { NAME, ARCH, L, E, H, KV, FF, V, CTX, TIED, THETA, EPS, SRC }

static const edgellm_shape shapes[] = {
    /* TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json: hidden_size 2048, intermediate_size
     * 5632, num_hidden_layers 22, num_attention_heads 32, num_key_value_heads 4, vocab_size
     * 32000, max_position_embeddings 2048, rms_norm_eps 1e-05, rope_theta 10000.0,
     * tie_word_embeddings false. */
    S("tinyllama-1.1b", "llama", 22, 2048, 32, 4, 5632, 32000, 2048, 0, 10000.0f, 1e-5f,
      "TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json"),
    /* meta-llama/Llama-3.2-1B config.json: hidden_size 2048, intermediate_size 8192,
     * num_hidden_layers 16, num_attention_heads 32, num_key_value_heads 8, head_dim 64,
     * vocab_size 128256, max_position_embeddings 131072, rms_norm_eps 1e-05, rope_theta
     * 500000.0, tie_word_embeddings true. */
    S("llama-3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, 131072, 1, 500000.0f, 1e-5f,
      "meta-llama/Llama-3.2-1B config.json"),
    /* Qwen/Qwen2.5-0.5B config.json: hidden_size 896, intermediate_size 4864,
     * num_hidden_layers 24, num_attention_heads 14, num_key_value_heads 2, vocab_size 151936,
     * max_position_embeddings 32768, rms_norm_eps 1e-06, rope_theta 1000000.0,
     * tie_word_embeddings true; Q/K/V carry biases (qwen2). */
    S("qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 4864, 151936, 32768, 1, 1000000.0f, 1e-6f,
      "Qwen/Qwen2.5-0.5B config.json"),
    /* Qwen/Qwen2.5-1.5B config.json: hidden_size 1536, intermediate_size 8960,
     * num_hidden_layers 28, num_attention_heads 12, num_key_value_heads 2, vocab_size 151936,
     * rms_norm_eps 1e-06, rope_theta 1000000.0, tie_word_embeddings true; context 32,768
     * per the model card. */
    S("qwen2.5-1.5b", "qwen2", 28, 1536, 12, 2, 8960, 151936, 32768, 1, 1000000.0f, 1e-6f,
      "Qwen/Qwen2.5-1.5B config.json + model card (32,768 context)"),
    /* HuggingFaceTB/SmolLM2-360M config.json: hidden_size 960, intermediate_size 2560,
     * num_hidden_layers 32, num_attention_heads 15, num_key_value_heads 5, vocab_size 49152,
     * max_position_embeddings 8192, rms_norm_eps 1e-05, rope_theta 100000, tied. */
    S("smollm2-360m", "llama", 32, 960, 15, 5, 2560, 49152, 8192, 1, 100000.0f, 1e-5f,
      "HuggingFaceTB/SmolLM2-360M config.json"),
    /* HuggingFaceTB/SmolLM2-135M config.json: hidden_size 576, intermediate_size 1536,
     * num_hidden_layers 30, num_attention_heads 9, num_key_value_heads 3, vocab_size 49152,
     * max_position_embeddings 8192, rms_norm_eps 1e-05, rope_theta 100000, tied. */
    S("smollm2-135m", "llama", 30, 576, 9, 3, 1536, 49152, 8192, 1, 100000.0f, 1e-5f,
      "HuggingFaceTB/SmolLM2-135M config.json"),
    /* meta-llama/Llama-2-7b-hf config.json: hidden_size 4096, intermediate_size 11008,
     * num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, vocab_size
     * 32000, max_position_embeddings 4096, rms_norm_eps 1e-05, rope_theta 10000.0, untied. */
    S("llama-2-7b", "llama", 32, 4096, 32, 32, 11008, 32000, 4096, 0, 10000.0f, 1e-5f,
      "meta-llama/Llama-2-7b-hf config.json"),
};

#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

int edgellm_shape_count(void) { return N_SHAPES; }

edgellm_status edgellm_shape_at(int i, edgellm_shape *out)
{
    if (i < 0 || i >= N_SHAPES || !out) return EDGELLM_ERR_MISUSE;
    *out = shapes[i];
    return EDGELLM_OK;
}

edgellm_status edgellm_shape_find(const char *name, edgellm_shape *out, edgellm_error *err)
{
    if (!name || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "shape: NULL name or output");
    for (int i = 0; i < N_SHAPES; i++) {
        const char *a = name, *b = shapes[i].name;
        while (*a && *b && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b) {
            *out = shapes[i];
            return EDGELLM_OK;
        }
    }
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < N_SHAPES && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", shapes[i].name);
    return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "unknown shape '%s' (built in: %s)", name, list);
}
