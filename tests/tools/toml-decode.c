/* tests/toml-decode: reads TOML on stdin and writes it as the JSON of the
 * toml-test suite's tagged format ({"type":"integer","value":"1"}) on stdout;
 * exits 1 with the parser's message on stderr for invalid input. A test
 * program, host context. */
#include "config/toml.h"
#include "util/cleanup.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tagged_type(enum toml_type type)
{
    switch (type) {
    case TOML_STRING:
        return "string";
    case TOML_INTEGER:
        return "integer";
    case TOML_FLOAT:
        return "float";
    case TOML_BOOLEAN:
        return "bool";
    case TOML_DATETIME:
        return "datetime";
    case TOML_DATETIME_LOCAL:
        return "datetime-local";
    case TOML_DATE_LOCAL:
        return "date-local";
    case TOML_TIME_LOCAL:
        return "time-local";
    default:
        return NULL;
    }
}

/* The shortest %g form that reads back as the same double. */
static void shortest_float(double value, char *text, size_t size)
{
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(text, size, "%.*g", precision, value);
        if (strtod(text, NULL) == value)
            return;
    }
}

static json_t *to_json(const struct toml_value *v)
{
    if (v->type == TOML_TABLE) {
        json_t *object = json_object();
        for (size_t i = 0; i < v->table.count; i++)
            json_object_set_new(object, v->table.entries[i].key,
                                to_json(v->table.entries[i].value));
        return object;
    }
    if (v->type == TOML_ARRAY) {
        json_t *array = json_array();
        for (size_t i = 0; i < v->array.count; i++)
            json_array_append_new(array, to_json(v->array.items[i]));
        return array;
    }
    char text[64];
    json_t *value;
    switch (v->type) {
    case TOML_STRING:
        value = json_stringn(v->string.text, v->string.length);
        break;
    case TOML_INTEGER:
        snprintf(text, sizeof(text), "%lld", (long long)v->integer);
        value = json_string(text);
        break;
    case TOML_FLOAT:
        if (isnan(v->floating))
            snprintf(text, sizeof(text), "nan");
        else if (isinf(v->floating))
            snprintf(text, sizeof(text), "%sinf", v->floating < 0 ? "-" : "");
        else
            shortest_float(v->floating, text, sizeof(text));
        value = json_string(text);
        break;
    case TOML_BOOLEAN:
        value = json_string(v->boolean ? "true" : "false");
        break;
    default:
        value = json_string(v->datetime);
        break;
    }
    return json_pack("{s:s, s:o}", "type", tagged_type(v->type), "value", value);
}

int main(void)
{
    size_t capacity = 4096, length = 0;
    _cleanup_free_ char *data = malloc(capacity);
    if (!data)
        return 2;
    size_t n;
    while ((n = fread(data + length, 1, capacity - length, stdin)) > 0) {
        length += n;
        if (length == capacity) {
            if (capacity > 2 * TOML_MAX_INPUT)
                break;
            capacity *= 2;
            char *grown = realloc(data, capacity);
            if (!grown)
                return 2;
            data = grown;
        }
    }
    struct cordon_error err = {0};
    struct toml_value *root = NULL;
    if (toml_parse(data, length, "<stdin>", &root, &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    json_t *json = to_json(root);
    toml_free(root);
    char *text = json_dumps(json, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_ENSURE_ASCII);
    json_decref(json);
    if (!text)
        return 2;
    puts(text);
    free(text);
    return 0;
}
