/* Configuration resolution (cfg_resolve): reads every layer, applies them
 * lowest first, lets host-owned layers win and lock, refuses what the
 * agent-writable workspace file may never set, and checks where policy files
 * and mounts sit. Fails closed: any error stops resolution. Host context,
 * unprivileged, before any sandbox exists. */
#include "config/config-internal.h"
#include "config/sha256.h"
#include "config/trust-guard.h"
#include "config/trust.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Guest paths a mount may not cover: the system view the sandbox builds. */
static const char *const protected_guest_paths[] = {
    "/usr",   "/proc",   "/dev",  "/etc",     "/sys",
    "/run",   "/bin",    "/sbin", "/lib",     "/lib32",
    "/lib64", "/libx32", "/boot", "/var/run", "/var/lib/docker",
    NULL,
};

/* Host paths whose mount would hand the agent a container daemon. */
static const char *const docker_socket_paths[] = {
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/var/run/containerd/containerd.sock",
    NULL,
};

static int warn(struct cfg_warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct cfg_warnings *w, const char *fmt, ...)
{
    if (!w)
        return 0;
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char **grown = realloc(w->items, (w->count + 1) * sizeof(*grown));
    if (!grown) {
        free(text);
        return -1;
    }
    w->items = grown;
    w->items[w->count++] = text;
    return 0;
}

void cfg_warnings_free(struct cfg_warnings *warnings)
{
    if (!warnings)
        return;
    for (size_t i = 0; i < warnings->count; i++)
        free(warnings->items[i]);
    free(warnings->items);
    warnings->items = NULL;
    warnings->count = 0;
}

bool cfg_path_inside(const char *path, const char *root)
{
    if (strcmp(root, "/") == 0)
        return path[0] == '/';
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool cfg_paths_overlap(const char *a, const char *b)
{
    return cfg_path_inside(a, b) || cfg_path_inside(b, a);
}

char *cfg_canonicalize_lenient(const char *path)
{
    /* The longest prefix that resolves (stat follows links as realpath
     * does), found from the end with one stat per missing component, then
     * one realpath: not a realpath per level, each walking the prefix
     * again. */
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    size_t len = strlen(buf);
    struct stat st;
    while (stat(buf, &st) < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return NULL;
        char *slash = strrchr(buf, '/');
        if (!slash)
            return NULL;
        if (slash == buf && buf[1]) {
            buf[1] = '\0';
            break;
        }
        *slash = '\0';
    }
    _cleanup_free_ char *real = realpath(buf, NULL);
    if (!real)
        return NULL;
    size_t kept = strlen(buf);
    if (kept >= len)
        return TAKE_PTR(real);
    /* The missing rest, as given, without the slashes that lead to it. */
    const char *rest = path + kept;
    while (*rest == '/')
        rest++;
    char *joined = NULL;
    if (asprintf(&joined, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", rest) < 0)
        return NULL;
    return joined;
}

int cfg_project_policy_path(const char *xdg_config_home, const char *workspace, char **ret_path,
                            struct cordon_error *err)
{
    /* readable: the last path components, squeezed to [a-z0-9-]; unique:
     * the hash of the whole canonical path */
    char slug[48] = "";
    const char *base = strrchr(workspace, '/');
    base = base && base[1] ? base + 1 : "root";
    size_t n = 0;
    for (const char *c = base; *c && n < sizeof(slug) - 1; c++) {
        char ch = (char)tolower((unsigned char)*c);
        if (isalnum((unsigned char)ch))
            slug[n++] = ch;
        else if (n > 0 && slug[n - 1] != '-')
            slug[n++] = '-';
    }
    while (n > 0 && slug[n - 1] == '-')
        n--;
    slug[n] = '\0';
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    sha256_hex(workspace, strlen(workspace), hex);
    hex[16] = '\0';
    if (asprintf(ret_path, "%s/cordon/policy/projects/%s%s%s.toml", xdg_config_home, n ? slug : "",
                 n ? "-" : "", hex) < 0)
        return error_set(err, ENOMEM, "policy path");
    return 0;
}

/* Reads a host-owned policy file. Missing: *ret_exists false. Anything else
 * wrong fails closed. */
static int read_host_file(const char *path, const char *workspace, char **ret_data,
                          size_t *ret_length, bool *ret_exists, struct cordon_error *err)
{
    *ret_exists = false;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return error_set(err, errno, "host policy %s", path);
    }
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real)
        return error_set(err, errno, "host policy %s: cannot resolve", path);
    if (workspace && cfg_path_inside(real, workspace))
        return error_set(err, 0, "host policy %s: resolves into the workspace %s (%s)", path,
                         workspace, real);
    _cleanup_close_ int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return error_set(err, errno, "host policy %s: unreadable", path);
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "host policy %s", path);
    if (!S_ISREG(st.st_mode))
        return error_set(err, 0, "host policy %s: not a regular file", path);
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return error_set(err, 0, "host policy %s: owned by uid %u, neither root nor you", path,
                         (unsigned)st.st_uid);
    if (st.st_mode & 022)
        return error_set(err, 0, "host policy %s: writable by group or others (mode %04o)", path,
                         (unsigned)(st.st_mode & 07777));
    if (st.st_size > TOML_MAX_INPUT)
        return error_set(err, 0, "host policy %s: larger than %d bytes", path, TOML_MAX_INPUT);
    _cleanup_free_ char *data = malloc((size_t)st.st_size + 1);
    if (!data)
        return error_set(err, ENOMEM, "%s", path);
    ssize_t got = read(fd, data, (size_t)st.st_size + 1);
    if (got < 0)
        return error_set(err, errno, "host policy %s: unreadable", path);
    if (got > st.st_size)
        return error_set(err, 0, "host policy %s: changed while being read", path);
    data[got] = '\0';
    *ret_data = TAKE_PTR(data);
    *ret_length = (size_t)got;
    *ret_exists = true;
    return 0;
}

static int read_user_file(const char *path, char **ret_data, size_t *ret_length, bool *ret_exists,
                          struct cordon_error *err)
{
    *ret_exists = false;
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f && errno == ENOENT)
        return 0;
    if (!f)
        return error_set(err, errno, "%s", path);
    _cleanup_free_ char *data = malloc(TOML_MAX_INPUT + 2);
    if (!data)
        return error_set(err, ENOMEM, "%s", path);
    size_t n = fread(data, 1, TOML_MAX_INPUT + 1, f);
    if (ferror(f))
        return error_set(err, errno ? errno : EIO, "%s", path);
    if (n > TOML_MAX_INPUT)
        return error_set(err, 0, "%s: larger than %d bytes", path, TOML_MAX_INPUT);
    data[n] = '\0';
    *ret_data = TAKE_PTR(data);
    *ret_length = n;
    *ret_exists = true;
    return 0;
}

static int collect_document(const char *data, size_t length, const char *file, enum cfg_layer layer,
                            struct cfg_assignments *out, struct cordon_error *err)
{
    struct toml_value *root = NULL;
    if (toml_parse(data, length, file, &root, err) < 0)
        return -1;
    int ret = cfg_collect_toml(root, file, layer, out, err);
    toml_free(root);
    return ret;
}

static bool is_loopback(const char *bind)
{
    unsigned char address[16];
    if (inet_pton(AF_INET, bind, address) == 1)
        return address[0] == 127;
    return strcmp(bind, "::1") == 0;
}

/* Keys a workspace file may not set at all, and why (docs/configuration.md
 * "Layers"). what: how the message names the key, NULL: its name. */
static const struct {
    enum cfg_key key;
    const char *what, *why;
} workspace_refused[] = {
    {CFG_ETC_EXTRA, "etc.extra",
     "which host files of /etc a sandbox sees is a user or host-owned setting"},
    {CFG_SOCKETS_ALLOW, "sockets.allow",
     "which host services the sandbox may reach is a user or host-owned setting"},
    {CFG_NETWORK_UPSTREAM_PROXY, NULL,
     "the proxy every allowed connection goes through is a user or host-owned setting"},
    {CFG_NETWORK_NO_PROXY, NULL,
     "the proxy every allowed connection goes through is a user or host-owned setting"},
    {CFG_NETWORK_HTTP_RULES, NULL,
     "which requests the proxy lets through and which certificates it trusts is a user or "
     "host-owned setting"},
    {CFG_NETWORK_CA_FILE, NULL,
     "which requests the proxy lets through and which certificates it trusts is a user or "
     "host-owned setting"},
    {CFG_SECRETS, "[[secrets]]",
     "which credentials the proxy puts into requests, and for which hosts, is a user or "
     "host-owned setting (put it in ~/.config/cordon/config.toml)"},
    {CFG_NETWORK_HOST_SERVICES, "network.host_services",
     "which services of the host's loopback the sandbox may reach is a user or host-owned "
     "setting"},
    {CFG_DOCKER_HOST, "docker.host",
     "the daemon the docker backend drives is a user or host-owned setting"},
};

/* A skill path is read by the host for the agent without a prompt: the
 * same rule as a mount ("any other file grants that file"). */
static int check_workspace_skills(const struct cfg_assignment *a,
                                  const struct credential_areas *areas, struct cordon_error *err)
{
    for (size_t i = 0; i < a->list.count; i++) {
        const char *path = a->list.items[i];
        _cleanup_free_ char *real = cfg_canonicalize_lenient(path);
        char why[1200];
        if (credential_reason(areas, path, real, why, sizeof(why)))
            return error_set(err, 0,
                             "%s:%d: skills.paths entry %s%s%s%s is refused in the workspace "
                             "file: %s (rule: a workspace file may not expose the user's "
                             "home, credential or policy directories)",
                             a->origin.file, a->origin.line, path,
                             real && strcmp(real, path) ? " (resolves to " : "",
                             real && strcmp(real, path) ? real : "",
                             real && strcmp(real, path) ? ")" : "", why);
    }
    return 0;
}

static int check_workspace_mounts(const struct cfg_assignment *a, const char *workspace,
                                  const struct credential_areas *areas, struct cordon_error *err)
{
    const char *file = a->origin.file;
    for (size_t i = 0; i < a->mounts.count; i++) {
        const struct cfg_mount *m = &a->mounts.items[i];
        _cleanup_free_ char *real = cfg_canonicalize_lenient(m->host_path);
        if (!m->readonly && (!real || !cfg_path_inside(real, workspace)))
            return error_set(err, 0,
                             "%s:%d: writable mount of %s is refused in the workspace file: "
                             "it is outside the workspace %s",
                             file, m->origin.line, m->host_path, workspace);
        /* read-only too: a read-only ~/.ssh still hands over the key. A
         * part of the workspace is visible anyway. */
        char why[1200];
        if (!(real && cfg_path_inside(real, workspace)) &&
            credential_reason(areas, m->host_path, real, why, sizeof(why)))
            return error_set(err, 0,
                             "%s:%d: mount of %s%s%s%s is refused in the workspace file: %s "
                             "(rule: a workspace file may not mount the user's home, "
                             "credential or policy directories)",
                             file, m->origin.line, m->host_path,
                             real && strcmp(real, m->host_path) ? " (resolves to " : "",
                             real && strcmp(real, m->host_path) ? real : "",
                             real && strcmp(real, m->host_path) ? ")" : "", why);
    }
    return 0;
}

/* What the agent-writable workspace file may never set. Checked on every
 * assignment of that layer, locked or not. */
static int check_workspace_assignment(const struct cfg_assignment *a,
                                      const struct cordon_config *lower, const char *workspace,
                                      const struct credential_areas *areas,
                                      struct cordon_error *err)
{
    const char *file = a->origin.file;
    int line = a->origin.line;
    for (size_t i = 0; i < ARRAY_SIZE(workspace_refused); i++)
        if (workspace_refused[i].key == a->key)
            return error_set(err, 0, "%s:%d: %s is refused in the workspace file: %s", file, line,
                             workspace_refused[i].what ? workspace_refused[i].what
                                                       : cfg_key_name(a->key),
                             workspace_refused[i].why);
    switch (a->key) {
    case CFG_FALLBACK_MODE:
        if (a->integer == CFG_FALLBACK_HOST)
            return error_set(err, 0,
                             "%s:%d: fallback_mode = \"host\" is refused in the workspace file: "
                             "running tools unsandboxed is a user or host-owned setting",
                             file, line);
        break;
    case CFG_ALLOW_HOST_EXECUTION:
        if (a->boolean)
            return error_set(err, 0,
                             "%s:%d: allow_host_execution = true is refused in the workspace file: "
                             "it can only turn host execution off",
                             file, line);
        break;
    case CFG_ROUTE_TOOLS:
        for (size_t i = 0; i < lower->route_tools.count; i++)
            if (!cfg_strings_contains(&a->list, lower->route_tools.items[i]))
                return error_set(err, 0,
                                 "%s:%d: route_tools may not drop '%s' in the workspace file: "
                                 "an unrouted tool runs on the host without approval",
                                 file, line, lower->route_tools.items[i]);
        break;
    case CFG_ENV_MODE:
        if (a->integer == CFG_ENV_PASSTHROUGH)
            return error_set(err, 0,
                             "%s:%d: env.mode = \"passthrough\" is refused in the workspace file: "
                             "it would forward every host secret",
                             file, line);
        break;
    case CFG_NETWORK_PUBLISH_PORTS:
        for (size_t i = 0; i < a->ports.count; i++)
            if (!is_loopback(a->ports.items[i].bind))
                return error_set(err, 0,
                                 "%s:%d: publishing port %u on %s is refused in the workspace "
                                 "file: only loopback binds are allowed there",
                                 file, line, a->ports.items[i].host_port, a->ports.items[i].bind);
        break;
    case CFG_SKILLS_PATHS:
        return check_workspace_skills(a, areas, err);
    case CFG_MOUNTS:
        return check_workspace_mounts(a, workspace, areas, err);
    default:
        break;
    }
    return 0;
}

static int check_mounts(const struct cordon_config *cfg, const char *const *policy_areas,
                        const struct credential_areas *areas, struct cfg_warnings *warnings,
                        struct cordon_error *err)
{
    for (size_t i = 0; i < cfg->mounts.count; i++) {
        const struct cfg_mount *m = &cfg->mounts.items[i];
        char where[1200];
        snprintf(where, sizeof(where), "%s:%d: mount %s", m->origin.file ? m->origin.file : "?",
                 m->origin.line, m->host_path);
        for (int p = 0; protected_guest_paths[p]; p++)
            if (strcmp(m->guest_path, "/") == 0 ||
                cfg_paths_overlap(m->guest_path, protected_guest_paths[p]))
                return error_set(
                    err, 0, "%s: guest path %s overlaps the protected %s", where, m->guest_path,
                    strcmp(m->guest_path, "/") == 0 ? "system view" : protected_guest_paths[p]);
        if (cfg->workspace && cfg_paths_overlap(m->guest_path, cfg->workspace))
            return error_set(err, 0, "%s: guest path %s overlaps the workspace %s", where,
                             m->guest_path, cfg->workspace);
        for (size_t j = 0; j < i; j++)
            if (cfg_paths_overlap(m->guest_path, cfg->mounts.items[j].guest_path))
                return error_set(err, 0, "%s: guest path %s overlaps the mount at %s", where,
                                 m->guest_path, cfg->mounts.items[j].guest_path);
        _cleanup_free_ char *real = cfg_canonicalize_lenient(m->host_path);
        if (!real)
            return error_set(err, errno, "%s: cannot resolve", where);
        struct stat st;
        if (stat(real, &st) == 0 && S_ISSOCK(st.st_mode))
            return error_set(err, 0, "%s: is a socket; sockets are never mounted", where);
        const char *base = strrchr(real, '/');
        base = base ? base + 1 : real;
        if (strstr(base, "docker.sock") || strstr(base, "podman.sock") ||
            strstr(base, "containerd.sock"))
            return error_set(err, 0, "%s: is a container daemon socket path", where);
        for (int d = 0; docker_socket_paths[d]; d++)
            if (cfg_path_inside(docker_socket_paths[d], real) ||
                cfg_path_inside(docker_socket_paths[d], m->host_path))
                return error_set(err, 0, "%s: would expose the Docker socket %s", where,
                                 docker_socket_paths[d]);
        /* A path through the workspace points wherever the agent's symlink
         * says: whichever layer named it, that is the agent's choice. */
        if (cfg->workspace && cfg_path_inside(m->host_path, cfg->workspace) &&
            !cfg_path_inside(real, cfg->workspace))
            return error_set(err, 0,
                             "%s: resolves out of the workspace %s to %s through a symlink in "
                             "it (which the sandbox may have planted)",
                             where, cfg->workspace, real);
        char why[1200];
        /* the user's own layers may mount them (their choice), said each
         * time so it is never a surprise */
        if (areas && m->origin.layer != CFG_LAYER_WORKSPACE &&
            credential_reason(areas, m->host_path, real, why, sizeof(why)) &&
            warn(warnings, "%s: exposes your credentials to the sandbox%s: %s", where,
                 m->readonly ? " (read-only)" : " read-write", why) < 0)
            return error_set(err, ENOMEM, "warnings");
        if (m->readonly)
            continue;
        for (int p = 0; policy_areas[p]; p++) {
            _cleanup_free_ char *area = cfg_canonicalize_lenient(policy_areas[p]);
            if (cfg_paths_overlap(real, policy_areas[p]) || (area && cfg_paths_overlap(real, area)))
                return error_set(err, 0,
                                 "%s: a writable mount may not overlap the policy location %s",
                                 where, policy_areas[p]);
        }
    }
    return 0;
}

/* Policy files (existing or not yet created) must not be reachable from the
 * workspace, where the agent could write them. */
static int check_policy_placement(const char *const *paths, const char *workspace,
                                  struct cordon_error *err)
{
    for (int i = 0; paths[i]; i++) {
        if (cfg_path_inside(paths[i], workspace))
            return error_set(err, 0, "policy location %s is inside the workspace %s", paths[i],
                             workspace);
        _cleanup_free_ char *real = cfg_canonicalize_lenient(paths[i]);
        if (real && cfg_path_inside(real, workspace))
            return error_set(err, 0,
                             "policy location %s resolves into the workspace %s through a "
                             "symlink (%s)",
                             paths[i], workspace, real);
    }
    return 0;
}

static int collect_environment(char *const *environment, struct cfg_assignments *out,
                               struct cfg_warnings *warnings, struct cordon_error *err)
{
    for (size_t i = 0; environment && environment[i]; i++) {
        const char *entry = environment[i];
        if (strncmp(entry, "CORDON_", 7) != 0)
            continue;
        const char *equals = strchr(entry, '=');
        if (!equals)
            continue;
        char name[256], key[256];
        size_t length = (size_t)(equals - entry);
        if (length >= sizeof(name))
            continue;
        memcpy(name, entry, length);
        name[length] = '\0';
        /* CORDON_LIMITS__PIDS -> limits.pids */
        size_t k = 0;
        for (const char *c = name + 7; *c && k < sizeof(key) - 1; c++) {
            if (c[0] == '_' && c[1] == '_') {
                key[k++] = '.';
                c++;
            } else {
                key[k++] = (char)tolower((unsigned char)*c);
            }
        }
        key[k] = '\0';
        int id = cfg_key_lookup(key);
        if (id < 0) {
            /* other CORDON_* variables (CORDON_DEBUG ...) are not settings;
             * warn only about near misses */
            static const char *const not_settings[] = {"debug", "etc_dir", "agent",
                                                       "src",   "build",   NULL};
            const char *hint = cfg_key_suggest(key);
            for (int n = 0; hint && not_settings[n]; n++)
                if (strcmp(key, not_settings[n]) == 0 || strncmp(key, "test_", 5) == 0)
                    hint = NULL;
            if (hint &&
                warn(warnings, "%s is not a setting (did you mean %s?); ignored", name, hint) < 0)
                return error_set(err, ENOMEM, "environment");
            continue;
        }
        if (cfg_collect_text(id, equals + 1, name, CFG_LAYER_ENVIRONMENT, out, err) < 0)
            return -1;
    }
    return 0;
}

static int collect_session(const char *const *sets, struct cfg_assignments *out,
                           struct cordon_error *err)
{
    for (size_t i = 0; sets && sets[i]; i++) {
        /* A named flag's setting comes as "\x1f--flag\x1fKEY=VALUE"
         * (cli_config_flag): messages name the flag the user typed. */
        char label[64] = "--set";
        const char *set = sets[i];
        if (set[0] == '\x1f') {
            const char *end = strchr(set + 1, '\x1f');
            if (end && (size_t)(end - set - 1) < sizeof(label)) {
                snprintf(label, sizeof(label), "%.*s", (int)(end - set - 1), set + 1);
                set = end + 1;
            }
        }
        const char *equals = strchr(set, '=');
        if (!equals)
            return error_set(err, 0, "--set %s: expected KEY=VALUE", set);
        char key[256];
        size_t length = (size_t)(equals - set);
        if (length >= sizeof(key) || length == 0)
            return error_set(err, 0, "--set %s: expected KEY=VALUE", set);
        memcpy(key, set, length);
        key[length] = '\0';
        int id = cfg_key_lookup(key);
        if (id < 0) {
            const char *hint = cfg_key_suggest(key);
            return error_set(err, 0, "--set %s: unknown key '%s'%s%s%s", set, key,
                             hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
        }
        /* Which credentials the proxy reads and where it sends them is the
         * user's file or the host's policy: never a command line, which a
         * project's own agent configuration may supply (docs/secrets.md). */
        if (id == CFG_SECRETS)
            return error_set(err, 0,
                             "--set %s: secrets can only be set in the user's or a host-owned "
                             "configuration file (~/.config/cordon/config.toml, the host's "
                             "policy), never on the command line",
                             key);
        /* A TOML value (--set 'route_tools=["read"]') is taken as such;
         * anything else as text, like an environment variable. The document
         * is KEY=VALUE exactly as typed, so a column in a message is one in
         * the user's --set argument. */
        _cleanup_free_ char *document = NULL;
        if (asprintf(&document, "%s=%s\n", key, equals + 1) < 0)
            return error_set(err, ENOMEM, "--set");
        struct toml_value *root = NULL;
        struct cordon_error ignored = {0};
        if (toml_parse(document, strlen(document), label, &root, &ignored) == 0) {
            int ret = cfg_collect_toml(root, label, CFG_LAYER_SESSION, out, err);
            toml_free(root);
            if (ret < 0)
                return -1;
            out->items[out->count - 1].origin.line = 0;
            continue;
        }
        if (cfg_collect_text(id, equals + 1, label, CFG_LAYER_SESSION, out, err) < 0)
            return -1;
    }
    return 0;
}

/* The workspace file, honoured only when the trust record pins exactly this
 * content. Otherwise it is ignored with a warning, which offers `cordon
 * trust` only for a file no sandboxed session wrote (trust-guard.h): the
 * nudge must not help an agent get its own configuration accepted. */
static int load_workspace_file(struct cordon_config *cfg, const char *data, size_t length,
                               struct cfg_assignments layers[CFG_LAYER_COUNT],
                               struct cfg_warnings *warnings, struct cordon_error *err)
{
    struct cfg_trust_list trust = {0};
    if (cfg_trust_read(cfg->trust_file, &trust, err) < 0)
        return -1;
    const struct cfg_trust_entry *entry = cfg_trust_find(&trust, cfg->workspace);
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    sha256_hex(data, length, hex);
    bool pinned = entry && entry->sha256 && strcmp(entry->sha256, hex) == 0;
    bool written = false;
    int wret = 0;
    if (!pinned &&
        trust_guard_written(cfg->trust_guard_dir, cfg->workspace, hex, &written, err) < 0) {
        cfg_trust_list_free(&trust);
        return -1;
    }
    if (pinned)
        cfg->workspace_trusted = true;
    else if (written)
        wret = warn(warnings,
                    "ignoring %s: `.cordon.toml` was written by a sandboxed session; review it "
                    "before trusting",
                    cfg->workspace_file);
    else if (!entry)
        wret = warn(warnings,
                    "ignoring %s: this workspace is not trusted (run `cordon trust` to use it)",
                    cfg->workspace_file);
    else
        wret = warn(warnings,
                    "ignoring %s: it changed since the workspace was trusted on %s (review "
                    "it, then run `cordon trust` again)",
                    cfg->workspace_file, entry->trusted_at);
    cfg_trust_list_free(&trust);
    if (wret < 0)
        return error_set(err, ENOMEM, "warnings");
    if (cfg->workspace_trusted &&
        collect_document(data, length, cfg->workspace_file, CFG_LAYER_WORKSPACE,
                         &layers[CFG_LAYER_WORKSPACE], err) < 0)
        return -1;
    return 0;
}

static int load_layers(const struct cfg_inputs *in, struct cordon_config *cfg,
                       struct cfg_assignments layers[CFG_LAYER_COUNT],
                       struct cfg_warnings *warnings, struct cordon_error *err)
{
    _cleanup_free_ char *data = NULL;
    size_t length = 0;
    bool exists = false;

    if (read_user_file(cfg->user_file, &data, &length, &exists, err) < 0)
        return -1;
    if (exists && collect_document(data, length, cfg->user_file, CFG_LAYER_USER,
                                   &layers[CFG_LAYER_USER], err) < 0)
        return -1;
    free(TAKE_PTR(data));

    if (in->review_data) {
        /* `cordon trust` previews exactly the bytes it showed */
        cfg->workspace_trusted = true;
        if (collect_document(in->review_data, in->review_length, cfg->workspace_file,
                             CFG_LAYER_WORKSPACE, &layers[CFG_LAYER_WORKSPACE], err) < 0)
            return -1;
    } else if (!in->skip_workspace_file) {
        if (cfg_read_workspace_file(cfg->workspace_file, &data, &length, &exists, err) < 0)
            return -1;
        if (exists && load_workspace_file(cfg, data, length, layers, warnings, err) < 0)
            return -1;
        free(TAKE_PTR(data));
    }

    if (collect_environment(in->environ, &layers[CFG_LAYER_ENVIRONMENT], warnings, err) < 0)
        return -1;
    if (collect_session(in->session_sets, &layers[CFG_LAYER_SESSION], err) < 0)
        return -1;

    for (int i = 0; i < 2; i++) {
        if (read_host_file(cfg->host_default_files[i], cfg->workspace, &data, &length, &exists,
                           err) < 0)
            return -1;
        if (exists &&
            collect_document(data, length, cfg->host_default_files[i], CFG_LAYER_HOST_DEFAULT,
                             &layers[CFG_LAYER_HOST_DEFAULT], err) < 0)
            return -1;
        free(TAKE_PTR(data));
    }
    if (read_host_file(cfg->project_policy_file, cfg->workspace, &data, &length, &exists, err) < 0)
        return -1;
    if (exists && collect_document(data, length, cfg->project_policy_file, CFG_LAYER_HOST_PROJECT,
                                   &layers[CFG_LAYER_HOST_PROJECT], err) < 0)
        return -1;
    return 0;
}

/* Keys only host-owned layers may set: backend_floor is the host's floor
 * under backend = "auto"; a user, workspace, environment or session value
 * is refused, not ignored, so that nobody believes it holds. */
static int check_host_only(const struct cfg_assignment *a, enum cfg_layer layer,
                           struct cordon_error *err)
{
    if (a->key != CFG_BACKEND_FLOOR || layer >= CFG_LAYER_HOST_DEFAULT)
        return 0;
    char at[1100];
    if (a->origin.line)
        snprintf(at, sizeof(at), "%s:%d", a->origin.file, a->origin.line);
    else
        snprintf(at, sizeof(at), "%s", a->origin.file);
    return error_set(err, 0,
                     "%s: backend_floor is refused in the %s layer: the floor of backend = "
                     "\"auto\" is host-owned policy (/etc/cordon/default.toml or "
                     "~/.config/cordon/policy/; docs/doctor.md)",
                     at, cfg_layer_name(layer));
}

static int merge_layers(struct cordon_config *cfg, struct cfg_assignments layers[CFG_LAYER_COUNT],
                        const struct credential_areas *areas, struct cfg_warnings *warnings,
                        struct cordon_error *err)
{
    /* the last host-owned assignment of each key locks it */
    const struct cfg_assignment *locker[CFG_KEY_COUNT] = {0};
    for (int layer = CFG_LAYER_HOST_DEFAULT; layer <= CFG_LAYER_HOST_PROJECT; layer++)
        for (size_t i = 0; i < layers[layer].count; i++)
            locker[layers[layer].items[i].key] = &layers[layer].items[i];

    for (int layer = CFG_LAYER_USER; layer < CFG_LAYER_COUNT; layer++) {
        bool host = layer >= CFG_LAYER_HOST_DEFAULT;
        for (size_t i = 0; i < layers[layer].count; i++) {
            const struct cfg_assignment *a = &layers[layer].items[i];
            if (layer == CFG_LAYER_WORKSPACE &&
                check_workspace_assignment(a, cfg, cfg->workspace, areas, err) < 0)
                return -1;
            if (check_host_only(a, (enum cfg_layer)layer, err) < 0)
                return -1;
            if (!host && locker[a->key]) {
                const struct cfg_origin *by = &locker[a->key]->origin;
                char at[1100];
                if (a->origin.line)
                    snprintf(at, sizeof(at), "%s:%d", a->origin.file, a->origin.line);
                else
                    snprintf(at, sizeof(at), "%s", a->origin.file);
                if (warn(warnings, "%s set in %s is ignored: locked by %s:%d", cfg_key_name(a->key),
                         at, by->file, by->line) < 0)
                    return error_set(err, ENOMEM, "warnings");
                continue;
            }
            if (cfg_apply(cfg, a, host, err) < 0)
                return -1;
            cfg->origin[a->key].locked = host;
        }
    }
    /* these three stay read-only whatever any layer says */
    static const char *const always_protected[] = {".git/hooks", ".git/config", ".cordon.toml"};
    for (size_t i = 0; i < ARRAY_SIZE(always_protected); i++)
        if (cfg_strings_add(&cfg->protected_paths, always_protected[i]) < 0)
            return error_set(err, ENOMEM, "protected_paths");
    return 0;
}

/* Pages of a tmpfs are memory that no RLIMIT_AS counts: where no cgroup
 * limits the sandbox (an unprivileged user without a delegated cgroup), a
 * sandbox could otherwise fill its tmpfs mounts past limits.memory_mib. So
 * their sizes together are part of the memory budget, on every backend. */
static int check_tmpfs_budget(const struct cordon_config *cfg, struct cordon_error *err)
{
    int64_t each = cfg_tmpfs_mib(cfg);
    if (cfg->limits.memory_mib <= 0 || each * CFG_TMPFS_MOUNTS <= cfg->limits.memory_mib)
        return 0;
    const struct cfg_origin *o = &cfg->origin[CFG_LIMITS_TMPFS_MIB];
    return error_set(err, 0,
                     "limits.tmpfs_mib = %lld%s%s%s: %d tmpfs mounts of %lld MiB (%lld MiB) exceed "
                     "limits.memory_mib = %lld; lower limits.tmpfs_mib to at most %lld or raise "
                     "limits.memory_mib",
                     (long long)cfg->limits.tmpfs_mib, o->file ? " (" : "", o->file ? o->file : "",
                     o->file ? ")" : "", CFG_TMPFS_MOUNTS, (long long)each,
                     (long long)(each * CFG_TMPFS_MOUNTS), (long long)cfg->limits.memory_mib,
                     (long long)(cfg->limits.memory_mib / CFG_TMPFS_MOUNTS));
}

int cfg_resolve(const struct cfg_inputs *in, struct cordon_config *out,
                struct cfg_warnings *warnings, struct cordon_error *err)
{
    memset(out, 0, sizeof(*out));
    struct cordon_config cfg = {0};
    struct cfg_assignments layers[CFG_LAYER_COUNT] = {0};
    _cleanup_free_ char *xdg = NULL;
    _cleanup_free_ char *policy_dir = NULL;
    _cleanup_free_ char *cordon_dir = NULL;
    struct credential_areas areas = {0};
    int ret = -1;

    if (!in->workspace || in->workspace[0] != '/')
        return error_set(err, 0, "the workspace must be an absolute path");
    if (in->xdg_config_home && in->xdg_config_home[0] == '/')
        xdg = strdup(in->xdg_config_home);
    else if (in->home && in->home[0] == '/')
        ret = asprintf(&xdg, "%s/.config", in->home) < 0 ? -1 : 0;
    else
        return error_set(err, 0, "neither XDG_CONFIG_HOME nor HOME is set");
    const char *etc = in->etc_dir ? in->etc_dir : "/etc/cordon";
    ret = -1;
    if (!xdg || cfg_set_defaults(&cfg, err) < 0)
        goto out;
    if (!(cfg.workspace = strdup(in->workspace)) ||
        asprintf(&cfg.user_file, "%s/cordon/config.toml", xdg) < 0 ||
        asprintf(&cfg.workspace_file, "%s%s.cordon.toml", in->workspace,
                 strcmp(in->workspace, "/") == 0 ? "" : "/") < 0 ||
        asprintf(&cfg.host_default_files[0], "%s/default.toml", etc) < 0 ||
        asprintf(&cfg.host_default_files[1], "%s/cordon/policy/default.toml", xdg) < 0 ||
        asprintf(&cfg.trust_file, "%s/cordon/trust.json", xdg) < 0 ||
        asprintf(&cfg.trust_guard_dir, "%s/cordon/trust-guard", xdg) < 0 ||
        asprintf(&policy_dir, "%s/cordon/policy", xdg) < 0 ||
        asprintf(&cordon_dir, "%s/cordon", xdg) < 0) {
        error_set(err, ENOMEM, "configuration");
        goto out;
    }
    if (cfg_project_policy_path(xdg, in->workspace, &cfg.project_policy_file, err) < 0)
        goto out;

    const char *placement[] = {cfg.host_default_files[0],
                               cfg.host_default_files[1],
                               cfg.project_policy_file,
                               policy_dir,
                               cfg.trust_file,
                               cfg.trust_guard_dir,
                               NULL};
    if (check_policy_placement(placement, cfg.workspace, err) < 0)
        goto out;
    if (load_layers(in, &cfg, layers, warnings, err) < 0)
        goto out;
    if (credential_areas_build(in->home, xdg, etc, &areas) < 0) {
        error_set(err, ENOMEM, "configuration");
        goto out;
    }
    if (merge_layers(&cfg, layers, &areas, warnings, err) < 0)
        goto out;
    /* a writable mount over ~/.config/cordon could rewrite the policy, the
     * trust record or the user settings */
    const char *policy_areas[] = {etc, cordon_dir, cfg.project_policy_file, NULL};
    if (check_mounts(&cfg, policy_areas, &areas, warnings, err) < 0)
        goto out;
    if (check_tmpfs_budget(&cfg, err) < 0)
        goto out;
    *out = cfg;
    memset(&cfg, 0, sizeof(cfg));
    ret = 0;
out:
    for (int i = 0; i < CFG_LAYER_COUNT; i++)
        cfg_assignments_free(&layers[i]);
    credential_areas_free(&areas);
    cfg_free(&cfg);
    return ret;
}

int cfg_check_file(const char *path, enum cfg_layer layer, const char *workspace,
                   struct cordon_error *err)
{
    _cleanup_free_ char *data = NULL;
    size_t length = 0;
    bool exists = false;
    if (read_user_file(path, &data, &length, &exists, err) < 0)
        return -1;
    if (!exists)
        return error_set(err, ENOENT, "%s", path);
    struct cfg_assignments a = {0};
    struct cordon_config cfg = {0};
    int ret = collect_document(data, length, path, layer, &a, err);
    if (ret == 0)
        ret = cfg_set_defaults(&cfg, err);
    if (ret == 0 && workspace)
        cfg.workspace = strdup(workspace);
    struct credential_areas areas = {0};
    if (ret == 0 && layer == CFG_LAYER_WORKSPACE) {
        const char *home = getenv("HOME");
        const char *xdg_env = getenv("XDG_CONFIG_HOME");
        _cleanup_free_ char *xdg = NULL;
        if (xdg_env && xdg_env[0] == '/')
            xdg = strdup(xdg_env);
        else if (home && home[0] == '/' && asprintf(&xdg, "%s/.config", home) < 0)
            xdg = NULL;
        if (credential_areas_build(home, xdg, "/etc/cordon", &areas) < 0)
            ret = error_set(err, ENOMEM, "%s", path);
    }
    for (size_t i = 0; ret == 0 && i < a.count; i++) {
        if (layer == CFG_LAYER_WORKSPACE && workspace)
            ret = check_workspace_assignment(&a.items[i], &cfg, workspace, &areas, err);
        if (ret == 0)
            ret = check_host_only(&a.items[i], layer, err);
        if (ret == 0)
            ret = cfg_apply(&cfg, &a.items[i], layer >= CFG_LAYER_HOST_DEFAULT, err);
    }
    static const char *const no_areas[] = {NULL};
    if (ret == 0)
        ret = check_mounts(&cfg, no_areas, NULL, NULL, err);
    credential_areas_free(&areas);
    cfg_assignments_free(&a);
    cfg_free(&cfg);
    return ret;
}
