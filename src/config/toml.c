/* TOML 1.0 parser (toml.h). A recursive-descent reader over one in-memory
 * document with the redefinition rules of the specification enforced as
 * tables are built. The document is untrusted input: its size, nesting depth,
 * key length and table width are bounded, and every error names
 * file:line:column. Host context, unprivileged. */
#include "config/toml.h"
#include "util/cleanup.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A table wider than this is refused: lookups are linear, and a hostile file
 * could otherwise make parsing quadratic. */
#define TOML_MAX_TABLE_KEYS 10000

struct parser {
    const char *data;
    size_t length;
    size_t pos;
    const char *name;
    struct cordon_error *err;
    int depth;
    /* line/column lookups are mostly for increasing offsets: resume from here */
    size_t cache_offset;
    int cache_line;
    size_t cache_line_start;
};

struct buffer {
    char *data;
    size_t length, capacity;
};

static void locate(struct parser *p, size_t offset, int *ret_line, int *ret_column)
{
    if (offset < p->cache_offset) {
        p->cache_offset = 0;
        p->cache_line = 1;
        p->cache_line_start = 0;
    }
    for (size_t i = p->cache_offset; i < offset && i < p->length; i++) {
        if (p->data[i] == '\n') {
            p->cache_line++;
            p->cache_line_start = i + 1;
        }
    }
    p->cache_offset = offset;
    int column = 1;
    for (size_t i = p->cache_line_start; i < offset && i < p->length; i++)
        if (((unsigned char)p->data[i] & 0xC0) != 0x80)
            column++;
    *ret_line = p->cache_line;
    *ret_column = column;
}

static int fail_at(struct parser *p, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(struct parser *p, size_t offset, const char *fmt, ...)
{
    int line, column;
    locate(p, offset, &line, &column);
    char message[CORDON_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return error_set(p->err, 0, "%s:%d:%d: %s", p->name, line, column, message);
}

/* A short description of what sits at offset, for "expected X, found Y". */
static const char *found(struct parser *p, size_t offset, char *buf, size_t size)
{
    if (offset >= p->length)
        return "end of file";
    unsigned char c = (unsigned char)p->data[offset];
    if (c == '\n' || (c == '\r' && offset + 1 < p->length && p->data[offset + 1] == '\n'))
        return "end of line";
    if (c >= 0x21 && c < 0x7F)
        snprintf(buf, size, "'%c'", c);
    else if (c == ' ' || c == '\t')
        snprintf(buf, size, "whitespace");
    else
        snprintf(buf, size, "byte 0x%02X", c);
    return buf;
}

#define FOUND(p) found((p), (p)->pos, (char[32]){0}, 32)

static int buffer_append(struct buffer *b, const char *data, size_t length)
{
    if (b->length + length + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 32;
        while (capacity < b->length + length + 1)
            capacity *= 2;
        char *grown = realloc(b->data, capacity);
        if (!grown)
            return -1;
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, data, length);
    b->length += length;
    b->data[b->length] = '\0';
    return 0;
}

static void buffer_freep(struct buffer *b)
{
    free(b->data);
}

static int oom(struct parser *p)
{
    return error_set(p->err, ENOMEM, "%s: parsing", p->name);
}

/* ---------- values and tables ---------- */

static struct toml_value *value_new(struct parser *p, enum toml_type type, size_t offset)
{
    struct toml_value *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->type = type;
    locate(p, offset, &v->line, &v->column);
    return v;
}

void toml_free(struct toml_value *value)
{
    if (!value)
        return;
    switch (value->type) {
    case TOML_STRING:
        free(value->string.text);
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        free(value->datetime);
        break;
    case TOML_ARRAY:
        for (size_t i = 0; i < value->array.count; i++)
            toml_free(value->array.items[i]);
        free(value->array.items);
        break;
    case TOML_TABLE:
        for (size_t i = 0; i < value->table.count; i++) {
            free(value->table.entries[i].key);
            toml_free(value->table.entries[i].value);
        }
        free(value->table.entries);
        break;
    default:
        break;
    }
    free(value);
}

static struct toml_value *table_lookup(const struct toml_value *table, const char *key)
{
    for (size_t i = 0; i < table->table.count; i++)
        if (strcmp(table->table.entries[i].key, key) == 0)
            return table->table.entries[i].value;
    return NULL;
}

const struct toml_value *toml_table_get(const struct toml_value *table, const char *key)
{
    if (!table || table->type != TOML_TABLE)
        return NULL;
    return table_lookup(table, key);
}

/* Takes ownership of value on success only. */
static int table_add(struct parser *p, struct toml_value *table, const char *key, size_t key_offset,
                     struct toml_value *value)
{
    if (table->table.count >= TOML_MAX_TABLE_KEYS)
        return fail_at(p, key_offset, "too many keys in one table (limit %d)", TOML_MAX_TABLE_KEYS);
    if (table->table.count == table->table.capacity) {
        size_t capacity = table->table.capacity ? table->table.capacity * 2 : 8;
        struct toml_entry *grown = realloc(table->table.entries, capacity * sizeof(*grown));
        if (!grown)
            return oom(p);
        table->table.entries = grown;
        table->table.capacity = capacity;
    }
    char *copy = strdup(key);
    if (!copy)
        return oom(p);
    struct toml_entry *e = &table->table.entries[table->table.count++];
    e->key = copy;
    e->value = value;
    locate(p, key_offset, &e->line, &e->column);
    return 0;
}

static int array_add(struct parser *p, struct toml_value *array, struct toml_value *item)
{
    if (array->array.count == array->array.capacity) {
        size_t capacity = array->array.capacity ? array->array.capacity * 2 : 8;
        struct toml_value **grown = realloc(array->array.items, capacity * sizeof(*grown));
        if (!grown)
            return oom(p);
        array->array.items = grown;
        array->array.capacity = capacity;
    }
    array->array.items[array->array.count++] = item;
    return 0;
}

const char *toml_type_name(enum toml_type type)
{
    switch (type) {
    case TOML_STRING:
        return "string";
    case TOML_INTEGER:
        return "integer";
    case TOML_FLOAT:
        return "float";
    case TOML_BOOLEAN:
        return "boolean";
    case TOML_DATETIME:
        return "offset date-time";
    case TOML_DATETIME_LOCAL:
        return "local date-time";
    case TOML_DATE_LOCAL:
        return "local date";
    case TOML_TIME_LOCAL:
        return "local time";
    case TOML_ARRAY:
        return "array";
    case TOML_TABLE:
        return "table";
    }
    return "value";
}

/* ---------- lexical helpers ---------- */

static bool at_end(const struct parser *p)
{
    return p->pos >= p->length;
}

static char peek_at(const struct parser *p, size_t offset)
{
    return offset < p->length ? p->data[offset] : '\0';
}

static char peek(const struct parser *p)
{
    return peek_at(p, p->pos);
}

static bool starts_with(const struct parser *p, const char *s)
{
    size_t n = strlen(s);
    return p->length - p->pos >= n && memcmp(p->data + p->pos, s, n) == 0;
}

static bool at_newline(const struct parser *p)
{
    return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, p->pos + 1) == '\n');
}

static void skip_newline(struct parser *p)
{
    p->pos += peek(p) == '\r' ? 2 : 1;
}

static void skip_whitespace(struct parser *p)
{
    while (peek(p) == ' ' || peek(p) == '\t')
        p->pos++;
}

/* Control characters other than tab may appear neither in comments nor in
 * strings (TOML 1.0); a lone CR is not a newline. */
static bool is_forbidden_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7F;
}

static int skip_comment(struct parser *p)
{
    if (peek(p) != '#')
        return 0;
    while (!at_end(p) && !at_newline(p)) {
        if (is_forbidden_control((unsigned char)peek(p)))
            return fail_at(p, p->pos, "control character 0x%02X is not allowed in a comment",
                           (unsigned char)peek(p));
        p->pos++;
    }
    return 0;
}

/* Whitespace, comments and newlines, as allowed between array elements. */
static int skip_blank(struct parser *p)
{
    for (;;) {
        skip_whitespace(p);
        if (skip_comment(p) < 0)
            return -1;
        if (!at_newline(p))
            return 0;
        skip_newline(p);
    }
}

static int expect_line_end(struct parser *p, const char *after)
{
    skip_whitespace(p);
    if (skip_comment(p) < 0)
        return -1;
    if (at_end(p))
        return 0;
    if (!at_newline(p))
        return fail_at(p, p->pos, "expected end of line after %s, found %s", after, FOUND(p));
    skip_newline(p);
    return 0;
}

/* The whole document must be UTF-8 without overlong forms or surrogates. */
static int validate_utf8(struct parser *p)
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
            return fail_at(p, i, "invalid UTF-8 (byte 0x%02X)", c);
        }
        for (size_t k = 1; k <= need; k++) {
            if (i + k >= p->length || (s[i + k] & 0xC0) != 0x80)
                return fail_at(p, i, "invalid UTF-8 (truncated sequence)");
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t min_for[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_for[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail_at(p, i, "invalid UTF-8 (overlong form, surrogate or out of range)");
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

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
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
                return fail_at(p, start, "expected %d hex digits after \\%c", digits, c);
            cp = cp * 16 + (uint32_t)h;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail_at(p, start, "\\%c escape is not a Unicode scalar value", c);
        char utf8[4];
        size_t n;
        encode_utf8(cp, utf8, &n);
        p->pos += 1 + digits;
        return buffer_append(out, utf8, n) < 0 ? oom(p) : 0;
    }
    default:
        break;
    }
    if (!simple)
        return fail_at(p, start,
                       "invalid escape sequence (expected one of \\b \\t \\n \\f \\r \\\" \\\\ "
                       "\\uXXXX \\UXXXXXXXX)");
    p->pos++;
    return buffer_append(out, simple, 1) < 0 ? oom(p) : 0;
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
        *ret = fail_at(p, p->pos + 5, "too many quotes at the end of a multi-line string");
        return true;
    }
    char quotes[2] = {quote, quote};
    if (buffer_append(out, quotes, run - 3) < 0) {
        *ret = oom(p);
        return true;
    }
    p->pos += run;
    *ret = 0;
    return true;
}

static int parse_string_text(struct parser *p, struct buffer *out, bool allow_multiline)
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
            return fail_at(p, start, "unterminated string (expected the closing %s)",
                           multiline ? (literal ? "'''" : "\"\"\"") : (literal ? "'" : "\""));
        char c = peek(p);
        if (multiline) {
            int ret;
            if (c == quote && multiline_close(p, quote, out, &ret))
                return ret;
            if (at_newline(p)) {
                skip_newline(p);
                if (buffer_append(out, "\n", 1) < 0)
                    return oom(p);
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
                return fail_at(p, start, "unterminated string (newline before the closing %s)",
                               literal ? "'" : "\"");
        }
        if (!literal && c == '\\') {
            if (parse_escape(p, out) < 0)
                return -1;
            continue;
        }
        if (is_forbidden_control((unsigned char)c))
            return fail_at(p, p->pos, "control character 0x%02X must be escaped in a string",
                           (unsigned char)c);
        if (buffer_append(out, &c, 1) < 0)
            return oom(p);
        p->pos++;
    }
}

/* ---------- keys ---------- */

struct key_path {
    char *parts[TOML_MAX_DEPTH];
    size_t offsets[TOML_MAX_DEPTH];
    int count;
};

static void key_path_clear(struct key_path *k)
{
    for (int i = 0; i < k->count; i++)
        free(k->parts[i]);
    k->count = 0;
}

static bool is_bare_key_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static int parse_key(struct parser *p, struct key_path *k)
{
    k->count = 0;
    for (;;) {
        skip_whitespace(p);
        size_t start = p->pos;
        struct buffer part = {0};
        char c = peek(p);
        if (c == '"' || c == '\'') {
            if (parse_string_text(p, &part, false) < 0) {
                free(part.data);
                return -1;
            }
            if (!part.data && buffer_append(&part, "", 0) < 0)
                return oom(p);
            if (strlen(part.data) != part.length) {
                free(part.data);
                return fail_at(p, start, "a key may not contain U+0000");
            }
        } else if (is_bare_key_char(c)) {
            while (is_bare_key_char(peek(p)))
                p->pos++;
            if (buffer_append(&part, p->data + start, p->pos - start) < 0)
                return oom(p);
        } else {
            return fail_at(p, start, "expected a key (bare, \"quoted\" or 'literal'), found %s",
                           FOUND(p));
        }
        if (part.length > TOML_MAX_KEY_LEN) {
            free(part.data);
            return fail_at(p, start, "key longer than %d bytes", TOML_MAX_KEY_LEN);
        }
        if (k->count >= TOML_MAX_DEPTH) {
            free(part.data);
            return fail_at(p, start, "dotted key with more than %d parts", TOML_MAX_DEPTH);
        }
        k->parts[k->count] = part.data;
        k->offsets[k->count] = start;
        k->count++;
        skip_whitespace(p);
        if (peek(p) != '.')
            return 0;
        p->pos++;
    }
}

static void join_key(const struct key_path *k, int upto, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < upto && pos + 1 < size; i++) {
        int n = snprintf(buf + pos, size - pos, "%s%s", i ? "." : "", k->parts[i]);
        if (n < 0)
            break;
        pos += (size_t)n;
    }
}

/* ---------- scalars ---------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

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

static bool looks_like_date(const struct parser *p)
{
    return digits_at(p, p->pos, 4) && peek_at(p, p->pos + 4) == '-';
}

static bool looks_like_time(const struct parser *p)
{
    return digits_at(p, p->pos, 2) && peek_at(p, p->pos + 2) == ':';
}

static int parse_time_part(struct parser *p, struct buffer *out, size_t start)
{
    if (!digits_at(p, p->pos, 2) || peek_at(p, p->pos + 2) != ':' || !digits_at(p, p->pos + 3, 2) ||
        peek_at(p, p->pos + 5) != ':' || !digits_at(p, p->pos + 6, 2))
        return fail_at(p, start, "invalid time (expected HH:MM:SS)");
    int hour = number_at(p, p->pos, 2), minute = number_at(p, p->pos + 3, 2),
        second = number_at(p, p->pos + 6, 2);
    if (hour > 23 || minute > 59 || second > 60)
        return fail_at(p, start, "time out of range (%02d:%02d:%02d)", hour, minute, second);
    if (buffer_append(out, p->data + p->pos, 8) < 0)
        return oom(p);
    p->pos += 8;
    if (peek(p) == '.') {
        size_t frac = p->pos + 1;
        while (is_digit(peek_at(p, frac)))
            frac++;
        if (frac == p->pos + 1)
            return fail_at(p, p->pos, "expected digits after the decimal point of the seconds");
        if (buffer_append(out, p->data + p->pos, frac - p->pos) < 0)
            return oom(p);
        p->pos = frac;
    }
    return 0;
}

static int parse_datetime(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    struct buffer text = {0};
    enum toml_type type;
    if (looks_like_time(p)) {
        if (parse_time_part(p, &text, start) < 0)
            goto fail;
        type = TOML_TIME_LOCAL;
    } else {
        if (!digits_at(p, p->pos, 4) || peek_at(p, p->pos + 4) != '-' ||
            !digits_at(p, p->pos + 5, 2) || peek_at(p, p->pos + 7) != '-' ||
            !digits_at(p, p->pos + 8, 2)) {
            fail_at(p, start, "invalid date (expected YYYY-MM-DD)");
            goto fail;
        }
        int year = number_at(p, p->pos, 4), month = number_at(p, p->pos + 5, 2),
            day = number_at(p, p->pos + 8, 2);
        static const int days_in[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        if (month < 1 || month > 12 || day < 1 || day > days_in[month - 1] ||
            (month == 2 && day == 29 && !leap)) {
            fail_at(p, start, "date out of range (%04d-%02d-%02d)", year, month, day);
            goto fail;
        }
        if (buffer_append(&text, p->data + p->pos, 10) < 0) {
            oom(p);
            goto fail;
        }
        p->pos += 10;
        type = TOML_DATE_LOCAL;
        char sep = peek(p);
        if (sep == 'T' || sep == 't' || (sep == ' ' && digits_at(p, p->pos + 1, 2))) {
            p->pos++;
            if (buffer_append(&text, "T", 1) < 0) {
                oom(p);
                goto fail;
            }
            if (parse_time_part(p, &text, start) < 0)
                goto fail;
            type = TOML_DATETIME_LOCAL;
            char z = peek(p);
            if (z == 'Z' || z == 'z') {
                p->pos++;
                if (buffer_append(&text, "Z", 1) < 0) {
                    oom(p);
                    goto fail;
                }
                type = TOML_DATETIME;
            } else if (z == '+' || z == '-') {
                if (!digits_at(p, p->pos + 1, 2) || peek_at(p, p->pos + 3) != ':' ||
                    !digits_at(p, p->pos + 4, 2)) {
                    fail_at(p, p->pos, "invalid time offset (expected +HH:MM or -HH:MM)");
                    goto fail;
                }
                if (number_at(p, p->pos + 1, 2) > 23 || number_at(p, p->pos + 4, 2) > 59) {
                    fail_at(p, p->pos, "time offset out of range");
                    goto fail;
                }
                if (buffer_append(&text, p->data + p->pos, 6) < 0) {
                    oom(p);
                    goto fail;
                }
                p->pos += 6;
                type = TOML_DATETIME;
            }
        }
    }
    struct toml_value *v = value_new(p, type, start);
    if (!v) {
        oom(p);
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
        if (buffer_append(out, &c, 1) < 0)
            return false;
    }
    return true;
}

static bool is_number_char(char c)
{
    return is_bare_key_char(c) || c == '+' || c == '.';
}

static int parse_number(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    while (is_number_char(peek(p)))
        p->pos++;
    const char *s = p->data + start;
    size_t length = p->pos - start;
    char shown[48];
    snprintf(shown, sizeof(shown), "%.*s%s", (int)(length > 40 ? 40 : length), s,
             length > 40 ? "..." : "");
    __attribute__((cleanup(buffer_freep))) struct buffer buf = {0};

    size_t i = 0;
    bool negative = false;
    if (s[0] == '+' || s[0] == '-') {
        negative = s[0] == '-';
        i = 1;
    }
    const char *rest = s + i;
    size_t rest_length = length - i;
    if ((rest_length == 3 && (memcmp(rest, "inf", 3) == 0 || memcmp(rest, "nan", 3) == 0))) {
        struct toml_value *v = value_new(p, TOML_FLOAT, start);
        if (!v)
            return oom(p);
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
            return fail_at(p, start, "invalid %s integer '%s'",
                           base == 16  ? "hexadecimal"
                           : base == 8 ? "octal"
                                       : "binary",
                           shown);
        uint64_t value = 0;
        for (const char *d = buf.data; *d; d++) {
            uint64_t next = value * (uint64_t)base + (uint64_t)hex_value(*d);
            if (value > (UINT64_MAX - (uint64_t)hex_value(*d)) / (uint64_t)base ||
                next > (uint64_t)INT64_MAX)
                return fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
            value = next;
        }
        struct toml_value *v = value_new(p, TOML_INTEGER, start);
        if (!v)
            return oom(p);
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
        return fail_at(p, start, "leading zeros are not allowed in '%s'", shown);
    bool is_float = false;
    size_t j = int_end;
    if (valid && j < rest_length && rest[j] == '.') {
        is_float = true;
        size_t frac_end = j + 1;
        while (frac_end < rest_length && rest[frac_end] != 'e' && rest[frac_end] != 'E')
            frac_end++;
        valid = buffer_append(&buf, ".", 1) == 0 &&
                scan_digits(rest + j + 1, frac_end - j - 1, 10, &buf);
        j = frac_end;
    }
    if (valid && j < rest_length && (rest[j] == 'e' || rest[j] == 'E')) {
        is_float = true;
        j++;
        valid = buffer_append(&buf, "e", 1) == 0;
        if (valid && j < rest_length && (rest[j] == '+' || rest[j] == '-')) {
            valid = buffer_append(&buf, &rest[j], 1) == 0;
            j++;
        }
        valid = valid && scan_digits(rest + j, rest_length - j, 10, &buf);
        j = rest_length;
    }
    if (!valid || j != rest_length)
        return fail_at(p, start,
                       "invalid number '%s' (expected an integer, a float, "
                       "inf, nan or a date-time)",
                       shown);
    struct toml_value *v = value_new(p, is_float ? TOML_FLOAT : TOML_INTEGER, start);
    if (!v)
        return oom(p);
    errno = 0;
    if (is_float) {
        v->floating = strtod(buf.data, NULL);
        if (negative)
            v->floating = -v->floating;
        if (errno == ERANGE && isinf(v->floating)) {
            toml_free(v);
            return fail_at(p, start, "float '%s' is out of range", shown);
        }
    } else {
        char signed_digits[32];
        if (strlen(buf.data) > 20) {
            toml_free(v);
            return fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
        }
        snprintf(signed_digits, sizeof(signed_digits), "%s%s", negative ? "-" : "", buf.data);
        v->integer = strtoll(signed_digits, NULL, 10);
        if (errno == ERANGE) {
            toml_free(v);
            return fail_at(p, start, "integer '%s' does not fit in 64 bits", shown);
        }
    }
    *ret = v;
    return 0;
}

/* ---------- compound values ---------- */

static int parse_value(struct parser *p, struct toml_value **ret);
static int insert_pair(struct parser *p, struct toml_value *table, struct key_path *k,
                       struct toml_value *value);

static int enter(struct parser *p)
{
    if (++p->depth > TOML_MAX_DEPTH)
        return fail_at(p, p->pos, "nesting deeper than %d levels", TOML_MAX_DEPTH);
    return 0;
}

static int parse_array(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    if (enter(p) < 0)
        return -1;
    struct toml_value *array = value_new(p, TOML_ARRAY, start);
    if (!array)
        return oom(p);
    p->pos++;
    for (;;) {
        if (skip_blank(p) < 0)
            goto fail;
        if (peek(p) == ']')
            break;
        struct toml_value *item = NULL;
        if (parse_value(p, &item) < 0)
            goto fail;
        if (array_add(p, array, item) < 0) {
            toml_free(item);
            goto fail;
        }
        if (skip_blank(p) < 0)
            goto fail;
        if (peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p) == ']')
            break;
        fail_at(p, p->pos, "expected ',' or ']' in the array, found %s", FOUND(p));
        goto fail;
    }
    p->pos++;
    p->depth--;
    *ret = array;
    return 0;
fail:
    toml_free(array);
    return -1;
}

/* Inline tables are closed once written: mark the table and the sub-tables
 * its dotted keys made. */
static void freeze(struct toml_value *table)
{
    table->inline_table = true;
    for (size_t i = 0; i < table->table.count; i++) {
        struct toml_value *v = table->table.entries[i].value;
        if (v->type == TOML_TABLE && v->dotted)
            freeze(v);
    }
}

static int parse_inline_table(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    if (enter(p) < 0)
        return -1;
    struct toml_value *table = value_new(p, TOML_TABLE, start);
    if (!table)
        return oom(p);
    struct key_path k = {0};
    p->pos++;
    skip_whitespace(p);
    if (peek(p) == '}') {
        p->pos++;
        goto done;
    }
    for (;;) {
        if (parse_key(p, &k) < 0)
            goto fail;
        if (peek(p) != '=') {
            fail_at(p, p->pos, "expected '=' after the key, found %s", FOUND(p));
            goto fail;
        }
        p->pos++;
        skip_whitespace(p);
        struct toml_value *value = NULL;
        if (parse_value(p, &value) < 0)
            goto fail;
        if (insert_pair(p, table, &k, value) < 0) {
            toml_free(value);
            goto fail;
        }
        key_path_clear(&k);
        skip_whitespace(p);
        if (peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p) == '}') {
            p->pos++;
            break;
        }
        if (at_newline(p) || peek(p) == '\n')
            fail_at(p, p->pos,
                    "expected ',' or '}' in the inline table, found end of line "
                    "(inline tables must be on one line)");
        else
            fail_at(p, p->pos, "expected ',' or '}' in the inline table, found %s", FOUND(p));
        goto fail;
    }
done:
    freeze(table);
    p->depth--;
    *ret = table;
    return 0;
fail:
    key_path_clear(&k);
    toml_free(table);
    return -1;
}

static int parse_value(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    char c = peek(p);
    if (c == '"' || c == '\'') {
        struct buffer text = {0};
        if (parse_string_text(p, &text, true) < 0) {
            free(text.data);
            return -1;
        }
        if (!text.data && buffer_append(&text, "", 0) < 0)
            return oom(p);
        struct toml_value *v = value_new(p, TOML_STRING, start);
        if (!v) {
            free(text.data);
            return oom(p);
        }
        v->string.text = text.data;
        v->string.length = text.length;
        *ret = v;
        return 0;
    }
    if (c == '[')
        return parse_array(p, ret);
    if (c == '{')
        return parse_inline_table(p, ret);
    if (starts_with(p, "true") || starts_with(p, "false")) {
        bool value = c == 't';
        size_t n = value ? 4 : 5;
        if (is_bare_key_char(peek_at(p, p->pos + n)))
            return fail_at(p, start,
                           "expected a value, found an unquoted word (strings need "
                           "quotes)");
        struct toml_value *v = value_new(p, TOML_BOOLEAN, start);
        if (!v)
            return oom(p);
        v->boolean = value;
        p->pos += n;
        *ret = v;
        return 0;
    }
    if (looks_like_date(p) || looks_like_time(p))
        return parse_datetime(p, ret);
    if (is_digit(c) || c == '+' || c == '-' || starts_with(p, "inf") || starts_with(p, "nan"))
        return parse_number(p, ret);
    if (is_bare_key_char(c))
        return fail_at(p, start, "expected a value, found an unquoted word (strings need quotes)");
    return fail_at(p, start,
                   "expected a value (string, number, boolean, date-time, array or inline "
                   "table), found %s",
                   FOUND(p));
}

/* ---------- building tables ---------- */

static int insert_pair(struct parser *p, struct toml_value *table, struct key_path *k,
                       struct toml_value *value)
{
    char name[512];
    struct toml_value *t = table;
    for (int i = 0; i < k->count - 1; i++) {
        struct toml_value *next = table_lookup(t, k->parts[i]);
        if (!next) {
            next = value_new(p, TOML_TABLE, k->offsets[i]);
            if (!next)
                return oom(p);
            next->dotted = true;
            if (table_add(p, t, k->parts[i], k->offsets[i], next) < 0) {
                toml_free(next);
                return -1;
            }
        } else if (next->type != TOML_TABLE || !next->dotted || next->inline_table) {
            join_key(k, i + 1, name, sizeof(name));
            if (next->type != TOML_TABLE)
                return fail_at(p, k->offsets[i],
                               "cannot use '%s' as a table: it is already a %s (line %d)", name,
                               toml_type_name(next->type), next->line);
            return fail_at(p, k->offsets[i],
                           "cannot add keys to table '%s' with a dotted key: it was defined "
                           "at line %d",
                           name, next->line);
        }
        t = next;
    }
    int last = k->count - 1;
    const struct toml_value *existing = table_lookup(t, k->parts[last]);
    if (existing) {
        join_key(k, k->count, name, sizeof(name));
        return fail_at(p, k->offsets[last], "duplicate key '%s' (first defined at line %d)", name,
                       existing->line);
    }
    return table_add(p, t, k->parts[last], k->offsets[last], value);
}

static int parse_header(struct parser *p, struct toml_value *root, struct toml_value **ret_current)
{
    size_t start = p->pos;
    bool is_array = starts_with(p, "[[");
    p->pos += is_array ? 2 : 1;
    struct key_path k = {0};
    char name[512];
    int ret = -1;
    if (parse_key(p, &k) < 0)
        goto out;
    if (is_array ? !starts_with(p, "]]") : peek(p) != ']') {
        fail_at(p, p->pos, "expected '%s' to close the table header, found %s",
                is_array ? "]]" : "]", FOUND(p));
        goto out;
    }
    p->pos += is_array ? 2 : 1;

    struct toml_value *t = root;
    for (int i = 0; i < k.count - 1; i++) {
        struct toml_value *next = table_lookup(t, k.parts[i]);
        join_key(&k, i + 1, name, sizeof(name));
        if (!next) {
            next = value_new(p, TOML_TABLE, start);
            if (!next) {
                oom(p);
                goto out;
            }
            if (table_add(p, t, k.parts[i], k.offsets[i], next) < 0) {
                toml_free(next);
                goto out;
            }
        } else if (next->type == TOML_ARRAY && next->table_array) {
            next = next->array.items[next->array.count - 1];
        } else if (next->type != TOML_TABLE) {
            fail_at(p, k.offsets[i], "cannot use '%s' as a table: it is already a %s (line %d)",
                    name, toml_type_name(next->type), next->line);
            goto out;
        } else if (next->inline_table) {
            fail_at(p, k.offsets[i], "cannot extend inline table '%s' (line %d)", name, next->line);
            goto out;
        }
        t = next;
    }
    int last = k.count - 1;
    join_key(&k, k.count, name, sizeof(name));
    struct toml_value *existing = table_lookup(t, k.parts[last]);
    if (!is_array) {
        if (!existing) {
            existing = value_new(p, TOML_TABLE, start);
            if (!existing) {
                oom(p);
                goto out;
            }
            if (table_add(p, t, k.parts[last], k.offsets[last], existing) < 0) {
                toml_free(existing);
                goto out;
            }
        } else if (existing->type != TOML_TABLE) {
            fail_at(p, start, "cannot define table [%s]: '%s' is already a %s (line %d)", name,
                    name, toml_type_name(existing->type), existing->line);
            goto out;
        } else if (existing->defined || existing->dotted || existing->inline_table) {
            fail_at(p, start, "table [%s] is defined twice (first at line %d)", name,
                    existing->line);
            goto out;
        }
        existing->defined = true;
        locate(p, start, &existing->line, &existing->column);
        *ret_current = existing;
    } else {
        if (!existing) {
            existing = value_new(p, TOML_ARRAY, start);
            if (!existing) {
                oom(p);
                goto out;
            }
            existing->table_array = true;
            if (table_add(p, t, k.parts[last], k.offsets[last], existing) < 0) {
                toml_free(existing);
                goto out;
            }
        } else if (existing->type != TOML_ARRAY || !existing->table_array) {
            fail_at(p, start,
                    "cannot define array of tables [[%s]]: '%s' is already a %s (line %d)", name,
                    name, toml_type_name(existing->type), existing->line);
            goto out;
        }
        struct toml_value *element = value_new(p, TOML_TABLE, start);
        if (!element) {
            oom(p);
            goto out;
        }
        element->defined = true;
        if (array_add(p, existing, element) < 0) {
            toml_free(element);
            goto out;
        }
        *ret_current = element;
    }
    ret = expect_line_end(p, "the table header");
out:
    key_path_clear(&k);
    return ret;
}

int toml_parse(const char *data, size_t length, const char *name, struct toml_value **ret_root,
               struct cordon_error *err)
{
    struct parser p = {
        .data = data,
        .length = length,
        .name = name ? name : "<input>",
        .err = err,
        .cache_line = 1,
    };
    if (length > TOML_MAX_INPUT)
        return error_set(err, 0, "%s: file larger than %d bytes", p.name, TOML_MAX_INPUT);
    if (validate_utf8(&p) < 0)
        return -1;
    struct toml_value *root = value_new(&p, TOML_TABLE, 0);
    if (!root)
        return oom(&p);
    struct toml_value *current = root;
    struct key_path k = {0};
    for (;;) {
        skip_whitespace(&p);
        if (at_end(&p))
            break;
        char c = peek(&p);
        if (c == '#') {
            if (expect_line_end(&p, "a comment") < 0)
                goto fail;
        } else if (at_newline(&p)) {
            skip_newline(&p);
        } else if (c == '[') {
            if (parse_header(&p, root, &current) < 0)
                goto fail;
        } else {
            if (parse_key(&p, &k) < 0)
                goto fail;
            if (peek(&p) != '=') {
                fail_at(&p, p.pos, "expected '=' after the key, found %s", FOUND(&p));
                goto fail;
            }
            p.pos++;
            skip_whitespace(&p);
            struct toml_value *value = NULL;
            if (parse_value(&p, &value) < 0)
                goto fail;
            if (insert_pair(&p, current, &k, value) < 0) {
                toml_free(value);
                goto fail;
            }
            key_path_clear(&k);
            if (expect_line_end(&p, "the value") < 0)
                goto fail;
        }
    }
    *ret_root = root;
    return 0;
fail:
    key_path_clear(&k);
    toml_free(root);
    return -1;
}
