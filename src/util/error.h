/* The error contract (docs/errors.md): a fallible function returns int, < 0 on
 * failure, and fills a caller-provided struct cordon_error. The message is a
 * fixed-size buffer so it can be filled after clone() (no allocation) and sent
 * whole across a sync fd or into a JSON-RPC error. Any process context. */
#pragma once

#include <stddef.h>

#define CORDON_ERROR_MAX 1024

/* Exit statuses of cordon itself, distinct from the sandboxed command's. */
enum {
    CORDON_EXIT_FAILURE = 125,     /* cordon could not set up or run the sandbox */
    CORDON_EXIT_CANNOT_EXEC = 126, /* the command exists but could not be executed */
    CORDON_EXIT_NOT_FOUND = 127,   /* the command was not found inside the sandbox */
    CORDON_EXIT_USAGE = 2,         /* bad usage of a command that has no status of its own */
};

struct cordon_error {
    int errnum;                     /* errno of the root cause, 0 if none */
    char message[CORDON_ERROR_MAX]; /* "step: path: reason" */
};

/* Fill err and return -1. errnum may be 0; when non-zero, ": strerror" is appended. */
int error_set(struct cordon_error *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix err's message with context ("context: old message"); returns -1. */
int error_prefix(struct cordon_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Async-signal-safe variant for code between clone() and exec: no stdio, no
 * allocation. Builds "step: path: strerror(errnum)" with a fixed table. */
int error_set_raw(struct cordon_error *err, int errnum, const char *step, const char *path);

void error_clear(struct cordon_error *err);

/* Ends err's message with "; run `cordon doctor`" (once): for failures that
 * come from a host feature cordon needs (docs/errors.md "Missing host
 * features"). Returns -1. */
int error_hint_doctor(struct cordon_error *err);
