/* status.c - formatting of lf_err_t messages. */
#include "common/status.h"

#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

lf_code_t lf_err_set(lf_err_t *err, lf_code_t code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        if (vsnprintf(err->msg, sizeof err->msg, fmt, ap) >= (int)sizeof err->msg) /* cut: at a character */
            err->msg[utf8_trim_partial(err->msg, strlen(err->msg))] = '\0';
        va_end(ap);
    }
    return code;
}

lf_code_t lf_err_prefix(lf_err_t *err, const char *fmt, ...)
{
    if (!err)
        return LF_ERR_INTERNAL;
    char prefix[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    /* "prefix: old", truncated to the message buffer */
    size_t cap = sizeof err->msg - 1, n = 0;
    for (const char *parts[] = {prefix, ": ", old}, **p = parts; p < parts + 3; p++)
        for (const char *c = *p; *c && n < cap; c++)
            err->msg[n++] = *c;
    err->msg[utf8_trim_partial(err->msg, n)] = '\0';
    return err->code;
}

const char *lf_code_name(lf_code_t code)
{
    static const char *const names[] = {
        "ok", "invalid", "io", "format", "unsupported", "nomem",
        "not_found", "auth", "overload", "context", "cancelled", "internal",
    };
    if ((unsigned)code < sizeof names / sizeof names[0])
        return names[code];
    return "unknown";
}
