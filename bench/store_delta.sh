#!/bin/sh
# bench/store_delta.sh — patch sizes of `edgellm delta` against the full file and against
# `zstd --patch-from` (Debian zstd), for three updates of one model: a metadata-only change,
# a fine-tune that changes 10 % of the tensors (bench/store_variants.c perturbs them), and a
# requantization of every tensor (Q4_0 -> Q4_K_M of the same weights); then activate and
# rollback times of a store holding the model. Prints a Markdown table.
# Usage: sh bench/store_delta.sh [BUILD_DIR] [SHAPE]   (defaults: build, smollm2-135m)
set -eu
build="${1:-build}"
shape="${2:-smollm2-135m}"
e="$build/edgellm"
v="$build/store_variants"
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
"$e" synth --shape "$shape" --type q4_0 --seed 1 -o "$d/base.gguf" >/dev/null 2>&1
"$e" synth --shape "$shape" --type q4_k_m --seed 1 -o "$d/requant.gguf" >/dev/null 2>&1
"$v" meta "$d/base.gguf" "$d/meta.gguf" >/dev/null
"$v" finetune "$d/base.gguf" "$d/finetune.gguf" 10 >"$d/ft.txt"
size() { stat -c %s "$1"; }
echo "model: synth $shape q4_0, $(size "$d/base.gguf") bytes; $(cat "$d/ft.txt")"
echo
echo "| update | new file (bytes) | edgellm delta (bytes) | % of file | zstd --patch-from -19 (bytes) | % of file | tensors copied / xor / literal |"
echo "|---|---:|---:|---:|---:|---:|---|"
for u in meta finetune requant; do
    new="$d/$u.gguf"
    out=$("$e" delta "$d/base.gguf" "$new" -o "$d/$u.patch")
    "$e" delta --apply "$d/base.gguf" "$d/$u.patch" -o "$d/$u.check" >/dev/null
    cmp -s "$new" "$d/$u.check" || { echo "$u: patched file differs" >&2; exit 1; }
    zstd -q -19 --long=31 --patch-from="$d/base.gguf" "$new" -o "$d/$u.zst" -f 2>/dev/null
    ns=$(size "$new"); ps=$(size "$d/$u.patch"); zs=$(size "$d/$u.zst")
    tc=$(echo "$out" | sed -E 's/.*tensors: ([0-9]+) copied, ([0-9]+) xor, ([0-9]+) literal.*/\1 \/ \2 \/ \3/')
    awk -v u="$u" -v ns="$ns" -v ps="$ps" -v zs="$zs" -v tc="$tc" 'BEGIN {
        printf "| %s | %d | %d | %.2f | %d | %.2f | %s |\n", u, ns, ps, 100 * ps / ns, zs, 100 * zs / ns, tc }'
done
# activate / rollback: one rename each, whatever the model size
s="$d/store"
"$e" store add "$d/base.gguf" --name m --version 1 --allow-unsigned --activate --no-smoke-test --store "$s" >/dev/null
"$e" store add "$d/finetune.gguf" --name m --version 2 --allow-unsigned --no-smoke-test --store "$s" >/dev/null
echo
"$e" store activate m@2 --store "$s"
"$e" store rollback m --store "$s"
