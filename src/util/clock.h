/* Milliseconds on CLOCK_MONOTONIC, for deadlines and timeouts. Any
 * context (inline: also between fork and exec, nothing allocated). */
#pragma once

#include <time.h>

static inline long long clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
