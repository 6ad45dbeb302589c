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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SLOTS 16
#define TMP_PATH_MAX 1024

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

void edgellm_remove_temp_files(void)
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

edgellm_status edgellm_out_open(edgellm_out_file *o, const char *path, const char *mode, edgellm_error *err)
{
    o->f = NULL;
    o->slot = -1;
    o->in_place = false;
    o->path = path;
    o->tmp[0] = 0;
    if (strlen(path) >= sizeof o->target) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: path too long", path);
    snprintf(o->target, sizeof o->target, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0) {                       /* exists (a link: what it names) */
        if (S_ISDIR(st.st_mode)) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: is a directory", path);
        if (!S_ISREG(st.st_mode)) {                   /* device, pipe, socket: in place */
            if (!(o->f = fopen(path, mode)))
                return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it: %s", path, strerror(errno));
            o->in_place = true;
            return EDGELLM_OK;
        }
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {   /* replace the file, keep the link */
            char *real = realpath(path, NULL);
            const bool fits = real && strlen(real) < sizeof o->target;
            if (fits) snprintf(o->target, sizeof o->target, "%s", real);
            free(real);
            if (!fits) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot resolve the link", path);
        }
    }
    const int n = snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->target, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof o->tmp) {
        o->tmp[0] = 0;
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: path too long", path);
    }
    o->slot = edgellm_tmp_register(o->tmp, false);   /* before it exists: a signal finds it */
    if (!(o->f = fopen(o->tmp, mode))) {
        const int e = errno;
        edgellm_status rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it (its temporary %s: %s)", path,
                                         o->tmp, strerror(e));
        edgellm_tmp_unregister(o->slot);
        o->slot = -1;
        o->tmp[0] = 0;   /* not ours: never remove a file this call did not create */
        return rc;
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
    if (!o->in_place && rename(o->tmp, o->target) != 0) {
        e = errno;
        edgellm_status rc =
            edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename %s into place: %s", o->path, o->tmp, strerror(e));
        edgellm_out_discard(o);
        return rc;
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
