#!/usr/bin/env python3
"""make_corpus.py — (re)build the seed corpora in fuzz/corpus/<target>/ from
fuzz/make_seeds (tiny generated models, vocabularies, checkpoints) and real files in
../shared. Run by a developer, not by CI: the corpora it writes are committed (kept
small: a few hundred KB in all). fuzz/run.sh --merge adds what fuzzing found, minimised.

usage: fuzz/make_corpus.py BUILD_DIR_WITH_make_seeds [SHARED_DIR]
"""
import json, os, shutil, struct, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1]
shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared")
corpus = os.path.join(here, "corpus")

def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def read(rel):
    with open(os.path.join(shared, rel), "rb") as f:
        return f.read()

# gguf + llama2c: generated seeds
with tempfile.TemporaryDirectory() as tmp:
    for sub in ("gguf", "llama2c"):
        os.makedirs(os.path.join(tmp, sub))
    subprocess.run([os.path.join(build, "make_seeds"), tmp], check=True)
    for sub in ("gguf", "llama2c"):
        for n in sorted(os.listdir(os.path.join(tmp, sub))):
            with open(os.path.join(tmp, sub, n), "rb") as f:
                put(sub, n, f.read())

# gguf: the header + metadata of a real model (tensor data cut: the reader rejects it,
# but its real tokenizer metadata is material for mutation)
g = read("models/stories260K/stories260K.gguf")
put("gguf", "stories260K-head.gguf", g[:14176])

# llama2c: real tokenizer.bin files alone (mode 1, n_vocab - 1 as u16 LE)
for rel, n_vocab in (("models/stories260K/tok512.bin", 512), ("models/babyllama-tok105/tok105.bin", 105)):
    put("llama2c", "tok-" + os.path.basename(rel), bytes([1]) + struct.pack("<H", n_vocab - 1) + read(rel))

# tokenizer: byte 0 = vocabulary index in fuzz_tokenizer.c's list (0 llama-spm, 1 gpt-2,
# 2 deepseek-llm, 3 deepseek-coder, 4 falcon, 5 starcoder, 6 phi-3), then the text
sep = b"\n__ggml_vocab_test__\n"
tests = read("data/vocab/ggml-vocab-gpt-2.gguf.inp").split(sep)
for i, t in enumerate(tests):
    put("tokenizer", "inp-%02d" % i, bytes([i % 7]) + t)
sample = read("models/text/tinystories_sample.txt")[:1500]
put("tokenizer", "stories-spm", bytes([0]) + sample)
put("tokenizer", "stories-gpt2", bytes([1]) + sample)
bad = b"ok \xff\xfe caf\xc3 \xe2\x82 \xed\xa0\x80 \x80x\xc3\xa4 \xf0\x9f\x98 end\xc0 \xf4\x90\x80\x80 \xc0\xaf <s></s><|endoftext|>"
for v in range(7):
    put("tokenizer", "invalid-utf8-%d" % v, bytes([v]) + bad)

# json: device files and eval results (cli/plan_json.c)
put("json", "devices.json", b'{"devices": [{"name": "my-board", "description": "RK3588 board, 16 GB", "ram_gib": 16, '
    b'"usable_gib": 14, "bandwidth_gbps": 19.2, "bandwidth_measured": false, "big_cores": 4, "little_cores": 4, '
    b'"gflops_per_big_core": 25, "gflops_per_little_core": 5, "npu": true, "source": "vendor datasheet"}]}\n')
put("json", "device-bare.json", b'[{"name": "a", "ram_gib": 4, "bandwidth_gbps": 8, "big_cores": 2}, '
    b'{"name": "b", "ram_gib": 0.5, "usable_gib": 0.25, "bandwidth_gbps": 1e3, "big_cores": 1024}]\n')
put("json", "device-one.json", b'{"name": "x", "ram_gib": 8, "bandwidth_gbps": 34, "big_cores": 8, "npu": false}')
put("json", "eval.json", b'{"format": "edgellm-eval-results", "version": 1, "model": "m.gguf", "reference": "m.gguf", '
    b'"text": "val.txt", "n_ctx": 256, "results": [{"type": "Q4_K_M", "size_bytes": 123, "bpw": 4.89, "ppl": 6.41, '
    b'"delta_ppl_pct": 2.8, "kld_mean": 0.031, "top1_pct": 91.9}, {"type": "Q8_0", "delta_ppl_pct": 0.1}]}\n')
for name in ("tinystories_mc.jsonl", "tinystories_gen.jsonl"):   # eval task sets (JSONL)
    tasks = os.path.join(here, "..", "data", "tasks", name)
    if os.path.exists(tasks):
        with open(tasks, "rb") as f:
            put("json", "tasks-" + name.split("_")[1], b"".join(f.readlines()[:3]))
schema = os.path.join(here, "..", "docs", "plan.schema.json")
if os.path.exists(schema):
    with open(schema, "rb") as f:
        put("json", "plan.schema.json", f.read()[:8192])

# cli_args: byte 0 = index in fuzz_cli_args.c's COMMANDS (0 plan, 1 run, 2 info,
# 3 tokenize, 4 logits, 5 convert, 6 quantize, 7 synth, 8 bench, 9 eval, 10 help,
# 11 --version, 12 = first argument is the command), then NUL-separated arguments
def cli(name, idx, *args):
    put("cli_args", name, bytes([idx]) + b"\0".join(a.encode() for a in args))
cli("plan-model-device", 0, "--model", "llama-2-7b", "--device", "pi5-8gb", "--ctx", "2048", "--json")
cli("plan-shape", 0, "--shape", "32,4096,32,8,14336,128256", "-d", "phone-mid", "--kv-type", "q8_0",
    "--batch", "4", "--scenario", "offline", "--types", "q5_0,i4_g64_sym", "--latency-ms", "150", "--calibration", "0.9")
cli("plan-list", 0, "--list")
cli("run", 1, "-m", "m.gguf", "-p", "Once upon a time", "-n", "16", "--temp", "0", "--top-k", "40", "--top-p", "0.9",
    "--min-p", "0.05", "--repeat-penalty", "1.1", "--repeat-last-n", "64", "--seed", "42", "-c", "256", "-t", "2", "--no-bos")
cli("info", 2, "m.gguf", "--check")
cli("tokenize", 3, "-m", "m.gguf", "-p", "Hello world", "--ids")
cli("logits", 4, "-m", "m.gguf", "--tokens", "1,2,3", "-o", "out.f32")
cli("convert", 5, "--llama2c", "m.bin", "--tokenizer", "tok.bin", "-o", "out.gguf")
cli("quantize", 6, "in.gguf", "out.gguf", "--type", "q4_k_m", "--keep", "*norm*", "--group", "64", "--asym",
    "--output-type", "q8_0", "--embd-type", "f16", "-t", "2", "--report", "r.json")
cli("synth", 7, "--shape", "tinyllama-1.1b", "--type", "q4_0", "-o", "out.gguf", "--seed", "1")
cli("bench", 8, "-m", "m.gguf", "-p", "128", "-n", "64", "-r", "5", "-t", "1,2")
cli("eval", 9, "-m", "m.gguf", "--ref", "r.gguf", "-f", "val.txt", "-c", "256")
cli("help", 12, "plan", "--help")
# template: byte 0 = conversation (bits 0..2), no generation prompt (bit 3), tool variables
# (bit 4); then the template (fuzz/fuzz_template_input.h). Official templates from ../shared
# and tests/chat-templates, and the feature snippets.
chat = os.path.join(shared, "data", "chat-templates")
repo_chat = os.path.join(here, "..", "tests", "chat-templates")
for root in (chat, repo_chat):
    if not os.path.isdir(root):
        continue
    for i, d in enumerate(sorted(os.listdir(root))):
        t = os.path.join(root, d, "template.jinja")
        if os.path.exists(t):
            with open(t, "rb") as f:
                body = f.read()
            put("template", "%s-%s" % (os.path.basename(root), d), bytes([(i % 8) | (16 if i % 3 == 0 else 0)]) + body)
snip = os.path.join(repo_chat, "snippets.txt")
if os.path.exists(snip):
    with open(snip, "rb") as f:
        records = f.read().split(b"\n### ")[1:]
    for i, rec in enumerate(records):
        name, _, body = rec.partition(b"\n")
        tmpl = body.split(b"\n--- ")[0]
        put("template", "snippet-" + name.decode(), bytes([3 | (16 if i % 4 == 0 else 0)]) + tmpl)
# safetensors: small files of the shapes checkpoints have (huggingface/safetensors format:
# u64 header length, JSON header padded with spaces, the data)
def safetensors(tensors, meta=True, pad=True):
    header, data = ({"__metadata__": {"format": "pt"}} if meta else {}), b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data
f32 = lambda *v: struct.pack("<%df" % len(v), *v)
put("safetensors", "one-f32", safetensors([("model.norm.weight", "F32", [4], f32(1, 2, 3, 4))]))
put("safetensors", "layer-mixed", safetensors([
    ("model.layers.0.self_attn.q_proj.weight", "BF16", [2, 4], bytes(range(16))),
    ("model.layers.0.self_attn.q_proj.bias", "F16", [2], b"\x00\x3c\x00\xc0"),
    ("model.layers.0.input_layernorm.weight", "F32", [4], f32(1, 1, 1, 1)),
    ("model.embed_tokens.weight", "F16", [3, 2], bytes(12))]))
put("safetensors", "scalar-empty-unpadded", safetensors([("s", "F32", [], f32(0.5)), ("e", "BF16", [0, 3], b"")],
                                                      meta=False, pad=False))
print("corpora written to", corpus)
