/* Fuzz target for path handling (path.c): pi's expansion and resolution
 * rules and the UTF-8 sanitiser, fed client-controlled paths. Whatever
 * arrives, the result is absolute; a relative path (after expansion) comes
 * out normalised, with no ".", ".." or empty component (an absolute one is
 * returned as given, as pi does); the sanitiser's output is valid UTF-8.
 * Host, test-only. */
#include "agent/tools/path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_normalised(const char *p)
{
    if (!p)
        return;
    if (p[0] != '/')
        abort();
    for (const char *c = p; *c; c++) {
        if (c[0] != '/')
            continue;
        /* "//", "/./" and "/../" never survive; "/" alone is fine. */
        if (c[1] == '/' || (c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
            (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0')))
            abort();
        if (c[1] == '\0' && c != p)
            abort(); /* no trailing slash */
    }
}

static bool valid_utf8(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!n || i + n > len)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        }
        i += n;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > TOOL_PATH_MAX * 2)
        return 0;
    size_t clean_len;
    char *clean = utf8_sanitize((const char *)data, size, &clean_len);
    if (clean && !valid_utf8((const unsigned char *)clean, clean_len))
        abort();
    if (utf8_incomplete_tail((const char *)data, size) > 3)
        abort();
    if (clean) {
        struct tool_env env = {.cwd = "/work/ws", .home = "/home/u", .tmpdir = "/tmp"};
        char *expanded = tool_expand_path(clean, &env);
        char *resolved = tool_resolve_path(clean, &env);
        if (resolved && resolved[0] != '/')
            abort();
        if (expanded && expanded[0] != '/')
            check_normalised(resolved);
        free(expanded);
        free(resolved);
    }
    free(clean);
    return 0;
}
