/*
 * chat_template.c — edgellm's chat template API (include/edgellm.h, "chat templates"): a
 * model's tokenizer.chat_template rendered over a conversation by the Jinja engine
 * (jinja.h), the built-in templates for models without one, and the template string of a
 * loaded model.
 *
 * The rendering is the text Hugging Face transformers' apply_chat_template(messages,
 * tokenize=False, add_generation_prompt=...) returns, plus the byte ranges that came from
 * the messages: a tokenizer parses special tokens only outside them, so a user message
 * containing "<|im_end|>" stays text.
 */
#include "chat_template.h"
#include "jinja.h"
#include "../common/common.h"
#include "../model/model.h"

struct edgellm_chat_text {
    edgellm_jinja_output o;
};

/* ------------------------------------------------------------ built-ins ---- */
/* Each text is the chat_template string of the cited tokenizer_config.json, unchanged. */
static const struct { const char *name; const char *text; } BUILTINS[] = {
    /* ChatML: transformers' own default template (PreTrainedTokenizerBase
     * .default_chat_template, "_base", until v4.43; huggingface/huggingface.js
     * packages/jinja/test/e2e.test.js), the same text as teknium/OpenHermes-2.5-Mistral-7B's
     * and Felladrin/Llama-68M-Chat-v1's tokenizer_config.json (openvinotoolkit/openvino.genai
     * tests/python_tests/data/tokenizer_configs.py). */
    {"chatml",
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|"
     ">' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"},
    /* meta-llama/Llama-2-7b-chat-hf tokenizer_config.json (openvino.genai tokenizer_configs.py) */
    {"llama2",
     "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = me"
     "ssages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% en"
     "dif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{"
     " raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% "
     "if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<"
     "</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if m"
     "essage['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['ro"
     "le'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"},
    /* meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json (openvino.genai
     * tokenizer_configs.py): the Llama 3 format without 3.1's date and tool header */
    {"llama3",
     "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|"
     ">' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.in"
     "dex0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generat"
     "ion_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"},
    /* mistralai/Mistral-7B-Instruct-v0.3 tokenizer_config.json (openvino.genai tokenizer_configs.py) */
    {"mistral",
     "{%- if messages[0][\"role\"] == \"system\" %}\n    {%- set system_message = messages[0][\"content\"] %}"
     "\n    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n{%-"
     " endif %}\n{%- if not tools is defined %}\n    {%- set tools = none %}\n{%- endif %}\n{%- set user_messa"
     "ges = loop_messages | selectattr(\"role\", \"equalto\", \"user\") | list %}\n\n{#- This block checks for"
     " alternating user/assistant messages, skipping tool calling messages #}\n{%- set ns = namespace() %}\n{%"
     "- set ns.index = 0 %}\n{%- for message in loop_messages %}\n    {%- if not (message.role == \"tool\" or "
     "message.role == \"tool_results\" or (message.tool_calls is defined and message.tool_calls is not none)) "
     "%}\n        {%- if (message[\"role\"] == \"user\") != (ns.index % 2 == 0) %}\n            {{- raise_exce"
     "ption(\"After the optional system message, conversation roles must alternate user/assistant/user/assista"
     "nt/...\") }}\n        {%- endif %}\n        {%- set ns.index = ns.index + 1 %}\n    {%- endif %}\n{%- en"
     "dfor %}\n\n{{- bos_token }}\n{%- for message in loop_messages %}\n    {%- if message[\"role\"] == \"user"
     "\" %}\n        {%- if tools is not none and (message == user_messages[-1]) %}\n            {{- \"[AVAILA"
     "BLE_TOOLS] [\" }}\n            {%- for tool in tools %}\n                {%- set tool = tool.function %}"
     "\n                {{- '{\"type\": \"function\", \"function\": {' }}\n                {%- for key, val in"
     " tool.items() if key != \"return\" %}\n                    {%- if val is string %}\n                    "
     "    {{- '\"' + key + '\": \"' + val + '\"' }}\n                    {%- else %}\n                        "
     "{{- '\"' + key + '\": ' + val|tojson }}\n                    {%- endif %}\n                    {%- if no"
     "t loop.last %}\n                        {{- \", \" }}\n                    {%- endif %}\n               "
     " {%- endfor %}\n                {{- \"}}\" }}\n                {%- if not loop.last %}\n                "
     "    {{- \", \" }}\n                {%- else %}\n                    {{- \"]\" }}\n                {%- en"
     "dif %}\n            {%- endfor %}\n            {{- \"[/AVAILABLE_TOOLS]\" }}\n            {%- endif %}\n"
     "        {%- if loop.last and system_message is defined %}\n            {{- \"[INST] \" + system_message "
     "+ \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n        {%- else %}\n            {{- \"[INST] \" +"
     " message[\"content\"] + \"[/INST]\" }}\n        {%- endif %}\n    {%- elif message.tool_calls is defined"
     " and message.tool_calls is not none %}\n        {{- \"[TOOL_CALLS] [\" }}\n        {%- for tool_call in "
     "message.tool_calls %}\n            {%- set out = tool_call.function|tojson %}\n            {{- out[:-1] "
     "}}\n            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}\n                {{- r"
     "aise_exception(\"Tool call IDs should be alphanumeric strings with length 9!\") }}\n            {%- endi"
     "f %}\n            {{- ', \"id\": \"' + tool_call.id + '\"}' }}\n            {%- if not loop.last %}\n   "
     "             {{- \", \" }}\n            {%- else %}\n                {{- \"]\" + eos_token }}\n         "
     "   {%- endif %}\n        {%- endfor %}\n    {%- elif message[\"role\"] == \"assistant\" %}\n        {{- "
     "\" \" + message[\"content\"]|trim + eos_token}}\n    {%- elif message[\"role\"] == \"tool_results\" or m"
     "essage[\"role\"] == \"tool\" %}\n        {%- if message.content is defined and message.content.content i"
     "s defined %}\n            {%- set content = message.content.content %}\n        {%- else %}\n           "
     " {%- set content = message.content %}\n        {%- endif %}\n        {{- '[TOOL_RESULTS] {\"content\": '"
     " + content|string + \", \" }}\n        {%- if not message.tool_call_id is defined or message.tool_call_i"
     "d|length != 9 %}\n            {{- raise_exception(\"Tool call IDs should be alphanumeric strings with le"
     "ngth 9!\") }}\n        {%- endif %}\n        {{- '\"call_id\": \"' + message.tool_call_id + '\"}[/TOOL_R"
     "ESULTS]' }}\n    {%- else %}\n        {{- raise_exception(\"Only user and assistant roles are supported,"
     " with the exception of an initial optional system message!\") }}\n    {%- endif %}\n{%- endfor %}\n"},
    /* microsoft/Phi-3-mini-4k-instruct tokenizer_config.json (openvino.genai tokenizer_configs.py) */
    {"phi3",
     "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] +"
     " '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% "
     "elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %"
     "}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"},
    /* google/gemma-2-2b-it tokenizer_config.json (ggml-org/llama.cpp
     * models/templates/google-gemma-2-2b-it.jinja) */
    {"gemma",
     "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }"
     "}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{"
     "{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{%"
     " if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %"
     "}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endf"
     "or %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"},
    /* HuggingFaceH4/zephyr-7b-beta tokenizer_config.json (huggingface.js
     * packages/jinja/test/e2e.test.js), also TinyLlama/TinyLlama-1.1B-Chat-v1.0's */
    {"zephyr",
     "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] "
     "+ eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_tok"
     "en }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token"
     " }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% e"
     "ndfor %}"},
};

const char *edgellm_chat_template_builtin(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (!strcmp(BUILTINS[i].name, name)) return BUILTINS[i].text;
    return NULL;
}

const char *edgellm_chat_template_builtin_names(void)
{
    return "chatml, llama2, llama3, mistral, phi3, gemma, zephyr";
}

/* --------------------------------------------------------------- render ---- */
edgellm_chat_params edgellm_chat_default_params(void)
{
    edgellm_chat_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.add_generation_prompt = 1;
    return p;
}

edgellm_status edgellm_chat_render_ex(const char *template_text, const char *template_name,
                                      const edgellm_chat_message *msgs, int n_msgs, const edgellm_chat_params *p,
                                      const char *extra_json, const edgellm_jinja_limits *lim,
                                      edgellm_chat_text **out, edgellm_error *err)
{
    const char *name = template_name ? template_name : "template";
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: no place for the result", name);
    *out = NULL;
    if (!template_text) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: no template text", name);
    if (n_msgs < 0 || (n_msgs > 0 && !msgs))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: bad messages (%d at %p)", name, n_msgs, (const void *)msgs);
    edgellm_chat_params pp = edgellm_chat_default_params();
    edgellm_status rc = edgellm_sized_in(&pp, sizeof pp, p, "edgellm_chat_params", err);
    if (rc != EDGELLM_OK) return rc;
    for (int i = 0; i < n_msgs; i++) {
        if (!msgs[i].role) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: message %d: role is NULL", name, i);
        if (!msgs[i].content) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: message %d: content is NULL", name, i);
    }
    edgellm_jinja *t = NULL;
    size_t len = strlen(template_text);
    if ((rc = edgellm_jinja_parse(template_text, len, name, lim, &t, err)) != EDGELLM_OK) return rc;
    edgellm_jinja_vars v = {
        .msgs = msgs, .n_msgs = n_msgs, .add_generation_prompt = pp.add_generation_prompt != 0,
        .bos_token = pp.bos_token, .eos_token = pp.eos_token, .date = pp.date, .extra_json = extra_json,
    };
    edgellm_chat_text *ct = edgellm_calloc(1, sizeof *ct);
    if (!ct) {
        edgellm_jinja_free(t);
        return edgellm_fail_nomem(err, name);
    }
    rc = edgellm_jinja_render(t, &v, lim, &ct->o, err);
    edgellm_jinja_free(t);
    if (rc != EDGELLM_OK) {
        edgellm_free(ct);
        return rc;
    }
    *out = ct;
    return EDGELLM_OK;
}

edgellm_status edgellm_chat_template_render(const char *template_text, const char *template_name,
                                            const edgellm_chat_message *msgs, int n_msgs,
                                            const edgellm_chat_params *p, edgellm_chat_text **out,
                                            edgellm_error *err)
{
    return edgellm_chat_render_ex(template_text, template_name, msgs, n_msgs, p, NULL, NULL, out, err);
}

const char *edgellm_chat_text_str(const edgellm_chat_text *t, size_t *len)
{
    if (len) *len = t ? t->o.len : 0;
    return t ? t->o.text : NULL;
}

int edgellm_chat_text_n_spans(const edgellm_chat_text *t)
{
    return t ? t->o.n_spans : 0;
}

void edgellm_chat_text_span(const edgellm_chat_text *t, int i, size_t *begin, size_t *end)
{
    bool ok = t && i >= 0 && i < t->o.n_spans;
    if (begin) *begin = ok ? t->o.spans[2 * i] : 0;
    if (end) *end = ok ? t->o.spans[2 * i + 1] : 0;
}

void edgellm_chat_text_free(edgellm_chat_text *t)
{
    if (!t) return;
    edgellm_jinja_output_free(&t->o);
    edgellm_free(t);
}

/* ------------------------------------------------------------- the model ---- */
int edgellm_model_chat_template(const edgellm_model *m, char *buf, int buf_size)
{
    edgellm_str s;
    if (!m || !m->gguf || !edgellm_gguf_get_str(m->gguf, "tokenizer.chat_template", &s)) return -1;
    if (s.len > INT32_MAX - 1) return -1;
    if (buf && buf_size > 0) {
        size_t n = s.len < (uint64_t)buf_size - 1 ? (size_t)s.len : (size_t)buf_size - 1;
        memcpy(buf, s.ptr, n);
        buf[n] = 0;
    }
    return (int)s.len;
}
