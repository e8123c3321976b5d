/* The edit tool's matching and diff (pi's edit-diff.js): fuzzy
 * normalisation, and a line diff that reproduces the npm `diff` package's
 * diffLines (Myers with its tie-breaking) rendered as pi's numbered diff with
 * 4 lines of context. Sandbox or host context. */
#pragma once

#include <stddef.h>

/* normalizeForFuzzyMatch(): NFKC, trailing whitespace per line trimmed,
 * smart quotes, dashes and special spaces folded to ASCII. malloc'd. */
char *edit_fuzzy_normalize(const char *text, size_t len, size_t *out_len);
/* generateDiffString(old, new, 4): malloc'd diff; *first_changed_line is 0
 * when nothing changed. */
char *edit_diff_string(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
                       size_t *first_changed_line);
