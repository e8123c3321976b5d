/* The configuration schema: every key with its type, default, allowed values
 * and validation, and the conversion of TOML values or environment text into
 * typed assignments. Unknown keys are errors with a "did you mean". Host
 * context, on untrusted input (a workspace file is agent-writable). */
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

static const char *const backend_choices[] = {"ns", "vm", "docker", "auto", NULL};
static const char *const backend_floor_choices[] = {"any", "ns", "kernel-boundary", NULL};
static const char *const fallback_choices[] = {"block", "host", NULL};
static const char *const teardown_choices[] = {"remove", "stop", "none", NULL};
static const char *const env_mode_choices[] = {"strict", "allowlist", "passthrough", NULL};
static const char *const network_mode_choices[] = {"deny", "allowlist", "open", NULL};
static const char *const docker_mode_choices[] = {"auto", "require", "disabled", NULL};
static const char *const workspace_mode_choices[] = {"direct", "review", NULL};
static const char *const tool_names[] = {"read", "write", "edit", "ls",
                                         "find", "grep",  "bash", NULL};

static const char *check_tool(const char *item);
static const char *check_relative_path(const char *item);
static const char *check_env_name(const char *item);
static const char *check_host(const char *item);
static const char *check_host_service(const char *item);
static const char *check_absolute_path(const char *item);
static const char *check_sandbox_name(const char *item);
static const char *check_docker_host(const char *item);
static const char *check_docker_image(const char *item);
static const char *check_etc_entry(const char *item);
static const char *check_upstream(const char *item);
static const char *check_http_rule(const char *item);

#define AT(field) offsetof(struct cordon_config, field)

static const struct key_info keys[CFG_KEY_COUNT] = {
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

static const char *const sections[] = {"env",    "limits", "etc",     "network",
                                       "skills", "docker", "sockets", NULL};
static const char *const mount_keys[] = {"host_path", "guest_path", "readonly", NULL};
static const char *const secret_keys[] = {"name", "from", "hosts", "header", "plain_http", NULL};

const char *cfg_key_name(enum cfg_key key)
{
    return key < CFG_KEY_COUNT ? keys[key].name : "?";
}

const char *cfg_enum_name(enum cfg_key key, int value)
{
    if (key >= CFG_KEY_COUNT || keys[key].kind != KIND_ENUM || value < 0)
        return NULL;
    for (int i = 0; keys[key].choices[i]; i++)
        if (i == value)
            return keys[key].choices[i];
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
        if (strcmp(keys[k].name, name) == 0)
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

static const char *suggest_from(const char *name, const char *const *candidates, size_t count)
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
        names[n++] = keys[k].name;
    for (int s = 0; sections[s]; s++)
        names[n++] = sections[s];
    const char *best = suggest_from(name, names, n);
    if (best)
        return best;
    /* "pids" at the top level probably meant "limits.pids" */
    for (int k = 0; k < CFG_KEY_COUNT; k++) {
        const char *dot = strchr(keys[k].name, '.');
        if (dot && strcmp(dot + 1, name) == 0)
            return keys[k].name;
    }
    return NULL;
}

/* ---------- item validation ---------- */

static const char *check_tool(const char *item)
{
    for (int i = 0; tool_names[i]; i++)
        if (strcmp(item, tool_names[i]) == 0)
            return NULL;
    return "not a tool (expected read, write, edit, ls, find, grep or bash)";
}

static const char *check_relative_path(const char *item)
{
    if (!*item)
        return "empty path";
    if (item[0] == '/')
        return "must be relative to the workspace";
    if (strlen(item) >= PATH_MAX)
        return "path too long";
    const char *part = item;
    for (;;) {
        const char *end = strchr(part, '/');
        size_t length = end ? (size_t)(end - part) : strlen(part);
        if (length == 0 || (length == 1 && part[0] == '.') ||
            (length == 2 && part[0] == '.' && part[1] == '.'))
            return "must be a normalised relative path (no empty, '.' or '..' parts)";
        if (!end)
            return NULL;
        part = end + 1;
    }
}

/* etc.extra: a path below /etc, at most 63 bytes (the /etc cache's entry
 * names), normalised. What holds a host's passwords or keys is never shown,
 * whatever a layer asks: those are the files cordon verify promises absent. */
static const char *check_etc_entry(const char *item)
{
    static const char *const never[] = {"shadow",      "shadow-", "gshadow",
                                        "gshadow-",    "sudoers", "sudoers.d",
                                        "ssl/private", "cordon",  "security/opasswd"};
    if (item[0] == '/')
        return "must be relative to /etc (\"gitconfig\", \"apt/auth.conf\")";
    const char *why = check_relative_path(item);
    if (why)
        return why;
    if (strlen(item) >= 64)
        return "path too long (at most 63 bytes)";
    for (size_t i = 0; i < ARRAY_SIZE(never); i++) {
        size_t n = strlen(never[i]);
        if (strncmp(item, never[i], n) == 0 && (item[n] == '\0' || item[n] == '/'))
            return "never shown in a sandbox (host passwords, sudo rules, private keys, cordon's "
                   "policy)";
    }
    if (strncmp(item, "ssh/", 4) == 0 && strstr(item + 4, "_key"))
        return "never shown in a sandbox (ssh host keys)";
    return NULL;
}

static const char *check_absolute_path(const char *item)
{
    if (item[0] != '/')
        return "must be an absolute path";
    if (strcmp(item, "/") == 0)
        return NULL;
    return check_relative_path(item + 1) ? "must be a normalised absolute path (no empty, '.' or "
                                           "'..' parts, no trailing '/')"
                                         : NULL;
}

bool cfg_env_name_protected(const char *name)
{
    static const char *const prefixes[] = {"DOCKER_", "COMPOSE_", "LD_", "BASH_FUNC_", NULL};
    static const char *const exact[] = {
        "BASH_ENV",
        "ENV",
        "PATH",
        "CDPATH",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "GCONV_PATH",
        "LOCPATH",
        "NLSPATH",
        "HOSTALIASES",
        "RESOLV_HOST_CONF",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYLIB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "SSH_AUTH_SOCK",
        "XDG_RUNTIME_DIR",
        "DBUS_SESSION_BUS_ADDRESS",
        "MALLOC_CHECK_",
        "TMPDIR",
        NULL,
    };
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    for (int i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return true;
    return false;
}

static const char *check_env_name(const char *item)
{
    if (!*item || !(isalpha((unsigned char)item[0]) || item[0] == '_'))
        return "not an environment variable name";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_'))
            return "not an environment variable name";
    if (cfg_env_name_protected(item))
        return "is protected and can never be forwarded into the sandbox";
    return NULL;
}

/* "127.0.0.1:PORT" or "localhost:PORT": a service on the host's loopback,
 * reachable inside at the same address (the sandbox's 127.0.0.1). */
static const char *check_host_service(const char *item)
{
    const char *port = NULL;
    if (strncmp(item, "127.0.0.1:", 10) == 0)
        port = item + 10;
    else if (strncmp(item, "localhost:", 10) == 0)
        port = item + 10;
    if (!port || !*port)
        return "expected 127.0.0.1:PORT (a service on the host's loopback)";
    char *end;
    long v = strtol(port, &end, 10);
    if (*end || v < 1 || v > 65535)
        return "port must be 1-65535";
    if (v == 3128)
        return "port 3128 is cordon's proxy inside the sandbox";
    return NULL;
}

static const char *check_host(const char *item)
{
    const char *bad = "not a host name (expected name, *.domain or IP address, optional :port)";
    if (item[0] == '@')
        return allowlist_preset(item) ? NULL
                                      : "is not a preset (known: @npm, @pypi, @crates, @go, "
                                        "@debian, @github)";
    if (strstr(item, "://"))
        return "is a URL: an allowlist entry is a host, not a URL (the name and an optional "
               ":port, e.g. example.com or example.com:8443)";
    char host[256];
    if (strlen(item) >= sizeof(host) || !*item)
        return bad;
    snprintf(host, sizeof(host), "%s", item);
    char *colon = strrchr(host, ':');
    if (colon && !strchr(host, '[') && strchr(host, ':') == colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end || port < 1 || port > 65535 || colon[1] == '\0')
            return "port must be 1-65535";
        *colon = '\0';
    }
    unsigned char address[16];
    if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1)
        return NULL;
    const char *name = host;
    if (strncmp(name, "*.", 2) == 0)
        name += 2;
    if (!*name)
        return bad;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '.'))
            return bad;
    if (name[0] == '.' || name[0] == '-' || strstr(name, ".."))
        return bad;
    return NULL;
}

static const char *check_sandbox_name(const char *item)
{
    size_t length = strlen(item);
    if (length == 0 || length > 63 || !isalnum((unsigned char)item[0]))
        return "must be 1-63 characters: letters, digits, '_', '.', '-', starting with a letter "
               "or digit";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-'))
            return "must be 1-63 characters: letters, digits, '_', '.', '-', starting with a "
                   "letter or digit";
    return NULL;
}

/* "METHOD host/path" (src/net/tls.c parses it again in the proxy). */
static const char *check_http_rule(const char *item)
{
    const char *sp = strchr(item, ' ');
    if (!sp || sp == item || sp - item > 15 || !strchr(sp + 1, '/') || sp[1] == '/' ||
        strpbrk(sp + 1, " \t?#"))
        return "must be \"METHOD host/path\" (GET api.example.com/repos/*)";
    for (const char *m = item; m < sp; m++) {
        if (!((*m >= 'A' && *m <= 'Z') || (*m == '*' && sp - item == 1)))
            return "must start with an upper-case method (GET, POST) or *";
    }
    return NULL;
}

/* The docker backend talks to a daemon over a unix socket only: a TCP
 * daemon would need TLS material cordon does not manage. */
/* "host:port" or "http://host:port[/]" of an HTTP proxy. */
static const char *check_upstream(const char *item)
{
    const char *bad = "must be host:port or http://host:port (an HTTP proxy)";
    const char *hp = strncmp(item, "http://", 7) == 0 ? item + 7 : item;
    if (strstr(item, "://") && hp == item)
        return bad;
    char buf[300];
    size_t len = strlen(hp);
    if (len > 0 && hp[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof(buf) || memchr(hp, '@', len) || memchr(hp, '/', len))
        return bad;
    memcpy(buf, hp, len);
    buf[len] = '\0';
    char *colon = strrchr(buf, ':');
    if (!colon || colon == buf || buf[0] == '*' || check_host(buf))
        return bad;
    return NULL;
}

static const char *check_docker_host(const char *item)
{
    const char *path = strncmp(item, "unix://", 7) == 0 ? item + 7 : NULL;
    if (!path || path[0] != '/' || strlen(path) >= 108)
        return "must be unix:///absolute/path/to/docker.sock (unix sockets only)";
    if (strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
        return "must be a normalised absolute path";
    return NULL;
}

/* An image reference as the docker CLI takes it; never an option. */
static const char *check_docker_image(const char *item)
{
    size_t length = strlen(item);
    if (length == 0 || length > 255 || !isalnum((unsigned char)item[0]))
        return "must be an image reference (name[:tag] or name@sha256:digest), starting with a "
               "letter or digit";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("._-/:@", *c)))
            return "must be an image reference: letters, digits and . _ - / : @";
    return NULL;
}

/* "8080", "8080:80" or "BIND:8080:80" (IPv6 binds in brackets). */
static const char *parse_port_spec(const char *text, struct cfg_port *out)
{
    char copy[128];
    if (strlen(text) >= sizeof(copy))
        return "too long";
    snprintf(copy, sizeof(copy), "%s", text);
    snprintf(out->bind, sizeof(out->bind), "127.0.0.1");
    char *ports = copy;
    if (copy[0] == '[') {
        char *close = strchr(copy, ']');
        if (!close || close[1] != ':')
            return "expected [IPv6]:HOST:GUEST";
        *close = '\0';
        unsigned char address[16];
        if (inet_pton(AF_INET6, copy + 1, address) != 1 || strlen(copy + 1) >= sizeof(out->bind))
            return "not an IPv6 address";
        memcpy(out->bind, copy + 1, strlen(copy + 1) + 1);
        ports = close + 2;
    } else {
        char *first = strchr(copy, ':');
        if (first && strchr(first + 1, ':')) {
            *first = '\0';
            unsigned char address[4];
            if (inet_pton(AF_INET, copy, address) != 1)
                return "bind address is not an IPv4 address";
            memcpy(out->bind, copy, strlen(copy) + 1);
            ports = first + 1;
        }
    }
    char *guest = strchr(ports, ':');
    if (guest)
        *guest++ = '\0';
    long values[2];
    const char *parts[2] = {ports, guest ? guest : ports};
    for (int i = 0; i < 2; i++) {
        char *end;
        errno = 0;
        values[i] = strtol(parts[i], &end, 10);
        if (!*parts[i] || *end || errno || values[i] < 1 || values[i] > 65535)
            return "expected PORT, HOST:GUEST or BIND:HOST:GUEST with ports 1-65535";
    }
    out->host_port = (uint16_t)values[0];
    out->guest_port = (uint16_t)values[1];
    return NULL;
}

/* ---------- assignments ---------- */

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

static void mounts_free(struct cfg_mounts *m)
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
        for (int s = 0; sections[s]; s++)
            section |= strcmp(e->key, sections[s]) == 0;
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
                if (collect_value(&keys[key], key, inner->value, file, inner->line, inner->column,
                                  layer, out, err) < 0)
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
        if (collect_value(&keys[key], key, e->value, file, e->line, e->column, layer, out, err) < 0)
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
    const struct key_info *k = &keys[key];
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
    for (int i = 0; tool_names[i]; i++)
        if (cfg_strings_add(&cfg->route_tools, tool_names[i]) < 0)
            return error_set(err, ENOMEM, "defaults");
    for (int k = 0; k < CFG_KEY_COUNT; k++)
        cfg->origin[k] = (struct cfg_origin){.layer = CFG_LAYER_DEFAULT};
    return 0;
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
    const struct key_info *k = &keys[a->key];
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
