/* system_info.c — diagnostics of the core (edgellm.h): the kernels in use and the
 * architectures the model loader runs. In the runtime layer, the top of the core, because
 * it reads both the kernel dispatcher (kernels/) and the architecture table (model/). */
#include "edgellm.h"
#include "../kernels/cpu_features.h"
#include "../kernels/dispatch.h"
#include "../model/model.h"
#include <stdio.h>
#include <string.h>

int edgellm_kernels_describe(char *buf, size_t size)
{
    const char *level = edgellm_kernels_name();
    /* GFNI is used by the avx512 Q4_K/Q6_K kernels only, and only the avx512 decode tile
     * kernels prefetch (dispatch.h) */
    const int avx512 = !strcmp(level, "avx512");
    const size_t prefetch = avx512 ? edgellm_kernels_decode_prefetch(1) : 0;
    char pf[64] = "";
    if (prefetch)
        snprintf(pf, sizeof pf, ", %sdecode prefetch %zu bytes", edgellm_kernels_decode_prefetch(2) ? "" : "1-thread ",
                 prefetch);
    /* the load-time weight layout of this level (dispatch.h), when it has one */
    char rp[160], lay[192] = "";
    if (strncmp(edgellm_kernels_repack_describe(rp, sizeof rp), "none", 4))
        snprintf(lay, sizeof lay, "; load-time repack: %s", rp);
    /* a file's stored layout (quantize --layout) read as mapped; elsewhere it is unpacked at load */
    const char *stored = edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, 256) ? "; stored q4_K_r16 read as mapped" : "";
    return snprintf(buf, size, "%s%s%s%s%s", level, avx512 && edgellm_cpu_get_features()->gfni ? " + gfni" : "", pf,
                    lay, stored);
}

int edgellm_arch_supported(const char *arch)
{
    return arch && edgellm_arch_find(arch, strlen(arch)) != NULL;
}

const char *edgellm_arch_names(void) { return edgellm_arch_list(); }
