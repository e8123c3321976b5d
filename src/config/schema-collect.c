/* The configuration schema's assignments (schema.c): one layer's TOML
 * values or environment text checked against the key table and turned into
 * typed assignments, with the file, line and column of each. Host context,
 * on untrusted input (a workspace file is agent-writable). */
#include "config/schema-internal.h"
#include "config/config-internal.h"
#include "net/allowlist.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- assignments ---------- */

/* The keys of a [[mounts]] and a [[secrets]] table. */
static const char *const mount_keys[] = {"host_path", "guest_path", "readonly", NULL};
static const char *const secret_keys[] = {"name", "from", "hosts", "header", "plain_http", NULL};

void cfg_strings_free(struct cfg_strings *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->items[i]);
    free(s->items);
    s->items = NULL;
    s->count = 0;
}

bool cfg_strings_contains(const struct cfg_strings *s, const char *item)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i], item) == 0)
            return true;
    return false;
}

int cfg_strings_add(struct cfg_strings *s, const char *item)
{
    if (cfg_strings_contains(s, item))
        return 0;
    char **grown = realloc(s->items, (s->count + 1) * sizeof(*grown));
    if (!grown)
        return -1;
    s->items = grown;
    s->items[s->count] = strdup(item);
    if (!s->items[s->count])
        return -1;
    s->count++;
    return 0;
}

void cfg_origin_free(struct cfg_origin *o)
{
    free(o->file);
    o->file = NULL;
}

int cfg_origin_copy(struct cfg_origin *dst, const struct cfg_origin *src)
{
    char *file = src->file ? strdup(src->file) : NULL;
    if (src->file && !file)
        return -1;
    free(dst->file);
    *dst = *src;
    dst->file = file;
    return 0;
}

void mounts_free(struct cfg_mounts *m)
{
    for (size_t i = 0; i < m->count; i++) {
        free(m->items[i].host_path);
        free(m->items[i].guest_path);
        cfg_origin_free(&m->items[i].origin);
    }
    free(m->items);
    m->items = NULL;
    m->count = 0;
}

void cfg_secrets_free(struct cfg_secrets *s)
{
    for (size_t i = 0; i < s->count; i++) {
        free(s->items[i].name);
        free(s->items[i].from);
        free(s->items[i].header);
        cfg_strings_free(&s->items[i].hosts);
        cfg_origin_free(&s->items[i].origin);
    }
    free(s->items);
    s->items = NULL;
    s->count = 0;
}

static void assignment_free(struct cfg_assignment *a)
{
    cfg_origin_free(&a->origin);
    free(a->string);
    cfg_strings_free(&a->list);
    free(a->ports.items);
    mounts_free(&a->mounts);
    cfg_secrets_free(&a->secrets);
}

void cfg_assignments_free(struct cfg_assignments *a)
{
    for (size_t i = 0; i < a->count; i++)
        assignment_free(&a->items[i]);
    free(a->items);
    a->items = NULL;
    a->count = 0;
}

static struct cfg_assignment *assignment_new(struct cfg_assignments *out, enum cfg_key key,
                                             enum cfg_layer layer, const char *file, int line)
{
    struct cfg_assignment *grown = realloc(out->items, (out->count + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    out->items = grown;
    struct cfg_assignment *a = &out->items[out->count];
    memset(a, 0, sizeof(*a));
    a->origin.file = strdup(file);
    if (!a->origin.file)
        return NULL;
    a->key = key;
    a->origin.layer = layer;
    a->origin.line = line;
    out->count++;
    return a;
}

/* "file:line:column: key: " for messages about a TOML value. */
#define WHERE_MAX 1200

static int type_error(struct cordon_error *err, const char *where, const struct key_info *k,
                      const char *expected, const struct toml_value *v)
{
    return error_set(err, 0, "%s: %s: expected %s, found %s", where, k->name, expected,
                     toml_type_name(v->type));
}

static int enum_index(const struct key_info *k, const char *text)
{
    for (int i = 0; k->choices[i]; i++)
        if (strcmp(k->choices[i], text) == 0)
            return i;
    return -1;
}

static int enum_error(struct cordon_error *err, const char *where, const struct key_info *k,
                      const char *text)
{
    char allowed[256] = "";
    for (int i = 0; k->choices[i]; i++) {
        size_t used = strlen(allowed);
        snprintf(allowed + used, sizeof(allowed) - used, "%s\"%s\"", i ? ", " : "", k->choices[i]);
    }
    return error_set(err, 0, "%s: %s: expected one of %s, found \"%.64s\"", where, k->name, allowed,
                     text);
}

/* "FILE:LINE:COLUMN" for a message about a value, or the flag alone when
 * FILE names a command-line flag (--network, --allow-host): its value is
 * what the user typed, and a position in the TOML built from it points at
 * nothing they can see. */
static void where_of(char *where, size_t cap, const char *file, int line, int column)
{
    if (strncmp(file, "--", 2) == 0 && strcmp(file, "--set") != 0)
        snprintf(where, cap, "%s", file);
    else
        snprintf(where, cap, "%s:%d:%d", file, line, column);
}

static int collect_mount(const struct toml_value *table, const char *file, enum cfg_layer layer,
                         struct cfg_mount *out, struct cordon_error *err)
{
    char where[WHERE_MAX];
    out->readonly = true;
    out->origin.layer = layer;
    out->origin.line = table->line;
    out->origin.file = strdup(file);
    if (!out->origin.file)
        return error_set(err, ENOMEM, "mounts");
    for (size_t i = 0; i < table->table.count; i++) {
        const struct toml_entry *e = &table->table.entries[i];
        where_of(where, sizeof(where), file, e->line, e->column);
        int known = -1;
        for (int m = 0; mount_keys[m]; m++)
            if (strcmp(e->key, mount_keys[m]) == 0)
                known = m;
        if (known < 0) {
            const char *hint = suggest_from(e->key, mount_keys, 3);
            return error_set(err, 0, "%s: unknown key 'mounts.%s'%s%s%s", where, e->key,
                             hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
        }
        if (known == 2) {
            if (e->value->type != TOML_BOOLEAN)
                return error_set(err, 0, "%s: mounts.readonly: expected boolean, found %s", where,
                                 toml_type_name(e->value->type));
            out->readonly = e->value->boolean;
            continue;
        }
        if (e->value->type != TOML_STRING ||
            strlen(e->value->string.text) != e->value->string.length)
            return error_set(err, 0, "%s: mounts.%s: expected a path string, found %s", where,
                             e->key, toml_type_name(e->value->type));
        const char *why = check_absolute_path(e->value->string.text);
        if (why)
            return error_set(err, 0, "%s: mounts.%s: \"%.200s\" %s", where, e->key,
                             e->value->string.text, why);
        char **slot = known == 0 ? &out->host_path : &out->guest_path;
        *slot = strdup(e->value->string.text);
        if (!*slot)
            return error_set(err, ENOMEM, "mounts");
    }
    if (!out->host_path)
        return error_set(err, 0, "%s:%d:%d: mounts: host_path is required", file, table->line,
                         table->column);
    if (!out->guest_path && !(out->guest_path = strdup(out->host_path)))
        return error_set(err, ENOMEM, "mounts");
    return 0;
}

/* from = "env:VAR" | "file:/abs/path" | "command:TEXT"; NULL when fine. */
static const char *check_secret_from(const char *from)
{
    if (strncmp(from, "env:", 4) == 0) {
        const char *name = from + 4;
        if (!*name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
            return "env: needs an environment variable name";
        for (const char *c = name; *c; c++)
            if (!(isalnum((unsigned char)*c) || *c == '_'))
                return "env: needs an environment variable name";
        return NULL;
    }
    if (strncmp(from, "file:", 5) == 0)
        return check_absolute_path(from + 5) ? "file: needs an absolute path" : NULL;
    if (strncmp(from, "command:", 8) == 0)
        return from[8] ? NULL : "command: needs a command";
    return "expected \"env:VAR\", \"file:/absolute/path\" or \"command:...\"";
}

/* An HTTP field name (RFC 9110 token). */
static const char *check_header_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return "not an HTTP header name";
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("!#$%&'*+-.^_`|~", *c))
            return "not an HTTP header name";
    return NULL;
}

static int collect_secret(const struct toml_value *table, const char *file, enum cfg_layer layer,
                          struct cfg_secret *out, struct cordon_error *err)
{
    char where[WHERE_MAX];
    out->origin.layer = layer;
    out->origin.line = table->line;
    out->origin.file = strdup(file);
    if (!out->origin.file)
        return error_set(err, ENOMEM, "secrets");
    for (size_t i = 0; i < table->table.count; i++) {
        const struct toml_entry *e = &table->table.entries[i];
        snprintf(where, sizeof(where), "%s:%d:%d", file, e->line, e->column);
        int known = -1;
        for (int m = 0; secret_keys[m]; m++)
            if (strcmp(e->key, secret_keys[m]) == 0)
                known = m;
        if (known < 0) {
            const char *hint = suggest_from(e->key, secret_keys, 5);
            return error_set(err, 0, "%s: unknown key 'secrets.%s'%s%s%s", where, e->key,
                             hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
        }
        if (known == 4) {
            if (e->value->type != TOML_BOOLEAN)
                return error_set(err, 0, "%s: secrets.plain_http: expected true or false, found %s",
                                 where, toml_type_name(e->value->type));
            out->plain_http = e->value->boolean;
            continue;
        }
        if (known == 2) {
            if (e->value->type != TOML_ARRAY || e->value->array.count == 0)
                return error_set(err, 0,
                                 "%s: secrets.hosts: expected a non-empty array of host "
                                 "names, found %s",
                                 where, toml_type_name(e->value->type));
            for (size_t j = 0; j < e->value->array.count; j++) {
                const struct toml_value *item = e->value->array.items[j];
                snprintf(where, sizeof(where), "%s:%d:%d", file, item->line, item->column);
                if (item->type != TOML_STRING)
                    return error_set(err, 0, "%s: secrets.hosts: expected a host name, found %s",
                                     where, toml_type_name(item->type));
                const char *why = strlen(item->string.text) != item->string.length
                                      ? "contains U+0000"
                                      : check_host(item->string.text);
                if (why)
                    return error_set(err, 0, "%s: secrets.hosts: \"%.200s\" %s", where,
                                     item->string.text, why);
                if (cfg_strings_add(&out->hosts, item->string.text) < 0)
                    return error_set(err, ENOMEM, "secrets");
            }
            continue;
        }
        if (e->value->type != TOML_STRING ||
            strlen(e->value->string.text) != e->value->string.length)
            return error_set(err, 0, "%s: secrets.%s: expected a string, found %s", where, e->key,
                             toml_type_name(e->value->type));
        const char *text = e->value->string.text;
        const char *why = known == 0   ? check_env_name(text)
                          : known == 1 ? check_secret_from(text)
                                       : check_header_name(text);
        if (why)
            return error_set(err, 0, "%s: secrets.%s: \"%.200s\" %s", where, e->key, text, why);
        char **slot = known == 0 ? &out->name : known == 1 ? &out->from : &out->header;
        free(*slot);
        *slot = strdup(text);
        if (!*slot)
            return error_set(err, ENOMEM, "secrets");
    }
    const char *missing = !out->name          ? "name"
                          : !out->from        ? "from"
                          : !out->hosts.count ? "hosts"
                                              : NULL;
    if (missing)
        return error_set(err, 0, "%s:%d:%d: secrets: %s is required", file, table->line,
                         table->column, missing);
    return 0;
}

/* What collect_value hands each kind's step: the key, the value, its
 * file and layer, and the buffer messages are prefixed with. */
struct collect {
    const struct key_info *k;
    const struct toml_value *v;
    const char *file;
    enum cfg_layer layer;
    char *where;
    size_t where_size;
};

static int collect_scalar(const struct collect *c, struct cfg_assignment *a,
                          struct cordon_error *err)
{
    const struct key_info *k = c->k;
    const struct toml_value *v = c->v;
    const char *where = c->where;
    switch (k->kind) {
    case KIND_ENUM: {
        if (v->type != TOML_STRING)
            return type_error(err, where, k, "a string", v);
        int index = enum_index(k, v->string.text);
        if (index < 0)
            return enum_error(err, where, k, v->string.text);
        a->integer = index;
        return 0;
    }
    case KIND_BOOL:
        if (v->type != TOML_BOOLEAN)
            return type_error(err, where, k, "true or false", v);
        a->boolean = v->boolean;
        return 0;
    case KIND_INT:
        if (v->type != TOML_INTEGER)
            return type_error(err, where, k, "an integer", v);
        if (v->integer < k->min || v->integer > k->max)
            return error_set(err, 0, "%s: %s: %lld is out of range (%lld to %lld)", where, k->name,
                             (long long)v->integer, (long long)k->min, (long long)k->max);
        a->integer = v->integer;
        return 0;
    case KIND_NUMBER:
        if (v->type != TOML_INTEGER && v->type != TOML_FLOAT)
            return type_error(err, where, k, "a number", v);
        a->number = v->type == TOML_INTEGER ? (double)v->integer : v->floating;
        if (isnan(a->number) || a->number < (double)k->min || a->number > (double)k->max)
            return error_set(err, 0, "%s: %s: out of range (%lld to %lld)", where, k->name,
                             (long long)k->min, (long long)k->max);
        return 0;
    default: { /* KIND_STRING */
        if (v->type != TOML_STRING)
            return type_error(err, where, k, "a string", v);
        const char *why = strlen(v->string.text) != v->string.length ? "contains U+0000"
                                                                     : k->check(v->string.text);
        if (why)
            return error_set(err, 0, "%s: %s: \"%.100s\" %s", where, k->name, v->string.text, why);
        a->string = strdup(v->string.text);
        return a->string ? 0 : error_set(err, ENOMEM, "%s", where);
    }
    }
}

static int collect_list(const struct collect *c, struct cfg_assignment *a, struct cordon_error *err)
{
    const struct key_info *k = c->k;
    if (c->v->type != TOML_ARRAY)
        return type_error(err, c->where, k, "an array of strings", c->v);
    for (size_t i = 0; i < c->v->array.count; i++) {
        const struct toml_value *item = c->v->array.items[i];
        where_of(c->where, c->where_size, c->file, item->line, item->column);
        if (item->type != TOML_STRING)
            return type_error(err, c->where, k, "an array of strings", item);
        const char *why = strlen(item->string.text) != item->string.length
                              ? "contains U+0000"
                              : k->check(item->string.text);
        if (why)
            return error_set(err, 0, "%s: %s: \"%.200s\" %s", c->where, k->name, item->string.text,
                             why);
        if (cfg_strings_add(&a->list, item->string.text) < 0)
            return error_set(err, ENOMEM, "%s", c->where);
    }
    return 0;
}

static int collect_ports(const struct collect *c, struct cfg_assignment *a,
                         struct cordon_error *err)
{
    const struct key_info *k = c->k;
    if (c->v->type != TOML_ARRAY)
        return type_error(err, c->where, k, "an array of ports", c->v);
    a->ports.items = calloc(c->v->array.count + 1, sizeof(*a->ports.items));
    if (!a->ports.items)
        return error_set(err, ENOMEM, "%s", c->where);
    for (size_t i = 0; i < c->v->array.count; i++) {
        const struct toml_value *item = c->v->array.items[i];
        where_of(c->where, c->where_size, c->file, item->line, item->column);
        char text[64];
        if (item->type == TOML_INTEGER)
            snprintf(text, sizeof(text), "%lld", (long long)item->integer);
        else if (item->type == TOML_STRING && item->string.length < sizeof(text))
            snprintf(text, sizeof(text), "%s", item->string.text);
        else
            return type_error(err, c->where, k, "a port number or \"[BIND:]HOST:GUEST\"", item);
        const char *why = parse_port_spec(text, &a->ports.items[a->ports.count]);
        if (why)
            return error_set(err, 0, "%s: %s: \"%s\": %s", c->where, k->name, text, why);
        a->ports.count++;
    }
    return 0;
}

static int collect_mounts(const struct collect *c, struct cfg_assignment *a,
                          struct cordon_error *err)
{
    const struct key_info *k = c->k;
    if (c->v->type != TOML_ARRAY)
        return type_error(err, c->where, k, "an array of tables ([[mounts]])", c->v);
    a->mounts.items = calloc(c->v->array.count + 1, sizeof(*a->mounts.items));
    if (!a->mounts.items)
        return error_set(err, ENOMEM, "%s", c->where);
    for (size_t i = 0; i < c->v->array.count; i++) {
        const struct toml_value *item = c->v->array.items[i];
        if (item->type != TOML_TABLE) {
            where_of(c->where, c->where_size, c->file, item->line, item->column);
            return type_error(err, c->where, k, "a table", item);
        }
        a->mounts.count++;
        if (collect_mount(item, c->file, c->layer, &a->mounts.items[i], err) < 0)
            return -1;
    }
    return 0;
}

static int collect_secrets(const struct collect *c, struct cfg_assignment *a,
                           struct cordon_error *err)
{
    const struct key_info *k = c->k;
    if (c->v->type != TOML_ARRAY)
        return type_error(err, c->where, k, "an array of tables ([[secrets]])", c->v);
    a->secrets.items = calloc(c->v->array.count + 1, sizeof(*a->secrets.items));
    if (!a->secrets.items)
        return error_set(err, ENOMEM, "%s", c->where);
    for (size_t i = 0; i < c->v->array.count; i++) {
        const struct toml_value *item = c->v->array.items[i];
        if (item->type != TOML_TABLE) {
            snprintf(c->where, c->where_size, "%s:%d:%d", c->file, item->line, item->column);
            return type_error(err, c->where, k, "a table", item);
        }
        a->secrets.count++;
        if (collect_secret(item, c->file, c->layer, &a->secrets.items[i], err) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(a->secrets.items[j].name, a->secrets.items[i].name) == 0)
                return error_set(err, 0, "%s:%d:%d: secrets: %s is named twice", c->file,
                                 item->line, item->column, a->secrets.items[i].name);
    }
    return 0;
}

static int collect_value(const struct key_info *k, enum cfg_key key, const struct toml_value *v,
                         const char *file, int line, int column, enum cfg_layer layer,
                         struct cfg_assignments *out, struct cordon_error *err)
{
    char where[WHERE_MAX];
    /* messages point at the value; the origin records the key's line */
    where_of(where, sizeof(where), file, v->line, v->column);
    struct cfg_assignment *a = assignment_new(out, key, layer, file, line);
    if (!a)
        return error_set(err, ENOMEM, "%s", where);
    const struct collect c = {k, v, file, layer, where, sizeof(where)};
    switch (k->kind) {
    case KIND_ENUM:
    case KIND_BOOL:
    case KIND_INT:
    case KIND_NUMBER:
    case KIND_STRING:
        return collect_scalar(&c, a, err);
    case KIND_LIST:
        return collect_list(&c, a, err);
    case KIND_PORTS:
        return collect_ports(&c, a, err);
    case KIND_MOUNTS:
        return collect_mounts(&c, a, err);
    case KIND_SECRETS:
        return collect_secrets(&c, a, err);
    }
    return error_set(err, 0, "%s: internal error", where);
}

int cfg_collect_toml(const struct toml_value *root, const char *file, enum cfg_layer layer,
                     struct cfg_assignments *out, struct cordon_error *err)
{
    for (size_t i = 0; i < root->table.count; i++) {
        const struct toml_entry *e = &root->table.entries[i];
        bool section = false;
        for (int s = 0; schema_sections[s]; s++)
            section |= strcmp(e->key, schema_sections[s]) == 0;
        if (section && e->value->type == TOML_TABLE) {
            const struct toml_value *t = e->value;
            for (size_t j = 0; j < t->table.count; j++) {
                const struct toml_entry *inner = &t->table.entries[j];
                char name[TOML_MAX_KEY_LEN * 2 + 2];
                snprintf(name, sizeof(name), "%s.%s", e->key, inner->key);
                int key = cfg_key_lookup(name);
                if (key < 0) {
                    const char *hint = cfg_key_suggest(name);
                    return error_set(err, 0, "%s:%d:%d: unknown key '%s'%s%s%s", file, inner->line,
                                     inner->column, name, hint ? " (did you mean '" : "",
                                     hint ? hint : "", hint ? "'?)" : "");
                }
                if (collect_value(&schema_keys[key], key, inner->value, file, inner->line,
                                  inner->column, layer, out, err) < 0)
                    return -1;
            }
            continue;
        }
        int key = cfg_key_lookup(e->key);
        if (key < 0 || section) {
            const char *hint = section ? NULL : cfg_key_suggest(e->key);
            if (section)
                return error_set(err, 0, "%s:%d:%d: '%s' must be a table ([%s])", file, e->line,
                                 e->column, e->key, e->key);
            return error_set(err, 0, "%s:%d:%d: unknown key '%s'%s%s%s", file, e->line, e->column,
                             e->key, hint ? " (did you mean '" : "", hint ? hint : "",
                             hint ? "'?)" : "");
        }
        if (collect_value(&schema_keys[key], key, e->value, file, e->line, e->column, layer, out,
                          err) < 0)
            return -1;
    }
    return 0;
}

static int parse_bool_text(const char *text, bool *ret)
{
    static const char *const yes[] = {"true", "1", "yes", "on", NULL};
    static const char *const no[] = {"false", "0", "no", "off", NULL};
    for (int i = 0; yes[i]; i++)
        if (strcasecmp(text, yes[i]) == 0)
            return *ret = true, 0;
    for (int i = 0; no[i]; i++)
        if (strcasecmp(text, no[i]) == 0)
            return *ret = false, 0;
    return -1;
}

int cfg_collect_text(enum cfg_key key, const char *text, const char *origin_name,
                     enum cfg_layer layer, struct cfg_assignments *out, struct cordon_error *err)
{
    const struct key_info *k = &schema_keys[key];
    struct cfg_assignment *a = assignment_new(out, key, layer, origin_name, 0);
    if (!a)
        return error_set(err, ENOMEM, "%s", origin_name);
    char *end;
    switch (k->kind) {
    case KIND_ENUM: {
        int index = enum_index(k, text);
        if (index < 0)
            return enum_error(err, origin_name, k, text);
        a->integer = index;
        return 0;
    }
    case KIND_BOOL:
        if (parse_bool_text(text, &a->boolean) < 0)
            return error_set(err, 0, "%s: %s: expected true or false, found \"%.64s\"", origin_name,
                             k->name, text);
        return 0;
    case KIND_INT:
        errno = 0;
        a->integer = strtoll(text, &end, 10);
        if (!*text || *end || errno)
            return error_set(err, 0, "%s: %s: expected an integer, found \"%.64s\"", origin_name,
                             k->name, text);
        if (a->integer < k->min || a->integer > k->max)
            return error_set(err, 0, "%s: %s: %lld is out of range (%lld to %lld)", origin_name,
                             k->name, (long long)a->integer, (long long)k->min, (long long)k->max);
        return 0;
    case KIND_NUMBER:
        errno = 0;
        a->number = strtod(text, &end);
        if (!*text || *end || errno || isnan(a->number) || a->number < (double)k->min ||
            a->number > (double)k->max)
            return error_set(err, 0, "%s: %s: expected a number from %lld to %lld, found \"%.64s\"",
                             origin_name, k->name, (long long)k->min, (long long)k->max, text);
        return 0;
    case KIND_STRING: {
        const char *why = k->check(text);
        if (why)
            return error_set(err, 0, "%s: %s: \"%.100s\" %s", origin_name, k->name, text, why);
        a->string = strdup(text);
        return a->string ? 0 : error_set(err, ENOMEM, "%s", origin_name);
    }
    case KIND_LIST:
    case KIND_PORTS: {
        _cleanup_free_ char *copy = strdup(text);
        if (!copy)
            return error_set(err, ENOMEM, "%s", origin_name);
        size_t items = 1;
        for (const char *c = text; *c; c++)
            items += *c == ',';
        if (k->kind == KIND_PORTS && !(a->ports.items = calloc(items, sizeof(*a->ports.items))))
            return error_set(err, ENOMEM, "%s", origin_name);
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            while (*item == ' ')
                item++;
            size_t length = strlen(item);
            while (length > 0 && item[length - 1] == ' ')
                item[--length] = '\0';
            if (!*item)
                continue;
            const char *why = k->kind == KIND_PORTS
                                  ? parse_port_spec(item, &a->ports.items[a->ports.count])
                                  : k->check(item);
            if (why)
                return error_set(err, 0, "%s: %s: \"%.200s\" %s", origin_name, k->name, item, why);
            if (k->kind == KIND_PORTS)
                a->ports.count++;
            else if (cfg_strings_add(&a->list, item) < 0)
                return error_set(err, ENOMEM, "%s", origin_name);
        }
        return 0;
    }
    case KIND_MOUNTS:
        return error_set(err, 0, "%s: mounts can only be set in a configuration file ([[mounts]])",
                         origin_name);
    case KIND_SECRETS:
        return error_set(err, 0,
                         "%s: secrets can only be set in the user's or a host-owned "
                         "configuration file ([[secrets]])",
                         origin_name);
    }
    return error_set(err, 0, "%s: internal error", origin_name);
}
