/* cmd_template.c — `edgellm template`: render a chat template over a conversation, to
 * check and debug templates. stdout: exactly the rendered text (what the model would read;
 * no newline is added), or with --tokens the token ids the chat would feed the model, one
 * per line with their text. The template: --chat-template NAME (a built-in) or FILE, else
 * the model's tokenizer.chat_template (-m). */
#include "chat_json.h"
#include "commands.h"
#include <stdlib.h>
#include <string.h>

static const char *const BUILTIN_NAMES[] = {"chatml", "llama2", "llama3", "mistral", "phi3", "gemma", "zephyr"};

const char *cli_chat_template_names(void) { return "chatml, llama2, llama3, mistral, phi3, gemma, zephyr"; }

int cli_chat_template(const char *cmd, const char *arg, char **owned, const char **text)
{
    *owned = NULL;
    *text = NULL;
    if (!arg) return 0;
    for (size_t i = 0; i < sizeof BUILTIN_NAMES / sizeof BUILTIN_NAMES[0]; i++)
        if (!strcmp(arg, BUILTIN_NAMES[i])) {
            *text = edgellm_chat_template_builtin(arg);
            return 0;
        }
    edgellm_error err = {0};
    size_t len = 0;
    *owned = cli_read_text(arg, &len, &err);
    if (!*owned) {
        fprintf(stderr, "edgellm %s: --chat-template %s: not a built-in (%s) and not a readable file (%s)\n", cmd, arg,
                cli_chat_template_names(), err.msg);
        return 1;
    }
    if (strlen(*owned) != len) {
        fprintf(stderr, "edgellm %s: %s: the template contains a NUL byte\n", cmd, arg);
        free(*owned);
        *owned = NULL;
        return 1;
    }
    *text = *owned;
    return 0;
}

int cmd_template(int argc, char **argv)
{
    const char *model_path = NULL, *tmpl_arg = NULL, *conv_path = NULL, *bos = NULL, *eos = NULL, *date = NULL;
    int add_gen = 0, tokens = 0;
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model_path), .help = "GGUF model: its tokenizer.chat_template, BOS/EOS texts and tokenizer"},
        {CLI_STRING(NULL, "--chat-template", "NAME|FILE", &tmpl_arg),
         .help = "a built-in template (chatml, llama2, llama3, mistral, phi3, gemma, zephyr) or a Jinja file"},
        {CLI_PATH(NULL, "--messages", "CONV.json", &conv_path), .required = 1,
         .help = "the conversation: an OpenAI messages array [{\"role\": ..., \"content\": ...}]"},
        {CLI_FLAG(NULL, "--add-generation-prompt", &add_gen, 1), .help = "end with the opening of the assistant's turn"},
        {CLI_STRING(NULL, "--bos", "TEXT", &bos), .help = "bos_token's text", .def = "the model's, or empty"},
        {CLI_STRING(NULL, "--eos", "TEXT", &eos), .help = "eos_token's text", .def = "the model's, or empty"},
        {CLI_STRING(NULL, "--date", "YYYY-MM-DD", &date), .help = "the date strftime_now gives templates", .def = "today"},
        {CLI_FLAG(NULL, "--tokens", &tokens, 1),
         .help = "print the token ids instead (needs -m): the template's special tokens parsed, the messages' text "
                 "never"},
    };
    const cli_command cmd = {
        .name = "template",
        .synopsis = "edgellm template (-m MODEL.gguf | --chat-template NAME|FILE) --messages CONV.json [options]",
        .about = "Render a chat template over a conversation exactly as Hugging Face's apply_chat_template does.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (!model_path && !tmpl_arg) return cli_args_missing(&cmd, argc, "give -m MODEL.gguf or --chat-template NAME|FILE");
    if (tokens && !model_path) return cli_args_error(&cmd, "--tokens needs -m MODEL.gguf (its tokenizer)");

    int rc = 1;
    char *owned = NULL, *model_tmpl = NULL;
    const char *tmpl = NULL;
    cli_chat conv = {0};
    edgellm_model *model = NULL;
    edgellm_chat_text *txt = NULL;
    int32_t *ids = NULL;
    edgellm_error err = {0};
    if (cli_chat_template("template", tmpl_arg, &owned, &tmpl)) goto done;
    if (!cli_chat_read(conv_path, &conv, &err)) { cli_print_error("template", &err); goto done; }
    if (model_path && edgellm_model_load(model_path, NULL, &model, &err)) { cli_print_error("template", &err); goto done; }
    edgellm_chat_params p = edgellm_chat_default_params();
    p.add_generation_prompt = add_gen;
    p.date = date;
    const edgellm_tokenizer *tok = model ? edgellm_model_tokenizer(model) : NULL;
    p.bos_token = bos ? bos : tok && edgellm_token_bos(tok) >= 0 ? edgellm_token_text(tok, edgellm_token_bos(tok)) : "";
    p.eos_token = eos ? eos : tok && edgellm_token_eos(tok) >= 0 ? edgellm_token_text(tok, edgellm_token_eos(tok)) : "";
    if (!tmpl) {                                      /* the model's own */
        const int len = edgellm_model_chat_template(model, NULL, 0);
        if (len < 0) {
            fprintf(stderr, "edgellm template: %s has no chat template (tokenizer.chat_template): give "
                            "--chat-template NAME|FILE (built-ins: %s)\n", model_path, cli_chat_template_names());
            goto done;
        }
        if (!(model_tmpl = malloc((size_t)len + 1))) goto done;
        edgellm_model_chat_template(model, model_tmpl, len + 1);
        tmpl = model_tmpl;
    }
    if (tokens) {
        const int cap = 1 << 20;
        int n = 0, dropped = 0;
        if (!(ids = malloc((size_t)cap * sizeof *ids))) goto done;
        if (edgellm_chat_tokenize(model, tmpl, conv.msgs, conv.n, &p, ids, cap, &n, &dropped, &err)) {
            cli_print_error("template", &err);
            goto done;
        }
        char piece[256];
        for (int i = 0; i < n; i++) {
            const int len = edgellm_token_to_piece(tok, ids[i], piece, sizeof piece);
            printf("%d\t", (int)ids[i]);
            cli_json_str(stdout, len > 0 && len < (int)sizeof piece ? (piece[len] = 0, piece) : edgellm_token_text(tok, ids[i]));
            fputc('\n', stdout);
        }
    } else {
        const char *name = tmpl_arg ? tmpl_arg : model_path;
        if (edgellm_chat_template_render(tmpl, name, conv.msgs, conv.n, &p, &txt, &err)) {
            cli_print_error("template", &err);
            goto done;
        }
        size_t len = 0;
        const char *s = edgellm_chat_text_str(txt, &len);
        fwrite(s, 1, len, stdout);
    }
    if (fflush(stdout) == 0) rc = 0;
done:
    edgellm_chat_text_free(txt);
    free(ids);
    free(model_tmpl);
    free(owned);
    cli_chat_free(&conv);
    edgellm_model_free(model);
    return rc;
}
