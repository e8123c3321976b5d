/* Tool result helpers. Sandbox (agent) or host context. */
#include "agent/tools/tool.h"
#include "agent/tools/js.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tool_result_clear(struct tool_result *res)
{
    if (!res)
        return;
    json_decref(res->content);
    json_decref(res->details);
    res->content = NULL;
    res->details = NULL;
    res->is_error = false;
}

int tool_result_text(struct tool_result *res, const char *text, json_t *details)
{
    tool_result_clear(res);
    res->content = json_array();
    json_array_append_new(res->content,
                          json_pack("{s:s, s:s%}", "type", "text", "text", text, strlen(text)));
    res->details = details;
    res->is_error = false;
    return 0;
}

int tool_result_listing(struct tool_result *res, const char *content, size_t len,
                        const char *notice, size_t notice_len, json_t *details)
{
    char *text = NULL;
    size_t text_len = len;
    if (notice_len > 0)
        text_len += notice_len + 4; /* "\n\n[" and "]" */
    text = malloc(text_len + 1);
    if (!text || !details) {
        free(text);
        json_decref(details);
        return tool_result_error(res, "out of memory");
    }
    memcpy(text, content, len);
    if (notice_len > 0) {
        memcpy(text + len, "\n\n[", 3);
        memcpy(text + len + 3, notice, notice_len);
        text[text_len - 1] = ']';
    }
    text[text_len] = '\0';
    if (json_object_size(details) == 0) {
        json_decref(details);
        details = NULL;
    }
    int r = tool_result_text_len(res, text, text_len, details);
    free(text);
    return r < 0 ? tool_result_error(res, "out of memory") : 0;
}

int tool_result_error(struct tool_result *res, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    /* pi's agent loop turns a thrown error into details: {}. */
    tool_result_text(res, n < 0 ? "out of memory" : msg, json_object());
    res->is_error = true;
    free(msg);
    return 0;
}

/* jansson writes control characters as \u001B, JSON.stringify as \u001b;
 * results must be pi's bytes, so the hex digits are lowered in place. */
static void json_lower_unicode_escapes(char *json)
{
    for (char *p = json; *p; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'u') {
            for (int i = 2; i < 6 && p[i]; i++)
                if (p[i] >= 'A' && p[i] <= 'F')
                    p[i] = (char)(p[i] - 'A' + 'a');
        }
        if (p[1])
            p++;
    }
}

char *tool_result_to_json(const struct tool_result *res)
{
    json_t *obj = json_object();
    json_object_set(obj, "content", res->content ? res->content : json_array());
    if (res->details)
        json_object_set(obj, "details", res->details);
    json_object_set_new(obj, "isError", json_boolean(res->is_error));
    char *out = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (out)
        json_lower_unicode_escapes(out);
    return out;
}
