/* pi's read tool (read.js): text with offset/limit and pi's notices, or an
 * image (jpeg, png, gif, webp, sniffed from content) as base64. Text is
 * streamed in bounded chunks: only the part that can be shown is kept, the
 * rest is counted, so a huge file costs time, never memory. Sandbox
 * (cordon-agent) or host context. */
#include "agent/tools/args.h"
#include "agent/tools/fileio.h"
#include "agent/tools/image.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/truncate.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define READ_CHUNK (64 * 1024)

struct read_scan {
    size_t start, end; /* selected lines [start, end); end SIZE_MAX = to EOF */
    size_t line;       /* current line index */
    size_t line_bytes; /* bytes of the current line so far */
    size_t first_selected_bytes;
    size_t selected_bytes; /* bytes of the selected content, newlines between lines */
    char *keep;            /* the first READ_KEEP bytes of the selected content */
    size_t keep_len;
};

#define READ_KEEP (TRUNCATE_MAX_BYTES + 1)

static void read_keep(struct read_scan *s, const char *p, size_t n)
{
    size_t room = READ_KEEP - s->keep_len;
    if (n > room)
        n = room;
    memcpy(s->keep + s->keep_len, p, n);
    s->keep_len += n;
}

static void read_feed(struct read_scan *s, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        bool selected = s->line >= s->start && s->line < s->end;
        if (selected) {
            read_keep(s, p, seg);
            s->selected_bytes += seg;
            if (s->line == s->start)
                s->first_selected_bytes += seg;
        }
        s->line_bytes += seg;
        if (!nl)
            return;
        /* The newline joins this line to the next, if that one is selected too. */
        if (s->line + 1 >= s->start && s->line + 1 < s->end && s->line >= s->start) {
            read_keep(s, "\n", 1);
            s->selected_bytes++;
        }
        s->line++;
        s->line_bytes = 0;
        p += seg + 1;
        n -= seg + 1;
    }
}

/* A character or block device may never end (/dev/zero, /dev/urandom):
 * Node would read 2 GiB before giving up; cordon stops much earlier
 * (security case 10: bounded, never hangs). */
#define READ_DEVICE_MAX ((size_t)64 << 20)

static int read_text(int fd, const char *path_arg, bool has_offset, double offset, bool has_limit,
                     double limit, size_t max_bytes, struct tool_result *res)
{
    size_t start = 0;
    if (has_offset && offset != 0)
        start = offset - 1 > 0 ? (size_t)(offset - 1) : 0;
    size_t end = SIZE_MAX;
    if (has_limit)
        end = limit > 0 ? start + (size_t)limit : start;

    _cleanup_free_ char *keep = malloc(READ_KEEP);
    _cleanup_free_ char *buf = malloc(READ_CHUNK + 4);
    if (!keep || !buf)
        return tool_result_error(res, "out of memory");
    struct read_scan s = {.start = start, .end = end, .keep = keep};
    size_t carry = 0;
    char msg[8192];
    size_t total = 0;
    for (;;) {
        if (total >= max_bytes)
            return tool_result_error(res,
                                     "File size (more than %zu bytes) is greater than the %zu MiB "
                                     "cordon reads from a device",
                                     total, max_bytes >> 20);
        ssize_t n = read(fd, buf + carry, READ_CHUNK);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return tool_result_error(res, "%s",
                                     tool_node_error(errno, "read", "", msg, sizeof(msg)));
        }
        total += (size_t)n;
        size_t have = carry + (size_t)n;
        size_t tail = n == 0 ? 0 : utf8_incomplete_tail(buf, have);
        size_t clean_len;
        _cleanup_free_ char *clean = utf8_sanitize(buf, have - tail, &clean_len);
        if (!clean)
            return tool_result_error(res, "out of memory");
        read_feed(&s, clean, clean_len);
        memmove(buf, buf + have - tail, tail);
        carry = tail;
        if (n == 0)
            break;
    }
    size_t total_lines = s.line + 1;
    if (start >= total_lines) {
        char num[64];
        snprintf(num, sizeof(num), "%.17g", offset);
        return tool_result_error(res, "Offset %s is beyond end of file (%zu lines total)", num,
                                 total_lines);
    }
    size_t sel_end = end < total_lines ? end : total_lines;

    struct truncation t;
    truncate_head(s.keep, s.keep_len, 0, 0, &t);
    /* The kept prefix decides which lines fit; totals are the whole selection's. */
    t.total_lines = sel_end > start ? sel_end - start : 1;
    t.total_bytes = s.selected_bytes;

    char size[32], limit_size[32];
    format_size(TRUNCATE_MAX_BYTES, limit_size, sizeof(limit_size));
    /* The notice is formatted apart from the content: content may hold NULs. */
    _cleanup_free_ char *notice = NULL;
    json_t *details = NULL;
    size_t first_display = start + 1;
    bool show_content = true;
    int r;
    if (t.first_line_exceeds_limit) {
        show_content = false;
        r = asprintf(&notice,
                     "[Line %zu is %s, exceeds %s limit. Use bash: sed -n '%zup' %s | head -c %d]",
                     first_display, format_size(s.first_selected_bytes, size, sizeof(size)),
                     limit_size, first_display, path_arg, TRUNCATE_MAX_BYTES);
        details = json_pack("{s:o}", "truncation", truncation_to_json(&t));
    } else if (t.truncated) {
        size_t last = first_display + t.output_lines - 1;
        if (t.truncated_by == TRUNCATE_BY_LINES)
            r = asprintf(&notice, "\n\n[Showing lines %zu-%zu of %zu. Use offset=%zu to continue.]",
                         first_display, last, total_lines, last + 1);
        else
            r = asprintf(&notice,
                         "\n\n[Showing lines %zu-%zu of %zu (%s limit). Use offset=%zu to "
                         "continue.]",
                         first_display, last, total_lines, limit_size, last + 1);
        details = json_pack("{s:o}", "truncation", truncation_to_json(&t));
    } else if (has_limit && sel_end < total_lines) {
        r = asprintf(&notice, "\n\n[%zu more lines in file. Use offset=%zu to continue.]",
                     total_lines - sel_end, sel_end + 1);
    } else {
        r = asprintf(&notice, "%s", "");
    }
    if (r < 0) {
        json_decref(details);
        return tool_result_error(res, "out of memory");
    }
    size_t content_len = show_content ? t.content_len : 0;
    _cleanup_free_ char *text = malloc(content_len + (size_t)r + 1);
    if (!text) {
        json_decref(details);
        return tool_result_error(res, "out of memory");
    }
    memcpy(text, t.content, content_len);
    memcpy(text + content_len, notice, (size_t)r + 1);
    tool_result_text(res, "", details);
    json_object_set_new(json_array_get(res->content, 0), "text",
                        json_stringn(text, content_len + (size_t)r));
    return 0;
}

/* Arguments as pi checks them; 0 when valid, else res holds the error. */
static int read_args(json_t *args, const char **path, double *offset, int *has_offset,
                     double *limit, int *has_limit, struct tool_result *res)
{
    size_t path_len = 0;
    if (tool_arg_string("read", args, "path", true, path, &path_len, res) < 0 ||
        (*has_offset = tool_arg_number("read", args, "offset", offset, res)) < 0 ||
        (*has_limit = tool_arg_number("read", args, "limit", limit, res)) < 0)
        return -1;
    if (strlen(*path) != path_len) {
        tool_result_error(res,
                          "The argument 'path' must be a string, Uint8Array, or URL "
                          "without null bytes. Received '%s\\x00...'",
                          *path);
        return -1;
    }
    return 0;
}

/* What was opened decides: no check-then-open race. */
static int read_opened(int fd, const char *abs_path, const char *path, double offset,
                       int has_offset, double limit, int has_limit, struct tool_result *res)
{
    char msg[8192];
    struct stat st;
    if (fstat(fd, &st) < 0)
        return tool_result_error(res, "%s",
                                 tool_node_error(errno, "access", abs_path, msg, sizeof(msg)));
    if (S_ISDIR(st.st_mode))
        return tool_result_error(res, "EISDIR: illegal operation on a directory, read");
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
        /* A FIFO or socket would block Node forever; cordon refuses. */
        return tool_result_error(res, "EINVAL: invalid argument, read");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);

    if (S_ISREG(st.st_mode)) {
        char head[IMAGE_SNIFF_BYTES];
        ssize_t n = pread(fd, head, sizeof(head), 0);
        const char *mime = n > 0 ? image_sniff_mime(head, (size_t)n) : NULL;
        if (mime)
            return image_read_result(fd, &st, mime, res);
    }
    return read_text(fd, path, has_offset > 0, offset, has_limit > 0, limit,
                     S_ISREG(st.st_mode) ? SIZE_MAX : READ_DEVICE_MAX, res);
}

int tool_read(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    const char *path = NULL;
    double offset = 0, limit = 0;
    int has_offset = 0, has_limit = 0;
    if (read_args(args, &path, &offset, &has_offset, &limit, &has_limit, res) < 0)
        return 0;
    _cleanup_free_ char *abs_path = tool_resolve_read_path(path, env);
    if (!abs_path)
        return tool_result_error(res, "out of memory");

    char msg[8192];
    msg[0] = '\0';
    /* O_NONBLOCK so a FIFO with no writer does not hang the call. An
     * approved host call opens exactly the approved file (pin.h). */
    const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    _cleanup_close_ int fd = env->pin
                                 ? tool_pin_open(env->pin, abs_path, flags, 0, msg, sizeof(msg))
                                 : open(abs_path, flags);
    if (fd < 0 && msg[0])
        return tool_result_error(res, "%s", msg);
    if (fd < 0)
        return tool_result_error(res, "%s",
                                 tool_node_error(errno, "access", abs_path, msg, sizeof(msg)));
    return read_opened(fd, abs_path, path, offset, has_offset, limit, has_limit, res);
}

int tool_read_fd(int fd, const char *abs_path, json_t *args, struct tool_result *res)
{
    const char *path = NULL;
    double offset = 0, limit = 0;
    int has_offset = 0, has_limit = 0;
    if (read_args(args, &path, &offset, &has_offset, &limit, &has_limit, res) < 0)
        return 0;
    return read_opened(fd, abs_path, path, offset, has_offset, limit, has_limit, res);
}
