/* temp_files.c — edgellm_remove_temp_files (edgellm_tools.h): the public face of the
 * registry of temporaries kept by the output writer (src/common/tmpfiles.c). */
#include "edgellm_tools.h"
#include "../common/common.h"

void edgellm_remove_temp_files(void) { edgellm_tmp_remove_all(); }
