/* Glob patterns as ripgrep and fd understand them (the Rust globset crate):
 * `*`, `?`, `[...]` classes, `{a,b}` alternatives, `\` escapes and `**`
 * path components. A glob is translated to an anchored PCRE2 pattern and
 * matched against a whole string; gitignore rules (ignore.c) are built on
 * top. Pure functions of their input, so a fuzzer can drive compile and
 * match directly. Sandbox or host context. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

enum tool_glob_flags {
    /* `*` and `?` never match '/' (globset's literal_separator; gitignore and
     * fd --glob use it). */
    TOOL_GLOB_LITERAL_SEPARATOR = 1 << 0,
    TOOL_GLOB_CASE_INSENSITIVE = 1 << 1,
};

struct tool_glob;

/* Compiles pattern[0..len). On a syntax error (dangling '\', unclosed class or
 * brace) returns <0 with err describing it; *out is untouched on failure. */
int tool_glob_compile(const char *pattern, size_t len, unsigned flags, struct tool_glob **out,
                      struct cordon_error *err);
/* Whole-string match. A match that exceeds PCRE2's match limit counts as no
 * match, so hostile patterns cannot stall a walk. */
bool tool_glob_match(const struct tool_glob *glob, const char *subject, size_t len);
/* The same answer from the compiled pattern alone, without the shortcut that
 * refuses a subject not ending with the pattern's plain characters (for the
 * test that holds the two equal). */
bool tool_glob_match_pattern(const struct tool_glob *glob, const char *subject, size_t len);
void tool_glob_free(struct tool_glob *glob);

/* The PCRE2 source a glob translates to (for tests and diagnostics);
 * malloc'd, NULL on error. */
char *tool_glob_to_regex(const char *pattern, size_t len, unsigned flags, struct cordon_error *err);
