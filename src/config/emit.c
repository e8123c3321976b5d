/* Rendering of a resolved configuration (emit.h). Host context. */
#include "config/emit.h"
#include "util/cleanup.h"

#include <math.h>
#include <string.h>

static json_t *strings_json(const struct cfg_strings *s)
{
    json_t *array = json_array();
    for (size_t i = 0; array && i < s->count; i++)
        json_array_append_new(array, json_string(s->items[i]));
    return array;
}

json_t *cfg_value_json(const struct cordon_config *cfg, enum cfg_key key)
{
    switch (key) {
    case CFG_BACKEND:
    case CFG_FALLBACK_MODE:
    case CFG_TEARDOWN:
    case CFG_ENV_MODE:
    case CFG_NETWORK_MODE:
    case CFG_DOCKER_MODE:
    case CFG_BACKEND_FLOOR:
    case CFG_WORKSPACE_MODE: {
        int value = key == CFG_BACKEND         ? cfg->backend
                    : key == CFG_FALLBACK_MODE ? cfg->fallback_mode
                    : key == CFG_TEARDOWN      ? cfg->teardown
                    : key == CFG_ENV_MODE      ? cfg->env.mode
                    : key == CFG_NETWORK_MODE  ? cfg->network.mode
                    : key == CFG_BACKEND_FLOOR ? cfg->backend_floor
                    : key == CFG_DOCKER_MODE   ? cfg->docker.mode
                                               : cfg->workspace_mode;
        return json_string(cfg_enum_name(key, value));
    }
    case CFG_ALLOW_HOST_EXECUTION:
        return json_boolean(cfg->allow_host_execution);
    case CFG_WORKSPACE_READONLY:
        return json_boolean(cfg->workspace_readonly);
    case CFG_TOOLCHAIN_CACHES:
        return json_boolean(cfg->toolchain_caches);
    case CFG_ROUTE_TOOLS:
        return strings_json(&cfg->route_tools);
    case CFG_PROTECTED_PATHS:
        return strings_json(&cfg->protected_paths);
    case CFG_ENV_ALLOW:
        return strings_json(&cfg->env.allow);
    case CFG_NETWORK_ALLOW_HOSTS:
        return strings_json(&cfg->network.allow_hosts);
    case CFG_SKILLS_PATHS:
        return strings_json(&cfg->skills_paths);
    case CFG_ETC_EXTRA:
        return strings_json(&cfg->etc.extra);
    case CFG_SOCKETS_ALLOW:
        return strings_json(&cfg->sockets.allow);
    case CFG_NETWORK_HOST_SERVICES:
        return strings_json(&cfg->network.host_services);
    case CFG_GC_HOURS:
        return json_integer(cfg->gc_hours);
    case CFG_SANDBOX_NAME:
        return cfg->sandbox_name ? json_string(cfg->sandbox_name) : json_null();
    case CFG_DOCKER_HOST:
        return json_string(cfg->docker.host);
    case CFG_DOCKER_IMAGE:
        return cfg->docker.image ? json_string(cfg->docker.image) : json_null();
    case CFG_LIMITS_CPUS:
        return (double)(int64_t)cfg->limits.cpus == cfg->limits.cpus
                   ? json_integer((json_int_t)cfg->limits.cpus)
                   : json_real(cfg->limits.cpus);
    case CFG_LIMITS_MEMORY_MIB:
        return json_integer(cfg->limits.memory_mib);
    case CFG_LIMITS_PIDS:
        return json_integer(cfg->limits.pids);
    case CFG_LIMITS_OPEN_FILES:
        return json_integer(cfg->limits.open_files);
    case CFG_LIMITS_FILE_SIZE_MIB:
        return json_integer(cfg->limits.file_size_mib);
    case CFG_LIMITS_CPU_SECONDS:
        return json_integer(cfg->limits.cpu_seconds);
    case CFG_LIMITS_BASH_TIMEOUT:
        return json_integer(cfg->limits.bash_timeout);
    case CFG_LIMITS_TMPFS_MIB:
        return json_integer(cfg->limits.tmpfs_mib);
    case CFG_LIMITS_TMPFS_INODES:
        return json_integer(cfg->limits.tmpfs_inodes);
    case CFG_NETWORK_PUBLISH_PORTS: {
        json_t *array = json_array();
        for (size_t i = 0; array && i < cfg->network.publish_ports.count; i++) {
            const struct cfg_port *p = &cfg->network.publish_ports.items[i];
            char text[96];
            snprintf(text, sizeof(text), strchr(p->bind, ':') ? "[%s]:%u:%u" : "%s:%u:%u", p->bind,
                     p->host_port, p->guest_port);
            json_array_append_new(array, json_string(text));
        }
        return array;
    }
    case CFG_MOUNTS: {
        json_t *array = json_array();
        for (size_t i = 0; array && i < cfg->mounts.count; i++) {
            const struct cfg_mount *m = &cfg->mounts.items[i];
            json_array_append_new(array,
                                  json_pack("{s:s, s:s, s:b}", "host_path", m->host_path,
                                            "guest_path", m->guest_path, "readonly", m->readonly));
        }
        return array;
    }
    case CFG_NETWORK_UPSTREAM_PROXY:
        return cfg->network.upstream_proxy ? json_string(cfg->network.upstream_proxy) : json_null();
    case CFG_NETWORK_NO_PROXY:
        return strings_json(&cfg->network.no_proxy);
    case CFG_NETWORK_HTTP_RULES:
        return strings_json(&cfg->network.http_rules);
    case CFG_NETWORK_CA_FILE:
        return cfg->network.ca_file ? json_string(cfg->network.ca_file) : json_null();
    case CFG_SECRETS: {
        /* Names and where they may go; never the value (it is not read here). */
        json_t *array = json_array();
        for (size_t i = 0; array && i < cfg->secrets.count; i++) {
            const struct cfg_secret *sec = &cfg->secrets.items[i];
            json_t *item = json_pack("{s:s, s:s, s:o}", "name", sec->name, "from", sec->from,
                                     "hosts", strings_json(&sec->hosts));
            if (item && sec->header)
                json_object_set_new(item, "header", json_string(sec->header));
            if (item)
                json_object_set_new(item, "plain_http", json_boolean(sec->plain_http));
            json_array_append_new(array, item);
        }
        return array;
    }
    case CFG_KEY_COUNT:
        break;
    }
    return json_null();
}

static json_t *origin_json(const struct cordon_config *cfg, enum cfg_key key)
{
    const struct cfg_origin *o = &cfg->origin[key];
    return json_pack("{s:o, s:s, s:o, s:i, s:b}", "value", cfg_value_json(cfg, key), "layer",
                     cfg_layer_name(o->layer), "file", o->file ? json_string(o->file) : json_null(),
                     "line", o->line, "locked", o->locked);
}

json_t *cfg_to_json(const struct cordon_config *cfg, bool explain)
{
    json_t *root = json_object();
    for (int k = 0; root && k < CFG_KEY_COUNT; k++) {
        const char *name = cfg_key_name(k);
        if (explain) {
            json_object_set_new(root, name, origin_json(cfg, k));
            continue;
        }
        if ((k == CFG_SANDBOX_NAME && !cfg->sandbox_name) ||
            (k == CFG_DOCKER_IMAGE && !cfg->docker.image) ||
            (k == CFG_NETWORK_UPSTREAM_PROXY && !cfg->network.upstream_proxy) ||
            (k == CFG_NETWORK_CA_FILE && !cfg->network.ca_file))
            continue;
        const char *dot = strchr(name, '.');
        if (!dot) {
            json_object_set_new(root, name, cfg_value_json(cfg, k));
            continue;
        }
        char section[32];
        snprintf(section, sizeof(section), "%.*s", (int)(dot - name), name);
        json_t *table = json_object_get(root, section);
        if (!table) {
            table = json_object();
            json_object_set_new(root, section, table);
        }
        json_object_set_new(table, dot + 1, cfg_value_json(cfg, k));
    }
    return root;
}

static void write_toml_string(const char *s, FILE *out)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7F)
            fprintf(out, "\\u%04X", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void write_toml_json(const json_t *value, FILE *out)
{
    size_t i;
    json_t *item;
    switch (json_typeof(value)) {
    case JSON_STRING:
        write_toml_string(json_string_value(value), out);
        break;
    case JSON_INTEGER:
        fprintf(out, "%lld", (long long)json_integer_value(value));
        break;
    case JSON_REAL:
        fprintf(out, "%g", json_real_value(value));
        break;
    case JSON_TRUE:
        fputs("true", out);
        break;
    case JSON_FALSE:
        fputs("false", out);
        break;
    case JSON_ARRAY:
        fputc('[', out);
        json_array_foreach (value, i, item) {
            if (i)
                fputs(", ", out);
            write_toml_json(item, out);
        }
        fputc(']', out);
        break;
    default:
        break;
    }
}

static void write_origin_of(const struct cfg_origin *o, FILE *out)
{
    fprintf(out, "  # %s", cfg_layer_name(o->layer));
    if (o->file && o->line)
        fprintf(out, " %s:%d", o->file, o->line);
    else if (o->file)
        fprintf(out, " %s", o->file);
    if (o->locked)
        fputs(" (locked)", out);
}

static void write_origin(const struct cordon_config *cfg, enum cfg_key key, FILE *out)
{
    write_origin_of(&cfg->origin[key], out);
}

int cfg_write_toml(const struct cordon_config *cfg, bool explain, FILE *out)
{
    const char *section = "";
    for (int k = 0; k < CFG_KEY_COUNT; k++) {
        if (k == CFG_MOUNTS || k == CFG_SECRETS || (k == CFG_SANDBOX_NAME && !cfg->sandbox_name) ||
            (k == CFG_DOCKER_IMAGE && !cfg->docker.image) ||
            (k == CFG_NETWORK_UPSTREAM_PROXY && !cfg->network.upstream_proxy) ||
            k == CFG_BACKEND_FLOOR || (k == CFG_NETWORK_CA_FILE && !cfg->network.ca_file))
            continue;
        const char *name = cfg_key_name(k);
        const char *dot = strchr(name, '.');
        if (dot && strncmp(section, name, (size_t)(dot - name) + 1) != 0) {
            section = name;
            fprintf(out, "\n[%.*s]\n", (int)(dot - name), name);
        }
        json_t *value = cfg_value_json(cfg, k);
        fprintf(out, "%s = ", dot ? dot + 1 : name);
        write_toml_json(value, out);
        json_decref(value);
        if (explain)
            write_origin(cfg, k, out);
        fputc('\n', out);
    }
    for (size_t i = 0; i < cfg->mounts.count; i++) {
        const struct cfg_mount *m = &cfg->mounts.items[i];
        fputs("\n[[mounts]]", out);
        if (explain) {
            /* each mount keeps its own origin; a host layer locks them all */
            struct cfg_origin o = m->origin;
            o.locked = cfg->origin[CFG_MOUNTS].locked;
            write_origin_of(&o, out);
        }
        fputs("\nhost_path = ", out);
        write_toml_string(m->host_path, out);
        fputs("\nguest_path = ", out);
        write_toml_string(m->guest_path, out);
        fprintf(out, "\nreadonly = %s\n", m->readonly ? "true" : "false");
    }
    for (size_t i = 0; i < cfg->secrets.count; i++) {
        const struct cfg_secret *sec = &cfg->secrets.items[i];
        fputs("\n[[secrets]]", out);
        if (explain)
            write_origin_of(&sec->origin, out);
        fputs("\nname = ", out);
        write_toml_string(sec->name, out);
        fputs("\nfrom = ", out);
        write_toml_string(sec->from, out);
        fputs("\nhosts = ", out);
        json_t *hosts = strings_json(&sec->hosts);
        write_toml_json(hosts, out);
        json_decref(hosts);
        if (sec->header) {
            fputs("\nheader = ", out);
            write_toml_string(sec->header, out);
        }
        fprintf(out, "\nplain_http = %s", sec->plain_http ? "true" : "false");
        fputc('\n', out);
    }
    if (explain && cfg->mounts.count == 0) {
        fputs("\n# mounts = []", out);
        write_origin(cfg, CFG_MOUNTS, out);
        fputc('\n', out);
    }
    /* A comment: only host-owned policy may set it, so the printed file
     * stays a valid user file (and it is a top-level key, after the
     * sections). */
    fprintf(out, "\n# backend_floor = \"%s\" (host-owned policy only)",
            cfg_enum_name(CFG_BACKEND_FLOOR, cfg->backend_floor));
    if (explain)
        write_origin(cfg, CFG_BACKEND_FLOOR, out);
    fputc('\n', out);
    return ferror(out) ? -1 : 0;
}
