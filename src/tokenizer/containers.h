/*
 * containers.h — the containers behind the tokenizers (containers.c): a growable array of
 * int32 ids, a min-heap of 64-bit keys, a hash map from 64-bit keys to two int32 values and
 * a hash index over a table of strings. They know nothing of the tokenizer object. None is
 * locked: one writer at a time; a container nobody modifies may be read from several
 * threads at once. Out of memory is a false return, after which the container is still
 * valid (and still owns what it held). Internal to the library.
 */
#ifndef EDGELLM_TOK_CONTAINERS_H
#define EDGELLM_TOK_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable array of ids; {0} is the empty array ---- */
typedef struct {
    int32_t *v;
    size_t n, cap;
} edgellm_tok_vec;

bool edgellm_tok_vec_push(edgellm_tok_vec *a, int32_t x);   /* false on OOM */
void edgellm_tok_vec_free(edgellm_tok_vec *a);

/* ---- min-heap of 64-bit keys (merge candidates: priority in the high half, the left
 *      symbol's index in the low half, so ties go to the leftmost pair); {0} is empty ---- */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} edgellm_tok_heap;

bool edgellm_tok_heap_append(edgellm_tok_heap *h, uint64_t key);   /* no ordering; false on OOM */
void edgellm_tok_heap_build(edgellm_tok_heap *h);                   /* heapify what was appended */
bool edgellm_tok_heap_push(edgellm_tok_heap *h, uint64_t key);     /* false on OOM */
uint64_t edgellm_tok_heap_pop(edgellm_tok_heap *h);                 /* smallest key; h->n > 0 */
void edgellm_tok_heap_free(edgellm_tok_heap *h);

/* ---- string -> index over a string table: string i is pool[off[i] .. off[i] + len[i]).
 *      A slot holds only the index; keys are compared with the table, which the caller
 *      keeps alive and unchanged while the index is used. {0} finds nothing. ---- */
typedef struct {
    int32_t *slot;          /* [mask+1]: string index, or -1 when empty */
    uint32_t mask;
} edgellm_tok_strmap;

/* Index strings 0..n-1 of the table; empty strings are left out, and a text present at
 * several indices maps to the last. false when out of memory or when n needs a table of
 * more than 2^31 slots (m then finds nothing). */
bool edgellm_tok_strmap_build(edgellm_tok_strmap *m, const char *pool, const size_t *off, const uint32_t *len,
                              int32_t n);
/* Index of the string s[0..n) in the table m was built over, or -1. */
int32_t edgellm_tok_strmap_find(const edgellm_tok_strmap *m, const char *pool, const size_t *off,
                                const uint32_t *len, const char *s, size_t n);
void edgellm_tok_strmap_free(edgellm_tok_strmap *m);

/* ---- 64-bit key -> (a, b) ints: merges ((left<<32)|right -> rank, result) and the
 *      special-token trie ((node<<8)|byte -> child) ---- */
typedef struct {
    uint64_t *key;          /* [mask+1]; EDGELLM_TOK_KEY_EMPTY when empty */
    int32_t *a, *b;
    uint32_t mask;
    size_t n;
} edgellm_tok_u64map;
#define EDGELLM_TOK_KEY_EMPTY UINT64_MAX

/* 64-bit FNV-1a of s[0..n). */
uint64_t edgellm_tok_hash_bytes(const char *s, size_t n);
bool edgellm_tok_u64map_init(edgellm_tok_u64map *m, size_t expected);      /* false on OOM */
void edgellm_tok_u64map_free(edgellm_tok_u64map *m);
/* Insert; an existing key keeps its values when keep_first, else is overwritten. */
bool edgellm_tok_u64map_put(edgellm_tok_u64map *m, uint64_t key, int32_t a, int32_t b, bool keep_first);
/* Returns false when absent. */
bool edgellm_tok_u64map_get(const edgellm_tok_u64map *m, uint64_t key, int32_t *a, int32_t *b);

#endif
