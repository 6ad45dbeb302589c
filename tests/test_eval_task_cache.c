/* test_eval_task_cache.c — edgellm_ctx_truncate (roll the KV cache back to a prefix) and
 * the multiple-choice scoring of `edgellm eval task` that uses it to decode each item's
 * context once instead of once per choice.
 *
 * References and tolerances (all exact: the claim is bit-for-bit equality):
 *   - truncate: logits of B decoded after A, then C, then a truncation back to A equal the
 *     logits of B decoded right after A, and the rows of A+B decoded in one call (memcmp).
 *   - choice scores: for every item of data/tasks/tinystories_mc.jsonl (240 items, 4
 *     choices) and a few items whose choice merges with the context's last word, the
 *     scores of edgellm_eval_choice_scores equal, as doubles, the way eval task scored
 *     before the cache was reused: per choice, an empty cache, whole[0 .. p-1) decoded
 *     without logits, whole[p-1 ..) with logits, summed in the same order. Written here
 *     from the rules in eval_task.c's opening comment. Both timings are printed.
 */
#include "test_util.h"
#include "tools/eval.h"
#include "common/common.h"

#define STORIES "models/stories260K/stories260K.gguf"
#define RANDOM_GGUF "models/random/llama-2-tiny-random.gguf"

static edgellm_model *load(const char *path)
{
    edgellm_model *m = NULL;
    edgellm_error err = {0};
    if (edgellm_model_load(path, NULL, &m, &err) != EDGELLM_OK) fprintf(stderr, "load: %s\n", err.msg);
    return m;
}

static edgellm_ctx *new_ctx(const edgellm_model *m, int n_ctx)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err) != EDGELLM_OK) fprintf(stderr, "ctx: %s\n", err.msg);
    return c;
}

static int tokenize(const edgellm_model *m, const char *s, int32_t *ids, int cap)
{
    int n = 0;
    edgellm_error err = {0};
    if (edgellm_tokenize(edgellm_model_tokenizer(m), s, strlen(s), 1, ids, cap, &n, &err) != EDGELLM_OK) return -1;
    return n;
}

/* ------------------------------------------------------------------ truncate ---- */

static void test_ctx_truncate_matches_fresh_decode(void)
{
    NEED_SHARED(path, STORIES);
    edgellm_model *m = load(path);
    edgellm_ctx *c = m ? new_ctx(m, 256) : NULL;
    if (!c) { CHECK(0); edgellm_model_free(m); return; }
    const int nv = edgellm_tokenizer_n_vocab(edgellm_model_tokenizer(m));
    int32_t a[128], b[64], cc[64], ab[192];
    /* A longer than one forward chunk (64 tokens), so chunking differs between the routes */
    int na = tokenize(m, "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
                         "park with her friends. One day, she saw a big red ball under a tree. She was very happy and "
                         "wanted to show it to her mom, who was in the kitchen making a cake for the party, and",
                      a, 128);
    int nb = tokenize(m, " she ran to get it", b, 64) - 1, nc = tokenize(m, " the dog barked at the cat", cc, 64) - 1;
    CHECK(na > 64 && nb > 2 && nc > 2);
    if (getenv("EDGELLM_TEST_VERBOSE")) fprintf(stderr, "   A %d, B %d, C %d tokens\n", na, nb, nc);
    memcpy(ab, a, (size_t)na * sizeof *a);
    memcpy(ab + na, b + 1, (size_t)nb * sizeof *b);   /* b[0], cc[0] are BOS */
    float *l_fresh = malloc((size_t)nb * nv * sizeof(float)), *l_trunc = malloc((size_t)nb * nv * sizeof(float));
    float *l_one = malloc((size_t)(na + nb) * nv * sizeof(float));
    edgellm_error err = {0};

    /* route 1: A, then B */
    CHECK_OK(edgellm_decode(c, a, na, NULL, &err));
    CHECK_OK(edgellm_decode(c, b + 1, nb, l_fresh, &err));
    /* route 2: A, C, roll back to A, B */
    edgellm_ctx_reset(c);
    CHECK_OK(edgellm_decode(c, a, na, NULL, &err));
    CHECK_OK(edgellm_decode(c, cc + 1, nc, NULL, &err));
    CHECK_EQ(edgellm_ctx_n_past(c), na + nc);
    CHECK_OK(edgellm_ctx_truncate(c, na, &err));
    CHECK_EQ(edgellm_ctx_n_past(c), na);
    CHECK(edgellm_ctx_logits(c) == NULL);   /* dropped with the rolled-back positions */
    CHECK_OK(edgellm_decode(c, b + 1, nb, l_trunc, &err));
    CHECK(memcmp(l_fresh, l_trunc, (size_t)nb * nv * sizeof(float)) == 0);
    /* route 3: A+B in one call; B's rows are the same bits */
    edgellm_ctx_reset(c);
    CHECK_OK(edgellm_decode(c, ab, na + nb, l_one, &err));
    CHECK(memcmp(l_fresh, l_one + (size_t)na * nv, (size_t)nb * nv * sizeof(float)) == 0);
    /* mid-chunk roll back: keep 10 positions, then the rest of A and B again */
    CHECK_OK(edgellm_ctx_truncate(c, 10, &err));
    CHECK_OK(edgellm_decode(c, a + 10, na - 10, NULL, &err));
    CHECK_OK(edgellm_decode(c, b + 1, nb, l_trunc, &err));
    CHECK(memcmp(l_fresh, l_trunc, (size_t)nb * nv * sizeof(float)) == 0);

    /* bounds: nothing changes on a refused call */
    int before = edgellm_ctx_n_past(c);
    CHECK_EQ(edgellm_ctx_truncate(c, before + 1, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "stories260K.gguf") != NULL && strstr(err.msg, "holds") != NULL);
    CHECK_EQ(edgellm_ctx_truncate(c, -1, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_ctx_n_past(c), before);
    CHECK(edgellm_ctx_logits(c) != NULL);
    CHECK_EQ(edgellm_ctx_truncate(NULL, 0, &err), EDGELLM_ERR_MISUSE);
    CHECK_OK(edgellm_ctx_truncate(c, before, &err));   /* to the current length: a no-op but for the logits */
    CHECK_EQ(edgellm_ctx_n_past(c), before);
    CHECK_OK(edgellm_ctx_truncate(c, 0, &err));          /* 0: like reset */
    CHECK_EQ(edgellm_ctx_n_past(c), 0);
    CHECK_OK(edgellm_decode(c, ab, na + nb, l_one, &err));
    CHECK(memcmp(l_fresh, l_one + (size_t)na * nv, (size_t)nb * nv * sizeof(float)) == 0);

    free(l_fresh);
    free(l_trunc);
    free(l_one);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* ------------------------------------------------------------- choice scores ---- */

/* The scoring before the cache was reused, from the rules: each choice from an empty cache.
 * *merged counts choices whose first token differs from the context's last one. */
static edgellm_status scores_fresh(edgellm_ctx *c, const edgellm_eval_item *it, double *scores, int *merged)
{
    const edgellm_model *m = edgellm_ctx_model(c);
    const int nv = edgellm_tokenizer_n_vocab(edgellm_model_tokenizer(m));
    int32_t cids[1024], whole[1024];
    char joined[2048];
    edgellm_error err = {0};
    int nc = tokenize(m, it->context, cids, 1024);
    if (nc < 0) return EDGELLM_ERR_MISUSE;
    for (int k = 0; k < it->n_choices; k++) {
        snprintf(joined, sizeof joined, "%s%s", it->context, it->choices[k]);
        int nw = tokenize(m, joined, whole, 1024), p = 0;
        while (p < nc && p < nw && cids[p] == whole[p]) p++;
        if (p < 1 || p == nw) return EDGELLM_ERR_MISUSE;
        *merged += p < nc;
        float *rows = malloc((size_t)(nw - p) * nv * sizeof(float));
        edgellm_ctx_reset(c);
        edgellm_status rc = EDGELLM_OK;
        if (p > 1) rc = edgellm_decode(c, whole, p - 1, NULL, &err);
        if (rc == EDGELLM_OK) rc = edgellm_decode(c, whole + p - 1, nw - p, rows, &err);
        double s = 0.0;
        for (int i = 0; i < nw - p && rc == EDGELLM_OK; i++)
            s += (double)rows[(size_t)i * nv + whole[p + i]] - edgellm_eval_logsumexp(rows + (size_t)i * nv, nv);
        free(rows);
        if (rc != EDGELLM_OK) return rc;
        scores[k] = s;
    }
    return EDGELLM_OK;
}

/* A JSON string value after "key": into out (the task files escape only '"' and '\\'). */
static const char *json_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    if (*p != '"') return NULL;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\') p++;
        if (n + 1 < cap) out[n++] = *p;
    }
    out[n] = 0;
    return *p == '"' ? p + 1 : NULL;
}

typedef struct {
    char ctx[1024], ch[4][128];
    const char *choices[4];
    edgellm_eval_item item;
} mc_item;

/* One line {"context": "...", "choices": ["...", x4], "label": N}; false if it is not one. */
static bool parse_mc_line(const char *line, mc_item *o)
{
    const char *p = strstr(line, "\"context\": ");
    if (!p || !json_string(p + 11, o->ctx, sizeof o->ctx)) return false;
    if (!(p = strstr(line, "\"choices\": ["))) return false;
    p += 12;
    int n = 0;
    while (n < 4 && (p = json_string(p, o->ch[n], sizeof o->ch[n]))) {
        o->choices[n] = o->ch[n];
        n++;
        if (*p == ',') p += 2;
    }
    const char *l = strstr(line, "\"label\": ");
    if (n < 2 || !l) return false;
    o->item = (edgellm_eval_item){o->ctx, o->choices, n, atoi(l + 9), NULL};
    return true;
}

/* Every item of the task file (plus extra[]) scored both ways: equal as doubles. */
static void compare_scores(const char *model_path, const mc_item *extra, int n_extra, int max_items)
{
    char data[1024];
    const char *slash = strrchr(__FILE__, '/');   /* .../tests/test_eval_task_cache.c */
    snprintf(data, sizeof data, "%.*s/../data/tasks/tinystories_mc.jsonl", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".");
    FILE *f = fopen(data, "r");
    CHECK(f != NULL);
    if (!f) return;
    edgellm_model *m = load(model_path);
    edgellm_ctx *c = m ? new_ctx(m, 512) : NULL;
    if (!c) { CHECK(0); fclose(f); edgellm_model_free(m); return; }
    static mc_item items[300];
    int n = 0;
    char line[4096];
    while (n < max_items && fgets(line, sizeof line, f)) n += parse_mc_line(line, &items[n]);
    fclose(f);
    CHECK(n >= (max_items < 240 ? max_items : 240));
    for (int i = 0; i < n_extra && n < 300; i++) {
        items[n] = extra[i];
        int k = 0;
        for (; k < 4 && items[n].ch[k][0]; k++) items[n].choices[k] = items[n].ch[k];
        items[n].item = (edgellm_eval_item){items[n].ctx, items[n].choices, k, 0, NULL};
        n++;
    }
    double fresh[4], cached[4], ms_fresh = 0, ms_cached = 0;
    float *logits = NULL;
    size_t cap = 0;
    int n_diff = 0, merged = 0, n_scores = 0;
    edgellm_error err = {0};
    for (int i = 0; i < n; i++) {
        const edgellm_eval_item *it = &items[i].item;
        double t0 = edgellm_time_ms();
        edgellm_status r1 = scores_fresh(c, it, fresh, &merged);
        double t1 = edgellm_time_ms();
        edgellm_status r2 = edgellm_eval_choice_scores(c, it, i, &logits, &cap, cached, &err);
        double t2 = edgellm_time_ms();
        ms_fresh += t1 - t0;
        ms_cached += t2 - t1;
        CHECK_EQ(r1, EDGELLM_OK);
        CHECK_EQ(r2, EDGELLM_OK);
        if (r1 != EDGELLM_OK || r2 != EDGELLM_OK) { fprintf(stderr, "   item %d: %s\n", i, err.msg); break; }
        for (int k = 0; k < it->n_choices; k++, n_scores++)
            if (memcmp(&fresh[k], &cached[k], sizeof(double)) != 0) {
                if (n_diff++ < 5)
                    fprintf(stderr, "   item %d choice %d: fresh %.17g, cached %.17g\n", i, k, fresh[k], cached[k]);
            }
    }
    CHECK_EQ(n_diff, 0);
    if (n_extra) CHECK(merged > 0);   /* the roll-back below the context's end was exercised */
    fprintf(stderr, "   %s: %d items, %d scores bit-identical (%d choices merge with the context); "
                    "fresh per choice %.1f ms, context once %.1f ms (%.2fx)\n",
            edgellm_eval_basename(model_path), n, n_scores - n_diff, merged, ms_fresh, ms_cached,
            ms_cached > 0 ? ms_fresh / ms_cached : 0.0);
    edgellm_free(logits);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* Items whose choices continue the context's last word ("ti" + "me"): SentencePiece merges
 * across the boundary, so the shared prefix p is shorter than the context's tokens. */
static const mc_item EXTRA[] = {
    {"Once upon a ti", {"me", "ger", "ny"}, {0}, {0}},
    {"Lily went to the pa", {"rk", "per", "nt"}, {0}, {0}},
    {"The dog was very hap", {"py", "pen", " dog"}, {0}, {0}},
};   /* choices and item are filled in by compare_scores */

static void test_eval_choice_scores_bit_identical_stories(void)
{
    NEED_SHARED(path, STORIES);
    compare_scores(path, EXTRA, 3, 240);
}

static void test_eval_choice_scores_bit_identical_random(void)
{
    NEED_SHARED(path, RANDOM_GGUF);   /* another tokenizer (32000 pieces), 40 items */
    compare_scores(path, EXTRA, 3, 40);
}

int main(void)
{
    RUN(test_ctx_truncate_matches_fresh_decode);
    RUN(test_eval_choice_scores_bit_identical_stories);
    RUN(test_eval_choice_scores_bit_identical_random);
    return test_summary();
}
