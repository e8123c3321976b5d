/* The configuration schema: every key with its type, default, allowed values
 * and validation (the key table), the key names with a "did you mean" for
 * an unknown one, and the defaults. The validators are in schema-check.c,
 * the conversion of TOML values or environment text into typed assignments
 * in schema-collect.c, the merge into the resolved struct in
 * schema-apply.c. Host context, on untrusted input (a workspace file is
 * agent-writable). */
#include "config/config-internal.h"
#include "config/schema-internal.h"
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

static const char *const backend_choices[] = {"ns", "vm", "docker", "auto", NULL};
static const char *const backend_floor_choices[] = {"any", "ns", "kernel-boundary", NULL};
static const char *const fallback_choices[] = {"block", "host", NULL};
static const char *const teardown_choices[] = {"remove", "stop", "none", NULL};
static const char *const env_mode_choices[] = {"strict", "allowlist", "passthrough", NULL};
static const char *const network_mode_choices[] = {"deny", "allowlist", "open", NULL};
static const char *const docker_mode_choices[] = {"auto", "require", "disabled", NULL};
static const char *const workspace_mode_choices[] = {"direct", "review", NULL};
const char *const schema_tool_names[] = {"read", "write", "edit", "ls",
                                         "find", "grep",  "bash", NULL};

#define AT(field) offsetof(struct cordon_config, field)

const struct key_info schema_keys[CFG_KEY_COUNT] = {
    [CFG_BACKEND] = {"backend", KIND_ENUM, AT(backend), backend_choices, 0, 0, NULL, false},
    [CFG_FALLBACK_MODE] = {"fallback_mode", KIND_ENUM, AT(fallback_mode), fallback_choices, 0, 0,
                           NULL, false},
    [CFG_ALLOW_HOST_EXECUTION] = {"allow_host_execution", KIND_BOOL, AT(allow_host_execution), NULL,
                                  0, 0, NULL, false},
    [CFG_ROUTE_TOOLS] = {"route_tools", KIND_LIST, AT(route_tools), NULL, 0, 0, check_tool, true},
    [CFG_TEARDOWN] = {"teardown", KIND_ENUM, AT(teardown), teardown_choices, 0, 0, NULL, false},
    [CFG_GC_HOURS] = {"gc_hours", KIND_INT, AT(gc_hours), NULL, 1, 87600, NULL, false},
    [CFG_WORKSPACE_READONLY] = {"workspace_readonly", KIND_BOOL, AT(workspace_readonly), NULL, 0, 0,
                                NULL, false},
    [CFG_PROTECTED_PATHS] = {"protected_paths", KIND_LIST, AT(protected_paths), NULL, 0, 0,
                             check_relative_path, false},
    [CFG_SANDBOX_NAME] = {"sandbox_name", KIND_STRING, AT(sandbox_name), NULL, 0, 0,
                          check_sandbox_name, false},
    [CFG_ENV_MODE] = {"env.mode", KIND_ENUM, AT(env.mode), env_mode_choices, 0, 0, NULL, false},
    [CFG_ENV_ALLOW] = {"env.allow", KIND_LIST, AT(env.allow), NULL, 0, 0, check_env_name, false},
    [CFG_LIMITS_CPUS] = {"limits.cpus", KIND_NUMBER, AT(limits.cpus), NULL, 0, 4096, NULL, false},
    [CFG_LIMITS_MEMORY_MIB] = {"limits.memory_mib", KIND_INT, AT(limits.memory_mib), NULL, 0,
                               INT64_C(1) << 30, NULL, false},
    [CFG_LIMITS_PIDS] = {"limits.pids", KIND_INT, AT(limits.pids), NULL, 0, 4194304, NULL, false},
    [CFG_LIMITS_OPEN_FILES] = {"limits.open_files", KIND_INT, AT(limits.open_files), NULL, 0,
                               1048576, NULL, false},
    [CFG_LIMITS_FILE_SIZE_MIB] = {"limits.file_size_mib", KIND_INT, AT(limits.file_size_mib), NULL,
                                  0, INT64_C(1) << 30, NULL, false},
    [CFG_LIMITS_CPU_SECONDS] = {"limits.cpu_seconds", KIND_INT, AT(limits.cpu_seconds), NULL, 0,
                                INT64_C(1) << 31, NULL, false},
    [CFG_LIMITS_BASH_TIMEOUT] = {"limits.bash_timeout", KIND_INT, AT(limits.bash_timeout), NULL, 0,
                                 INT64_C(1) << 31, NULL, false},
    [CFG_LIMITS_TMPFS_MIB] = {"limits.tmpfs_mib", KIND_INT, AT(limits.tmpfs_mib), NULL, 0,
                              INT64_C(1) << 30, NULL, false},
    [CFG_LIMITS_TMPFS_INODES] = {"limits.tmpfs_inodes", KIND_INT, AT(limits.tmpfs_inodes), NULL,
                                 1024, INT64_C(1) << 24, NULL, false},
    [CFG_ETC_EXTRA] = {"etc.extra", KIND_LIST, AT(etc.extra), NULL, 0, 0, check_etc_entry, false},
    [CFG_NETWORK_MODE] = {"network.mode", KIND_ENUM, AT(network.mode), network_mode_choices, 0, 0,
                          NULL, false},
    [CFG_NETWORK_ALLOW_HOSTS] = {"network.allow_hosts", KIND_LIST, AT(network.allow_hosts), NULL, 0,
                                 0, check_host, false},
    [CFG_NETWORK_PUBLISH_PORTS] = {"network.publish_ports", KIND_PORTS, AT(network.publish_ports),
                                   NULL, 0, 0, NULL, false},
    [CFG_MOUNTS] = {"mounts", KIND_MOUNTS, AT(mounts), NULL, 0, 0, NULL, false},
    [CFG_NETWORK_HOST_SERVICES] = {"network.host_services", KIND_LIST, AT(network.host_services),
                                   NULL, 0, 0, check_host_service, false},
    [CFG_SKILLS_PATHS] = {"skills.paths", KIND_LIST, AT(skills_paths), NULL, 0, 0,
                          check_absolute_path, false},
    [CFG_SOCKETS_ALLOW] = {"sockets.allow", KIND_LIST, AT(sockets.allow), NULL, 0, 0,
                           check_relative_path, false},
    [CFG_DOCKER_MODE] = {"docker.mode", KIND_ENUM, AT(docker.mode), docker_mode_choices, 0, 0, NULL,
                         false},
    [CFG_DOCKER_HOST] = {"docker.host", KIND_STRING, AT(docker.host), NULL, 0, 0, check_docker_host,
                         false},
    [CFG_DOCKER_IMAGE] = {"docker.image", KIND_STRING, AT(docker.image), NULL, 0, 0,
                          check_docker_image, false},
    [CFG_SECRETS] = {"secrets", KIND_SECRETS, AT(secrets), NULL, 0, 0, NULL, false},
    [CFG_NETWORK_UPSTREAM_PROXY] = {"network.upstream_proxy", KIND_STRING,
                                    AT(network.upstream_proxy), NULL, 0, 0, check_upstream, false},
    [CFG_NETWORK_NO_PROXY] = {"network.no_proxy", KIND_LIST, AT(network.no_proxy), NULL, 0, 0,
                              check_host, false},
    [CFG_BACKEND_FLOOR] = {"backend_floor", KIND_ENUM, AT(backend_floor), backend_floor_choices, 0,
                           0, NULL, false},
    [CFG_WORKSPACE_MODE] = {"workspace_mode", KIND_ENUM, AT(workspace_mode), workspace_mode_choices,
                            0, 0, NULL, false},
    [CFG_TOOLCHAIN_CACHES] = {"toolchain_caches", KIND_BOOL, AT(toolchain_caches), NULL, 0, 0, NULL,
                              false},
    [CFG_NETWORK_HTTP_RULES] = {"network.http_rules", KIND_LIST, AT(network.http_rules), NULL, 0, 0,
                                check_http_rule, false},
    [CFG_NETWORK_CA_FILE] = {"network.ca_file", KIND_STRING, AT(network.ca_file), NULL, 0, 0,
                             check_absolute_path, false},
};

const char *const schema_sections[] = {"env",    "limits", "etc",     "network",
                                       "skills", "docker", "sockets", NULL};

const char *cfg_key_name(enum cfg_key key)
{
    return key < CFG_KEY_COUNT ? schema_keys[key].name : "?";
}

const char *cfg_enum_name(enum cfg_key key, int value)
{
    if (key >= CFG_KEY_COUNT || schema_keys[key].kind != KIND_ENUM || value < 0)
        return NULL;
    for (int i = 0; schema_keys[key].choices[i]; i++)
        if (i == value)
            return schema_keys[key].choices[i];
    return NULL;
}

const char *cfg_layer_name(enum cfg_layer layer)
{
    static const char *const names[] = {
        [CFG_LAYER_DEFAULT] = "default",           [CFG_LAYER_USER] = "user",
        [CFG_LAYER_WORKSPACE] = "workspace",       [CFG_LAYER_ENVIRONMENT] = "environment",
        [CFG_LAYER_SESSION] = "session",           [CFG_LAYER_HOST_DEFAULT] = "host-default",
        [CFG_LAYER_HOST_PROJECT] = "host-project",
    };
    return layer < CFG_LAYER_COUNT ? names[layer] : "?";
}

int cfg_key_lookup(const char *name)
{
    for (int k = 0; k < CFG_KEY_COUNT; k++)
        if (strcmp(schema_keys[k].name, name) == 0)
            return k;
    return -1;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t cost =
                tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diagonal + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

const char *suggest_from(const char *name, const char *const *candidates, size_t count)
{
    const char *best = NULL;
    size_t best_distance = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t d = edit_distance(name, candidates[i]);
        if (d < best_distance) {
            best_distance = d;
            best = candidates[i];
        }
    }
    size_t limit = strlen(name) / 3 + 1;
    if (limit > 3)
        limit = 3;
    return best_distance <= limit ? best : NULL;
}

const char *cfg_key_suggest(const char *name)
{
    const char *names[CFG_KEY_COUNT + 8];
    size_t n = 0;
    for (int k = 0; k < CFG_KEY_COUNT; k++)
        names[n++] = schema_keys[k].name;
    for (int s = 0; schema_sections[s]; s++)
        names[n++] = schema_sections[s];
    const char *best = suggest_from(name, names, n);
    if (best)
        return best;
    /* "pids" at the top level probably meant "limits.pids" */
    for (int k = 0; k < CFG_KEY_COUNT; k++) {
        const char *dot = strchr(schema_keys[k].name, '.');
        if (dot && strcmp(dot + 1, name) == 0)
            return schema_keys[k].name;
    }
    return NULL;
}

int cfg_set_defaults(struct cordon_config *cfg, struct cordon_error *err)
{
    cfg->backend = CFG_BACKEND_NS;
    cfg->fallback_mode = CFG_FALLBACK_BLOCK;
    cfg->allow_host_execution = true;
    cfg->teardown = CFG_TEARDOWN_REMOVE;
    cfg->gc_hours = 24;
    cfg->workspace_readonly = false;
    cfg->workspace_mode = CFG_WORKSPACE_DIRECT;
    cfg->toolchain_caches = false;
    cfg->env.mode = CFG_ENV_STRICT;
    cfg->limits.cpus = 0;
    cfg->limits.memory_mib = 4096;
    cfg->limits.pids = 1024;
    cfg->limits.open_files = 1024;
    cfg->limits.file_size_mib = 4096;
    cfg->limits.cpu_seconds = 0;
    cfg->limits.bash_timeout = 0;
    cfg->limits.tmpfs_mib = 0;
    cfg->limits.tmpfs_inodes = 131072;
    cfg->network.mode = CFG_NETWORK_DENY;
    cfg->docker.mode = CFG_DOCKER_AUTO;
    cfg->docker.host = strdup("unix:///var/run/docker.sock");
    if (!cfg->docker.host)
        return error_set(err, ENOMEM, "defaults");
    /* What host tools run or trust on sight: editors' tasks, direnv, and
     * coding agents' settings and MCP server lists (docs/git-metadata.md). */
    static const char *const protected_defaults[] = {
        ".git/hooks", ".git/config", ".cordon.toml", ".vscode", ".idea", ".envrc", ".claude",
        ".mcp.json",  ".cursor",     ".codex",       ".gemini", ".pi",   ".goose", "opencode.json"};
    for (size_t i = 0; i < ARRAY_SIZE(protected_defaults); i++)
        if (cfg_strings_add(&cfg->protected_paths, protected_defaults[i]) < 0)
            return error_set(err, ENOMEM, "defaults");
    for (int i = 0; schema_tool_names[i]; i++)
        if (cfg_strings_add(&cfg->route_tools, schema_tool_names[i]) < 0)
            return error_set(err, ENOMEM, "defaults");
    for (int k = 0; k < CFG_KEY_COUNT; k++)
        cfg->origin[k] = (struct cfg_origin){.layer = CFG_LAYER_DEFAULT};
    return 0;
}
