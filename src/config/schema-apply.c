/* The configuration schema's resolved struct (schema.c): one assignment
 * merged over the lower layers' value, the tmpfs size, and the release of
 * it all. Host context. */
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

/* ---------- the resolved struct ---------- */

int64_t cfg_tmpfs_mib(const struct cordon_config *cfg)
{
    if (cfg->limits.tmpfs_mib > 0)
        return cfg->limits.tmpfs_mib;
    if (cfg->limits.memory_mib <= 0)
        return CFG_TMPFS_DEFAULT_MIB;
    /* An eighth each: the five together take at most 5/8 of the memory
     * budget, leaving the rest to the processes. */
    int64_t mib = cfg->limits.memory_mib / 8;
    return mib < 1 ? 1 : mib;
}

static int copy_strings(struct cfg_strings *dst, const struct cfg_strings *src, bool replace)
{
    if (replace)
        cfg_strings_free(dst);
    for (size_t i = 0; i < src->count; i++)
        if (cfg_strings_add(dst, src->items[i]) < 0)
            return -1;
    return 0;
}

int cfg_apply(struct cordon_config *cfg, const struct cfg_assignment *a, bool replace,
              struct cordon_error *err)
{
    const struct key_info *k = &schema_keys[a->key];
    char *field = (char *)cfg + k->offset;
    replace = replace || k->list_replaces;
    switch (k->kind) {
    case KIND_ENUM:
        *(int *)field = (int)a->integer;
        break;
    case KIND_BOOL:
        *(bool *)field = a->boolean;
        break;
    case KIND_INT:
        *(int64_t *)field = a->integer;
        break;
    case KIND_NUMBER:
        *(double *)field = a->number;
        break;
    case KIND_STRING: {
        char *copy = strdup(a->string);
        if (!copy)
            return error_set(err, ENOMEM, "%s", k->name);
        free(*(char **)field);
        *(char **)field = copy;
        break;
    }
    case KIND_LIST:
        if (copy_strings((struct cfg_strings *)field, &a->list, replace) < 0)
            return error_set(err, ENOMEM, "%s", k->name);
        break;
    case KIND_PORTS: {
        struct cfg_ports *ports = (struct cfg_ports *)field;
        size_t base = replace ? 0 : ports->count;
        struct cfg_port *grown =
            realloc(ports->items, (base + a->ports.count + 1) * sizeof(*grown));
        if (!grown)
            return error_set(err, ENOMEM, "%s", k->name);
        if (a->ports.count)
            memcpy(grown + base, a->ports.items, a->ports.count * sizeof(*grown));
        ports->items = grown;
        ports->count = base + a->ports.count;
        break;
    }
    case KIND_MOUNTS: {
        struct cfg_mounts *mounts = (struct cfg_mounts *)field;
        if (replace)
            mounts_free(mounts);
        struct cfg_mount *grown =
            realloc(mounts->items, (mounts->count + a->mounts.count + 1) * sizeof(*grown));
        if (!grown)
            return error_set(err, ENOMEM, "%s", k->name);
        mounts->items = grown;
        for (size_t i = 0; i < a->mounts.count; i++) {
            struct cfg_mount *m = &mounts->items[mounts->count];
            memset(m, 0, sizeof(*m));
            m->host_path = strdup(a->mounts.items[i].host_path);
            m->guest_path = strdup(a->mounts.items[i].guest_path);
            m->readonly = a->mounts.items[i].readonly;
            mounts->count++;
            if (!m->host_path || !m->guest_path ||
                cfg_origin_copy(&m->origin, &a->mounts.items[i].origin) < 0)
                return error_set(err, ENOMEM, "%s", k->name);
        }
        break;
    }
    case KIND_SECRETS: {
        /* A later layer's secret of the same name replaces the earlier one. */
        struct cfg_secrets *secrets = (struct cfg_secrets *)field;
        if (replace)
            cfg_secrets_free(secrets);
        for (size_t i = 0; i < a->secrets.count; i++) {
            const struct cfg_secret *src = &a->secrets.items[i];
            struct cfg_secret *dst = NULL;
            for (size_t j = 0; j < secrets->count; j++)
                if (strcmp(secrets->items[j].name, src->name) == 0)
                    dst = &secrets->items[j];
            if (!dst) {
                struct cfg_secret *grown =
                    realloc(secrets->items, (secrets->count + 1) * sizeof(*grown));
                if (!grown)
                    return error_set(err, ENOMEM, "%s", k->name);
                secrets->items = grown;
                dst = &secrets->items[secrets->count++];
                memset(dst, 0, sizeof(*dst));
            }
            free(dst->name);
            free(dst->from);
            free(dst->header);
            cfg_strings_free(&dst->hosts);
            dst->name = strdup(src->name);
            dst->from = strdup(src->from);
            dst->header = src->header ? strdup(src->header) : NULL;
            dst->plain_http = src->plain_http;
            if (!dst->name || !dst->from || (src->header && !dst->header) ||
                copy_strings(&dst->hosts, &src->hosts, true) < 0 ||
                cfg_origin_copy(&dst->origin, &src->origin) < 0)
                return error_set(err, ENOMEM, "%s", k->name);
        }
        break;
    }
    }
    if (cfg_origin_copy(&cfg->origin[a->key], &a->origin) < 0)
        return error_set(err, ENOMEM, "%s", k->name);
    return 0;
}

bool cfg_routes_tool(const struct cordon_config *cfg, const char *tool)
{
    return cfg_strings_contains(&cfg->route_tools, tool);
}

void cfg_free(struct cordon_config *cfg)
{
    if (!cfg)
        return;
    cfg_strings_free(&cfg->route_tools);
    cfg_strings_free(&cfg->protected_paths);
    free(cfg->sandbox_name);
    free(cfg->docker.host);
    free(cfg->docker.image);
    cfg_strings_free(&cfg->env.allow);
    cfg_strings_free(&cfg->network.allow_hosts);
    free(cfg->network.upstream_proxy);
    cfg_strings_free(&cfg->network.no_proxy);
    cfg_strings_free(&cfg->network.http_rules);
    free(cfg->network.ca_file);
    free(cfg->network.publish_ports.items);
    mounts_free(&cfg->mounts);
    cfg_secrets_free(&cfg->secrets);
    cfg_strings_free(&cfg->skills_paths);
    cfg_strings_free(&cfg->etc.extra);
    cfg_strings_free(&cfg->sockets.allow);
    cfg_strings_free(&cfg->network.host_services);
    for (int k = 0; k < CFG_KEY_COUNT; k++)
        cfg_origin_free(&cfg->origin[k]);
    free(cfg->workspace);
    free(cfg->user_file);
    free(cfg->workspace_file);
    free(cfg->host_default_files[0]);
    free(cfg->host_default_files[1]);
    free(cfg->project_policy_file);
    free(cfg->trust_file);
    free(cfg->trust_guard_dir);
    memset(cfg, 0, sizeof(*cfg));
}
