/* TAP output for unit tests. */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>

static int tap_count;
static int tap_failures;

bool tap_ok(bool passed, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tap_count++;
    printf("%s %d - ", passed ? "ok" : "not ok", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!passed) {
        tap_failures++;
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return passed;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
    va_list ap;
    tap_count++;
    printf("ok %d - ", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" # SKIP %s\n", reason);
    fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

int tap_done(void)
{
    printf("1..%d\n", tap_count);
    fflush(stdout);
    return tap_failures ? 1 : 0;
}
