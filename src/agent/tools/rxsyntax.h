/* ripgrep's default regex engine is Rust's regex crate; grep runs PCRE2.
 * This pass reads a pattern with the Rust crate's syntax rules (as of
 * ripgrep 13) so that the mistakes models commonly make produce ripgrep's
 * own error text ("unclosed group", "unrecognized escape sequence" for \/,
 * backreferences, look-around, a literal newline ...), and rewrites the
 * few escapes PCRE2 spells differently (\uXXXX, \UXXXXXXXX). Sandbox or
 * host context; pure. */
#pragma once

#include <stddef.h>

/* Returns NULL and sets *pcre2_pattern (malloc'd) when the pattern is
 * acceptable, or returns ripgrep's error message (malloc'd, as rg prints it
 * to stderr, trimmed). literal: --fixed-strings (only newlines matter). */
char *rx_check_rust_syntax(const char *pattern, int literal, char **pcre2_pattern);
