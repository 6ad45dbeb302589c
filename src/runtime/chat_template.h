/*
 * chat_template.h — internal side of the chat template API (chat_template.c): the render
 * entry with the engine's extra knobs, for tests, fuzzing and tools.
 */
#ifndef EDGELLM_CHAT_TEMPLATE_H
#define EDGELLM_CHAT_TEMPLATE_H

#include "edgellm.h"
#include "jinja.h"

/* edgellm_chat_template_render with two more inputs: extra_json (NULL, or a JSON object of
 * more template variables: tools, enable_thinking, messages replacing msgs...; its strings
 * count as message text) and lim (NULL: the defaults for the input's size). */
edgellm_status edgellm_chat_render_ex(const char *template_text, const char *template_name,
                                      const edgellm_chat_message *msgs, int n_msgs, const edgellm_chat_params *p,
                                      const char *extra_json, const edgellm_jinja_limits *lim,
                                      edgellm_chat_text **out, edgellm_error *err);

/* "chatml, llama2, ...": the names edgellm_chat_template_builtin knows, for messages. */
const char *edgellm_chat_template_builtin_names(void);

#endif
