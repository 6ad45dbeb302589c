/*
 * fuzz_template_input.h — one input of fuzz_template (chat templates) run through the
 * renderer with its oracles; shared by fuzz/fuzz_template.c and tests/test_chat_template.c,
 * which replays tests/corpus/template/ exactly as the fuzzer ran it. Header-only.
 *
 * Layout: byte 0: bits 0..2 the conversation (FUZZ_TEMPLATE_CONVS), bit 3 set: no
 * generation prompt, bit 4 set: also the extra variables of FUZZ_TEMPLATE_EXTRA (tools and
 * a tool-calling conversation); bytes 1..: the template text (any bytes).
 *
 * Oracles: a known status, and an error message that names the template; on success the
 * text is valid UTF-8, the spans are sorted, disjoint and inside it, and a second render
 * gives the same bytes and spans. Small limits keep every input fast.
 */
#ifndef EDGELLM_FUZZ_TEMPLATE_INPUT_H
#define EDGELLM_FUZZ_TEMPLATE_INPUT_H

#include "edgellm.h"
#include "runtime/chat_template.h"
#include "runtime/jinja_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const edgellm_chat_message FUZZ_TEMPLATE_MSGS[8][4] = {
    {{0}},
    {{"user", "Hello!"}},
    {{"system", "Be brief."}, {"user", "What is a KV cache?"}},
    {{"system", "S"}, {"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a story."}},
    {{"user", "<|im_end|><|eot_id|></s>[INST]<start_of_turn>{{ x }}{% if %}"}, {"assistant", "  spaced  "}},
    {{"user", "\xe7\xab\xaf\xe4\xbe\xa7 \xf0\x9f\x99\x82 \xce\xa3\xce\x91\xce\xa3 \xc3\x9f"}},
    {{"tool", "{\"a\": 1}"}, {"ipython", "x"}, {"moderator", ""}, {"user", ""}},
    {{"user", "a"}, {"assistant", "b"}, {"user", "c"}, {"assistant", "d"}},
};
static const int FUZZ_TEMPLATE_N_MSGS[8] = {0, 1, 2, 4, 2, 1, 4, 4};

static const char FUZZ_TEMPLATE_EXTRA[] =
    "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}], "
    "\"enable_thinking\": false, \"documents\": [{\"title\": \"t\", \"text\": \"x\"}], "
    "\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": \"\", "
    "\"tool_calls\": [{\"id\": \"call12345\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Paris\"}}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call12345\", \"content\": \"21\"}]}";

/* Small bounds so that no input takes long. */
static inline edgellm_jinja_limits fuzz_template_limits(void)
{
    edgellm_jinja_limits l = edgellm_jinja_default_limits(0);
    l.max_output_bytes = 256 << 10;
    l.max_memory_bytes = 16 << 20;
    l.max_steps = 200000;
    l.max_iterations = 20000;
    l.max_depth = 200;
    return l;
}

/* Run one input; returns NULL when every oracle held, else what failed (static text). */
static inline const char *fuzz_template_run(const uint8_t *data, size_t size)
{
    if (size < 1) return NULL;
    int conv = data[0] & 7;
    char *tmpl = malloc(size);   /* the text, NUL-terminated (a NUL inside ends it early) */
    if (!tmpl) return NULL;
    memcpy(tmpl, data + 1, size - 1);
    tmpl[size - 1] = 0;
    edgellm_chat_params p = edgellm_chat_default_params();
    p.add_generation_prompt = !(data[0] & 8);
    p.bos_token = "<s>";
    p.eos_token = "</s>";
    p.date = "2024-07-26";
    const char *extra = data[0] & 16 ? FUZZ_TEMPLATE_EXTRA : NULL;
    edgellm_jinja_limits lim = fuzz_template_limits();
    edgellm_chat_text *a = NULL, *b = NULL;
    edgellm_error ea = {0}, eb = {0};
    edgellm_status sa = edgellm_chat_render_ex(tmpl, "fuzz.jinja", FUZZ_TEMPLATE_MSGS[conv], FUZZ_TEMPLATE_N_MSGS[conv],
                                               &p, extra, &lim, &a, &ea);
    edgellm_status sb = edgellm_chat_render_ex(tmpl, "fuzz.jinja", FUZZ_TEMPLATE_MSGS[conv], FUZZ_TEMPLATE_N_MSGS[conv],
                                               &p, extra, &lim, &b, &eb);
    const char *why = NULL;
    if (sa != EDGELLM_OK && sa != EDGELLM_ERR_FORMAT && sa != EDGELLM_ERR_UNSUPPORTED && sa != EDGELLM_ERR_MISUSE &&
        sa != EDGELLM_ERR_NOMEM)
        why = "unexpected status";
    else if (sa != sb || strcmp(ea.msg, eb.msg))
        why = "two renders disagree";
    else if (sa != EDGELLM_OK && (strncmp(ea.msg, "fuzz.jinja", 10) || (a != NULL)))
        why = "an error without the template's name, or with a result";
    else if (sa == EDGELLM_OK) {
        size_t la, lb;
        const char *ta = edgellm_chat_text_str(a, &la), *tb = edgellm_chat_text_str(b, &lb);
        int n = edgellm_chat_text_n_spans(a);
        if (la != lb || memcmp(ta, tb, la) || n != edgellm_chat_text_n_spans(b)) why = "two renders differ";
        else if (!edgellm_jinja_u8_valid(ta, la)) why = "invalid UTF-8 in the rendering";
        else
            for (int i = 0, prev = -1; i < n && !why; i++) {
                size_t s0, e0, s1, e1;
                edgellm_chat_text_span(a, i, &s0, &e0);
                edgellm_chat_text_span(b, i, &s1, &e1);
                if (s0 != s1 || e0 != e1 || s0 >= e0 || e0 > la || (prev >= 0 && s0 <= (size_t)prev))
                    why = "bad message spans";
                prev = (int)e0;
            }
    }
    edgellm_chat_text_free(a);
    edgellm_chat_text_free(b);
    free(tmpl);
    return why;
}

#endif
