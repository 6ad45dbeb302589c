/*
 * fuzz_template.c — libFuzzer target: chat templates (src/runtime/jinja_*.c through
 * edgellm_chat_render_ex) on arbitrary template text, with a few fixed conversations and
 * optional tool-calling variables. Input layout and oracles: fuzz_template_input.h (shared
 * with tests/test_chat_template.c, which replays tests/corpus/template/). Beyond those,
 * every finding is a sanitizer report, a crash, a hang or a leak.
 */
#include "fuzz_util.h"
#include "fuzz_template_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *why = fuzz_template_run(data, size);
    FUZZ_ASSERT(why == NULL, "%s", why);
    return 0;
}
