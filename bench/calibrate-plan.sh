#!/bin/sh
# bench/calibrate-plan.sh — does `edgellm plan` predict what `edgellm bench` measures here?
#
# Synthesises random-weight models of two real shapes (edgellm synth), measures them with
# `edgellm bench` (decode tg tok/s, peak RSS) and asks `edgellm plan` about the same files on
# this machine as `edgellm plan --device host` measures it, written to a device file so that
# bench's roofline uses the same bandwidth figure (plan and bench are not compared across two
# noisy bandwidth runs). Passes when decode tok/s agree within ±25 % and peak RSS within
# ±15 % (issue 4's criteria).
#
# usage: bench/calibrate-plan.sh [BUILD_DIR] [THREADS]      (needs python3 for the JSON)
# CALIBRATE_MODELS="shape:type ..." replaces the two default models (e.g. tinyllama-1.1b:q4_0).
# Files go to ${TMPDIR:-/tmp}/edgellm-calibrate (about 0.4 GB), kept for reruns.
set -e
cd "$(dirname "$0")/.."
B=${1:-build}/edgellm
T=${2:-2}
D=${TMPDIR:-/tmp}/edgellm-calibrate
mkdir -p "$D"
[ -x "$B" ] || { echo "calibrate-plan: $B not built (cmake -B build && cmake --build build)"; exit 1; }

# This machine as `edgellm plan --device host` measures it (bandwidth with all cores, GFLOP/s
# per core from a matrix product); with THREADS below the core count, the same device cut
# to THREADS cores and the bandwidth THREADS threads read (edgellm bench --bandwidth -t).
"$B" plan --device host --json > "$D/host-plan.json" 2>/dev/null ||
    { echo "calibrate-plan: edgellm plan --device host failed"; exit 1; }
BWT=$("$B" bench --bandwidth -t "$T" 2>&1 | sed -n 's/.*GB\/s best, \([0-9.]*\) GB\/s median.*/\1/p')
[ -n "$BWT" ] || { echo "calibrate-plan: could not measure bandwidth"; exit 1; }
python3 - "$D/host-plan.json" "$T" "$BWT" > "$D/host.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["device"]
t, bw = int(sys.argv[2]), float(sys.argv[3])
if t < d["big_cores"]:
    d["big_cores"], d["bandwidth_gbps"] = t, bw
print(json.dumps({"devices": [{"name": "calib-host", "description": d["description"],
    "ram_gib": d["ram_bytes"] / 2**30, "usable_gib": d["usable_bytes"] / 2**30,
    "bandwidth_gbps": d["bandwidth_gbps"], "bandwidth_measured": True, "big_cores": d["big_cores"],
    "little_cores": 0, "gflops_per_big_core": d["gflops_per_big_core"],
    "gflops_per_little_core": d["gflops_per_little_core"], "source": "edgellm plan --device host"}]}))
PY
BW=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['devices'][0]['bandwidth_gbps'])" "$D/host.json")
echo "host: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['devices'][0]; print('%d cores used, %.1f GB/s, %.0f GFLOP/s per core' % (d['big_cores'], d['bandwidth_gbps'], d['gflops_per_big_core']))" "$D/host.json")"
printf '%-24s %10s %10s %7s %12s %12s %7s\n' model "tg bench" "tg plan" "ratio" "RSS bench" "RSS plan" ratio
fail=0
for spec in ${CALIBRATE_MODELS:-smollm2-135m:q8_0 smollm2-360m:q4_0}; do
    shape=${spec%%:*}; type=${spec#*:}
    f="$D/$shape-$type.gguf"
    [ -f "$f" ] || "$B" synth --shape "$shape" --type "$type" -o "$f" >/dev/null 2>&1
    "$B" bench -m "$f" -p 0 -n 32 -t "$T" -r 3 --bw-gbps "$BW" -o json > "$D/bench.json" 2>/dev/null
    # bench's n_ctx for -p 0 -n 32 is 34 positions; plan the same context with bench's F32 KV cache
    "$B" plan --model "$f" --device "$D/host.json" --ctx 34 --kv-type f32 --json > "$D/plan.json" 2>/dev/null
    line=$(python3 - "$D/bench.json" "$D/plan.json" "$shape-$type" <<'PY'
import json, sys
b = [r for r in json.load(open(sys.argv[1])) if r["test"].startswith("tg")][0]
p = json.load(open(sys.argv[2]))
c = [c for c in p["candidates"] if c.get("weight_exact")][0]
tg_b, tg_p = b["avg_ts"], c["decode_tps"]
rss_b, rss_p = b["peak_rss_bytes"], c["total_bytes"]
r1, r2 = tg_p / tg_b, rss_p / rss_b
ok = abs(r1 - 1) <= 0.25 and abs(r2 - 1) <= 0.15
print("%-24s %10.1f %10.1f %7.2f %10.1fMiB %10.1fMiB %7.2f %s" % (sys.argv[3], tg_b, tg_p, r1,
      rss_b / 2**20, rss_p / 2**20, r2, "ok" if ok else "OFF"))
PY
)
    echo "$line"
    case "$line" in *OFF) fail=1 ;; esac
done
[ $fail -eq 0 ] && echo "calibrate-plan: plan agrees with bench (decode ±25 %, RSS ±15 %)" ||
    echo "calibrate-plan: plan and bench disagree beyond the tolerance"
exit $fail
