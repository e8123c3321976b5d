/* pi's path rules (path-utils.js) and the UTF-8/UTF-16 helpers every tool
 * needs to produce JavaScript's bytes: Node's replacement of invalid UTF-8
 * and String#length. Sandbox (cordon-agent) or host context. */
#include "agent/tools/path.h"
#include "util/cleanup.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

/* U+00A0, U+2000-U+200A, U+202F, U+205F, U+3000: the length of the UTF-8
 * sequence at s when it is one of pi's "unicode spaces", else 0. */
static size_t unicode_space_len(const unsigned char *s, size_t left)
{
    if (left >= 2 && s[0] == 0xc2 && s[1] == 0xa0)
        return 2;
    if (left < 3)
        return 0;
    if (s[0] == 0xe2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xaf))
        return 3;
    if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
        return 3;
    if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;
    return 0;
}

char *tool_expand_path(const char *path, const struct tool_env *env)
{
    if (path[0] == '@')
        path++;
    size_t len = strlen(path);
    _cleanup_free_ char *spaced = malloc(len + 1);
    if (!spaced)
        return NULL;
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        size_t n = unicode_space_len((const unsigned char *)path + i, len - i);
        if (n) {
            spaced[out++] = ' ';
            i += n;
        } else {
            spaced[out++] = path[i++];
        }
    }
    spaced[out] = '\0';

    const char *home = env->home ? env->home : "";
    if (strcmp(spaced, "~") == 0)
        return strdup(home);
    if (strncmp(spaced, "~/", 2) == 0) {
        char *joined = NULL;
        if (asprintf(&joined, "%s%s", home, spaced + 1) < 0)
            return NULL;
        return joined;
    }
    return TAKE_PTR(spaced);
}

char *tool_normalize_path(const char *path)
{
    char *out = malloc(strlen(path) + 2);
    if (!out)
        return NULL;
    size_t olen = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            while (olen > 0 && out[olen - 1] != '/')
                olen--;
            if (olen > 0)
                olen--; /* the slash before the popped segment */
            continue;
        }
        out[olen++] = '/';
        memcpy(out + olen, seg, n);
        olen += n;
    }
    if (olen == 0)
        out[olen++] = '/';
    out[olen] = '\0';
    return out;
}

/* Node's path.resolve(cwd, rel) for an absolute cwd. */
static char *resolve_lexically(const char *cwd, const char *rel)
{
    size_t cap = strlen(cwd) + strlen(rel) + 3;
    _cleanup_free_ char *joined = malloc(cap);
    if (!joined)
        return NULL;
    snprintf(joined, cap, "%s/%s", cwd, rel);
    return tool_normalize_path(joined);
}

char *tool_resolve_path(const char *path, const struct tool_env *env)
{
    _cleanup_free_ char *expanded = tool_expand_path(path, env);
    if (!expanded)
        return NULL;
    /* pi returns an absolute path as given, without normalising it. */
    if (expanded[0] == '/')
        return TAKE_PTR(expanded);
    return resolve_lexically(env->cwd, expanded);
}

static bool path_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* PATH with each byte that SWAPPED accepts (at i, of len) replaced by the
 * three bytes WITH (a UTF-8 character): pi's macOS name variants. */
static char *swap_bytes(const char *path, bool (*swapped)(const char *path, size_t i, size_t len),
                        const char with[static 3])
{
    size_t len = strlen(path);
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (!swapped(path, i, len)) {
            out[o++] = path[i];
            continue;
        }
        memcpy(out + o, with, 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* The space of " AM." / " PM." (any case), which macOS's screenshot names
 * have as a narrow no-break space. */
static bool before_am_pm(const char *path, size_t i, size_t len)
{
    return path[i] == ' ' && i + 3 < len && strchr("aApP", path[i + 1]) &&
           (path[i + 2] == 'm' || path[i + 2] == 'M') && path[i + 3] == '.';
}

static char *am_pm_variant(const char *path)
{
    return swap_bytes(path, before_am_pm, "\xe2\x80\xaf");
}

static bool straight_quote(const char *path, size_t i, size_t len)
{
    (void)len;
    return path[i] == '\'';
}

static char *curly_quote_variant(const char *path)
{
    return swap_bytes(path, straight_quote, "\xe2\x80\x99");
}

static char *nfd_variant(const char *path)
{
    size_t len = 0;
    _cleanup_free_ char *clean = utf8_sanitize(path, strlen(path), &len);
    if (!clean)
        return NULL;
    return (char *)utf8proc_NFD((const utf8proc_uint8_t *)clean);
}

char *tool_resolve_read_path(const char *path, const struct tool_env *env)
{
    _cleanup_free_ char *resolved = tool_resolve_path(path, env);
    if (!resolved || path_exists(resolved))
        return TAKE_PTR(resolved);

    _cleanup_free_ char *am_pm = am_pm_variant(resolved);
    if (am_pm && strcmp(am_pm, resolved) != 0 && path_exists(am_pm))
        return TAKE_PTR(am_pm);
    _cleanup_free_ char *nfd = nfd_variant(resolved);
    if (nfd && strcmp(nfd, resolved) != 0 && path_exists(nfd))
        return TAKE_PTR(nfd);
    _cleanup_free_ char *curly = curly_quote_variant(resolved);
    if (curly && strcmp(curly, resolved) != 0 && path_exists(curly))
        return TAKE_PTR(curly);
    if (nfd) {
        _cleanup_free_ char *nfd_curly = curly_quote_variant(nfd);
        if (nfd_curly && strcmp(nfd_curly, resolved) != 0 && path_exists(nfd_curly))
            return TAKE_PTR(nfd_curly);
    }
    return TAKE_PTR(resolved);
}

/* WHATWG UTF-8 decoder bounds for the second byte of a sequence. */
static bool utf8_lead_info(unsigned char c, size_t *need, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        *need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
        *need = 2;
        if (c == 0xe0)
            *lo = 0xa0;
        if (c == 0xed)
            *hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        *need = 3;
        if (c == 0xf0)
            *lo = 0x90;
        if (c == 0xf4)
            *hi = 0x8f;
    } else {
        return false;
    }
    return true;
}

/* Bytes consumed at buf[at] by one decoder step; *seq_len is that length
 * when it was a complete character, 0 when it becomes one U+FFFD. */
static size_t utf8_valid_prefix(const char *buf, size_t len, size_t at, size_t *seq_len)
{
    const unsigned char *s = (const unsigned char *)buf + at;
    size_t left = len - at;
    size_t need;
    unsigned char lo, hi;
    if (s[0] < 0x80) {
        *seq_len = 1;
        return 1;
    }
    if (!utf8_lead_info(s[0], &need, &lo, &hi)) {
        *seq_len = 0;
        return 1;
    }
    size_t i = 1;
    for (; i <= need && i < left; i++) {
        unsigned char c = s[i];
        if (c < lo || c > hi)
            break;
        lo = 0x80;
        hi = 0xbf;
    }
    *seq_len = i == need + 1 ? i : 0;
    return i;
}

char *utf8_sanitize(const char *buf, size_t len, size_t *out_len)
{
    /* Each invalid byte becomes at most 3 bytes. */
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t seq_len;
        size_t consumed = utf8_valid_prefix(buf, len, i, &seq_len);
        if (seq_len) {
            memcpy(out + o, buf + i, seq_len);
            o += seq_len;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
        }
        i += consumed;
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

size_t utf8_incomplete_tail(const char *buf, size_t len)
{
    /* A sequence that is valid so far but cut by the end of the buffer. */
    size_t start = len > 3 ? len - 3 : 0;
    for (size_t i = start; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0xc2 || c > 0xf4)
            continue;
        size_t seq_len;
        size_t consumed = utf8_valid_prefix(buf, len, i, &seq_len);
        if (seq_len == 0 && i + consumed == len)
            return len - i;
    }
    return 0;
}

size_t utf16_length(const char *s, size_t len)
{
    size_t units = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c & 0xc0) == 0x80)
            continue;
        units += c >= 0xf0 ? 2 : 1;
    }
    return units;
}
