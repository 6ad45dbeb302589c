/* error.c — status names and the edgellm_fail helper (messages are owned by the caller's
 * edgellm_error, never by the library). */
#include "common.h"
#include <stdarg.h>
#include <stdio.h>

const char *edgellm_status_name(edgellm_status s)
{
    switch (s) {
    case EDGELLM_OK: return "EDGELLM_OK";
    case EDGELLM_ERR_IO: return "EDGELLM_ERR_IO";
    case EDGELLM_ERR_FORMAT: return "EDGELLM_ERR_FORMAT";
    case EDGELLM_ERR_NOMEM: return "EDGELLM_ERR_NOMEM";
    case EDGELLM_ERR_MISUSE: return "EDGELLM_ERR_MISUSE";
    case EDGELLM_ERR_UNSUPPORTED: return "EDGELLM_ERR_UNSUPPORTED";
    case EDGELLM_ERR_CTX_FULL: return "EDGELLM_ERR_CTX_FULL";
    case EDGELLM_ERR_NUMERIC: return "EDGELLM_ERR_NUMERIC";
    case EDGELLM_ERR_CANCELLED: return "EDGELLM_ERR_CANCELLED";
    case EDGELLM_ERR_NOT_FOUND: return "EDGELLM_ERR_NOT_FOUND";
    }
    return "EDGELLM_ERR_?";
}

edgellm_status edgellm_fail(edgellm_error *err, edgellm_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

edgellm_status edgellm_fail_nomem(edgellm_error *err, const char *what)
{
    return edgellm_fail(err, EDGELLM_ERR_NOMEM, "%s: out of memory", what ? what : "edgellm");
}
