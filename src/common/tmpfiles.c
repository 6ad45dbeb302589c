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
 */
#include "common.h"
#include <stdatomic.h>
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
