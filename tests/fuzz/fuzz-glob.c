/* Fuzz target for the glob matcher and gitignore rule sets (glob.c,
 * ignore.c): whatever pattern, ignore file or path arrives, compiling and
 * matching must not crash, leak or stall. Input: one flag byte, then the
 * pattern (or ignore-file text) up to the first NUL, then subject paths
 * separated by '\n'. Flag bits: 1 literal separator, 2 case-insensitive,
 * 4 treat the pattern as ignore-file text, 8 subjects are directories,
 * 16 treat the pattern as an rg --glob override, 32 run the pattern
 * through grep's Rust regex syntax pass instead. Host, test-only. */
#include "agent/tools/glob.h"
#include "agent/tools/ignore.h"
#include "agent/tools/rxsyntax.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    unsigned flags = data[0];
    const char *rest = (const char *)data + 1;
    size_t rest_len = size - 1;
    const char *nul = memchr(rest, '\0', rest_len);
    size_t pattern_len = nul ? (size_t)(nul - rest) : rest_len;
    char *pattern = malloc(pattern_len + 1);
    if (!pattern)
        return 0;
    memcpy(pattern, rest, pattern_len);
    pattern[pattern_len] = '\0';

    if (flags & 32) {
        char *translated = NULL;
        free(rx_check_rust_syntax(pattern, flags & 1, &translated));
        free(translated);
        free(pattern);
        return 0;
    }
    struct tool_glob *glob = NULL;
    struct ignore_rules *rules = NULL;
    struct cordon_error err;
    if (flags & 16)
        rules = ignore_rules_parse_override(pattern, &err);
    else if (flags & 4)
        rules = ignore_rules_parse(pattern, pattern_len, 1000);
    else
        (void)tool_glob_compile(pattern, pattern_len, flags & 3, &glob, &err);

    size_t pos = nul ? pattern_len + 1 : rest_len;
    while (pos <= rest_len) {
        const char *start = rest + pos;
        const char *nl = memchr(start, '\n', rest_len - pos);
        size_t len = nl ? (size_t)(nl - start) : rest_len - pos;
        char *subject = strndup(start, len);
        if (subject) {
            if (glob)
                (void)tool_glob_match(glob, subject, strlen(subject));
            if (rules)
                (void)ignore_rules_match(rules, subject, flags & 8);
            free(subject);
        }
        pos += len + 1;
    }
    tool_glob_free(glob);
    ignore_rules_free(rules);
    free(pattern);
    return 0;
}
