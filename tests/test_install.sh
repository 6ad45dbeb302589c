#!/bin/sh
# test_install.sh — install edgellm into a fresh folder and build against the installed copy,
# as a user of the library would: the README's embedding example (examples/embed.c, which the
# README shows verbatim) with `pkg-config edgellm` (the core alone, shared library), and a
# tools program with `pkg-config edgellm-tools` (static). Runs the example on MODEL when it
# exists. usage: test_install.sh SOURCE_DIR BUILD_DIR [MODEL [CFLAGS]] (CFLAGS: a sanitized
# build's -fsanitize flags, which programs linked with its libraries need too)
set -eu
src=$1 build=$2 model=${3:-} cflags=${4:-}
[ -n "$model" ] && [ ! -f "$model" ] && [ -f "$src/tests/fixtures/models/stories260K/stories260K.gguf" ] &&
    model=$src/tests/fixtures/models/stories260K/stories260K.gguf   # the repository copy
P=$(mktemp -d "${TMPDIR:-/tmp}/edgellm-install-XXXXXX")
trap 'rm -rf "$P"' EXIT INT TERM
fail() { echo "FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$P" >"$P/install.log" 2>&1 || { cat "$P/install.log"; fail "cmake --install"; }
pc=$(find "$P" -name edgellm.pc | head -1)
[ -n "$pc" ] || fail "no edgellm.pc installed"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
for f in include/edgellm.h include/edgellm_tools.h bin/edgellm; do [ -e "$P/$f" ] || fail "$f not installed"; done
[ "$(pkg-config --modversion edgellm)" = "$("$P/bin/edgellm" --version | sed -n 's/^edgellm \([0-9.]*\).*/\1/p')" ] ||
    fail "pkg-config version differs from the CLI's"

# The README shows examples/embed.c verbatim (the ```c block after its <!-- examples/embed.c --> line).
awk '/<!-- examples\/embed.c -->/ {want = 1; next} want && /^```c$/ {inside = 1; next}
     inside && /^```$/ {exit} inside {print}' "$src/README.md" >"$P/readme-embed.c"
cmp -s "$P/readme-embed.c" "$src/examples/embed.c" || fail "README's embedding example differs from examples/embed.c"

# The core alone: compiles with edgellm.h, links libedgellm.so and nothing of the tools.
cc -std=c11 -Wall -Wextra -Werror $cflags "$src/examples/embed.c" $(pkg-config --cflags --libs edgellm) -o "$P/embed" ||
    fail "examples/embed.c does not build against the installed core"
libdir=$(pkg-config --variable=libdir edgellm)
LD_LIBRARY_PATH=$libdir ldd "$P/embed" | grep -q "libedgellm.so" || fail "embed is not linked to libedgellm.so"
if nm -D "$libdir/libedgellm.so" | grep -q " T edgellm_plan"; then fail "the core library exports tools symbols"; fi

# The tools, static: a program that uses edgellm_tools.h.
cat >"$P/tools.c" <<'PROG'
#include <edgellm_tools.h>
#include <stdio.h>
int main(void) {
    edgellm_plan_model m;
    if (edgellm_plan_find_model("tinyllama-1.1b", &m, NULL) != EDGELLM_OK) return 1;
    printf("%s %llu\n", m.name, (unsigned long long)m.n_params);
    return m.n_params == 1100048384ull ? 0 : 1;
}
PROG
cc -std=c11 $cflags "$P/tools.c" $(pkg-config --cflags --libs edgellm-tools) -o "$P/tools" || fail "tools program does not build"
"$P/tools" >/dev/null || fail "tools program failed"

if [ -n "$model" ] && [ -f "$model" ]; then
    LD_LIBRARY_PATH=$libdir "$P/embed" "$model" "Who was Lily?" >"$P/out.txt" 2>&1 || { cat "$P/out.txt"; fail "embed run"; }
    grep -qE "^\[(done|stopped), edgellm [0-9.]+\]$" "$P/out.txt" || { cat "$P/out.txt"; fail "embed output"; }
    echo "ran the installed example on $model"
else
    echo "built against the installed library; no model to run it on (${model:-none given})"
fi
echo "install test passed"
