/* What the files of the configuration schema share (schema.c: the key
 * table and the defaults; schema-check.c: the validators of list items and values;
 * schema-collect.c: TOML values and text into assignments; schema-apply.c:
 * assignments into the resolved struct). Internal to src/config/. Host
 * context. */
#pragma once

#include "config/config-internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kind {
    KIND_ENUM,
    KIND_BOOL,
    KIND_INT,
    KIND_NUMBER,
    KIND_STRING,
    KIND_LIST,
    KIND_PORTS,
    KIND_MOUNTS,
    KIND_SECRETS
};

/* Returns NULL when item is acceptable, else the reason. */
typedef const char *(*item_check)(const char *item);

struct key_info {
    const char *name;
    enum kind kind;
    size_t offset;
    const char *const *choices;
    int64_t min, max;
    item_check check;
    bool list_replaces; /* a lower list is replaced, not extended */
};

const char *check_tool(const char *item);
const char *check_relative_path(const char *item);
const char *check_env_name(const char *item);
const char *check_host(const char *item);
const char *check_host_service(const char *item);
const char *check_absolute_path(const char *item);
const char *check_sandbox_name(const char *item);
const char *check_docker_host(const char *item);
const char *check_docker_image(const char *item);
const char *check_etc_entry(const char *item);
const char *check_upstream(const char *item);
const char *check_http_rule(const char *item);

const char *suggest_from(const char *name, const char *const *candidates, size_t count);
const char *parse_port_spec(const char *text, struct cfg_port *out);
void mounts_free(struct cfg_mounts *m);

/* The key table, indexed by enum cfg_key; the tools a route may name; the
 * names of the tables that hold keys ("env", "limits", ...). */
extern const struct key_info schema_keys[CFG_KEY_COUNT];
extern const char *const schema_tool_names[];
extern const char *const schema_sections[];
