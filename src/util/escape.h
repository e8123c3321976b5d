/* Text a person reads before approving something (cordon's host-execution
 * prompt): every character that does not show as itself is written as an
 * escape, so what is read is what runs. Any context; pure functions.
 *
 * Escaped, and counted:
 *   C0 controls and DEL            \x1b, \x7f (newline and tab too, unless
 *                                  TEXT_ESCAPE_KEEP_LAYOUT)
 *   invalid UTF-8, byte by byte    \xff
 *   C1 controls                    \u0085
 *   format characters (Cf): bidi embeddings, overrides and isolates,
 *     zero-width space/joiners, word joiner, invisible operators, BOM,
 *     U+061C, U+180E, tag characters ...      \u202e, \u{e0041}
 *   line and paragraph separators, every space other than U+0020 (U+00A0,
 *     U+2000-U+200A, U+3000 ...), Hangul fillers (U+115F, U+1160, U+3164,
 *     U+FFA0), other default-ignorable code points (variation selectors,
 *     U+034F, U+17B4/5), private-use, surrogate, noncharacter and
 *     unassigned code points
 * Code points above U+FFFF are written \u{XXXXX}. With TEXT_ESCAPE_BACKSLASH
 * a backslash is written "\\" (not counted), so that a literal "\u202e" in
 * plain text cannot pass for an escape; JSON text has its backslashes
 * doubled already. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEXT_ESCAPE_BACKSLASH   0x1u /* plain text: "\" becomes "\\" */
#define TEXT_ESCAPE_KEEP_LAYOUT 0x2u /* newline and tab pass, uncounted */

/* Whether code point cp is one that text_escape_visible() escapes. */
bool text_codepoint_hidden(uint32_t cp);

/* s (len bytes, any bytes) with every hidden character escaped; malloc'd and
 * NUL-terminated, NULL when out of memory (or len too large). *count (when
 * not NULL) is the number of characters and invalid bytes escaped. */
char *text_escape_visible(const char *s, size_t len, unsigned flags, size_t *count);

/* The count text_escape_visible() would give, without building the text. */
size_t text_count_hidden(const char *s, size_t len, unsigned flags);
