#!/bin/bash
# fuzz/run.sh SECONDS [TARGET...] — build the libFuzzer targets (clang, ASan + UBSan) and
# run each for SECONDS, one after the other on one core. Targets: gguf llama2c tokenizer
# json cli_args template safetensors server_request store (default: all).
#
# Options (before SECONDS):
#   --merge   afterwards, merge what the run found into fuzz/corpus/<target> (libFuzzer
#             -merge=1 keeps only inputs that add coverage; only inputs up to 1 KB are
#             considered, to keep the committed corpora small)
# Environment: BUILD_DIR (default <repo>/build-fuzz), EDGELLM_SHARED (fixtures, default
# <repo>/../shared), CC (default clang), FUZZ_SEED (libFuzzer -seed; unset or 0: a new
# random seed each run. The CI passes a fixed seed, so that its smoke run replays the same
# input sequence on every machine and a finding there is one a longer local run with that
# seed has the chance to find first.)
#
# Each run starts from fuzz/corpus/<target> (committed seeds, see fuzz/make_corpus.py)
# plus what earlier runs in BUILD_DIR found (BUILD_DIR/work/corpus/<target>). A crash,
# leak, timeout or out-of-memory input lands in BUILD_DIR/work/artifacts/<target>/: then
# the script says so and exits 1. Minimise it (fuzz_<target> -minimize_crash=1 FILE),
# fix the bug, and add the input to tests/corpus/<target>/ so CTest keeps checking it.
# One summary line per target ("fuzz gguf: 51234 runs in 60 s ...") and a last line
# "fuzz: N passed, M failed".
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
secs="${1:-}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
    echo "usage: fuzz/run.sh [--merge] SECONDS [gguf|llama2c|tokenizer|json|cli_args|template|safetensors|server_request|store ...]" >&2
    exit 2
fi
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf llama2c tokenizer json cli_args template safetensors server_request store)

build="$(realpath -m "${BUILD_DIR:-$root/build-fuzz}")"   # absolute: the targets chdir (cli_args)
export EDGELLM_SHARED="${EDGELLM_SHARED:-$root/../shared}"
cc="${CC:-clang}"
if ! command -v "$cc" >/dev/null; then echo "fuzz: $cc not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; fi
work="$build/work"
mkdir -p "$work"
CC="$cc" cmake -S "$here" -B "$build" -DEDGELLM_SHARED_DIR="$EDGELLM_SHARED" >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; echo "fuzz: configure failed" >&2; exit 1; }
nice cmake --build "$build" -j2 >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; echo "fuzz: build failed" >&2; exit 1; }

# Dictionaries: every flag the CLI compares its arguments with; the JSON keys it reads.
grep -ohE '"-{1,2}[a-zA-Z][a-zA-Z0-9-]*"' "$root"/cli/*.[ch] | sort -u > "$work/cli_args.dict"
grep -ohE '"(plan|run|info|tokenize|logits|convert|export|quantize|synth|bench|eval)"' "$root"/cli/main.c | sort -u >> "$work/cli_args.dict"
grep -ohE '"[a-z][a-z0-9_-]*"' "$root"/cli/plan_json.c | sort -u > "$work/json.dict"
# Jinja: the tag and expression syntax, and the names of filters, tests and methods.
{ printf '"%s"\n' '{{' '}}' '{%' '%}' '{#' '#}' '{{-' '-}}' '{%-' '-%}' '{%+' '|' '~' '**' '//' '==' '!=' '<=' '>=' "'" '"' '[' ']' '(' ')' ':' ','
  grep -ohE '\{"[a-z_=<>!]+", [FTJ][A-Z_0-9]*\}' "$root"/src/runtime/jinja_filters.c "$root"/src/runtime/jinja_methods.c |
      sed -E 's/\{("[^"]+").*/\1/'
  printf '"%s"\n' for in if elif else endif endfor set endset macro endmacro call endcall filter endfilter raw endraw \
      namespace loop messages is not and or none true false defined break continue generation caller range
} | sort -u > "$work/template.dict"
# The server's request fields and the JSON around them.
{ grep -ohE '"[a-z_]+"' "$root"/src/tools/server_request.c | sort -u
  printf '"%s"\n' '{' '}' '[' ']' ':' ',' 'true' 'false' 'null' '\\u0000' '\\ud800' '1e400' '-1'
} > "$work/server_request.dict"

# the store's manifest fields and the patch magic and operations
{ grep -ohE '"[a-z_0-9]+"' "$root"/src/tools/store.c | sort -u
  printf '"%s"\n' 'ELPATCH1' '{' '}' '[' ']' ':' ',' 'C' 'D' 'X' 'H' 'E' '2026-12-01T18:47:15Z'
} > "$work/store.dict"

# safetensors: the header's keys and dtypes
printf '"%s"\n' '__metadata__' 'dtype' 'shape' 'data_offsets' 'F32' 'F16' 'BF16' 'I64' 'format' 'pt' \
    '{\"' '\": ' ', ' '[0, ' ']}' > "$work/safetensors.dict"

passed=0; failed=0
for t in "${targets[@]}"; do
    bin="$build/fuzz_$t"
    if [ ! -x "$bin" ]; then echo "fuzz $t: no such target" >&2; failed=$((failed + 1)); continue; fi
    corpus="$work/corpus/$t"; art="$work/artifacts/$t"
    mkdir -p "$corpus" "$art"
    [ -d "$here/corpus/$t" ] && cp -n "$here/corpus/$t"/* "$corpus"/ 2>/dev/null
    extra=()
    case "$t" in
        gguf) extra=(-max_len=65536) ;;
        llama2c) extra=(-max_len=16384) ;;
        tokenizer) extra=(-max_len=4096) ;;
        json) extra=(-max_len=8192 -dict="$work/json.dict") ;;
        cli_args) extra=(-max_len=1024 -dict="$work/cli_args.dict" -close_fd_mask=3) ;;
        template) extra=(-max_len=8192 -dict="$work/template.dict") ;;
        safetensors) extra=(-max_len=4096 -dict="$work/safetensors.dict") ;;
        server_request) extra=(-max_len=8192 -dict="$work/server_request.dict") ;;
        store) extra=(-max_len=16384 -dict="$work/store.dict") ;;
    esac
    before=$(ls "$art" | wc -l)
    log="$work/$t.log"
    t0=$(date +%s)
    "$bin" -max_total_time="$secs" -seed="${FUZZ_SEED:-0}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
        -artifact_prefix="$art/" "${extra[@]}" "$corpus" >"$log" 2>&1
    rc=$?
    elapsed=$(( $(date +%s) - t0 ))
    runs=$(grep -a 'stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}')
    rate=$(grep -a 'stat::average_exec_per_sec' "$log" | tail -1 | awk '{print $2}')
    rss=$(grep -a 'stat::peak_rss_mb' "$log" | tail -1 | awk '{print $2}')
    n_corpus=$(ls "$corpus" | wc -l)
    found=$(( $(ls "$art" | wc -l) - before ))
    echo "fuzz $t: ${runs:-0} runs in $elapsed s (${rate:-0}/s), corpus $n_corpus inputs, peak RSS ${rss:-?} MB, $found new findings (exit $rc)"
    if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
        failed=$((failed + 1))
        grep -a -E 'ERROR|FUZZ_ASSERT|runtime error|SUMMARY' "$log" | head -5 | sed 's/^/    /'
        ls -t "$art" | head -3 | sed "s|^|    artifact: $art/|"
    else
        passed=$((passed + 1))
    fi
    if [ "$merge" -eq 1 ]; then
        mkdir -p "$here/corpus/$t"
        small="$work/small/$t"   # only inputs up to 1 KB, to keep the repository small
        rm -rf "$small" && mkdir -p "$small"
        find "$corpus" -type f -size -1025c -exec cp {} "$small"/ \;
        "$bin" -merge=1 "${extra[@]}" "$here/corpus/$t" "$small" >"$work/$t.merge.log" 2>&1
        echo "    merged: fuzz/corpus/$t now $(ls "$here/corpus/$t" | wc -l) inputs, $(du -sb "$here/corpus/$t" | cut -f1) bytes"
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
