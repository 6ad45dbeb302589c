/*
 * arch_table.c — the architectures edgellm runs and what distinguishes them.
 *
 * Both follow the llama block (RMSNorm, RoPE, grouped-query attention, SwiGLU FFN); the
 * table records only the differences the forward pass needs:
 *   llama  Llama 2/3, TinyLlama, Mistral, SmolLM: adjacent RoPE pairs, no biases.
 *   qwen2  Qwen2/2.5: NeoX RoPE pairs (x[i], x[i+d/2]) and biases on Q, K, V.
 * Sources: shared/data/reference/README.md (conventions the reference logits follow);
 * GGUF tensor naming per ggml-org/ggml docs/gguf.md.
 * A new architecture that fits the same block gets a row here; one that does not gets its
 * own forward file.
 */
#include "model.h"

static const edgellm_arch archs[] = {
    {"llama", EDGELLM_ROPE_ADJACENT, false},
    {"qwen2", EDGELLM_ROPE_NEOX, true},
};

const edgellm_arch *edgellm_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len)) return &archs[i];
    return NULL;
}

const char *edgellm_arch_list(void) { return "llama, qwen2"; }
