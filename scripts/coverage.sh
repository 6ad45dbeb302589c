#!/bin/bash
# scripts/coverage.sh — line coverage of src/ (and cli/) by the test suite, per folder.
# Builds with gcc --coverage (-O0, -g) in build-coverage (BUILD_DIR=...), runs the whole
# suite there (every test program, and the CLI processes the tests start, add to the same
# counters), then prints one line per src/ folder, the src/ total and cli/, from lcov.
# Informational only: no threshold, not a CI stage; a failing test is reported, not fatal.
# Installs lcov (Debian package lcov) when missing, when root; else asks for it.
# Fixtures: as for the suite (../shared, EDGELLM_SHARED_DIR=... at configure time, then
# tests/fixtures); fewer fixtures, less coverage. The per-file report is left in
# build-coverage/coverage.info (genhtml can render it).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
build="${BUILD_DIR:-$root/build-coverage}"
jobs="$(nproc)"

if ! command -v lcov >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "coverage: installing lcov"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq lcov; } >/dev/null || { echo "coverage: apt-get failed"; exit 1; }
    else
        echo "coverage: lcov is missing: apt-get install lcov (or sudo scripts/install-deps.sh lcov)"; exit 1
    fi
fi
if ! "${CC:-cc}" --version 2>/dev/null | grep -qi 'gcc\|free software'; then
    echo "coverage: needs gcc (gcov counters); CC=${CC:-cc} is not gcc"; exit 1
fi

# EDGELLM_COVERAGE: tests/test_util.h then writes the counters of forked test children
# that end with _exit() (hostile-input runs), which would otherwise be lost.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="--coverage -DEDGELLM_COVERAGE" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
    ${EDGELLM_SHARED_DIR:+"-DEDGELLM_SHARED_DIR=$EDGELLM_SHARED_DIR"} >/dev/null || exit 1
cmake --build "$build" -j"$jobs" >"$build/coverage-build.log" 2>&1 ||
    { tail -30 "$build/coverage-build.log"; echo "coverage: build failed ($build/coverage-build.log)"; exit 1; }

log="$build/coverage-ctest.log"
find "$build" -name '*.gcda' -delete
# every instrumented file at zero, so that code no test links still counts as not run
lcov --quiet --capture --initial --directory "$build" --base-directory "$root" \
    --output-file "$build/base.info" 2>/dev/null || { echo "coverage: lcov --initial failed"; exit 1; }
(cd "$build" && ctest -j"$jobs" --timeout 1800 >"$log" 2>&1)
result=$(grep -aE '^[0-9]+% tests passed' "$log" | tail -1)
lcov --quiet --capture --directory "$build" --base-directory "$root" --output-file "$build/tests.info" 2>/dev/null ||
    { echo "coverage: lcov --capture failed"; exit 1; }
lcov --quiet --add-tracefile "$build/base.info" --add-tracefile "$build/tests.info" \
    --output-file "$build/all.info" 2>/dev/null &&
lcov --quiet --extract "$build/all.info" "$root/src/*" "$root/cli/*" --output-file "$build/coverage.info" 2>/dev/null ||
    { echo "coverage: lcov could not merge the counters"; exit 1; }

# tracefile: SF:<path> opens a file's record, LF: lines found, LH: lines hit
awk -v root="$root/" '
    /^SF:/ { f = substr($0, 4); sub("^" root, "", f); n = split(f, part, "/")
             dir = (part[1] == "src" && n > 2) ? part[1] "/" part[2] : part[1] }
    /^LF:/ { found[dir] += substr($0, 4) }
    /^LH:/ { hit[dir] += substr($0, 4) }
    function row(name, h, f) { printf "%-16s %7d %7d %7.1f%%\n", name, h, f, f ? 100 * h / f : 0 }
    END {
        printf "%-16s %7s %7s %8s\n", "folder", "hit", "lines", "covered"
        split("src/common src/format src/tensor src/kernels src/model src/runtime src/tools", order, " ")
        for (i = 1; i in order; i++) { d = order[i]; row(d, hit[d], found[d]); th += hit[d]; tf += found[d]; seen[d] = 1 }
        for (d in found) if (d ~ /^src/ && !(d in seen)) { row(d, hit[d], found[d]); th += hit[d]; tf += found[d] }
        row("src (total)", th, tf)
        if ("cli" in found) row("cli", hit["cli"], found["cli"])
    }' "$build/coverage.info"
echo "tests: ${result:-no CTest summary (see $log)}"
echo "per-file report: $build/coverage.info (genhtml -o DIR $build/coverage.info)"
