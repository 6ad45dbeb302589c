/*
 * containers.c — the growable id array, the min-heap and the two hash maps of containers.h.
 *
 * Both maps use open addressing with linear probing over a power-of-two table kept at most
 * half full, so a lookup touches a couple of slots on average.
 *
 *  - edgellm_tok_strmap: string -> index in a string table (the tokenizer's token texts ->
 *    token id). A slot holds only the index (-1 = empty); the key is the string in the
 *    table, so the map costs 4 bytes per slot. Hash: 64-bit FNV-1a
 *    (http://www.isthe.com/chongo/tech/comp/fnv/).
 *  - edgellm_tok_u64map: 64-bit key -> two int32 values (BPE merges: (left << 32 | right)
 *    -> (rank, merged id); the special-token trie: (node << 8 | byte) -> child). Hash: the
 *    splitmix64 finalizer (Steele, Lea, Flood, "Fast splittable pseudorandom number
 *    generators", OOPSLA 2014).
 */
#include "containers.h"
#include "../common/common.h"

bool edgellm_tok_vec_push(edgellm_tok_vec *a, int32_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64, bytes;
        if (!edgellm_mul_size(cap, sizeof *a->v, &bytes)) return false;
        int32_t *v = edgellm_realloc(a->v, bytes);
        if (!v) return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

void edgellm_tok_vec_free(edgellm_tok_vec *a)
{
    edgellm_free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

uint64_t edgellm_tok_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Smallest power of two >= 2 * n (at least 16); 0 on overflow of uint32. */
static uint32_t table_size(size_t n)
{
    uint64_t size = 16;
    while (size < 2 * (uint64_t)n) size *= 2;
    return size > (1ull << 31) ? 0 : (uint32_t)size;
}

/* ------------------------------------------------------------------ string -> index */

bool edgellm_tok_strmap_build(edgellm_tok_strmap *m, const char *pool, const size_t *off, const uint32_t *len,
                              int32_t n)
{
    m->slot = NULL;
    m->mask = 0;
    uint32_t size = table_size(n > 0 ? (size_t)n : 0);
    if (!size) return false;
    m->slot = edgellm_malloc((size_t)size * sizeof *m->slot);
    if (!m->slot) return false;
    memset(m->slot, 0xff, (size_t)size * sizeof *m->slot);   /* all -1 */
    m->mask = size - 1;
    for (int32_t id = 0; id < n; id++) {
        const char *s = pool + off[id];
        size_t sn = len[id];
        if (sn == 0) continue;                                 /* never looked up */
        uint32_t i = (uint32_t)edgellm_tok_hash_bytes(s, sn) & m->mask;
        for (;; i = (i + 1) & m->mask) {
            int32_t other = m->slot[i];
            if (other < 0) { m->slot[i] = id; break; }
            if (len[other] == sn && !memcmp(pool + off[other], s, sn)) {
                m->slot[i] = id;                               /* duplicate text: last wins */
                break;
            }
        }
    }
    return true;
}

int32_t edgellm_tok_strmap_find(const edgellm_tok_strmap *m, const char *pool, const size_t *off,
                                const uint32_t *len, const char *s, size_t n)
{
    if (!m->slot || n == 0) return -1;
    uint32_t i = (uint32_t)edgellm_tok_hash_bytes(s, n) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        int32_t id = m->slot[i];
        if (id < 0) return -1;
        if (len[id] == n && !memcmp(pool + off[id], s, n)) return id;
    }
}

void edgellm_tok_strmap_free(edgellm_tok_strmap *m)
{
    edgellm_free(m->slot);
    m->slot = NULL;
}

/* ------------------------------------------------------------------ u64 -> (a, b) */

bool edgellm_tok_u64map_init(edgellm_tok_u64map *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    uint32_t size = table_size(expected);
    if (!size) return false;
    m->key = edgellm_malloc((size_t)size * sizeof *m->key);
    m->a = edgellm_malloc((size_t)size * sizeof *m->a);
    m->b = edgellm_malloc((size_t)size * sizeof *m->b);
    if (!m->key || !m->a || !m->b) { edgellm_tok_u64map_free(m); return false; }
    memset(m->key, 0xff, (size_t)size * sizeof *m->key);     /* all EDGELLM_TOK_KEY_EMPTY */
    m->mask = size - 1;
    return true;
}

void edgellm_tok_u64map_free(edgellm_tok_u64map *m)
{
    edgellm_free(m->key);
    edgellm_free(m->a);
    edgellm_free(m->b);
    memset(m, 0, sizeof *m);
}

static bool u64map_grow(edgellm_tok_u64map *m)
{
    edgellm_tok_u64map bigger;
    if (!edgellm_tok_u64map_init(&bigger, ((size_t)m->mask + 1))) return false;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->key[i] != EDGELLM_TOK_KEY_EMPTY)
            edgellm_tok_u64map_put(&bigger, m->key[i], m->a[i], m->b[i], true);
    edgellm_tok_u64map_free(m);
    *m = bigger;
    return true;
}

bool edgellm_tok_u64map_put(edgellm_tok_u64map *m, uint64_t key, int32_t a, int32_t b, bool keep_first)
{
    if (2 * (m->n + 1) > (size_t)m->mask + 1 && !u64map_grow(m)) return false;
    uint32_t i = (uint32_t)hash_u64(key) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        if (m->key[i] == EDGELLM_TOK_KEY_EMPTY) {
            m->key[i] = key;
            m->a[i] = a;
            m->b[i] = b;
            m->n++;
            return true;
        }
        if (m->key[i] == key) {
            if (!keep_first) { m->a[i] = a; m->b[i] = b; }
            return true;
        }
    }
}

bool edgellm_tok_u64map_get(const edgellm_tok_u64map *m, uint64_t key, int32_t *a, int32_t *b)
{
    if (!m->key) return false;
    uint32_t i = (uint32_t)hash_u64(key) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        if (m->key[i] == key) {
            if (a) *a = m->a[i];
            if (b) *b = m->b[i];
            return true;
        }
        if (m->key[i] == EDGELLM_TOK_KEY_EMPTY) return false;
    }
}

/* ------------------------------------------------------------------ min-heap */

bool edgellm_tok_heap_append(edgellm_tok_heap *h, uint64_t key)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256, bytes;
        if (!edgellm_mul_size(cap, sizeof *h->v, &bytes)) return false;
        uint64_t *v = edgellm_realloc(h->v, bytes);
        if (!v) return false;
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = key;
    return true;
}

static void sift_down(uint64_t *v, size_t n, size_t i)
{
    uint64_t x = v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && v[c + 1] < v[c]) c++;
        if (v[c] >= x) break;
        v[i] = v[c];
        i = c;
    }
    v[i] = x;
}

void edgellm_tok_heap_build(edgellm_tok_heap *h)
{
    for (size_t i = h->n / 2; i-- > 0;) sift_down(h->v, h->n, i);
}

bool edgellm_tok_heap_push(edgellm_tok_heap *h, uint64_t key)
{
    if (!edgellm_tok_heap_append(h, key)) return false;
    size_t i = h->n - 1;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent] <= key) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = key;
    return true;
}

uint64_t edgellm_tok_heap_pop(edgellm_tok_heap *h)
{
    uint64_t top = h->v[0];
    h->v[0] = h->v[--h->n];
    if (h->n) sift_down(h->v, h->n, 0);
    return top;
}

void edgellm_tok_heap_free(edgellm_tok_heap *h)
{
    edgellm_free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
