#!/bin/sh
# Build edgellm and run its main job on the small real model in ../shared when present.
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
MODEL=../shared/models/stories260K/stories260K.gguf
if [ -f "$MODEL" ]; then
    ./build/edgellm run -m "$MODEL" -p "Once upon a time" -n 64 --temp 0
else
    echo "No model found at $MODEL."
    echo "Get a GGUF model (e.g. stories260K.gguf from the llama2.c tinyllamas release, or any"
    echo "Llama/Qwen2 GGUF) and run: ./build/edgellm run -m MODEL.gguf -p \"Once upon a time\""
fi
