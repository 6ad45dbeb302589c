/*
 * model_catalog.c — the one catalogue of real model shapes: `edgellm plan` sizes them
 * (edgellm_plan_model_at / _find_model) and `edgellm synth` writes random-weight models of
 * those it can run (edgellm_shape_*: architectures llama and qwen2 with rope_theta and
 * rms_norm_eps recorded).
 *
 * Every number is a field of the model's Hugging Face `config.json`: hidden_size -> n_embd,
 * intermediate_size -> n_ff, num_hidden_layers -> n_layer, num_attention_heads -> n_head,
 * num_key_value_heads -> n_head_kv, head_dim (or hidden_size / num_attention_heads),
 * vocab_size -> n_vocab, tie_word_embeddings -> tied_embeddings, rope_theta, rms_norm_eps;
 * n_ctx_train is the context length the model card states (max_position_embeddings unless
 * the card says less). Parameter counts are not stored: plan.c sums them from the tensor
 * list, and tests/test_plan.c and tests/test_synth_bench.c check them against the
 * published totals.
 *
 * Not reproduced: Llama 3.x's "llama3" rope scaling, which changes the rotation
 * frequencies, not the shape or the cost of a token.
 */
#include "plan.h"

/* name, arch, source, n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx_train,
 * tied, qkv_bias, fused_qkv, extra_norms, rope_theta, rms_norm_eps (0: not recorded) */
#define M(NAME, ARCH, SRC, L, E, H, KV, HD, FF, V, CTX, TIED, QB, FQ, XN, THETA, EPS) \
    { .m = { .name = NAME, .arch = ARCH, .source = SRC, .n_layer = L, .n_embd = E, .n_head = H, .n_head_kv = KV, \
      .head_dim = HD, .n_ff = FF, .n_vocab = V, .n_ctx_train = CTX, .tied_embeddings = TIED, .qkv_bias = QB, \
      .fused_qkv = FQ, .extra_norms = XN, .file_label = "" }, .rope_theta = THETA, .rms_eps = EPS }

const edgellm_catalog_model edgellm_model_catalog[] = {
    /* SmolLM2: HuggingFaceTB/SmolLM2-135M and -360M config.json (LlamaForCausalLM,
     * max_position_embeddings 8192, tie_word_embeddings true); 1.7B: 24 layers, 32 heads,
     * no GQA. Model card: 8k context. */
    M("smollm2-135m", "llama", "HuggingFaceTB/SmolLM2-135M config.json",
      30, 576, 9, 3, 64, 1536, 49152, 8192, 1, 0, 0, 0, 100000.0f, 1e-5f),
    M("smollm2-360m", "llama", "HuggingFaceTB/SmolLM2-360M config.json",
      32, 960, 15, 5, 64, 2560, 49152, 8192, 1, 0, 0, 0, 100000.0f, 1e-5f),
    M("smollm2-1.7b", "llama", "HuggingFaceTB/SmolLM2-1.7B config.json",
      24, 2048, 32, 32, 64, 8192, 49152, 8192, 1, 0, 0, 0, 0, 0),
    /* Qwen2.5: Qwen/Qwen2.5-*B config.json and model cards ("Attention QKV bias and tied
     * word embeddings" for 0.5B-3B; 0.5B: 24 layers, 14 Q / 2 KV heads, 896 hidden, 4864 ff,
     * 32,768 context; 1.5B: 28 layers, 12/2 heads; 3B: 36 layers, 16/2 heads; 7B: 28 layers,
     * 28/4 heads, untied, vocab 152064, 131,072 context). */
    M("qwen2.5-0.5b", "qwen2", "Qwen/Qwen2.5-0.5B config.json + model card",
      24, 896, 14, 2, 64, 4864, 151936, 32768, 1, 1, 0, 0, 1000000.0f, 1e-6f),
    M("qwen2.5-1.5b", "qwen2", "Qwen/Qwen2.5-1.5B config.json + model card",
      28, 1536, 12, 2, 128, 8960, 151936, 32768, 1, 1, 0, 0, 1000000.0f, 1e-6f),
    M("qwen2.5-3b", "qwen2", "Qwen/Qwen2.5-3B config.json + model card",
      36, 2048, 16, 2, 128, 11008, 151936, 32768, 1, 1, 0, 0, 1000000.0f, 1e-6f),
    M("qwen2.5-7b", "qwen2", "Qwen/Qwen2.5-7B config.json + model card",
      28, 3584, 28, 4, 128, 18944, 152064, 131072, 0, 1, 0, 0, 1000000.0f, 1e-6f),
    /* TinyLlama: jzhang38/TinyLlama README (22 layers, 4 query groups, 2048 hidden, 5632 ff,
     * 32000 vocab, 2048 context); TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json. */
    M("tinyllama-1.1b", "llama", "TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json; jzhang38/TinyLlama README",
      22, 2048, 32, 4, 64, 5632, 32000, 2048, 0, 0, 0, 0, 10000.0f, 1e-5f),
    /* Llama 3.2: meta-llama/Llama-3.2-1B and -3B config.json (1B: 16 layers, 2048 hidden,
     * 32/8 heads, 8192 ff, head_dim 64; 3B: 28 layers, 3072 hidden, 24/8 heads, head_dim
     * 128; vocab 128256, max_position_embeddings 131072, tie_word_embeddings true). */
    M("llama-3.2-1b", "llama", "meta-llama/Llama-3.2-1B config.json",
      16, 2048, 32, 8, 64, 8192, 128256, 131072, 1, 0, 0, 0, 500000.0f, 1e-5f),
    M("llama-3.2-3b", "llama", "meta-llama/Llama-3.2-3B config.json",
      28, 3072, 24, 8, 128, 8192, 128256, 131072, 1, 0, 0, 0, 500000.0f, 1e-5f),
    /* Phi-3-mini-4k: microsoft/Phi-3-mini-4k-instruct config.json (3072 hidden, 8192 ff,
     * 32 layers, 32 heads, no GQA, vocab 32064, 4096 context); GGUF stores a fused
     * attn_qkv and a fused gate+up matrix. */
    M("phi-3-mini", "phi3", "microsoft/Phi-3-mini-4k-instruct config.json",
      32, 3072, 32, 32, 96, 8192, 32064, 4096, 0, 0, 1, 0, 0, 0),
    /* Gemma 2 2B: google/gemma-2-2b config.json (26 layers, 2304 hidden, 9216 ff, 8/4
     * heads, head_dim 256, vocab 256000, 8192 context, tied; post-attention and post-FFN
     * norms per layer). */
    M("gemma-2-2b", "gemma2", "google/gemma-2-2b config.json",
      26, 2304, 8, 4, 256, 9216, 256000, 8192, 1, 0, 0, 2, 0, 0),
    /* Llama 2 7B: meta-llama/Llama-2-7b-hf config.json (32 layers, 4096 hidden, 32 heads,
     * no GQA, 11008 ff, 32000 vocab, 4096 context); also the ggml-org/llama.cpp#58 log. */
    M("llama-2-7b", "llama", "meta-llama/Llama-2-7b-hf config.json",
      32, 4096, 32, 32, 128, 11008, 32000, 4096, 0, 0, 0, 0, 10000.0f, 1e-5f),
    /* Mistral 7B v0.1: mistralai/Mistral-7B-v0.1 config.json (32 layers, 4096 hidden, 32/8
     * heads, 14336 ff, 32000 vocab, max_position_embeddings 32768, sliding window 4096). */
    M("mistral-7b", "llama", "mistralai/Mistral-7B-v0.1 config.json",
      32, 4096, 32, 8, 128, 14336, 32000, 32768, 0, 0, 0, 0, 10000.0f, 1e-5f),
    /* Llama 3.1 8B: meta-llama/Llama-3.1-8B config.json (32 layers, 4096 hidden, 32/8
     * heads, 14336 ff, vocab 128256, 131072 context, untied). */
    M("llama-3.1-8b", "llama", "meta-llama/Llama-3.1-8B config.json",
      32, 4096, 32, 8, 128, 14336, 128256, 131072, 0, 0, 0, 0, 500000.0f, 1e-5f),
};
const int edgellm_model_catalog_n = (int)(sizeof edgellm_model_catalog / sizeof edgellm_model_catalog[0]);

