/* pi-shaped argument conversion and validation errors (args.h). Sandbox or
 * host context. */
#include "agent/tools/args.h"
#include "util/cleanup.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tool_arg_fail(const char *tool, json_t *args, const char *key, const char *problem,
                  struct tool_result *res)
{
    /* JSON.stringify(args, null, 2); jansson's indented form is the same for
     * the flat objects tools receive. */
    _cleanup_free_ char *received = json_dumps(args, JSON_INDENT(2) | JSON_ENCODE_ANY);
    tool_result_error(res,
                      "Validation failed for tool \"%s\":\n  - %s: %s\n\nReceived arguments:\n%s",
                      tool, key, problem, received ? received : "{}");
    return -1;
}

int tool_arg_string(const char *tool, json_t *args, const char *key, bool required,
                    const char **out, size_t *out_len, struct tool_result *res)
{
    json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;
    if (!v) {
        if (!required)
            return 0;
        char problem[128];
        snprintf(problem, sizeof(problem), "must have required properties %s", key);
        return tool_arg_fail(tool, args, key, problem, res);
    }
    if (json_is_integer(v) || json_is_true(v) || json_is_false(v)) {
        char buf[64];
        if (json_is_integer(v))
            snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else
            snprintf(buf, sizeof(buf), "%s", json_is_true(v) ? "true" : "false");
        json_object_set_new(args, key, json_string(buf));
        v = json_object_get(args, key);
    }
    if (!json_is_string(v))
        return tool_arg_fail(tool, args, key, "must be string", res);
    *out = json_string_value(v);
    if (out_len)
        *out_len = json_string_length(v);
    return 1;
}

int tool_arg_number(const char *tool, json_t *args, const char *key, double *out,
                    struct tool_result *res)
{
    json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;
    if (!v)
        return 0;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end = NULL;
        errno = 0;
        double d = strtod(s, &end);
        if (*s && end && *end == '\0' && errno == 0 && isfinite(d)) {
            *out = d;
            return 1;
        }
    }
    if (json_is_true(v) || json_is_false(v)) {
        *out = json_is_true(v) ? 1 : 0;
        return 1;
    }
    return tool_arg_fail(tool, args, key, "must be number", res);
}
