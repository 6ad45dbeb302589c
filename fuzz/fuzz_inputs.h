/*
 * fuzz_inputs.h — how the fuzz targets turn their input bytes into calls, shared with
 * tests/test_corpus.c, which replays tests/corpus/<target>/ files exactly the way the
 * fuzzers ran them. Header-only (static functions), no dependency beyond libc.
 *
 *   llama2c    byte 0 even: bytes 1..4 u32 LE k; checkpoint = next k mod (rest+1) bytes,
 *              tokenizer.bin = the bytes after it (none: NULL)
 *              byte 0 odd:  bytes 1..2 u16 LE n_vocab-1; tokenizer.bin = bytes 3..
 *   tokenizer  byte 0: vocabulary index (bits 0..6, mod the number loaded) and add_special
 *              (bit 7); text = bytes 1..
 *   cli_args   byte 0: command index into FUZZ_COMMANDS (NULL entry: argv[1] is the first
 *              argument); then NUL-separated arguments, sanitised (fuzz_cli_args.c says how:
 *              no real paths, outputs unwritable, no bandwidth measurement)
 *   gguf, json the whole input is the file
 */
#ifndef EDGELLM_FUZZ_INPUTS_H
#define EDGELLM_FUZZ_INPUTS_H

#include <stdint.h>
#include <string.h>
#include <strings.h>

typedef struct {
    int            tokenizer_only;   /* byte 0 odd                                         */
    const uint8_t *model;            /* checkpoint bytes (inside the input); NULL when only */
    size_t         model_size;
    const uint8_t *tok;              /* tokenizer.bin bytes, NULL when absent              */
    size_t         tok_size;
    int            n_vocab;          /* tokenizer_only: the vocabulary size to check against */
} fuzz_llama2c_input;

/* 0 when the input is too short to mean anything (the fuzzer skips it). */
static inline int fuzz_llama2c_decode(const uint8_t *data, size_t size, fuzz_llama2c_input *in)
{
    memset(in, 0, sizeof *in);
    if (size < 3) return 0;
    if ((data[0] & 1) == 0) {
        if (size < 5) return 0;
        uint32_t k = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
        size_t n = size - 5;
        in->model = data + 5;
        in->model_size = (size_t)k % (n + 1);
        if (n > in->model_size) {
            in->tok = data + 5 + in->model_size;
            in->tok_size = n - in->model_size;
        }
        return 1;
    }
    in->tokenizer_only = 1;
    in->n_vocab = 1 + ((int)data[1] | (int)data[2] << 8);
    in->tok = data + 3;
    in->tok_size = size - 3;
    return 1;
}

/* The vocabularies of fuzz_tokenizer, under <shared>/data/vocab/, in index order. */
static const char *const FUZZ_VOCABS[] = {
    "ggml-vocab-llama-spm.gguf",      "ggml-vocab-gpt-2.gguf",  "ggml-vocab-deepseek-llm.gguf",
    "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-falcon.gguf", "ggml-vocab-starcoder.gguf",
    "ggml-vocab-phi-3.gguf",
};
#define FUZZ_N_VOCABS ((int)(sizeof FUZZ_VOCABS / sizeof FUZZ_VOCABS[0]))

static const char *const FUZZ_COMMANDS[] = {
    "plan", "run", "info", "tokenize", "logits", "convert", "quantize", "synth", "bench", "eval", "help", "--version", NULL,
};
#define FUZZ_N_COMMANDS ((int)(sizeof FUZZ_COMMANDS / sizeof FUZZ_COMMANDS[0]))
#define FUZZ_MAX_ARGS 24
#define FUZZ_MAX_ARG_LEN 512
#define FUZZ_NO_PATH "/nonexistent/edgellm-fuzz"

/* Flags whose value is a file to write: the value always becomes FUZZ_NO_PATH (a
 * directory that does not exist: the writer fails before any work). */
static inline int fuzz_is_output_flag(const char *a)
{
    return !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--out") || !strcmp(a, "--report");
}

/* The device name "host" in any case ("HOST", "Host": plan compares device names without
 * regard to case), alone or as the value of "--flag=host": each runs the 512 MiB bandwidth
 * measurement. Both forms were found by the CI's fuzz smoke run. */
static inline int fuzz_is_host(const char *a)
{
    return !strcasecmp(a, "host");
}

static inline int fuzz_is_host_value(const char *a)
{
    const char *eq = strrchr(a, '=');
    return eq && fuzz_is_host(eq + 1);
}

/* Build argv (argv[0] = "edgellm", NULL-terminated) in store; returns argc. */
static inline int fuzz_cli_decode(const uint8_t *data, size_t size, char store[FUZZ_MAX_ARGS][FUZZ_MAX_ARG_LEN + 1],
                                  char *argv[FUZZ_MAX_ARGS + 3])
{
    int argc = 0;
    argv[argc++] = (char *)"edgellm";
    if (size < 1) { argv[argc] = NULL; return argc; }
    const char *cmd = FUZZ_COMMANDS[data[0] % FUZZ_N_COMMANDS];
    if (cmd) argv[argc++] = (char *)cmd;
    size_t pos = 1;
    for (int k = 0; k < FUZZ_MAX_ARGS && pos < size; k++) {
        const uint8_t *end = memchr(data + pos, 0, size - pos);
        size_t len = end ? (size_t)(end - (data + pos)) : size - pos;
        size_t keep = len < FUZZ_MAX_ARG_LEN ? len : FUZZ_MAX_ARG_LEN;
        memcpy(store[k], data + pos, keep);
        store[k][keep] = 0;
        if (memchr(store[k], '/', keep) || fuzz_is_output_flag(argv[argc - 1])) strcpy(store[k], FUZZ_NO_PATH);
        else if (fuzz_is_host(store[k])) strcpy(store[k], "phone-mid");   /* no 1 s bandwidth test */
        else if (fuzz_is_host_value(store[k]))   /* --device=host; "none" where "phone-mid" would not fit */
            strcpy(strrchr(store[k], '=') + 1, keep + 5 <= FUZZ_MAX_ARG_LEN ? "phone-mid" : "none");
        else if (!strcmp(store[k], "--bandwidth")) strcpy(store[k], "--no-bandwidth-test");   /* 512 MiB, 1 s */
        argv[argc++] = store[k];
        pos += len + 1;
    }
    argv[argc] = NULL;
    return argc;
}

#endif
