/* host_info.c — what the tools say about the machine (edgellm_tools.h): the environment
 * variables the kernel dispatcher reads that it cannot use as given (edgellm_env_check),
 * and the CPU as llama-bench names it (edgellm_bench_cpu_info). */
#include "edgellm_tools.h"
#include "../common/common.h"
#include "../kernels/cpu_features.h"
#include "../kernels/dispatch.h"
#include <stdarg.h>
#include <stdlib.h>

/* Append to buf[size] as snprintf would at offset *o, which counts the full length. */
static void append(char *buf, size_t size, size_t *o, const char *fmt, ...) EDGELLM_PRINTF(4, 5);
static void append(char *buf, size_t size, size_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(*o < size ? buf + *o : NULL, *o < size ? size - *o : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *o += (size_t)n;
}

size_t edgellm_env_check(char *buf, size_t size)
{
    size_t o = 0;
    if (buf && size) buf[0] = 0;
    else size = 0;
    /* dispatch.c ignores a name it does not know and caps a level the CPU does not run: an
     * A/B of two levels would otherwise silently compare a level with itself */
    const char *env = getenv("EDGELLM_KERNELS");
    if (env && *env) {
        const char *level = edgellm_kernels_level_name(env), *active = edgellm_kernels_name();
        if (!level || strcmp(level, active))
            append(buf, size, &o, "EDGELLM_KERNELS=%s %s; running the %s kernels\n", env,
                   level ? "is above what this CPU runs"
                         : "is not a kernel level of this build (x86-64: ref, scalar, avx2, avx512; AArch64: ref, "
                           "scalar, neon, dotprod)",
                   active);
    }
    const char *pf = getenv("EDGELLM_PREFETCH");
    size_t bytes;
    if (pf && *pf && !edgellm_kernels_parse_prefetch(pf, &bytes))
        append(buf, size, &o, "EDGELLM_PREFETCH=%s is not a byte count in [0, 1048576]; decode prefetch stays at this "
                              "CPU's default (%zu bytes)\n", pf, edgellm_kernels_decode_prefetch(1));
    return o;
}

void edgellm_bench_cpu_info(char *buf, size_t size)
{
    if (!buf || !size) return;
    snprintf(buf, size, "unknown");
    const edgellm_cpu_features *cf = edgellm_cpu_get_features();
    char fam[48] = "";
    if (cf->family > 0) snprintf(fam, sizeof fam, " (family 0x%x model 0x%x)", (unsigned)cf->family, (unsigned)cf->model);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        if (fam[0]) snprintf(buf, size, "x86-64%s", fam);
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, size, "%.*s%s", (int)(size > sizeof fam ? size - sizeof fam : 0), c, fam);
            }
            break;
        }
    fclose(f);
}
