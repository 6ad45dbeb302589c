#!/bin/sh
# Build edgellm and run its main job: `edgellm plan` (which models fit on which devices, at
# which precision, how fast), then a short generation on the small real model in ../shared
# when present. Each step prints one line first; the build's own output goes to
# build/demo-build.log, which is shown if the build fails.
set -e
cd "$(dirname "$0")/.."
LOG=build/demo-build.log
mkdir -p build
: >"$LOG"

# step "what it is doing" command...: one line, then the command with its output in $LOG.
step() {
    msg=$1
    shift
    echo "== $msg"
    if ! "$@" >>"$LOG" 2>&1; then
        echo "demo: failed: $msg. The last lines of $LOG:" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
}

step "configuring (cmake, Release) — log in $LOG" cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
step "building with $(nproc) jobs (about a minute the first time)" cmake --build build -j"$(nproc)"
echo "== edgellm plan"
./build/edgellm plan
MODEL=../shared/models/stories260K/stories260K.gguf
echo
if [ -f "$MODEL" ]; then
    echo "== edgellm run -m $MODEL -p \"Once upon a time\" -n 64 --temp 0"
    ./build/edgellm run -m "$MODEL" -p "Once upon a time" -n 64 --temp 0
else
    echo "No model at $MODEL. To generate text, get a GGUF model (any Llama/Qwen2 GGUF, e.g."
    echo "stories260K.gguf from llama2.c's tinyllamas) and run:"
    echo "  ./build/edgellm run -m MODEL.gguf -p \"Once upon a time\""
fi
