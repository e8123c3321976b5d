/* TAP output for unit tests. */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

void tap_bail(const char *fmt, ...)
{
    va_list ap;
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(1);
}

void tap_launch_env(const char *home, const char *etc_dir)
{
    const char *agent = getenv("CORDON_AGENT");
    if (!agent)
        tap_bail("CORDON_AGENT is not set");
    setenv("CORDON_TEST_AGENT", agent, 1);
    setenv("CORDON_ETC_DIR", etc_dir, 1);
    setenv("HOME", home, 1);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("XDG_STATE_HOME");
}
