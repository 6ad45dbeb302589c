#!/bin/sh
# Build edgellm and run the test suite with CTest. Fixtures come from ../shared (another
# folder: EDGELLM_SHARED_DIR=... at configure time, EDGELLM_SHARED=... at run time), then
# from tests/fixtures; tests that need a fixture found in neither skip with a message.
#   scripts/test.sh                  every case of every test program
#   scripts/test.sh -R test_eval     one program (other arguments go to ctest)
#   scripts/test.sh -k ppl           only the cases whose function name matches, with their
#                                    output: EDGELLM_TEST_FILTER (tests/test_util.h), a
#                                    substring or a glob (-k 'test_eval_ppl_*'), several
#                                    separated by commas; programs with no match show as skipped
set -e
filter=""
while [ $# -gt 0 ]; do
    case $1 in
        -k) [ $# -ge 2 ] || { echo "usage: $0 [-k PATTERN] [ctest arguments]" >&2; exit 2; }
            filter=$2; shift 2 ;;
        -k*) filter=${1#-k}; shift ;;
        *) break ;;
    esac
done
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${EDGELLM_SHARED_DIR:+"-DEDGELLM_SHARED_DIR=$EDGELLM_SHARED_DIR"} >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cd build
if [ -n "$filter" ]; then
    EDGELLM_TEST_FILTER=$filter exec ctest -V -j"$(nproc)" "$@"
fi
exec ctest --output-on-failure -j"$(nproc)" "$@"
