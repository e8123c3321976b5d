/* The seven tools' common interface. Runs inside the sandbox (in
 * cordon-agent), or on the host for an approved host call: the same code, so
 * results are identical in both places. Results are pi 0.73.1's bytes
 * (../shared/pi-tools.md). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tool_pin;

struct tool_env {
    const char *cwd;  /* absolute session cwd; relative paths resolve against it */
    const char *home; /* for "~" expansion */
    /* Directory for bash's full-output files (details.fullOutputPath). */
    const char *tmpdir;
    /* Environment for bash (NULL-terminated KEY=VALUE), already scrubbed. */
    char *const *bash_environ;
    /* An approved host call: what the user approved, pinned (pin.h). NULL
     * everywhere else. With it, the file tools open their path only through
     * the pin and bash starts in the pinned working directory. */
    const struct tool_pin *pin;
};

/* A tool's result: content is a JSON array of {type:"text",text} and
 * {type:"image",data,mimeType} parts; details is a JSON object or NULL
 * (pi's `details: undefined`). Both are owned by the result. */
struct tool_result {
    json_t *content;
    json_t *details;
    bool is_error;
};

void tool_result_clear(struct tool_result *res);
/* Sets res to an error with one text part. Returns 0 (an error *result* is not
 * a failure of the call machinery). */
int tool_result_error(struct tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets res to success with one text part and the given details (stolen). */
int tool_result_text(struct tool_result *res, const char *text, json_t *details);

/* The listing tools' result (ls, find, grep): CONTENT (LEN bytes, may hold
 * NUL), then "\n\n[NOTICE]" when NOTICE is not empty, as pi joins them;
 * DETAILS (stolen) is dropped when it is empty ({} becomes undefined). */
int tool_result_listing(struct tool_result *res, const char *content, size_t len,
                        const char *notice, size_t notice_len, json_t *details);

/* Serialise {content, details, isError} as cordon prints it. Caller frees. */
char *tool_result_to_json(const struct tool_result *res);
