#!/bin/bash
# scripts/ci-stages.sh — every CI stage, for .ci/run on a clean machine:
#   deps      apt-get install what the stages need (only what is missing; needs root then),
#             and `npm ci` in tests/server (the openai client of test_server_openai)
#   asan      whole suite built with -DEDGELLM_SANITIZE=ON (ASan + UBSan) in build-ci-asan;
#             any sanitizer report fails the stage even if its test passed ("zero
#             reports"), in the tests themselves and in the CLI processes they start
#   tsan      the threaded tests (thread pool, batches, generation jobs with abort, the server) built with
#             -DEDGELLM_TSAN=ON (ThreadSanitizer) in build-ci-tsan; any race report fails it
#   valgrind  memcheck on `edgellm run` with stories260K (skipped without ../shared)
#   arm       aarch64 cross build + tests under qemu-user (scripts/test-arm.sh, if present)
#   fuzz      fuzz/run.sh FUZZ_SECONDS (default 60) per libFuzzer target
#   unit      normal Release build + ctest (scripts/test.sh) — run LAST, so that the last
#             line printed is CTest's own summary ("100% tests passed, 0 tests failed out of N")
# One summary line per stage ("stage asan: 14 passed, 0 failed"), then CTest's line.
# Exit status: 0 when every stage passed (skipped stages do not fail), 1 otherwise.
# Logs: build-ci-logs/<stage>.log. Time on 2 cores: roughly 20-25 minutes in all.
# Environment: FUZZ_SECONDS, FUZZ_SEED (default 1), SKIP_STAGES (e.g. "arm fuzz"), EDGELLM_SHARED_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
logs="$root/build-ci-logs"
mkdir -p "$logs"
jobs="$(nproc)"
shared="${EDGELLM_SHARED_DIR:-$root/../shared}"
skip=" ${SKIP_STAGES:-} "
summary=()
failed=0

t_stage=$SECONDS
stage_line() {   # name passed failed [note]; the time since the previous stage ended
    local line="stage $1: $2 passed, $3 failed (${4:+$4, }$((SECONDS - t_stage)) s)"
    t_stage=$SECONDS
    summary+=("$line")
    echo "$line"
    [ "$3" -eq 0 ] || failed=1
}
skipped() { local line="stage $1: skipped ($2)"; summary+=("$line"); echo "$line"; t_stage=$SECONDS; }
# a ctest log's failed tests: the names with their status, then up to 30 lines of the first
# failing test's own output (ctest --output-on-failure prints it after the status line)
failed_tests() {
    sed -n '/The following tests FAILED:/,/^$/p' "$1" | grep -aE '^\s+[0-9]+ - ' | head -10 | sed 's/^\s*/  failed: /'
    awk '/\*\*\*(Failed|Timeout|Exception)/ && !shown { shown = 1; n = 30 } n > 0 { print "  | " $0; n-- }' "$1"
}
# "N% tests passed, F tests failed out of T" -> "passed failed"
ctest_counts() {
    local l
    l=$(grep -aE '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1)
    if [ -z "$l" ]; then echo "0 1"; return; fi
    local f t
    f=$(echo "$l" | sed -E 's/.* ([0-9]+) tests? failed.*/\1/')
    t=$(echo "$l" | sed -E 's/.*out of ([0-9]+).*/\1/')
    echo "$((t - f)) $f"
}

# ---- deps ---------------------------------------------------------------------------
# python3-numpy: the RoPE reference; python3-numpy, python3-sentencepiece: test_hf's independent references (/usr/bin/python3)
pkgs="build-essential cmake libcjson-dev clang libclang-rt-14-dev valgrind gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user python3-numpy python3-sentencepiece libmicrohttpd-dev libsodium-dev libcurl4-openssl-dev libzstd-dev zstd curl wrk"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# Node.js and npm for the openai client test (test_server_openai): Debian's when none is there
command -v node >/dev/null || missing="$missing nodejs"
command -v npm >/dev/null || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "ci: installing$missing"
    if [ "$(id -u)" -eq 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq $missing; } >"$logs/deps.log" 2>&1 ||
            echo "ci: apt-get failed (see $logs/deps.log); stages that need it will fail or skip"
    else
        echo "ci: not root: cannot install$missing"
    fi
fi

# The openai npm client, pinned by tests/server/package-lock.json (node_modules is not in git).
# Every stage's CTest then runs test_server_openai, which must not skip (EDGELLM_REQUIRE_OPENAI).
if command -v npm >/dev/null; then
    (cd tests/server && npm ci --no-audit --no-fund) >>"$logs/deps.log" 2>&1 ||
        echo "ci: npm ci in tests/server failed (see $logs/deps.log); test_server_openai will fail"
else
    echo "ci: npm not found; test_server_openai will fail"
fi
export EDGELLM_REQUIRE_OPENAI=1

t_stage=$SECONDS   # deps are not timed
# ---- asan ---------------------------------------------------------------------------
# Reports are counted in the verbose CTest log; a report in a CLI process that a test
# starts and captures is caught by its exit status (86 ASan/LSan, 87 UBSan), which no
# test expects.
if [[ "$skip" == *" asan "* ]]; then skipped asan "SKIP_STAGES"; else
    {
        cmake -S . -B build-ci-asan -DEDGELLM_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DEDGELLM_SHARED_DIR="$shared" &&
        cmake --build build-ci-asan -j"$jobs" &&
        (cd build-ci-asan &&
         ASAN_OPTIONS="exitcode=86:detect_leaks=1" LSAN_OPTIONS="exitcode=86" \
         UBSAN_OPTIONS="exitcode=87:print_stacktrace=1:halt_on_error=1" \
         ctest -V -j"$jobs" --timeout 1500)
    } >"$logs/asan.log" 2>&1
    read -r p f < <(ctest_counts "$logs/asan.log")
    reports=$(grep -acE 'runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer' "$logs/asan.log")
    if [ "$reports" -gt 0 ]; then
        grep -aE 'runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|^[0-9]+: SUMMARY' "$logs/asan.log" |
            sort -u | head -8 | sed 's/^/  /'
        [ "$f" -eq 0 ] && f=1
    fi
    if [ "$f" -ne 0 ]; then failed_tests "$logs/asan.log"; fi
    stage_line asan "$p" "$f" "$reports sanitizer reports"
fi

# ---- tsan ---------------------------------------------------------------------------
if [[ "$skip" == *" tsan "* ]]; then skipped tsan "SKIP_STAGES"; else
    {
        cmake -S . -B build-ci-tsan -DEDGELLM_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELLM_SHARED_DIR="$shared" &&
        cmake --build build-ci-tsan -j"$jobs" --target edgellm test_threadpool test_batch test_generate test_server &&
        (cd build-ci-tsan && export TSAN_OPTIONS="exitcode=66 halt_on_error=0 second_deadlock_stack=1" &&
         # test_batch's model sweeps take too long under TSan: its stories260K and sequence cases
         EDGELLM_TEST_FILTER="stories,seq_,bad_input,abort" ctest -V --timeout 1500 -R "^test_batch$" &&
         ctest -V -j"$jobs" --timeout 1500 -R "^test_(threadpool|generate|server)$")
    } >"$logs/tsan.log" 2>&1
    read -r p f < <(ctest_counts "$logs/tsan.log")
    if [ "$f" -ne 0 ]; then failed_tests "$logs/tsan.log"; fi
    races=$(grep -ac 'WARNING: ThreadSanitizer' "$logs/tsan.log")
    if [ "$races" -gt 0 ]; then
        grep -aA6 'WARNING: ThreadSanitizer' "$logs/tsan.log" | head -20 | sed 's/^/  /'
        [ "$f" -eq 0 ] && f=1
    fi
    stage_line tsan "$p" "$f" "$races race reports"
fi

# ---- valgrind -----------------------------------------------------------------------
if [[ "$skip" == *" valgrind "* ]]; then skipped valgrind "SKIP_STAGES"
elif ! command -v valgrind >/dev/null; then skipped valgrind "valgrind not installed"
elif [ ! -f "$shared/models/stories260K/stories260K.gguf" ]; then skipped valgrind "no ../shared fixtures"
else
    {
        cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j"$jobs" --target edgellm &&
        valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            ./build/edgellm run -m "$shared/models/stories260K/stories260K.gguf" -p "Once upon a time" -n 16 --temp 0 -t 2
    } >"$logs/valgrind.log" 2>&1
    rc=$?
    errs=$(grep -aE 'ERROR SUMMARY: [0-9]+ errors' "$logs/valgrind.log" | tail -1 | sed -E 's/.*SUMMARY: ([0-9]+) errors.*/\1/')
    if [ "$rc" -eq 0 ] && [ "${errs:-1}" -eq 0 ]; then stage_line valgrind 1 0 "0 memcheck errors"
    else stage_line valgrind 0 1 "exit $rc, ${errs:-?} memcheck errors"; fi
fi

# ---- arm ----------------------------------------------------------------------------
if [[ "$skip" == *" arm "* ]]; then skipped arm "SKIP_STAGES"
elif [ ! -x scripts/test-arm.sh ] && [ ! -f scripts/test-arm.sh ]; then skipped arm "scripts/test-arm.sh not found"
else
    # the kernel, quantization and forward-pass tests: what differs on ARM (NEON/dotprod)
    EDGELLM_SHARED_DIR="$shared" sh scripts/test-arm.sh -R "${ARM_TESTS:-kernels|gemm|kv_|quant\$|forward|fp16|threadpool|gguf_read|layout}" \
        >"$logs/arm.log" 2>&1
    read -r p f < <(ctest_counts "$logs/arm.log")
    if [ "$f" -ne 0 ]; then failed_tests "$logs/arm.log"; fi
    stage_line arm "$p" "$f" "aarch64 under qemu-user"
fi

# ---- fuzz ---------------------------------------------------------------------------
if [[ "$skip" == *" fuzz "* ]]; then skipped fuzz "SKIP_STAGES"
elif ! command -v clang >/dev/null; then skipped fuzz "clang not installed"; failed=1
else
    # a fixed seed (FUZZ_SEED, default 1): the same input sequence on every machine
    FUZZ_SEED="${FUZZ_SEED:-1}" EDGELLM_SHARED="$shared" BUILD_DIR="$root/build-fuzz" fuzz/run.sh "${FUZZ_SECONDS:-60}" >"$logs/fuzz.log" 2>&1
    grep -a '^fuzz ' "$logs/fuzz.log" | sed 's/^/  /'
    l=$(grep -aE '^fuzz: [0-9]+ passed, [0-9]+ failed' "$logs/fuzz.log" | tail -1)
    if [ -n "$l" ]; then
        p=$(echo "$l" | sed -E 's/fuzz: ([0-9]+) passed.*/\1/'); f=$(echo "$l" | sed -E 's/.* ([0-9]+) failed/\1/')
    else p=0; f=1; tail -20 "$logs/fuzz.log"; fi
    stage_line fuzz "$p" "$f" "${FUZZ_SECONDS:-60} s per target"
fi

# ---- unit (last) --------------------------------------------------------------------
EDGELLM_SHARED_DIR="$shared" ./scripts/test.sh >"$logs/unit.log" 2>&1
read -r p f < <(ctest_counts "$logs/unit.log")
if [ "$f" -ne 0 ]; then failed_tests "$logs/unit.log"; fi
stage_line unit "$p" "$f"
echo
printf '%s\n' "${summary[@]}"
final=$(grep -aE '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$logs/unit.log" | tail -1)
if [ -n "$final" ]; then echo "$final"; else tail -5 "$logs/unit.log"; echo "unit: 0 passed, 1 failed"; failed=1; fi
exit "$failed"
