/*
 * hf_json.c — the file and JSON plumbing of the Hugging Face import and export (hf.h):
 * files read whole with a size cap, JSON parsed by cJSON (Debian libcjson-dev) with the
 * position of a syntax error as line:column, integer and duplicate-key checks that cJSON
 * leaves to its caller, and JSON text written back (RFC 8259: strings are UTF-8, with '"',
 * '\\' and the control characters U+0000..U+001F escaped, section 7).
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

bool edgellm_hf_path(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    return n > 0 && (size_t)n < size;
}

int edgellm_hf_has_file(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    return edgellm_hf_path(p, sizeof p, dir, name) && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

edgellm_status edgellm_hf_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, edgellm_error *err)
{
    *buf = NULL;
    *len = 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO: refused below, not waited on */
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
    edgellm_status rc = EDGELLM_OK;
    struct stat st;
    char *b = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes; edgellm reads such files up to %zu MiB", path,
                          (unsigned long long)st.st_size, max_bytes >> 20);
        goto done;
    }
    const size_t n = (size_t)st.st_size;
    if (!(b = edgellm_malloc(n + 1))) { rc = edgellm_fail_nomem(err, path); goto done; }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            rc =
                edgellm_fail(err, EDGELLM_ERR_IO, "%s: read failed: %s", path, r < 0 ? strerror(errno) : "file shrank");
            goto done;
        }
        got += (size_t)r;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    b = NULL;
done:
    edgellm_free(b);
    close(fd);
    return rc;
}

edgellm_status edgellm_hf_json_parse(const char *text, size_t len, const char *path, cJSON **out, edgellm_error *err)
{
    const char *end = NULL;
    *out = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (j) {   /* only whitespace may follow the value */
        while (end && end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
        if (end && end < text + len) { cJSON_Delete(j); j = NULL; }
    }
    if (!j) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0, line = 1, col = 1;
        for (size_t i = 0; i < at; i++) {
            if (text[i] == '\n') { line++; col = 1; }
            else col++;
        }
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not valid JSON (line %zu, column %zu)", path, line, col);
    }
    *out = j;
    return EDGELLM_OK;
}

edgellm_status edgellm_hf_json_load(const char *path, cJSON **out, edgellm_error *err)
{
    char *buf;
    size_t len;
    *out = NULL;
    edgellm_status rc = edgellm_hf_read_file(path, EDGELLM_HF_MAX_JSON_BYTES, &buf, &len, err);
    if (rc != EDGELLM_OK) return rc;
    rc = edgellm_hf_json_parse(buf, len, path, out, err);
    edgellm_free(buf);
    return rc;
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

const char *edgellm_hf_json_dup_key(const cJSON *obj)
{
    if (!cJSON_IsObject(obj)) return NULL;
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    if (n < 2) return NULL;
    const char **keys = edgellm_malloc(n * sizeof *keys);
    if (!keys) return NULL;   /* a check that cannot run refuses nothing */
    size_t i = 0;
    for (const cJSON *c = obj->child; c; c = c->next) keys[i++] = c->string ? c->string : "";
    qsort(keys, n, sizeof *keys, cmp_cstr);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (!strcmp(keys[i - 1], keys[i])) dup = keys[i];
    edgellm_free(keys);
    return dup;
}

const cJSON *edgellm_hf_get(const cJSON *obj, const char *key)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

bool edgellm_hf_json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return false;
    const double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi || fabs(d) > 9007199254740992.0) return false;
    *out = (int64_t)d;
    return true;
}

bool edgellm_hf_utf8_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int k = edgellm_utf8_char_len(s + i, n - i);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

void edgellm_hf_json_put_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); }
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void edgellm_hf_json_put_float(FILE *f, float v)
{
    char buf[48];
    if (!isfinite(v)) { fputs("null", f); return; }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    /* "1e+04" reads as a number in JSON too; integers print plainly when short */
    if (v == floorf(v) && fabsf(v) < 1e15f) snprintf(buf, sizeof buf, "%.0f", (double)v);
    fputs(buf, f);
}

#endif /* EDGELLM_HAVE_CJSON */
