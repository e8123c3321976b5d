/* The grep tool's search of one file (grep.c): read in ripgrep's chunks,
 * binary detection, the multi-line block search and the per-line match.
 * Sandbox (cordon-agent) or host context. */
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

/* One line (without its '\n'); returns 1 when the match limit stops the
 * search. */
static int search_line(struct grep_state *g, const char *line, size_t len, size_t line_number)
{
    int rc = pcre2_match(g->re, (PCRE2_SPTR)line, len, 0, 0, g->md, g->mctx);
    if (rc < 0)
        return 0;
    g->match_count++;
    /* rg reports a path that is not UTF-8 as bytes; pi then skips the match
     * (it still counts). */
    if (g->file_display) {
        bool valid = utf8_valid(line, len);
        if (g->context == 0 && valid) {
            begin_output_line(g);
            mb_printf(&g->out, "%s:%zu: ", g->file_display, line_number);
            /* pi drops every '\r' from the line. */
            size_t start = 0;
            struct membuf clean = {0};
            for (size_t i = 0; i <= len; i++) {
                if (i == len || line[i] == '\r') {
                    mb_append(&clean, line + start, i - start);
                    start = i + 1;
                }
            }
            append_truncated_line(g, clean.data ? clean.data : "", clean.len);
            bool failed = clean.failed;
            free(clean.data);
            if (failed)
                return -1;
        } else if (format_block(g, (double)line_number) < 0) {
            return -1;
        }
    }
    if (g->out.failed)
        return -1;
    if (g->out.len > GREP_OUTPUT_MAX)
        g->output_overflow = true;
    if (g->match_count >= g->limit) {
        g->limit_reached = true;
        return 1;
    }
    return g->output_overflow ? 1 : 0;
}

/* The whole lines in [p, end) go through the multi-line pattern at once.
 * Returns where line-by-line searching must resume: the end of those lines
 * when nothing matched, else the start of the line holding the first match
 * (a match spanning lines is a false alarm the per-line search clears).
 * *checked_to: how far the answer holds (after the first matching line). */
static const char *block_search(struct grep_state *g, const char *p, const char *end,
                                const char **checked_to)
{
    const char *last_nl = memrchr(p, '\n', (size_t)(end - p));
    if (!last_nl) {
        *checked_to = end;
        return p;
    }
    size_t len = (size_t)(last_nl + 1 - p);
    int rc = pcre2_match(g->block_re, (PCRE2_SPTR)p, len, 0, 0, g->block_md, g->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) {
        *checked_to = last_nl + 1;
        return last_nl + 1;
    }
    if (rc < 0) { /* a limit: let every line be matched on its own */
        *checked_to = last_nl + 1;
        return p;
    }
    const char *at = p + pcre2_get_ovector_pointer(g->block_md)[0];
    if (at > last_nl)
        at = last_nl;
    const char *line_start = at > p ? memrchr(p, '\n', (size_t)(at - p)) : NULL;
    const char *line_end = memchr(at, '\n', (size_t)(last_nl + 1 - at));
    *checked_to = line_end + 1;
    return line_start ? line_start + 1 : p;
}

/* What a search reads: an open file, or a file a prefilter worker read
 * whole (data), handed out in the same pieces read() would return. */
struct search_src {
    int fd;
    const char *data;
    size_t len, off;
};

static ssize_t src_read(struct search_src *src, char *buf, size_t want)
{
    if (!src->data)
        return read(src->fd, buf, want);
    size_t n = src->len - src->off < want ? src->len - src->off : want;
    memcpy(buf, src->data + src->off, n);
    src->off += n;
    return (ssize_t)n;
}

/* Searches one file line by line. quit_on_nul: ripgrep's binary
 * detection for files found by the walk. Returns 1 to stop everything. */
static int search_src(struct grep_state *g, struct search_src *src, bool quit_on_nul,
                      size_t read_max)
{
    _cleanup_free_ char *chunk = malloc(GREP_CHUNK);
    struct membuf line = {0};
    if (!chunk)
        return -1;
    size_t line_number = 1, total = 0;
    bool line_clipped = false;
    int ret = 0;
    bool binary = false;
    for (;;) {
        /* rg's 64 KiB buffer keeps the unfinished line and reads only what
         * fits after it; its NUL check covers exactly what one read added.
         * (For lines longer than the buffer rg grows it; here the reads
         * stay 64 KiB, so binary detection there can differ.) */
        size_t want = line.len < GREP_CHUNK ? GREP_CHUNK - line.len : GREP_CHUNK;
        ssize_t n = src_read(src, chunk, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n < 0) {
            /* rg reports the failed read and goes on with other files. */
            record_error(g, g->file_abs, errno);
            break;
        }
        if (n == 0)
            break;
        total += (size_t)n;
        if (quit_on_nul && memchr(chunk, '\0', (size_t)n)) {
            binary = true;
            break;
        }
        const char *p = chunk, *end = chunk + n;
        const char *checked_to = chunk; /* the block search decided up to here */
        while (p < end) {
            if (g->block_re && line.len == 0 && p >= checked_to) {
                const char *skip_to = block_search(g, p, end, &checked_to);
                for (const char *q = p; q < skip_to && (q = memchr(q, '\n', (size_t)(skip_to - q)));
                     q++)
                    line_number++;
                p = skip_to;
                if (p >= end)
                    break;
            }
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (!line_clipped) {
                size_t room = GREP_LINE_MAX - line.len;
                mb_append(&line, p, take < room ? take : room);
                line_clipped = take >= room;
            }
            if (line.failed) {
                ret = -1;
                goto out;
            }
            if (!nl)
                break;
            int r = search_line(g, line.data ? line.data : "", line.len, line_number);
            if (r != 0) {
                ret = r;
                goto out;
            }
            line.len = 0;
            line_clipped = false;
            line_number++;
            p = nl + 1;
        }
        if (total >= read_max)
            break;
    }
    /* A last line without '\n' (not when binary data stopped the read). */
    if (line.len > 0 && !binary)
        ret = search_line(g, line.data, line.len, line_number);
out:
    free(line.data);
    return ret;
}

int search_opened(struct grep_state *g, int fd, const char *abs, const char *display,
                  bool explicit_path);

int search_file(struct grep_state *g, int dirfd, const char *name, const char *abs,
                const char *display, bool explicit_path)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    _cleanup_close_ int fd = openat(dirfd, name, flags | (explicit_path ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        record_error(g, abs, errno);
        return 0;
    }
    return search_opened(g, fd, abs, display, explicit_path);
}

int search_opened(struct grep_state *g, int fd, const char *abs, const char *display,
                  bool explicit_path)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        record_error(g, abs, errno);
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        return 0;
    /* Termination whatever the file does: devices and pseudo-files that say
     * size 0 (/proc/self/pagemap) are read GREP_SPECIAL_READ_MAX far, a file
     * growing under us (a live log) up to that much past its size. */
    size_t read_max = GREP_SPECIAL_READ_MAX;
    if (S_ISREG(st.st_mode) && st.st_size > 0)
        read_max = (size_t)st.st_size + GREP_SPECIAL_READ_MAX;
    g->file_abs = abs;
    g->file_display = display;
    g->file_fd = fd;
    g->lines_loaded = false;
    struct search_src src = {.fd = fd};
    int r = search_src(g, &src, !explicit_path, read_max);
    g->file_fd = -1;
    file_lines_clear(&g->lines);
    g->lines_loaded = false;
    return r;
}

int search_buffer(struct grep_state *g, const char *data, size_t len, const char *abs,
                  const char *display)
{
    g->file_abs = abs;
    g->file_display = display;
    g->file_fd = -1;
    g->file_data = data;
    g->file_data_len = len;
    g->lines_loaded = false;
    struct search_src src = {.fd = -1, .data = data, .len = len};
    int r = search_src(g, &src, true, len + 1);
    g->file_data = NULL;
    g->file_data_len = 0;
    file_lines_clear(&g->lines);
    g->lines_loaded = false;
    return r;
}
