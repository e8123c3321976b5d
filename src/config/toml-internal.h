/* Internals shared by the TOML parser's files: toml.c (document structure,
 * tables, redefinition rules) and toml-scalar.c (UTF-8, strings, numbers,
 * date-times). Host context. */
#pragma once

#include "config/toml.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

void toml_locate(struct parser *p, size_t offset, int *ret_line, int *ret_column);
/* Fills p->err with "name:line:column: message"; returns -1. */
int toml_fail_at(struct parser *p, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A short description of what sits at offset, for "expected X, found Y". */
const char *toml_found(struct parser *p, size_t offset, char *buf, size_t size);
#define FOUND(p) toml_found((p), (p)->pos, (char[32]){0}, 32)
int toml_buffer_append(struct buffer *b, const char *data, size_t length);
void toml_buffer_freep(struct buffer *b);
int toml_oom(struct parser *p);
struct toml_value *toml_value_new(struct parser *p, enum toml_type type, size_t offset);

/* toml-scalar.c */
int toml_validate_utf8(struct parser *p);
int toml_parse_string_text(struct parser *p, struct buffer *out, bool allow_multiline);
bool toml_looks_like_date(const struct parser *p);
bool toml_looks_like_time(const struct parser *p);
int toml_parse_datetime(struct parser *p, struct toml_value **ret);
int toml_parse_number(struct parser *p, struct toml_value **ret);

static inline bool at_end(const struct parser *p)
{
    return p->pos >= p->length;
}

static inline char peek_at(const struct parser *p, size_t offset)
{
    return offset < p->length ? p->data[offset] : '\0';
}

static inline char peek(const struct parser *p)
{
    return peek_at(p, p->pos);
}

static inline bool starts_with(const struct parser *p, const char *s)
{
    size_t n = strlen(s);
    return p->length - p->pos >= n && memcmp(p->data + p->pos, s, n) == 0;
}

static inline bool at_newline(const struct parser *p)
{
    return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, p->pos + 1) == '\n');
}

static inline void skip_newline(struct parser *p)
{
    p->pos += peek(p) == '\r' ? 2 : 1;
}

static inline void skip_whitespace(struct parser *p)
{
    while (peek(p) == ' ' || peek(p) == '\t')
        p->pos++;
}

/* Control characters other than tab may appear neither in comments nor in
 * strings (TOML 1.0); a lone CR is not a newline. */
static inline bool is_forbidden_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7F;
}

static inline int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static inline bool is_bare_key_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static inline bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
