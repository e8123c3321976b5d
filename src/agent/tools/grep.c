/* pi's grep tool (grep.js): the matches `rg --json --line-number
 * --color=never --hidden [--ignore-case] [--fixed-strings] [--glob G] --
 * pattern path` reports, formatted as pi formats them. Patterns are PCRE2
 * (UTF, UCP) standing in for ripgrep's Rust regex engine; files are walked
 * in sorted order (rg --sort path) because rg's parallel order is not
 * defined. This file holds the pattern, the walk and the result; the
 * search of one file, the output and the prefilter are its siblings
 * (grep-internal.h). Sandbox (cordon-agent) or host context. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "agent/tools/args.h"
#include "agent/tools/grep-internal.h"
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
    g->needle_rare2 = rare_index2(g->needle ? g->needle : "", g->needle_len, g->needle_rare);
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
