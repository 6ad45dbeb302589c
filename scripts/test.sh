#!/bin/sh
# Build edgellm and run the whole test suite with CTest. Fixtures come from ../shared
# (tests that need them skip with a message when it is absent).
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cd build && ctest --output-on-failure -j"$(nproc)"
