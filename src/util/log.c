/* stderr diagnostics, prefixed "cordon:". Host context. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

bool log_debug_enabled = false;

static void log_vprint(const char *level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void log_vprint(const char *level, const char *fmt, va_list ap)
{
    char line[2048];
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    if (n < 0)
        return;
    fprintf(stderr, "cordon: %s%s\n", level, line);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vprint("warning: ", fmt, ap);
    va_end(ap);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vprint("error: ", fmt, ap);
    va_end(ap);
}

void log_debug(const char *fmt, ...)
{
    if (!log_debug_enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vprint("debug: ", fmt, ap);
    va_end(ap);
}

long long log_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void log_utc_now(char buf[LOG_UTC_LEN])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, LOG_UTC_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, LOG_UTC_LEN - n, ".%03ldZ", ts.tv_nsec / 1000000);
}
