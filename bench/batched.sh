#!/bin/sh
# bench/batched.sh — aggregate decode speed with several sequences at once: `edgellm bench -b`
# and, when a `llama-batched-bench` binary is on PATH (llama.cpp's tools/batched-bench, built
# by you from a llama.cpp checkout outside this repository: this script never builds it), the
# same test on the same file, alternating, REPEAT times. Both sides: the prompt not shared
# (each sequence prefills its own PP tokens), F16 KV cache (llama.cpp's default; edgellm gets
# --kv-type f16), the same thread count. Prints both tables, then per round the ratios
# edgellm S_TG(B) / S_TG(1) and edgellm S_TG / llama.cpp S_TG at each B.
#
# usage: bench/batched.sh MODEL.gguf [THREADS] [BATCHES] [PP] [TG]
#        (defaults: 2, 1,2,4,8, 128, 64; REPEAT=2 rounds; EDGELLM=build/edgellm;
#         LLAMA_BATCHED_BENCH=name or path of llama.cpp's binary, default llama-batched-bench)
# A tinyllama-1.1b-shape Q4_0 file: edgellm synth --shape tinyllama-1.1b --type q4_0 -o FILE
set -e
cd "$(dirname "$0")/.."
M=${1:?usage: bench/batched.sh MODEL.gguf [THREADS] [BATCHES] [PP] [TG]}
T=${2:-2}
BL=${3:-1,2,4,8}
PP=${4:-128}
TG=${5:-64}
REPEAT=${REPEAT:-2}
E=${EDGELLM:-build/edgellm}
L=${LLAMA_BATCHED_BENCH:-llama-batched-bench}
[ -x "$E" ] || { echo "batched.sh: $E not built (cmake -B build && cmake --build build)"; exit 1; }
[ -r "$M" ] || { echo "batched.sh: $M: no such file"; exit 1; }
MAXB=$(echo "$BL" | tr ',' '\n' | sort -n | tail -1)
CTX=$((MAXB * (PP + TG)))   # llama.cpp's cache is shared by all sequences: B x (PP + TG) cells
if command -v "$L" >/dev/null 2>&1; then HAVE_LLAMA=1; else HAVE_LLAMA=0; fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/edgellm-batched.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

echo "machine: $(uname -m), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "model: $M; threads $T; B = $BL; PP $PP, TG $TG; KV f16; $REPEAT round(s)"
[ "$HAVE_LLAMA" = 1 ] || echo "llama.cpp: '$L' is not on PATH: only edgellm is measured (build llama-batched-bench from a llama.cpp checkout and put it on PATH, or set LLAMA_BATCHED_BENCH)"

# S_TG per B from a batched-bench markdown table (| PP | TG | B | N_KV | T_PP | S_PP | T_TG | S_TG | ...)
stg() { awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $4); gsub(/ /, "", $9); print $4, $9 }' "$1"; }

r=1
while [ "$r" -le "$REPEAT" ]; do
    echo
    echo "== round $r, load: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$E" bench -m "$M" -b "$BL" -p "$PP" -n "$TG" -t "$T" --kv-type f16 > "$OUT/e$r.md"
    echo "-- edgellm: $E bench -m $M -b $BL -p $PP -n $TG -t $T --kv-type f16"
    cat "$OUT/e$r.md"
    if [ "$HAVE_LLAMA" = 1 ]; then
        "$L" -m "$M" -c "$CTX" -b 2048 -ub 512 -npp "$PP" -ntg "$TG" -npl "$BL" -t "$T" > "$OUT/l$r.md" 2>&1 ||
            { echo "batched.sh: $L failed:"; tail -20 "$OUT/l$r.md"; exit 1; }
        echo "-- llama.cpp: $L -m $M -c $CTX -b 2048 -ub 512 -npp $PP -ntg $TG -npl $BL -t $T"
        grep -E '^main: n_kv_max|^\|' "$OUT/l$r.md"
    fi
    echo "-- round $r ratios (S_TG = aggregate generation tok/s):"
    stg "$OUT/e$r.md" > "$OUT/e$r.stg"
    [ "$HAVE_LLAMA" = 1 ] && stg "$OUT/l$r.md" > "$OUT/l$r.stg" || : > "$OUT/l$r.stg"
    awk 'FILENAME == ARGV[1] { l[$1] = $2; next }
         { b[++n] = $1; s[n] = $2; if ($1 == 1) b1 = $2 }
         END { for (i = 1; i <= n; i++) {
                   line = sprintf("B=%-3d edgellm S_TG %8.2f", b[i], s[i])
                   if (b1 > 0) line = line sprintf("  (%.2fx B=1)", s[i] / b1)
                   if (l[b[i]] > 0) line = line sprintf("  llama.cpp %8.2f  edgellm/llama.cpp %.2fx", l[b[i]], s[i] / l[b[i]])
                   print line } }' "$OUT/l$r.stg" "$OUT/e$r.stg"
    r=$((r + 1))
done
