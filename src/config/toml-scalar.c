/* TOML scalars: UTF-8 validation, the four string kinds with their escapes,
 * integers, floats and date-times. Untrusted input; every error names
 * file:line:column. Host context. */
#include "config/toml-internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole document must be UTF-8 without overlong forms or surrogates. */
int toml_validate_utf8(struct parser *p)
{
    const unsigned char *s = (const unsigned char *)p->data;
    size_t i = 0;
    while (i < p->length) {
        unsigned char c = s[i];
        size_t need;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3;
            cp = c & 0x07;
        } else {
            return toml_fail_at(p, i, "invalid UTF-8 (byte 0x%02X)", c);
        }
        for (size_t k = 1; k <= need; k++) {
            if (i + k >= p->length || (s[i + k] & 0xC0) != 0x80)
                return toml_fail_at(p, i, "invalid UTF-8 (truncated sequence)");
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t min_for[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_for[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return toml_fail_at(p, i, "invalid UTF-8 (overlong form, surrogate or out of range)");
        i += need + 1;
    }
    return 0;
}

static void encode_utf8(uint32_t cp, char *out, size_t *ret_length)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        *ret_length = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        *ret_length = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        *ret_length = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        *ret_length = 4;
    }
}

/* ---------- strings ---------- */

static int parse_escape(struct parser *p, struct buffer *out)
{
    size_t start = p->pos;
    p->pos++; /* the backslash */
    char c = peek(p);
    const char *simple = NULL;
    switch (c) {
    case 'b':
        simple = "\b";
        break;
    case 't':
        simple = "\t";
        break;
    case 'n':
        simple = "\n";
        break;
    case 'f':
        simple = "\f";
        break;
    case 'r':
        simple = "\r";
        break;
    case '"':
        simple = "\"";
        break;
    case '\\':
        simple = "\\";
        break;
    case 'u':
    case 'U': {
        int digits = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 1; i <= digits; i++) {
            int h = hex_value(peek_at(p, p->pos + i));
            if (h < 0)
                return toml_fail_at(p, start, "expected %d hex digits after \\%c", digits, c);
            cp = cp * 16 + (uint32_t)h;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return toml_fail_at(p, start, "\\%c escape is not a Unicode scalar value", c);
        char utf8[4];
        size_t n;
        encode_utf8(cp, utf8, &n);
        p->pos += 1 + digits;
        return toml_buffer_append(out, utf8, n) < 0 ? toml_oom(p) : 0;
    }
    default:
        break;
    }
    if (!simple)
        return toml_fail_at(
            p, start,
            "invalid escape sequence (expected one of \\b \\t \\n \\f \\r \\\" \\\\ "
            "\\uXXXX \\UXXXXXXXX)");
    p->pos++;
    return toml_buffer_append(out, simple, 1) < 0 ? toml_oom(p) : 0;
}

/* Consumes the closing delimiter of a multi-line string: up to two extra
 * quotes belong to the content ("""a""""" is a string ending in two quotes). */
static bool multiline_close(struct parser *p, char quote, struct buffer *out, int *ret)
{
    size_t run = 0;
    while (peek_at(p, p->pos + run) == quote)
        run++;
    if (run < 3)
        return false;
    if (run > 5) {
        *ret = toml_fail_at(p, p->pos + 5, "too many quotes at the end of a multi-line string");
        return true;
    }
    char quotes[2] = {quote, quote};
    if (toml_buffer_append(out, quotes, run - 3) < 0) {
        *ret = toml_oom(p);
        return true;
    }
    p->pos += run;
    *ret = 0;
    return true;
}

int toml_parse_string_text(struct parser *p, struct buffer *out, bool allow_multiline)
{
    size_t start = p->pos;
    char quote = peek(p);
    bool literal = quote == '\'';
    bool multiline = allow_multiline && starts_with(p, literal ? "'''" : "\"\"\"");
    p->pos += multiline ? 3 : 1;
    if (multiline && at_newline(p))
        skip_newline(p);
    for (;;) {
        if (at_end(p))
            return toml_fail_at(p, start, "unterminated string (expected the closing %s)",
                                multiline ? (literal ? "'''" : "\"\"\"") : (literal ? "'" : "\""));
        char c = peek(p);
        if (multiline) {
            int ret;
            if (c == quote && multiline_close(p, quote, out, &ret))
                return ret;
            if (at_newline(p)) {
                skip_newline(p);
                if (toml_buffer_append(out, "\n", 1) < 0)
                    return toml_oom(p);
                continue;
            }
            if (!literal && c == '\\') {
                /* a line-ending backslash swallows the newline and the
                 * whitespace that follows it */
                size_t look = p->pos + 1;
                while (peek_at(p, look) == ' ' || peek_at(p, look) == '\t')
                    look++;
                char after = peek_at(p, look);
                if (after == '\n' || (after == '\r' && peek_at(p, look + 1) == '\n')) {
                    p->pos = look;
                    while (peek(p) == ' ' || peek(p) == '\t' || at_newline(p)) {
                        if (at_newline(p))
                            skip_newline(p);
                        else
                            p->pos++;
                    }
                    continue;
                }
            }
        } else {
            if (c == quote) {
                p->pos++;
                return 0;
            }
            if (at_newline(p) || c == '\n')
                return toml_fail_at(p, start, "unterminated string (newline before the closing %s)",
                                    literal ? "'" : "\"");
        }
        if (!literal && c == '\\') {
            if (parse_escape(p, out) < 0)
                return -1;
            continue;
        }
        if (is_forbidden_control((unsigned char)c))
            return toml_fail_at(p, p->pos, "control character 0x%02X must be escaped in a string",
                                (unsigned char)c);
        if (toml_buffer_append(out, &c, 1) < 0)
            return toml_oom(p);
        p->pos++;
    }
}

/* ---------- scalars ---------- */

static bool digits_at(const struct parser *p, size_t offset, int n)
{
    for (int i = 0; i < n; i++)
        if (!is_digit(peek_at(p, offset + (size_t)i)))
            return false;
    return true;
}

static int number_at(const struct parser *p, size_t offset, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v = v * 10 + (p->data[offset + (size_t)i] - '0');
    return v;
}

bool toml_looks_like_date(const struct parser *p)
{
    return digits_at(p, p->pos, 4) && peek_at(p, p->pos + 4) == '-';
}

bool toml_looks_like_time(const struct parser *p)
{
    return digits_at(p, p->pos, 2) && peek_at(p, p->pos + 2) == ':';
}

static int parse_time_part(struct parser *p, struct buffer *out, size_t start)
{
    if (!digits_at(p, p->pos, 2) || peek_at(p, p->pos + 2) != ':' || !digits_at(p, p->pos + 3, 2) ||
        peek_at(p, p->pos + 5) != ':' || !digits_at(p, p->pos + 6, 2))
        return toml_fail_at(p, start, "invalid time (expected HH:MM:SS)");
    int hour = number_at(p, p->pos, 2), minute = number_at(p, p->pos + 3, 2),
        second = number_at(p, p->pos + 6, 2);
    if (hour > 23 || minute > 59 || second > 60)
        return toml_fail_at(p, start, "time out of range (%02d:%02d:%02d)", hour, minute, second);
    if (toml_buffer_append(out, p->data + p->pos, 8) < 0)
        return toml_oom(p);
    p->pos += 8;
    if (peek(p) == '.') {
        size_t frac = p->pos + 1;
        while (is_digit(peek_at(p, frac)))
            frac++;
        if (frac == p->pos + 1)
            return toml_fail_at(p, p->pos,
                                "expected digits after the decimal point of the seconds");
        if (toml_buffer_append(out, p->data + p->pos, frac - p->pos) < 0)
            return toml_oom(p);
        p->pos = frac;
    }
    return 0;
}

int toml_parse_datetime(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    struct buffer text = {0};
    enum toml_type type;
    if (toml_looks_like_time(p)) {
        if (parse_time_part(p, &text, start) < 0)
            goto fail;
        type = TOML_TIME_LOCAL;
    } else {
        if (!digits_at(p, p->pos, 4) || peek_at(p, p->pos + 4) != '-' ||
            !digits_at(p, p->pos + 5, 2) || peek_at(p, p->pos + 7) != '-' ||
            !digits_at(p, p->pos + 8, 2)) {
            toml_fail_at(p, start, "invalid date (expected YYYY-MM-DD)");
            goto fail;
        }
        int year = number_at(p, p->pos, 4), month = number_at(p, p->pos + 5, 2),
            day = number_at(p, p->pos + 8, 2);
        static const int days_in[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        if (month < 1 || month > 12 || day < 1 || day > days_in[month - 1] ||
            (month == 2 && day == 29 && !leap)) {
            toml_fail_at(p, start, "date out of range (%04d-%02d-%02d)", year, month, day);
            goto fail;
        }
        if (toml_buffer_append(&text, p->data + p->pos, 10) < 0) {
            toml_oom(p);
            goto fail;
        }
        p->pos += 10;
        type = TOML_DATE_LOCAL;
        char sep = peek(p);
        if (sep == 'T' || sep == 't' || (sep == ' ' && digits_at(p, p->pos + 1, 2))) {
            p->pos++;
            if (toml_buffer_append(&text, "T", 1) < 0) {
                toml_oom(p);
                goto fail;
            }
            if (parse_time_part(p, &text, start) < 0)
                goto fail;
            type = TOML_DATETIME_LOCAL;
            char z = peek(p);
            if (z == 'Z' || z == 'z') {
                p->pos++;
                if (toml_buffer_append(&text, "Z", 1) < 0) {
                    toml_oom(p);
                    goto fail;
                }
                type = TOML_DATETIME;
            } else if (z == '+' || z == '-') {
                if (!digits_at(p, p->pos + 1, 2) || peek_at(p, p->pos + 3) != ':' ||
                    !digits_at(p, p->pos + 4, 2)) {
                    toml_fail_at(p, p->pos, "invalid time offset (expected +HH:MM or -HH:MM)");
                    goto fail;
                }
                if (number_at(p, p->pos + 1, 2) > 23 || number_at(p, p->pos + 4, 2) > 59) {
                    toml_fail_at(p, p->pos, "time offset out of range");
                    goto fail;
                }
                if (toml_buffer_append(&text, p->data + p->pos, 6) < 0) {
                    toml_oom(p);
                    goto fail;
                }
                p->pos += 6;
                type = TOML_DATETIME;
            }
        }
    }
    struct toml_value *v = toml_value_new(p, type, start);
    if (!v) {
        toml_oom(p);
        goto fail;
    }
    v->datetime = text.data;
    *ret = v;
    return 0;
fail:
    free(text.data);
    return -1;
}

/* Digits of one base with '_' only between two digits. Copies the digits
 * (without underscores) to out. */
static bool scan_digits(const char *s, size_t length, int base, struct buffer *out)
{
    if (length == 0)
        return false;
    for (size_t i = 0; i < length; i++) {
        char c = s[i];
        if (c == '_') {
            if (i == 0 || i + 1 == length || s[i + 1] == '_')
                return false;
            continue;
        }
        int h = hex_value(c);
        if (h < 0 || h >= base)
            return false;
        if (toml_buffer_append(out, &c, 1) < 0)
            return false;
    }
    return true;
}

static bool is_number_char(char c)
{
    return is_bare_key_char(c) || c == '+' || c == '.';
}

int toml_parse_number(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    while (is_number_char(peek(p)))
        p->pos++;
    const char *s = p->data + start;
    size_t length = p->pos - start;
    char shown[48];
    snprintf(shown, sizeof(shown), "%.*s%s", (int)(length > 40 ? 40 : length), s,
             length > 40 ? "..." : "");
    __attribute__((cleanup(toml_buffer_freep))) struct buffer buf = {0};

    size_t i = 0;
    bool negative = false;
    if (s[0] == '+' || s[0] == '-') {
        negative = s[0] == '-';
        i = 1;
    }
    const char *rest = s + i;
    size_t rest_length = length - i;
    if ((rest_length == 3 && (memcmp(rest, "inf", 3) == 0 || memcmp(rest, "nan", 3) == 0))) {
        struct toml_value *v = toml_value_new(p, TOML_FLOAT, start);
        if (!v)
            return toml_oom(p);
        v->floating = rest[0] == 'i' ? (negative ? -INFINITY : INFINITY) : NAN;
        if (rest[0] == 'n' && negative)
            v->floating = -NAN;
        *ret = v;
        return 0;
    }
    if (rest_length > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'o' || rest[1] == 'b')) {
        int base = rest[1] == 'x' ? 16 : rest[1] == 'o' ? 8 : 2;
        bool valid = i == 0 && scan_digits(rest + 2, rest_length - 2, base, &buf);
        if (!valid)
            return toml_fail_at(p, start, "invalid %s integer '%s'",
                                base == 16  ? "hexadecimal"
                                : base == 8 ? "octal"
                                            : "binary",
                                shown);
        uint64_t value = 0;
        for (const char *d = buf.data; *d; d++) {
            uint64_t next = value * (uint64_t)base + (uint64_t)hex_value(*d);
            if (value > (UINT64_MAX - (uint64_t)hex_value(*d)) / (uint64_t)base ||
                next > (uint64_t)INT64_MAX)
                return toml_fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
            value = next;
        }
        struct toml_value *v = toml_value_new(p, TOML_INTEGER, start);
        if (!v)
            return toml_oom(p);
        v->integer = (int64_t)value;
        *ret = v;
        return 0;
    }

    /* decimal: int [. frac] [e exp] */
    size_t int_end = 0;
    while (int_end < rest_length && rest[int_end] != '.' && rest[int_end] != 'e' &&
           rest[int_end] != 'E')
        int_end++;
    bool valid = scan_digits(rest, int_end, 10, &buf);
    if (valid && int_end > 1 && rest[0] == '0')
        return toml_fail_at(p, start, "leading zeros are not allowed in '%s'", shown);
    bool is_float = false;
    size_t j = int_end;
    if (valid && j < rest_length && rest[j] == '.') {
        is_float = true;
        size_t frac_end = j + 1;
        while (frac_end < rest_length && rest[frac_end] != 'e' && rest[frac_end] != 'E')
            frac_end++;
        valid = toml_buffer_append(&buf, ".", 1) == 0 &&
                scan_digits(rest + j + 1, frac_end - j - 1, 10, &buf);
        j = frac_end;
    }
    if (valid && j < rest_length && (rest[j] == 'e' || rest[j] == 'E')) {
        is_float = true;
        j++;
        valid = toml_buffer_append(&buf, "e", 1) == 0;
        if (valid && j < rest_length && (rest[j] == '+' || rest[j] == '-')) {
            valid = toml_buffer_append(&buf, &rest[j], 1) == 0;
            j++;
        }
        valid = valid && scan_digits(rest + j, rest_length - j, 10, &buf);
        j = rest_length;
    }
    if (!valid || j != rest_length)
        return toml_fail_at(p, start,
                            "invalid number '%s' (expected an integer, a float, "
                            "inf, nan or a date-time)",
                            shown);
    struct toml_value *v = toml_value_new(p, is_float ? TOML_FLOAT : TOML_INTEGER, start);
    if (!v)
        return toml_oom(p);
    errno = 0;
    if (is_float) {
        v->floating = strtod(buf.data, NULL);
        if (negative)
            v->floating = -v->floating;
        if (errno == ERANGE && isinf(v->floating)) {
            toml_free(v);
            return toml_fail_at(p, start, "float '%s' is out of range", shown);
        }
    } else {
        char signed_digits[32];
        if (strlen(buf.data) > 20) {
            toml_free(v);
            return toml_fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
        }
        snprintf(signed_digits, sizeof(signed_digits), "%s%s", negative ? "-" : "", buf.data);
        v->integer = strtoll(signed_digits, NULL, 10);
        if (errno == ERANGE) {
            toml_free(v);
            return toml_fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
        }
    }
    *ret = v;
    return 0;
}
