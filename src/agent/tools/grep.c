/* pi's grep tool (grep.js): the matches `rg --json --line-number
 * --color=never --hidden [--ignore-case] [--fixed-strings] [--glob G] --
 * pattern path` reports, formatted as pi formats them. Patterns are PCRE2
 * (UTF, UCP) standing in for ripgrep's Rust regex engine; files are walked
 * in sorted order (rg --sort path) because rg's parallel order is not
 * defined. Sandbox (cordon-agent) or host context. */
#define PCRE2_CODE_UNIT_WIDTH 8
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

#define GREP_DEFAULT_LIMIT  100
#define JS_MAX_SAFE_INTEGER 9007199254740991ULL
/* ripgrep's read buffer: binary detection looks at each newly read chunk,
 * so matches before the chunk holding the first NUL are still reported. */
#define GREP_CHUNK (64u * 1024)
/* Bounds for hostile input. A longer line is matched on its first
 * GREP_LINE_MAX bytes only; a special file (/dev/zero) is read this far. */
#define GREP_LINE_MAX         (16u << 20)
#define GREP_SPECIAL_READ_MAX (16u << 20)
/* Context lines need the whole file, as pi reads it. */
#define GREP_CONTEXT_FILE_MAX (64u << 20)
#define GREP_OUTPUT_MAX       (64u << 20)
#define GREP_ERRORS_MAX       (64u << 10)
#define GREP_MATCH_LIMIT      10000000

struct membuf {
    char *data;
    size_t len, cap;
    bool failed;
};

static void mb_append(struct membuf *b, const char *s, size_t n)
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

static void mb_printf(struct membuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mb_printf(struct membuf *b, const char *fmt, ...)
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

/* The lines of a file as pi splits it for context: decoded as UTF-8 with
 * replacement, then split on \r\n, \r and \n. */
struct file_lines {
    char *text;
    size_t *starts, *lens;
    size_t count;
    bool unreadable;
};

static void file_lines_clear(struct file_lines *fl)
{
    free(fl->text);
    free(fl->starts);
    free(fl->lens);
    *fl = (struct file_lines){0};
}

struct grep_state {
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    /* The same pattern in multi-line mode, run once over many whole lines:
     * lines before its first match cannot match on their own (see
     * block_search_safe), so most lines never reach the per-line match.
     * NULL when the pattern could tell the two apart. */
    pcre2_code *block_re;
    pcre2_match_data *block_md;
    /* Bytes every match contains (a literal, or a regex's leading run of
     * plain characters); the prefilter skips a file without them. */
    char *needle;
    size_t needle_len;
    size_t needle_rare; /* the index of its byte rarest in text (needle_find) */
    double context;
    double limit;
    double match_count;
    bool limit_reached;
    bool lines_truncated;
    bool is_directory;
    const char *search_path;
    struct membuf out; /* formatted output lines, "\n"-joined */
    bool have_output_line;
    struct membuf errors; /* rg's stderr for files it could not read */
    bool output_overflow;
    /* The file being searched. */
    const char *file_abs;
    const char *file_display;
    int file_fd; /* the open file being searched */
    bool pinned; /* an approved host call (pin.h): nothing is reopened by path */
    struct file_lines lines;
    bool lines_loaded;
    struct prefilter *pf; /* the parallel prefilter, when it runs */
};

static bool utf8_valid(const char *s, size_t len)
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
static void append_truncated_line(struct grep_state *g, const char *s, size_t len)
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

static void begin_output_line(struct grep_state *g)
{
    if (g->have_output_line)
        mb_append(&g->out, "\n", 1);
    g->have_output_line = true;
}

static int load_context_lines(struct grep_state *g)
{
    if (g->lines_loaded)
        return 0;
    g->lines_loaded = true;
    struct file_lines *fl = &g->lines;
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
    struct membuf raw = {0};
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
static int format_block(struct grep_state *g, double line_number)
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

static void record_error(struct grep_state *g, const char *path, int errnum)
{
    if (g->errors.len > GREP_ERRORS_MAX)
        return;
    if (g->errors.len)
        mb_append(&g->errors, "\n", 1);
    mb_printf(&g->errors, "%s: %s (os error %d)", path, strerror(errnum), errnum);
}

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

/* Searches one open file line by line. quit_on_nul: ripgrep's binary
 * detection for files found by the walk. Returns 1 to stop everything. */
static int search_fd(struct grep_state *g, int fd, bool quit_on_nul, size_t read_max)
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
        ssize_t n = read(fd, chunk, want);
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

static int search_opened(struct grep_state *g, int fd, const char *abs, const char *display,
                         bool explicit_path);

static int search_file(struct grep_state *g, int dirfd, const char *name, const char *abs,
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

static int search_opened(struct grep_state *g, int fd, const char *abs, const char *display,
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
    int r = search_fd(g, fd, !explicit_path, read_max);
    g->file_fd = -1;
    file_lines_clear(&g->lines);
    g->lines_loaded = false;
    return r;
}

static void grep_dir_error(void *ctx, const char *path, int errnum)
{
    struct grep_state *g = ctx;
    if (g->errors.len > GREP_ERRORS_MAX)
        return;
    if (g->errors.len)
        mb_append(&g->errors, "\n", 1);
    mb_printf(&g->errors, "%s: IO error for operation on %s: %s (os error %d)", path, path,
              strerror(errnum), errnum);
}

/* The parallel prefilter (a walk of a directory with a pattern the block
 * search can take). The walk and every search that can report a match stay
 * on the calling thread, in the walk's order: output, limits and errors are
 * exactly those of the sequential search. Worker threads only read files
 * ahead of it and run the multi-line pattern over each whole file; a file
 * where it finds nothing has no matching line (block_search_safe), so the
 * calling thread skips it without opening it. Anything else (a match, a NUL,
 * an error, a file too large or not regular) is searched as before. */
#define PF_WORKERS_MAX 8
#define PF_WINDOW      4096       /* files walked ahead of the search */
#define PF_FILE_MAX    (4u << 20) /* larger files are left to the search */

enum pf_state { PF_PENDING, PF_RUNNING, PF_CLEAN, PF_SEARCH, PF_DIR_ERROR };

struct pf_job {
    char *abs;     /* the path as the walk gave it */
    int dir_errno; /* PF_DIR_ERROR: a directory the walk could not open */
    size_t rel_at; /* offset of the path relative to the walk root in abs */
    char *display;
    enum pf_state state;
};

struct prefilter {
    struct grep_state *g;
    int root_fd; /* the walk root: files are opened below it, never by path */
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    struct pf_job *jobs; /* jobs[i - base] for job number i */
    size_t base, count, cap;
    size_t head; /* the next job the calling thread searches */
    size_t next; /* the next job a worker looks at */
    bool closing;
    pthread_t threads[PF_WORKERS_MAX];
    int nthreads;
};

static struct pf_job *pf_job(struct prefilter *pf, size_t i)
{
    return &pf->jobs[i - pf->base];
}

/* Opens a walked file below the walk root: no symlink anywhere, as the walk
 * itself never follows one. */
static int pf_open(int root_fd, const char *rel)
{
    return fs_openat2(root_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* Bytes roughly from the most to the least common in source code and
 * prose; a byte not listed is rarer than all of them. */
static const char common_bytes[] = " e\nt\tarisonlcdu_pm(),;.hf=g\"-b>/y*0w1:xv'{}k[]2<#3&+";

/* The needle's byte least likely in text (the last of the rarest). */
static size_t rare_index(const char *needle, size_t len)
{
    size_t best = 0, best_rank = 0;
    for (size_t i = 0; i < len; i++) {
        const char *at = needle[i] ? strchr(common_bytes, needle[i]) : NULL;
        size_t rank = at ? (size_t)(at - common_bytes) + 1 : sizeof(common_bytes);
        if (rank >= best_rank) {
            best = i;
            best_rank = rank;
        }
    }
    return best;
}

/* memmem through memchr on the needle's rare byte (many times faster than
 * memmem where that byte is rare, as in most files); memmem takes the rest
 * of the subject when the byte turns out common in it. */
static const char *needle_find(const char *hay, size_t len, const char *needle, size_t nlen,
                               size_t rare)
{
    if (nlen == 0 || len < nlen)
        return nlen == 0 ? hay : NULL;
    const unsigned char c = (unsigned char)needle[rare];
    const char *p = hay + rare;
    const char *last = hay + (len - nlen) + rare; /* the last place the rare byte may be */
    size_t misses = 0;
    while (p <= last) {
        const char *q = memchr(p, c, (size_t)(last - p) + 1);
        if (!q)
            return NULL;
        if (memcmp(q - rare, needle, nlen) == 0)
            return q - rare;
        p = q + 1;
        /* more than one false candidate per 256 bytes: memmem does better */
        if (++misses > 32 && misses > (size_t)(p - hay) / 256) {
            const char *from = p - rare;
            return memmem(from, (size_t)(hay + len - from), needle, nlen);
        }
    }
    return NULL;
}

/* PF_CLEAN when the whole file was read and holds no match and no NUL. */
static enum pf_state pf_check(struct prefilter *pf, const char *rel, char **buf, size_t *cap,
                              pcre2_match_data *md)
{
    _cleanup_close_ int fd = pf_open(pf->root_fd, rel);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > PF_FILE_MAX)
        return PF_SEARCH;
    size_t want = (size_t)st.st_size + 1; /* one more: a file that grew */
    if (want > *cap) {
        char *p = realloc(*buf, want);
        if (!p)
            return PF_SEARCH;
        *buf = p;
        *cap = want;
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, *buf + len, want - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return PF_SEARCH;
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == want)
            return PF_SEARCH; /* larger than it said */
    }
    /* Without the needle there is no match, binary or not (the search
     * would print nothing for it either way): one pass over the file. */
    if (pf->g->needle_len &&
        !needle_find(*buf, len, pf->g->needle, pf->g->needle_len, pf->g->needle_rare))
        return PF_CLEAN;
    if (memchr(*buf, '\0', len))
        return PF_SEARCH;
    int rc = pcre2_match(pf->g->block_re, (PCRE2_SPTR)*buf, len, 0, 0, md, pf->g->mctx);
    return rc == PCRE2_ERROR_NOMATCH ? PF_CLEAN : PF_SEARCH;
}

static void *pf_worker(void *arg)
{
    struct prefilter *pf = arg;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    char *buf = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&pf->mu);
    for (;;) {
        if (pf->next < pf->head)
            pf->next = pf->head;
        while (pf->next < pf->count && pf_job(pf, pf->next)->state != PF_PENDING)
            pf->next++;
        if (pf->next >= pf->count) {
            if (pf->closing)
                break;
            pthread_cond_wait(&pf->work_cv, &pf->mu);
            continue;
        }
        size_t i = pf->next++;
        struct pf_job *job = pf_job(pf, i);
        job->state = PF_RUNNING;
        const char *rel = job->abs + job->rel_at; /* not moved while running */
        pthread_mutex_unlock(&pf->mu);
        enum pf_state st = md ? pf_check(pf, rel, &buf, &cap, md) : PF_SEARCH;
        pthread_mutex_lock(&pf->mu);
        pf_job(pf, i)->state = st;
        if (i == pf->head)
            pthread_cond_signal(&pf->done_cv);
    }
    pthread_mutex_unlock(&pf->mu);
    free(buf);
    pcre2_match_data_free(md);
    return NULL;
}

/* Searches the job at the head (the calling thread). Returns what
 * search_opened returns. */
static int pf_search(struct prefilter *pf, struct pf_job *job)
{
    struct grep_state *g = pf->g;
    _cleanup_close_ int fd = pf_open(pf->root_fd, job->abs + job->rel_at);
    if (fd < 0) {
        record_error(g, job->abs, errno);
        return 0;
    }
    return search_opened(g, fd, job->abs, job->display, false);
}

/* Searches jobs at the head in order while they are decided; with wait,
 * until every job is done. The calling thread takes a job no worker has
 * started. Returns <0 (out of memory), 0, or 1 (stop: the limit). */
static int pf_drain(struct prefilter *pf, bool wait)
{
    pthread_mutex_lock(&pf->mu);
    int ret = 0;
    while (pf->head < pf->count) {
        struct pf_job *job = pf_job(pf, pf->head);
        bool behind = wait || pf->count - pf->head >= PF_WINDOW;
        if (job->state == PF_RUNNING || (job->state == PF_PENDING && !behind)) {
            if (!behind)
                break; /* walk on: the workers catch up */
            pthread_cond_wait(&pf->done_cv, &pf->mu);
            continue;
        }
        enum pf_state state = job->state; /* pending: searched here */
        struct pf_job taken = *job;
        *job = (struct pf_job){.state = PF_SEARCH};
        pf->head++;
        pthread_mutex_unlock(&pf->mu);
        int r = 0;
        if (state == PF_DIR_ERROR)
            grep_dir_error(pf->g, taken.abs, taken.dir_errno);
        else if (state != PF_CLEAN)
            r = pf_search(pf, &taken);
        free(taken.abs);
        free(taken.display);
        pthread_mutex_lock(&pf->mu);
        if (r != 0) {
            ret = r;
            break;
        }
    }
    pthread_mutex_unlock(&pf->mu);
    return ret;
}

/* Queues a walked file (e) or a directory error (path, dir_errno). */
static int pf_push(struct prefilter *pf, const struct walk_entry *e, char *display,
                   const char *path, int dir_errno)
{
    char *abs = strdup(e ? e->path : path);
    if (!abs) {
        free(display);
        return -1;
    }
    pthread_mutex_lock(&pf->mu);
    if (pf->head > PF_WINDOW && pf->head - pf->base >= (pf->count - pf->base) / 2) {
        /* Drop the searched jobs from the front. */
        memmove(pf->jobs, pf_job(pf, pf->head), (pf->count - pf->head) * sizeof(*pf->jobs));
        pf->base = pf->head;
    }
    if (pf->count - pf->base == pf->cap) {
        size_t cap = pf->cap ? pf->cap * 2 : 256;
        struct pf_job *p = realloc(pf->jobs, cap * sizeof(*p));
        if (!p) {
            pthread_mutex_unlock(&pf->mu);
            free(abs);
            free(display);
            return -1;
        }
        pf->jobs = p;
        pf->cap = cap;
    }
    pf->jobs[pf->count - pf->base] = (struct pf_job){
        .abs = abs,
        .dir_errno = dir_errno,
        .rel_at = e ? (size_t)(e->rel - e->path) : 0,
        .display = display,
        .state = e ? PF_PENDING : PF_DIR_ERROR,
    };
    pf->count++;
    pthread_cond_signal(&pf->work_cv);
    pthread_mutex_unlock(&pf->mu);
    return 0;
}

static int pf_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) < 0)
        return 1;
    return CPU_COUNT(&set);
}

/* Starts the workers; false when there would be none (one CPU, no threads
 * allowed by the limits): the caller searches sequentially. */
static bool pf_start(struct prefilter *pf, struct grep_state *g, int root_fd)
{
    int want = pf_cpus();
    if (want < 2 || !g->block_re)
        return false;
    if (want > PF_WORKERS_MAX)
        want = PF_WORKERS_MAX;
    *pf = (struct prefilter){.g = g, .root_fd = root_fd};
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->work_cv, NULL);
    pthread_cond_init(&pf->done_cv, NULL);
    while (pf->nthreads < want &&
           pthread_create(&pf->threads[pf->nthreads], NULL, pf_worker, pf) == 0)
        pf->nthreads++;
    if (pf->nthreads > 0)
        return true;
    pthread_cond_destroy(&pf->done_cv);
    pthread_cond_destroy(&pf->work_cv);
    pthread_mutex_destroy(&pf->mu);
    return false;
}

static void pf_stop(struct prefilter *pf)
{
    pthread_mutex_lock(&pf->mu);
    pf->closing = true;
    pf->head = pf->count; /* workers start nothing more */
    pthread_cond_broadcast(&pf->work_cv);
    pthread_mutex_unlock(&pf->mu);
    for (int i = 0; i < pf->nthreads; i++)
        pthread_join(pf->threads[i], NULL);
    for (size_t i = pf->base; i < pf->count; i++) {
        free(pf_job(pf, i)->abs);
        free(pf_job(pf, i)->display);
    }
    free(pf->jobs);
    pthread_cond_destroy(&pf->done_cv);
    pthread_cond_destroy(&pf->work_cv);
    pthread_mutex_destroy(&pf->mu);
}

static void grep_walk_error(void *ctx, const char *path, int errnum)
{
    struct grep_state *g = ctx;
    if (!g->pf) {
        grep_dir_error(g, path, errnum);
        return;
    }
    /* In the walk's order among the searches; memory exhaustion here
     * loses the message, as the error list's own bound does. */
    (void)pf_push(g->pf, NULL, NULL, path, errnum);
}

static int grep_visit(void *ctx, const struct walk_entry *e, struct cordon_error *err)
{
    struct grep_state *g = ctx;
    if (e->type != WALK_FILE)
        return 0;
    _cleanup_free_ char *display = NULL;
    if (utf8_valid(e->path, strlen(e->path))) {
        /* path.relative(searchPath, file), or the basename when it would
         * climb out (it never does here, but a name may start with ".."). */
        const char *rel = e->rel;
        display = strdup(strncmp(rel, "..", 2) == 0 ? e->name : rel);
        if (!display)
            return error_set(err, ENOMEM, "grep");
    }
    if (g->pf) {
        if (pf_push(g->pf, e, TAKE_PTR(display), NULL, 0) < 0)
            return error_set(err, ENOMEM, "grep");
        int r = pf_drain(g->pf, false);
        return r < 0 ? error_set(err, ENOMEM, "grep") : r;
    }
    int r = search_file(g, e->dirfd, e->name, e->path, display, false);
    if (r < 0)
        return error_set(err, ENOMEM, "grep");
    return r;
}

/* Whether a match of the pattern within one line is also found when the
 * line sits among others in a PCRE2_MULTILINE subject. True unless the
 * pattern looks past the line's ends: \A \z \Z \G, look-around,
 * inline flags that could turn multi-line off, verbs such as (*CR). The
 * test is textual and errs towards "unsafe"; \b and \B are safe because
 * a line's neighbour '\n' is a non-word character like the subject's edge. */
static bool block_search_safe(const char *pattern)
{
    for (const char *s = pattern; *s; s++) {
        if (s[0] == '\\' && s[1] && strchr("AzZG", s[1]))
            return false;
        if (s[0] == '(' && s[1] == '*')
            return false;
        if (s[0] == '(' && s[1] == '?') {
            const char *f = s + 2;
            while (*f && strchr("isxU-", *f))
                f++;
            if (*f != ':' && *f != ')')
                return false;
        }
    }
    return true;
}

/* What every match of the pattern contains: a literal itself; for a regex
 * without alternation, its leading run of characters that only match
 * themselves, less the last one when a quantifier follows it. NULL when
 * there is none (case-insensitive, or the pattern starts otherwise). */
static char *required_bytes(const char *pattern, bool literal, bool ignore_case, size_t *len)
{
    *len = 0;
    if (ignore_case)
        return NULL;
    if (literal) {
        *len = strlen(pattern);
        return *len ? strdup(pattern) : NULL;
    }
    if (strchr(pattern, '|'))
        return NULL;
    size_t n = 0;
    while (pattern[n] &&
           (((unsigned char)pattern[n] < 0x80 && isalnum((unsigned char)pattern[n])) ||
            strchr("_ -:/,=\"';<>@!%&~`", pattern[n])))
        n++;
    if (n > 0 && pattern[n] && strchr("*?+{", pattern[n]))
        n--;
    if (n == 0)
        return NULL;
    *len = n;
    return strndup(pattern, n);
}

static int compile_pattern(struct grep_state *g, const char *pattern, bool ignore_case,
                           bool literal, struct tool_result *res)
{
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    if (ignore_case)
        options |= PCRE2_CASELESS;
    /* PCRE2 refuses UCP with LITERAL; it only changes classes anyway. */
    options |= literal ? PCRE2_LITERAL : PCRE2_UCP;
    /* ripgrep's error texts for what its Rust engine rejects, and the
     * pattern spelled for PCRE2. */
    _cleanup_free_ char *translated = NULL;
    char *rust_error = rx_check_rust_syntax(pattern, literal, &translated);
    if (rust_error) {
        tool_result_error(res, "%s", rust_error);
        free(rust_error);
        return -1;
    }
    int code;
    PCRE2_SIZE offset;
    g->re =
        pcre2_compile((PCRE2_SPTR)translated, PCRE2_ZERO_TERMINATED, options, &code, &offset, NULL);
    if (!g->re) {
        /* Rust accepted what PCRE2 does not: rg's layout, PCRE2's words. */
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        tool_result_error(res, "regex parse error:\n    %s\n    ^\nerror: %s", pattern,
                          (const char *)msg);
        return -1;
    }
    (void)pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE);
    if (literal || block_search_safe(translated)) {
        /* PCRE2 refuses MULTILINE with LITERAL, and a literal has no
         * anchors for it to change. */
        g->block_re =
            pcre2_compile((PCRE2_SPTR)translated, PCRE2_ZERO_TERMINATED,
                          options | (literal ? 0 : PCRE2_MULTILINE), &code, &offset, NULL);
        g->block_md = g->block_re ? pcre2_match_data_create(1, NULL) : NULL;
        if (g->block_md) {
            (void)pcre2_jit_compile(g->block_re, PCRE2_JIT_COMPLETE);
        } else {
            pcre2_code_free(g->block_re);
            g->block_re = NULL;
        }
    }
    g->needle = required_bytes(translated, literal, ignore_case, &g->needle_len);
    if (!g->needle)
        g->needle_len = 0;
    g->needle_rare = rare_index(g->needle ? g->needle : "", g->needle_len);
    g->md = pcre2_match_data_create_from_pattern(g->re, NULL);
    g->mctx = pcre2_match_context_create(NULL);
    if (!g->md || !g->mctx) {
        tool_result_error(res, "out of memory");
        return -1;
    }
    pcre2_set_match_limit(g->mctx, GREP_MATCH_LIMIT);
    return 0;
}

static int build_result(struct grep_state *g, struct tool_result *res)
{
    if (g->errors.len > 0 && !g->limit_reached)
        return tool_result_error(res, "%s", g->errors.data);
    if (g->match_count == 0)
        return tool_result_text(res, "No matches found", NULL);
    const char *raw = g->out.data ? g->out.data : "";
    struct truncation t;
    truncate_head(raw, g->out.len, JS_MAX_SAFE_INTEGER, 0, &t);
    json_t *details = json_object();
    struct membuf notices = {0};
    char limit_text[64], twice[64], size[32];
    if (g->limit_reached) {
        mb_printf(&notices, "%s matches limit reached. Use limit=%s for more, or refine pattern",
                  js_number_string(g->limit, limit_text, sizeof(limit_text)),
                  js_number_string(g->limit * 2, twice, sizeof(twice)));
        json_object_set_new(details, "matchLimitReached", js_number_json(g->limit));
    }
    if (t.truncated) {
        mb_printf(&notices, "%s%s limit reached", notices.len ? ". " : "",
                  format_size(TRUNCATE_MAX_BYTES, size, sizeof(size)));
        json_object_set_new(details, "truncation", truncation_to_json(&t));
    }
    if (g->lines_truncated) {
        mb_printf(&notices, "%sSome lines truncated to %d chars. Use read tool to see full lines",
                  notices.len ? ". " : "", TRUNCATE_GREP_LINE_MAX);
        json_object_set_new(details, "linesTruncated", json_true());
    }
    if (notices.failed) {
        free(notices.data);
        json_decref(details);
        return tool_result_error(res, "out of memory");
    }
    int r = tool_result_listing(res, t.content, t.content_len, notices.data, notices.len, details);
    free(notices.data);
    return r;
}

int tool_grep(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    const char *pattern = NULL, *path_arg = NULL, *glob = NULL;
    bool ignore_case = false, literal = false;
    double context = 0, limit = GREP_DEFAULT_LIMIT;
    if (tool_arg_string("grep", args, "pattern", true, &pattern, NULL, res) < 0 ||
        tool_arg_string("grep", args, "path", false, &path_arg, NULL, res) < 0 ||
        tool_arg_string("grep", args, "glob", false, &glob, NULL, res) < 0 ||
        tool_arg_number("grep", args, "context", &context, res) < 0 ||
        tool_arg_number("grep", args, "limit", &limit, res) < 0)
        return 0;
    js_arg_boolean(args, "ignoreCase", &ignore_case);
    js_arg_boolean(args, "literal", &literal);

    struct grep_state g = {
        .context = context > 0 ? context : 0,
        .limit = fmax(1, limit),
    };
    _cleanup_free_ char *search_path =
        tool_resolve_path(path_arg && *path_arg ? path_arg : ".", env);
    if (!search_path)
        return tool_result_error(res, "out of memory");
    g.search_path = search_path;
    g.file_fd = -1;
    g.pinned = env->pin != NULL;
    /* An approved host call searches exactly the approved path (pin.h). */
    char why[2048];
    why[0] = '\0';
    _cleanup_close_ int pinned_fd =
        env->pin ? tool_pin_open(env->pin, search_path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, why,
                                 sizeof(why))
                 : -1;
    if (env->pin && pinned_fd < 0 && why[0])
        return tool_result_error(res, "%s", why);
    struct stat st;
    if (env->pin ? pinned_fd < 0 || fstat(pinned_fd, &st) < 0 : stat(search_path, &st) < 0)
        return tool_result_error(res, "Path not found: %s", search_path);
    g.is_directory = S_ISDIR(st.st_mode);

    struct ignore_rules *overrides = NULL;
    int ret = 0;
    if (compile_pattern(&g, pattern, ignore_case, literal, res) < 0)
        goto out;
    if (glob && *glob) {
        struct cordon_error gerr = {0};
        overrides = ignore_rules_parse_override(glob, &gerr);
        if (!overrides) {
            ret = tool_result_error(res, "%s", gerr.message);
            goto out;
        }
    }

    if (g.is_directory) {
        /* The walk and the prefilter's workers see the same directory: the
         * walk starts from this fd too. */
        _cleanup_close_ int root_fd = pinned_fd >= 0
                                          ? fcntl(pinned_fd, F_DUPFD_CLOEXEC, 3)
                                          : open(search_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct prefilter pf;
        if (root_fd >= 0 && pf_start(&pf, &g, root_fd))
            g.pf = &pf;
        struct walk_options options = {
            .require_git = true,
            .custom_ignore_name = ".rgignore",
            .exclude_dot_git = false,
            .overrides = overrides,
            .override_base = env->cwd,
            .visit = grep_visit,
            .on_error = grep_walk_error,
            .have_root_fd = pinned_fd >= 0 || g.pf,
            .root_fd = g.pf ? root_fd : pinned_fd,
            .ctx = &g,
        };
        struct cordon_error err = {0};
        int wr = walk_tree(search_path, &options, &err);
        bool oom = wr < 0 && err.errnum == ENOMEM;
        if (g.pf && !oom && !g.limit_reached && !g.output_overflow && pf_drain(g.pf, true) < 0)
            oom = true;
        if (g.pf)
            pf_stop(g.pf);
        g.pf = NULL;
        if (oom) {
            ret = tool_result_error(res, "out of memory");
            goto out;
        }
        if (wr < 0)
            record_error(&g, search_path, err.errnum ? err.errnum : EIO);
    } else {
        const char *base = strrchr(search_path, '/');
        base = base ? base + 1 : search_path;
        const char *display = utf8_valid(search_path, strlen(search_path)) ? base : NULL;
        if ((pinned_fd >= 0
                 ? search_opened(&g, pinned_fd, search_path, display, true)
                 : search_file(&g, AT_FDCWD, search_path, search_path, display, true)) < 0) {
            ret = tool_result_error(res, "out of memory");
            goto out;
        }
    }
    if (g.out.failed || g.errors.failed) {
        ret = tool_result_error(res, "out of memory");
        goto out;
    }
    ret = build_result(&g, res);
out:
    ignore_rules_free(overrides);
    pcre2_match_data_free(g.md);
    pcre2_match_context_free(g.mctx);
    pcre2_code_free(g.re);
    pcre2_match_data_free(g.block_md);
    pcre2_code_free(g.block_re);
    free(g.needle);
    free(g.out.data);
    free(g.errors.data);
    file_lines_clear(&g.lines);
    return ret;
}
