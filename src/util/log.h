/* Diagnostics on stderr for the CLI and the supervisor. Never used by the
 * agent's protocol paths or between clone() and exec. Host context. */
#pragma once

#include <stdbool.h>

extern bool log_debug_enabled;

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Microseconds on CLOCK_MONOTONIC, for --debug timings. */
long long log_now_us(void);

/* The time now in UTC with milliseconds, "2026-11-29T15:05:25.123Z", as the
 * audit logs write it. */
#define LOG_UTC_LEN 32
void log_utc_now(char buf[LOG_UTC_LEN]);
