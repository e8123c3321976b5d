/* Argument checks shaped like pi's agent loop (typebox Value.Convert, then
 * validation): strings given as numbers are converted, numbers given as
 * numeric strings are converted, and a failure is an error result with pi's
 * "Validation failed for tool ..." text. Sandbox or host context. */
#pragma once

#include "agent/tools/tool.h"

#include <stdbool.h>

/* Each returns 1 when the key is present and valid (value in *out), 0 when
 * it is absent and optional, -1 when res now holds the validation error.
 * Strings are borrowed from args (converted numbers are stored back into
 * args so they stay alive). */
int tool_arg_string(const char *tool, json_t *args, const char *key, bool required,
                    const char **out, size_t *out_len, struct tool_result *res);
int tool_arg_number(const char *tool, json_t *args, const char *key, double *out,
                    struct tool_result *res);
/* Sets res to pi's validation failure for one property. */
int tool_arg_fail(const char *tool, json_t *args, const char *key, const char *problem,
                  struct tool_result *res);
