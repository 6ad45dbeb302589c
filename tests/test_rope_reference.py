#!/usr/bin/python3
"""test_rope_reference.py — RoPE frequency scaling against a float64 reference written here
from the published formulas, on small random-weight models this script writes as GGUF.

Usage: test_rope_reference.py EDGELLM_CLI [WORK_DIR]. Exit 0 pass, 1 fail, 77 skipped (no numpy).
Run by CTest as test_rope_reference (Debian's python3-numpy; scripts/ci-stages.sh installs it).

The reference (numpy, float64) is a straight transcription of the llama forward pass
(RMSNorm, RoPE, causal grouped-query attention, SwiGLU) with the angles of each scaling as
its source publishes them:
  - plain RoPE (Su et al. 2021, arXiv:2104.09864): theta_i(p) = p * base^(-2i/D), pairs
    (x[2i], x[2i+1]) for llama's GGUF layout, (x[i], x[i + D/2]) for qwen2 (NeoX);
  - linear (position interpolation, Chen et al. 2023, arXiv:2306.15595): theta_i(p / s);
  - Llama 3 "llama3" scaling (Meta's reference code, llama/model.py apply_scaling; the same
    rule in transformers' _compute_llama3_parameters): per-frequency
    f -> f (wavelength < L/high_freq_factor), f / s (wavelength > L/low_freq_factor), else
    (1 - smooth) f / s + smooth f with smooth = (L / wavelength - low) / (high - low); GGUF
    files carry it as rope_freqs.weight = f / f_scaled, which the file written here holds
    in float32 while the reference uses the rule itself;
  - arbitrary per-pair factors (rope_freqs.weight = [1, 1, 4, 32], the issue's example):
    theta_i / factor_i;
  - YaRN (Peng et al. 2023, arXiv:2309.00071, "NTK-by-parts" interpolation and the
    attention temperature sqrt(1/t) = 0.1 ln s + 1, eq. 22), with the ramp as the paper's
    reference code computes it (jquesnelle/yarn scaled_rope/LlamaYaRNScaledRotaryEmbedding.py:
    _yarn_find_correction_range, floor/ceil of D ln(L / (2 pi beta)) / (2 ln base) for
    beta = 32 and 1, clamped to [0, D-1]; _yarn_linear_ramp_mask, linear in the pair index),
    which is also what llama.cpp/ggml and transformers use; cos and sin times the
    temperature, and times rope.scaling.attn_factor when the file gives one.
Every model is evaluated at 160 positions with an original context of 64, so most of them
lie past it. edgellm's logits (`edgellm logits`, one prefill pass and --decode token by
token) must be within TOL of the scaled reference and far from the unscaled one. Files
whose scaling type edgellm does not implement are refused by `run`, and `info` and `plan`
say so.
"""
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("test_rope_reference: numpy is not installed (python3-numpy): skipped")
    sys.exit(77)

TOL = 2e-5          # max |edgellm - reference| / (1 + max |reference|), float32 engine
MIN_EFFECT = 50     # the scaled and unscaled references differ by at least this x TOL

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)
    return cond


# ---------------------------------------------------------------- GGUF writer (v3)
# ggml-org/ggml docs/gguf.md: header, key/values, tensor infos, padding to 32, data.
T_U32, T_I32, T_F32, T_STR, T_ARR = 4, 5, 6, 8, 9


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, value):
    if isinstance(value, str):
        return gguf_str(key) + struct.pack("<I", T_STR) + gguf_str(value)
    if isinstance(value, float):
        return gguf_str(key) + struct.pack("<If", T_F32, value)
    return gguf_str(key) + struct.pack("<II", T_U32, value)


def write_gguf(path, kvs, tensors):
    """kvs: list of (key, value); tensors: list of (name, float32 array in C order)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
    for k, v in kvs:
        out += gguf_kv(k, v)
    offset, blobs = 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a, dtype="<f4")
        ne = list(reversed(a.shape))                  # ggml order: ne[0] is the row length
        out += gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", 0, offset)          # F32
        blob = a.tobytes()
        blobs.append(blob + b"\0" * (-len(blob) % 32))
        offset += len(blobs[-1])
    out += b"\0" * (-len(out) % 32)
    with open(path, "wb") as f:
        f.write(bytes(out) + b"".join(blobs))


# ---------------------------------------------------------------- models
class Model:
    def __init__(self, arch, n_vocab, n_embd, n_head, n_head_kv, n_layer, n_ff, seed, std=0.25):
        rng = np.random.default_rng(seed)
        self.arch, self.V, self.E, self.H, self.Hkv, self.L, self.F = arch, n_vocab, n_embd, n_head, n_head_kv, n_layer, n_ff
        self.D = n_embd // n_head
        kv = self.D * n_head_kv
        r = lambda *s: rng.normal(0.0, std, s).astype(np.float32)
        self.t = {"token_embd.weight": r(n_vocab, n_embd), "output_norm.weight": 1 + r(n_embd) * 0.2,
                  "output.weight": r(n_vocab, n_embd)}
        for l in range(n_layer):
            p = "blk.%d." % l
            self.t.update({p + "attn_norm.weight": 1 + r(n_embd) * 0.2, p + "attn_q.weight": r(n_embd, n_embd),
                           p + "attn_k.weight": r(kv, n_embd), p + "attn_v.weight": r(kv, n_embd),
                           p + "attn_output.weight": r(n_embd, n_embd), p + "ffn_norm.weight": 1 + r(n_embd) * 0.2,
                           p + "ffn_gate.weight": r(n_ff, n_embd), p + "ffn_up.weight": r(n_ff, n_embd),
                           p + "ffn_down.weight": r(n_embd, n_ff)})
            if arch == "qwen2":
                self.t.update({p + "attn_q.bias": r(n_embd), p + "attn_k.bias": r(kv), p + "attn_v.bias": r(kv)})

    def write(self, path, n_ctx_train, base, extra_kv=(), rope_freqs=None):
        a = self.arch
        kvs = [("general.architecture", a), (a + ".context_length", n_ctx_train), (a + ".embedding_length", self.E),
               (a + ".block_count", self.L), (a + ".feed_forward_length", self.F),
               (a + ".attention.head_count", self.H), (a + ".attention.head_count_kv", self.Hkv),
               (a + ".attention.layer_norm_rms_epsilon", 1e-5), (a + ".rope.freq_base", float(base))]
        kvs += [(a + "." + k, v) for k, v in extra_kv]
        tensors = list(self.t.items())
        if rope_freqs is not None:
            tensors.append(("rope_freqs.weight", np.asarray(rope_freqs, dtype=np.float32)))
        write_gguf(path, kvs, tensors)


# ---------------------------------------------------------------- the reference
def rmsnorm(x, w, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def inv_freq_plain(D, base):
    return base ** (-np.arange(0, D, 2, dtype=np.float64) / D)


def inv_freq_llama3(D, base, factor, low, high, old_ctx):
    """Meta's apply_scaling (llama/model.py of the Llama 3.1 release), in float64."""
    out = []
    for f in inv_freq_plain(D, base):
        wavelen = 2 * math.pi / f
        if wavelen < old_ctx / high:
            out.append(f)
        elif wavelen > old_ctx / low:
            out.append(f / factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return np.array(out)


def inv_freq_yarn(D, base, s, L, beta_fast=32.0, beta_slow=1.0):
    """YaRN's NTK-by-parts frequencies (the paper's reference code)."""
    def corr_dim(turns):
        return D * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(corr_dim(beta_fast)), 0)
    high = min(math.ceil(corr_dim(beta_slow)), D - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(D // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrap_mask = 1 - ramp                              # 1: keep the original frequency
    f = inv_freq_plain(D, base)
    return f / s * (1 - extrap_mask) + f * extrap_mask


def rope(x, pos, inv_freq, mscale, neox):
    """x [T][n_heads][D]; rotate the pairs by pos * inv_freq, magnitude mscale."""
    ang = np.outer(pos, inv_freq)                       # [T][D/2]
    c, s = (np.cos(ang) * mscale)[:, None, :], (np.sin(ang) * mscale)[:, None, :]
    y = x.copy()
    half = x.shape[-1] // 2
    if neox:
        a, b = x[..., :half], x[..., half:]
        y[..., :half], y[..., half:] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0::2], x[..., 1::2]
        y[..., 0::2], y[..., 1::2] = a * c - b * s, a * s + b * c
    return y


def forward(m, toks, inv_freq, mscale):
    t = {k: v.astype(np.float64) for k, v in m.t.items()}
    T, D, H, Hkv = len(toks), m.D, m.H, m.Hkv
    pos = np.arange(T, dtype=np.float64)
    x = t["token_embd.weight"][toks]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(m.L):
        p = "blk.%d." % l
        xb = rmsnorm(x, t[p + "attn_norm.weight"])
        q, k, v = xb @ t[p + "attn_q.weight"].T, xb @ t[p + "attn_k.weight"].T, xb @ t[p + "attn_v.weight"].T
        if m.arch == "qwen2":
            q, k, v = q + t[p + "attn_q.bias"], k + t[p + "attn_k.bias"], v + t[p + "attn_v.bias"]
        q = rope(q.reshape(T, H, D), pos, inv_freq, mscale, m.arch == "qwen2")
        k = rope(k.reshape(T, Hkv, D), pos, inv_freq, mscale, m.arch == "qwen2")
        v = v.reshape(T, Hkv, D)
        att = np.zeros((T, H, D))
        for h in range(H):
            g = h // (H // Hkv)
            sc = q[:, h] @ k[:, g].T / math.sqrt(D) + mask
            w = np.exp(sc - sc.max(axis=1, keepdims=True))
            att[:, h] = (w / w.sum(axis=1, keepdims=True)) @ v[:, g]
        x = x + att.reshape(T, H * D) @ t[p + "attn_output.weight"].T
        xb = rmsnorm(x, t[p + "ffn_norm.weight"])
        gt, up = xb @ t[p + "ffn_gate.weight"].T, xb @ t[p + "ffn_up.weight"].T
        x = x + (gt / (1 + np.exp(-gt)) * up) @ t[p + "ffn_down.weight"].T
    return rmsnorm(x, t["output_norm.weight"]) @ t["output.weight"].T


# ---------------------------------------------------------------- edgellm
def run(cli, args):
    return subprocess.run([cli] + args, capture_output=True, text=True, errors="replace")


def edgellm_logits(cli, path, toks, n_vocab, work, decode):
    out = os.path.join(work, "logits.f32")
    args = ["logits", "-m", path, "--tokens", " ".join(map(str, toks)), "-o", out, "-t", "1"]
    r = run(cli, args + (["--decode"] if decode else []))
    if not check(r.returncode == 0, "edgellm logits %s: exit %d: %s" % (path, r.returncode, r.stderr.strip())):
        return None
    return np.fromfile(out, dtype="<f4").astype(np.float64).reshape(len(toks), n_vocab)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="edgellm-rope-")
    os.makedirs(work, exist_ok=True)
    L_orig, T, base = 64, 160, 10000.0
    big = {a: Model(a, 48, 64, 2, 1, 2, 96, seed=11 if a == "llama" else 12) for a in ("llama", "qwen2")}
    small = Model("llama", 32, 16, 2, 2, 1, 32, seed=13)       # head_dim 8: 4 pairs, as in the issue
    toks = [int(t) for t in np.random.default_rng(5).integers(0, 32, T)]
    D = big["llama"].D
    l3 = inv_freq_llama3(D, base, 8.0, 1.0, 4.0, L_orig)
    yarn_mscale = 0.1 * math.log(4.0) + 1
    # name, model, file keys, rope_freqs, reference inv_freq, mscale, info must mention
    cases = [
        ("plain", big["llama"], [], None, inv_freq_plain(D, base), 1.0, "rope scaling: none"),
        ("freqs-1-1-4-32", small, [], [1, 1, 4, 32], inv_freq_plain(8, base) / np.array([1, 1, 4, 32.0]), 1.0,
         "frequency factors from rope_freqs.weight (4 values, 1 .. 32)"),
        ("llama3", big["llama"], [], (inv_freq_plain(D, base) / l3).astype(np.float32), l3, 1.0,
         "frequency factors from rope_freqs.weight (16 values"),
        ("linear", big["llama"], [("rope.scaling.type", "linear"), ("rope.scaling.factor", 4.0)], None,
         inv_freq_plain(D, base) / 4, 1.0, "linear, factor 4"),
        ("factor-only", big["llama"], [("rope.scaling.factor", 4.0)], None, inv_freq_plain(D, base) / 4, 1.0,
         "linear, factor 4"),
        ("type-none", big["llama"], [("rope.scaling.type", "none"), ("rope.scaling.factor", 4.0)], None,
         inv_freq_plain(D, base), 1.0, "rope scaling: none"),
        ("yarn", big["llama"], [("rope.scaling.type", "yarn"), ("rope.scaling.factor", 4.0),
                                ("rope.scaling.original_context_length", L_orig)], None,
         inv_freq_yarn(D, base, 4.0, L_orig), yarn_mscale, "yarn, factor 4, original context 64"),
        ("yarn-attn-factor", big["llama"], [("rope.scaling.type", "yarn"), ("rope.scaling.factor", 4.0),
                                            ("rope.scaling.original_context_length", L_orig),
                                            ("rope.scaling.attn_factor", 0.8)], None,
         inv_freq_yarn(D, base, 4.0, L_orig), yarn_mscale * 0.8, "magnitude %.4f" % (yarn_mscale * 0.8)),
        ("qwen2-yarn", big["qwen2"], [("rope.scaling.type", "yarn"), ("rope.scaling.factor", 4.0),
                                      ("rope.scaling.original_context_length", L_orig)], None,
         inv_freq_yarn(D, base, 4.0, L_orig), yarn_mscale, "yarn, factor 4"),
        ("linear-and-freqs", big["llama"], [("rope.scaling.factor", 2.0)], (inv_freq_plain(D, base) / l3).astype(np.float32),
         l3 / 2, 1.0, "linear, factor 2 (positions / 2); frequency factors"),
    ]
    for name, m, keys, freqs, inv_freq, mscale, info_says in cases:
        path = os.path.join(work, "rope-%s.gguf" % name)
        m.write(path, 4 * L_orig, base, keys, freqs)
        ref = forward(m, toks[:T], inv_freq, mscale)
        plain = forward(m, toks[:T], inv_freq_plain(m.D, base), 1.0)
        scale = 1 + np.abs(ref).max()
        effect = np.abs(ref - plain).max() / scale
        if name not in ("plain", "type-none"):
            check(effect > MIN_EFFECT * TOL, "%s: the scaling changes the reference logits by only %.3g" % (name, effect))
        for decode in (False, True):
            got = edgellm_logits(cli, path, toks[:T], m.V, work, decode)
            if got is None:
                continue
            err = np.abs(got - ref).max() / scale
            past = np.abs(got[L_orig:] - ref[L_orig:]).max() / scale
            print("%-18s %-7s err %.2e (past the original context %.2e), scaling effect %.2e" %
                  (name, "decode" if decode else "prefill", err, past, effect))
            check(err <= TOL, "%s (%s): max error %.3g > %.3g" % (name, "decode" if decode else "prefill", err, TOL))
        r = run(cli, ["info", path])
        check(r.returncode == 0 and info_says in r.stdout,
              "%s: info does not say '%s':\n%s" % (name, info_says, "\n".join(r.stdout.splitlines()[:4])))

    # types edgellm does not implement: refused with a message, not ignored
    for typ in ("longrope", "dynamic"):
        path = os.path.join(work, "rope-%s.gguf" % typ)
        big["llama"].write(path, 4 * L_orig, base, [("rope.scaling.type", typ), ("rope.scaling.factor", 4.0)])
        r = run(cli, ["run", "-m", path, "-p", "x", "-n", "1"])
        check(r.returncode == 1 and "RoPE scaling type '%s'" % typ in r.stderr and "not supported" in r.stderr,
              "%s: run should refuse it (exit %d): %s" % (typ, r.returncode, r.stderr.strip()))
        r = run(cli, ["info", path])
        check(r.returncode == 0 and "rope scaling: not run by edgellm" in r.stdout and typ in r.stdout,
              "%s: info should say edgellm does not run it:\n%s" % (typ, r.stdout[:400]))
        r = run(cli, ["plan", "-m", path, "--device", "pi5-8gb"])
        check(r.returncode == 0 and "rope scaling: edgellm run refuses this file" in r.stdout,
              "%s: plan should say run refuses it:\n%s" % (typ, r.stdout[:600]))
    # a bad value is a format error naming the key
    path = os.path.join(work, "rope-bad-freqs.gguf")
    big["llama"].write(path, 4 * L_orig, base, [], [1.0, 2.0, 0.0] + [1.0] * 13)
    r = run(cli, ["run", "-m", path, "-p", "x", "-n", "1"])
    check(r.returncode == 1 and "rope_freqs.weight[2]" in r.stderr, "bad rope_freqs: %s" % r.stderr.strip())
    r = run(cli, ["plan", "-m", os.path.join(work, "rope-yarn.gguf"), "--device", "pi5-8gb"])
    check(r.returncode == 0 and "rope scaling: yarn, factor 4, original context 64" in r.stdout,
          "plan does not show the yarn scaling:\n%s" % r.stdout[:600])
    print("test_rope_reference: %s" % ("%d failure(s)" % failures if failures else "all passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
