/* The vm backend's network, host side (see vm-net.h for the modes). Runs in
 * the supervisor; passt, the proxy and the port relay are its children,
 * each dying with it (PR_SET_PDEATHSIG). The relay treats everything from
 * the guest as untrusted (net/vmux.c): the guest can only open connections
 * to the proxy, which checks each destination, and can only answer
 * connections the host made to a published port. */
#include "backend/vm/vm-net.h"
#include "util/cleanup.h"
#include "util/proc.h"
#include "util/log.h"
#include "confine/privs.h"
#include "util/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROXY_SOCKET     "proxy"
#define HOST_SERVICE_DIR "hs"

/* The allowlist proxy (or deny mode's refusing one) is reached at the
 * guest's 127.0.0.1:NET_PROXY_PORT. */
static bool vm_net_wants_proxy(const struct net_policy *policy)
{
    return policy->mode == NET_MODE_ALLOWLIST || net_deny_reporter(policy);
}

void vm_net_init(struct vm_net *n, const struct net_policy *policy)
{
    *n = (struct vm_net){.policy = policy, .passt_qemu_fd = -1, .passt_pid = -1, .relay_pid = -1};
    for (size_t i = 0; i < VMUX_MAX_PORTS; i++)
        n->listen[i] = n->fds[i] = -1;
    n->proxy = policy->session ? policy->session : &n->own_proxy;
    net_session_init(n->proxy, policy);
    n->n_out = vm_net_wants_proxy(policy) || policy->host_service_count > 0 ? VM_NET_OUT_PORTS : 0;
    n->n_in = policy->publish_count > 0 ? VM_NET_IN_PORTS : 0;
}

void vm_net_port_names(const struct vm_net *n, size_t i, char *id, size_t idsize, char *name,
                       size_t namesize)
{
    bool out = i < n->n_out;
    size_t k = out ? i : i - n->n_out;
    snprintf(id, idsize, "%s%zu", out ? "o" : "i", k);
    snprintf(name, namesize, "cordon.%s.%zu", out ? "out" : "in", k);
}

static int unix_listen(const char *path, struct cordon_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "vm: socket path %s", path);
    unlink(path);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "vm: socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
        listen(fd, 64) < 0)
        return error_set(err, errno, "vm: listening on %s", path);
    return TAKE_FD(fd);
}

/* The host's IPv4 default route: its interface's address, prefix and the
 * gateway. passt and the guest are given the same values (no DHCP client in
 * the guest), which are the ones passt would copy from the host itself. */
static int host_default_route(struct vm_net *n, struct cordon_error *err)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/net/route", "re");
    char line[256], ifname[IF_NAMESIZE + 1] = "";
    unsigned dest, gw = 0, flags, mask;
    bool found = false;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%16s %x %x %x %*d %*d %*d %x", ifname, &dest, &gw, &flags, &mask) == 5 &&
            dest == 0 && mask == 0 && (flags & 0x2 /* RTF_GATEWAY */)) {
            found = true;
            break;
        }
    }
    if (!found)
        return error_set(err, ENETUNREACH,
                         "network open on the vm backend: the host has no IPv4 default route");
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) < 0)
        return error_set(err, errno, "network: getifaddrs");
    found = false;
    for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || strcmp(a->ifa_name, ifname) != 0)
            continue;
        struct in_addr addr = ((struct sockaddr_in *)a->ifa_addr)->sin_addr;
        uint32_t m = a->ifa_netmask ? ntohl(((struct sockaddr_in *)a->ifa_netmask)->sin_addr.s_addr)
                                    : 0xffffff00u;
        inet_ntop(AF_INET, &addr, n->addr, sizeof(n->addr));
        n->prefix = __builtin_popcount(m);
        found = true;
        break;
    }
    freeifaddrs(ifa);
    if (!found)
        return error_set(err, EADDRNOTAVAIL, "network: %s has no IPv4 address", ifname);
    struct in_addr g = {.s_addr = gw}; /* /proc/net/route: network byte order, as hex */
    inet_ntop(AF_INET, &g, n->gw, sizeof(n->gw));
    return 0;
}

/* passt on one end of a socketpair (QEMU gets the other, -netdev stream):
 * no port forwarded either way (-t/-u none; published ports go through
 * cordon's relay), --no-map-gw: the gateway address is the real gateway,
 * not an alias for the host's loopback. passt drops to "nobody" when
 * started as root. */
static bool in_path(const char *name)
{
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = strdup(path ? path : "/usr/bin:/bin");
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        char bin[PATH_MAX];
        if (snprintf(bin, sizeof(bin), "%s/%s", d, name) < (int)sizeof(bin) &&
            access(bin, X_OK) == 0)
            return true;
    }
    return false;
}

static int start_passt(struct vm_net *n, const char *dir, struct cordon_error *err)
{
    if (!in_path("passt"))
        return error_set(err, ENOENT,
                         "network open on the vm backend needs passt (Debian package passt)");
    if (host_default_route(n, err) < 0)
        return -1;
    char log[PATH_MAX], prefix[8];
    snprintf(log, sizeof(log), "%s/passt.log", dir);
    snprintf(prefix, sizeof(prefix), "%d", n->prefix);
    char *argv[] = {"passt", "--foreground", "--quiet", "--one-off", "--ipv4-only", "--fd",
                    "3",     "--log-file",   log,       "--address", n->addr,       "--netmask",
                    prefix,  "--gateway",    n->gw,     "-t",        "none",        "-u",
                    "none",  "--no-map-gw",  NULL};
    int sv[2];
    pid_t pid = proc_fork_tied(sv, SOCK_STREAM, "network: passt", err);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* passt's messages go to its log file; before it opens that, it
         * talks to syslog and stderr ("Don't run as root..."). */
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
            dup2(sv[1], 3) < 0)
            _exit(127);
        close_range(4, ~0U, 0);
        execvpe("passt", argv, privs_helper_environ());
        _exit(127);
    }
    close(sv[1]);
    n->passt_pid = pid;
    n->passt_qemu_fd = sv[0];
    return 0;
}

/* The proxy, before the guest boots: with TLS interception it makes the
 * session CA, which the boot spec carries (the guest's bundle must hold
 * it before anything runs there). */
static int start_proxy(struct vm_net *n, const char *dir, struct cordon_error *err)
{
    _cleanup_close_ int listener = -1;
    if (vm_net_wants_proxy(n->policy)) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" PROXY_SOCKET, dir);
        listener = unix_listen(path, err);
        /* The proxy's loop accepts until EAGAIN. */
        if (listener < 0 || fcntl(listener, F_SETFL, O_NONBLOCK) < 0)
            return err->message[0] ? -1 : error_set(err, errno, "vm: proxy listener");
    }
    if (n->policy->host_service_count > 0) {
        if (snprintf(n->host_service_dir, sizeof(n->host_service_dir), "%s/" HOST_SERVICE_DIR,
                     dir) >= (int)sizeof(n->host_service_dir))
            return error_set(err, ENAMETOOLONG, "vm: %s/" HOST_SERVICE_DIR, dir);
        if (mkdir(n->host_service_dir, 0700) < 0 && errno != EEXIST)
            return error_set(err, errno, "vm: creating %s", n->host_service_dir);
        n->proxy->host_service_dir = n->host_service_dir;
    }
    if (net_start_proxy_on(n->proxy, listener, err) < 0)
        return err->message[0] ? -1 : error_set(err, errno, "vm: starting the proxy");
    if (n->policy->tls_bundle && net_policy_intercepts(n->policy)) {
        n->ca_pem = net_session_ca_pem(n->policy, err);
        if (!n->ca_pem)
            return error_prefix(err, "network");
    }
    return 0;
}

int vm_net_prepare(struct vm_net *n, const char *dir, struct cordon_error *err)
{
    for (size_t i = 0; i < n->n_out + n->n_in; i++) {
        char id[16], name[32], path[PATH_MAX];
        vm_net_port_names(n, i, id, sizeof(id), name, sizeof(name));
        snprintf(path, sizeof(path), "%s/%s", dir, id);
        n->listen[i] = unix_listen(path, err);
        if (n->listen[i] < 0)
            return -1;
    }
    if (n->policy->mode == NET_MODE_OPEN && start_passt(n, dir, err) < 0)
        return -1;
    if (n->n_out > 0 && start_proxy(n, dir, err) < 0)
        return -1;
    return 0;
}

int vm_net_accept(struct vm_net *n, long long deadline_ms, struct cordon_error *err)
{
    for (size_t i = 0; i < n->n_out + n->n_in; i++) {
        struct pollfd p = {n->listen[i], POLLIN, 0};
        long long left = deadline_ms - clock_now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return error_set(err, ETIMEDOUT, "vm: QEMU did not connect its network ports");
        n->fds[i] = accept4(n->listen[i], NULL, NULL, SOCK_CLOEXEC);
        if (n->fds[i] < 0)
            return error_set(err, errno, "vm: accept");
        close(n->listen[i]);
        n->listen[i] = -1;
    }
    return 0;
}

json_t *vm_net_spec(const struct vm_net *n)
{
    if (n->policy->mode == NET_MODE_DENY && n->n_out + n->n_in == 0)
        return NULL;
    /* proxy_port 0: the out ports carry host services only. */
    json_t *spec = json_pack("{s:s,s:I,s:I,s:I}", "mode", net_mode_name(n->policy->mode), "out",
                             (json_int_t)n->n_out, "in", (json_int_t)n->n_in, "proxy_port",
                             (json_int_t)(vm_net_wants_proxy(n->policy) ? NET_PROXY_PORT : 0));
    if (spec && n->policy->host_service_count > 0) {
        json_t *ports = json_array();
        for (size_t i = 0; ports && i < n->policy->host_service_count; i++)
            json_array_append_new(ports, json_integer(n->policy->host_services[i]));
        json_object_set_new(spec, "host_services", ports);
    }
    /* The guest binds its bundle with this CA over ca_bundle. */
    if (spec && n->ca_pem) {
        json_object_set_new(spec, "ca", json_string(n->ca_pem));
        json_object_set_new(spec, "ca_bundle", json_string(NET_CA_BUNDLE));
    }
    if (spec && n->policy->mode == NET_MODE_OPEN) {
        json_object_set_new(spec, "addr", json_string(n->addr));
        json_object_set_new(spec, "gw", json_string(n->gw));
        json_object_set_new(spec, "prefix", json_integer(n->prefix));
    }
    return spec;
}

struct relay_ctx {
    char proxy_path[PATH_MAX]; /* empty: no proxy listener */
    const struct net_policy *policy;
    const char *host_service_dir;
};

/* Host side of an out port: the guest opened a connection and named a
 * port (the guest is not trusted on it): a listed host service's goes to
 * the proxy's socket for that port, any other to the proxy's listener. */
static int relay_connect(struct vmux *m, uint16_t port, void *ctx)
{
    (void)m;
    const struct relay_ctx *c = ctx;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = c->proxy_path;
    char hs[PATH_MAX];
    for (size_t i = 0; i < c->policy->host_service_count; i++) {
        if (c->policy->host_services[i] == port) {
            if (net_host_service_path(c->host_service_dir, port, hs, sizeof(hs)) < 0)
                return -1;
            path = hs;
        }
    }
    if (!path[0] || strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* A blocking connect: the proxy accepts at once (AF_UNIX has no
     * connect in progress to wait for otherwise). */
    return vmux_connect_local((struct sockaddr *)&sa, sizeof(sa));
}

static bool fd_kept(int fd, const int *keep, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (keep[i] == fd)
            return true;
    }
    return false;
}

static int start_relay(struct vm_net *n, const char *dir, struct cordon_error *err)
{
    int pub[NET_MAX_PUBLISH];
    size_t npub = 0;
    for (size_t i = 0; i < n->policy->publish_count; i++) {
        pub[npub] = net_publish_listen(&n->policy->publish[i], err);
        if (pub[npub] < 0) {
            for (size_t k = 0; k < npub; k++)
                close(pub[k]);
            return -1;
        }
        npub++;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        for (size_t k = 0; k < npub; k++)
            close(pub[k]);
        return error_set(err, e, "network: fork for the port relay");
    }
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(1);
        prctl(PR_SET_NAME, "cordon-vmrelay");
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* Nothing of the supervisor's but the ports and listeners: holding
         * the agent's channel or the client's pipes would keep them open. */
        int keep[VMUX_MAX_PORTS + NET_MAX_PUBLISH + 1];
        size_t nkeep = 0;
        keep[nkeep++] = 2;
        for (size_t i = 0; i < n->n_out + n->n_in; i++)
            keep[nkeep++] = n->fds[i];
        for (size_t i = 0; i < npub; i++)
            keep[nkeep++] = pub[i];
        for (int fd = 3; fd < 4096; fd++) {
            if (!fd_kept(fd, keep, nkeep))
                close(fd);
        }
        static struct vmux mux;
        static struct relay_ctx ctx;
        if (vm_net_wants_proxy(n->policy))
            snprintf(ctx.proxy_path, sizeof(ctx.proxy_path), "%s/" PROXY_SOCKET, dir);
        ctx.policy = n->policy;
        ctx.host_service_dir = n->host_service_dir;
        struct cordon_error e;
        vmux_init(&mux, relay_connect, &ctx);
        for (size_t i = 0; i < n->n_out + n->n_in; i++) {
            if (vmux_add_port(&mux, n->fds[i], i >= n->n_out, &e) < 0)
                _exit(1);
        }
        for (size_t i = 0; i < npub; i++) {
            if (vmux_add_listener(&mux, pub[i], n->policy->publish[i].guest_port, &e) < 0)
                _exit(1);
        }
        vmux_run(&mux);
        _exit(0);
    }
    for (size_t k = 0; k < npub; k++)
        close(pub[k]);
    n->relay_pid = pid;
    return 0;
}

int vm_net_start(struct vm_net *n, const char *dir, struct cordon_error *err)
{
    if (n->n_out + n->n_in > 0 && start_relay(n, dir, err) < 0)
        return -1;
    log_debug("vm: network %s mode%s", net_mode_name(n->policy->mode),
              n->policy->publish_count ? ", ports published" : "");
    return 0;
}

static void reap(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGKILL);
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
        ;
    *pid = -1;
}

void vm_net_stop(struct vm_net *n)
{
    reap(&n->relay_pid);
    reap(&n->passt_pid);
    if (n->proxy)
        net_session_stop(n->proxy);
    free(n->ca_pem);
    n->ca_pem = NULL;
    for (size_t i = 0; i < VMUX_MAX_PORTS; i++) {
        if (n->listen[i] >= 0)
            close(n->listen[i]);
        if (n->fds[i] >= 0)
            close(n->fds[i]);
        n->listen[i] = n->fds[i] = -1;
    }
    if (n->passt_qemu_fd >= 0)
        close(n->passt_qemu_fd);
    n->passt_qemu_fd = -1;
}
