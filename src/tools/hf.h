/*
 * hf.h — internal side of `edgellm convert --hf` and `edgellm export --hf`: Hugging Face
 * checkpoint folders read and written in C. The files and what each holds:
 *
 *   hf_json.c         reading files whole (with a size cap), cJSON parsing with line:column
 *                     messages, strict getters, JSON string output
 *   hf_safetensors.c  safetensors files (single and sharded with the index), mapped and
 *                     validated; the header writer of export
 *   hf_config.c       config.json (+ generation_config.json): the hyperparameters
 *   hf_pretok.c       the pre-tokenizer of a tokenizer.json identified from its own
 *                     pre_tokenizer section, and the section export writes back
 *   hf_spm.c          SentencePiece tokenizer.model (protobuf) read and written
 *   hf_vocab.c        the vocabulary: tokenizer.model or tokenizer.json, with
 *                     tokenizer_config.json, special tokens, chat templates
 *   hf_convert.c      edgellm_convert_hf: the GGUF file (keys, tensor names, Q/K
 *                     permutation, quantization in the same streamed pass)
 *   hf_export.c       edgellm_export_hf: the folder back from a GGUF file (config.json,
 *                     safetensors)
 *   hf_export_vocab.c its tokenizer files
 *
 * JSON is read with cJSON (Debian libcjson-dev), as the CLI does; without it the public
 * functions return EDGELLM_ERR_UNSUPPORTED and nothing here is compiled.
 */
#ifndef EDGELLM_TOOLS_HF_H
#define EDGELLM_TOOLS_HF_H

#include "../common/common.h"
#include "edgellm_tools.h"

#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>

struct edgellm_gguf;
struct edgellm_gguf_writer;

/* JSON inputs (config.json, tokenizer.json, the index...) are read whole, up to this size. */
#define EDGELLM_HF_MAX_JSON_BYTES ((size_t)256 << 20)
/* safetensors headers: at most this many bytes (the safetensors crate's own limit,
 * huggingface/safetensors safetensors/src/tensor.rs MAX_HEADER_SIZE). */
#define EDGELLM_ST_MAX_HEADER ((uint64_t)100000000)
#define EDGELLM_ST_MAX_DIMS 8

/* ---------------------------------------------------------------- hf_json.c ---- */

/* dir + "/" + name into out[size]; false when it does not fit. */
bool edgellm_hf_path(char *out, size_t size, const char *dir, const char *name);
/* 1 when dir/name is a regular file (links followed), else 0. */
int edgellm_hf_has_file(const char *dir, const char *name);
/* Read a regular file whole into a NUL-terminated edgellm_malloc'd buffer (*len bytes).
 * EDGELLM_ERR_IO (cannot open, not a regular file, read error), EDGELLM_ERR_FORMAT (larger
 * than max_bytes), EDGELLM_ERR_NOMEM. */
edgellm_status edgellm_hf_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, edgellm_error *err);
/* Parse text[len] as JSON; EDGELLM_ERR_FORMAT "PATH: not valid JSON (line L, column C)". */
edgellm_status edgellm_hf_json_parse(const char *text, size_t len, const char *path, cJSON **out,
                                     edgellm_error *err);
/* Read and parse a file (EDGELLM_HF_MAX_JSON_BYTES at most). */
edgellm_status edgellm_hf_json_load(const char *path, cJSON **out, edgellm_error *err);
/* The first key that an object holds twice, or NULL (Python's json keeps the last of
 * duplicates, cJSON the first: a file that says two things is refused instead). */
const char *edgellm_hf_json_dup_key(const cJSON *obj);
/* Member key of obj (case-sensitive), NULL when absent or obj is not an object. */
const cJSON *edgellm_hf_get(const cJSON *obj, const char *key);
/* An integer-valued number in [lo, hi] (JSON numbers are doubles: exact up to 2^53). */
bool edgellm_hf_json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out);
/* s[0..n) is well-formed UTF-8 (edgellm_utf8_char_len). */
bool edgellm_hf_utf8_ok(const char *s, size_t n);
/* s[0..n) as a JSON string literal (quotes, \" \\ and control bytes escaped; UTF-8 as is). */
void edgellm_hf_json_put_str(FILE *f, const char *s, size_t n);
/* A float as the shortest decimal that reads back as the same float ("1e-05", "10000"). */
void edgellm_hf_json_put_float(FILE *f, float v);

/* ---------------------------------------------------------- hf_safetensors.c ---- */

/* One tensor of a safetensors file: shape in the file's (PyTorch's) order, outermost
 * first; data inside the mapping, possibly unaligned (read with memcpy). */
typedef struct {
    const char *name;                   /* NUL-terminated, owned by the set                */
    int         dtype;                  /* EDGELLM_TYPE_F32, _F16 or _BF16                 */
    int         n_dims;                 /* 0..EDGELLM_ST_MAX_DIMS                          */
    int64_t     shape[EDGELLM_ST_MAX_DIMS];
    uint64_t    n_elements;
    uint64_t    size_bytes;             /* n_elements * element size                       */
    uint64_t    offset;                 /* of its data from the start of its file          */
    const uint8_t *data;                /* inside the mapping                              */
    int         file;                   /* index of the file holding it                    */
} edgellm_st_tensor;

typedef struct edgellm_st_set edgellm_st_set;

/* The checkpoint of folder dir: model.safetensors.index.json and its shards when the
 * index exists, else model.safetensors. Every file mapped and validated completely
 * (hf_safetensors.c lists the checks); tensors sorted by name. EDGELLM_ERR_IO,
 * EDGELLM_ERR_FORMAT (the message names the file and the tensor), EDGELLM_ERR_NOT_FOUND
 * (neither file exists), EDGELLM_ERR_NOMEM. */
edgellm_status edgellm_st_open_dir(const char *dir, edgellm_st_set **out, edgellm_error *err);
/* One safetensors file given as bytes (fuzzing, tests): the same validation; the buffer
 * must outlive the set. */
edgellm_status edgellm_st_open_memory(const void *data, size_t size, const char *name, edgellm_st_set **out,
                                      edgellm_error *err);
void edgellm_st_close(edgellm_st_set *s);   /* NULL-safe */
int64_t edgellm_st_n_tensors(const edgellm_st_set *s);
const edgellm_st_tensor *edgellm_st_tensor_at(const edgellm_st_set *s, int64_t i);
const edgellm_st_tensor *edgellm_st_find(const edgellm_st_set *s, const char *name);   /* NULL: absent */
int edgellm_st_n_files(const edgellm_st_set *s);
const char *edgellm_st_file_path(const edgellm_st_set *s, int file);
/* The dtype name of the safetensors spec ("F32", "F16", "BF16") of an edgellm type. */
const char *edgellm_st_dtype_name(int type);

/* ------------------------------------------------------------- hf_config.c ---- */

typedef struct {
    char   arch[16];            /* GGUF architecture: "llama" or "qwen2"                   */
    char   hf_arch[64];         /* config.json architectures[0]                            */
    char   name[128];           /* general.name: the folder's name                         */
    int    n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab;
    int    head_dim;            /* n_embd / n_head unless config.json says head_dim         */
    bool   has_head_dim;        /* config.json has head_dim: key_length/value_length written */
    int64_t n_ctx;              /* max_position_embeddings; 0: absent                      */
    double rms_eps;
    double rope_theta;          /* 0: absent (the runtime's 10000 then)                    */
    int    tied;                /* tie_word_embeddings: 1, 0, or -1 when config.json is silent */
    /* rope_scaling / rope_parameters */
    char   rope_type[16];       /* "" none, "linear", "yarn", "llama3"                     */
    double rope_factor;
    double low_freq_factor, high_freq_factor;   /* llama3                                  */
    int64_t rope_orig_ctx;      /* original_max_position_embeddings; 0: absent             */
    double yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;   /* NaN: absent */
    /* special token ids of config.json and generation_config.json (-1: absent)            */
    int    bos_id, eos_id, pad_id;
    int    gen_eos[8];          /* generation_config.json eos_token_id (int or list)       */
    int    n_gen_eos;
    char   torch_dtype[16];
} edgellm_hf_config;

/* Read dir/config.json (and dir/generation_config.json when present). Architectures:
 * LlamaForCausalLM (also MistralForCausalLM) -> "llama", Qwen2ForCausalLM -> "qwen2".
 * EDGELLM_ERR_UNSUPPORTED for another architecture or a feature edgellm does not run
 * (biases on a llama, a non-SiLU activation, an unknown rope_scaling type),
 * EDGELLM_ERR_FORMAT for missing/inconsistent values; messages name the file and key. */
edgellm_status edgellm_hf_config_load(const char *dir, edgellm_hf_config *c, edgellm_error *err);
/* Only the vocabulary-related parts (vocab_size, special ids), when config.json may be
 * absent or of another architecture (vocabulary-only conversion). Fills what it finds. */
void edgellm_hf_config_vocab_only(const char *dir, edgellm_hf_config *c);
/* llama3 rope scaling: the per-dimension frequency factors llama.cpp writes as
 * rope_freqs.weight, factors[head_dim / 2]. */
void edgellm_hf_llama3_rope_factors(const edgellm_hf_config *c, float *factors);

/* ------------------------------------------------------------- hf_pretok.c ---- */

/* The byte-level BPE pre-tokenizer a tokenizer.json describes (its "pre_tokenizer" and
 * "normalizer" sections): *gguf_pre receives the tokenizer.ggml.pre name edgellm writes
 * ("gpt-2", "llama-bpe", "qwen2", ...). EDGELLM_ERR_UNSUPPORTED quotes the stage (regex
 * pattern or pre-tokenizer type) edgellm does not implement. */
edgellm_status edgellm_hf_pretok_identify(const cJSON *pre_tokenizer, const cJSON *normalizer, const char *path,
                                          const char **gguf_pre, edgellm_error *err);
/* Write the "pre_tokenizer" JSON value for tokenizer.ggml.pre (NULL or "": "default") to f;
 * false (nothing written) when edgellm does not know the name. */
bool edgellm_hf_pretok_write(FILE *f, const char *gguf_pre);

/* ---------------------------------------------------------------- hf_spm.c ---- */

/* A SentencePiece model (sentencepiece_model.proto, ModelProto). */
typedef struct {
    int      n;                 /* pieces                                                  */
    const char **piece;         /* [n] pointers into the file's bytes (not NUL-terminated)  */
    uint32_t *len;              /* [n] byte lengths                                        */
    float    *score;            /* [n]                                                     */
    int32_t  *type;             /* [n] 1 normal 2 unknown 3 control 4 user-defined 5 unused 6 byte */
    int      model_type;        /* TrainerSpec.model_type: 1 unigram, 2 BPE, 3 word, 4 char */
    int      unk_id, bos_id, eos_id, pad_id;   /* TrainerSpec (defaults 0, 1, 2, -1)      */
    bool     add_dummy_prefix;  /* NormalizerSpec (default true)                           */
    bool     byte_fallback;
} edgellm_spm_model;

/* Parse buf[size] (a tokenizer.model). The pieces point into buf, which must outlive the
 * model. EDGELLM_ERR_FORMAT names the field that does not parse; EDGELLM_ERR_NOMEM. */
edgellm_status edgellm_spm_parse(const uint8_t *buf, size_t size, const char *path, edgellm_spm_model *m,
                                 edgellm_error *err);
void edgellm_spm_free(edgellm_spm_model *m);
/* Write a tokenizer.model of n pieces (model type BPE, byte fallback when a BYTE piece
 * exists, add_dummy_prefix as given, the unknown/bos/eos/pad ids) to f. */
void edgellm_spm_write(FILE *f, const char *const *piece, const uint64_t *len, const float *score,
                       const int32_t *type, int n, bool add_dummy_prefix, int unk_id, int bos_id, int eos_id,
                       int pad_id);

/* --------------------------------------------------------- hf_export*.c ---- */

/* A folder being written by export: each file through edgellm_output_*; once committed,
 * a file is registered for edgellm_remove_temp_files (while slots last) until the folder is
 * renamed into place and the slots released. */
typedef struct {
    char path[4096];           /* the temporary folder                                     */
    int  slots[32];
    int  n_slots;
    edgellm_error *err;
} edgellm_hf_outdir;

edgellm_status edgellm_hf_outdir_open(edgellm_hf_outdir *d, const char *name, edgellm_output **o);
edgellm_status edgellm_hf_outdir_commit(edgellm_hf_outdir *d, const char *name, edgellm_output *o);
/* A tokenizer.ggml.*_token_id of g; -1 when absent or not an id. */
int edgellm_hf_gguf_id(const struct edgellm_gguf *g, const char *key);
/* The tokenizer files of g into d (hf_export_vocab.c): tokenizer.model (SentencePiece) or
 * tokenizer.json (byte-level BPE), then tokenizer_config.json; *file names the first.
 * EDGELLM_ERR_FORMAT (no tokenizer), EDGELLM_ERR_UNSUPPORTED (another tokenizer model, a
 * pre-tokenizer edgellm has no tokenizer.json form for), those of edgellm_output_*. */
edgellm_status edgellm_hf_export_tokenizer(const struct edgellm_gguf *g, const char *in_path, int64_t n_ctx,
                                           edgellm_hf_outdir *d, const char **file);

/* --------------------------------------------------------------- hf_vocab.c ---- */

typedef struct {
    bool     spm;               /* "llama" (SentencePiece) or "gpt2" (byte-level BPE)     */
    const char *pre;            /* tokenizer.ggml.pre (static string)                      */
    int      n;                 /* tokens                                                  */
    char   **text;              /* [n] NUL-terminated (a text may hold no NUL)             */
    uint64_t *len;              /* [n]                                                     */
    float   *score;             /* [n] SentencePiece only                                  */
    int32_t *type;              /* [n] GGUF token types                                    */
    char   **merges;            /* [n_merges] "left right" (byte-level BPE only)           */
    int      n_merges;
    int      bos, eos, unk, pad, eot, eom;   /* -1: none                                   */
    int      add_bos, add_eos, add_space_prefix;   /* -1: not said (key not written)       */
    char    *chat_template;     /* NULL: none                                              */
    char   **tmpl_name, **tmpl_text;   /* named templates other than "default"            */
    int      n_tmpl;
    char     source[32];        /* "tokenizer.model", "tokenizer.json"                     */
    int      n_padded;          /* "[PADi]" tokens added up to the model's vocab_size      */
} edgellm_hf_vocab;

/* Read the vocabulary of dir: tokenizer.model when present (with the added tokens of
 * tokenizer_config.json / added_tokens.json), else tokenizer.json. n_vocab: the model's
 * vocab_size (rows of the embedding; 0 when unknown): the vocabulary is padded to it and
 * no id may reach it. c supplies config.json's special ids (may be NULL). */
edgellm_status edgellm_hf_vocab_load(const char *dir, int n_vocab, const edgellm_hf_config *c, edgellm_hf_vocab *v,
                                     edgellm_error *err);
void edgellm_hf_vocab_free(edgellm_hf_vocab *v);
/* The tokenizer.* keys of v into w; false when out of memory. */
bool edgellm_hf_vocab_to_gguf(const edgellm_hf_vocab *v, struct edgellm_gguf_writer *w);

#endif /* EDGELLM_HAVE_CJSON */
#endif
