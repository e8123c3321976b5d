/* TOML 1.0 parser (toml.h). A recursive-descent reader over one in-memory
 * document with the redefinition rules of the specification enforced as
 * tables are built. The document is untrusted input: its size, nesting depth,
 * key length and table width are bounded, and every error names
 * file:line:column. Host context, unprivileged. */
#include "config/toml-internal.h"
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

void toml_locate(struct parser *p, size_t offset, int *ret_line, int *ret_column)
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

int toml_fail_at(struct parser *p, size_t offset, const char *fmt, ...)
{
    int line, column;
    toml_locate(p, offset, &line, &column);
    char message[CORDON_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return error_set(p->err, 0, "%s:%d:%d: %s", p->name, line, column, message);
}

/* A short description of what sits at offset, for "expected X, found Y". */
const char *toml_found(struct parser *p, size_t offset, char *buf, size_t size)
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

int toml_buffer_append(struct buffer *b, const char *data, size_t length)
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

void toml_buffer_freep(struct buffer *b)
{
    free(b->data);
}

int toml_oom(struct parser *p)
{
    return error_set(p->err, ENOMEM, "%s: parsing", p->name);
}

/* ---------- values and tables ---------- */

struct toml_value *toml_value_new(struct parser *p, enum toml_type type, size_t offset)
{
    struct toml_value *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->type = type;
    toml_locate(p, offset, &v->line, &v->column);
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
        return toml_fail_at(p, key_offset, "too many keys in one table (limit %d)",
                            TOML_MAX_TABLE_KEYS);
    if (table->table.count == table->table.capacity) {
        size_t capacity = table->table.capacity ? table->table.capacity * 2 : 8;
        struct toml_entry *grown = realloc(table->table.entries, capacity * sizeof(*grown));
        if (!grown)
            return toml_oom(p);
        table->table.entries = grown;
        table->table.capacity = capacity;
    }
    char *copy = strdup(key);
    if (!copy)
        return toml_oom(p);
    struct toml_entry *e = &table->table.entries[table->table.count++];
    e->key = copy;
    e->value = value;
    toml_locate(p, key_offset, &e->line, &e->column);
    return 0;
}

static int array_add(struct parser *p, struct toml_value *array, struct toml_value *item)
{
    if (array->array.count == array->array.capacity) {
        size_t capacity = array->array.capacity ? array->array.capacity * 2 : 8;
        struct toml_value **grown = realloc(array->array.items, capacity * sizeof(*grown));
        if (!grown)
            return toml_oom(p);
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

static int skip_comment(struct parser *p)
{
    if (peek(p) != '#')
        return 0;
    while (!at_end(p) && !at_newline(p)) {
        if (is_forbidden_control((unsigned char)peek(p)))
            return toml_fail_at(p, p->pos, "control character 0x%02X is not allowed in a comment",
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
        return toml_fail_at(p, p->pos, "expected end of line after %s, found %s", after, FOUND(p));
    skip_newline(p);
    return 0;
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

static int parse_key(struct parser *p, struct key_path *k)
{
    k->count = 0;
    for (;;) {
        skip_whitespace(p);
        size_t start = p->pos;
        struct buffer part = {0};
        char c = peek(p);
        if (c == '"' || c == '\'') {
            if (toml_parse_string_text(p, &part, false) < 0) {
                free(part.data);
                return -1;
            }
            if (!part.data && toml_buffer_append(&part, "", 0) < 0)
                return toml_oom(p);
            if (strlen(part.data) != part.length) {
                free(part.data);
                return toml_fail_at(p, start, "a key may not contain U+0000");
            }
        } else if (is_bare_key_char(c)) {
            while (is_bare_key_char(peek(p)))
                p->pos++;
            if (toml_buffer_append(&part, p->data + start, p->pos - start) < 0)
                return toml_oom(p);
        } else {
            return toml_fail_at(
                p, start, "expected a key (bare, \"quoted\" or 'literal'), found %s", FOUND(p));
        }
        if (part.length > TOML_MAX_KEY_LEN) {
            free(part.data);
            return toml_fail_at(p, start, "key longer than %d bytes", TOML_MAX_KEY_LEN);
        }
        if (k->count >= TOML_MAX_DEPTH) {
            free(part.data);
            return toml_fail_at(p, start, "dotted key with more than %d parts", TOML_MAX_DEPTH);
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

/* ---------- compound values ---------- */

static int parse_value(struct parser *p, struct toml_value **ret);
static int insert_pair(struct parser *p, struct toml_value *table, struct key_path *k,
                       struct toml_value *value);

static int enter(struct parser *p)
{
    if (++p->depth > TOML_MAX_DEPTH)
        return toml_fail_at(p, p->pos, "nesting deeper than %d levels", TOML_MAX_DEPTH);
    return 0;
}

static int parse_array(struct parser *p, struct toml_value **ret)
{
    size_t start = p->pos;
    if (enter(p) < 0)
        return -1;
    struct toml_value *array = toml_value_new(p, TOML_ARRAY, start);
    if (!array)
        return toml_oom(p);
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
        toml_fail_at(p, p->pos, "expected ',' or ']' in the array, found %s", FOUND(p));
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
    struct toml_value *table = toml_value_new(p, TOML_TABLE, start);
    if (!table)
        return toml_oom(p);
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
            toml_fail_at(p, p->pos, "expected '=' after the key, found %s", FOUND(p));
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
            toml_fail_at(p, p->pos,
                         "expected ',' or '}' in the inline table, found end of line "
                         "(inline tables must be on one line)");
        else
            toml_fail_at(p, p->pos, "expected ',' or '}' in the inline table, found %s", FOUND(p));
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
        if (toml_parse_string_text(p, &text, true) < 0) {
            free(text.data);
            return -1;
        }
        if (!text.data && toml_buffer_append(&text, "", 0) < 0)
            return toml_oom(p);
        struct toml_value *v = toml_value_new(p, TOML_STRING, start);
        if (!v) {
            free(text.data);
            return toml_oom(p);
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
            return toml_fail_at(p, start,
                                "expected a value, found an unquoted word (strings need "
                                "quotes)");
        struct toml_value *v = toml_value_new(p, TOML_BOOLEAN, start);
        if (!v)
            return toml_oom(p);
        v->boolean = value;
        p->pos += n;
        *ret = v;
        return 0;
    }
    if (toml_looks_like_date(p) || toml_looks_like_time(p))
        return toml_parse_datetime(p, ret);
    if (is_digit(c) || c == '+' || c == '-' || starts_with(p, "inf") || starts_with(p, "nan"))
        return toml_parse_number(p, ret);
    if (is_bare_key_char(c))
        return toml_fail_at(p, start,
                            "expected a value, found an unquoted word (strings need quotes)");
    return toml_fail_at(p, start,
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
            next = toml_value_new(p, TOML_TABLE, k->offsets[i]);
            if (!next)
                return toml_oom(p);
            next->dotted = true;
            if (table_add(p, t, k->parts[i], k->offsets[i], next) < 0) {
                toml_free(next);
                return -1;
            }
        } else if (next->type != TOML_TABLE || !next->dotted || next->inline_table) {
            join_key(k, i + 1, name, sizeof(name));
            if (next->type != TOML_TABLE)
                return toml_fail_at(p, k->offsets[i],
                                    "cannot use '%s' as a table: it is already a %s (line %d)",
                                    name, toml_type_name(next->type), next->line);
            return toml_fail_at(p, k->offsets[i],
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
        return toml_fail_at(p, k->offsets[last], "duplicate key '%s' (first defined at line %d)",
                            name, existing->line);
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
        toml_fail_at(p, p->pos, "expected '%s' to close the table header, found %s",
                     is_array ? "]]" : "]", FOUND(p));
        goto out;
    }
    p->pos += is_array ? 2 : 1;

    struct toml_value *t = root;
    for (int i = 0; i < k.count - 1; i++) {
        struct toml_value *next = table_lookup(t, k.parts[i]);
        join_key(&k, i + 1, name, sizeof(name));
        if (!next) {
            next = toml_value_new(p, TOML_TABLE, start);
            if (!next) {
                toml_oom(p);
                goto out;
            }
            if (table_add(p, t, k.parts[i], k.offsets[i], next) < 0) {
                toml_free(next);
                goto out;
            }
        } else if (next->type == TOML_ARRAY && next->table_array) {
            next = next->array.items[next->array.count - 1];
        } else if (next->type != TOML_TABLE) {
            toml_fail_at(p, k.offsets[i],
                         "cannot use '%s' as a table: it is already a %s (line %d)", name,
                         toml_type_name(next->type), next->line);
            goto out;
        } else if (next->inline_table) {
            toml_fail_at(p, k.offsets[i], "cannot extend inline table '%s' (line %d)", name,
                         next->line);
            goto out;
        }
        t = next;
    }
    int last = k.count - 1;
    join_key(&k, k.count, name, sizeof(name));
    struct toml_value *existing = table_lookup(t, k.parts[last]);
    if (!is_array) {
        if (!existing) {
            existing = toml_value_new(p, TOML_TABLE, start);
            if (!existing) {
                toml_oom(p);
                goto out;
            }
            if (table_add(p, t, k.parts[last], k.offsets[last], existing) < 0) {
                toml_free(existing);
                goto out;
            }
        } else if (existing->type != TOML_TABLE) {
            toml_fail_at(p, start, "cannot define table [%s]: '%s' is already a %s (line %d)", name,
                         name, toml_type_name(existing->type), existing->line);
            goto out;
        } else if (existing->defined || existing->dotted || existing->inline_table) {
            toml_fail_at(p, start, "table [%s] is defined twice (first at line %d)", name,
                         existing->line);
            goto out;
        }
        existing->defined = true;
        toml_locate(p, start, &existing->line, &existing->column);
        *ret_current = existing;
    } else {
        if (!existing) {
            existing = toml_value_new(p, TOML_ARRAY, start);
            if (!existing) {
                toml_oom(p);
                goto out;
            }
            existing->table_array = true;
            if (table_add(p, t, k.parts[last], k.offsets[last], existing) < 0) {
                toml_free(existing);
                goto out;
            }
        } else if (existing->type != TOML_ARRAY || !existing->table_array) {
            toml_fail_at(p, start,
                         "cannot define array of tables [[%s]]: '%s' is already a %s (line %d)",
                         name, name, toml_type_name(existing->type), existing->line);
            goto out;
        }
        struct toml_value *element = toml_value_new(p, TOML_TABLE, start);
        if (!element) {
            toml_oom(p);
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
    if (toml_validate_utf8(&p) < 0)
        return -1;
    /* A UTF-8 byte order mark at the very start is not content (toml-test's
     * valid/utf8-bom cases). */
    if (length >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        p.pos = 3;
    struct toml_value *root = toml_value_new(&p, TOML_TABLE, 0);
    if (!root)
        return toml_oom(&p);
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
                toml_fail_at(&p, p.pos, "expected '=' after the key, found %s", FOUND(&p));
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
