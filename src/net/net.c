/* A session's network set-up. Host context: runs in the supervisor from the
 * ns backend's on_namespaces_ready hook, after the sandbox's user and
 * network namespaces exist and before anything runs inside. Processes:
 *
 *   supervisor
 *    |- pasta (open mode): user-mode networking attached to the sandbox's
 *    |  namespaces, no port forwarding in either direction, the gateway not
 *    |  mapped to the host, so the host's loopback stays out of reach
 *    `- proxy (allowlist mode, or any published port, or open mode): stays
 *       in the host's network namespace (its outbound connects are the
 *       host's, where the allowlist is checked)
 *        |- namespace socket factory: joined the sandbox's user and network
 *        |  namespaces; makes the in-sandbox listener and the sockets that
 *        |  connect published ports to the sandbox's loopback
 *        `- resolver workers (allowlist mode, 4): one name lookup each at a
 *           time, in the host's namespace (resolve-pool.c)
 *
 * All of them die with the supervisor (PR_SET_PDEATHSIG) and are stopped by
 * net_session_stop at the end of the session. Nothing runs inside the
 * sandbox for the network. The proxy resolves names in a few worker
 * processes of its own (resolve-pool.c), so a slow DNS server stalls only
 * the connection that asked, for at most 10 s. */
#include "net/net.h"
#include "net/allowlist.h"
#include "net/netns-factory.h"
#include "net/proxy.h"
#include "net/proxy-parse.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUTE_TIMEOUT_MS 5000

int net_mode_parse(const char *text, enum net_mode *mode, struct cordon_error *err)
{
    if (strcmp(text, "deny") == 0)
        *mode = NET_MODE_DENY;
    else if (strcmp(text, "allowlist") == 0)
        *mode = NET_MODE_ALLOWLIST;
    else if (strcmp(text, "open") == 0)
        *mode = NET_MODE_OPEN;
    else
        return error_set(err, EINVAL, "network mode '%s': expected deny, allowlist or open", text);
    return 0;
}

const char *net_mode_name(enum net_mode mode)
{
    switch (mode) {
    case NET_MODE_ALLOWLIST:
        return "allowlist";
    case NET_MODE_OPEN:
        return "open";
    default:
        return "deny";
    }
}

static int parse_port_text(const char *text, size_t len, uint16_t *port)
{
    if (len == 0 || len > 5)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(text[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int net_publish_parse(const char *text, struct net_publish *out, struct cordon_error *err)
{
    *out = (struct net_publish){0};
    snprintf(out->bind, sizeof(out->bind), "127.0.0.1");
    const char *ports = text;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(out->bind))
            goto bad;
        memcpy(out->bind, text + 1, (size_t)(close - text - 1));
        out->bind[close - text - 1] = '\0';
        ports = close + 2;
    } else {
        const char *last = strrchr(text, ':');
        const char *first = strchr(text, ':');
        if (!last)
            goto bad;
        if (first != last) {
            if ((size_t)(first - text) >= sizeof(out->bind))
                goto bad;
            memcpy(out->bind, text, (size_t)(first - text));
            out->bind[first - text] = '\0';
            ports = first + 1;
        }
    }
    const char *colon = strchr(ports, ':');
    if (!colon || strchr(colon + 1, ':') ||
        parse_port_text(ports, (size_t)(colon - ports), &out->host_port) < 0 ||
        parse_port_text(colon + 1, strlen(colon + 1), &out->guest_port) < 0)
        goto bad;
    struct in6_addr probe;
    if (inet_pton(AF_INET, out->bind, &probe) != 1 && inet_pton(AF_INET6, out->bind, &probe) != 1)
        return error_set(err, EINVAL, "publish '%s': '%s' is not an IPv4 or IPv6 address", text,
                         out->bind);
    return 0;
bad:
    return error_set(err, EINVAL,
                     "publish '%s': expected [BIND:]HOST_PORT:GUEST_PORT, e.g. 8080:80 or "
                     "127.0.0.1:8080:80 or [::1]:8080:80",
                     text);
}

int net_policy_validate(const struct net_policy *policy, struct cordon_error *err)
{
    struct allowlist al = {0};
    for (size_t i = 0; i < policy->allow_count; i++) {
        if (allowlist_add(&al, policy->allow_hosts[i], err) < 0) {
            allowlist_free(&al);
            return -1;
        }
    }
    allowlist_free(&al);
    if (policy->mode != NET_MODE_ALLOWLIST && policy->allow_count > 0)
        log_warn("network: allow_hosts has no effect in %s mode", net_mode_name(policy->mode));
    for (size_t i = 0; i < policy->secret_count; i++) {
        if (net_secret_validate(&policy->secrets[i], err) < 0)
            return -1;
    }
    if (policy->secret_count > 0 && policy->mode != NET_MODE_ALLOWLIST)
        log_warn("network: [[secrets]] take effect in allowlist mode only; in %s mode the "
                 "sandbox's variables hold the placeholders, which no server accepts",
                 net_mode_name(policy->mode));
    if (policy->publish_count + policy->host_service_count > NET_MAX_PUBLISH)
        return error_set(err, E2BIG, "network: more than %d published ports and host services",
                         NET_MAX_PUBLISH);
    for (size_t i = 0; i < policy->host_service_count; i++) {
        for (size_t j = 0; j < policy->publish_count; j++) {
            if (policy->publish[j].guest_port == policy->host_services[i])
                return error_set(err, EINVAL,
                                 "network: port %u is both a host service (host_services) and "
                                 "a published port's sandbox side (publish_ports)",
                                 policy->host_services[i]);
        }
    }
    if (policy->hosts_file && access(policy->hosts_file, R_OK) < 0)
        return error_set(err, errno, "hosts file %s", policy->hosts_file);
    return 0;
}

/* Drops every NAME=... from the environment ENV of N entries. */
static void env_remove(char **env, size_t *n, const char *name)
{
    size_t klen = strlen(name);
    for (size_t i = 0; i < *n; i++) {
        if (strncmp(env[i], name, klen) == 0 && env[i][klen] == '=') {
            free(env[i]);
            env[i] = env[--*n];
            env[*n] = NULL;
            i--;
        }
    }
}

static int env_add_secrets(const struct net_policy *policy, char ***envp, struct cordon_error *err)
{
    size_t n = 0;
    while ((*envp)[n])
        n++;
    char **env = realloc(*envp, (n + policy->secret_count + 1) * sizeof(char *));
    if (!env)
        return error_set(err, ENOMEM, "environment");
    *envp = env;
    for (size_t i = 0; i < policy->secret_count; i++) {
        const struct net_secret *s = &policy->secrets[i];
        env_remove(env, &n, s->name);
        /* The real value never goes in, not even under its source's name. */
        if (strncmp(s->from, "env:", 4) == 0)
            env_remove(env, &n, s->from + 4);
        if (asprintf(&env[n], "%s=%s", s->name, s->placeholder) < 0) {
            env[n] = NULL;
            return error_set(err, ENOMEM, "environment");
        }
        env[++n] = NULL;
    }
    return 0;
}

bool net_deny_reporter(const struct net_policy *policy)
{
    return policy->mode == NET_MODE_DENY && policy->deny_reporter;
}

bool net_defers_proxy(const struct net_policy *policy)
{
    return net_deny_reporter(policy) && policy->publish_count == 0 &&
           policy->host_service_count == 0;
}

bool net_ssh_proxied(const struct net_policy *policy)
{
    return policy->mode == NET_MODE_ALLOWLIST || net_deny_reporter(policy);
}

int net_env_add(const struct net_policy *policy, char ***envp, struct cordon_error *err)
{
    if (env_add_secrets(policy, envp, err) < 0)
        return -1;
    if (policy->mode != NET_MODE_ALLOWLIST && !net_deny_reporter(policy))
        return 0;
    char http[64], socks[64];
    snprintf(http, sizeof(http), "http://127.0.0.1:%d", NET_PROXY_PORT);
    snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%d", NET_PROXY_PORT);
    const char *vars[][2] = {
        {"HTTP_PROXY", http},
        {"http_proxy", http},
        {"HTTPS_PROXY", http},
        {"https_proxy", http},
        {"ALL_PROXY", socks},
        {"all_proxy", socks},
        {"NO_PROXY", "localhost,127.0.0.1"},
        {"no_proxy", "localhost,127.0.0.1"},
        /* git over ssh takes the same road (docs/ssh.md): the agent that
         * is in every sandbox at that path tunnels through the proxy. */
        {"GIT_SSH_COMMAND", NET_GIT_SSH_COMMAND},
        /* With interception, every usual client trusts the bundle that
         * holds the session CA (go and most others read NET_CA_BUNDLE
         * itself). */
        {"SSL_CERT_FILE", NET_CA_BUNDLE},
        {"NODE_EXTRA_CA_CERTS", NET_CA_BUNDLE},
        {"REQUESTS_CA_BUNDLE", NET_CA_BUNDLE},
        {"CURL_CA_BUNDLE", NET_CA_BUNDLE},
        {"GIT_SSL_CAINFO", NET_CA_BUNDLE},
        {"PIP_CERT", NET_CA_BUNDLE},
        {"CARGO_HTTP_CAINFO", NET_CA_BUNDLE},
    };
    /* The CA variables are the last seven: only with interception. */
    size_t nvars = policy->tls_bundle ? ARRAY_SIZE(vars) : ARRAY_SIZE(vars) - 7;
    size_t n = 0;
    while ((*envp)[n])
        n++;
    char **env = realloc(*envp, (n + nvars + 1) * sizeof(char *));
    if (!env)
        return error_set(err, ENOMEM, "environment");
    *envp = env;
    for (size_t v = 0; v < nvars; v++) {
        size_t klen = strlen(vars[v][0]);
        /* The host's own proxy settings never reach inside. */
        for (size_t i = 0; i < n; i++) {
            if (strncmp(env[i], vars[v][0], klen) == 0 && env[i][klen] == '=') {
                free(env[i]);
                env[i] = env[--n];
                i--;
            }
        }
        if (asprintf(&env[n], "%s=%s", vars[v][0], vars[v][1]) < 0) {
            env[n] = NULL;
            return error_set(err, ENOMEM, "environment");
        }
        env[++n] = NULL;
    }
    return 0;
}

bool net_policy_intercepts(const struct net_policy *policy)
{
    return policy->mode == NET_MODE_ALLOWLIST &&
           (policy->secret_count > 0 || policy->http_rule_count > 0);
}

/* The proxy's TLS interception: the rules parsed, the session CA made and
 * its certificate appended to the sandbox's bundle (the key stays in this
 * process). */
static int tls_setup(const struct net_policy *policy, struct proxy_config *cfg,
                     struct tls_config *tc, struct cordon_error *err)
{
    if (!net_policy_intercepts(policy))
        return 0;
    if (!policy->tls_bundle) {
        if (policy->http_rule_count > 0)
            return error_set(err, ENOTSUP,
                             "network.http_rules: this backend offers no TLS interception");
        log_warn("network: [[secrets]] are put into plain http:// requests only on this backend "
                 "(it offers no TLS interception)");
        return 0;
    }
    struct http_rule *rules = calloc(policy->http_rule_count + 1, sizeof(*rules));
    if (!rules)
        return error_set(err, ENOMEM, "network");
    for (size_t i = 0; i < policy->http_rule_count; i++) {
        if (http_rule_parse(policy->http_rules[i], &rules[i], err) < 0)
            return -1;
    }
    *tc = (struct tls_config){.secrets = cfg->secrets,
                              .secret_count = cfg->secret_count,
                              .rules = rules,
                              .rule_count = policy->http_rule_count,
                              .ca_file = policy->ca_file,
                              .audit_fd = cfg->audit_fd,
                              .session_name = policy->session_name};
    struct tls_state *t;
    if (tls_start(tc, &t, err) < 0)
        return -1;
    _cleanup_free_ char *pem = tls_ca_pem(t, err);
    if (!pem)
        return -1;
    _cleanup_close_ int fd = open(policy->tls_bundle, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fs_write_all(fd, "\n", 1) < 0 || fs_write_all(fd, pem, strlen(pem)) < 0)
        return error_set(err, errno, "network: writing the session CA into %s", policy->tls_bundle);
    cfg->tls = t;
    cfg->tls_cfg = tc;
    return 0;
}

void net_session_init(struct net_session *s, const struct net_policy *policy)
{
    *s = (struct net_session){.policy = policy,
                              .proxy_pid = -1,
                              .pasta_pid = -1,
                              .report_fd = -1,
                              .pending_fd = -1,
                              .log_fds = {-1, -1}};
}

/* Child side of fork(): dies with the supervisor, starts with a clean signal
 * state and only the fds it needs (stderr for its warnings, KEEP, and fds 4
 * to LAST, which the caller placed). Returns KEEP's new number (3; 0 when
 * KEEP is -1), or -1 on failure. */
static int helper_child_setup(pid_t parent, int keep, int last)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        return -1;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
        return -1;
    if (keep >= 0) {
        if (keep != 3 && dup2(keep, 3) < 0)
            return -1;
        close_range(last >= 4 ? (unsigned)last + 1 : 4, ~0U, 0);
        return 3;
    }
    close_range(3, ~0U, 0);
    return 0;
}

static int start_pasta(struct net_session *s, pid_t sandbox_pid, struct cordon_error *err)
{
    /* pasta opens the tun device from inside the sandbox's user namespace,
     * where only our own uid counts: a root-only device cannot work. Fail
     * before anything runs inside, with what to do about it. */
    int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (tun < 0) {
        int e = errno;
        const char *fix = e == ENOENT ? "Load the tun module (modprobe tun)"
                                      : "Ask an administrator to give the device mode 0666 "
                                        "(Debian's default; udev rule KERNEL==\"tun\", "
                                        "MODE=\"0666\")";
        error_set(err, 0,
                  "network: open mode: cannot open /dev/net/tun: %s. pasta needs it readable "
                  "and writable by this user to create the sandbox's interface; nothing was "
                  "run. %s, or use --network allowlist or deny",
                  strerror(e), fix);
        err->errnum = e;
        return error_hint_doctor(err);
    }
    close(tun);
    char netns[64], userns[64];
    snprintf(netns, sizeof(netns), "/proc/%d/ns/net", sandbox_pid);
    snprintf(userns, sizeof(userns), "/proc/%d/ns/user", sandbox_pid);
    /* -t/-u none: nothing of the host is forwarded into the sandbox and no
     * sandbox port is opened on the host (published ports go through the
     * proxy, on the address the user chose). -T/-U none: no port of the
     * sandbox's loopback reaches the host's loopback. --no-map-gw: the
     * gateway address is the real gateway, not an alias for the host. */
    char *argv[] = {"pasta", "--config-net", "--foreground", "--quiet", "--netns",
                    netns,   "--userns",     userns,         "-t",      "none",
                    "-u",    "none",         "-T",           "none",    "-U",
                    "none",  "--no-map-gw",  NULL,           NULL,      NULL};
    if (geteuid() == 0) {
        /* pasta drops to "nobody" when started as root; it must keep the
         * uid that owns the sandbox's user namespace. */
        argv[17] = "--runas";
        argv[18] = "0";
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "network: fork for pasta");
    if (pid == 0) {
        if (helper_child_setup(parent, -1, -1) < 0)
            _exit(127);
        /* pasta (2023-03) fails with "Couldn't install signal handlers"
         * when SIGPIPE is already ignored. */
        signal(SIGPIPE, SIG_DFL);
        execvp("pasta", argv);
        fprintf(stderr, "cordon: network: cannot run pasta (Debian package passt): %s\n",
                strerror(errno));
        _exit(127);
    }
    s->pasta_pid = pid;
    return 0;
}

int net_publish_listen(const struct net_publish *pub, struct cordon_error *err)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, pub->bind, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons(pub->host_port);
        len = sizeof(*in);
    } else {
        inet_pton(AF_INET6, pub->bind, &in6->sin6_addr);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(pub->host_port);
        len = sizeof(*in6);
    }
    _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "network: publish %s:%u:%u: listening on the host", pub->bind,
                         pub->host_port, pub->guest_port);
    return TAKE_FD(fd);
}

/* network.upstream_proxy: "host:port" or "http://host:port", resolved
 * once here (the proxy's start), before the loop. */
static int upstream_setup(const struct net_policy *policy, struct proxy_config *cfg,
                          struct cordon_error *err)
{
    const char *text = policy->upstream_proxy;
    const char *hp = strncmp(text, "http://", 7) == 0 ? text + 7 : text;
    size_t len = strlen(hp);
    if (len > 0 && hp[len - 1] == '/')
        len--;
    char host[PROXY_HOST_MAX + 1];
    if (!proxy_split_authority(hp, len, 0, host, &cfg->upstream_port))
        return error_set(err, EINVAL, "network.upstream_proxy %s: expected host:port", text);
    if (net_resolve(host, policy->hosts_file, cfg->upstream_addrs, &cfg->upstream_count, err) < 0)
        return error_prefix(err, "network.upstream_proxy %s", text);
    snprintf(cfg->upstream_text, sizeof(cfg->upstream_text), "%.*s", (int)len, hp);
    cfg->upstream = true;
    return 0;
}

static volatile pid_t proxy_factory_pid = -1;

/* The proxy's SIGTERM (end of session): reap the factory so that it does
 * not linger as an orphan. Async-signal-safe calls only. */
static void proxy_on_sigterm(int sig)
{
    (void)sig;
    pid_t pid = proxy_factory_pid;
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    _exit(0);
}

int net_host_service_path(const char *dir, uint16_t port, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s/%u.sock", dir, port);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* A host service's listener in DIR (vm, docker): a unix socket only the
 * user reaches (mode 0600 in a 0700 directory), replacing a stale one. */
static int host_service_listen(const char *dir, uint16_t port, struct cordon_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (net_host_service_path(dir, port, sa.sun_path, sizeof(sa.sun_path)) < 0)
        return error_set(err, ENAMETOOLONG, "network.host_services: socket path %s/%u.sock", dir,
                         port);
    unlink(sa.sun_path);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "network.host_services: socket");
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "network.host_services: listening on %s", sa.sun_path);
    return TAKE_FD(fd);
}

/* The allowlist and network.no_proxy rules, and network.upstream_proxy.
 * Deny mode's refusing listener has no rule at all, whatever allow_hosts
 * says (a warning said it has no effect there). */
static int proxy_allow_rules(const struct net_policy *policy, struct allowlist *allow,
                             struct cordon_error *err)
{
    for (size_t i = 0; policy->mode != NET_MODE_DENY && i < policy->allow_count; i++) {
        if (allowlist_add(allow, policy->allow_hosts[i], err) < 0)
            return -1;
    }
    return allowlist_load_host_addresses(allow, err);
}

static int proxy_no_proxy_rules(const struct net_policy *policy, struct proxy_config *cfg,
                                struct cordon_error *err)
{
    for (size_t i = 0; i < policy->no_proxy_count; i++) {
        if (allowlist_add(cfg->no_proxy, policy->no_proxy[i], err) < 0)
            return error_prefix(err, "network.no_proxy");
    }
    if (policy->mode == NET_MODE_ALLOWLIST && policy->upstream_proxy &&
        upstream_setup(policy, cfg, err) < 0)
        return -1;
    return 0;
}

/* network.audit_log and the session's own network log. */
static int proxy_open_logs(const struct net_policy *policy, struct proxy_config *cfg,
                           struct cordon_error *err)
{
    if (policy->audit_log) {
        cfg->audit_fd = open(policy->audit_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (cfg->audit_fd < 0)
            return error_set(err, errno, "network: audit log %s", policy->audit_log);
    }
    if (policy->session_audit_log) {
        cfg->session_audit_fd = open(policy->session_audit_log,
                                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (cfg->session_audit_fd < 0)
            return error_set(err, errno, "network: session log %s", policy->session_audit_log);
    }
    return 0;
}

/* The sandbox's side: the namespace factory (ns backend) or LISTENER,
 * and the allowlist listener inside the sandbox. */
static int proxy_sandbox_side(const struct net_policy *policy, pid_t sandbox_pid, int listener,
                              struct netns_factory *factory, struct proxy_config *cfg,
                              struct cordon_error *err)
{
    if (sandbox_pid <= 0) {
        cfg->sandbox_listener = listener;
    } else if (netns_factory_start(sandbox_pid, factory, err) < 0) {
        return -1;
    }
    proxy_factory_pid = factory->pid;
    struct sigaction term = {.sa_handler = proxy_on_sigterm};
    sigaction(SIGTERM, &term, NULL);
    if (sandbox_pid > 0 && policy->mode == NET_MODE_OPEN &&
        netns_factory_wait_route(factory, ROUTE_TIMEOUT_MS, err) < 0)
        return -1;
    if (sandbox_pid > 0 && (policy->mode == NET_MODE_ALLOWLIST || net_deny_reporter(policy))) {
        cfg->sandbox_listener = netns_factory_listener(factory, NET_PROXY_PORT, err);
        if (cfg->sandbox_listener < 0)
            return -1;
    }
    return 0;
}

/* Published ports: a listener on the host each. */
static int proxy_publish_listeners(const struct net_policy *policy, pid_t sandbox_pid,
                                   const char *publish_dir, struct proxy_config *cfg,
                                   struct cordon_error *err)
{
    for (size_t i = 0; (sandbox_pid > 0 || publish_dir) && i < policy->publish_count; i++) {
        const struct net_publish *pub = &policy->publish[i];
        int fd = net_publish_listen(pub, err);
        if (fd < 0)
            return -1;
        cfg->publish[i].fd = fd;
        cfg->publish[i].guest_port = pub->guest_port;
        if (publish_dir &&
            snprintf(cfg->publish[i].connect_path, sizeof(cfg->publish[i].connect_path),
                     "%s/%zu.sock", publish_dir, i) >= (int)sizeof(cfg->publish[i].connect_path))
            return error_set(err, ENAMETOOLONG, "network: publish socket path %s", publish_dir);
        snprintf(cfg->publish[i].text, sizeof(cfg->publish[i].text), "published %s:%u -> %u",
                 pub->bind, pub->host_port, pub->guest_port);
        cfg->publish_count++;
    }
    return 0;
}

/* Host services: a listener inside at the host's address and port. */
static int proxy_host_service_listeners(const struct net_policy *policy, pid_t sandbox_pid,
                                        const char *host_service_dir, struct netns_factory *factory,
                                        struct proxy_config *cfg, struct cordon_error *err)
{
    for (size_t i = 0; (sandbox_pid > 0 || host_service_dir) && i < policy->host_service_count;
         i++) {
        uint16_t port = policy->host_services[i];
        struct proxy_publish *pub = &cfg->publish[cfg->publish_count];
        /* vm, docker: a socket in the directory, which the forwarder inside
         * reaches from its 127.0.0.1:PORT. */
        pub->fd = sandbox_pid > 0 ? netns_factory_listener(factory, port, err)
                                  : host_service_listen(host_service_dir, port, err);
        if (pub->fd < 0)
            return error_prefix(err, "network.host_services");
        pub->guest_port = port;
        pub->to_host = true;
        snprintf(pub->text, sizeof(pub->text), "host service 127.0.0.1:%u", port);
        cfg->publish_count++;
    }
    return 0;
}

/* The secrets' values last, once the namespace factory (which joins
 * the sandbox's namespaces) is forked: it never holds them. Only this
 * process and its resolver workers, in the host's namespaces, do. */
static int proxy_load_secrets(const struct net_policy *policy, struct proxy_secret *secrets,
                              struct proxy_config *cfg, struct cordon_error *err)
{
    for (size_t i = 0; policy->mode == NET_MODE_ALLOWLIST && i < policy->secret_count; i++) {
        if (proxy_secret_load(&policy->secrets[i], &secrets[i], err) < 0)
            return -1;
        cfg->secret_count++;
    }
    return 0;
}

/* The proxy process: everything up to the readiness report, then the loop.
 * Never returns. */
/* sandbox_pid > 0: the ns backend's sandbox (listener and published ports
 * through the namespace factory); otherwise LISTENER is the proxy's
 * listening socket (the vm backend's, on the host) and published ports are
 * not the proxy's business. */
/* publish_dir (docker): published port i is reached through the unix
 * socket publish_dir/i.sock, which the sandbox's forwarder listens on. */
/* logs: the two log fds opened at the start (a deferred proxy), or NULL
 * to open them here. */
static void proxy_main(const struct net_policy *policy, pid_t sandbox_pid, int listener,
                       const char *publish_dir, const char *host_service_dir, int ready_fd,
                       const int *logs)
{
    struct cordon_error err = {0};
    struct allowlist allow = {0};
    struct netns_factory factory = {.pid = -1, .sock = -1};
    struct proxy_config cfg = {.policy = policy,
                               .allow = &allow,
                               .sandbox_listener = -1,
                               .audit_fd = -1,
                               .session_audit_fd = -1,
                               .report_fd = -1};
    cfg.factory = &factory;

    if (proxy_allow_rules(policy, &allow, &err) < 0)
        goto fail;
    /* No core dump, no ptrace by another process of the user (inherited
     * by the namespace factory too). */
    prctl(PR_SET_DUMPABLE, 0);
    struct proxy_secret secrets[NET_MAX_SECRETS];
    cfg.secrets = secrets;
    struct allowlist no_proxy = {0};
    cfg.no_proxy = &no_proxy;
    struct tls_config tls_cfg;
    if (logs) {
        cfg.audit_fd = logs[0];
        cfg.session_audit_fd = logs[1];
    }
    if (proxy_no_proxy_rules(policy, &cfg, &err) < 0 ||
        (!logs && proxy_open_logs(policy, &cfg, &err) < 0) ||
        proxy_sandbox_side(policy, sandbox_pid, listener, &factory, &cfg, &err) < 0 ||
        proxy_publish_listeners(policy, sandbox_pid, publish_dir, &cfg, &err) < 0 ||
        proxy_host_service_listeners(policy, sandbox_pid, host_service_dir, &factory, &cfg, &err) <
            0 ||
        proxy_load_secrets(policy, secrets, &cfg, &err) < 0 ||
        tls_setup(policy, &cfg, &tls_cfg, &err) < 0)
        goto fail;
    /* Ready: an empty error. */
    if (write(ready_fd, &err, sizeof(err)) != (ssize_t)sizeof(err))
        _exit(1);
    /* The same socket then carries the refusal reports. */
    cfg.report_fd = ready_fd;
    proxy_run(&cfg, &err);
    log_error("%s", err.message);
    _exit(1);
fail:
    /* An empty message means "ready" to the supervisor. */
    if (!err.message[0])
        error_set(&err, EIO, "network: the proxy could not start");
    if (write(ready_fd, &err, sizeof(err)) < 0)
        _exit(1);
    _exit(1);
}

/* Forks the proxy; its readiness is read by proxy_wait_ready (the caller
 * may do other work while it readies itself). */
static int start_proxy_fork(struct net_session *s, pid_t sandbox_pid, int listener,
                            const char *publish_dir, struct cordon_error *err)
{
    /* Readiness, then refusal reports (net/denial.h): one record per
     * packet. */
    int pipefd[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pipefd) < 0)
        return error_set(err, errno, "network: socketpair");
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return error_set(err, e, "network: fork the proxy");
    }
    if (pid == 0) {
        /* The readiness pipe becomes fd 3, the listener (if any) fd 4, the
         * logs opened at the start (a deferred proxy) 5 and 6: every
         * source copied up first, as one may sit at one of those. */
        bool logs = s->log_fds[0] >= 0 || s->log_fds[1] >= 0;
        int from[4] = {pipefd[1], listener, logs ? s->log_fds[0] : -1, logs ? s->log_fds[1] : -1};
        int up[4];
        for (int i = 0; i < 4; i++) {
            up[i] = from[i] >= 0 ? fcntl(from[i], F_DUPFD_CLOEXEC, 100) : -1;
            if (from[i] >= 0 && up[i] < 0)
                _exit(1);
        }
        for (int i = 0; i < 4; i++) {
            if (up[i] >= 0 ? dup2(up[i], 3 + i) < 0 : (close(3 + i), false))
                _exit(1);
        }
        if (helper_child_setup(parent, 3, logs ? 6 : 4) < 0)
            _exit(1);
        int fixed_logs[2] = {up[2] >= 0 ? 5 : -1, up[3] >= 0 ? 6 : -1};
        proxy_main(s->policy, sandbox_pid, listener >= 0 ? 4 : -1, publish_dir, s->host_service_dir,
                   3, logs ? fixed_logs : NULL);
    }
    close(pipefd[1]);
    s->proxy_pid = pid;
    s->report_fd = pipefd[0];
    s->starting = true;
    return 0;
}

/* Reads the forked proxy's readiness: an empty error, or what failed. */
static int proxy_wait_ready(struct net_session *s, struct cordon_error *err)
{
    if (!s->starting)
        return 0;
    s->starting = false;
    struct cordon_error child_err;
    ssize_t n;
    do {
        n = read(s->report_fd, &child_err, sizeof(child_err));
    } while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(child_err) && !child_err.message[0])
        return 0;
    close(s->report_fd);
    s->report_fd = -1;
    if (n != (ssize_t)sizeof(child_err))
        return error_set(err, n < 0 ? errno : EPROTO, "network: the proxy died while starting");
    child_err.message[sizeof(child_err.message) - 1] = '\0';
    *err = child_err;
    return -1;
}

static int start_proxy(struct net_session *s, pid_t sandbox_pid, int listener,
                       const char *publish_dir, struct cordon_error *err)
{
    if (start_proxy_fork(s, sandbox_pid, listener, publish_dir, err) < 0)
        return -1;
    return proxy_wait_ready(s, err);
}

int net_on_namespaces_ready(pid_t sandbox_pid, void *ctx, struct cordon_error *err)
{
    struct net_session *s = ctx;
    const struct net_policy *policy = s->policy;
    if (policy->mode == NET_MODE_OPEN && start_pasta(s, sandbox_pid, err) < 0)
        goto fail;
    if (s->defer) {
        /* What would stop the proxy's start stops this one: its logs,
         * opened now and handed to the proxy when it starts. */
        struct proxy_config logs = {.audit_fd = -1, .session_audit_fd = -1};
        int rc = proxy_open_logs(policy, &logs, err);
        s->log_fds[0] = logs.audit_fd;
        s->log_fds[1] = logs.session_audit_fd;
        if (rc < 0)
            goto fail;
        log_debug("network: %s mode; the refusing proxy starts on the first connection",
                  net_mode_name(policy->mode));
        return 0;
    }
    if (policy->mode != NET_MODE_DENY || policy->publish_count > 0 ||
        policy->host_service_count > 0 || net_deny_reporter(policy)) {
        /* Not waited for here: the proxy readies itself (its namespace
         * factory, its listeners inside) while the sandbox's child builds
         * its view; net_wait_ready waits before the command may run. */
        if (start_proxy_fork(s, sandbox_pid, -1, NULL, err) < 0)
            goto fail;
    }
    log_debug("network: %s mode%s", net_mode_name(policy->mode),
              policy->publish_count ? ", ports published" : "");
    return 0;
fail:
    net_session_stop(s);
    return -1;
}

void net_session_defer(int fd, void *ctx)
{
    struct net_session *s = ctx;
    if (s->pending_fd >= 0)
        close(s->pending_fd);
    s->pending_fd = fd;
}

int net_session_pending_fd(const struct net_session *s)
{
    return s ? s->pending_fd : -1;
}

static void close_logs(struct net_session *s)
{
    for (int i = 0; i < 2; i++) {
        if (s->log_fds[i] >= 0)
            close(s->log_fds[i]);
        s->log_fds[i] = -1;
    }
}

void net_session_start_pending(struct net_session *s)
{
    if (!s || s->pending_fd < 0)
        return;
    int listener = s->pending_fd;
    s->pending_fd = -1;
    struct cordon_error err = {0};
    if (start_proxy(s, 0, listener, NULL, &err) < 0)
        log_warn("%s; the sandbox's connections are refused without cordon's explanation",
                 err.message);
    else
        log_debug("network: the refusing proxy started (pid %d) on the first connection",
                  s->proxy_pid);
    /* The proxy holds its own copies; a proxy that failed leaves none, and
     * the kernel refuses what comes next. */
    close(listener);
    close_logs(s);
}

int net_wait_ready(void *ctx, struct cordon_error *err)
{
    struct net_session *s = ctx;
    if (proxy_wait_ready(s, err) < 0) {
        net_session_stop(s);
        return -1;
    }
    return 0;
}

static void stop_child(pid_t *pid, int sig)
{
    if (*pid <= 0)
        return;
    kill(*pid, sig);
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
        ;
    *pid = -1;
}

char *net_session_ca_pem(const struct net_policy *policy, struct cordon_error *err)
{
    /* The proxy appended "\n" and one PEM certificate (some 700 bytes)
     * last: the tail of the file holds it whole. */
    enum { TAIL = 8192 };
    static const char begin[] = "-----BEGIN CERTIFICATE-----";
    static const char end[] = "-----END CERTIFICATE-----";
    if (!policy->tls_bundle) {
        error_set(err, EINVAL, "TLS: no session bundle");
        return NULL;
    }
    _cleanup_close_ int fd = open(policy->tls_bundle, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        error_set(err, errno, "TLS: %s", policy->tls_bundle);
        return NULL;
    }
    off_t from = st.st_size > TAIL ? st.st_size - TAIL : 0;
    _cleanup_free_ char *buf = malloc(TAIL + 1);
    ssize_t n = buf ? pread(fd, buf, TAIL, from) : -1;
    if (n < 0) {
        error_set(err, buf ? errno : ENOMEM, "TLS: reading %s", policy->tls_bundle);
        return NULL;
    }
    buf[n] = '\0';
    char *last = NULL;
    for (char *p = buf; (p = strstr(p, begin)); p++)
        last = p;
    char *stop = last ? strstr(last, end) : NULL;
    if (!stop) {
        error_set(err, ENOENT, "TLS: the session CA is not in %s", policy->tls_bundle);
        return NULL;
    }
    char *pem = strndup(last, (size_t)(stop - last) + strlen(end));
    if (!pem)
        error_set(err, ENOMEM, "TLS");
    return pem;
}

int net_start_proxy_on(struct net_session *s, int listener, struct cordon_error *err)
{
    return start_proxy(s, 0, listener, NULL, err);
}

int net_start_proxy_unix(struct net_session *s, int listener, const char *publish_dir,
                         struct cordon_error *err)
{
    return start_proxy(s, 0, listener, publish_dir, err);
}

void net_session_kill(struct net_session *s)
{
    if (s->pending_fd >= 0) {
        close(s->pending_fd);
        s->pending_fd = -1;
    }
    /* An unreaped child's pid stays ours: a second signal cannot reach
     * another process. */
    if (s->proxy_pid > 0)
        kill(s->proxy_pid, SIGKILL);
    if (s->pasta_pid > 0)
        kill(s->pasta_pid, SIGTERM);
}

void net_session_reap(struct net_session *s)
{
    /* The proxy gets SIGKILL: it keeps nothing to flush (its records are
     * written as they happen), and its namespace factory and resolvers die
     * with it (their parent-death signal), so the session's end waits for
     * one exit instead of the proxy's handler, its kill of the factory and
     * that reap in turn. */
    stop_child(&s->proxy_pid, SIGKILL);
    stop_child(&s->pasta_pid, SIGTERM);
}

void net_session_stop(struct net_session *s)
{
    s->starting = false;
    close_logs(s);
    if (s->pending_fd >= 0) {
        close(s->pending_fd);
        s->pending_fd = -1;
    }
    if (s->report_fd >= 0) {
        close(s->report_fd);
        s->report_fd = -1;
    }
    net_session_reap(s);
}
