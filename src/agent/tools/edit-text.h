/* The edit tool's pure text steps (pi's edit.js): line endings normalised
 * and restored, the matches of every edit found, checked and spliced in.
 * No I/O; malloc'd results. Sandbox or host context. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Where one edit replaces: [index, index + length) of the base content. */
struct edit_match {
    size_t index, edit, length;
    const char *new_text;
    size_t new_len;
};

/* normalizeToLF: CRLF and lone CR become LF; NULL when out of memory. */
char *edit_to_lf(const char *s, size_t len, size_t *out_len);

/* Where old_text stands in base (exactly, else in fuzzy-normalised form
 * when base is itself normalised, as pi matches). *base_fuzzy caches
 * base's normalised form across calls (freed by the caller). Returns 1 with
 * *index, *length and *occurrences (how often its normalised form stands in
 * the normalised base, 1 when unknown); 0 when it is not found. */
int edit_locate(const char *base, size_t base_len, const char *old_text, size_t old_len,
                char **base_fuzzy, size_t *base_fuzzy_len, size_t *index, size_t *length,
                size_t *occurrences);

/* Sorts the matches by position; returns the position i >= 1 of the first
 * match that overlaps match i-1, or 0 when none does. */
size_t edit_sort_matches(struct edit_match *matches, size_t count);

/* base with every (sorted, disjoint) match replaced; NULL when out of
 * memory. */
char *edit_splice(const char *base, size_t base_len, const struct edit_match *matches, size_t count,
                  size_t *out_len);

/* text (LF line endings) as the file had it: a UTF-8 BOM first when bom, each
 * LF as CRLF when crlf. NULL when out of memory. */
char *edit_restore_endings(const char *text, size_t len, bool bom, bool crlf, size_t *out_len);
