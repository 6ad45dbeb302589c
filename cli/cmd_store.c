/* cmd_store.c — 'edgellm store': model versions on the device (add, activate, rollback,
 * list, verify, gc, keys, publish) and 'edgellm delta' (a per-tensor patch between two GGUF
 * files). The work is edgellm_store_* and edgellm_delta_* (src/tools/store*.c);
 * docs/store.md describes the folder, the manifests and the threat model. */
#include "commands.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *dir, *source, *manifest, *patch, *name, *key, *out, *previous, *pub, *secret;
    const char *gate_ref, *gate_logits, *gate_text;
    int64_t version;
    int ver_int, allow_unsigned, activate, keep, no_smoke, retries, gate_ctx, gate_chunks, remove;
    double expires_days, gate_max_kld, gate_min_top1;
    uint64_t chunk_kib;
    cli_list pos;
    const char *pos_v[4];
} store_flags;

static cli_bar bar = {-1};

static edgellm_status open_store(const store_flags *f, edgellm_store **s, edgellm_error *err)
{
    edgellm_store_params p = edgellm_store_default_params();
    p.dir = f->dir;
    p.smoke_test = !f->no_smoke;
    if (isatty(fileno(stderr))) {
        p.progress = cli_draw_bar;
        p.progress_user = &bar;
    }
    return edgellm_store_open(&p, s, err);
}

static int fail(const char *cmd, edgellm_status st, const edgellm_error *err)
{
    if (bar.last_pct >= 0 && bar.last_pct < 100) fprintf(stderr, "\n");
    cli_print_error(cmd, err);
    return st == EDGELLM_ERR_MISUSE ? 2 : 1;
}

static void print_entry(void *user, const edgellm_store_entry *e)
{
    (void)user;
    char t[32] = "-";
    if (e->created) {
        time_t c = (time_t)e->created;
        struct tm tm;
        gmtime_r(&c, &tm);
        strftime(t, sizeof t, "%Y-%m-%d %H:%M", &tm);
    }
    printf("%-20s %7lld  %-8s %-8s %10.1f MiB  %-8s %s  %.12s%s%s\n", e->name, (long long)e->version,
           e->active ? "active" : e->previous ? "previous" : "-",
           e->verified > 0 ? "verified" : e->verified < 0 ? "FAILED" : "pending", (double)e->file_size / 1048576.0,
           e->signed_by_trusted ? "signed" : "unsigned", t, e->sha256, e->note[0] ? "  " : "", e->note);
    if (e->gate[0]) printf("%-20s %7s  %s\n", "", "", e->gate);
}

static void print_line(void *user, const char *line)
{
    (void)user;
    printf("%s\n", line);
}

static int split_ref(const char *cmd, const char *ref, char *name, size_t n, int64_t *v)
{
    const char *at = strchr(ref, '@');
    char *end = NULL;
    *v = at ? strtoll(at + 1, &end, 10) : 0;
    if (!at || *v <= 0 || *end || (size_t)(at - ref) >= n) {
        fprintf(stderr, "edgellm %s: expected NAME@VERSION, got '%s'\n", cmd, ref);
        return cli_see_help(cmd);
    }
    snprintf(name, n, "%.*s", (int)(at - ref), ref);
    return 0;
}

enum { S_ADD, S_ACTIVATE, S_ROLLBACK, S_LIST, S_VERIFY, S_GC, S_KEYGEN, S_TRUST, S_PUBLISH, S_PATH, N_SUBS };
static const struct {
    const char *name, *args, *about;
} subs[N_SUBS] = {
    [S_ADD] = {"add", "[FILE|URL] [--manifest FILE|URL] [--patch PATCH] [options]",
               "Add a version: check its manifest (trusted signature, not expired, newer than every installed\n"
               "version), bring the file in (copy, or download with resume; or apply a patch to a version the\n"
               "store holds), verify it (SHA-256 of the file and of each tensor, GGUF validation, a smoke\n"
               "inference, the manifest's quality gate) and record the result. With --manifest URL alone, the\n"
               "file (or the patch, when the store holds its base) is fetched from beside the manifest."},
    [S_ACTIVATE] = {"activate", "NAME@VERSION", "Make a verified version the active one (one atomic rename); the "
                                               "active one becomes previous."},
    [S_ROLLBACK] = {"rollback", "NAME", "Swap the active and the previous version of NAME."},
    [S_LIST] = {"list", "", "List every version: state, verification, size, signature, created, SHA-256."},
    [S_VERIFY] = {"verify", "", "Re-hash every blob, check every manifest, status and pointer; changes nothing.\n"
                                "Exit status 1 when a problem is found (one line each)."},
    [S_GC] = {"gc", "[--keep N]", "Remove all but the N newest versions of each name (never the active or previous "
                                  "one),\nunreferenced blobs and leftover temporaries."},
    [S_KEYGEN] = {"keygen", "-o KEYBASE", "Write a new Ed25519 key pair: KEYBASE.key (secret, mode 0600) and "
                                          "KEYBASE.pub."},
    [S_TRUST] = {"trust", "[--remove] KEY.pub", "Trust a publisher's public key for this store's manifests (any number "
                                               "of keys);\n--remove stops trusting it (key rotation): manifests it "
                                               "signed are refused from then on."},
    [S_PUBLISH] = {"publish", "MODEL.gguf --key KEYBASE.key --name NAME --version V -o DIR [--previous OLD.gguf] "
                              "[--gate-ref REF.gguf|--gate-logits FILE --gate-text TEXT --gate-max-kld X "
                              "--gate-min-top1 PCT]",
                   "Write a folder any static HTTP server can serve: NAME@V.gguf, its signed manifest NAME@V.json,\n"
                   "NAME.json (the latest manifest) and, with --previous, the patch NAME@V.patch from it. With a\n"
                   "quality gate, NAME@V.logits and NAME@V.gate.txt: 'store add' activates the version only when\n"
                   "eval compare against them gives KLD <= X and top-1 >= PCT (the model must pass it here)."},
    [S_PATH] = {"path", "NAME[@VERSION]", "Print the file of the active version of NAME (or of NAME@VERSION), as "
                                          "'-m store:NAME' opens it.\nWhen the active version fails to open, the "
                                          "store rolls back and prints the previous one's."},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: edgellm store SUBCOMMAND [--store DIR] [options]\n\n"
               "Model versions on the device: signed manifests, verified files named by SHA-256, atomic\n"
               "activation and rollback, resumable downloads, per-tensor patches (docs/store.md).\n"
               "The store is --store DIR, else $EDGELLM_STORE, else $XDG_DATA_HOME/edgellm/store.\n"
               "Run a stored model with 'edgellm run -m store:NAME'.\n\nsubcommands:\n");
    for (int i = 0; i < N_SUBS; i++) fprintf(f, "  %-9s %s\n", subs[i].name, subs[i].args);
    fprintf(f, "\n'edgellm store SUBCOMMAND --help' shows its options.\n");
}

int cmd_store(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    int sub = -1;
    for (int i = 0; i < N_SUBS; i++)
        if (!strcmp(argv[1], subs[i].name)) sub = i;
    if (sub < 0) {
        fprintf(stderr, "edgellm store: unknown subcommand '%s'\n", argv[1]);
        return cli_see_help("store");
    }
    store_flags f = {.keep = 2, .expires_days = 365, .retries = 5, .chunk_kib = 4096, .gate_ctx = 128,
                     .gate_chunks = 4, .gate_max_kld = -1, .gate_min_top1 = -1};
    f.pos = (cli_list){.v = f.pos_v, .max = 1};
    char name[32], synopsis[200];
    snprintf(name, sizeof name, "store %s", subs[sub].name);
    snprintf(synopsis, sizeof synopsis, "edgellm store %s %s", subs[sub].name, subs[sub].args);
    cli_opt opts[24];
    int n = 0;
    opts[n++] = (cli_opt){CLI_PATH(NULL, "--store", "DIR", &f.dir), .help = "the store folder",
                          .def = "$EDGELLM_STORE, else $XDG_DATA_HOME/edgellm/store"};
    if (sub == S_ADD) {
        opts[n++] = (cli_opt){CLI_STRING(NULL, "--manifest", "FILE|URL", &f.manifest),
                              .help = "the version's manifest (signed by a trusted key unless --allow-unsigned)"};
        opts[n++] = (cli_opt){CLI_STRING(NULL, "--patch", "PATCH", &f.patch),
                              .help = "apply this patch (edgellm delta) to the version it was made from"};
        opts[n++] = (cli_opt){CLI_STRING(NULL, "--name", "NAME", &f.name), .help = "the model's name ([A-Za-z0-9._-])"};
        opts[n++] = (cli_opt){CLI_INT(NULL, "--version", "V", &f.ver_int, 1, INT_MAX), .help = "its version (an integer)"};
        opts[n++] = (cli_opt){CLI_FLAG(NULL, "--allow-unsigned", &f.allow_unsigned, 1),
                              .help = "accept a manifest without a trusted signature, or a file without a manifest"};
        opts[n++] = (cli_opt){CLI_FLAG(NULL, "--activate", &f.activate, 1), .help = "activate it once verified"};
        opts[n++] = (cli_opt){CLI_FLAG(NULL, "--no-smoke-test", &f.no_smoke, 1),
                              .help = "skip the smoke inference (load, 4 tokens, finite logits)"};
        opts[n++] = (cli_opt){CLI_U64(NULL, "--chunk-kib", "N", &f.chunk_kib), .show_default = 1,
                              .help = "downloads: a checkpoint every N KiB (a resume fetches at most this again)"};
        opts[n++] = (cli_opt){CLI_INT(NULL, "--retries", "N", &f.retries, 0, 100), .show_default = 1,
                              .help = "downloads: attempts after a failed transfer (backoff 0.25 s doubling, at most 4 s)"};
    } else if (sub == S_GC) {
        opts[n++] = (cli_opt){CLI_INT(NULL, "--keep", "N", &f.keep, 0, 1000), .show_default = 1,
                              .help = "versions to keep per name besides the active and previous"};
    } else if (sub == S_TRUST) {
        opts[n++] = (cli_opt){CLI_FLAG(NULL, "--remove", &f.remove, 1), .help = "stop trusting the key"};
    } else if (sub == S_KEYGEN) {
        opts[n++] = (cli_opt){CLI_PATH("-o", "--output", "KEYBASE", &f.out), .required = 1,
                              .help = "writes KEYBASE.key and KEYBASE.pub"};
    } else if (sub == S_PUBLISH) {
        opts[n++] = (cli_opt){CLI_PATH(NULL, "--key", "KEYBASE.key", &f.key), .required = 1, .help = "secret key"};
        opts[n++] = (cli_opt){CLI_STRING(NULL, "--name", "NAME", &f.name), .required = 1, .help = "the model's name"};
        opts[n++] = (cli_opt){CLI_INT(NULL, "--version", "V", &f.ver_int, 1, INT_MAX), .required = 1,
                              .help = "its version, above every earlier one"};
        opts[n++] = (cli_opt){CLI_PATH("-o", "--output", "DIR", &f.out), .required = 1, .help = "the folder to write"};
        opts[n++] = (cli_opt){CLI_PATH(NULL, "--previous", "OLD.gguf", &f.previous),
                              .help = "the previous version: a patch from it is written too"};
        opts[n++] = (cli_opt){CLI_DOUBLE(NULL, "--expires-days", "D", &f.expires_days, 0, 36500, CLI_OPEN_MIN),
                              .show_default = 1, .help = "the manifest expires this long after now"};
        opts[n++] = (cli_opt){CLI_PATH(NULL, "--gate-ref", "REF.gguf", &f.gate_ref),
                              .help = "quality gate: the reference whose logits over --gate-text ship with the "
                                      "version"};
        opts[n++] = (cli_opt){CLI_PATH(NULL, "--gate-logits", "FILE", &f.gate_logits),
                              .help = "quality gate: reference logits saved by 'eval save-logits' over --gate-text"};
        opts[n++] = (cli_opt){CLI_PATH(NULL, "--gate-text", "TEXT.txt", &f.gate_text),
                              .help = "quality gate: the text"};
        opts[n++] = (cli_opt){CLI_DOUBLE(NULL, "--gate-max-kld", "X", &f.gate_max_kld, 0, 1e6, 0),
                              .help = "quality gate: highest mean KL divergence from the reference (nats)"};
        opts[n++] = (cli_opt){CLI_DOUBLE(NULL, "--gate-min-top1", "PCT", &f.gate_min_top1, 0, 100, 0),
                              .help = "quality gate: lowest top-1 agreement with the reference (%)"};
        opts[n++] = (cli_opt){CLI_INT(NULL, "--gate-ctx-size", "N", &f.gate_ctx, 8, 1 << 20), .show_default = 1,
                              .help = "quality gate with --gate-ref: tokens per window"};
        opts[n++] = (cli_opt){CLI_INT(NULL, "--gate-chunks", "N", &f.gate_chunks, 1, 1 << 20), .show_default = 1,
                              .help = "quality gate with --gate-ref: windows"};
    }
    const cli_opt positional = {CLI_LIST(NULL, NULL, "ARG", &f.pos)};
    const cli_command cmd = {.name = name, .synopsis = synopsis, .about = subs[sub].about, .opts = opts, .n_opts = n,
                             .positional = (sub == S_ADD || sub == S_ACTIVATE || sub == S_ROLLBACK ||
                                            sub == S_TRUST || sub == S_PUBLISH || sub == S_PATH)
                                               ? &positional : NULL};
    const int parsed = cli_args_parse(&cmd, argc - 1, argv + 1);
    if (parsed != CLI_ARGS_GO) return parsed;
    const char *arg = f.pos.n ? f.pos.v[0] : NULL;
    f.version = f.ver_int;
    edgellm_error err = {0};
    edgellm_status st;
    if (sub == S_KEYGEN) {
        char sk[PATH_MAX], pk[PATH_MAX];
        snprintf(sk, sizeof sk, "%s.key", f.out);
        snprintf(pk, sizeof pk, "%s.pub", f.out);
        if ((st = edgellm_store_keygen(sk, pk, &err))) return fail(name, st, &err);
        printf("wrote %s (secret: keep it off the devices) and %s (give it to 'edgellm store trust')\n", sk, pk);
        return 0;
    }
    if (sub == S_PUBLISH) {
        if (!arg) return cli_args_missing(&cmd, argc - 1, "MODEL.gguf is required");
        edgellm_store_publish_params p = edgellm_store_publish_default_params();
        p.model = arg;
        p.secret_key = f.key;
        p.out_dir = f.out;
        p.name = f.name;
        p.version = f.version;
        p.previous = f.previous;
        p.expires_days = f.expires_days;
        p.gate_ref = f.gate_ref;
        p.gate_logits = f.gate_logits;
        p.gate_text = f.gate_text;
        p.gate_max_kld = f.gate_max_kld;
        p.gate_min_top1 = f.gate_min_top1;
        p.gate_n_ctx = f.gate_ctx;
        p.gate_chunks = f.gate_chunks;
        if ((f.gate_ref || f.gate_logits || f.gate_text) &&
            (!f.gate_text || !!f.gate_ref == !!f.gate_logits || f.gate_max_kld < 0 || f.gate_min_top1 < 0))
            return cli_args_missing(&cmd, argc - 1, "a quality gate needs --gate-ref or --gate-logits, --gate-text, "
                                    "--gate-max-kld and --gate-min-top1");
        if (isatty(fileno(stderr))) { p.progress = cli_draw_bar; p.progress_user = &bar; }
        if ((st = edgellm_store_publish(&p, &err))) return fail(name, st, &err);
        printf("published %s@%lld in %s (%s@%lld.gguf, %s@%lld.json, %s.json%s%s%s%s)\n", f.name,
               (long long)f.version, f.out, f.name, (long long)f.version, f.name, (long long)f.version, f.name,
               f.previous ? ", " : "", f.previous ? f.name : "", f.previous ? "@V.patch" : "",
               f.gate_text ? ", the gate's @V.logits and @V.gate.txt" : "");
        return 0;
    }
    if ((sub == S_ACTIVATE || sub == S_ROLLBACK || sub == S_TRUST || sub == S_PATH) && !arg)
        return cli_args_missing(&cmd, argc - 1, "an argument is required (see the synopsis)");
    if (sub == S_ADD && !arg && !f.manifest && !f.patch)
        return cli_args_missing(&cmd, argc - 1, "give FILE, URL or --manifest");
    edgellm_store *s = NULL;
    if ((st = open_store(&f, &s, &err))) return fail(name, st, &err);
    int rc = 0;
    const double t0 = cli_time_ms();
    switch (sub) {
    case S_ADD: {
        edgellm_store_add_params p = edgellm_store_add_default_params();
        p.source = arg;
        p.manifest = f.manifest;
        p.patch = f.patch;
        p.name = f.name;
        p.version = f.version;
        p.allow_unsigned = f.allow_unsigned;
        p.activate = f.activate;
        p.retries = f.retries;
        p.chunk_bytes = f.chunk_kib ? f.chunk_kib << 10 : (uint64_t)4 << 20;
        edgellm_store_entry e = {.size = sizeof e};
        if ((st = edgellm_store_add(s, &p, &e, &err))) { rc = fail(name, st, &err); break; }
        printf("added %s@%lld (%.1f MiB, %s, %s%s) in %.0f ms\n", e.name, (long long)e.version,
               (double)e.file_size / 1048576.0, e.signed_by_trusted ? "signed" : "unsigned", "verified",
               e.active ? ", active" : "", cli_time_ms() - t0);
        if (e.gate[0]) printf("%s\n", e.gate);
        break;
    }
    case S_ACTIVATE: case S_ROLLBACK: {
        char nm[64];
        int64_t v = 0;
        if (sub == S_ACTIVATE) {
            if ((rc = split_ref(name, arg, nm, sizeof nm, &v))) break;
            st = edgellm_store_activate(s, nm, v, &err);
        } else {
            snprintf(nm, sizeof nm, "%s", arg);
            st = edgellm_store_rollback(s, nm, &err);
        }
        if (st) { rc = fail(name, st, &err); break; }
        const double ms = cli_time_ms() - t0;
        edgellm_store_entry e = {.size = sizeof e};
        if (!edgellm_store_resolve(s, nm, 0, &e, &err))
            printf("%s: active %s@%lld (%.1f ms)\n", nm, e.name, (long long)e.version, ms);
        break;
    }
    case S_LIST:
        printf("%-20s %7s  %-8s %-8s %14s  %-8s %-16s  %s\n", "name", "version", "state", "check", "size", "manifest",
               "created (UTC)", "sha256");
        if ((st = edgellm_store_list(s, print_entry, NULL, &err))) rc = fail(name, st, &err);
        break;
    case S_VERIFY: {
        int np = 0;
        st = edgellm_store_verify(s, print_line, NULL, &np, &err);
        if (st) rc = fail(name, st, &err);
        else printf("%s: no problems\n", edgellm_store_dir(s));
        break;
    }
    case S_GC: {
        int nr = 0;
        uint64_t freed = 0;
        if ((st = edgellm_store_gc(s, f.keep, &nr, &freed, &err))) rc = fail(name, st, &err);
        else printf("removed %d file%s, %.1f MiB freed\n", nr, nr == 1 ? "" : "s", (double)freed / 1048576.0);
        break;
    }
    case S_TRUST:
        if ((st = f.remove ? edgellm_store_untrust(s, arg, &err) : edgellm_store_trust(s, arg, &err)))
            rc = fail(name, st, &err);
        else printf("%s %s\n", f.remove ? "no longer trusted:" : "trusted", arg);
        break;
    case S_PATH: {
        edgellm_store_entry e = {.size = sizeof e};
        if ((st = edgellm_store_resolve(s, arg, 1, &e, &err))) { rc = fail(name, st, &err); break; }
        if (e.note[0]) fprintf(stderr, "edgellm store: %s\n", e.note);
        printf("%s\n", e.path);
        break;
    }
    }
    edgellm_store_close(s);
    return rc;
}

/* '-m store:NAME' anywhere a model is taken: the active version's file (rolled back to the
 * previous one when it fails to open). 0, or prints the problem and returns 1. */
int cli_store_resolve(const char *ref, char *path, size_t size)
{
    edgellm_store *s = NULL;
    edgellm_error err = {0};
    edgellm_store_params p = edgellm_store_default_params();
    edgellm_status st = edgellm_store_open(&p, &s, &err);
    edgellm_store_entry e = {.size = sizeof e};
    if (!st) st = edgellm_store_resolve(s, ref, 1, &e, &err);
    edgellm_store_close(s);
    if (st) { cli_print_error("store", &err); return 1; }
    if (e.note[0]) fprintf(stderr, "edgellm store: %s\n", e.note);
    snprintf(path, size, "%s", e.path);
    return 0;
}

int cmd_delta(int argc, char **argv)
{
    const char *out = NULL, *pos_v[2];
    cli_list pos = {.v = pos_v, .max = 2};
    int apply = 0;
    const cli_opt opts[] = {
        {CLI_PATH("-o", "--output", "OUT", &out), .required = 1, .help = "the patch (or with --apply, the new file)"},
        {CLI_FLAG(NULL, "--apply", &apply, 1), .help = "apply PATCH to OLD.gguf instead: edgellm delta --apply OLD.gguf "
                                                      "PATCH -o NEW.gguf"},
    };
    const cli_opt positional = {CLI_LIST(NULL, NULL, "FILE", &pos)};
    const cli_command cmd = {
        .name = "delta",
        .synopsis = "edgellm delta OLD.gguf NEW.gguf -o PATCH\nedgellm delta --apply OLD.gguf PATCH -o NEW.gguf",
        .about = "A per-tensor patch from OLD to NEW: unchanged tensors are referenced, changed ones carried\n"
                 "compressed (zstd, after XOR with the old tensor when that is smaller). Applying checks both\n"
                 "files' SHA-256.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts), .positional = &positional,
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (pos.n != 2) return cli_args_missing(&cmd, argc, "two files are required");
    edgellm_error err = {0};
    const double t0 = cli_time_ms();
    if (apply) {
        cli_bar b = {-1};
        const int tty = isatty(fileno(stderr));
        edgellm_status st = edgellm_delta_apply(pos.v[0], pos.v[1], out, tty ? cli_draw_bar : NULL, &b, &err);
        if (st) return fail("delta", st, &err);
        printf("wrote %s (%.0f ms)\n", out, cli_time_ms() - t0);
        return 0;
    }
    edgellm_delta_report r = {.size = sizeof r};
    edgellm_status st = edgellm_delta_create(pos.v[0], pos.v[1], out, &r, &err);
    if (st) return fail("delta", st, &err);
    printf("wrote %s: %llu bytes, %.2f%% of the new file (%llu bytes); tensors: %d copied, %d xor, %d literal of %d "
           "(%.0f ms)\n", out, (unsigned long long)r.patch_bytes,
           r.new_bytes ? 100.0 * (double)r.patch_bytes / (double)r.new_bytes : 0.0, (unsigned long long)r.new_bytes,
           r.n_copied, r.n_xor, r.n_literal, r.n_tensors, cli_time_ms() - t0);
    return 0;
}
