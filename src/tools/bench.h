/*
 * bench.h — internal helpers of `edgellm bench` (bench.c), exposed for tests: the bytes a
 * decode step reads, the file-type label of a model, the process's peak RSS.
 */
#ifndef EDGELLM_TOOLS_BENCH_H
#define EDGELLM_TOOLS_BENCH_H

#include "../common/common.h"
#include "edgellm_tools.h"

/* Weight bytes one decoded token reads from a model file: every tensor's bytes except the
 * token embedding table, which contributes one row (a lookup) — plus the whole table
 * again when it is also the output head (tied). 0 for a NULL model. */
uint64_t edgellm_bench_weight_bytes_per_token(const edgellm_model *m);

/* KV-cache bytes one decode step reads at depth `n_attended` positions (K and V rows of
 * every layer) from a cache of kv_type (EDGELLM_TYPE_F32: 4 bytes an element, F16: 2). */
uint64_t edgellm_bench_kv_bytes_per_token(const edgellm_model *m, int n_attended, int kv_type);

/* llama.cpp-style label of the model's precision: from general.file_type (ggml docs/gguf.md
 * §1.1 enum), else edgellm.quant.scheme, else the type of the most bytes of matrices. */
void edgellm_bench_ftype_label(const edgellm_model *m, char *buf, size_t size);

/* Peak resident set size of this process in bytes (VmHWM of /proc/self/status, else
 * getrusage ru_maxrss); 0 when unknown. */
uint64_t edgellm_bench_peak_rss(void);

#endif
