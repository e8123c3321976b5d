/* cordon's TOML 1.0 parser: text in, a tree of values out, or an error naming
 * file:line:column and what was expected. The input is untrusted (a
 * workspace's .cordon.toml is agent-writable), so every dimension is bounded.
 * Host context (CLI and supervisor), before any sandbox exists. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOML_MAX_INPUT   (1024 * 1024) /* bytes in one document */
#define TOML_MAX_DEPTH   64            /* nested arrays, inline tables and key parts */
#define TOML_MAX_KEY_LEN 256           /* bytes in one key part, after unescaping */

enum toml_type {
    TOML_STRING,
    TOML_INTEGER,
    TOML_FLOAT,
    TOML_BOOLEAN,
    TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00Z */
    TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
    TOML_DATE_LOCAL,     /* 1979-05-27 */
    TOML_TIME_LOCAL,     /* 07:32:00 */
    TOML_ARRAY,
    TOML_TABLE,
};

struct toml_value;

struct toml_entry {
    char *key; /* NUL-terminated; keys containing U+0000 are refused */
    int line, column;
    struct toml_value *value;
};

struct toml_value {
    enum toml_type type;
    int line, column; /* where the value (or the table header) starts */
    union {
        struct {
            char *text; /* NUL-terminated; may also contain NUL (\u0000), see length */
            size_t length;
        } string;
        int64_t integer;
        double floating;
        bool boolean;
        char *datetime; /* normalised RFC 3339 text ('T' and 'Z' upper case) */
        struct {
            struct toml_value **items;
            size_t count, capacity;
        } array;
        struct {
            struct toml_entry *entries;
            size_t count, capacity;
        } table;
    };
    /* bookkeeping for TOML's redefinition rules */
    bool table_array;  /* an array made by [[header]] (may be appended to) */
    bool inline_table; /* {...}: closed, nothing may be added later */
    bool defined;      /* a [header] named this table already */
    bool dotted;       /* made by a dotted key in a key/value pair */
};

/* Parses one document. name is used in error messages ("name:line:col: ...").
 * On success *ret_root is a TOML_TABLE owned by the caller (toml_free). */
int toml_parse(const char *data, size_t length, const char *name, struct toml_value **ret_root,
               struct cordon_error *err);

void toml_free(struct toml_value *value);

/* The value of key in a table, or NULL. */
const struct toml_value *toml_table_get(const struct toml_value *table, const char *key);

/* "string", "integer", ... as used in messages and in the toml-test format. */
const char *toml_type_name(enum toml_type type);
