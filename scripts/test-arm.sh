#!/bin/sh
# Cross-build edgellm for aarch64 (Debian gcc-aarch64-linux-gnu) into build-arm and run the
# test suite under qemu-user (CTest's CMAKE_CROSSCOMPILING_EMULATOR, cmake/aarch64-toolchain.cmake).
# Installs the cross compiler and qemu-user only when missing (needs root then).
# Fixtures: ../shared by default, or EDGELLM_SHARED_DIR=/path/to/shared.
# Extra arguments go to ctest, e.g. scripts/test-arm.sh -R 'kernels|quant|forward'.
set -e
cd "$(dirname "$0")/.."
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user >/dev/null
fi
SHARED="${EDGELLM_SHARED_DIR:-$(pwd)/../shared}"
TOOLCHAIN=""
[ -f build-arm/CMakeCache.txt ] || TOOLCHAIN="-DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake"
cmake -S . -B build-arm -DCMAKE_BUILD_TYPE=Release $TOOLCHAIN -DEDGELLM_SHARED_DIR="$SHARED" >/dev/null
cmake --build build-arm -j"$(nproc)" >/dev/null
# tests that start a child of their own binary run it through the emulator too
export EDGELLM_TEST_EMULATOR="qemu-aarch64 -L /usr/aarch64-linux-gnu"
cd build-arm && ctest --output-on-failure -j"$(nproc)" "$@"
