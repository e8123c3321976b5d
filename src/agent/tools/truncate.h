/* pi's shared truncation rules (truncate.js): 2000 lines / 50KB, whichever
 * comes first; head truncation keeps whole lines from the start, tail
 * truncation keeps lines from the end. Sizes are UTF-8 bytes; lines are split
 * on '\n' (a trailing newline makes an empty last line). Sandbox or host. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TRUNCATE_MAX_LINES     2000
#define TRUNCATE_MAX_BYTES     (50 * 1024)
#define TRUNCATE_GREP_LINE_MAX 500 /* characters (UTF-16 units, as pi counts) */

enum truncate_by { TRUNCATE_BY_NONE, TRUNCATE_BY_LINES, TRUNCATE_BY_BYTES };

struct truncation {
    const char *content; /* points into the input (head) or at its tail; not owned */
    size_t content_len;  /* bytes of content */
    bool truncated;
    enum truncate_by truncated_by;
    size_t total_lines, total_bytes;
    size_t output_lines, output_bytes;
    bool last_line_partial;
    bool first_line_exceeds_limit;
    size_t max_lines, max_bytes;
};

/* truncateHead(content, {maxLines, maxBytes}); 0 means the default limit. */
void truncate_head(const char *content, size_t len, size_t max_lines, size_t max_bytes,
                   struct truncation *out);
/* truncateTail(...). When the last line alone exceeds max_bytes, content is
 * its tail cut at a UTF-8 character boundary (last_line_partial). */
void truncate_tail(const char *content, size_t len, size_t max_lines, size_t max_bytes,
                   struct truncation *out);

/* formatSize(): "NB" below 1024, else "X.YKB" / "X.YMB" (one decimal, JS
 * toFixed rounding). Writes into buf (at least 32 bytes). */
const char *format_size(size_t bytes, char *buf, size_t buflen);

/* The `truncation` object as pi puts it into details (its exact keys). */
json_t *truncation_to_json(const struct truncation *t);
