#!/bin/sh
# speculative.sh — speculative decoding against plain decoding, side by side in one run.
#
#   bench/speculative.sh [-e build/edgellm] [-n 64] [-t 1] [-r 3] TARGET.gguf PROMPT_FILE [CONFIG...]
#
# A CONFIG is the extra `edgellm run` options of one speculative setting, quoted as one word:
#   "--draft DRAFT.gguf"  "--draft self:q4_0"  "--lookup 3"  "--draft D.gguf --draft-fixed"
# (default: "--lookup 3"). Every run is greedy (--temp 0), so each speculative run must print
# exactly the plain run's text (checked: IDENTICAL / DIFFERENT). Plain and speculative runs
# alternate, -r times each; the table gives the median decode tok/s of each, the speed-up
# (median speculative / median plain), the acceptance (accepted / drafted) and the target
# passes per generated token.
#
# With llama.cpp's llama-speculative-simple on PATH (or LLAMA_SPEC=path) and a --draft FILE
# config, the same target, draft, prompt and -n go through it too, and its own summary lines
# (n_drafted, n_accept, accept, decoded ... speed) are printed after the table. llama.cpp is
# built outside this repository (see docs/speculative.md).
set -eu
EDGELLM=build/edgellm
N=64
T=1
R=3
while [ $# -gt 0 ]; do
    case "$1" in
    -e) EDGELLM=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    -t) T=$2; shift 2 ;;
    -r) R=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "usage: $0 [-e EDGELLM] [-n N] [-t T] [-r R] TARGET.gguf PROMPT_FILE [CONFIG...]" >&2; exit 2; }
TARGET=$1
PROMPT=$2
shift 2
[ $# -gt 0 ] || set -- "--lookup 3"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME OPTIONS...: one greedy run; stdout to $TMP/NAME.out, stderr to $TMP/NAME.err
run() {
    name=$1; shift
    "$EDGELLM" run -m "$TARGET" -f "$PROMPT" -n "$N" -t "$T" --temp 0 -c 2048 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
}
toks() { sed -n 's/^generated: .* ms, \([0-9.]*\) tok\/s$/\1/p' "$1"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "target: $TARGET; prompt: $PROMPT; -n $N, -t $T, $R runs each, greedy"
echo
echo "| setting | plain tok/s | speculative tok/s | speed-up | acceptance | passes/token | output |"
echo "|---|---:|---:|---:|---:|---:|---|"
i=0
for cfg in "$@"; do
    i=$((i + 1))
    : >"$TMP/plain$i.tok"
    : >"$TMP/spec$i.tok"
    r=0
    while [ $r -lt "$R" ]; do
        r=$((r + 1))
        run plain
        toks "$TMP/plain.err" >>"$TMP/plain$i.tok"
        # shellcheck disable=SC2086
        run spec $cfg
        toks "$TMP/spec.err" >>"$TMP/spec$i.tok"
    done
    p=$(median <"$TMP/plain$i.tok")
    s=$(median <"$TMP/spec$i.tok")
    acc=$(sed -n 's/^speculative: drafted \([0-9]*\) .* accepted \([0-9]*\) (\([0-9.]*\) %).*/\2\/\1 (\3 %)/p' "$TMP/spec.err")
    ppt=$(sed -n 's/.*target passes (\([0-9.]*\) per token).*/\1/p' "$TMP/spec.err")
    same=DIFFERENT
    cmp -s "$TMP/plain.out" "$TMP/spec.out" && same=IDENTICAL
    echo "| \`$cfg\` | $p | $s | $(awk -v a="$s" -v b="$p" 'BEGIN {printf "%.2fx", (b > 0) ? a / b : 0}') | $acc | $ppt | $same |"
done

LLAMA_SPEC=${LLAMA_SPEC:-$(command -v llama-speculative-simple || true)}
for cfg in "$@"; do
    case "$cfg" in
    --draft\ self:*) continue ;;
    --draft\ *) ;;
    *) continue ;;
    esac
    draft=$(echo "$cfg" | awk '{print $2}')
    echo
    if [ -z "$LLAMA_SPEC" ]; then
        echo "llama-speculative-simple: not found (PATH or LLAMA_SPEC): llama.cpp not compared"
        break
    fi
    echo "llama.cpp llama-speculative-simple, draft $draft:"
    # its flags at llama.cpp 3f545be: --spec-type selects the drafter, --spec-draft-n-max/-min
    # replace the removed --draft-max/--draft-min
    "$LLAMA_SPEC" -m "$TARGET" -md "$draft" -f "$PROMPT" -n "$N" -t "$T" -td "$T" --temp 0 -c 2048 \
        --spec-type draft-simple --spec-draft-n-max 16 --spec-draft-n-min 0 2>&1 |
        grep -E "n_drafted|n_accept|accept  |decoded" || true
done
