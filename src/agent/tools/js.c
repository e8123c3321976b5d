/* JavaScript-compatible formatting for the tools whose texts embed numbers
 * (find, grep, bash), plus a result builder for text holding NUL bytes.
 * Sandbox or host context. */
#include "agent/tools/js.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *js_number_string(double value, char *buf, size_t buflen)
{
    if (isnan(value)) {
        snprintf(buf, buflen, "NaN");
        return buf;
    }
    if (isinf(value)) {
        snprintf(buf, buflen, value < 0 ? "-Infinity" : "Infinity");
        return buf;
    }
    if (value == floor(value) && fabs(value) < 1e21) {
        snprintf(buf, buflen, "%.0f", value == 0 ? 0.0 : value);
        return buf;
    }
    /* Shortest representation that reads back as the same double. */
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, value);
        if (strtod(tmp, NULL) == value)
            break;
    }
    /* C writes 1e+21 as "1e+21" and 1e-7 as "1e-07"; JavaScript drops the
     * exponent's leading zeros. */
    char *e = strchr(tmp, 'e');
    if (e) {
        char sign = e[1];
        char *digits = e + 2;
        while (*digits == '0' && digits[1])
            digits++;
        char mant[64];
        snprintf(mant, sizeof(mant), "%.*s", (int)(e - tmp), tmp);
        snprintf(buf, buflen, "%se%c%s", mant, sign, digits);
        return buf;
    }
    snprintf(buf, buflen, "%s", tmp);
    return buf;
}

json_t *js_number_json(double value)
{
    if (value == floor(value) && fabs(value) < 9007199254740992.0)
        return json_integer((json_int_t)value);
    return json_real(value);
}

int tool_result_text_len(struct tool_result *res, const char *text, size_t len, json_t *details)
{
    tool_result_clear(res);
    res->content = json_array();
    json_t *part = json_pack("{s:s, s:s%}", "type", "text", "text", text, len);
    if (!res->content || !part || json_array_append_new(res->content, part) < 0) {
        json_decref(details);
        return -1;
    }
    res->details = details;
    res->is_error = false;
    return 0;
}

int js_arg_boolean(json_t *args, const char *key, bool *out)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_boolean(v))
        *out = json_is_true(v);
    else if (json_is_string(v))
        *out = strcmp(json_string_value(v), "true") == 0;
    else if (json_is_number(v))
        *out = json_number_value(v) != 0;
    else
        *out = true;
    return 1;
}
