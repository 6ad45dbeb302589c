#!/bin/bash
# bench/server_load.sh — load runs of `edgellm serve` and, when a llama-server binary is found,
# of llama.cpp's server on the same model, slots and per-slot context, side by side in one run
# (bench/server_load.mjs is the client: streamed /v1/completions, 1, 4 and 8 concurrent
# clients for SECONDS each, then SEQ sequential requests). Not a test: it takes
# minutes and its numbers depend on the machine.
#
# usage: bench/server_load.sh [MODEL.gguf]
#   MODEL     default: a tinyllama-1.1b-shape Q4_0 written with `edgellm synth` into
#             $WORK (random weights: the speed of the real model, its text is noise)
# Environment: EDGELLM (default build/edgellm), LLAMA_SERVER (default: llama-server on PATH;
#   none: edgellm alone, and it says so), NP (slots, 8), CTX (cells per slot, 1024),
#   THREADS (2), SECONDS_EACH (60), CLIENTS ("1 4 8"), MAX_TOKENS (128), SEQ (1000, 0 = skip),
#   WORK (/tmp/edgellm-server-bench), KV (f16: llama-server's default cache type, for both).
# Output: one JSON line per run (in WORK/results.jsonl) and a Markdown table at the end.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
EDGELLM="${EDGELLM:-$root/build/edgellm}"
NP="${NP:-8}" CTX="${CTX:-1024}" THREADS="${THREADS:-2}" SECONDS_EACH="${SECONDS_EACH:-60}"
CLIENTS="${CLIENTS:-1 4 8}" MAX_TOKENS="${MAX_TOKENS:-128}" SEQ="${SEQ:-1000}" KV="${KV:-f16}"
WORK="${WORK:-/tmp/edgellm-server-bench}"
mkdir -p "$WORK"
model="${1:-$WORK/tinyllama-1.1b-q4_0.gguf}"
if [ ! -f "$model" ]; then
    echo "writing $model (edgellm synth --shape tinyllama-1.1b --type q4_0)"
    "$EDGELLM" synth --shape tinyllama-1.1b --type q4_0 -o "$model" || exit 1
fi
LLAMA_SERVER="${LLAMA_SERVER:-$(command -v llama-server || true)}"
[ -n "$LLAMA_SERVER" ] && [ ! -x "$LLAMA_SERVER" ] && LLAMA_SERVER=""
results="$WORK/results.jsonl"
: >"$results"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done; pids=(); }
trap cleanup EXIT INT TERM

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wait_health() {   # port pid: until /health says 200 (300 s at most)
    for _ in $(seq 1 1500); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" = 200 ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# Both servers run side by side (idle while the other is measured); each load level is run on
# one, then at once on the other, so that a change in what else the machine runs hits both.
labels=() ports=() spids=()
start_server() {   # label, then the command (without --port)
    local label=$1; shift
    local port; port=$(free_port)
    "$@" --port "$port" >"$WORK/$label.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    if ! wait_health "$port" "$pid"; then echo "$label did not start; see $WORK/$label.log"; tail -5 "$WORK/$label.log"; return 1; fi
    node "$here/server_load.mjs" --port "$port" --clients 1 --seconds 5 --max-tokens 16 --label warmup >/dev/null
    labels+=("$label") ports+=("$port") spids+=("$pid")
}

echo "model $model, -np $NP, $CTX cells per slot, $THREADS threads, KV $KV, $SECONDS_EACH s per run"
start_server edgellm "$EDGELLM" serve -m "$model" -np "$NP" -c "$CTX" -t "$THREADS" --kv-type "$KV" --host 127.0.0.1 || exit 1
if [ -n "$LLAMA_SERVER" ]; then
    # llama-server divides -c over its slots unless its KV cache is unified: give it NP x CTX
    # so that each slot has CTX cells, as edgellm's -c means.
    start_server llama-server "$LLAMA_SERVER" -m "$model" -np "$NP" -c $((NP * CTX)) -t "$THREADS" -tb "$THREADS" \
        --cache-type-k "$KV" --cache-type-v "$KV" --host 127.0.0.1 || exit 1
else
    echo "llama-server not found (set LLAMA_SERVER or put it on PATH): edgellm alone"
fi
for c in $CLIENTS; do
    for i in "${!labels[@]}"; do
        node "$here/server_load.mjs" --port "${ports[$i]}" --clients "$c" --seconds "$SECONDS_EACH" \
            --max-tokens "$MAX_TOKENS" --pid "${spids[$i]}" --label "${labels[$i]}" | tee -a "$results"
    done
done
if [ "$SEQ" -gt 0 ]; then
    for i in "${!labels[@]}"; do
        node "$here/server_load.mjs" --port "${ports[$i]}" --sequential "$SEQ" --max-tokens 16 --pid "${spids[$i]}" \
            --label "${labels[$i]}-seq" | tee -a "$results"
    done
fi
cleanup

node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
console.log("\n| server | clients | requests | errors | gen tok/s | TTFT p50 / p95 ms | ITL p50 / p95 ms | RSS start / end MiB |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows.filter((r) => !r.label.endsWith("-seq")))
  console.log(`| ${r.label} | ${r.clients} | ${r.requests} | ${r.errors} | ${r.tok_per_s} | ${r.ttft_p50_ms} / ${r.ttft_p95_ms} | ${r.itl_p50_ms} / ${r.itl_p95_ms} | ${r.rss_start_mib} / ${r.rss_end_mib} |`);
const seq = rows.filter((r) => r.label.endsWith("-seq"));
if (seq.length) {
  console.log("\n| server | sequential requests | errors | latency first / last 100 ms | latency slope ms/100 req | RSS start / end MiB | RSS slope MiB/100 req |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of seq)
    console.log(`| ${r.label.replace(/-seq$/, "")} | ${r.requests} | ${r.errors} | ${r.latency_ms_first100.toFixed(0)} / ${r.latency_ms_last100.toFixed(0)} | ${r.latency_slope_ms_per_100_requests.toFixed(2)} | ${r.rss_start_mib} / ${r.rss_end_mib} | ${r.rss_slope_mib_per_100_requests.toFixed(3)} |`);
}' "$results"
