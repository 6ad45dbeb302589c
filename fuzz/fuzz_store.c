/*
 * fuzz_store.c — libFuzzer target: the model store's readers of untrusted bytes
 * (src/tools/store.c manifests, src/tools/store_delta.c patches).
 *
 * Input: byte 0 picks the reader (bit 0: manifest or patch); the rest is the document.
 * Oracles:
 *   - a manifest that parses has a canonical form that parses to the same canonical form
 *     (what is signed is what was read); one that does not parse gives EDGELLM_ERR_FORMAT
 *     with a message naming the file;
 *   - a patch applied to a fixed 4 KiB base either fails with EDGELLM_ERR_FORMAT and leaves
 *     no output file, or succeeds (its header's SHA-256 of the result held).
 */
#include "fuzz_util.h"
#include "tools/store.h"
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], base[96], patch[96], out[96];

static void init(void)
{
    if (dir[0]) return;
    snprintf(dir, sizeof dir, "/tmp/fuzz_store.%ld", (long)getpid());
    mkdir(dir, 0700);
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(patch, sizeof patch, "%s/patch", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    FILE *f = fopen(base, "wb");
    for (int i = 0; i < 4096; i++) fputc((i * 7) & 0xff, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    init();
    edgellm_error err = {0};
    if (!(data[0] & 1)) {
        bool rt = false;
        edgellm_status st = edgellm_store_manifest_check((const char *)data + 1, size - 1, &rt, &err);
        if (st == EDGELLM_OK) FUZZ_ASSERT(rt, "canonical form does not parse back the same");
        else FUZZ_ASSERT(st == EDGELLM_ERR_FORMAT && strstr(err.msg, "fuzz.json"), "bad refusal: %s %s",
                         edgellm_status_name(st), err.msg);
        return 0;
    }
    FILE *f = fopen(patch, "wb");
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    unlink(out);
    edgellm_status st = edgellm_delta_apply(base, patch, out, NULL, NULL, &err);
    if (st != EDGELLM_OK) {
        FUZZ_ASSERT(st == EDGELLM_ERR_FORMAT || st == EDGELLM_ERR_NOMEM, "bad refusal: %s %s", edgellm_status_name(st),
                    err.msg);
        FUZZ_ASSERT(access(out, F_OK) != 0, "a failed apply left %s", out);
    }
    return 0;
}
