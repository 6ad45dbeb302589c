/*
 * plan_lowmem.c — the low-memory mode as an option of `edgellm plan` (run --mem-budget,
 * docs/planning.md "Low-memory mode"): for a precision that does not fit, the budget that
 * does, and the speed when every layer is read again from storage at each token.
 *
 * The mode (src/tools/memory.c) keeps the output head and norms resident and a rolling
 * window of layers; a layer is released after use, so with a window shorter than the
 * model every layer is faulted in again at the next token. When the model does not fit
 * the device's usable memory, the page cache cannot hold it either (it is the same RAM):
 * the plan counts every layer's bytes as read from storage per token, at the device's
 * sequential read figure below. Decode time per token is then the in-memory prediction of
 * the row plus layer bytes / storage bandwidth (no overlap assumed: the next layer's
 * MADV_WILLNEED overlaps some of it, so this is the slower bound). The head and the
 * embedding table are approximated from the shape (n_vocab x n_embd of weight_bytes'
 * average bits per parameter).
 *
 * Storage sequential read, GB/s (1e9 B/s), per catalogue device:
 *   phone-high     4.2   UFS 4.0: Samsung's UFS 4.0 announcement, 2022-05-03 (4,200 MB/s
 *                        sequential read), as in Snapdragon 8 Gen 3 phones (OnePlus 12)
 *   phone-mid      2.1   UFS 3.1: half of UFS 4.0 by the same announcement ("double" UFS
 *                        3.1; Samsung's UFS 3.1 figure is 2,100 MB/s)
 *   phone-low      0.3   eMMC 5.1: HS400 interface at most 400 MB/s (JEDEC JESD84-B51),
 *                        ~300 MB/s reached (estimate)
 *   pi5-8gb        0.09  microSD, SDR104 bus at most 104 MB/s (SD Physical Layer spec;
 *                        the Pi 5 supports SDR104: Raspberry Pi documentation, SD cards)
 *   pi4-4gb        0.045 microSD, DDR50 bus at most 50 MB/s (same sources)
 *   orin-nano-8gb  2.0   NVMe SSD on PCIe 3.0 x4 (3.94 GB/s interface; a mainstream
 *                        drive reads ~2 GB/s: estimate)
 *   laptop-16gb    3.5   NVMe SSD, PCIe 3.0/4.0 mainstream (estimate)
 *   iphone-13-pro  1.5   Apple NVMe storage (estimate)
 *   mac-m1-8gb     2.9   Apple SSD, 256 GB models (estimate)
 * Other devices (host, a device file): 0.5 GB/s, a stated assumption; the report names it.
 */
#include "plan.h"
#include <stdio.h>
#include <string.h>

static const struct { const char *device; double gbps; const char *source; } storage[] = {
    {"phone-high", 4.2, "UFS 4.0, 4,200 MB/s sequential read (Samsung, 2022-05-03)"},
    {"phone-mid", 2.1, "UFS 3.1, 2,100 MB/s sequential read (Samsung)"},
    {"phone-low", 0.3, "eMMC 5.1, HS400 at most 400 MB/s (JEDEC JESD84-B51); 300 MB/s reached (estimate)"},
    {"pi5-8gb", 0.09, "microSD, SDR104 bus at most 104 MB/s (SD spec; Raspberry Pi docs)"},
    {"pi4-4gb", 0.045, "microSD, DDR50 bus at most 50 MB/s (SD spec; Raspberry Pi docs)"},
    {"orin-nano-8gb", 2.0, "NVMe on PCIe 3.0 x4 (3.94 GB/s interface; 2 GB/s drive, estimate)"},
    {"laptop-16gb", 3.5, "NVMe SSD, mainstream PCIe 3.0/4.0 (estimate)"},
    {"iphone-13-pro", 1.5, "Apple NVMe storage (estimate)"},
    {"mac-m1-8gb", 2.9, "Apple SSD, 256 GB models (estimate)"},
};

double edgellm_plan_storage_gbps(const char *device, const char **source)
{
    for (size_t i = 0; i < sizeof storage / sizeof storage[0]; i++)
        if (device && !strcmp(device, storage[i].device)) {
            if (source) *source = storage[i].source;
            return storage[i].gbps;
        }
    if (source) *source = "assumed 0.5 GB/s (no figure for this device: measure its storage, e.g. fio)";
    return 0.5;
}

void edgellm_plan_low_memory(edgellm_plan_report *r)
{
    const char *src = NULL;
    r->storage_gbps = edgellm_plan_storage_gbps(r->device.name, &src);
    snprintf(r->storage_source, sizeof r->storage_source, "%s", src);
    r->lowmem_pick = -1;
    const edgellm_plan_model *m = &r->model;
    if (m->n_layer <= 0 || m->n_params == 0) return;
    for (int k = 0; k < r->n_rows; k++) {
        edgellm_plan_row *row = &r->rows[k];
        row->lowmem_budget_bytes = 0;
        row->lowmem_tps = 0;
        row->lowmem_read_bytes = 0;
        if (row->verdict != EDGELLM_PLAN_NO_FIT || row->needs_original) continue;
        const double per_param = (double)row->weight_bytes / (double)m->n_params;
        const double head = (double)m->n_vocab * m->n_embd * per_param;
        const double embd = m->tied_embeddings ? 0.0 : head;
        const double layers = EDGELLM_MAX((double)row->weight_bytes - head - embd, 0.0);
        const double layer = layers / m->n_layer;
        const double room = (double)row->budget_bytes - (double)row->kv_bytes - (double)row->scratch_bytes -
                            (double)row->overhead_bytes;
        row->lowmem_read_bytes = (uint64_t)layers;
        if (room < head + layer || !(row->decode_tps > 0)) {   /* not even the head and one layer */
            row->lowmem_budget_bytes = (uint64_t)(head + layer);
            continue;
        }
        row->lowmem_budget_bytes = (uint64_t)(room / 1048576.0) << 20;   /* whole MiB */
        row->lowmem_tps = 1.0 / (1.0 / row->decode_tps + layers / (r->storage_gbps * 1e9));
        if (r->lowmem_pick < 0 || row->lowmem_tps > r->rows[r->lowmem_pick].lowmem_tps) r->lowmem_pick = k;
    }
    if (m->from_file && r->n_rows > 0 && r->rows[0].lowmem_tps > 0) r->lowmem_pick = 0;   /* the file as it is */
}
