/* Rendering a resolved configuration for `cordon config`: as TOML, as JSON,
 * and explained (each value with its layer, file, line and lock). Host
 * context; the CLI prints what these return. */
#pragma once

#include "config/config.h"

#include <jansson.h>
#include <stdio.h>

/* The value of one key as JSON (strings, numbers, booleans, arrays; mounts
 * and published ports as arrays of objects/strings). */
json_t *cfg_value_json(const struct cordon_config *cfg, enum cfg_key key);

/* {"backend": "ns", "env": {"mode": ...}, ...}, or with explain
 * {"backend": {"value": "ns", "layer": "default", "file": null, "line": 0,
 * "locked": false}, ...} keyed by dotted name. */
json_t *cfg_to_json(const struct cordon_config *cfg, bool explain);

/* The effective configuration as a TOML document; explain appends
 * "# layer file:line (locked)" to each line. */
int cfg_write_toml(const struct cordon_config *cfg, bool explain, FILE *out);
