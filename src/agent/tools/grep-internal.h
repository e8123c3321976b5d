/* What the parts of the grep tool share (grep.c, grep-search.c,
 * grep-output.c, grep-prefilter.c): the search state, its bounds and the
 * functions one part calls in another. Internal to src/agent/tools/. */
#pragma once

#include "agent/tools/walk.h"

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

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

void mb_printf(struct membuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The lines of a file as pi splits it for context: decoded as UTF-8 with
 * replacement, then split on \r\n, \r and \n. */
struct file_lines {
    char *text;
    size_t *starts, *lens;
    size_t count;
    bool unreadable;
};

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
    size_t needle_rare;  /* the index of its byte rarest in text (needle_find) */
    size_t needle_rare2; /* the next rarest, another byte where possible */
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
    /* Or the file as a prefilter worker read it whole (search_buffer): the
     * search and the context lines come from it, nothing is reopened. */
    const char *file_data;
    size_t file_data_len;
    bool pinned; /* an approved host call (pin.h): nothing is reopened by path */
    struct file_lines lines;
    bool lines_loaded;
    struct prefilter *pf; /* the parallel prefilter, when it runs */
};

#define PF_WORKERS_MAX 8

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
    size_t held;       /* bytes of file copies waiting in jobs (PF_HELD_MAX) */
    int planned;       /* workers pf_start means to start (set before the first runs) */
    int idle;          /* workers waiting for work */
    bool head_waiting; /* the calling thread waits for the head job */
    pthread_t threads[PF_WORKERS_MAX];
    int nthreads;
};

void mb_append(struct membuf *b, const char *s, size_t n);
void file_lines_clear(struct file_lines *fl);
bool utf8_valid(const char *s, size_t len);
int load_context_lines(struct grep_state *g);
int format_block(struct grep_state *g, double line_number);
void record_error(struct grep_state *g, const char *path, int errnum);
void grep_dir_error(void *ctx, const char *path, int errnum);
int search_file(struct grep_state *g, int dirfd, const char *name, const char *abs,
                const char *display, bool explicit_path);
int search_opened(struct grep_state *g, int fd, const char *abs, const char *display,
                  bool explicit_path);
/* A walked file read whole, with no NUL in it (a prefilter worker's copy). */
int search_buffer(struct grep_state *g, const char *data, size_t len, const char *abs,
                  const char *display);
bool pf_start(struct prefilter *pf, struct grep_state *g, int root_fd);
void pf_stop(struct prefilter *pf);
int pf_drain(struct prefilter *pf, bool wait);
int pf_push(struct prefilter *pf, const struct walk_entry *e, char *display, const char *path,
            int dir_errno);
size_t rare_index(const char *needle, size_t len);
size_t rare_index2(const char *needle, size_t len, size_t first);
const char *needle_find(const char *hay, size_t len, const char *needle, size_t nlen, size_t rare,
                        size_t rare2);
void append_truncated_line(struct grep_state *g, const char *s, size_t len);
void begin_output_line(struct grep_state *g);
