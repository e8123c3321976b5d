/* Unit tests for the TOML parser's API (src/config/toml.c): value types and
 * positions, the bounds, and that each class of error names line and column.
 * The full construct-by-construct cases live in toml/ (toml-suite.sh). */
#include "config/toml.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct toml_value *parse(const char *text, struct cordon_error *err)
{
    struct toml_value *root = NULL;
    if (toml_parse(text, strlen(text), "t.toml", &root, err) < 0)
        return NULL;
    return root;
}

static void expect_error(const char *text, const char *message, const char *what)
{
    struct cordon_error err = {0};
    struct toml_value *root = parse(text, &err);
    ok(!root && strstr(err.message, message), "%s: %s", what, err.message);
    toml_free(root);
}

int main(void)
{
    struct cordon_error err = {0};
    struct toml_value *root =
        parse("a = 1\n[t]\n  b = \"x\\u0000y\"\nf = -inf\n"
              "d = 1979-05-27T07:32:00+01:00\n[[arr]]\n[[arr]]\nk = [1, [2]]\n",
              &err);
    ok(root != NULL, "document parses: %s", err.message);
    const struct toml_value *a = toml_table_get(root, "a");
    ok(a && a->type == TOML_INTEGER && a->integer == 1 && a->line == 1 && a->column == 5,
       "integer with its line and column");
    const struct toml_value *t = toml_table_get(root, "t");
    ok(t && t->type == TOML_TABLE && t->defined, "table from a header");
    const struct toml_value *b = toml_table_get(t, "b");
    ok(b && b->string.length == 3 && memcmp(b->string.text, "x\0y", 3) == 0,
       "string with U+0000 keeps its length");
    ok(b && b->line == 3 && b->column == 7, "position inside an indented line");
    ok(t && t->table.count == 3 && strcmp(t->table.entries[1].key, "f") == 0 &&
           t->table.entries[1].line == 4,
       "entries keep their order and key line");
    const struct toml_value *f = toml_table_get(t, "f");
    ok(f && f->type == TOML_FLOAT && isinf(f->floating) && f->floating < 0, "-inf");
    const struct toml_value *d = toml_table_get(t, "d");
    ok(d && d->type == TOML_DATETIME && strcmp(d->datetime, "1979-05-27T07:32:00+01:00") == 0,
       "offset date-time text");
    const struct toml_value *arr = toml_table_get(root, "arr");
    ok(arr && arr->type == TOML_ARRAY && arr->table_array && arr->array.count == 2,
       "array of tables");
    const struct toml_value *k = arr ? toml_table_get(arr->array.items[1], "k") : NULL;
    ok(k && k->array.count == 2 && k->array.items[1]->type == TOML_ARRAY, "nested arrays");
    is_str(toml_type_name(TOML_DATE_LOCAL), "local date", "type names");
    toml_free(root);

    expect_error("a = \"\n", "t.toml:1:5: unterminated string", "unterminated string");
    expect_error("\n\n  x = 01\n", "t.toml:3:7: leading zeros", "error positions count lines");
    expect_error("é = 1\n", "t.toml:1:1: expected a key", "non-ASCII bare key");
    expect_error("a = \"é\" x\n", "t.toml:1:9: expected end of line",
                 "columns count characters, not bytes");
    expect_error("a = 1\na = 2\n", "duplicate key 'a' (first defined at line 1)", "duplicate key");
    expect_error("[a]\n[a]\n", "t.toml:2:1: table [a] is defined twice", "table redefinition");
    expect_error("a = [1,\n2,\n", "t.toml:3:1: expected a value", "unclosed array");
    expect_error("a = {x = 1\n}", "inline tables must be on one line", "newline in inline table");
    expect_error("a = \"\\x\"", "invalid escape sequence", "bad escape");
    expect_error("a = 1e999", "out of range", "float overflow");

    char *deep = malloc(200);
    strcpy(deep, "a = ");
    for (int i = 0; i < TOML_MAX_DEPTH + 1; i++)
        strcat(deep, "[");
    expect_error(deep, "nesting deeper than 64", "nesting depth bound");
    free(deep);

    char key[TOML_MAX_KEY_LEN + 20];
    memset(key, 'k', TOML_MAX_KEY_LEN + 1);
    strcpy(key + TOML_MAX_KEY_LEN + 1, " = 1");
    expect_error(key, "key longer than 256 bytes", "key length bound");

    size_t big = TOML_MAX_INPUT + 1;
    char *huge = malloc(big);
    memset(huge, '#', big);
    root = NULL;
    ok(toml_parse(huge, big, "big.toml", &root, &err) < 0 &&
           strstr(err.message, "larger than 1048576 bytes"),
       "input size bound: %s", err.message);
    free(huge);
    return tap_done();
}
