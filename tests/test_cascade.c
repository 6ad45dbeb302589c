/* test_cascade.c — the small/large cascade (edgellm_tools.h, "Cascade"): the signals on
 * hand-made probabilities; a generation that never escalates gives the small model's greedy
 * text and one that always does the large model's (each equal to edgellm_generate's, greedy);
 * the task curve with the same model as small and large (no escalation needed, escalation
 * rising with the threshold); bad input. */
#include "test_util.h"
#include "edgellm_tools.h"
#include <math.h>

#define MODEL "models/stories260K/stories260K.gguf"
#define RANDOM "models/random/llama-2-tiny-random.gguf"

static void test_signals(void)
{
    const float p[5] = {0.9f, 0.5f, 0.8f, 0.2f, 0.7f}, h[5] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
    CHECK_NEAR(edgellm_cascade_signal_value(EDGELLM_CASCADE_MIN_PROB, p, h, 5), 0.2, 1e-6);
    CHECK_NEAR(edgellm_cascade_signal_value(EDGELLM_CASCADE_P10, p, h, 5), 0.2, 1e-6);   /* rank floor(0.4) = 0 */
    CHECK_NEAR(edgellm_cascade_signal_value(EDGELLM_CASCADE_MEAN_LOGPROB, p, h, 5),
               (log(0.9) + log(0.5) + log(0.8) + log(0.2) + log(0.7)) / 5, 1e-6);
    CHECK_NEAR(edgellm_cascade_signal_value(EDGELLM_CASCADE_ENTROPY, p, h, 5), -0.3, 1e-6);
    float q[11];
    for (int i = 0; i < 11; i++) q[i] = (float)(10 - i) / 10.0f;   /* 1.0 .. 0.0 */
    CHECK_NEAR(edgellm_cascade_signal_value(EDGELLM_CASCADE_P10, q, NULL, 11), 0.1, 1e-6);   /* rank 1 */
    CHECK(isinf(edgellm_cascade_signal_value(EDGELLM_CASCADE_MIN_PROB, p, h, 0)));
    CHECK(!strcmp(edgellm_cascade_signal_name(EDGELLM_CASCADE_P10), "p10"));
    CHECK(edgellm_cascade_signal_name(9) == NULL);
}

typedef struct { char text[4096]; size_t len; } collected;
static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    collected *c = user;
    if (c->len + len < sizeof c->text) memcpy(c->text + c->len, piece, len), c->len += len;
    c->text[c->len] = 0;
    return 0;
}

static void greedy_text(edgellm_ctx *c, const char *prompt, int n, collected *out)
{
    edgellm_generate_params p = edgellm_generate_default_params();
    p.n_predict = n;
    p.sampling.temperature = 0;
    CHECK_OK(edgellm_generate(c, prompt, &p, collect, out, NULL, &_e));
}

static void test_generate(void)
{
    NEED_SHARED(path, MODEL);
    NEED_SHARED(rpath, RANDOM);
    edgellm_model *s = test_load_model(rpath), *l = test_load_model(path);
    if (!s || !l) { CHECK(0); return; }
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 1;
    edgellm_ctx *cs = NULL, *cl = NULL;
    CHECK_OK(edgellm_ctx_new(s, &cp, &cs, &_e));
    CHECK_OK(edgellm_ctx_new(l, &cp, &cl, &_e));
    const char *prompt = "Once upon a time";
    collected ws = {0}, wl = {0};
    greedy_text(cs, prompt, 24, &ws);
    greedy_text(cl, prompt, 24, &wl);
    edgellm_cascade_params p = edgellm_cascade_default_params();
    p.n_predict = 24;
    edgellm_cascade_result r;
    p.threshold = -INFINITY;   /* never */
    CHECK_OK(edgellm_cascade_generate(cs, cl, prompt, &p, &r, &_e));
    CHECK_EQ(r.escalated, 0);
    CHECK(r.text && !strcmp(r.text, ws.text));
    CHECK(r.signal > 0 && r.signal <= 1);
    edgellm_cascade_result_free(&r);
    p.threshold = INFINITY;    /* always: the vocabularies differ (32000 and 512 tokens) */
    p.signal = EDGELLM_CASCADE_ENTROPY;
    CHECK_OK(edgellm_cascade_generate(cs, cl, prompt, &p, &r, &_e));
    CHECK_EQ(r.escalated, 1);
    CHECK(r.text && !strcmp(r.text, wl.text));
    CHECK(r.n_large > 0 && r.large_ms > 0);
    edgellm_cascade_result_free(&r);
    p.signal = 7;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_cascade_generate(cs, cl, prompt, &p, &r, &err), EDGELLM_ERR_MISUSE);
    edgellm_ctx_free(cs);
    edgellm_ctx_free(cl);
    edgellm_model_free(s);
    edgellm_model_free(l);
}

static void test_tasks(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) { CHECK(0); return; }
    const char *c1[] = {" cat", " dog", " ball"}, *c2[] = {" happy", " sad"}, *c3[] = {" park", " moon", " tree"};
    const edgellm_eval_item items[] = {
        {"Lily had a red ball. She threw the", c1, 3, 2, NULL},
        {"Tom got a new toy. He was very", c2, 2, 0, NULL},
        {"They went to play in the", c3, 3, 0, NULL},
        {"The dog ran after the", c1, 3, 2, NULL},
    };
    edgellm_cascade_report rep;
    CHECK_OK(edgellm_cascade_tasks(m, m, items, 4, 1, 0, &rep, &_e));
    CHECK_EQ(rep.n_items, 4);
    CHECK_NEAR(rep.small_pct, rep.large_pct, 1e-9);
    CHECK_NEAR(rep.max_gap_pct, 3.0, 1e-9);
    CHECK_EQ(rep.n_points, EDGELLM_CASCADE_MAX_POINTS);
    CHECK_EQ(rep.chosen, 0);   /* the same model: no escalation needed */
    CHECK_NEAR(rep.points[0].escalation_pct, 0.0, 1e-9);
    CHECK_NEAR(rep.points[rep.n_points - 1].escalation_pct, 100.0, 1e-9);
    for (int k = 1; k < rep.n_points; k++) {
        CHECK(rep.points[k].escalation_pct >= rep.points[k - 1].escalation_pct);
        CHECK_NEAR(rep.points[k].accuracy_pct, rep.small_pct, 1e-9);
    }
    const edgellm_eval_item gen = {"Say hi", NULL, 0, 0, "hi"};
    edgellm_error err = {0};
    CHECK_EQ(edgellm_cascade_tasks(m, m, &gen, 1, 1, 0, &rep, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "item 0") != NULL);
    edgellm_model_free(m);
}

int main(void)
{
    RUN(test_signals);
    RUN(test_generate);
    RUN(test_tasks);
    return test_summary();
}
