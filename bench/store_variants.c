/* store_variants.c — the updates bench/store_delta.sh measures patches for, made from one
 * GGUF file:
 *   store_variants meta IN.gguf OUT.gguf       general.name 32 bytes longer (every tensor
 *                                              moves by 32 bytes; the data are unchanged)
 *   store_variants finetune IN.gguf OUT.gguf N every N-th tensor (from the second) with
 *                                              every data byte changed in its low bits, as
 *                                              a fine-tune that retrains some layers does
 * Prints the share of tensor bytes changed. */
#include "edgellm_tools.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    if (!b || fread(b, 1, *n, f) != *n) { fprintf(stderr, "%s: read failed\n", path); exit(1); }
    fclose(f);
    return b;
}

static void spill(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) { perror(path); exit(1); }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: store_variants meta|finetune IN.gguf OUT.gguf [N]\n");
        return 2;
    }
    size_t n;
    unsigned char *b = slurp(argv[2], &n);
    edgellm_gguf_meta *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_meta_open(argv[2], &g, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const uint64_t data = edgellm_gguf_meta_data_offset(g);
    if (!strcmp(argv[1], "meta")) {
        /* key "general.name": u64 key length, key, u32 type 8 (string), u64 length, bytes */
        unsigned char *k = memmem(b, data, "general.name", 12);
        if (!k || k[12] != 8) { fprintf(stderr, "%s: no general.name string\n", argv[2]); return 1; }
        unsigned char *lp = k + 16;
        uint64_t len;
        memcpy(&len, lp, 8);
        const uint64_t grown = len + 32;
        unsigned char *o = malloc(n + 32);
        size_t at = (size_t)(lp - b);
        memcpy(o, b, at);
        memcpy(o + at, &grown, 8);
        memcpy(o + at + 8, lp + 8, len);
        memcpy(o + at + 8 + len, " (metadata-only update, 32 b) ..", 32);
        memcpy(o + at + 8 + grown, lp + 8 + len, n - (at + 8 + len));
        spill(argv[3], o, n + 32);
        printf("metadata: general.name +32 bytes; 0%% of tensor bytes changed\n");
        free(o);
    } else {
        const int every = argc > 4 ? atoi(argv[4]) : 10;
        uint64_t changed = 0, total = 0;
        uint32_t rng = 12345;
        for (int64_t i = 0; i < edgellm_gguf_meta_n_tensors(g); i++) {
            edgellm_gguf_tensor_info t;
            edgellm_gguf_meta_tensor(g, i, &t);
            total += t.size_bytes;
            if (i % every != 1) continue;
            changed += t.size_bytes;
            unsigned char *p = b + data + t.offset;
            for (uint64_t j = 0; j < t.size_bytes; j++) {
                rng = rng * 1664525u + 1013904223u;
                p[j] ^= (unsigned char)(1 + ((rng >> 24) & 3));   /* low bits, never 0: every byte changes */
            }
        }
        spill(argv[3], b, n);
        printf("finetune: every %d-th tensor; %.1f%% of tensor bytes changed\n", every,
               100.0 * (double)changed / (double)total);
    }
    edgellm_gguf_meta_close(g);
    free(b);
    return 0;
}
