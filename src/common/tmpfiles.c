/*
 * tmpfiles.c — the temporary files and folders edgellm is writing right now, so that a
 * process stopped by a signal can remove them (edgellm_remove_temp_files, edgellm.h).
 *
 * Writers that make a file under a temporary name and rename it into place (gguf_write.c,
 * eval save-logits) and eval sweep's scratch folder register the path while it exists and
 * unregister it once it is renamed or removed. A fixed table (no allocation), each slot
 * guarded by an atomic state: FREE -> FILLING (the owner copies the path) -> READY. The
 * remover reads only READY slots and calls only unlink() and rmdir(), which POSIX lists as
 * async-signal-safe (POSIX.1-2017 §2.4.3), so it may run inside a signal handler. A path
 * that does not fit (longer than TMP_PATH_MAX - 1 bytes, or all slots taken) is simply not
 * registered: the writer still removes it on every error it sees itself.
 *
 * edgellm_out_open / _commit / _discard are the one way output files are written (GGUF,
 * saved logits, logits dumps, eval and plan JSON, quantize reports): "PATH.tmp.PID",
 * registered here, renamed onto PATH once whole. PID in the name: two processes writing
 * the same target never share a temporary.
 */
#include "common.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SLOTS 16
#define TMP_PATH_MAX 4096   /* PATH_MAX on Linux: every temporary edgellm names fits */

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY };

static struct {
    atomic_int state;
    bool is_dir;
    char path[TMP_PATH_MAX];
} slots[TMP_SLOTS];

int edgellm_tmp_register(const char *path, bool is_dir)
{
    if (!path) return -1;
    const size_t n = strlen(path);
    if (n == 0 || n >= TMP_PATH_MAX) return -1;
    for (int i = 0; i < TMP_SLOTS; i++) {
        int expect = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expect, SLOT_FILLING)) continue;
        memcpy(slots[i].path, path, n + 1);
        slots[i].is_dir = is_dir;
        atomic_store(&slots[i].state, SLOT_READY);
        return i;
    }
    return -1;
}

void edgellm_tmp_unregister(int slot)
{
    if (slot >= 0 && slot < TMP_SLOTS) atomic_store(&slots[slot].state, SLOT_FREE);
}

void edgellm_tmp_remove_all(void)
{
    /* files first, then folders (a folder empties as its files go), newest slot first */
    for (int pass = 0; pass < 2; pass++)
        for (int i = TMP_SLOTS - 1; i >= 0; i--) {
            if (atomic_load(&slots[i].state) != SLOT_READY || slots[i].is_dir != (pass == 1)) continue;
            if (pass == 0) (void)unlink(slots[i].path);
            else (void)rmdir(slots[i].path);
        }
}

/* ------------------------------------------------------ files written whole or not at all */

bool edgellm_same_file(const char *a, const char *b)
{
    if (!a || !b) return false;
    struct stat sa, sb;
    const bool ea = stat(a, &sa) == 0;
    if (ea && !S_ISREG(sa.st_mode)) return false;   /* /dev/null twice destroys nothing */
    if (!strcmp(a, b)) return true;
    return ea && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The folder of path into dir: "." for a bare name, "/" for a name in the root. */
static void folder_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, size, ".");
    else snprintf(dir, size, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* Whether path's folder is in /proc once its own links are followed (/dev/fd/3: /dev/fd is
 * a link to /proc/self/fd). */
static bool in_proc_dir(const char *path)
{
    if (!strchr(path, '/')) return false;
    char dir[4096], *real;
    folder_of(path, dir, sizeof dir);
    if (!(real = realpath(dir, NULL))) return false;
    const bool proc = !strncmp(real, "/proc/", 6) || !strcmp(real, "/proc");
    free(real);
    return proc;
}

/* The file a chain of symbolic links starting at path ends on (or would create), into out;
 * *via_proc when a link of the chain lies in /proc (/dev/stdout -> /proc/self/fd/1: a
 * descriptor's file, not a name to replace). 0, or an errno (ELOOP after 40 links, as
 * Linux's limit; ENAMETOOLONG). */
static int resolve_links(const char *path, char *out, size_t size, bool *via_proc)
{
    char cur[4096], link[4096];
    if (strlen(path) >= sizeof cur) return ENAMETOOLONG;
    snprintf(cur, sizeof cur, "%s", path);
    *via_proc = false;
    for (int hops = 0; hops <= 40; hops++) {
        if (!strncmp(cur, "/proc/", 6) || in_proc_dir(cur)) *via_proc = true;
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT) return errno;
            break;                                   /* the name to create */
        }
        if (!S_ISLNK(st.st_mode)) break;
        const ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) return errno;
        link[n] = 0;
        const char *slash = strrchr(cur, '/');
        if (link[0] == '/' || !slash) {              /* absolute, or relative to the cwd */
            snprintf(cur, sizeof cur, "%s", link);
        } else {                                     /* relative to the link's folder */
            const int dir = (int)(slash - cur) + 1;
            if ((size_t)dir + (size_t)n >= sizeof cur) return ENAMETOOLONG;
            memmove(cur + dir, link, (size_t)n + 1);
        }
        if (hops == 40) return ELOOP;
    }
    if (strlen(cur) >= size) return ENAMETOOLONG;
    snprintf(out, size, "%s", cur);
    return 0;
}

/* How edgellm_out_open writes a (non-empty, not "-") path: the target into target, whether
 * in place, and the stat of what path names (*exists). 0, or an errno: EISDIR, a link
 * loop (ELOOP), ENAMETOOLONG, what stat() said. */
static int out_plan(const char *path, char *target, size_t size, bool *in_place, struct stat *st, bool *exists)
{
    *exists = stat(path, st) == 0;                   /* a link: what it names */
    if (!*exists && errno != ENOENT) return errno;
    if (*exists && S_ISDIR(st->st_mode)) return EISDIR;
    bool via_proc = false;
    const int e = resolve_links(path, target, size, &via_proc);
    if (e) return e;
    /* a device, pipe or socket (/dev/null, a FIFO), or a descriptor's file (/dev/stdout,
     * /dev/fd/N, even redirected to a file): written in place, nothing replaced */
    *in_place = via_proc || (*exists && !S_ISREG(st->st_mode));
    return 0;
}

int edgellm_out_check(const char *path)
{
    if (!path || !*path) return EINVAL;
    if (!strcmp(path, "-")) return 0;
    char target[4096], dir[4096];
    struct stat st;
    bool in_place = false, exists = false;
    const int e = out_plan(path, target, sizeof target, &in_place, &st, &exists);
    if (e) return e;
    if (in_place) return access(path, W_OK) == 0 ? 0 : errno;
    folder_of(target, dir, sizeof dir);             /* the temporary and the rename need it */
    return access(dir, W_OK | X_OK) == 0 ? 0 : errno;
}

edgellm_status edgellm_out_open(edgellm_out_file *o, const char *path, const char *mode, edgellm_error *err)
{
    o->f = NULL;
    o->slot = -1;
    o->in_place = false;
    o->path = path;
    o->tmp[0] = 0;
    o->target[0] = 0;
    if (!path || !*path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "an empty output path");
    if (!strcmp(path, "-")) {                        /* the usual name of standard output */
        const int fd = dup(STDOUT_FILENO);
        if (fd < 0 || !(o->f = fdopen(fd, mode))) {
            const int e = errno;
            if (fd >= 0) close(fd);
            return edgellm_fail(err, EDGELLM_ERR_IO, "-: cannot write standard output: %s", strerror(e));
        }
        o->in_place = true;
        return EDGELLM_OK;
    }
    struct stat st;
    bool exists = false;
    const int e = out_plan(path, o->target, sizeof o->target, &o->in_place, &st, &exists);
    if (e == EISDIR) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: is a directory", path);
    if (e) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it: %s", path, strerror(e));
    if (o->in_place) {
        if (!(o->f = fopen(path, mode)))
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it: %s", path, strerror(errno));
        return EDGELLM_OK;
    }
    /* a new file next to the target: O_EXCL | O_NOFOLLOW, so a file or link planted at the
     * name is never written through; created and registered with signals held back, so a
     * handler never removes a file of that name this call did not create */
    int fd = -1, open_errno = 0;
    for (int k = 0; k < 16 && fd < 0; k++) {
        const int n = k ? snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%d", o->target, (long)getpid(), k)
                        : snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->target, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof o->tmp) {
            o->tmp[0] = 0;
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: path too long", path);
        }
        sigset_t old;
        edgellm_block_async_signals(&old);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        open_errno = errno;
        if (fd >= 0) o->slot = edgellm_tmp_register(o->tmp, false);
        edgellm_restore_signals(&old);
        if (fd < 0 && open_errno != EEXIST) break;
    }
    if (fd < 0) {
        edgellm_status rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it (its temporary %s: %s)", path,
                                         o->tmp, strerror(open_errno));
        o->tmp[0] = 0;   /* not ours: never remove a file this call did not create */
        return rc;
    }
    if (exists) (void)fchmod(fd, st.st_mode & 07777);   /* the replaced file's permissions */
    if (!(o->f = fdopen(fd, mode))) {
        const int fe = errno;
        close(fd);
        edgellm_out_discard(o);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "%s: %s", path, strerror(fe));
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_out_commit(edgellm_out_file *o, edgellm_error *err)
{
    int e = 0;
    if (ferror(o->f)) e = errno ? errno : EIO;
    if (!e && fflush(o->f) != 0) e = errno ? errno : EIO;
    if (!e && !o->in_place && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS) e = errno;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    o->f = NULL;
    if (e) {
        edgellm_out_discard(o);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", o->path, strerror(e));
    }
    if (!o->in_place) {
        if (rename(o->tmp, o->target) != 0) {
            e = errno;
            edgellm_status rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename %s into place: %s", o->path,
                                             o->tmp, strerror(e));
            edgellm_out_discard(o);
            return rc;
        }
        /* the rename itself on disk: sync the folder (best effort) */
        char dir[4096];
        folder_of(o->target, dir, sizeof dir);
        const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    edgellm_tmp_unregister(o->slot);
    o->slot = -1;
    o->tmp[0] = 0;
    return EDGELLM_OK;
}

void edgellm_out_discard(edgellm_out_file *o)
{
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) (void)unlink(o->tmp);
    o->tmp[0] = 0;
    edgellm_tmp_unregister(o->slot);
    o->slot = -1;
}
