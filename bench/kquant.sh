#!/bin/sh
# bench/kquant.sh — prefill (pp) and decode (tg) speed of K-quant files, edgellm against
# llama.cpp side by side: for each file, `edgellm bench` and, when a `llama-bench` binary is
# on PATH (llama.cpp's tools/llama-bench, built by you from a llama.cpp checkout outside this
# repository: this script never builds it), llama-bench on the same file, alternating, REPEAT
# rounds. Both: the same thread count, -p PP -n TG, -r R repetitions (mean t/s), the F32 /
# F16 KV cache each tool defaults to. Prints per round the load average, both tables, and
# the ratios edgellm / llama.cpp of pp and tg.
#
# usage: bench/kquant.sh [THREADS] MODEL.gguf [MODEL2.gguf ...]
#        (THREADS default 2; PP=128 TG=64 R=3 REPEAT=2; EDGELLM=build/edgellm;
#         LLAMA_BENCH=name or path of llama.cpp's binary, default llama-bench;
#         EDGELLM_BASE=a second edgellm binary, e.g. an older build, measured the same way
#         right before EDGELLM, its ratios printed as "base"; a script that runs
#         EDGELLM_REPACK=0 exec build/edgellm "$@" compares the file's layout with the
#         load-time repacked one; EDGELLM_LAYOUT=q4_K_r16: edgellm reads MODEL.q4_K_r16.gguf
#         where it exists (the same weights in the stored layout, `edgellm quantize --layout`),
#         llama.cpp reads MODEL.gguf; LLAMA_MMAP=0,1: llama-bench's -mmp values, each run
#         and the faster per test counted, default both: on some machines llama.cpp is much
#         slower with its default mmap, 0 = read into memory)
# bench/compare-llamacpp.sh runs this at 1 and 2 threads on synthesised files and sums up.
# Files of the tinyllama-1.1b shape:
#   build/edgellm synth --shape tinyllama-1.1b --type q4_k_m -o /tmp/kq/tiny_q4_k_m.gguf
#   (likewise q5_k_m, q6_k; or edgellm quantize a real model)
set -e
cd "$(dirname "$0")/.."
case "${1:-}" in *.gguf) T=2 ;; "") T=2 ;; *) T=$1; shift ;; esac
[ $# -ge 1 ] || { echo "usage: bench/kquant.sh [THREADS] MODEL.gguf [MODEL2.gguf ...]"; exit 1; }
PP=${PP:-128}
TG=${TG:-64}
R=${R:-3}
REPEAT=${REPEAT:-2}
E=${EDGELLM:-build/edgellm}
L=${LLAMA_BENCH:-llama-bench}
MMP=${LLAMA_MMAP:-0,1}
B=${EDGELLM_BASE:-}
[ -z "$B" ] || [ -x "$B" ] || { echo "kquant.sh: EDGELLM_BASE=$B is not executable"; exit 1; }
[ -x "$E" ] || { echo "kquant.sh: $E not built (cmake -B build && cmake --build build)"; exit 1; }
for m in "$@"; do [ -r "$m" ] || { echo "kquant.sh: $m: no such file"; exit 1; }; done
if command -v "$L" >/dev/null 2>&1; then HAVE_LLAMA=1; else HAVE_LLAMA=0; fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/edgellm-kquant.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

echo "machine: $(uname -m), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "threads $T; pp$PP, tg$TG; -r $R; $REPEAT round(s)"
echo "edgellm: $("$E" --version)"
if [ "$HAVE_LLAMA" = 1 ]; then echo "llama.cpp: $(command -v "$L")"
else echo "llama.cpp: '$L' is not on PATH: only edgellm is measured (build llama-bench from a llama.cpp checkout and put it on PATH, or set LLAMA_BENCH)"; fi

# "pp t/s tg t/s" from a markdown table whose test column is pp<N> / tg<N> and whose t/s
# column is the first "a ± b" cell after it; of several rows per test (llama-bench's -mmp
# 0,1), the fastest.
ts() {
    awk -F'|' '{ for (i = 2; i < NF; i++) if ($i ~ /^ *(pp|tg)[0-9]+ *$/) {
                     t = $i; gsub(/ /, "", t)
                     for (j = i + 1; j < NF; j++) if ($j ~ /±/) {
                         split($j, a, "±"); k = substr(t, 1, 2); if (a[1] + 0 > v[k]) v[k] = a[1] + 0; break }
                     break } }
         END { printf "%s %s\n", v["pp"] + 0, v["tg"] + 0 }' "$1"
}

r=1
while [ "$r" -le "$REPEAT" ]; do
    for m in "$@"; do
        b=$(basename "$m" .gguf)
        echo
        echo "== round $r, $b, load: $(cut -d' ' -f1-3 /proc/loadavg)"
        if [ -n "$B" ]; then
            "$B" bench -m "$m" -p "$PP" -n "$TG" -t "$T" -r "$R" > "$OUT/b.md" 2>&1 ||
                { echo "kquant.sh: $B failed:"; tail -20 "$OUT/b.md"; exit 1; }
            echo "-- edgellm base: $B bench -m $m -p $PP -n $TG -t $T -r $R"
            grep -E '^\||kernels:' "$OUT/b.md"
        fi
        em=$m
        [ -n "${EDGELLM_LAYOUT:-}" ] && [ -r "${m%.gguf}.$EDGELLM_LAYOUT.gguf" ] && em=${m%.gguf}.$EDGELLM_LAYOUT.gguf
        "$E" bench -m "$em" -p "$PP" -n "$TG" -t "$T" -r "$R" > "$OUT/e.md" 2>&1 ||
            { echo "kquant.sh: $E failed:"; tail -20 "$OUT/e.md"; exit 1; }
        echo "-- edgellm: $E bench -m $em -p $PP -n $TG -t $T -r $R"
        grep -E '^\||kernels:' "$OUT/e.md"
        set -- $(ts "$OUT/e.md") "$@"
        echo "edgellm round $r $b pp$PP $1 tg$TG $2"      # t/s, one line (bench/compare-llamacpp.sh reads it)
        shift 2
        if [ "$HAVE_LLAMA" = 1 ]; then
            "$L" -m "$m" -p "$PP" -n "$TG" -t "$T" -r "$R" -mmp "$MMP" > "$OUT/l.md" 2>&1 ||
                { echo "kquant.sh: $L failed:"; tail -20 "$OUT/l.md"; exit 1; }
            echo "-- llama.cpp: $L -m $m -p $PP -n $TG -t $T -r $R -mmp $MMP (the faster row per test counts)"
            grep -E '^\|' "$OUT/l.md"
            for side in ${B:+b} e; do
                set -- $(ts "$OUT/$side.md") $(ts "$OUT/l.md") "$@"
                awk -v b="$b" -v r="$r" -v ep="$1" -v et="$2" -v lp="$3" -v lt="$4" -v pp="$PP" -v tg="$TG" \
                    -v who="$([ "$side" = b ] && echo base || echo edgellm)" 'BEGIN {
                    printf "ratio round %d %-14s %-7s pp%d %7.2f / %7.2f = %.2fx   tg%d %6.2f / %6.2f = %.2fx\n",
                           r, b, who, pp, ep, lp, (lp > 0 ? ep / lp : 0), tg, et, lt, (lt > 0 ? et / lt : 0) }' |
                    tee -a "$OUT/ratios"
                shift 4
            done
        fi
    done
    r=$((r + 1))
done
if [ -s "$OUT/ratios" ]; then
    echo
    echo "== ratios edgellm / llama.cpp (t/s), load now: $(cut -d' ' -f1-3 /proc/loadavg)"
    cat "$OUT/ratios"
fi
