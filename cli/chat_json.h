/* chat_json.h — a conversation in memory and as the OpenAI `messages` JSON array (chat_json.c). */
#ifndef EDGELLM_CLI_CHAT_JSON_H
#define EDGELLM_CLI_CHAT_JSON_H
#include "edgellm.h"
#include <stdbool.h>
#include <stdio.h>

/* Messages with owned role/content strings (malloc'd). */
typedef struct {
    edgellm_chat_message *msgs;
    int n, cap;
} cli_chat;

void cli_chat_free(cli_chat *c);                                         /* empties it */
bool cli_chat_push(cli_chat *c, const char *role, const char *content);  /* false: out of memory */
void cli_chat_remove(cli_chat *c, int from, int n);                      /* messages [from, from+n) */
/* Parse json[len] (an array of messages, or an object with "messages") named `name` in
 * messages. false with err->msg "NAME: message N: what" on any problem. */
bool cli_chat_parse(const char *json, size_t len, const char *name, cli_chat *out, edgellm_error *err);
bool cli_chat_read(const char *path, cli_chat *out, edgellm_error *err);
/* The conversation as a JSON messages array (readable by cli_chat_read). */
void cli_chat_write(FILE *f, const cli_chat *c);
#endif
