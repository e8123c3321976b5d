/* Prepares a namespace sandbox launch from the workspace and the resolved
 * configuration. Host context, before any sandbox exists: every failure here
 * stops cordon with nothing started. */
#include "supervisor/launch.h"
#include "supervisor/review.h"
#include "supervisor/git-identity.h"
#include "supervisor/state.h"
#include "backend/backend.h"
#include "backend/probe.h"
#include "net/audit.h"
#include "config.h"
#include "util/cleanup.h"
#include "util/account.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CORDON_AGENT_INSTALL_PATH
#define CORDON_AGENT_INSTALL_PATH "/usr/local/libexec/cordon/cordon-agent"
#endif

extern char **environ;

const char *launch_etc_dir(void)
{
    /* Only a debug (test) build lets the environment move the host-owned
     * policy: a release build must not have its policy redirected. */
    const char *dir = CORDON_TEST_HOOKS ? getenv("CORDON_ETC_DIR") : NULL;
    return dir && dir[0] == '/' ? dir : NULL;
}

/* The same configuration is resolved more than once in one process (cordon
 * mcp reads it for routing, then again for each sandbox): say each warning
 * once. */
static void warn_once(const char *message)
{
    static uint64_t seen[128];
    static size_t nseen;
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)message; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    for (size_t i = 0; i < nseen; i++) {
        if (seen[i] == h)
            return;
    }
    if (nseen < sizeof(seen) / sizeof(seen[0]))
        seen[nseen++] = h;
    log_warn("%s", message);
}

int launch_resolve_config(const char *workspace, const char *const *session_sets,
                          struct cordon_config *cfg, struct cordon_error *err)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    struct cfg_inputs in = {
        .workspace = workspace,
        .environ = environ,
        .session_sets = session_sets,
        .xdg_config_home = xdg && xdg[0] == '/' ? xdg : NULL,
        .home = getenv("HOME"),
        .etc_dir = launch_etc_dir(),
    };
    struct cfg_warnings warnings = {0};
    int rc = cfg_resolve(&in, cfg, &warnings, err);
    for (size_t i = 0; i < warnings.count; i++)
        warn_once(warnings.items[i]);
    cfg_warnings_free(&warnings);
    if (rc < 0)
        return error_prefix(err, "configuration");
    return 0;
}

/* cordon-agent next to the cordon binary (build tree, tarball), else the
 * installed one. A test build may be pointed at another (CORDON_TEST_AGENT:
 * the docker backend's tests run a static agent with the sanitizer build's
 * cordon). */
char *launch_find_agent(struct cordon_error *err)
{
    const char *forced = CORDON_TEST_HOOKS ? getenv("CORDON_TEST_AGENT") : NULL;
    if (forced && forced[0] == '/')
        return strdup(forced);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        char *candidate;
        if (asprintf(&candidate, "%s/cordon-agent", dir) >= 0) {
            if (access(candidate, X_OK) == 0)
                return candidate;
            free(candidate);
        }
    }
    if (access(CORDON_AGENT_INSTALL_PATH, X_OK) == 0)
        return strdup(CORDON_AGENT_INSTALL_PATH);
    error_set(err, ENOENT, "cannot find cordon-agent next to cordon or at %s",
              CORDON_AGENT_INSTALL_PATH);
    return NULL;
}

static char *home_path(void)
{
    const char *home = getenv("HOME");
    if (home && home[0] == '/' && strcmp(home, "/") != 0)
        return strdup(home);
    const char *account = account_home(getuid());
    if (account && account[0] == '/' && strcmp(account, "/") != 0)
        return strdup(account);
    return strdup("/home/cordon");
}

static enum env_mode env_mode_of(int cfg_mode)
{
    switch (cfg_mode) {
    case CFG_ENV_ALLOWLIST:
        return ENV_MODE_ALLOWLIST;
    case CFG_ENV_PASSTHROUGH:
        return ENV_MODE_PASSTHROUGH;
    default:
        return ENV_MODE_STRICT;
    }
}

/* $XDG_STATE_HOME/cordon/network-audit.jsonl (~/.local/state when unset);
 * NULL when no such place can be made (the proxy then keeps no file). */
static char *default_audit_log_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[PATH_MAX];
    int n;
    if (state && state[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/cordon", state);
    else if (home && home[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/.local/state/cordon", home);
    else
        return NULL;
    if (n < 0 || (size_t)n >= sizeof(dir) || fs_mkdir_p(dir, 0700) < 0)
        return NULL;
    char *path;
    if (asprintf(&path, "%s/network-audit.jsonl", dir) < 0)
        return NULL;
    return path;
}

/* TLS interception: a copy of the host's bundle in the state root (the
 * proxy appends the session CA once it made it), bound read-only over the
 * sandbox's NET_CA_BUNDLE. Never the CA key: that stays in the proxy. */
static int launch_tls_bundle(struct launch *l, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    _cleanup_free_ char *dir = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    if (asprintf(&dir, "%s/.tls", root) < 0)
        return error_set(err, ENOMEM, "launch");
    if (fs_mkdir_p(dir, 0700) < 0)
        return error_set(err, errno, "network: TLS: %s", dir);
    uint8_t rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return error_set(err, errno, "network: TLS: getrandom");
    if (asprintf(&l->tls_bundle, "%s/bundle-%02x%02x%02x%02x%02x%02x%02x%02x.pem", dir, rnd[0],
                 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]) < 0) {
        l->tls_bundle = NULL;
        return error_set(err, ENOMEM, "launch");
    }
    _cleanup_close_ int in = open(NET_CA_BUNDLE, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return error_set(err, errno,
                         "network: TLS interception (for [[secrets]] and network.http_rules) "
                         "needs the host's CA bundle %s",
                         NET_CA_BUNDLE);
    _cleanup_close_ int out =
        open(l->tls_bundle, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0)
        return error_set(err, errno, "network: TLS: %s", l->tls_bundle);
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0)
            return error_set(err, errno, "network: TLS: reading %s", NET_CA_BUNDLE);
        if (n == 0)
            break;
        if (fs_write_all(out, buf, (size_t)n) < 0)
            return error_set(err, errno, "network: TLS: %s", l->tls_bundle);
    }
    return 0;
}

/* The [network] table as the network module takes it. */
static int launch_network(const struct launch_request *req, struct launch *l,
                          struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    struct net_policy *net = &l->net;
    *net = (struct net_policy){0};
    switch (cfg->network.mode) {
    case CFG_NETWORK_ALLOWLIST:
        net->mode = NET_MODE_ALLOWLIST;
        break;
    case CFG_NETWORK_OPEN:
        net->mode = NET_MODE_OPEN;
        break;
    default:
        net->mode = NET_MODE_DENY;
        break;
    }
    if (cfg->network.allow_hosts.count > NET_MAX_ALLOW)
        return error_set(err, E2BIG, "network.allow_hosts: more than %d entries", NET_MAX_ALLOW);
    for (size_t i = 0; i < cfg->network.allow_hosts.count; i++)
        net->allow_hosts[net->allow_count++] = cfg->network.allow_hosts.items[i];
    if (cfg->network.publish_ports.count > NET_MAX_PUBLISH)
        return error_set(err, E2BIG, "network.publish_ports: more than %d entries",
                         NET_MAX_PUBLISH);
    for (size_t i = 0; i < cfg->network.publish_ports.count; i++) {
        const struct cfg_port *p = &cfg->network.publish_ports.items[i];
        struct net_publish *out = &net->publish[net->publish_count++];
        snprintf(out->bind, sizeof(out->bind), "%s", p->bind);
        out->host_port = p->host_port;
        out->guest_port = p->guest_port;
    }
    net->upstream_proxy = cfg->network.upstream_proxy;
    if (cfg->network.no_proxy.count > NET_MAX_ALLOW)
        return error_set(err, E2BIG, "network.no_proxy: more than %d entries", NET_MAX_ALLOW);
    for (size_t i = 0; i < cfg->network.no_proxy.count; i++)
        net->no_proxy[net->no_proxy_count++] = cfg->network.no_proxy.items[i];
    if (cfg->secrets.count > NET_MAX_SECRETS)
        return error_set(err, E2BIG, "secrets: more than %d entries", NET_MAX_SECRETS);
    for (size_t i = 0; i < cfg->secrets.count; i++) {
        const struct cfg_secret *cs = &cfg->secrets.items[i];
        struct net_secret *ns = &net->secrets[net->secret_count++];
        ns->name = cs->name;
        ns->from = cs->from;
        ns->header = cs->header;
        ns->plain_http = cs->plain_http;
        ns->hosts = (const char *const *)cs->hosts.items;
        ns->host_count = cs->hosts.count;
        if (net_secret_placeholder(cs->name, ns->placeholder, err) < 0)
            return -1;
    }
    if (cfg->network.host_services.count > NET_MAX_PUBLISH)
        return error_set(err, E2BIG, "network.host_services: more than %d entries",
                         NET_MAX_PUBLISH);
    for (size_t i = 0; i < cfg->network.host_services.count; i++) {
        const char *colon = strrchr(cfg->network.host_services.items[i], ':');
        net->host_services[net->host_service_count++] = (uint16_t)atoi(colon + 1);
    }
    if (cfg->network.host_services.count > 0 && !backend_has(l->backend, BACKEND_CAP_HOST_SERVICES))
        return error_set(err, ENOTSUP,
                         "network.host_services: the %s backend does not reach the host's loopback "
                         "services (the ns, vm and docker backends do); nothing was run",
                         l->backend->name);
    if (req && req->net_audit_log)
        l->net_audit_log = strdup(req->net_audit_log);
    else if (net->mode == NET_MODE_ALLOWLIST)
        l->net_audit_log = default_audit_log_path();
    net->audit_log = l->net_audit_log;
    net->hosts_file = req ? req->net_hosts_file : NULL;
    net->session_name = l->name;
    /* Deny mode answers at once, through a proxy that refuses all. */
    net->deny_reporter = backend_has(l->backend, BACKEND_CAP_DENY_PROXY);
    /* vm and docker start their proxy themselves, into this session: the
     * one the supervisor drains for a tool result's line and sends the
     * user's allow rules on. */
    net->session = &l->net_session;
    if (cfg->network.http_rules.count > NET_MAX_HTTP_RULES)
        return error_set(err, E2BIG, "network.http_rules: more than %d entries",
                         NET_MAX_HTTP_RULES);
    for (size_t i = 0; i < cfg->network.http_rules.count; i++)
        net->http_rules[net->http_rule_count++] = cfg->network.http_rules.items[i];
    net->ca_file = cfg->network.ca_file;
    if (backend_has(l->backend, BACKEND_CAP_TLS_INTERCEPT) && net_policy_intercepts(net) &&
        launch_tls_bundle(l, err) < 0)
        return -1;
    net->tls_bundle = l->tls_bundle;
    if (net_policy_validate(net, err) < 0 || net_env_add(net, &l->env, err) < 0)
        return error_prefix(err, "network");
    net_session_init(&l->net_session, net);
    /* Nothing but refusals for the proxy to do: it waits for the
     * sandbox's first connection (spec.h deny_listener_port); the
     * listener is taken with the socket guard's fds. */
    l->net_session.defer = !CORDON_UNSAFE_NO_SECCOMP &&
                           backend_has(l->backend, BACKEND_CAP_DEFERRED_DENY_PROXY) &&
                           net_defers_proxy(net);
    return 0;
}

/* backend = "auto" becomes the backend it chose (backend/probe.h); a named
 * backend below backend_floor is refused like auto would be. */
static int launch_choose_backend(struct cordon_config *cfg, char *why, size_t size,
                                 struct cordon_error *err)
{
    const struct cfg_origin *o = &cfg->origin[CFG_BACKEND];
    const char *by = o->file ? o->file : cfg_layer_name(o->layer);
    if (cfg->backend == CFG_BACKEND_AUTO) {
        int chosen;
        if (probe_choose_backend(cfg, &chosen, why, size) < 0)
            return error_set(err, 0, "%s; run `cordon doctor`", why);
        cfg->backend = chosen;
        log_debug("backend: %s", why);
        return 0;
    }
    const char *name = cfg_enum_name(CFG_BACKEND, cfg->backend);
    if (!probe_meets_floor(probe_backend_strength(cfg->backend), cfg->backend_floor)) {
        const struct cfg_origin *f = &cfg->origin[CFG_BACKEND_FLOOR];
        return error_set(err, 0,
                         "backend = \"%s\" (set by %s) is below backend_floor = \"%s\" (set "
                         "by %s:%d): use a backend that meets it, or backend = \"auto\"",
                         name, by, cfg_enum_name(CFG_BACKEND_FLOOR, cfg->backend_floor),
                         f->file ? f->file : cfg_layer_name(f->layer), f->line);
    }
    snprintf(why, size, "backend = \"%s\" (set by %s)", name, by);
    return 0;
}

/* The sandbox's environment: built by env.mode from the host's, with the
 * user's git identity. */
static int launch_env(struct launch *l, struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    size_t na = 0;
    for (size_t i = 0; i < cfg->env.allow.count && na + 1 < ARRAY_SIZE(l->env_allow); i++)
        l->env_allow[na++] = cfg->env.allow.items[i];
    l->env_allow[na] = NULL;
    if (cfg->env.mode == CFG_ENV_PASSTHROUGH)
        log_warn("env.mode = \"passthrough\": the host's environment (except Docker, Compose "
                 "and loader variables) is visible inside the sandbox");
    if (env_build(env_mode_of(cfg->env.mode), environ, l->env_allow, l->home, &l->env, err) < 0)
        return -1;
    /* A convenience, not isolation: without it `git commit` inside says
     * "Author identity unknown", so a failure only warns. */
    char repo_config[PATH_MAX];
    bool have_repo =
        l->ws.layout_common_dir && snprintf(repo_config, sizeof(repo_config), "%s/config",
                                            l->ws.layout_common_dir) < (int)sizeof(repo_config);
    struct cordon_error gerr = {0};
    _cleanup_free_ char *cache_dir = NULL;
    if (state_root(&cache_dir, &gerr) < 0)
        cache_dir = NULL;
    if (git_identity_env_add(l->ws.root, have_repo ? repo_config : NULL, cache_dir, &l->env,
                             &gerr) < 0)
        log_warn("%s", gerr.message);
    return 0;
}

/* sandbox_name, or a fresh cordon-PID-RANDOM. */
static int launch_name(struct launch *l, struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    if (cfg->sandbox_name) {
        if (state_check_name(cfg->sandbox_name, err) < 0)
            return -1;
        snprintf(l->name, sizeof(l->name), "%s", cfg->sandbox_name);
        return 0;
    }
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        return error_set(err, errno, "getrandom");
    snprintf(l->name, sizeof(l->name), "cordon-%d-%08x", getpid(), rnd);
    return 0;
}

/* What the view holds besides the workspace: protected paths, mounts and
 * toolchain caches (bounded), the git directories. */
static int launch_view_paths(struct launch *l, struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    if (cfg->protected_paths.count > LAUNCH_MAX_PROTECTED)
        return error_set(err, E2BIG, "protected_paths: more than %d entries", LAUNCH_MAX_PROTECTED);
    for (size_t i = 0; i < cfg->protected_paths.count; i++)
        l->protected_paths[i] = cfg->protected_paths.items[i];
    l->protected_paths[cfg->protected_paths.count] = NULL;

    if (cfg->mounts.count > LAUNCH_MAX_MOUNTS)
        return error_set(err, E2BIG, "mounts: more than %d entries", LAUNCH_MAX_MOUNTS);
    for (size_t i = 0; i < cfg->mounts.count; i++)
        l->mounts[i] =
            (struct ns_extra_mount){cfg->mounts.items[i].host_path, cfg->mounts.items[i].guest_path,
                                    cfg->mounts.items[i].readonly};
    l->nmounts = cfg->mounts.count;
    if (toolchain_cache_mounts(cfg, l->home, l->ws.root, &l->caches, l->mounts, &l->nmounts,
                               LAUNCH_MAX_MOUNTS, err) < 0)
        return -1;

    size_t g = 0;
    if (l->ws.git_common_dir)
        l->git_dirs[g++] = l->ws.git_common_dir;
    if (l->ws.git_dir)
        l->git_dirs[g++] = l->ws.git_dir;
    l->git_dirs[g] = NULL;
    return 0;
}

/* The curated /etc is prepared once per content, in the state root. */
static int launch_etc_cache(struct launch *l, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    if (asprintf(&l->etc_cache_root, "%s/.etc", root) < 0) {
        l->etc_cache_root = NULL;
        return error_set(err, ENOMEM, "launch");
    }
    return 0;
}

/* The limits and the sandbox spec, from what the steps before prepared. */
static void launch_fill_spec(struct launch *l)
{
    const struct cordon_config *cfg = &l->cfg;
    l->limits = (struct sandbox_limits){
        .pids = cfg->limits.pids,
        .memory_mib = cfg->limits.memory_mib,
        .file_size_mib = cfg->limits.file_size_mib,
        .open_files = cfg->limits.open_files,
        .cpu_seconds = cfg->limits.cpu_seconds,
        .cpus = cfg->limits.cpus,
        .tmpfs_mib = (long)cfg_tmpfs_mib(cfg),
        .tmpfs_inodes = (long)cfg->limits.tmpfs_inodes,
    };
    l->spec = (struct ns_spec){
        .workspace = l->ws.root,
        .workspace_view = l->ws.view_root,
        .cwd = l->ws.view_cwd,
        .home = l->home,
        .workspace_readonly = cfg->workspace_readonly,
        .protected_paths = l->protected_paths,
        .git_dirs = l->git_dirs,
        .mounts = l->mounts,
        .nmounts = l->nmounts,
        .limits = l->limits,
        .agent_path = l->agent_path,
        .envp = l->env,
        .stdio = {0, 1, 2},
        .control_fd = -1,
        .name = l->name,
        .etc_cache_root = l->etc_cache_root,
        .etc_extra = cfg->etc.extra.items,
        .netc_extra = cfg->etc.extra.count,
        .ssh_proxied = net_ssh_proxied(&l->net),
        .on_namespaces_ready = net_on_namespaces_ready,
        .on_namespaces_ready_ctx = &l->net_session,
        .on_before_exec = net_wait_ready,
        .deny_listener_port = l->net_session.defer ? NET_PROXY_PORT : 0,
        .on_deny_listener = net_session_defer,
        .sockets_allow = (const char *const *)cfg->sockets.allow.items,
        .nsockets_allow = cfg->sockets.allow.count,
    };
}

/* The workspace's configuration (the workspace detected from t0 to t1)
 * and the backend it chooses. */
static int launch_configure(const struct launch_request *req, struct launch *l, long long t0,
                            long long t1, struct cordon_error *err)
{
    if (launch_resolve_config(l->ws.root, req ? req->session_sets : NULL, &l->cfg, err) < 0)
        return -1;
    log_debug("timing: workspace %lld us, configuration %lld us", t1 - t0, log_now_us() - t1);
    if (launch_choose_backend(&l->cfg, l->backend_reason, sizeof(l->backend_reason), err) < 0)
        return -1;
    const struct cordon_config *cfg = &l->cfg;
    l->backend = backend_lookup(cfg_enum_name(CFG_BACKEND, cfg->backend));
    if (!l->backend)
        return error_set(err, ENOSYS, "backend \"%s\" is not built in",
                         cfg_enum_name(CFG_BACKEND, cfg->backend));
    if (review_check_config(cfg, l->backend, err) < 0)
        return -1;
    l->home = home_path();
    l->agent_path = launch_find_agent(err);
    if (!l->home || !l->agent_path)
        return -1;
    if (l->backend->check_launch && l->backend->check_launch(l, err) < 0)
        return -1;
    return 0;
}

int launch_prepare(const struct launch_request *req, struct launch *l, struct cordon_error *err)
{
    *l = (struct launch){0};
    l->net_session.proxy_pid = -1;
    l->net_session.pasta_pid = -1;
    l->net_session.report_fd = -1;
    l->net_session.pending_fd = -1;
    l->net_session.log_fds[0] = l->net_session.log_fds[1] = -1;
    if (req && req->attach && !state_exists(req->attach))
        return error_set(err, ENOENT, "no sandbox named %s to attach to (see cordon ls)",
                         req->attach);
    long long t0 = log_now_us();
    if (workspace_detect(NULL, &l->ws, err) < 0)
        return -1;
    long long t1 = log_now_us();
    if (launch_configure(req, l, t0, t1, err) < 0 || launch_env(l, err) < 0 ||
        launch_name(l, err) < 0 || launch_view_paths(l, err) < 0 || launch_network(req, l, err) < 0)
        goto fail;
    const struct cordon_config *cfg = &l->cfg;
    /* backend = "auto": its choice is part of the session's record */
    if (l->net_audit_log && strncmp(l->backend_reason, "auto chose", 10) == 0)
        net_audit_write_backend(l->net_audit_log, l->name, cfg_enum_name(CFG_BACKEND, cfg->backend),
                                l->backend_reason);
    if (l->tls_bundle && !backend_has(l->backend, BACKEND_CAP_TLS_CA_IN_SPEC))
        l->mounts[l->nmounts++] = (struct ns_extra_mount){l->tls_bundle, NET_CA_BUNDLE, true};
    if (launch_etc_cache(l, err) < 0)
        goto fail;
    launch_fill_spec(l);
    log_debug("workspace %s (seen inside as %s), cwd %s%s", l->ws.root, l->ws.view_root,
              l->ws.view_cwd, l->ws.is_git ? ", git" : "");
    if (cfg->workspace_readonly)
        log_debug("workspace read-only: writes under %s fail with EROFS; the writable scratch "
                  "places are %s (HOME, empty at start) and /tmp",
                  l->ws.view_root, l->home);
    return 0;
fail:
    launch_free(l);
    return -1;
}

void launch_free(struct launch *l)
{
    if (l->net_session.policy) {
        net_session_stop(&l->net_session);
        l->net_session.policy = NULL;
    }
    free(l->net_audit_log);
    if (l->tls_bundle) {
        unlink(l->tls_bundle);
        free(l->tls_bundle);
    }
    workspace_free(&l->ws);
    cfg_free(&l->cfg);
    env_free(l->env);
    toolchain_caches_free(&l->caches);
    free(l->agent_path);
    free(l->home);
    free(l->etc_cache_root);
    *l = (struct launch){0};
}
