/*
 * server_util.h — what the server tests share (test_server.c, test_server_hostile.c): start
 * `edgellm serve` on a free port of 127.0.0.1 and always stop it, a small HTTP/1.1 client
 * over raw sockets (so requests can be malformed on purpose), Server-Sent Events read into
 * their JSON chunks.
 *
 * The server is a child process in its own process group, killed with the test process
 * (PR_SET_PDEATHSIG) and at exit (atexit, and on SIGTERM/SIGINT/SIGALRM: the test's own
 * timeout) if the test did not stop it. Its stderr goes to a file in test_tmpdir(); the
 * port is read from its "listening on http://127.0.0.1:PORT" line (it binds port 0).
 */
#ifndef EDGELLM_TEST_SERVER_UTIL_H
#define EDGELLM_TEST_SERVER_UTIL_H

#include "test_util.h"
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

typedef struct {
    pid_t pid;
    int port;
    char log[300];
} srv_proc;

#define SRV_MAX_PROCS 16
static pid_t srv_pids[SRV_MAX_PROCS];

static void srv_kill_all(void)
{
    for (int i = 0; i < SRV_MAX_PROCS; i++)
        if (srv_pids[i] > 0) {
            kill(srv_pids[i], SIGKILL);
            waitpid(srv_pids[i], NULL, 0);
            srv_pids[i] = 0;
        }
}

static void srv_on_signal(int sig)
{
    for (int i = 0; i < SRV_MAX_PROCS; i++)
        if (srv_pids[i] > 0) kill(srv_pids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void srv_install_cleanup(void)
{
    static bool done = false;
    if (done) return;
    done = true;
    atexit(srv_kill_all);
    signal(SIGTERM, srv_on_signal);
    signal(SIGINT, srv_on_signal);
    signal(SIGALRM, srv_on_signal);
    signal(SIGPIPE, SIG_IGN);
}

static double srv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void srv_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- HTTP client ---- */

typedef struct {
    int status;                 /* 0: no status line (closed, timed out, garbage)          */
    char *head;                 /* status line and headers                                 */
    char *body;                 /* de-chunked body, NUL-terminated                         */
    size_t body_len;
    bool closed_early;          /* EOF before a complete response                          */
} srv_resp;

static void srv_resp_free(srv_resp *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static int srv_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static bool srv_send_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, len -= (size_t)w;
    }
    return true;
}

/* Whether raw[0..n) holds one whole HTTP response (headers, then Content-Length bytes or
 * chunks to the last one; a response without either ends at EOF). */
static bool srv_resp_complete(const char *raw, size_t n)
{
    const char *end = memmem(raw, n, "\r\n\r\n", 4);
    if (!end) return false;
    const size_t head = (size_t)(end + 4 - raw);
    char *h = strndup(raw, head);
    const char *cl = strcasestr(h, "\ncontent-length:");
    const long clen = cl ? atol(cl + 16) : -1;
    const bool chunked = strcasestr(h, "\ntransfer-encoding: chunked") != NULL;
    free(h);
    if (clen >= 0) return n >= head + (size_t)clen;
    if (chunked) return memmem(end + 2, n - head + 2, "\r\n0\r\n\r\n", 7) != NULL;
    return false;
}

/* Read until EOF (or, when whole_response, until one whole response came) or timeout_ms
 * without data; *out malloc'd. Returns bytes, -1 on timeout. */
static long srv_read_resp(int fd, char **out, int timeout_ms, bool whole_response)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    long rc = 0;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, timeout_ms);
        if (pr == 0) { rc = -1; break; }
        if (pr < 0 && errno == EINTR) continue;
        if (n + 4096 > cap) buf = realloc(buf, cap *= 2);
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        buf[n] = 0;
        if (whole_response && srv_resp_complete(buf, n)) break;
    }
    buf[n] = 0;
    *out = buf;
    return rc < 0 ? -1 : (long)n;
}

static __attribute__((unused)) long srv_read_all(int fd, char **out, int timeout_ms)
{
    return srv_read_resp(fd, out, timeout_ms, false);
}

/* Split raw bytes into status, headers and de-chunked body. */
static void srv_parse_resp(const char *raw, size_t n, srv_resp *r)
{
    memset(r, 0, sizeof *r);
    const char *end = memmem(raw, n, "\r\n\r\n", 4);
    if (strncmp(raw, "HTTP/1.", 7) != 0 || n < 12) { r->closed_early = true; return; }
    r->status = atoi(raw + 9);
    if (!end) { r->closed_early = true; return; }
    r->head = strndup(raw, (size_t)(end - raw));
    const char *b = end + 4;
    size_t blen = n - (size_t)(b - raw);
    r->body = malloc(blen + 1);
    const bool chunked = strcasestr(r->head, "transfer-encoding: chunked") != NULL;
    if (!chunked) {
        memcpy(r->body, b, blen);
        r->body_len = blen;
        const char *cl = strcasestr(r->head, "content-length:");
        if (cl && (size_t)atol(cl + 15) > blen) r->closed_early = true;
    } else {
        size_t o = 0;
        const char *p = b, *e = b + blen;
        bool last = false;
        while (p < e) {
            char *q;
            unsigned long sz = strtoul(p, &q, 16);
            const char *crlf = memmem(p, (size_t)(e - p), "\r\n", 2);
            if (!crlf) break;
            p = crlf + 2;
            if (sz == 0) { last = true; break; }
            if ((size_t)(e - p) < sz) { memcpy(r->body + o, p, (size_t)(e - p)); o += (size_t)(e - p); break; }
            memcpy(r->body + o, p, sz);
            o += sz;
            p += sz + 2;
        }
        r->body_len = o;
        if (!last) r->closed_early = true;
    }
    r->body[r->body_len] = 0;
}

/* Send raw bytes on a new connection and read the whole answer (the request should ask
 * for Connection: close). false when the connection failed or timed out. */
static bool srv_raw_ex(int port, const char *req, size_t len, srv_resp *out, int timeout_ms, bool half_close)
{
    memset(out, 0, sizeof *out);
    int fd = srv_connect(port);
    if (fd < 0) return false;
    bool ok = srv_send_all(fd, req, len);
    if (half_close) shutdown(fd, SHUT_WR);   /* nothing more will come: an incomplete request ends here */
    char *raw = NULL;
    long n = srv_read_resp(fd, &raw, timeout_ms, true);
    close(fd);
    if (n >= 0) srv_parse_resp(raw, (size_t)n, out);
    free(raw);
    return ok && n >= 0;
}

static bool srv_raw(int port, const char *req, size_t len, srv_resp *out, int timeout_ms)
{
    return srv_raw_ex(port, req, len, out, timeout_ms, false);
}

/* METHOD path with a JSON body (may be NULL) and extra header lines ("K: V\r\n"...). */
static bool srv_http(int port, const char *method, const char *path, const char *body, const char *extra,
                     srv_resp *out)
{
    const size_t blen = body ? strlen(body) : 0;
    char *req = malloc(blen + 1024 + (extra ? strlen(extra) : 0));
    int n = sprintf(req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s", method, path,
                    extra ? extra : "", body ? "Content-Type: application/json\r\n" : "");
    if (body) n += sprintf(req + n, "Content-Length: %zu\r\n", blen);
    n += sprintf(req + n, "\r\n");
    if (body) memcpy(req + n, body, blen);
    const bool ok = srv_raw(port, req, (size_t)n + blen, out, 60000);
    free(req);
    return ok;
}

static __attribute__((unused)) bool srv_post(int port, const char *path, const char *body, srv_resp *out)
{
    return srv_http(port, "POST", path, body, NULL, out);
}

/* ---------------------------------------------------------------- the server ---- */

/* Start `edgellm serve -m model --port 0 --host 127.0.0.1 -t 1 ARGS...` (args NULL-ended)
 * and wait until /health answers 200. */
static bool srv_start(srv_proc *s, const char *model, const char *const *args)
{
    srv_install_cleanup();
    memset(s, 0, sizeof *s);
    static int counter = 0;
    snprintf(s->log, sizeof s->log, "%s/server-%d.log", test_tmpdir(), counter++);
    const char *argv[64] = {EDGELLM_CLI, "serve", "-m", model, "--port", "0", "--host", "127.0.0.1", "-t", "1"};
    int argc = 10;
    for (int i = 0; args && args[i] && argc < 62; i++) argv[argc++] = args[i];
    argv[argc] = NULL;
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        execv(argv[0], (char **)argv);
        _exit(127);
    }
    s->pid = pid;
    for (int i = 0; i < SRV_MAX_PROCS; i++)
        if (srv_pids[i] == 0) { srv_pids[i] = pid; break; }
    const double t0 = srv_now_ms();
    while (srv_now_ms() - t0 < 60000 && !s->port) {
        char *log = read_file(s->log, NULL);
        const char *at = log ? strstr(log, "listening on http://127.0.0.1:") : NULL;
        if (at) s->port = atoi(at + strlen("listening on http://127.0.0.1:"));
        free(log);
        if (waitpid(pid, NULL, WNOHANG) == pid) { s->pid = 0; break; }
        if (!s->port) srv_sleep_ms(20);
    }
    if (!s->port) {
        char *log = read_file(s->log, NULL);
        fprintf(stderr, "   server did not start: %s\n", log ? log : "(no log)");
        free(log);
        return false;
    }
    while (srv_now_ms() - t0 < 60000) {
        srv_resp r;
        if (srv_http(s->port, "GET", "/health", NULL, NULL, &r) && r.status == 200) { srv_resp_free(&r); return true; }
        srv_resp_free(&r);
        srv_sleep_ms(20);
    }
    return false;
}

/* SIGTERM, then wait (up to timeout_ms; SIGKILL after). Returns the exit status, or -1
 * when it had to be killed or died of a signal. */
static int srv_stop(srv_proc *s, int timeout_ms)
{
    if (s->pid <= 0) return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    const double t0 = srv_now_ms();
    pid_t w = 0;
    while ((w = waitpid(s->pid, &st, WNOHANG)) == 0 && srv_now_ms() - t0 < timeout_ms) srv_sleep_ms(10);
    if (w == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &st, 0);
        fprintf(stderr, "   server %d did not stop within %d ms: killed\n", (int)s->pid, timeout_ms);
    }
    for (int i = 0; i < SRV_MAX_PROCS; i++)
        if (srv_pids[i] == s->pid) srv_pids[i] = 0;
    s->pid = 0;
    if (w == 0 || !WIFEXITED(st)) return -1;
    if (WEXITSTATUS(st) != 0) {
        char *log = read_file(s->log, NULL);
        fprintf(stderr, "   server exited %d; its log:\n%s\n", WEXITSTATUS(st), log ? log : "");
        free(log);
    }
    return WEXITSTATUS(st);
}

/* The server's log so far (malloc'd). */
static __attribute__((unused)) char *srv_log(const srv_proc *s)
{
    char *l = read_file(s->log, NULL);
    return l ? l : strdup("");
}

/* ---------------------------------------------------------------- JSON ---- */

static __attribute__((unused)) const char *srv_json_str(const cJSON *o, const char *path)
{
    /* "a.b.0.c": object keys and array indices */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(tok)) : cJSON_GetObjectItemCaseSensitive(v, tok);
    return cJSON_GetStringValue(v);
}

static __attribute__((unused)) double srv_json_num(const cJSON *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(tok)) : cJSON_GetObjectItemCaseSensitive(v, tok);
    return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}

/* A Server-Sent Events body: the content of every chunk joined, the last finish_reason,
 * the usage chunk's counts, whether it ended with [DONE], the number of data events. */
typedef struct {
    char *text;
    size_t len;
    char finish[32];
    int n_events, done, prompt_tokens, completion_tokens, cached_tokens, has_usage, error, messages_dropped;
} srv_sse;

static __attribute__((unused)) void srv_sse_parse(const char *body, srv_sse *out)
{
    memset(out, 0, sizeof *out);
    out->text = calloc(1, strlen(body) + 1);
    out->messages_dropped = -1;
    for (const char *p = body; (p = strstr(p, "data: "));) {
        p += 6;
        const char *e = strstr(p, "\n\n");
        if (!e) break;
        out->n_events++;
        if (!strncmp(p, "[DONE]", 6)) { out->done = 1; p = e; continue; }
        cJSON *o = cJSON_ParseWithLength(p, (size_t)(e - p));
        p = e;
        if (!o) continue;
        if (cJSON_GetObjectItem(o, "error")) out->error = 1;
        const cJSON *md = cJSON_GetObjectItem(o, "messages_dropped");
        if (cJSON_IsNumber(md)) out->messages_dropped = md->valueint;
        const char *t = srv_json_str(o, "choices.0.delta.content");
        if (!t) t = srv_json_str(o, "choices.0.text");
        if (t) { memcpy(out->text + out->len, t, strlen(t)); out->len += strlen(t); }
        const char *f = srv_json_str(o, "choices.0.finish_reason");
        if (f) snprintf(out->finish, sizeof out->finish, "%s", f);
        if (cJSON_GetObjectItem(o, "usage")) {
            out->has_usage = 1;
            out->prompt_tokens = (int)srv_json_num(o, "usage.prompt_tokens");
            out->completion_tokens = (int)srv_json_num(o, "usage.completion_tokens");
            out->cached_tokens = (int)srv_json_num(o, "usage.prompt_tokens_details.cached_tokens");
        }
        cJSON_Delete(o);
    }
    out->text[out->len] = 0;
}

/* A Prometheus sample "name value" (name with labels as written) from /metrics; -1 when absent. */
static __attribute__((unused)) double srv_metric(int port, const char *name, const char *extra_headers)
{
    srv_resp r;
    double v = -1;
    if (srv_http(port, "GET", "/metrics", NULL, extra_headers, &r) && r.status == 200) {
        char key[200];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *at = strstr(r.body, key);
        if (at) v = atof(at + strlen(key));
    }
    srv_resp_free(&r);
    return v;
}

#endif
