#!/bin/sh
# bench/compare-llamacpp.sh — edgellm against llama.cpp on the weight types people download,
# in one run: synthesises TinyLlama-1.1B-shape files (random weights, the real model's sizes;
# `edgellm synth`, kept in a cache folder and reused), then runs bench/kquant.sh (edgellm
# bench and llama-bench alternating per file and round) at each thread count, and prints
# one markdown table of the ratios edgellm / llama.cpp (t/s, pp and tg). llama-bench
# (llama.cpp's tools/llama-bench, built by you outside this repository) is used when it is
# on PATH or given by LLAMA_BENCH; without it the script says so and prints edgellm's
# t/s only.
#
# usage: bench/compare-llamacpp.sh [-p PP] [-n TG] [-r R] [-t THREADS] [--rounds N]
#                                  [--layout q4_K_r16] [TYPE ...]
#        TYPE: q4_0 q8_0 q4_k_m q5_k_m q6_k (default: all five)
#        -p 128 -n 64 -r 3 (llama-bench's meaning), -t "1 2" (thread counts, comma or space
#        separated), --rounds 1 (each file and thread count measured that many times);
#        --layout q4_K_r16: edgellm reads a copy of each K-quant file with its Q4_K matrices
#        in the stored layout (`edgellm quantize --layout`, cached beside it), llama.cpp the
#        file itself (that older stored layout is unpacked at load: it measures the load cost);
#        COMPARE_DIR: the cache folder (default /tmp/edgellm-compare; ~4.1 GB for all five);
#        EDGELLM (default build/edgellm), LLAMA_BENCH (default llama-bench), LLAMA_MMAP
#        (default 0,1: llama.cpp with and without mmap, the faster counted): as kquant.sh.
# Example: PATH=/path/to/llama.cpp/build/bin:$PATH bench/compare-llamacpp.sh
set -e
cd "$(dirname "$0")/.."
PP=${PP:-128}
TG=${TG:-64}
R=${R:-3}
THREADS=${THREADS:-1 2}
ROUNDS=${REPEAT:-1}
LAYOUT=
while [ $# -gt 0 ]; do
    case "$1" in
    -p) PP=$2; shift 2 ;;
    -n) TG=$2; shift 2 ;;
    -r) R=$2; shift 2 ;;
    -t) THREADS=$(echo "$2" | tr ',' ' '); shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compare-llamacpp.sh: unknown option $1 (--help)"; exit 1 ;;
    *) break ;;
    esac
done
TYPES=${*:-q4_0 q8_0 q4_k_m q5_k_m q6_k}
DIR=${COMPARE_DIR:-/tmp/edgellm-compare}
E=${EDGELLM:-build/edgellm}
L=${LLAMA_BENCH:-llama-bench}
SHAPE=tinyllama-1.1b
[ -x "$E" ] || { echo "compare-llamacpp.sh: $E not built (cmake -B build && cmake --build build)"; exit 1; }
for t in $TYPES; do
    case "$t" in q4_0|q8_0|q4_k_m|q5_k_m|q6_k) ;; *) echo "compare-llamacpp.sh: type $t: one of q4_0 q8_0 q4_k_m q5_k_m q6_k"; exit 1 ;; esac
done
mkdir -p "$DIR"
FILES=
for t in $TYPES; do
    f="$DIR/$SHAPE-$t.gguf"
    if [ -s "$f" ]; then echo "have $f"
    else
        echo "synthesising $f"
        "$E" synth --shape "$SHAPE" --type "$t" -o "$f.part" >/dev/null && mv "$f.part" "$f"
    fi
    FILES="$FILES $f"
    case "$LAYOUT:$t" in
    :*|*:q4_0|*:q8_0) ;;
    q4_K_r16:*)
        if [ ! -s "${f%.gguf}.$LAYOUT.gguf" ]; then
            echo "writing ${f%.gguf}.$LAYOUT.gguf"
            "$E" quantize "$f" "${f%.gguf}.$LAYOUT.gguf" --layout "$LAYOUT" 2>/dev/null
        fi ;;
    *) echo "compare-llamacpp.sh: --layout $LAYOUT: only q4_K_r16"; exit 1 ;;
    esac
done
if command -v "$L" >/dev/null 2>&1; then
    echo "llama.cpp: $(command -v "$L"), llama-bench -mmp ${LLAMA_MMAP:-0,1} (the faster per test)"
else
    echo "llama.cpp: '$L' is not on PATH: only edgellm is measured, no ratios (build llama-bench from a llama.cpp checkout and put it on PATH, or set LLAMA_BENCH)"
fi

LOG=$(mktemp "${TMPDIR:-/tmp}/edgellm-compare.XXXXXX")
trap 'rm -f "$LOG" "$LOG.t"' EXIT
for T in $THREADS; do
    echo
    echo "==== $T thread(s)"
    # shellcheck disable=SC2086
    (PP=$PP TG=$TG R=$R REPEAT=$ROUNDS EDGELLM=$E LLAMA_BENCH=$L EDGELLM_BASE='' EDGELLM_LAYOUT=$LAYOUT sh bench/kquant.sh "$T" $FILES 2>&1 ||
        echo "compare-llamacpp.sh: bench/kquant.sh failed") | tee "$LOG.t"
    grep -q '^compare-llamacpp.sh: ' "$LOG.t" && exit 1
    sed -e "s/^edgellm round /edgellm threads $T round /" -e "s/^ratio round /ratio threads $T round /" "$LOG.t" >> "$LOG"
done

# the summary: one row per type and thread count, the rounds' values side by side. Lines:
#   ratio threads T round R NAME edgellm ppN ep / lp = X.XXx tgN et / lt = Y.YYx
#   edgellm threads T round R NAME ppN X tgN Y
summary() {
    awk -v types="$TYPES" -v threads="$THREADS" -v shape="$SHAPE-" -v what="$1" '
        what == "ratio" && $1 == "ratio" && $7 == "edgellm" && !seen[$0]++ {   # kquant.sh repeats them at its end
            k = $6 " " $3; s = c[k]++ ? ", " : ""
            pp[k] = pp[k] s sprintf("%.2f×", substr($13, 1, length($13) - 1))
            tg[k] = tg[k] s sprintf("%.2f×", substr($19, 1, length($19) - 1)) }
        what == "tps" && $1 == "edgellm" && $2 == "threads" {
            k = $6 " " $3; s = c[k]++ ? ", " : ""
            pp[k] = pp[k] s $8; tg[k] = tg[k] s $10 }
        END { nt = split(types, ty, " "); nh = split(threads, th, " ")
              for (i = 1; i <= nt; i++) for (j = 1; j <= nh; j++) { k = shape ty[i] " " th[j]
                  if (k in c) printf "| %s | %s | %s | %s |\n", toupper(ty[i]), th[j], pp[k], tg[k] } }' "$LOG"
}
echo
echo "## edgellm / llama.cpp, $SHAPE-shape files, -p $PP -n $TG -r $R ($(date -u '+%Y-%m-%d %H:%M UTC'), load now $(cut -d' ' -f1-3 /proc/loadavg))"
echo "edgellm: $("$E" --version)${LAYOUT:+; K-quant files in the stored $LAYOUT layout}"
echo
if grep -q '^ratio ' "$LOG"; then
    echo "llama.cpp: $(command -v "$L"), llama-bench -mmp ${LLAMA_MMAP:-0,1} (the faster per test)"
    echo
    echo "| type | threads | pp$PP edgellm / llama.cpp | tg$TG edgellm / llama.cpp |"
    echo "|---|---|---|---|"
    summary ratio
else
    echo "llama-bench was not on PATH: edgellm's t/s only, no ratios"
    echo
    echo "| type | threads | pp$PP edgellm t/s | tg$TG edgellm t/s |"
    echo "|---|---|---|---|"
    summary tps
fi
