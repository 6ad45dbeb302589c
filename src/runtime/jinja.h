/*
 * jinja.h — edgellm's Jinja subset (src/runtime/jinja_*.c), the engine behind the chat
 * templates (chat_template.c). Internal: the public API is edgellm_chat_template_render in
 * edgellm.h.
 *
 * A template is parsed once (edgellm_jinja_parse) into an immutable tree, then rendered
 * any number of times, from any threads (edgellm_jinja_render allocates its own state).
 * Semantics: Jinja2 3.1 as Hugging Face transformers configures it for chat templates
 * (transformers/utils/chat_template_utils.py, _compile_jinja_template):
 * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
 * loopcontrols extension, a json.dumps-based tojson filter, raise_exception and
 * strftime_now globals. Reference: https://jinja.palletsprojects.com/en/3.1.x/templates/
 * and the Jinja2 3.1 sources (src/jinja2/lexer.py, parser.py, filters.py, tests.py,
 * runtime.py, sandbox.py).
 */
#ifndef EDGELLM_JINJA_H
#define EDGELLM_JINJA_H

#include "edgellm.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct edgellm_jinja edgellm_jinja;

/* Bounds against hostile templates; each exceeded bound is its own error
 * (EDGELLM_ERR_UNSUPPORTED, "NAME:LINE:COL: ... limit ..."). */
typedef struct {
    size_t   max_output_bytes;   /* rendered text                                          */
    size_t   max_memory_bytes;   /* everything a parse or a render allocates               */
    int      max_nesting;        /* parse: nested blocks, brackets and unary operators     */
    int      max_depth;          /* render: nested statements, expressions, macro calls    */
    uint64_t max_steps;          /* render: statements executed + expressions evaluated     */
    uint64_t max_iterations;     /* render: loop iterations, all loops together             */
} edgellm_jinja_limits;

/* Defaults scaled by the input (template + messages) size in bytes: output 4 MiB + 4 x
 * input, memory 32 MiB + 32 x input, nesting 64, depth 400, steps 20 M, iterations 1 M. */
edgellm_jinja_limits edgellm_jinja_default_limits(size_t input_bytes);

/* Variables of a chat template render (the names transformers' apply_chat_template passes). */
typedef struct {
    const edgellm_chat_message *msgs;   /* `messages`: [{role, content}] in this order      */
    int n_msgs;
    bool add_generation_prompt;
    const char *bos_token;              /* NULL: ""                                          */
    const char *eos_token;              /* NULL: ""                                          */
    const char *date;                   /* strftime_now's clock: "YYYY-MM-DD[ HH:MM[:SS]]",
                                           NULL: the local time now                          */
    const char *extra_json;             /* NULL, or a JSON object of more variables (tools,
                                           enable_thinking, or messages replacing msgs...);
                                           its strings count as message text (spans)         */
} edgellm_jinja_vars;

/* A rendering: text[len] (NUL-terminated, may hold NUL bytes from template escapes) and the
 * byte ranges [spans[2i], spans[2i+1]) that came from message strings (role or content),
 * sorted, disjoint, not adjacent. Free with edgellm_jinja_output_free. */
typedef struct {
    char   *text;
    size_t  len;
    size_t *spans;
    int     n_spans;
} edgellm_jinja_output;

/* Parse src[len] (UTF-8). name (NULL: "template") is used in messages and kept (copied).
 * Statuses: EDGELLM_ERR_FORMAT (syntax, "NAME:LINE:COL: what"), EDGELLM_ERR_UNSUPPORTED
 * (a valid Jinja construct edgellm does not run: an unknown filter or test, include,
 * extends, call blocks...; or a nesting limit), EDGELLM_ERR_NOMEM. lim NULL: defaults for
 * the template's size. */
edgellm_status edgellm_jinja_parse(const char *src, size_t len, const char *name,
                                   const edgellm_jinja_limits *lim, edgellm_jinja **out, edgellm_error *err);
void edgellm_jinja_free(edgellm_jinja *t);   /* NULL-safe */

/* Render t with vars into *out (zeroed on failure). Statuses: EDGELLM_ERR_MISUSE (the
 * template called raise_exception: the message is the template's, after "NAME:LINE:COL: ";
 * or a NULL/invalid UTF-8 message string, naming its index), EDGELLM_ERR_FORMAT (an error
 * Jinja raises while rendering: undefined attribute, type error...), EDGELLM_ERR_UNSUPPORTED
 * (a limit, or a value edgellm does not model), EDGELLM_ERR_NOMEM. lim NULL: defaults for
 * the input size. Thread-safe for distinct outputs: t is only read. */
edgellm_status edgellm_jinja_render(const edgellm_jinja *t, const edgellm_jinja_vars *vars,
                                    const edgellm_jinja_limits *lim, edgellm_jinja_output *out,
                                    edgellm_error *err);
void edgellm_jinja_output_free(edgellm_jinja_output *o);

#endif
