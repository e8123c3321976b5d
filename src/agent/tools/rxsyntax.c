/* Rust regex syntax checks for grep (rxsyntax.h). Sandbox or host context. */
#include "agent/tools/rxsyntax.h"
#include "util/strbuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_MAX_GROUPS 1024

static const char PCRE2_HINT[] =
    "\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\n"
    "and look-around.";
static const char NEWLINE_ERROR[] =
    "the literal '\"\\n\"' is not allowed in a regex\n\nConsider enabling multiline mode with "
    "the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line "
    "characters can be matched.";

struct rx {
    const char *p;
    size_t len, pos;
    struct strbuf out;
};

/* Column of byte offset `at`, in characters as Rust counts them. */
static size_t column(const char *p, size_t at)
{
    size_t cols = 0;
    for (size_t i = 0; i < at; i++)
        if (((unsigned char)p[i] & 0xc0) != 0x80)
            cols++;
    return cols;
}

/* "regex parse error:\n    <pattern>\n    <carets>\nerror: <msg>". The caret
 * span runs from byte `from` to byte `to` (exclusive, at least one). */
static char *parse_error(const char *p, size_t from, size_t to, const char *msg, bool hint)
{
    size_t start = column(p, from);
    size_t width = to > from ? column(p, to) - start : 1;
    if (width == 0)
        width = 1;
    char *carets = malloc(start + width + 1);
    if (!carets)
        return NULL;
    memset(carets, ' ', start);
    memset(carets + start, '^', width);
    carets[start + width] = '\0';
    char *text = NULL;
    if (asprintf(&text, "regex parse error:\n    %s\n    %s\nerror: %s%s", p, carets, msg,
                 hint ? PCRE2_HINT : "") < 0)
        text = NULL;
    free(carets);
    return text;
}

static void emit(struct rx *r, const char *s, size_t n)
{
    strbuf_append(&r->out, s, n);
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static size_t char_len(const char *p, size_t at, size_t len)
{
    size_t n = 1;
    while (at + n < len && ((unsigned char)p[at + n] & 0xc0) == 0x80)
        n++;
    return n;
}

/* One escape at r->pos ('\\'). Returns an error message or NULL. */
static char *escape(struct rx *r)
{
    const char *p = r->p;
    size_t at = r->pos;
    if (at + 1 >= r->len)
        return parse_error(p, at, at + 1,
                           "incomplete escape sequence, reached end of pattern "
                           "prematurely",
                           false);
    char d = p[at + 1];
    if (d >= '0' && d <= '9')
        return parse_error(p, at, at + 2, "backreferences are not supported", true);
    if (d == 'n')
        return strdup(NEWLINE_ERROR);
    if (strchr("abdfrstvwzABDSW", d) || strchr("\\.+*?()|[]{}^$#&-~", d)) {
        emit(r, p + at, 2);
        r->pos += 2;
        return NULL;
    }
    if (d == 'x' || d == 'u' || d == 'U') {
        size_t i = at + 2;
        size_t digits = d == 'x' ? 2 : d == 'u' ? 4 : 8;
        size_t hex_from, hex_to;
        if (i < r->len && p[i] == '{') {
            hex_from = i + 1;
            size_t j = hex_from;
            while (j < r->len && p[j] != '}') {
                if (!is_hex(p[j]))
                    return parse_error(p, j, j + char_len(p, j, r->len),
                                       "invalid hexadecimal digit", false);
                j++;
            }
            if (j >= r->len)
                return parse_error(p, r->len, r->len + 1,
                                   "incomplete escape sequence, reached end of pattern "
                                   "prematurely",
                                   false);
            hex_to = j;
            r->pos = j + 1;
        } else {
            hex_from = i;
            for (size_t k = 0; k < digits; k++, i++) {
                if (i >= r->len)
                    return parse_error(p, r->len, r->len + 1,
                                       "incomplete escape sequence, reached end of pattern "
                                       "prematurely",
                                       false);
                if (!is_hex(p[i]))
                    return parse_error(p, i, i + char_len(p, i, r->len),
                                       "invalid hexadecimal digit", false);
            }
            hex_to = i;
            r->pos = i;
        }
        /* PCRE2 spells every code point escape \x{...}. */
        emit(r, "\\x{", 3);
        emit(r, p + hex_from, hex_to - hex_from);
        emit(r, "}", 1);
        return NULL;
    }
    if (d == 'p' || d == 'P') {
        size_t i = at + 2;
        if (i >= r->len)
            return parse_error(p, r->len, r->len + 1,
                               "incomplete escape sequence, reached end of pattern prematurely",
                               false);
        if (p[i] == '{') {
            const char *close = memchr(p + i, '}', r->len - i);
            if (!close)
                return parse_error(p, r->len, r->len + 1,
                                   "incomplete escape sequence, reached end of pattern "
                                   "prematurely",
                                   false);
            size_t end = (size_t)(close - p) + 1;
            emit(r, p + at, end - at);
            r->pos = end;
            return NULL;
        }
        if (!strchr("CLMNPSZ", p[i]))
            return parse_error(p, at, i + char_len(p, i, r->len), "Unicode property not found",
                               false);
        emit(r, p + at, 3);
        r->pos = at + 3;
        return NULL;
    }
    return parse_error(p, at, at + 1 + char_len(p, at + 1, r->len), "unrecognized escape sequence",
                       false);
}

/* Rust's POSIX classes are ASCII; PCRE2 with UCP makes them Unicode, so
 * the positive ones are spelled out as ASCII ranges. ("[:^alpha:]" stays
 * PCRE2's, Unicode-aware.) */
static const char *posix_ascii(const char *name, size_t len)
{
    static const char *const table[][2] = {
        {"alnum", "0-9A-Za-z"},
        {"alpha", "A-Za-z"},
        {"ascii", "\\x00-\\x7F"},
        {"blank", "\\t "},
        {"cntrl", "\\x00-\\x1F\\x7F"},
        {"digit", "0-9"},
        {"graph", "!-~"},
        {"lower", "a-z"},
        {"print", " -~"},
        {"punct", "!-/:-@\\[-`{-~"},
        {"space", "\\t\\n\\x0B\\f\\r "},
        {"upper", "A-Z"},
        {"word", "0-9A-Za-z_"},
        {"xdigit", "0-9A-Fa-f"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strlen(table[i][0]) == len && memcmp(table[i][0], name, len) == 0)
            return table[i][1];
    return NULL;
}

/* A character class at r->pos ('['), copied through. */
static char *char_class(struct rx *r)
{
    const char *p = r->p;
    size_t open = r->pos;
    size_t i = open + 1;
    if (i < r->len && p[i] == '^')
        i++;
    if (i < r->len && p[i] == ']')
        i++;
    size_t opener_end = i;
    emit(r, p + open, i - open);
    r->pos = i;
    int depth = 1;
    while (r->pos < r->len) {
        char c = p[r->pos];
        if (c == '\\') {
            char *e = escape(r);
            if (e)
                return e;
            continue;
        }
        if (c == '[' && r->pos + 1 < r->len && p[r->pos + 1] == ':') {
            const char *end = strstr(p + r->pos, ":]");
            if (end) {
                size_t n = (size_t)(end - (p + r->pos)) + 2;
                const char *ascii = posix_ascii(p + r->pos + 2, n - 4);
                if (ascii)
                    emit(r, ascii, strlen(ascii));
                else
                    emit(r, p + r->pos, n);
                r->pos += n;
                continue;
            }
        }
        if (c == '[') {
            depth++;
        } else if (c == ']') {
            depth--;
            if (depth == 0) {
                emit(r, "]", 1);
                r->pos++;
                return NULL;
            }
        }
        size_t n = char_len(p, r->pos, r->len);
        emit(r, p + r->pos, n);
        r->pos += n;
    }
    return parse_error(p, open, opener_end, "unclosed character class", false);
}

/* A counted repetition at r->pos ('{'). */
static char *counted(struct rx *r)
{
    const char *p = r->p;
    size_t open = r->pos;
    size_t i = open + 1;
    long lo = -1, hi = -1;
    bool comma = false;
    for (;;) {
        if (i >= r->len)
            return parse_error(p, open, r->len, "unclosed counted repetition", false);
        char c = p[i];
        if (c >= '0' && c <= '9') {
            long *v = comma ? &hi : &lo;
            *v = (*v < 0 ? 0 : *v) * 10 + (c - '0');
            if (*v > 100000)
                *v = 100000;
        } else if (c == ',' && !comma && lo >= 0) {
            comma = true;
        } else if (c == '}' && lo >= 0) {
            break;
        } else {
            return parse_error(p, i, i + char_len(p, i, r->len),
                               "repetition quantifier expects a valid decimal", false);
        }
        i++;
    }
    if (comma && hi >= 0 && lo > hi)
        return parse_error(p, open, i + 1,
                           "invalid repetition count range, the start must be <= the end", false);
    emit(r, p + open, i + 1 - open);
    r->pos = i + 1;
    return NULL;
}

/* Wraps out[from..] in "(?:" ... ")" so another quantifier can follow:
 * Rust reads "a**" as (a*)*, PCRE2 rejects it and reads "a*+" as
 * possessive. */
static void wrap_atom(struct rx *r, size_t from)
{
    emit(r, "(?:", 3); /* grow by three bytes, then shift */
    if (r->out.failed)
        return;
    memmove(r->out.buf + from + 3, r->out.buf + from, r->out.len - 3 - from);
    memcpy(r->out.buf + from, "(?:", 3);
    emit(r, ")", 1);
}

struct group {
    size_t at;     /* byte offset of '(' in the pattern */
    size_t out_at; /* where it starts in the output */
};

/* The translation's state between tokens. */
struct rx_scan {
    struct rx r;
    struct group *groups;
    size_t ngroups;
    bool atom;       /* something a repetition can apply to precedes */
    bool quantified; /* ... and it already carries a quantifier */
    bool lazy_done;  /* ... and its lazy '?' */
    size_t atom_out; /* where that atom starts in the output */
    bool assertion;  /* that atom is ^, $, \b ...: PCRE2 repeats none */
};

/* "(?" at at: a named group, or flags that set ("(?i)") or open a group
 * ("(?i:"). */
static char *rx_group_flags(struct rx_scan *s, size_t at, size_t out_before)
{
    struct rx *r = &s->r;
    const char *p = r->p;
    size_t j = at + 2;
    if (p[j] == 'P' && p[j + 1] == '<') {
        /* (?P<name>: the same in PCRE2. */
        const char *gt = strchr(p + j, '>');
        if (!gt)
            return parse_error(p, at, at + 1, "unclosed group", false);
        size_t end = (size_t)(gt - p) + 1;
        emit(r, p + at, end - at);
        r->pos = end;
        s->groups[s->ngroups++] = (struct group){at, out_before};
        return NULL;
    }
    /* Flags: "(?flags)" sets them and is nothing to repeat, "(?flags:"
     * opens a group. PCRE2 has no 'u' flag (Unicode is always on here), so
     * it is dropped. */
    while (j < r->len && strchr("imsUux-", p[j]))
        j++;
    if (j >= r->len || (p[j] != ')' && p[j] != ':'))
        return j >= r->len
                   ? parse_error(p, at, at + 1, "unclosed group", false)
                   : parse_error(p, j, j + char_len(p, j, r->len), "unrecognized flag", false);
    emit(r, "(?", 2);
    for (size_t k = at + 2; k < j; k++)
        if (p[k] != 'u')
            emit(r, p + k, 1);
    emit(r, p + j, 1);
    r->pos = j + 1;
    if (p[j] == ':')
        s->groups[s->ngroups++] = (struct group){at, out_before};
    return NULL;
}

static char *rx_open_group(struct rx_scan *s, size_t at, size_t out_before)
{
    struct rx *r = &s->r;
    const char *p = r->p;
    if (strncmp(p + at, "(?=", 3) == 0 || strncmp(p + at, "(?!", 3) == 0)
        return parse_error(p, at, at + 3,
                           "look-around, including look-ahead and look-behind, is not supported",
                           true);
    if (strncmp(p + at, "(?<=", 4) == 0 || strncmp(p + at, "(?<!", 4) == 0)
        return parse_error(p, at, at + 4,
                           "look-around, including look-ahead and look-behind, is not supported",
                           true);
    if (s->ngroups == RX_MAX_GROUPS)
        return parse_error(p, at, at + 1, "exceeds the nesting limit", false);
    s->atom = false;
    if (p[at + 1] == '?')
        return rx_group_flags(s, at, out_before);
    s->groups[s->ngroups++] = (struct group){at, out_before};
    emit(r, "(", 1);
    r->pos++;
    return NULL;
}

static char *rx_close_group(struct rx_scan *s, size_t at)
{
    if (s->ngroups == 0)
        return parse_error(s->r.p, at, at + 1, "unopened group", false);
    s->ngroups--;
    emit(&s->r, ")", 1);
    s->r.pos++;
    s->assertion = false;
    s->atom = true;
    s->quantified = false;
    s->atom_out = s->groups[s->ngroups].out_at;
    return NULL;
}

/* '*', '+', '?' or '{' at at: Rust repeats a repeated atom or an
 * assertion, PCRE2 needs it wrapped in a group first. */
static char *rx_repetition(struct rx_scan *s, size_t at, char c)
{
    struct rx *r = &s->r;
    if (!s->atom)
        return parse_error(r->p, at, at + 1, "repetition operator missing expression", false);
    if (s->quantified && c == '?' && !s->lazy_done) {
        emit(r, "?", 1);
        r->pos++;
        s->lazy_done = true;
        return NULL;
    }
    if (s->quantified || s->assertion)
        wrap_atom(r, s->atom_out);
    s->assertion = false;
    char *err = NULL;
    if (c == '{') {
        err = counted(r);
    } else {
        emit(r, r->p + at, 1);
        r->pos++;
    }
    s->quantified = true;
    s->lazy_done = false;
    return err;
}

/* One token of the pattern at s->r.pos. */
static char *rx_token(struct rx_scan *s)
{
    struct rx *r = &s->r;
    const char *p = r->p;
    size_t at = r->pos;
    size_t out_before = r->out.len;
    char c = p[at];
    char *err = NULL;
    switch (c) {
    case '\\':
        s->assertion = at + 1 < r->len && strchr("bBAz", p[at + 1]);
        err = escape(r);
        break;
    case '[':
        err = char_class(r);
        s->assertion = false;
        break;
    case '(':
        return rx_open_group(s, at, out_before);
    case ')':
        return rx_close_group(s, at);
    case '|':
        emit(r, "|", 1);
        r->pos++;
        s->atom = false;
        return NULL;
    case '*':
    case '+':
    case '?':
    case '{':
        return rx_repetition(s, at, c);
    default: {
        size_t n = char_len(p, at, r->len);
        emit(r, p + at, n);
        r->pos += n;
        s->assertion = c == '^' || c == '$';
    }
    }
    /* an escape, a class or a character: an atom to repeat */
    s->atom = true;
    s->quantified = false;
    s->atom_out = out_before;
    return err;
}

char *rx_check_rust_syntax(const char *pattern, int literal, char **pcre2_pattern)
{
    *pcre2_pattern = NULL;
    if (strchr(pattern, '\n'))
        return strdup(NEWLINE_ERROR);
    if (literal) {
        *pcre2_pattern = strdup(pattern);
        return *pcre2_pattern ? NULL : strdup("out of memory");
    }
    struct rx_scan s = {.r = {.p = pattern, .len = strlen(pattern)}};
    s.groups = malloc(RX_MAX_GROUPS * sizeof(*s.groups));
    if (!s.groups)
        return strdup("out of memory");
    char *err = NULL;
    emit(&s.r, "", 0);
    while (!err && s.r.pos < s.r.len)
        err = rx_token(&s);
    if (!err && s.ngroups > 0)
        err = parse_error(pattern, s.groups[s.ngroups - 1].at, s.groups[s.ngroups - 1].at + 1,
                          "unclosed group", false);
    free(s.groups);
    if (err || s.r.out.failed) {
        free(s.r.out.buf);
        return err ? err : strdup("out of memory");
    }
    *pcre2_pattern = s.r.out.buf;
    return NULL;
}
