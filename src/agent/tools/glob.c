/* Glob to PCRE2 translation following the globset crate (used by ripgrep and
 * fd), so that `--glob` patterns and gitignore lines select the same paths
 * here as there. Sandbox or host context; no I/O. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "agent/tools/glob.h"

#include "util/cleanup.h"
#include "util/strbuf.h"

#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Enough for any real path pattern; a fuzzer's hostile input must not make
 * a single match take seconds. */
#define GLOB_MATCH_LIMIT 200000
#define GLOB_DEPTH_LIMIT 2000
#define GLOB_PATTERN_MAX 8192

#define GLOB_SUFFIX_MAX 32

struct tool_glob {
    pcre2_code *code;
    pcre2_match_data *match_data;
    pcre2_match_context *match_context;
    /* The plain ASCII characters the pattern ends with (see glob_suffix):
     * a subject that does not end with them cannot match, and is refused
     * without running the pattern. */
    char suffix[GLOB_SUFFIX_MAX];
    size_t suffix_len;
    bool suffix_fold; /* compared ASCII case-insensitively */
};

/* The pattern's trailing run of characters that stand for themselves and
 * only themselves: ASCII, no metacharacter, no '\' (what it escapes is
 * part of the run only as the run's first character, which it is not), no
 * '/' ("**" + "/" may match nothing). Case-insensitively, no 'k' or 's',
 * which Unicode folds with the Kelvin and long-s signs. */
static size_t glob_suffix(const char *pattern, size_t len, bool fold)
{
    size_t n = 0;
    while (n < len && n < GLOB_SUFFIX_MAX) {
        unsigned char c = (unsigned char)pattern[len - 1 - n];
        if (c == 0 || c >= 0x80 || strchr("*?[]{},\\/", c))
            break;
        if (fold && ((c | 0x20) == 'k' || (c | 0x20) == 's'))
            break;
        n++;
    }
    return n;
}

static bool ends_with_suffix(const struct tool_glob *glob, const char *subject, size_t len)
{
    size_t n = glob->suffix_len;
    if (len < n)
        return false;
    const char *tail = subject + len - n;
    if (!glob->suffix_fold)
        return memcmp(tail, glob->suffix, n) == 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = (unsigned char)tail[i], b = (unsigned char)glob->suffix[i];
        if (a != b && !(a >= 'A' && a <= 'Z' && (a | 0x20) == b) &&
            !(b >= 'A' && b <= 'Z' && (b | 0x20) == a))
            return false;
    }
    return true;
}

/* One pattern byte as a regex literal: ASCII punctuation escaped, other
 * bytes (UTF-8 sequences included) copied through. */
static void sb_literal(struct strbuf *sb, unsigned char c)
{
    if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
        char esc[8];
        int n = snprintf(esc, sizeof(esc), "\\x{%x}", c);
        strbuf_append(sb, esc, (size_t)n);
        return;
    }
    strbuf_append(sb, (const char *)&c, 1);
}

/* Length of the UTF-8 sequence starting at p (1 for invalid bytes). */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
    size_t n = 1;
    if (p[0] >= 0xf0)
        n = 4;
    else if (p[0] >= 0xe0)
        n = 3;
    else if (p[0] >= 0xc0)
        n = 2;
    if (n > avail)
        return 1;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 1;
    return n;
}

struct translator {
    const unsigned char *p;
    size_t len, pos;
    unsigned flags;
    struct strbuf out;
    int brace_depth;
};

/* The pattern's character at t->pos (a UTF-8 sequence, or one byte, which
 * becomes a regex literal) copied to the output: how many bytes it was. */
static size_t copy_char(struct translator *t)
{
    size_t n = utf8_seq_len(t->p + t->pos, t->len - t->pos);
    if (n == 1)
        sb_literal(&t->out, t->p[t->pos]);
    else
        strbuf_append(&t->out, (const char *)t->p + t->pos, n);
    t->pos += n;
    return n;
}

static int translate_class(struct translator *t, struct cordon_error *err)
{
    /* t->pos is just after '['. */
    strbuf_puts(&t->out, "[");
    if (t->pos < t->len && (t->p[t->pos] == '!' || t->p[t->pos] == '^')) {
        strbuf_puts(&t->out, "^");
        t->pos++;
    }
    bool first = true;
    for (;;) {
        if (t->pos >= t->len)
            return error_set(err, 0, "unclosed character class; missing ']'");
        unsigned char c = t->p[t->pos];
        if (c == ']' && !first) {
            t->pos++;
            break;
        }
        first = false;
        size_t n = copy_char(t);
        /* A range: "a-z", but '-' before ']' is a literal. */
        if (t->pos + 1 < t->len && t->p[t->pos] == '-' && t->p[t->pos + 1] != ']') {
            t->pos++;
            bool single = utf8_seq_len(t->p + t->pos, t->len - t->pos) == 1;
            if (n == 1 && single && t->p[t->pos - 2] > t->p[t->pos])
                return error_set(err, 0, "invalid range; '%c' > '%c'", t->p[t->pos - 2],
                                 t->p[t->pos]);
            strbuf_puts(&t->out, "-");
            copy_char(t);
        }
    }
    strbuf_puts(&t->out, "]");
    return 0;
}

static bool at_component_start(const struct translator *t, size_t star_pos)
{
    if (star_pos == 0)
        return true;
    unsigned char prev = t->p[star_pos - 1];
    return prev == '/' || (t->brace_depth > 0 && (prev == '{' || prev == ','));
}

static bool at_component_end(const struct translator *t, size_t after)
{
    if (after >= t->len)
        return true;
    unsigned char next = t->p[after];
    return next == '/' || (t->brace_depth > 0 && (next == '}' || next == ','));
}

static int translate_seq(struct translator *t, struct cordon_error *err)
{
    const char *any = (t->flags & TOOL_GLOB_LITERAL_SEPARATOR) ? "[^/]" : ".";
    while (t->pos < t->len) {
        unsigned char c = t->p[t->pos];
        if (t->brace_depth > 0 && (c == ',' || c == '}'))
            return 0;
        switch (c) {
        case '\\':
            if (t->pos + 1 >= t->len)
                return error_set(err, 0, "dangling '\\'");
            t->pos++;
            copy_char(t);
            break;
        case '?':
            strbuf_puts(&t->out, any);
            t->pos++;
            break;
        case '*': {
            size_t star = t->pos;
            if (t->pos + 1 < t->len && t->p[t->pos + 1] == '*') {
                size_t after = t->pos + 2;
                /* More stars are the same as two. */
                while (after < t->len && t->p[after] == '*')
                    after++;
                bool starts = at_component_start(t, star);
                bool ends = at_component_end(t, after);
                if (starts && ends) {
                    bool leading = star == 0 || t->p[star - 1] != '/';
                    bool trailing = after >= t->len || t->p[after] != '/';
                    if (leading && trailing) {
                        strbuf_puts(&t->out, ".*");
                        t->pos = after;
                    } else if (leading) {
                        /* "**" + "/": any number of leading components. */
                        strbuf_puts(&t->out, "(?:/?|.*/)");
                        t->pos = after + 1;
                    } else if (trailing) {
                        /* The "/" was emitted already: "a/" + "**" matches inside a. */
                        strbuf_puts(&t->out, ".*");
                        t->pos = after;
                    } else {
                        /* "/" + "**" + "/": zero or more components; the
                         * emitted '/' already stands for the zero case. */
                        strbuf_puts(&t->out, "(?:.*/)?");
                        t->pos = after + 1;
                    }
                    break;
                }
                strbuf_puts(&t->out, any);
                strbuf_puts(&t->out, "*");
                t->pos = after;
                break;
            }
            strbuf_puts(&t->out, any);
            strbuf_puts(&t->out, "*");
            t->pos++;
            break;
        }
        case '}':
            /* globset drops a '}' that closes nothing. */
            t->pos++;
            break;
        case '[':
            t->pos++;
            if (translate_class(t, err) < 0)
                return -1;
            break;
        case '{': {
            if (t->brace_depth > 0)
                return error_set(err, 0, "nested alternate groups are not allowed");
            t->pos++;
            t->brace_depth++;
            strbuf_puts(&t->out, "(?:");
            for (;;) {
                if (translate_seq(t, err) < 0)
                    return -1;
                if (t->pos >= t->len)
                    return error_set(err, 0,
                                     "unclosed alternate group; missing '}' (maybe escape '{' "
                                     "with '[{]'?)");
                if (t->p[t->pos] == ',') {
                    strbuf_puts(&t->out, "|");
                    t->pos++;
                    continue;
                }
                t->pos++; /* '}' */
                break;
            }
            t->brace_depth--;
            strbuf_puts(&t->out, ")");
            break;
        }
        default:
            copy_char(t);
        }
    }
    return 0;
}

char *tool_glob_to_regex(const char *pattern, size_t len, unsigned flags, struct cordon_error *err)
{
    if (len > GLOB_PATTERN_MAX) {
        error_set(err, 0, "glob pattern longer than %d bytes", GLOB_PATTERN_MAX);
        return NULL;
    }
    struct translator t = {
        .p = (const unsigned char *)pattern,
        .len = len,
        .flags = flags,
    };
    strbuf_puts(&t.out, "^(?:");
    if (translate_seq(&t, err) < 0) {
        free(t.out.buf);
        return NULL;
    }
    strbuf_puts(&t.out, ")\\z");
    if (t.out.failed) {
        free(t.out.buf);
        error_set(err, ENOMEM, "glob");
        return NULL;
    }
    return t.out.buf;
}

void tool_glob_free(struct tool_glob *glob)
{
    if (!glob)
        return;
    pcre2_match_data_free(glob->match_data);
    pcre2_match_context_free(glob->match_context);
    pcre2_code_free(glob->code);
    free(glob);
}

int tool_glob_compile(const char *pattern, size_t len, unsigned flags, struct tool_glob **out,
                      struct cordon_error *err)
{
    _cleanup_free_ char *regex = tool_glob_to_regex(pattern, len, flags, err);
    if (!regex)
        return -1;
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOTALL;
    if (flags & TOOL_GLOB_CASE_INSENSITIVE)
        options |= PCRE2_CASELESS | PCRE2_UCP;
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, options, &code, &offset, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        return error_set(err, 0, "invalid glob: %s", (const char *)msg);
    }
    struct tool_glob *g = calloc(1, sizeof(*g));
    if (!g) {
        pcre2_code_free(re);
        return error_set(err, ENOMEM, "glob");
    }
    g->code = re;
    g->suffix_fold = (flags & TOOL_GLOB_CASE_INSENSITIVE) != 0;
    g->suffix_len = glob_suffix(pattern, len, g->suffix_fold);
    memcpy(g->suffix, pattern + len - g->suffix_len, g->suffix_len);
    /* JIT is an optimisation only; interpretation gives the same answers. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    g->match_data = pcre2_match_data_create_from_pattern(re, NULL);
    g->match_context = pcre2_match_context_create(NULL);
    if (!g->match_data || !g->match_context) {
        tool_glob_free(g);
        return error_set(err, ENOMEM, "glob");
    }
    pcre2_set_match_limit(g->match_context, GLOB_MATCH_LIMIT);
    pcre2_set_depth_limit(g->match_context, GLOB_DEPTH_LIMIT);
    *out = g;
    return 0;
}

bool tool_glob_match_pattern(const struct tool_glob *glob, const char *subject, size_t len)
{
    int rc = pcre2_match(glob->code, (PCRE2_SPTR)subject, len, 0, 0, glob->match_data,
                         glob->match_context);
    return rc >= 0;
}

bool tool_glob_match(const struct tool_glob *glob, const char *subject, size_t len)
{
    return ends_with_suffix(glob, subject, len) && tool_glob_match_pattern(glob, subject, len);
}
