/* temp_files.c — the public face (edgellm_tools.h) of the output writer and its registry of
 * temporaries (src/common/tmpfiles.c): edgellm_remove_temp_files, edgellm_output_* (a
 * handle around edgellm_out_file) and edgellm_path_same_file. */
#include "edgellm_tools.h"
#include "../common/common.h"

void edgellm_remove_temp_files(void) { edgellm_tmp_remove_all(); }

struct edgellm_output {
    edgellm_out_file file;
};

edgellm_status edgellm_output_open(const char *path, const char *mode, edgellm_output **out, edgellm_error *err)
{
    if (out) *out = NULL;
    if (!mode || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_output_open: NULL mode or out");
    edgellm_output *o = edgellm_calloc(1, sizeof *o);
    if (!o) return edgellm_fail_nomem(err, path ? path : "output");
    const edgellm_status rc = edgellm_out_open(&o->file, path, mode, err);
    if (rc != EDGELLM_OK) {
        edgellm_free(o);   /* edgellm_out_open left nothing open or registered */
        return rc;
    }
    *out = o;
    return EDGELLM_OK;
}

FILE *edgellm_output_stream(edgellm_output *o) { return o ? o->file.f : NULL; }

edgellm_status edgellm_output_commit(edgellm_output *o, edgellm_error *err)
{
    if (!o) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_output_commit: NULL handle");
    const edgellm_status rc = edgellm_out_commit(&o->file, err);
    edgellm_free(o);
    return rc;
}

void edgellm_output_discard(edgellm_output *o)
{
    if (!o) return;
    edgellm_out_discard(&o->file);
    edgellm_free(o);
}

int edgellm_output_check(const char *path) { return edgellm_out_check(path); }

int edgellm_path_same_file(const char *a, const char *b) { return edgellm_same_file(a, b); }
