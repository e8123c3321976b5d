/* The grep tool's output (grep.c): its growing buffers, the output lines
 * as pi formats them (a match with its context lines, truncated lines) and
 * rg's error lines. Sandbox (cordon-agent) or host context. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "agent/tools/grep-internal.h"
#include "agent/tools/args.h"
#include "agent/tools/js.h"
#include "agent/tools/ignore.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/rxsyntax.h"
#include "agent/tools/truncate.h"
#include "agent/tools/walk.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

void mb_append(struct membuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n >= SIZE_MAX / 4 - b->len) {
        b->failed = true;
        return;
    }
    size_t need = b->len + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void mb_printf(struct membuf *b, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    mb_append(b, s, (size_t)n);
    free(s);
}

void file_lines_clear(struct file_lines *fl)
{
    free(fl->text);
    free(fl->starts);
    free(fl->lens);
    *fl = (struct file_lines){0};
}

bool utf8_valid(const char *s, size_t len)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    utf8proc_ssize_t left = (utf8proc_ssize_t)len;
    while (left > 0) {
        if (*p < 0x80) {
            p++;
            left--;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
        if (n <= 0)
            return false;
        p += n;
        left -= n;
    }
    return true;
}

/* truncateLine(): the first 500 UTF-16 units, then "... [truncated]". */
void append_truncated_line(struct grep_state *g, const char *s, size_t len)
{
    size_t units = utf16_length(s, len);
    if (units <= TRUNCATE_GREP_LINE_MAX) {
        mb_append(&g->out, s, len);
        return;
    }
    g->lines_truncated = true;
    size_t pos = 0, used = 0;
    while (pos < len) {
        unsigned char c = (unsigned char)s[pos];
        size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        size_t u = n == 4 ? 2 : 1;
        if (used + u > TRUNCATE_GREP_LINE_MAX || pos + n > len)
            break;
        used += u;
        pos += n;
    }
    mb_append(&g->out, s, pos);
    mb_append(&g->out, "... [truncated]", 15);
}

void begin_output_line(struct grep_state *g)
{
    if (g->have_output_line)
        mb_append(&g->out, "\n", 1);
    g->have_output_line = true;
}

static int split_context_lines(struct file_lines *fl, struct membuf *raw_in);

int load_context_lines(struct grep_state *g)
{
    if (g->lines_loaded)
        return 0;
    g->lines_loaded = true;
    struct file_lines *fl = &g->lines;
    struct membuf raw = {0};
    if (g->file_data) {
        /* The copy the search ran over: the same bytes, not reopened. */
        mb_append(&raw, g->file_data, g->file_data_len);
        return split_context_lines(fl, &raw);
    }
    /* An approved host call reads the context from the file it searched,
     * by fd: a path reopened could be another file by now. */
    _cleanup_close_ int fd = -1;
    if (!g->pinned) {
        fd = open(g->file_abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0 && errno == ELOOP)
            fd = open(g->file_abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    }
    if (fd < 0 && !g->pinned) {
        fl->unreadable = true;
        return 0;
    }
    char buf[GREP_CHUNK];
    for (off_t at = 0;;) {
        ssize_t n =
            g->pinned ? pread(g->file_fd, buf, sizeof(buf), at) : read(fd, buf, sizeof(buf));
        if (g->pinned && n < 0 && errno != EINTR) {
            fl->unreadable = true; /* not seekable: no context */
            free(raw.data);
            return 0;
        }
        if (n > 0)
            at += n;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        mb_append(&raw, buf, (size_t)n);
        if (raw.failed || raw.len >= GREP_CONTEXT_FILE_MAX)
            break;
    }
    return split_context_lines(fl, &raw);
}

/* The lines of raw (taken over and freed) as pi splits them. */
static int split_context_lines(struct file_lines *fl, struct membuf *raw_in)
{
    struct membuf raw = *raw_in;
    *raw_in = (struct membuf){0};
    if (raw.failed) {
        free(raw.data);
        return -1;
    }
    size_t text_len = 0;
    fl->text = utf8_sanitize(raw.data ? raw.data : "", raw.len, &text_len);
    free(raw.data);
    if (!fl->text)
        return -1;
    size_t cap = 64;
    fl->starts = malloc(cap * sizeof(size_t));
    fl->lens = malloc(cap * sizeof(size_t));
    if (!fl->starts || !fl->lens)
        return -1;
    size_t start = 0;
    for (size_t i = 0;; i++) {
        bool end = i >= text_len;
        if (!end && fl->text[i] != '\n' && fl->text[i] != '\r')
            continue;
        if (fl->count == cap) {
            cap *= 2;
            size_t *s = realloc(fl->starts, cap * sizeof(size_t));
            if (!s)
                return -1;
            fl->starts = s;
            size_t *l = realloc(fl->lens, cap * sizeof(size_t));
            if (!l)
                return -1;
            fl->lens = l;
        }
        fl->starts[fl->count] = start;
        fl->lens[fl->count] = i - start;
        fl->count++;
        if (end)
            break;
        if (fl->text[i] == '\r' && i + 1 < text_len && fl->text[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    return 0;
}

/* formatBlock(): the match line with `context` lines around it, from the
 * file as pi reads it. */
int format_block(struct grep_state *g, double line_number)
{
    if (load_context_lines(g) < 0)
        return -1;
    struct file_lines *fl = &g->lines;
    if (fl->unreadable || fl->count == 0) {
        begin_output_line(g);
        mb_printf(&g->out, "%s:%.0f: (unable to read file)", g->file_display, line_number);
        return 0;
    }
    double start = g->context > 0 ? fmax(1, line_number - g->context) : line_number;
    double end = g->context > 0 ? fmin((double)fl->count, line_number + g->context) : line_number;
    for (double cur = start; cur <= end; cur++) {
        const char *text = "";
        size_t len = 0;
        if (cur == floor(cur) && cur >= 1 && cur <= (double)fl->count) {
            size_t idx = (size_t)cur - 1;
            text = fl->text + fl->starts[idx];
            len = fl->lens[idx];
        }
        char num[64];
        js_number_string(cur, num, sizeof(num));
        begin_output_line(g);
        mb_printf(&g->out, "%s%c%s%c ", g->file_display, cur == line_number ? ':' : '-', num,
                  cur == line_number ? ':' : '-');
        append_truncated_line(g, text, len);
    }
    return 0;
}

void record_error(struct grep_state *g, const char *path, int errnum)
{
    if (g->errors.len > GREP_ERRORS_MAX)
        return;
    if (g->errors.len)
        mb_append(&g->errors, "\n", 1);
    mb_printf(&g->errors, "%s: %s (os error %d)", path, strerror(errnum), errnum);
}

void grep_dir_error(void *ctx, const char *path, int errnum)
{
    struct grep_state *g = ctx;
    if (g->errors.len > GREP_ERRORS_MAX)
        return;
    if (g->errors.len)
        mb_append(&g->errors, "\n", 1);
    mb_printf(&g->errors, "%s: IO error for operation on %s: %s (os error %d)", path, path,
              strerror(errnum), errnum);
}
