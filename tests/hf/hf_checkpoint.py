#!/usr/bin/python3
"""hf_checkpoint.py -- write a random-weight Hugging Face checkpoint folder and the logits
its model gives, independently of edgellm (Python standard library and NumPy only, as
Debian's python3-numpy ships them), so that test_hf checks `edgellm convert --hf` against
something edgellm did not write itself.

usage: hf_checkpoint.py OUT_DIR --preset NAME [--tokens 1,2,3] [--seed N]

Presets (shapes of real models, fewer layers; dtype and file layout vary on purpose):
  llama3-gqa   LlamaForCausalLM, 4 heads / 2 KV heads of 16, untied lm_head, F32, one
               model.safetensors; a byte-level BPE tokenizer.json written here with Llama 3's
               pre-tokenizer (Split regex + ByteLevel)
  qwen2-bf16   Qwen2ForCausalLM, Q/K/V biases, tied embeddings, BF16, two shards with
               model.safetensors.index.json; the same tokenizer with Qwen2's regex and NFC
  smollm2      SmolLM2-135M-Instruct's own config.json (hidden 576, 9 heads / 3 KV heads,
               head_dim 64, rope_theta 1e5, tied), 2 of its 30 layers, BF16, and its real
               tokenizer.json (--tokenizer-dir: ../shared/data/hf/smollm2-135m-instruct)
  llama3-rope  as llama3-gqa (one layer) with config.json rope_scaling {"rope_type":
               "llama3", factor 8, low 1, high 4, original 8192}; also writes
               expected_rope_freqs.f32 (the factors of Meta's Llama 3.1 reference)
  llama-linear as llama3-rope with rope_theta 1e4 and rope_scaling {"rope_type": "linear",
               factor 4}
  llama-yarn   as llama-linear with rope_scaling {"rope_type": "yarn", factor 4,
               original_max_position_embeddings 64} and max_position_embeddings 256 (= 4 x
               64, so that transformers' factor, max / original, is the given one)

Outputs besides the checkpoint: reference_logits.f32 (float32 little-endian,
[n_tokens][vocab_size]), the logits of every position for --tokens, computed in float64
by the model definition of transformers (models/llama/modeling_llama.py,
models/qwen2/modeling_qwen2.py): RMSNorm x * rsqrt(mean(x^2) + eps) * w; rotary
embedding on the two halves of each head (rotate_half), inv_freq = theta^(-2i/d);
grouped-query attention with causal softmax(q k^T / sqrt(d)); SwiGLU MLP
down(silu(gate(x)) * up(x)); the weights as stored (BF16 values rounded the way
torch.bfloat16 rounds: to nearest even). With rope_scaling, the rotary frequencies and
the cos/sin scale are those of transformers' modeling_rope_utils.py:
  linear  inv_freq / factor (position interpolation, arXiv:2306.15595)
  llama3  inv_freq / factor_i, factor_i from the wavelength (Meta's apply_scaling)
  yarn    inv_freq mixed between inv_freq / factor (interpolation) and inv_freq
          (extrapolation) with a linear ramp over the pairs between
          floor(d(beta_fast = 32)) and ceil(d(beta_slow = 1)),
          d(b) = D ln(L / (2 pi b)) / (2 ln theta), L = original_max_position_embeddings;
          cos and sin times 0.1 ln(factor) + 1 (YaRN, arXiv:2309.00071, section 3.4)
"""
import json
import math
import os
import struct
import sys

import numpy as np

PRESETS = {
    "llama3-gqa": dict(arch="LlamaForCausalLM", model_type="llama", hidden=64, heads=4, kv=2, ff=176, layers=3,
                       theta=500000.0, eps=1e-5, tied=False, dtype="F32", shards=1, tokenizer="llama3", ctx=8192),
    "qwen2-bf16": dict(arch="Qwen2ForCausalLM", model_type="qwen2", hidden=64, heads=4, kv=2, ff=160, layers=2,
                       theta=1000000.0, eps=1e-6, tied=True, dtype="BF16", shards=2, tokenizer="qwen2", ctx=32768),
    "smollm2": dict(arch="LlamaForCausalLM", model_type="llama", layers=2, dtype="BF16", shards=1, tokenizer="dir"),
    "llama3-rope": dict(arch="LlamaForCausalLM", model_type="llama", hidden=64, heads=4, kv=2, ff=176, layers=1,
                        theta=500000.0, eps=1e-5, tied=False, dtype="F32", shards=1, tokenizer="llama3", ctx=131072,
                        rope=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                  original_max_position_embeddings=8192)),
    "llama-linear": dict(arch="LlamaForCausalLM", model_type="llama", hidden=64, heads=4, kv=2, ff=176, layers=1,
                         theta=10000.0, eps=1e-5, tied=False, dtype="F32", shards=1, tokenizer="llama3", ctx=256,
                         rope=dict(rope_type="linear", factor=4.0)),
    "llama-yarn": dict(arch="LlamaForCausalLM", model_type="llama", hidden=64, heads=4, kv=2, ff=176, layers=1,
                       theta=10000.0, eps=1e-5, tied=False, dtype="F32", shards=1, tokenizer="llama3", ctx=256,
                       rope=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64)),
}

LLAMA3_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def byte_chars():
    """GPT-2's byte -> printable character table (openai/gpt-2 src/encoder.py bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_bpe_tokenizer(out, flavour):
    """A small byte-level BPE tokenizer.json: 256 byte tokens, merges of a few English
    words, two special tokens."""
    bc = byte_chars()
    vocab = {bc[b]: i for i, b in enumerate(range(256))}
    merges = []
    for word in [" the", " a", " of", " and", "in", "er", " to", "ing", " is", "Hello", " world"]:
        parts = [bc[b] for b in word.encode()]
        while len(parts) > 1:
            a, b = parts[0], parts[1]
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
                merges.append([a, b])
            parts = [a + b] + parts[2:]
    bos, eos = len(vocab), len(vocab) + 1
    regex = LLAMA3_REGEX if flavour == "llama3" else QWEN2_REGEX
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [
            {"id": bos, "content": "<|begin_of_text|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True},
            {"id": eos, "content": "<|end_of_text|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}],
        "normalizer": {"type": "NFC"} if flavour == "qwen2" else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": flavour == "llama3", "vocab": vocab, "merges": merges},
    }
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True,
                   "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}, f)
    return eos + 1, bos, eos


def to_bf16(a):
    """float32 -> bfloat16 bits, round to nearest even (torch's rounding); NaN not expected."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, array of the stored values). Tensors sorted by name,
    contiguous, header padded with spaces to 8 bytes (huggingface/safetensors README)."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dtype, arr in sorted(tensors, key=lambda t: t[0]):
        if dtype == "F32":
            raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        elif dtype == "F16":
            raw = np.ascontiguousarray(arr, dtype="<f2").tobytes()
        else:
            raw = np.ascontiguousarray(to_bf16(arr), dtype="<u2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def stored(arr, dtype):
    """The values the model computes with once stored in dtype."""
    if dtype == "F32":
        return arr.astype(np.float32).astype(np.float64)
    if dtype == "F16":
        return arr.astype(np.float16).astype(np.float64)
    return bf16_to_f32(to_bf16(arr)).astype(np.float64)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_params(cfg, d):
    """(inv_freq [d/2], cos/sin scale) of transformers' rope types default, linear, llama3, yarn."""
    theta = cfg["rope_theta"]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    rs = cfg.get("rope_scaling")
    kind = rs and rs.get("rope_type", rs.get("type"))
    if not rs or kind == "default":
        return inv, 1.0
    if kind == "linear":
        return inv / rs["factor"], 1.0
    if kind == "llama3":
        return inv / llama3_rope_freqs(cfg), 1.0
    if kind == "yarn":
        factor, orig = rs["factor"], rs.get("original_max_position_embeddings", cfg["max_position_embeddings"])

        def corr_dim(rot):
            return d * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(theta))
        low = max(math.floor(corr_dim(rs.get("beta_fast", 32.0))), 0)
        high = min(math.ceil(corr_dim(rs.get("beta_slow", 1.0))), d - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        extra = 1.0 - ramp                          # 1: extrapolate (keep the frequency)
        inv = inv / factor * (1.0 - extra) + inv * extra
        scale = rs.get("attention_factor") or (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0)
        return inv, scale
    raise ValueError("rope type %s" % kind)


def rope(x, pos, inv, scale):
    """transformers' apply_rotary_pos_emb: x [T][H][D], halves rotated (rotate_half)."""
    d = x.shape[-1]
    ang = np.outer(pos, inv)                       # [T][D/2]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :] * scale
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None, :] * scale
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + rot * sin


def forward(w, cfg, tokens):
    E, H, KV, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    D = E // H
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    eps = cfg["rms_norm_eps"]
    inv, scale = rope_params(cfg, D)
    x = w["model.embed_tokens.weight"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(L):
        p = "model.layers.%d." % l
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(n):
            y = h @ w[p + "self_attn.%s_proj.weight" % n].T
            b = w.get(p + "self_attn.%s_proj.bias" % n)
            return y if b is None else y + b
        q = rope(proj("q").reshape(T, H, D), pos, inv, scale)
        k = rope(proj("k").reshape(T, KV, D), pos, inv, scale)
        v = proj("v").reshape(T, KV, D)
        out = np.zeros((T, H, D))
        for hh in range(H):
            kh, vh = k[:, hh // (H // KV)], v[:, hh // (H // KV)]
            s = q[:, hh] @ kh.T / math.sqrt(D) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (s / s.sum(-1, keepdims=True)) @ vh
        x = x + out.reshape(T, H * D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def llama3_rope_freqs(cfg):
    """Meta's Llama 3.1 frequency scaling (meta-llama/llama-models, models/llama3/reference_impl
    apply_scaling), as factors: scaled frequency = frequency / factor_i."""
    rs = cfg["rope_scaling"]
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / cfg["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d)
    low_wl = rs["original_max_position_embeddings"] / rs["low_freq_factor"]
    high_wl = rs["original_max_position_embeddings"] / rs["high_freq_factor"]
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(rs["factor"])
        else:
            s = (rs["original_max_position_embeddings"] / wl - rs["low_freq_factor"]) / (
                rs["high_freq_factor"] - rs["low_freq_factor"])
            out.append(1.0 / ((1 - s) / rs["factor"] + s))
    return np.array(out)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out = args[0]
    opt = {k: v for k, v in zip(args[1::2], args[2::2])}
    pr = PRESETS[opt["--preset"]]
    rng = np.random.default_rng(int(opt.get("--seed", "1")))
    os.makedirs(out, exist_ok=True)
    if pr["tokenizer"] == "dir":
        tdir = opt["--tokenizer-dir"]
        with open(os.path.join(tdir, "config.json")) as f:
            cfg = json.load(f)
        cfg["num_hidden_layers"] = pr["layers"]
        with open(os.path.join(tdir, "tokenizer.json"), "rb") as f, open(os.path.join(out, "tokenizer.json"), "wb") as g:
            g.write(f.read())
    else:
        n_vocab, bos, eos = write_bpe_tokenizer(out, pr["tokenizer"])
        cfg = {"architectures": [pr["arch"]], "model_type": pr["model_type"], "hidden_size": pr["hidden"],
               "intermediate_size": pr["ff"], "num_hidden_layers": pr["layers"], "num_attention_heads": pr["heads"],
               "num_key_value_heads": pr["kv"], "max_position_embeddings": pr["ctx"], "rms_norm_eps": pr["eps"],
               "rope_theta": pr["theta"], "vocab_size": n_vocab, "tie_word_embeddings": pr["tied"],
               "hidden_act": "silu", "bos_token_id": bos, "eos_token_id": eos,
               "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[pr["dtype"]],
               "rope_scaling": pr.get("rope")}
        with open(os.path.join(out, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": bos, "eos_token_id": eos}, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    E, H, KV, F, V = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                      cfg["intermediate_size"], cfg["vocab_size"])
    D = E // H
    qwen = cfg["model_type"] == "qwen2"
    shapes = {"model.embed_tokens.weight": (V, E), "model.norm.weight": (E,)}
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, E)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        shapes.update({p + "input_layernorm.weight": (E,), p + "post_attention_layernorm.weight": (E,),
                       p + "self_attn.q_proj.weight": (H * D, E), p + "self_attn.k_proj.weight": (KV * D, E),
                       p + "self_attn.v_proj.weight": (KV * D, E), p + "self_attn.o_proj.weight": (E, H * D),
                       p + "mlp.gate_proj.weight": (F, E), p + "mlp.up_proj.weight": (F, E),
                       p + "mlp.down_proj.weight": (E, F)})
        if qwen:
            shapes.update({p + "self_attn.q_proj.bias": (H * D,), p + "self_attn.k_proj.bias": (KV * D,),
                           p + "self_attn.v_proj.bias": (KV * D,)})
    dtype = pr["dtype"]
    w, tensors = {}, []
    for name in sorted(shapes):
        shp = shapes[name]
        if name.endswith("norm.weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shp)
        elif name.endswith(".bias"):
            a = 0.1 * rng.standard_normal(shp)
        else:   # scaled so that activations stay O(1) and attention is far from uniform
            a = rng.standard_normal(shp) * (0.5 if "embed" in name else 1.0 / math.sqrt(shp[-1]))
        a = a.astype(np.float32)
        w[name] = stored(a, dtype)
        tensors.append((name, dtype, a))
    if pr["shards"] == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    else:
        names = sorted(shapes)
        n, idx = pr["shards"], {}
        for s in range(n):
            part = names[s * len(names) // n:(s + 1) * len(names) // n]
            fname = "model-%05d-of-%05d.safetensors" % (s + 1, n)
            write_safetensors(os.path.join(out, fname), [t for t in tensors if t[0] in part])
            idx.update({nm: fname for nm in part})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": idx}, f, indent=2)

    if (cfg.get("rope_scaling") or {}).get("rope_type") == "llama3":
        llama3_rope_freqs(cfg).astype("<f4").tofile(os.path.join(out, "expected_rope_freqs.f32"))
    tokens = [int(t) for t in opt.get("--tokens", "1,7,42,3,250,99,5,17").split(",")]
    forward(w, cfg, tokens).astype("<f4").tofile(os.path.join(out, "reference_logits.f32"))


if __name__ == "__main__":
    main()
