/*
 * test_chat_template.c — chat templates (src/runtime/chat_template.c, jinja_*.c) against
 * Jinja2 itself: every golden file was rendered by Debian's python3-jinja2 configured as
 * Hugging Face transformers configures it (scripts/gen_chat_goldens.py), and edgellm's
 * rendering must equal it byte for byte.
 *
 *  - ../shared/data/chat-templates/<model>/: official templates x conversations
 *    (convN.json -> convN.golden, or convN.error when the template refuses);
 *  - tests/chat-templates/<model>/: more templates (SmolLM2-Instruct's ChatML, the
 *    built-ins) with their goldens; tests/chat-templates/extra/<model>/: more conversations
 *    for the shared templates (4+ turns, empty content, Unicode, quotes and newlines, tool
 *    calls); tests/chat-templates/snippets.txt: small templates exercising one feature each;
 *  - message spans (no special token from user text), hostile templates (limits, syntax
 *    errors, sandboxed attributes), bad arguments, the model's template from GGUF metadata.
 *
 * A conversation file is a JSON array of {role, content} (rendered through the public API)
 * or an object of template variables ({"messages": [...], "tools": [...], ...}, rendered
 * with those as extra variables). Goldens use strftime_now's date 2024-07-26.
 *
 * `test_chat_template --render TEMPLATE VARS.json [BOS [EOS]]` prints one rendering (or the
 * error) and exits: scripts/gen_chat_goldens.py --check uses it to compare any template
 * with Jinja2.
 */
#include "test_util.h"
#include "runtime/chat_template.h"
#include "format/gguf.h"
#include <dirent.h>
#include <time.h>

#define GOLDEN_DATE "2024-07-26"

/* tests/chat-templates of the source tree, from this file's path. */
static const char *repo_fixtures(void)
{
    static char dir[4096];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash) snprintf(slash, sizeof dir - (size_t)(slash - dir), "/chat-templates");
        else snprintf(dir, sizeof dir, "chat-templates");
    }
    return dir;
}

/* ------------------------------------------------- a minimal JSON reader ---- */
/* Only what conversation files hold: an array of objects whose "role" and "content" are
 * strings (other keys skipped). Returns the count, -1 on a malformed file. */
static const char *jskip(const char *p) { while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++; return p; }

static char *jstring(const char **pp)
{
    const char *p = *pp;
    if (*p != '"') return NULL;
    p++;
    size_t cap = 64, n = 0;
    char *out = malloc(cap);
    while (*p && *p != '"') {
        if (n + 8 >= cap) out = realloc(out, cap *= 2);
        if (*p != '\\') { out[n++] = *p++; continue; }
        p++;
        switch (*p) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'u': {
            unsigned cp = (unsigned)strtoul((char[]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                unsigned lo = (unsigned)strtoul((char[]){p[3], p[4], p[5], p[6], 0}, NULL, 16);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (cp < 0x80) out[n++] = (char)cp;
            else if (cp < 0x800) { out[n++] = (char)(0xC0 | (cp >> 6)); out[n++] = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) {
                out[n++] = (char)(0xE0 | (cp >> 12)); out[n++] = (char)(0x80 | ((cp >> 6) & 63)); out[n++] = (char)(0x80 | (cp & 63));
            } else {
                out[n++] = (char)(0xF0 | (cp >> 18)); out[n++] = (char)(0x80 | ((cp >> 12) & 63));
                out[n++] = (char)(0x80 | ((cp >> 6) & 63)); out[n++] = (char)(0x80 | (cp & 63));
            }
            break;
        }
        default: out[n++] = *p;
        }
        p++;
    }
    if (*p != '"') { free(out); return NULL; }
    out[n] = 0;
    *pp = p + 1;
    return out;
}

static int read_messages(const char *json, edgellm_chat_message *msgs, int max)
{
    const char *p = jskip(json);
    if (*p != '[') return -1;
    p = jskip(p + 1);
    int n = 0;
    while (*p == '{' && n < max) {
        p = jskip(p + 1);
        msgs[n].role = msgs[n].content = NULL;
        while (*p == '"') {
            char *k = jstring(&p);
            p = jskip(p);
            if (!k || *p != ':') { free(k); return -1; }
            p = jskip(p + 1);
            char *v = jstring(&p);
            if (!v) { free(k); return -1; }
            if (!strcmp(k, "role")) msgs[n].role = v;
            else if (!strcmp(k, "content")) msgs[n].content = v;
            else free(v);
            free(k);
            p = jskip(p);
            if (*p == ',') p = jskip(p + 1);
        }
        if (*p != '}') return -1;
        n++;
        p = jskip(p + 1);
        if (*p == ',') p = jskip(p + 1);
    }
    return *p == ']' ? n : -1;
}

static void free_messages(edgellm_chat_message *msgs, int n)
{
    for (int i = 0; i < n; i++) {
        free((char *)msgs[i].role);
        free((char *)msgs[i].content);
    }
}

/* ----------------------------------------------------------- rendering ---- */
static char *read_text(const char *dir, const char *name)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_file(path, NULL);
}

/* Render a conversation file's JSON (array: messages; object: variables). */
static edgellm_status render_json(const char *tmpl, const char *name, const char *json, const char *bos,
                                  const char *eos, edgellm_chat_text **out, edgellm_error *err)
{
    edgellm_chat_params p = edgellm_chat_default_params();
    p.bos_token = bos;
    p.eos_token = eos;
    p.date = GOLDEN_DATE;
    const char *j = jskip(json);
    if (*j == '{') return edgellm_chat_render_ex(tmpl, name, NULL, 0, &p, json, NULL, out, err);
    edgellm_chat_message msgs[64];
    int n = read_messages(json, msgs, 64);
    if (n < 0) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: bad conversation JSON", name);
    edgellm_status rc = edgellm_chat_template_render(tmpl, name, msgs, n, &p, out, err);
    free_messages(msgs, n);
    return rc;
}

/* Every convN.json in conv_dir against its .golden/.error, with the template of tmpl_dir. */
static int check_folder(const char *tmpl_dir, const char *conv_dir, const char *label)
{
    char *tmpl = read_text(tmpl_dir, "template.jinja");
    char *bos = read_text(tmpl_dir, "bos"), *eos = read_text(tmpl_dir, "eos");
    CHECK(tmpl != NULL);
    if (!tmpl) { free(bos); free(eos); return 0; }
    int checked = 0;
    for (int k = 1; k < 100; k++) {
        char name[64];
        snprintf(name, sizeof name, "conv%d.json", k);
        char *json = read_text(conv_dir, name);
        if (!json) continue;
        snprintf(name, sizeof name, "conv%d.golden", k);
        size_t glen = 0;
        char gpath[8400];
        snprintf(gpath, sizeof gpath, "%s/%s", conv_dir, name);
        char *golden = read_file(gpath, &glen);
        snprintf(name, sizeof name, "conv%d.error", k);
        char *error = read_text(conv_dir, name);
        edgellm_chat_text *t = NULL;
        edgellm_error err = {0};
        edgellm_status rc = render_json(tmpl, label, json, bos ? bos : "", eos ? eos : "", &t, &err);
        checked++;
        if (golden) {
            size_t len = 0;
            const char *s = edgellm_chat_text_str(t, &len);
            bool same = rc == EDGELLM_OK && len == glen && !memcmp(s, golden, glen);
            CHECK(same);
            if (!same) {
                fprintf(stderr, "   %s conv%d: %s\n", label, k, rc ? err.msg : "output differs");
                if (!rc) fprintf(stderr, "   --- got ---\n%.*s\n   --- want ---\n%s\n", (int)len, s, golden);
            }
        } else if (error) {
            /* line 1: the conversation, line 2: the message, line 3 (optional): Python's
             * exception class. The template's raise_exception (TemplateError) is
             * EDGELLM_ERR_MISUSE with its message; any other error EDGELLM_ERR_FORMAT. */
            const char *msg = strchr(error, '\n'), *cls = msg ? strchr(msg + 1, '\n') : NULL;
            char want[512] = "";
            if (msg) snprintf(want, sizeof want, "%.*s", (int)strcspn(msg + 1, "\n"), msg + 1);
            bool raised = !cls || !cls[1] || !strncmp(cls + 1, "TemplateError\n", 14);
            edgellm_status want_rc = raised ? EDGELLM_ERR_MISUSE : EDGELLM_ERR_FORMAT;
            CHECK_EQ(rc, want_rc);
            if (raised) CHECK(want[0] && strstr(err.msg, want) != NULL);
            if (rc != want_rc || (raised && !strstr(err.msg, want)))
                fprintf(stderr, "   %s conv%d: got %s '%s', want %s '%s'\n", label, k, edgellm_status_name(rc), err.msg,
                        edgellm_status_name(want_rc), want);
        } else {
            CHECK(!"a conversation without .golden or .error");
        }
        edgellm_chat_text_free(t);
        free(json);
        free(golden);
        free(error);
    }
    free(tmpl);
    free(bos);
    free(eos);
    return checked;
}

static int subdirs(const char *dir, char names[][128], int max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.') continue;
        char p[4600];
        struct stat st;
        snprintf(p, sizeof p, "%.4000s/%.255s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(names[n++], 128, "%.127s", e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)   /* sorted, for a stable report */
        for (int j = i; j > 0 && strcmp(names[j], names[j - 1]) < 0; j--) {
            char t[128];
            memcpy(t, names[j], 128);
            memcpy(names[j], names[j - 1], 128);
            memcpy(names[j - 1], t, 128);
        }
    return n;
}

static void test_chat_goldens_shared(void)
{
    NEED_SHARED(root, "data/chat-templates");
    char names[64][128];
    int n = subdirs(root, names, 64), total = 0;
    CHECK(n >= 8);
    for (int i = 0; i < n; i++) {
        char dir[8400];
        snprintf(dir, sizeof dir, "%.4000s/%.200s", root, names[i]);
        int c = check_folder(dir, dir, names[i]);
        CHECK(c > 0);
        total += c;
    }
    fprintf(stderr, "   %d templates, %d conversations\n", n, total);
}

static void test_chat_goldens_repo(void)
{
    char names[64][128];
    int n = subdirs(repo_fixtures(), names, 64), total = 0;
    CHECK(n >= 2);
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "extra")) continue;
        char dir[8400];
        snprintf(dir, sizeof dir, "%.4000s/%.200s", repo_fixtures(), names[i]);
        int c = check_folder(dir, dir, names[i]);
        CHECK(c > 0);
        total += c;
    }
    fprintf(stderr, "   %d templates, %d conversations\n", n - 1, total);
}

/* tests/chat-templates/extra/<model>: more conversations for the shared templates. */
static void test_chat_goldens_extra(void)
{
    NEED_SHARED(root, "data/chat-templates");
    char extra[8400];
    snprintf(extra, sizeof extra, "%.4000s/extra", repo_fixtures());
    char names[64][128];
    int n = subdirs(extra, names, 64), total = 0;
    CHECK(n >= 8);
    for (int i = 0; i < n; i++) {
        char tdir[8400], cdir[8400];
        snprintf(tdir, sizeof tdir, "%.4000s/%.200s", root, names[i]);
        snprintf(cdir, sizeof cdir, "%.4000s/%.200s", extra, names[i]);
        total += check_folder(tdir, cdir, names[i]);
    }
    fprintf(stderr, "   %d templates, %d conversations\n", n, total);
}

/* tests/chat-templates/snippets.txt: small templates, one Jinja feature each. */
#define SNIPPET_VARS                                                                                   \
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "            \
    "\"content\": \"Hi there\"}, {\"role\": \"assistant\", \"content\": \"Hello!\"}, {\"role\": \"user\", "    \
    "\"content\": \"Tell me more\"}], \"d\": {\"b\": 1, \"a\": 2}}"

static void test_chat_snippets(void)
{
    char path[8400];
    snprintf(path, sizeof path, "%.4000s/snippets.txt", repo_fixtures());
    char *text = read_file(path, NULL);
    CHECK(text != NULL);
    if (!text) return;
    int n = 0, failed = 0;
    for (char *rec = strstr(text, "### "); rec; n++) {
        char *name = rec + 4, *nl = strchr(name, '\n');
        char *want = strstr(nl, "\n--- want\n"), *error = strstr(nl, "\n--- error\n");
        bool is_error = error && (!want || error < want);
        char *sep = is_error ? error : want;
        char *end = sep ? strstr(sep + 1, "\n--- end\n") : NULL;
        CHECK(sep && end);
        if (!sep || !end) break;
        *nl = 0;
        *sep = 0;
        *end = 0;
        const char *tmpl = nl + 1, *expect = sep + (is_error ? 11 : 10);
        edgellm_chat_params p = edgellm_chat_default_params();
        p.bos_token = "<s>";
        p.eos_token = "</s>";
        p.date = GOLDEN_DATE;
        edgellm_chat_text *t = NULL;
        edgellm_error err = {0};
        edgellm_status rc = edgellm_chat_render_ex(tmpl, name, NULL, 0, &p, SNIPPET_VARS, NULL, &t, &err);
        size_t len = 0;
        const char *got = edgellm_chat_text_str(t, &len);
        bool ok;
        if (!is_error) ok = rc == EDGELLM_OK && len == strlen(expect) && !memcmp(got, expect, len);
        else {   /* "Class: message": raise_exception -> MISUSE with the message; the sandbox's
                  * SecurityError -> UNSUPPORTED; any other error -> FORMAT */
            const char *colon = strstr(expect, ": ");
            edgellm_status want_rc = !strncmp(expect, "TemplateError:", 14) ? EDGELLM_ERR_MISUSE
                                     : !strncmp(expect, "SecurityError:", 14) ? EDGELLM_ERR_UNSUPPORTED
                                                                                : EDGELLM_ERR_FORMAT;
            ok = rc == want_rc && (want_rc != EDGELLM_ERR_MISUSE || (colon && strstr(err.msg, colon + 2)));
        }
        CHECK(ok);
        if (!ok) {
            failed++;
            fprintf(stderr, "   snippet %s: %s\n   --- got ---\n%.*s\n   --- want ---\n%s\n", name,
                    rc ? err.msg : "", (int)len, got ? got : "", expect);
        }
        edgellm_chat_text_free(t);
        rec = strstr(end + 1, "### ");
    }
    fprintf(stderr, "   %d snippets, %d differ\n", n, failed);
    CHECK(n >= 100);
    free(text);
}

/* ---------------------------------------------------------------- main ---- */
static int render_mode(int argc, char **argv)
{
    char *tmpl = read_file(argv[2], NULL), *json = read_file(argv[3], NULL);
    if (!tmpl || !json) { fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]); return 2; }
    edgellm_chat_text *t = NULL;
    edgellm_error err = {0};
    edgellm_status rc = render_json(tmpl, argv[2], json, argc > 4 ? argv[4] : "", argc > 5 ? argv[5] : "", &t, &err);
    if (rc) {
        printf("ERROR %s %s", edgellm_status_name(rc), err.msg);
        free(tmpl);
        free(json);
        return 1;
    }
    size_t len;
    const char *s = edgellm_chat_text_str(t, &len);
    fwrite(s, 1, len, stdout);
    edgellm_chat_text_free(t);
    free(tmpl);
    free(json);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "--render")) return render_mode(argc, argv);
    RUN(test_chat_goldens_shared);
    RUN(test_chat_goldens_repo);
    RUN(test_chat_goldens_extra);
    RUN(test_chat_snippets);
    return test_summary();
}
