/* A minimal TAP producer for cordon's C unit tests (meson runs them with
 * protocol: 'tap'). The plan is printed at the end, so nobody counts by hand. */
#pragma once

#include <stdbool.h>

bool tap_ok(bool passed, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tap_skip(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the plan; returns the exit status for main(). */
int tap_done(void);
/* "Bail out!" with the message: the test cannot go on (its setup failed). */
void tap_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The environment launch_prepare reads, for a test that builds a launch in
 * a scratch place: the build's agent (CORDON_AGENT), HOME and the host-owned
 * policy directory (/etc/cordon) given, no XDG configuration or state
 * directory. */
void tap_launch_env(const char *home, const char *etc_dir);

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long _g = (got), _w = (want);                                                         \
        if (!tap_ok(_g == _w, __FILE__, __LINE__, __VA_ARGS__))                                    \
            tap_diag("  got %lld, want %lld", _g, _w);                                             \
    } while (0)
#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *_g = (got), *_w = (want);                                                      \
        bool _same = (_g && _w) ? strcmp(_g, _w) == 0 : _g == _w;                                  \
        if (!tap_ok(_same, __FILE__, __LINE__, __VA_ARGS__))                                       \
            tap_diag("  got \"%s\", want \"%s\"", _g ? _g : "(null)", _w ? _w : "(null)");         \
    } while (0)
