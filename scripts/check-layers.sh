#!/bin/sh
# check-layers.sh — the library's include layering: every #include "..." in src/ may point
# only to its own layer or a lower one, and no file may reach itself through includes.
#
# Layers, lowest first (a file's layer is its folder under src/):
#
#   0 common      allocation, errors, fp16, threads, files
#   1 format      GGUF and llama2.c files
#   2 tensor      tensor types, block layouts, reference quantizers
#   3 kernels     dot products, matrix products, attention, dispatch
#   4 tokenizer   vocabularies, SentencePiece / byte-level BPE, Unicode
#   5 model       loader, architectures, forward pass, KV cache
#   6 runtime     sampler, generation loop
#   7 tools       plan, quantize, eval, bench (the library side of each command)
#
# Model and tokenizer sit side by side above the kernels; the model loader reads the
# vocabulary of its file, so model may include tokenizer and tokenizer may not include
# model. The public headers in include/ include no internal header. include/edgellm.h (the
# core API) may be included by every layer; include/edgellm_tools.h (the tools' API) is the
# tools layer's own header, so only tools may include it.
#
# The CLI (cli/) may include the public header (include/) and its own cli/ headers only. Its
# includes of src/ headers are listed in a separate warning section and do not fail the
# check, unless --cli-strict is given.
#
# An include is resolved as the compiler does with the build's -I flags: first beside the
# including file, then under src/, then under include/. A quoted include that resolves to
# none of the checked files fails the check (a typo, or a dependency outside the layers).
#
# Usage: sh scripts/check-layers.sh [--cli-strict]
# Exit status: 0 when the layering holds, 1 when it does not, 2 for a wrong command line.
set -eu
cd "$(dirname "$0")/.."

strict=0
for arg in "$@"; do
    case "$arg" in
        --cli-strict) strict=1 ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-layers.sh: unknown argument '$arg' (usage: check-layers.sh [--cli-strict])" >&2; exit 2 ;;
    esac
done

find src cli include -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort | awk -v strict="$strict" '
function layer_of(path,    parts) {
    split(path, parts, "/")
    if (parts[1] == "include") return path in public_layer ? public_layer[path] : "api"
    if (parts[1] == "cli") return "cli"
    return parts[2]
}
# Collapse "." and ".." components of a relative path.
function normalize(path,    parts, n, i, out, m, k, res) {
    n = split(path, parts, "/")
    m = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == ".." && m > 0 && out[m] != "..") { m--; continue }
        out[++m] = parts[i]
    }
    res = ""
    for (k = 1; k <= m; k++) res = res (k > 1 ? "/" : "") out[k]
    return res
}
function dirname(path) {
    if (path !~ /\//) return "."
    sub(/\/[^\/]*$/, "", path)
    return path
}
function resolve(from, name,    c) {
    c = normalize(dirname(from) "/" name); if (c in known) return c
    c = normalize("src/" name);            if (c in known) return c
    c = normalize("include/" name);        if (c in known) return c
    return ""
}
# Depth-first search for include cycles; a back edge closes a cycle, printed from the file
# it returns to.
function dfs(node, depth,    n, i, next_node, k, cyc) {
    color[node] = 1
    stack[depth] = node
    n = split(adj[node], succ_list, " ")
    for (i = 1; i <= n; i++) succ[depth, i] = succ_list[i]
    for (i = 1; i <= n; i++) {
        next_node = succ[depth, i]
        if (color[next_node] == 1) {
            for (k = depth; k >= 0 && stack[k] != next_node; k--) ;
            cyc = stack[k]
            for (k = k + 1; k <= depth; k++) cyc = cyc " -> " stack[k]
            cycles[++n_cycles] = cyc " -> " next_node
        } else if (color[next_node] == 0) {
            dfs(next_node, depth + 1)
        }
    }
    color[node] = 2
}
BEGIN {
    rank["common"] = 0; rank["format"] = 1; rank["tensor"] = 2; rank["kernels"] = 3
    rank["tokenizer"] = 4; rank["model"] = 5; rank["runtime"] = 6; rank["tools"] = 7
    public_layer["include/edgellm_tools.h"] = "tools"
}
{ files[++n_files] = $0; known[$0] = 1 }
END {
    n_inc = 0; n_err = 0; n_cli = 0; n_cycles = 0
    for (f = 1; f <= n_files; f++) {
        file = files[f]
        from = layer_of(file)
        public = (file ~ /^include\//)
        if (!public && from != "cli" && !(from in rank)) {
            errors[++n_err] = file ": folder src/" from "/ has no layer (add it to the table in scripts/check-layers.sh)"
            continue
        }
        line_no = 0
        while ((getline text < file) > 0) {
            line_no++
            if (text !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
            name = text
            sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", name)
            sub(/".*$/, "", name)
            n_inc++
            target = resolve(file, name)
            where = file ":" line_no ": "
            if (target == "") {
                msg = where "\"" name "\" is not a file of src/, include/ or beside the includer"
                if (from == "cli") cli_msgs[++n_cli] = msg; else errors[++n_err] = msg
                continue
            }
            if (!((file, target) in edge)) { edge[file, target] = 1; adj[file] = adj[file] " " target }
            to = layer_of(target)
            if (from == "cli") {
                if (target !~ /^(include|cli)\//)
                    cli_msgs[++n_cli] = where "includes the internal header " target " (" to ")"
                continue
            }
            if (public) {
                if (target !~ /^include\//)
                    errors[++n_err] = where "the public header includes the internal header " target " (" to ")"
                continue
            }
            if (to == "api") continue
            if (to == "cli") { errors[++n_err] = where from " -> cli (" target ")"; continue }
            if (!(to in rank)) continue    # reported above as a folder without a layer
            if (rank[to] > rank[from]) errors[++n_err] = where "upward include " from " -> " to " (" target ")"
        }
        close(file)
    }
    for (f = 1; f <= n_files; f++) if (color[files[f]] == 0) dfs(files[f], 0)

    printf "layers: %d files, %d quoted includes (src/, include/, cli/)\n", n_files, n_inc
    for (i = 1; i <= n_err; i++) print "ERROR " errors[i]
    for (i = 1; i <= n_cycles; i++) print "ERROR include cycle: " cycles[i]
    if (n_cli > 0) {
        if (strict) print "CLI (--cli-strict: errors): cli/ includes beyond include/*.h and cli/*.h"
        else print "CLI (warnings, not failing; --cli-strict makes them errors): cli/ includes beyond include/*.h and cli/*.h"
        for (i = 1; i <= n_cli; i++) print (strict ? "ERROR " : "warning ") cli_msgs[i]
    }
    bad = n_err + n_cycles + (strict ? n_cli : 0)
    if (bad > 0) {
        printf "layers: FAIL (%d layering errors, %d include cycles%s)\n", n_err, n_cycles,
               strict ? sprintf(", %d CLI includes", n_cli) : ""
        exit 1
    }
    printf "layers: OK (%d CLI includes of internal headers%s)\n", n_cli, strict ? "" : " reported, not checked"
}'
