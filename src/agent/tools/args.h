/* Small helpers shared by find, grep and bash for reading pi's tool
 * arguments and printing numbers the way JavaScript does. Sandbox or host
 * context. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* String(x) for a JavaScript number: "5", "0.5", "1e+21". */
const char *js_number_string(double value, char *buf, size_t buflen);

struct tool_result;
/* tool_result_text() for text that may hold NUL bytes (a file's content);
 * details is stolen. Returns 0, or -1 when out of memory. */
int tool_result_text_len(struct tool_result *res, const char *text, size_t len, json_t *details);

/* A JavaScript number as JSON.stringify writes it (integers without ".0"). */
json_t *js_number_json(double value);

/* args[key] as a number. Returns 1 and sets *out when present and numeric
 * (or a numeric string, as pi's argument coercion accepts), 0 when absent or
 * null, -1 when present with another type. */
int tool_arg_number(json_t *args, const char *key, double *out);
/* pi's argument validation failure (pi-ai validateToolArguments):
 * "Validation failed for tool "<tool>":\n  - <field>: <message>\n\n
 * Received arguments:\n<JSON.stringify(args, null, 2)>". Returns 0. */
int tool_validation_error(struct tool_result *res, const char *tool, const char *field,
                          const char *message, json_t *args);
/* The same for a missing required string; or, when present, its value with
 * TypeBox's Convert applied (numbers and booleans become strings). *out
 * points into args or into `buf`. Returns 1 when usable, 0 after filling
 * res with the validation error. */
int tool_arg_required_string(struct tool_result *res, const char *tool, json_t *args,
                             const char *key, const char **out, char *buf, size_t buflen);

/* args[key] as a string: 1 present, 0 absent/null, -1 wrong type. */
int tool_arg_string(json_t *args, const char *key, const char **out);
/* args[key] as a boolean (JavaScript truthiness for the non-boolean values
 * coercion lets through): 1 present, 0 absent. */
int tool_arg_bool(json_t *args, const char *key, bool *out);
