/* Error helpers (docs/errors.md). Any process context; error_set_raw is safe
 * between clone() and exec. */
#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int error_set(struct cordon_error *err, int errnum, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    if (n < 0)
        err->message[0] = '\0';
    size_t len = strnlen(err->message, sizeof(err->message));
    if (errnum != 0 && len < sizeof(err->message) - 1)
        snprintf(err->message + len, sizeof(err->message) - len, ": %s", strerror(errnum));
    err->errnum = errnum;
    return -1;
}

static size_t append_raw(char *dst, size_t pos, size_t cap, const char *src)
{
    while (src && *src && pos + 1 < cap)
        dst[pos++] = *src++;
    dst[pos] = '\0';
    return pos;
}

int error_prefix(struct cordon_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[CORDON_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char old[CORDON_ERROR_MAX];
    memcpy(old, err->message, sizeof(old));
    old[sizeof(old) - 1] = '\0';
    size_t pos = append_raw(err->message, 0, sizeof(err->message), prefix);
    pos = append_raw(err->message, pos, sizeof(err->message), ": ");
    append_raw(err->message, pos, sizeof(err->message), old);
    return -1;
}

int error_set_raw(struct cordon_error *err, int errnum, const char *step, const char *path)
{
    if (!err)
        return -1;
    size_t pos = 0;
    err->message[0] = '\0';
    pos = append_raw(err->message, pos, sizeof(err->message), step);
    if (path) {
        pos = append_raw(err->message, pos, sizeof(err->message), ": ");
        pos = append_raw(err->message, pos, sizeof(err->message), path);
    }
    if (errnum) {
        pos = append_raw(err->message, pos, sizeof(err->message), ": ");
        /* strerrorname_np/strerrordesc_np read static tables: no locale, no
         * allocation, so they are usable after clone(). */
        const char *desc = strerrordesc_np(errnum);
        const char *name = strerrorname_np(errnum);
        pos = append_raw(err->message, pos, sizeof(err->message), desc ? desc : "unknown error");
        if (name) {
            pos = append_raw(err->message, pos, sizeof(err->message), " (");
            pos = append_raw(err->message, pos, sizeof(err->message), name);
            pos = append_raw(err->message, pos, sizeof(err->message), ")");
        }
    }
    err->errnum = errnum;
    return -1;
}

void error_clear(struct cordon_error *err)
{
    if (!err)
        return;
    err->errnum = 0;
    err->message[0] = '\0';
}

#define DOCTOR_HINT "; run `cordon doctor`"

int error_hint_doctor(struct cordon_error *err)
{
    if (!err || strstr(err->message, DOCTOR_HINT))
        return -1;
    size_t len = strnlen(err->message, sizeof(err->message));
    append_raw(err->message, len, sizeof(err->message), DOCTOR_HINT);
    return -1;
}
