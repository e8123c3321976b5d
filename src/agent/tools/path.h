/* pi's path rules (path-utils.js): a leading '@' is stripped, Unicode space
 * variants become ASCII spaces, "~" and "~/" expand to the home directory,
 * relative paths resolve against the session cwd (lexically, like Node's
 * path.resolve: "." and ".." collapsed, duplicate slashes removed). Sandbox
 * or host context. */
#pragma once

#include "agent/tools/tool.h"

#include <stddef.h>

/* Longest path accepted from a client; longer ones are an error result. */
#define TOOL_PATH_MAX 4096

/* expandPath(): returns a malloc'd string, or NULL on allocation failure. */
char *tool_expand_path(const char *path, const struct tool_env *env);
/* The absolute PATH lexically normalised as Node's path.resolve leaves it:
 * segments joined, "." dropped, ".." pops (never above "/"), no duplicate
 * or trailing slash. malloc'd; NULL on allocation failure. */
char *tool_normalize_path(const char *path);
/* resolveToCwd(): absolute, normalised; malloc'd; NULL on failure. */
char *tool_resolve_path(const char *path, const struct tool_env *env);
/* resolveReadPath(): resolveToCwd plus pi's fallbacks when the file does not
 * exist (narrow no-break space before AM/PM, NFD, curly apostrophe). */
char *tool_resolve_read_path(const char *path, const struct tool_env *env);

/* Replaces invalid UTF-8 with U+FFFD exactly as Node's Buffer#toString("utf8")
 * does (WHATWG decoder: maximal subparts). Returns a malloc'd, NUL-terminated
 * string and its length in *out_len; NULL on allocation failure. */
char *utf8_sanitize(const char *buf, size_t len, size_t *out_len);
/* Bytes at the end of buf that start a valid but unfinished UTF-8 sequence
 * (0-3): a streaming reader keeps them for the next chunk so a character cut
 * by a chunk boundary is not replaced. */
size_t utf8_incomplete_tail(const char *buf, size_t len);
/* Length of a UTF-8 string in UTF-16 code units (JavaScript's .length). */
size_t utf16_length(const char *s, size_t len);
