/* pi's find tool (find.js): what `fd --glob --color=never --hidden
 * --no-require-git --max-results N <pattern> <path>` prints, post-processed
 * as pi does (relative paths, directories with a trailing '/', notices).
 * The walk is walk.c's, so the order is deterministic: sorted depth first,
 * which is the order fd prints when it finishes within its sort window.
 * Sandbox (cordon-agent) or host context. */
#include "agent/tools/args.h"
#include "agent/tools/js.h"
#include "agent/tools/glob.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/truncate.h"
#include "agent/tools/walk.h"
#include "util/cleanup.h"
#include "util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#define FIND_DEFAULT_LIMIT  1000
#define JS_MAX_SAFE_INTEGER 9007199254740991ULL
/* fd's output is bounded by the limit; this bounds limit=0 (no limit in fd)
 * and huge limits, far beyond what the 50KB cut lets through anyway. */
#define FIND_OUTPUT_MAX (64u << 20)

struct find_walk {
    struct tool_glob *glob;
    bool full_path;
    size_t limit; /* 0: none */
    size_t count;
    struct strbuf out;
    bool overflow;
};

static int out_append(struct find_walk *fw, const char *s, size_t n)
{
    return strbuf_append(&fw->out, s, n);
}

static int find_visit(void *ctx, const struct walk_entry *e, struct cordon_error *err)
{
    struct find_walk *fw = ctx;
    const char *subject = fw->full_path ? e->path : e->name;
    if (!tool_glob_match(fw->glob, subject, strlen(subject)))
        return 0;
    bool dir = e->type == WALK_DIR;
    if (out_append(fw, e->path, strlen(e->path)) < 0 || (dir && out_append(fw, "/", 1) < 0) ||
        out_append(fw, "\n", 1) < 0)
        return error_set(err, ENOMEM, "find");
    fw->count++;
    if (fw->limit && fw->count >= fw->limit)
        return 1;
    if (fw->out.len > FIND_OUTPUT_MAX) {
        fw->overflow = true;
        return 1;
    }
    return 0;
}

/* fd's smart case: any uppercase character makes the glob case-sensitive. */
static bool has_uppercase(const char *s)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(s);
    while (left > 0) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
        if (n <= 0) {
            p++;
            left--;
            continue;
        }
        if (utf8proc_isupper(cp))
            return true;
        p += n;
        left -= n;
    }
    return false;
}

/* JavaScript's String.prototype.trim() whitespace, as UTF-8 lengths. */
static size_t js_space_at(const unsigned char *s, size_t left)
{
    if (left >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
        return 1;
    if (left >= 2 && s[0] == 0xc2 && s[1] == 0xa0)
        return 2;
    if (left >= 3) {
        unsigned cp = ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
        if ((s[0] & 0xf0) == 0xe0 &&
            (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
             cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff))
            return 3;
    }
    return 0;
}

static void js_trim(const char **s, size_t *len)
{
    const unsigned char *p = (const unsigned char *)*s;
    size_t n = *len, k;
    while (n > 0 && (k = js_space_at(p, n))) {
        p += k;
        n -= k;
    }
    for (;;) {
        bool cut = false;
        for (size_t w = 1; w <= 3 && w <= n; w++) {
            if (js_space_at(p + n - w, w) == w) {
                n -= w;
                cut = true;
                break;
            }
        }
        if (!cut)
            break;
    }
    *s = (const char *)p;
    *len = n;
}

/* pi reads fd's stdout with readline (lines end at \n, \r\n or \r), trims
 * each line, drops empty ones and makes them relative to the search path. */
static int relativize_output(const char *raw, size_t raw_len, const char *search_path,
                             struct find_walk *dst)
{
    size_t sp_len = strlen(search_path);
    size_t pos = 0;
    bool first = true;
    while (pos < raw_len) {
        size_t end = pos;
        while (end < raw_len && raw[end] != '\n' && raw[end] != '\r')
            end++;
        const char *line = raw + pos;
        size_t len = end - pos;
        pos = end;
        if (pos < raw_len && raw[pos] == '\r' && pos + 1 < raw_len && raw[pos + 1] == '\n')
            pos += 2;
        else if (pos < raw_len)
            pos++;
        js_trim(&line, &len);
        if (len == 0)
            continue;
        bool had_slash = line[len - 1] == '/' || line[len - 1] == '\\';
        const char *rel = line;
        size_t rel_len = len;
        if (len >= sp_len && memcmp(line, search_path, sp_len) == 0) {
            size_t skip = sp_len + 1 <= len ? sp_len + 1 : len;
            rel = line + skip;
            rel_len = len - skip;
        }
        if (!first && out_append(dst, "\n", 1) < 0)
            return -1;
        first = false;
        if (out_append(dst, rel, rel_len) < 0)
            return -1;
        if (had_slash && (rel_len == 0 || rel[rel_len - 1] != '/') && out_append(dst, "/", 1) < 0)
            return -1;
    }
    if (first && out_append(dst, "", 0) < 0)
        return -1;
    return 0;
}

/* fd's --max-results: 1 with *limit; 0 with res fd's error. */
static int find_limit(double limit_value, const char *limit_text, size_t *limit,
                      struct tool_result *res)
{
    /* fd parses --max-results as an unsigned integer; "-5" reads as a flag. */
    if (limit_value < 0)
        return tool_result_error(res, "error: The argument '--max-results <count>' requires a "
                                      "value but none was supplied\n\nFor more information try "
                                      "'--help'");
    if (limit_value != floor(limit_value) || limit_value > 1e19)
        return tool_result_error(res,
                                 "error: Invalid value '%s' for '--max-results <count>': invalid "
                                 "digit found in string\n\nFor more information try '--help'",
                                 limit_text);
    *limit = (size_t)limit_value;
    return 1;
}

/* The glob fd matches: a pattern with a '/' matches the full path, from
 * any depth unless it is anchored. NULL when out of memory. */
static char *find_effective_pattern(const char *pattern, bool full_path)
{
    char *effective = NULL;
    if (full_path && pattern[0] != '/' && strncmp(pattern, "**/", 3) != 0 &&
        strcmp(pattern, "**") != 0)
        return asprintf(&effective, "**/%s", pattern) < 0 ? NULL : effective;
    return strdup(pattern);
}

/* The search directory: with an approved host call exactly the approved
 * one (pin.h), its fd in *root_fd. 1, or 0 with res fd's error. */
static int find_open_root(const struct tool_env *env, const char *search_path, int *root_fd,
                          struct tool_result *res)
{
    char why[2048];
    why[0] = '\0';
    *root_fd = env->pin ? tool_pin_open(env->pin, search_path, O_RDONLY | O_DIRECTORY | O_NONBLOCK,
                                        0, why, sizeof(why))
                        : -1;
    if (env->pin && *root_fd < 0 && why[0])
        return tool_result_error(res, "%s", why);
    struct stat st;
    if ((env->pin ? *root_fd < 0 || fstat(*root_fd, &st) < 0 : stat(search_path, &st) < 0) ||
        !S_ISDIR(st.st_mode))
        return tool_result_error(res,
                                 "[fd error]: Search path '%s' is not a directory.\n[fd error]: "
                                 "No valid search paths given.",
                                 search_path);
    return 1;
}

/* pi's result: the paths relative to the search path, cut at the byte
 * limit, with the notices of the limits reached. */
static int find_report(const char *raw, size_t raw_len, const char *search_path, double limit_value,
                       const char *limit_text, size_t limit, struct tool_result *res)
{
    size_t text_len = 0;
    _cleanup_free_ char *text = utf8_sanitize(raw, raw_len, &text_len);
    if (!text)
        return tool_result_error(res, "out of memory");
    struct find_walk rel = {0};
    if (relativize_output(text, text_len, search_path, &rel) < 0) {
        free(rel.out.buf);
        return tool_result_error(res, "out of memory");
    }
    _cleanup_free_ char *joined = rel.out.buf;
    size_t result_count = 0;
    for (size_t i = 0; i < rel.out.len; i++)
        result_count += joined[i] == '\n';
    result_count += rel.out.len > 0 ? 1 : 0;

    struct truncation t;
    truncate_head(joined, rel.out.len, JS_MAX_SAFE_INTEGER, 0, &t);
    bool limit_reached = result_count >= limit;
    json_t *details = json_object();
    char *notices = NULL;
    size_t notices_len = 0;
    FILE *nf = open_memstream(&notices, &notices_len);
    if (!details || !nf) {
        json_decref(details);
        if (nf)
            fclose(nf);
        free(notices);
        return tool_result_error(res, "out of memory");
    }
    if (limit_reached) {
        char twice[64];
        fprintf(nf, "%s results limit reached. Use limit=%s for more, or refine pattern",
                limit_text, js_number_string(limit_value * 2, twice, sizeof(twice)));
        json_object_set_new(details, "resultLimitReached", js_number_json(limit_value));
    }
    if (t.truncated) {
        char size[32];
        fprintf(nf, "%s%s limit reached", limit_reached ? ". " : "",
                format_size(TRUNCATE_MAX_BYTES, size, sizeof(size)));
        json_object_set_new(details, "truncation", truncation_to_json(&t));
    }
    fclose(nf);
    _cleanup_free_ char *notice_text = notices;
    return tool_result_listing(res, t.content, t.content_len, notice_text, notices_len, details);
}

int tool_find(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    const char *pattern = NULL, *path_arg = NULL;
    double limit_value = FIND_DEFAULT_LIMIT;
    if (tool_arg_string("find", args, "pattern", true, &pattern, NULL, res) < 0 ||
        tool_arg_string("find", args, "path", false, &path_arg, NULL, res) < 0 ||
        tool_arg_number("find", args, "limit", &limit_value, res) < 0)
        return 0;

    _cleanup_free_ char *search_path =
        tool_resolve_path(path_arg && *path_arg ? path_arg : ".", env);
    if (!search_path)
        return tool_result_error(res, "out of memory");

    char limit_text[64];
    js_number_string(limit_value, limit_text, sizeof(limit_text));
    size_t limit = 0;
    if (find_limit(limit_value, limit_text, &limit, res) == 0)
        return 0;

    bool full_path = strchr(pattern, '/') != NULL;
    _cleanup_free_ char *effective = find_effective_pattern(pattern, full_path);
    if (!effective)
        return tool_result_error(res, "out of memory");

    _cleanup_close_ int root_fd = -1;
    if (find_open_root(env, search_path, &root_fd, res) == 0)
        return 0;

    unsigned flags = TOOL_GLOB_LITERAL_SEPARATOR;
    if (!has_uppercase(effective))
        flags |= TOOL_GLOB_CASE_INSENSITIVE;
    struct cordon_error err = {0};
    struct find_walk fw = {.full_path = full_path, .limit = limit};
    if (tool_glob_compile(effective, strlen(effective), flags, &fw.glob, &err) < 0)
        return tool_result_error(res, "[fd error]: error parsing glob '%s': %s", effective,
                                 err.message);

    struct walk_options options = {
        .require_git = false,
        .custom_ignore_name = ".fdignore",
        .exclude_dot_git = true,
        .have_root_fd = root_fd >= 0,
        .root_fd = root_fd,
        .visit = find_visit,
        .ctx = &fw,
    };
    int r = walk_tree(search_path, &options, &err);
    tool_glob_free(fw.glob);
    _cleanup_free_ char *raw = fw.out.buf;
    size_t raw_len = fw.out.len;
    if (r < 0)
        return tool_result_error(res, "[fd error]: %s", err.message);
    if (raw_len == 0)
        return tool_result_text(res, "No files found matching pattern", NULL);
    return find_report(raw, raw_len, search_path, limit_value, limit_text, limit, res);
}
