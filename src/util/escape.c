/* Escaping of hidden characters for approval prompts (escape.h). Any
 * context. The input is untrusted: any bytes, any length up to SIZE_MAX/12
 * (the longest escape, "\u{10ffff}", is 10 bytes for a 4-byte character;
 * "\xff" 4 bytes for one). */
#include "util/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Ranges escaped whatever utf8proc's Unicode version says: the characters
 * known to hide or reorder text. The category check below catches the rest
 * (and what a newer Unicode adds to Cf). */
static const struct {
    uint32_t first, last;
} hidden_ranges[] = {
    {0x00a0, 0x00a0},    {0x00ad, 0x00ad},   {0x034f, 0x034f},   {0x061c, 0x061c},
    {0x115f, 0x1160},    {0x1680, 0x1680},   {0x17b4, 0x17b5},   {0x180b, 0x180f},
    {0x2000, 0x200f},    {0x2028, 0x202f},   {0x205f, 0x206f},   {0x2800, 0x2800},
    {0x3000, 0x3000},    {0x3164, 0x3164},   {0xd800, 0xdfff},   {0xe000, 0xf8ff},
    {0xfdd0, 0xfdef},    {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},   {0xffa0, 0xffa0},
    {0xfff0, 0xfffb},    {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
    {0xf0000, 0x10ffff},
};

bool text_codepoint_hidden(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
        return true;
    if (cp < 0x7f)
        return false;
    if (cp > 0x10ffff || (cp & 0xfffe) == 0xfffe)
        return true; /* noncharacters U+xFFFE, U+xFFFF */
    for (size_t i = 0; i < sizeof(hidden_ranges) / sizeof(hidden_ranges[0]); i++) {
        if (cp >= hidden_ranges[i].first && cp <= hidden_ranges[i].last)
            return true;
    }
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return true;
    default:
        return false;
    }
}

/* One strictly valid UTF-8 sequence at s (no overlong forms, no
 * surrogates, nothing above U+10FFFF): its length, or 0 when s[0] starts
 * none (then one byte is shown as \xNN). */
static size_t utf8_decode(const unsigned char *s, size_t left, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t need;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        need = 1, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (left < need + 1)
        return 0;
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return need + 1;
}

static bool layout_kept(uint32_t cp, unsigned flags)
{
    return (flags & TEXT_ESCAPE_KEEP_LAYOUT) && (cp == '\n' || cp == '\t');
}

/* Walks s; with out, writes the escaped text there (sized by the caller
 * from a first pass). Returns the output length; *count the escapes. */
static size_t escape_pass(const char *s, size_t len, unsigned flags, char *out, size_t *count)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, n = 0;
    char buf[16];
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t seq = utf8_decode(p + i, len - i, &cp);
        const char *piece;
        size_t piece_len;
        if (seq == 0) {
            piece_len = (size_t)snprintf(buf, sizeof(buf), "\\x%02x", p[i]);
            piece = buf;
            seq = 1;
            n++;
        } else if (text_codepoint_hidden(cp) && !layout_kept(cp, flags)) {
            if (cp < 0x20 || cp == 0x7f)
                piece_len = (size_t)snprintf(buf, sizeof(buf), "\\x%02x", (unsigned)cp);
            else if (cp <= 0xffff)
                piece_len = (size_t)snprintf(buf, sizeof(buf), "\\u%04x", (unsigned)cp);
            else
                piece_len = (size_t)snprintf(buf, sizeof(buf), "\\u{%x}", (unsigned)cp);
            piece = buf;
            n++;
        } else if (cp == '\\' && (flags & TEXT_ESCAPE_BACKSLASH)) {
            piece = "\\\\";
            piece_len = 2;
        } else {
            piece = s + i;
            piece_len = seq;
        }
        if (out)
            memcpy(out + o, piece, piece_len);
        o += piece_len;
        i += seq;
    }
    if (count)
        *count = n;
    return o;
}

size_t text_count_hidden(const char *s, size_t len, unsigned flags)
{
    size_t n = 0;
    escape_pass(s, len, flags, NULL, &n);
    return n;
}

char *text_escape_visible(const char *s, size_t len, unsigned flags, size_t *count)
{
    if (len > SIZE_MAX / 12)
        return NULL;
    size_t n = 0;
    size_t out_len = escape_pass(s, len, flags, NULL, &n);
    char *out = malloc(out_len + 1);
    if (!out)
        return NULL;
    escape_pass(s, len, flags, out, NULL);
    out[out_len] = '\0';
    if (count)
        *count = n;
    return out;
}
