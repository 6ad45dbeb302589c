#!/bin/sh
# Build edgellm and run its main job: `edgellm plan` (which models fit on which devices, at
# which precision, how fast), then a short generation on the small real model in ../shared
# when present.
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
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
