/* pi's truncation rules (truncate.js) over UTF-8 byte strings. Head and tail
 * results are contiguous slices of the input, so nothing is copied. Sandbox
 * (cordon-agent) or host context. */
#include "agent/tools/truncate.h"

#include <stdio.h>
#include <string.h>

static size_t count_lines(const char *s, size_t len)
{
    size_t lines = 1;
    for (const char *p = s; (p = memchr(p, '\n', len - (size_t)(p - s))); p++)
        lines++;
    return lines;
}

/* Fills out for content kept whole: true when it fits both limits as it
 * is, false when it must be cut (out->truncated then set). */
static bool truncation_fits(struct truncation *out, const char *content, size_t len,
                            size_t max_lines, size_t max_bytes)
{
    *out = (struct truncation){
        .content = content,
        .content_len = len,
        .truncated_by = TRUNCATE_BY_NONE,
        .total_lines = count_lines(content, len),
        .total_bytes = len,
        .max_lines = max_lines ? max_lines : TRUNCATE_MAX_LINES,
        .max_bytes = max_bytes ? max_bytes : TRUNCATE_MAX_BYTES,
    };
    out->output_lines = out->total_lines;
    out->output_bytes = len;
    out->truncated = out->total_lines > out->max_lines || len > out->max_bytes;
    return !out->truncated;
}

/* The cut made: LINES whole lines (or the partial last one), BYTES of
 * content. "bytes" stands only when a line did not fit before the line
 * limit was reached, as in pi. */
static void truncation_finish(struct truncation *out, enum truncate_by by, size_t lines,
                              size_t bytes)
{
    if (lines >= out->max_lines && bytes <= out->max_bytes)
        by = TRUNCATE_BY_LINES;
    out->truncated_by = by;
    out->content_len = bytes;
    out->output_lines = lines;
    out->output_bytes = bytes;
}

void truncate_head(const char *content, size_t len, size_t max_lines, size_t max_bytes,
                   struct truncation *out)
{
    if (truncation_fits(out, content, len, max_lines, max_bytes))
        return;
    const char *nl = memchr(content, '\n', len);
    size_t first_len = nl ? (size_t)(nl - content) : len;
    if (first_len > out->max_bytes) {
        out->content_len = 0;
        out->truncated_by = TRUNCATE_BY_BYTES;
        out->output_lines = 0;
        out->output_bytes = 0;
        out->first_line_exceeds_limit = true;
        return;
    }

    /* Whole lines while both limits hold. */
    size_t lines = 0, bytes = 0, pos = 0;
    enum truncate_by by = TRUNCATE_BY_LINES;
    while (lines < out->total_lines && lines < out->max_lines) {
        const char *end = memchr(content + pos, '\n', len - pos);
        size_t line_len = end ? (size_t)(end - (content + pos)) : len - pos;
        size_t cost = line_len + (lines > 0 ? 1 : 0);
        if (bytes + cost > out->max_bytes) {
            by = TRUNCATE_BY_BYTES;
            break;
        }
        bytes += cost;
        lines++;
        pos += line_len + 1;
    }
    truncation_finish(out, by, lines, bytes);
}

void truncate_tail(const char *content, size_t len, size_t max_lines, size_t max_bytes,
                   struct truncation *out)
{
    if (truncation_fits(out, content, len, max_lines, max_bytes))
        return;
    /* The kept suffix is content[start, len), bytes long. */
    size_t lines = 0, bytes = 0, end = len;
    size_t start = len;
    enum truncate_by by = TRUNCATE_BY_LINES;
    while (lines < out->total_lines && lines < out->max_lines) {
        /* The line ending at `end` starts after the previous '\n'. */
        size_t line_start = end;
        while (line_start > 0 && content[line_start - 1] != '\n')
            line_start--;
        size_t line_len = end - line_start;
        size_t cost = line_len + (lines > 0 ? 1 : 0);
        if (bytes + cost > out->max_bytes) {
            by = TRUNCATE_BY_BYTES;
            if (lines == 0) {
                /* Keep the end of the over-long last line, starting on a
                 * character boundary. */
                size_t cut = end - out->max_bytes;
                while (cut < end && ((unsigned char)content[cut] & 0xc0) == 0x80)
                    cut++;
                start = cut;
                bytes = end - cut;
                lines = 1;
                out->last_line_partial = true;
            }
            break;
        }
        bytes += cost;
        lines++;
        start = line_start;
        if (line_start == 0)
            break;
        end = line_start - 1;
    }
    out->content = content + start;
    truncation_finish(out, by, lines, len - start);
}

const char *format_size(size_t bytes, char *buf, size_t buflen)
{
    /* toFixed(1) rounds the exact binary value half up; bytes / 1024 is
     * exact, so integer arithmetic gives the same digits. */
    unsigned long long b = bytes;
    if (b < 1024) {
        snprintf(buf, buflen, "%lluB", b);
    } else if (b < 1024ULL * 1024) {
        unsigned long long tenths = (b * 10 + 512) / 1024;
        snprintf(buf, buflen, "%llu.%lluKB", tenths / 10, tenths % 10);
    } else {
        unsigned long long unit = 1024ULL * 1024;
        unsigned long long tenths = (b * 10 + unit / 2) / unit;
        snprintf(buf, buflen, "%llu.%lluMB", tenths / 10, tenths % 10);
    }
    return buf;
}

json_t *truncation_to_json(const struct truncation *t)
{
    static const char *const by_names[] = {
        [TRUNCATE_BY_LINES] = "lines",
        [TRUNCATE_BY_BYTES] = "bytes",
    };
    json_t *by =
        t->truncated_by == TRUNCATE_BY_NONE ? json_null() : json_string(by_names[t->truncated_by]);
    return json_pack("{s:s%, s:b, s:o, s:I, s:I, s:I, s:I, s:b, s:b, s:I, s:I}", "content",
                     t->content, t->content_len, "truncated", t->truncated, "truncatedBy", by,
                     "totalLines", (json_int_t)t->total_lines, "totalBytes",
                     (json_int_t)t->total_bytes, "outputLines", (json_int_t)t->output_lines,
                     "outputBytes", (json_int_t)t->output_bytes, "lastLinePartial",
                     t->last_line_partial, "firstLineExceedsLimit", t->first_line_exceeds_limit,
                     "maxLines", (json_int_t)t->max_lines, "maxBytes", (json_int_t)t->max_bytes);
}
