#!/bin/sh
# scripts/store-kill-sweep.sh [BUILD_DIR] [RUNS] — the model store's kill -9 sweep in full:
# tests/test_store.c's test_kill_points kills `edgellm store` at every write, fsync, rename
# and unlink of add (copy), add (patch), activate, rollback, gc and an add with a quality
# gate (CTest: its every third point), then at RUNS random
# instants (default 250; CTest runs 30), and checks after each kill that the store verifies
# clean, the active model loads and decodes, and the command completes when run again.
# Prints "kill -9: N kill points, B broken stores"; exit status 0 when B is 0.
set -eu
build="${1:-build}"
EDGELLM_STORE_KILL_STEP=1 EDGELLM_STORE_KILL_RUNS="${2:-250}" EDGELLM_TEST_FILTER=test_kill_points "$build/test_store"
