/* JavaScript-compatible formatting for find, grep and bash: numbers as
 * String(x) and JSON.stringify write them, TypeBox's boolean conversion, and
 * a text result that may contain NUL bytes. Sandbox or host context. */
#pragma once

#include "agent/tools/tool.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* String(x) for a JavaScript number: "5", "0.5", "1e+21". */
const char *js_number_string(double value, char *buf, size_t buflen);
/* A JavaScript number as JSON.stringify writes it (integers without ".0"). */
json_t *js_number_json(double value);
/* args[key] as a boolean after pi's conversion ("true"/"false" strings,
 * numbers by truthiness): 1 present, 0 absent or null. */
int js_arg_boolean(json_t *args, const char *key, bool *out);
/* tool_result_text() for text that may hold NUL bytes (a file's content);
 * details is stolen. Returns 0, or -1 when out of memory. */
int tool_result_text_len(struct tool_result *res, const char *text, size_t len, json_t *details);
