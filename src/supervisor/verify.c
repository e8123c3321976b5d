/* The audit behind `cordon verify` and sandbox_verify (verify.h). Host
 * context, unprivileged supervisor. Each check turns observations into one
 * row: PASS, FAIL, WARN (allowed, but weaker than the default) or SKIP (not
 * applicable here, with the reason), and the evidence: what was probed and
 * what was seen. */
#include "supervisor/verify.h"
#include "proto/init-channel.h"
#include "confine/landlock.h"
#include "net/denial.h"
#include "supervisor/environ.h"
#include "supervisor/gitguard.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/file.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

extern char **environ;

#define PROBE_MARKER  "CORDON-PROBE "
#define MAX_LISTENERS 4
/* How long the proxy keeps quiet about the probe's targets. */
#define VERIFY_PROXY_QUIET_S 60
/* What the probe creates at each guarded git directory's top level. */
#define VERIFY_PLANT_NAME "cordon-verify-planted"

static const char *const sentinel_names[] = {
    "DOCKER_HOST",  "DOCKER_CONTEXT",         "COMPOSE_PROJECT_NAME",
    "COMPOSE_FILE", "CORDON_VERIFY_SENTINEL",
};

static const char *const ns_names[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};

static const char *const docker_socket_paths[] = {
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
};

struct listener {
    int fd;
    char addr[INET_ADDRSTRLEN];
    int port;
};

struct verify_run {
    char *name;
    char *state_dir; /* NULL: a host session, no lock to check */
    const char *pid1_comm;
    const char *probe_via; /* how the probe was started, for the evidence */
    const struct launch *l;
    pid_t agent_pid;
    /* The agent's /proc/<pid>/environ, read with its other host-side facts
     * (a probe process does not outlive its answer). */
    int agent_env_rc;
    char agent_env_flagged[512];
    json_t *host;    /* host-side facts, for the evidence */
    json_t *request; /* what the probe was asked */
    struct listener listeners[MAX_LISTENERS];
    size_t nlisteners;
    json_t *checks;
    json_t *host_names; /* host path of each host_paths id */
};

void verify_inject_sentinels(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(sentinel_names); i++)
        setenv(sentinel_names[i], VERIFY_SENTINEL_VALUE, 1);
    setenv(VERIFY_PROBE_VAR, VERIFY_SENTINEL_VALUE, 1);
}

static bool sentinels_injected(void)
{
    const char *v = getenv("CORDON_VERIFY_SENTINEL");
    return v && strcmp(v, VERIFY_SENTINEL_VALUE) == 0;
}

/* --- rows --- */

static void row(struct verify_run *r, const char *check, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void row(struct verify_run *r, const char *check, const char *status, const char *fmt, ...)
{
    char evidence[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(evidence, sizeof(evidence), fmt, ap);
    va_end(ap);
    json_array_append_new(r->checks, json_pack("{s:s, s:s, s:s}", "check", check, "status", status,
                                               "evidence", evidence));
}

/* Appends to a bounded evidence buffer. */
static void add(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

static const char *str(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "?";
}

/* --- host-side facts --- */

static pid_t pid_of_pidfd(int pidfd)
{
    char path[64], line[128];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "Pid:", 4) == 0)
            return (pid_t)strtol(line + 4, NULL, 10);
    }
    return -1;
}

static json_t *read_status(pid_t pid)
{
    static const char *const keys[] = {"Seccomp", "Seccomp_filters", "NoNewPrivs", "CapInh",
                                       "CapPrm",  "CapEff",          "CapBnd",     "CapAmb"};
    char path[64], line[256];
    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/status");
    json_t *o = json_object();
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            if (strcmp(line, keys[i]) == 0) {
                char *v = colon + 1 + strspn(colon + 1, " \t");
                v[strcspn(v, "\n")] = '\0';
                json_object_set_new(o, keys[i], json_string(v));
            }
        }
    }
    return o;
}

static json_t *read_namespaces(pid_t pid)
{
    json_t *o = json_object();
    for (size_t i = 0; i < ARRAY_SIZE(ns_names); i++) {
        char path[64], link[64];
        if (pid > 0)
            snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns_names[i]);
        else
            snprintf(path, sizeof(path), "/proc/self/ns/%s", ns_names[i]);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        if (n > 0)
            json_object_set_new(o, ns_names[i], json_string(link));
    }
    return o;
}

/* The first line of a small file, or "" (boot_id, comm). */
static void read_line(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (f && fgets(out, (int)size, f))
        out[strcspn(out, "\n")] = '\0';
}

static json_t *read_kernel(void)
{
    char boot_id[64];
    read_line("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));
    struct utsname u;
    if (uname(&u) < 0)
        return json_pack("{s:s}", "boot_id", boot_id);
    return json_pack("{s:s, s:s, s:s}", "boot_id", boot_id, "release", u.release, "version",
                     u.version);
}

static json_t *read_comm(pid_t pid)
{
    char path[64], comm[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    read_line(path, comm, sizeof(comm));
    return json_string(comm);
}

static bool name_is_flagged(const char *name, size_t len)
{
    if ((len > 7 && strncmp(name, "DOCKER_", 7) == 0) ||
        (len > 8 && strncmp(name, "COMPOSE_", 8) == 0))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(sentinel_names); i++) {
        if (strlen(sentinel_names[i]) == len && strncmp(sentinel_names[i], name, len) == 0)
            return true;
    }
    return false;
}

/* Flagged names in a NULL-terminated KEY=VALUE array, comma-separated. */
static void flagged_in(char *const *env, char *out, size_t size, bool *probe_var)
{
    out[0] = '\0';
    for (size_t i = 0; env && env[i]; i++) {
        size_t nlen = strcspn(env[i], "=");
        if (name_is_flagged(env[i], nlen))
            add(out, size, "%s%.*s", out[0] ? "," : "", (int)nlen, env[i]);
        if (probe_var && nlen == strlen(VERIFY_PROBE_VAR) &&
            strncmp(env[i], VERIFY_PROBE_VAR, nlen) == 0)
            *probe_var = true;
    }
}

/* The agent's environment as the kernel holds it, read from the host. */
static int agent_environ_flagged(pid_t pid, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    static char buf[262144];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    out[0] = '\0';
    for (ssize_t off = 0; off < n;) {
        const char *e = buf + off;
        size_t elen = strlen(e);
        size_t nlen = strcspn(e, "=");
        if (name_is_flagged(e, nlen))
            add(out, size, "%s%.*s", out[0] ? "," : "", (int)nlen, e);
        off += (ssize_t)elen + 1;
    }
    return 0;
}

static int open_listener(struct verify_run *r, const char *addr)
{
    if (r->nlisteners >= MAX_LISTENERS)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    socklen_t len = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct listener *ls = &r->listeners[r->nlisteners++];
    ls->fd = fd;
    snprintf(ls->addr, sizeof(ls->addr), "%s", addr);
    ls->port = ntohs(sa.sin_port);
    return 0;
}

/* The host's own non-loopback IPv4 address (the first one), so the probe
 * also tries the route a sandbox with a network device would take. */
static bool host_ipv4(char *out, size_t size)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) < 0)
        return false;
    bool found = false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if ((ntohl(a.s_addr) >> 24) == 127)
            continue;
        found = inet_ntop(AF_INET, &a, out, (socklen_t)size) != NULL;
    }
    freeifaddrs(ifs);
    return found;
}

static bool path_is_ancestor_of(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    return path && strncmp(dir, path, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* secret: checked even when configuration mounts it (a mount of ~/.ssh is
 * exactly what this check exists to catch). named: the probe is told the
 * path; otherwise only the identity and an index into names, so that the
 * audit does not itself tell the sandbox what the host's home holds. */
static void add_host_path(const struct launch *l, json_t *list, json_t *names, const char *path,
                          bool secret, bool named)
{
    struct stat st;
    if (json_array_size(list) >= 48 || lstat(path, &st) < 0)
        return;
    /* The workspace and configured mounts are meant to be seen inside,
     * and so are the directories above them. */
    if (path_is_ancestor_of(path, l->ws.root) && !secret)
        return;
    for (size_t i = 0; i < l->cfg.mounts.count && !secret; i++) {
        if (path_is_ancestor_of(path, l->mounts[i].host_path))
            return;
    }
    /* The agent binary and linked worktrees' git metadata are bound in on
     * purpose too. */
    if (!secret && path_is_ancestor_of(path, l->agent_path))
        return;
    for (size_t i = 0; l->git_dirs[i] && !secret; i++) {
        if (path_is_ancestor_of(path, l->git_dirs[i]))
            return;
    }
    json_t *entry = json_pack("{s:I, s:I, s:I}", "id", (json_int_t)json_array_size(names), "dev",
                              (json_int_t)st.st_dev, "ino", (json_int_t)st.st_ino);
    if (named)
        json_object_set_new(entry, "path", json_string(path));
    json_array_append_new(list, entry);
    json_array_append_new(names, json_string(path));
}

/* Home, its secrets, root's home and the shadow file; plus what the home
 * directory holds, by identity (device and inode): the sandbox's own home
 * at the same path is a different file. */
static json_t *host_paths(const struct launch *l, json_t *names)
{
    json_t *list = json_array();
    const char *home = getenv("HOME");
    char path[PATH_MAX];
    if (home && home[0] == '/') {
        add_host_path(l, list, names, home, false, true);
        static const char *const secrets[] = {".ssh",   ".docker", ".aws",
                                              ".gnupg", ".kube",   ".config/gcloud"};
        for (size_t i = 0; i < ARRAY_SIZE(secrets); i++) {
            snprintf(path, sizeof(path), "%s/%s", home, secrets[i]);
            add_host_path(l, list, names, path, true, true);
        }
    }
    add_host_path(l, list, names, "/root", false, true);
    add_host_path(l, list, names, "/etc/shadow", true, true);
    add_host_path(l, list, names, "/etc/gshadow", true, true);
    if (home && home[0] == '/') {
        _cleanup_closedir_ DIR *d = opendir(home);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", home, de->d_name);
            add_host_path(l, list, names, path, false, false);
        }
    }
    return list;
}

void verify_set_agent(struct verify_run *r, int pidfd)
{
    pid_t pid = pidfd >= 0 ? pid_of_pidfd(pidfd) : -1;
    r->agent_pid = pid;
    /* pid 0 would read this process's own files. */
    json_object_set_new(r->host, "agent_status", pid > 0 ? read_status(pid) : json_object());
    json_object_set_new(r->host, "agent_ns", pid > 0 ? read_namespaces(pid) : json_object());
    json_object_set_new(r->host, "agent_pid", json_integer(pid));
    json_object_set_new(r->host, "agent_comm", pid > 0 ? read_comm(pid) : json_string(""));
    /* On the vm backend the probe is asked what this pid (QEMU's) is in
     * the guest; a request already sent goes without it. */
    json_t *pids = json_object_get(r->request, "host_pids");
    if (pid > 0 && pids)
        json_array_append_new(pids, json_integer(pid));
    r->agent_env_rc =
        pid > 0 ? agent_environ_flagged(pid, r->agent_env_flagged, sizeof(r->agent_env_flagged))
                : -ESRCH;
}

/* The paths the probe must fail to write: protected paths that exist (a
 * missing one is protected by being refused at creation, checked by the
 * security suite), each guarded git directory's hooks and config; and what
 * it creates at each git directory's top level (plant). */
static void probe_paths(const struct launch *l, json_t *readonly, json_t *plant)
{
    char path[PATH_MAX];
    for (size_t i = 0; l->protected_paths[i]; i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", l->ws.root, l->protected_paths[i]);
        if (lstat(path, &st) < 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", l->ws.view_root, l->protected_paths[i]);
        json_array_append_new(readonly, json_string(path));
    }
    /* The git metadata plan: each guarded git directory's config and hooks
     * are read-only, and a file created at its top level (which lands in
     * the sandbox's copy) must not appear in the host's. */
    for (size_t i = 0; l->git && i < l->git->ndirs; i++) {
        const struct gitguard_dir *d = &l->git->dirs[i];
        static const char *const parts[] = {"hooks", "config"};
        for (size_t j = 0; j < ARRAY_SIZE(parts); j++) {
            struct stat st;
            snprintf(path, sizeof(path), "%s/%s", d->host, parts[j]);
            if (lstat(path, &st) < 0 || (i > 0 && strcmp(parts[j], "config") == 0))
                continue;
            snprintf(path, sizeof(path), "%s/%s", d->view, parts[j]);
            json_array_append_new(readonly, json_string(path));
        }
        snprintf(path, sizeof(path), "%s/" VERIFY_PLANT_NAME, d->view);
        json_array_append_new(plant, json_string(path));
    }
    for (size_t i = 0; !l->git && l->git_dirs[i]; i++) {
        static const char *const parts[] = {"hooks", "config"};
        for (size_t j = 0; j < ARRAY_SIZE(parts); j++) {
            struct stat st;
            snprintf(path, sizeof(path), "%s/%s", l->git_dirs[i], parts[j]);
            if (lstat(path, &st) == 0)
                json_array_append_new(readonly, json_string(path));
        }
    }
}

int verify_prepare_target(const struct verify_target *t, struct verify_run **out,
                          char **probe_request, struct cordon_error *err)
{
    struct verify_run *r = calloc(1, sizeof(*r));
    if (!r)
        return error_set(err, ENOMEM, "verify");
    r->name = strdup(t->name);
    r->state_dir = t->state_dir ? strdup(t->state_dir) : NULL;
    r->pid1_comm = t->pid1_comm;
    r->probe_via = t->probe_via ? t->probe_via : "a process started by the bash tool";
    r->agent_env_rc = -ESRCH;
    r->l = t->l;
    r->checks = json_array();
    r->host_names = json_array();
    r->host = json_pack("{s:o, s:o, s:o, s:o}", "self_status", read_status(0), "self_ns",
                        read_namespaces(0), "self_kernel", read_kernel(), "self_comm",
                        read_comm(getpid()));
    if (!r->name || (t->state_dir && !r->state_dir) || !r->host) {
        verify_free(r);
        return error_set(err, ENOMEM, "verify");
    }
    const struct launch *l = r->l;

    if (open_listener(r, "127.0.0.1") < 0) {
        verify_free(r);
        return error_set(err, errno, "verify: a host listener on 127.0.0.1");
    }
    char ip[INET_ADDRSTRLEN];
    if (host_ipv4(ip, sizeof(ip)))
        open_listener(r, ip);

    json_t *sentinels = json_array();
    for (size_t i = 0; i < ARRAY_SIZE(sentinel_names); i++)
        json_array_append_new(sentinels, json_string(sentinel_names[i]));
    json_t *tcp = json_array();
    for (size_t i = 0; i < r->nlisteners; i++)
        json_array_append_new(tcp, json_pack("{s:s, s:i}", "addr", r->listeners[i].addr, "port",
                                             r->listeners[i].port));
    json_t *sockets = json_array();
    for (size_t i = 0; i < ARRAY_SIZE(docker_socket_paths); i++)
        json_array_append_new(sockets, json_string(docker_socket_paths[i]));
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/run/user/%d/docker.sock", (int)getuid());
    json_array_append_new(sockets, json_string(path));
    if (getenv("HOME")) {
        snprintf(path, sizeof(path), "%s/.docker/run/docker.sock", getenv("HOME"));
        json_array_append_new(sockets, json_string(path));
    }

    json_t *readonly = json_array(), *plant = json_array();
    probe_paths(l, readonly, plant);
    json_t *policy = json_array();
    const char *etc = launch_etc_dir();
    json_array_append_new(policy, json_string(etc ? etc : "/etc/cordon"));
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && xdg[0] == '/')
        snprintf(path, sizeof(path), "%s/cordon", xdg);
    else
        snprintf(path, sizeof(path), "%s/.config/cordon", getenv("HOME") ? getenv("HOME") : "");
    json_array_append_new(policy, json_string(path));

    r->request =
        json_pack("{s:o, s:s, s:o, s:o, s:o, s:[s], s:o, s:o, s:i}", "sentinels", sentinels,
                  "probe_var", VERIFY_PROBE_VAR, "host_paths", host_paths(l, r->host_names),
                  "sockets", sockets, "tcp", tcp, "writable", l->ws.view_root, "readonly", readonly,
                  "policy", policy, "supervisor_pid", (int)getpid());
    if (l->net.mode == NET_MODE_ALLOWLIST) {
        json_t *targets = json_array();
        for (size_t i = 0; i < r->nlisteners; i++) {
            snprintf(path, sizeof(path), "%s:%d", r->listeners[i].addr, r->listeners[i].port);
            json_array_append_new(targets, json_string(path));
            /* The probe's refusals are verify's evidence, not news for a
             * running session's stderr or its next tool result. */
            net_session_quiet(&l->net_session, path, VERIFY_PROXY_QUIET_S);
        }
        json_object_set_new(r->request, "proxy",
                            json_pack("{s:i, s:o}", "port", NET_PROXY_PORT, "targets", targets));
    }
    json_object_set_new(r->request, "host_pids", json_pack("[i]", (int)getpid()));
    json_object_set_new(r->request, "plant", plant);
    if (t->agent_pidfd >= 0)
        verify_set_agent(r, t->agent_pidfd);
    /* The probe treats "policy" as more paths that must not be writable. */
    json_t *ro = json_object_get(r->request, "readonly");
    json_array_extend(ro, policy);
    *probe_request = json_dumps(r->request, JSON_COMPACT);
    if (!*probe_request) {
        verify_free(r);
        return error_set(err, ENOMEM, "verify");
    }
    *out = r;
    return 0;
}

int verify_prepare(struct session *s, struct verify_run **out, json_t **bash_args,
                   struct cordon_error *err)
{
    struct verify_target t = {.name = session_name(s),
                              .l = session_launch(s),
                              .agent_pidfd = session_agent_pidfd(s),
                              .state_dir = session_state_dir(s),
                              .pid1_comm = "cordon-agent"};
    _cleanup_free_ char *request = NULL;
    if (verify_prepare_target(&t, out, &request, err) < 0)
        return -1;
    _cleanup_free_ char *cmd = NULL;
    if (asprintf(&cmd, "%s probe <<'CORDON_VERIFY_EOF'\n%s\nCORDON_VERIFY_EOF", NS_AGENT_VIEW_PATH,
                 request) < 0) {
        cmd = NULL;
        verify_free(*out);
        *out = NULL;
        return error_set(err, ENOMEM, "verify");
    }
    *bash_args = json_pack("{s:s, s:i}", "command", cmd, "timeout", 60);
    return 0;
}

/* --- judging --- */

static bool zero_hex(const json_t *st, const char *key)
{
    const char *v = json_string_value(json_object_get(st, key));
    return v && v[0] && strspn(v, "0") == strlen(v);
}

static bool all_zero_caps(const json_t *st)
{
    static const char *const keys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const char *v = json_string_value(json_object_get(st, keys[i]));
        if (!v || strspn(v, "0") != strlen(v))
            return false;
    }
    return true;
}

static void check_env(struct verify_run *r, const json_t *p)
{
    const struct launch *l = r->l;
    /* The scrubber itself, on this environment plus the sentinels. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **input = calloc(n + ARRAY_SIZE(sentinel_names) + 2, sizeof(char *));
    char **built = NULL;
    struct cordon_error err;
    char scrub_flagged[512] = "", built_flagged[512] = "";
    const char *agent_flagged = r->agent_env_rc < 0 ? "" : r->agent_env_flagged;
    bool scrub_probe = false, built_probe = false;
    int scrub_rc = -1;
    if (input) {
        size_t k = 0;
        static char sentinel_entries[ARRAY_SIZE(sentinel_names)][64];
        for (size_t i = 0; i < ARRAY_SIZE(sentinel_names); i++) {
            snprintf(sentinel_entries[i], sizeof(sentinel_entries[i]), "%s=%s", sentinel_names[i],
                     VERIFY_SENTINEL_VALUE);
            input[k++] = sentinel_entries[i];
        }
        static char probe_entry[64];
        snprintf(probe_entry, sizeof(probe_entry), "%s=%s", VERIFY_PROBE_VAR,
                 VERIFY_SENTINEL_VALUE);
        input[k++] = probe_entry;
        for (size_t i = 0; i < n; i++)
            input[k++] = environ[i];
        enum env_mode mode = l->cfg.env.mode == CFG_ENV_PASSTHROUGH ? ENV_MODE_PASSTHROUGH
                             : l->cfg.env.mode == CFG_ENV_ALLOWLIST ? ENV_MODE_ALLOWLIST
                                                                    : ENV_MODE_STRICT;
        scrub_rc = env_build(mode, input, l->env_allow, l->home, &built, &err);
        if (scrub_rc == 0)
            flagged_in(built, scrub_flagged, sizeof(scrub_flagged), &scrub_probe);
        env_free(built);
        free(input);
    }
    flagged_in(l->env, built_flagged, sizeof(built_flagged), &built_probe);
    int agent_rc = r->agent_env_rc;

    char ev[2048] = "";
    bool fail = scrub_rc < 0 || scrub_flagged[0] || built_flagged[0] || agent_flagged[0];
    add(ev, sizeof(ev),
        "scrubber run on this environment + DOCKER_HOST, DOCKER_CONTEXT, "
        "COMPOSE_PROJECT_NAME, COMPOSE_FILE, CORDON_VERIFY_SENTINEL: %s",
        scrub_rc < 0       ? "failed"
        : scrub_flagged[0] ? scrub_flagged
                           : "all removed");
    add(ev, sizeof(ev), "; the sandbox was built from an environment %s",
        sentinels_injected() ? "holding the sentinels"
                             : "without them (it started before verify ran)");
    add(ev, sizeof(ev), "; sandbox environment: %s",
        built_flagged[0] ? built_flagged : "no Docker/Compose/sentinel variables");
    if (agent_rc < 0)
        add(ev, sizeof(ev), "; agent /proc/%d/environ from the host: %s", (int)r->agent_pid,
            strerrorname_np(-agent_rc));
    else
        add(ev, sizeof(ev), "; agent /proc/%d/environ from the host: %s", (int)r->agent_pid,
            agent_flagged[0] ? agent_flagged : "clean");
    if (p) {
        json_t *found = json_object_get(json_object_get(p, "env"), "found");
        if (json_array_size(found)) {
            fail = true;
            _cleanup_free_ char *txt = json_dumps(found, JSON_COMPACT);
            add(ev, sizeof(ev), "; inside: %s", txt ? txt : "?");
        } else {
            add(ev, sizeof(ev), "; inside (%s): none present", r->probe_via);
        }
    } else {
        add(ev, sizeof(ev), "; inside: no probe answer");
        fail = true;
    }
    row(r, "env-scrub", fail ? "FAIL" : "PASS", "%s", ev);

    /* Forwarding mode and the non-allowlisted probe variable. */
    const char *mode = l->cfg.env.mode == CFG_ENV_PASSTHROUGH ? "passthrough"
                       : l->cfg.env.mode == CFG_ENV_ALLOWLIST ? "allowlist"
                                                              : "strict";
    bool passthrough = l->cfg.env.mode == CFG_ENV_PASSTHROUGH;
    bool allowlisted = false;
    for (size_t i = 0; l->env_allow[i]; i++)
        allowlisted |= strcmp(l->env_allow[i], VERIFY_PROBE_VAR) == 0;
    bool inside =
        p && json_is_true(json_object_get(json_object_get(p, "env"), "probe_var_present"));
    char ev2[1024] = "";
    add(ev2, sizeof(ev2), "env.mode = %s", mode);
    add(ev2, sizeof(ev2), "; %s (not allowlisted) through the scrubber: %s", VERIFY_PROBE_VAR,
        scrub_probe ? "forwarded" : "removed");
    add(ev2, sizeof(ev2), "; inside: %s", !p ? "no probe answer" : inside ? "present" : "absent");
    if (!sentinels_injected())
        add(ev2, sizeof(ev2), " (not injected into this sandbox's environment)");
    if (passthrough || allowlisted) {
        add(ev2, sizeof(ev2), "; warning: the host's environment %s is forwarded",
            passthrough ? "(except Docker, Compose, loader and CORDON_* variables)"
                        : "named by env.allow");
        row(r, "env-forwarding", "WARN", "%s", ev2);
    } else {
        row(r, "env-forwarding", scrub_probe || built_probe || inside || !p ? "FAIL" : "PASS", "%s",
            ev2);
    }
}

/* The value of an env: or file: secret, read here on the host only to
 * look for it (never sent anywhere); NULL for command: (not run twice). */
static char *secret_value_for_check(const struct net_secret *sec)
{
    if (strncmp(sec->from, "env:", 4) == 0) {
        const char *v = getenv(sec->from + 4);
        return v && *v ? strdup(v) : NULL;
    }
    if (strncmp(sec->from, "file:", 5) != 0)
        return NULL;
    _cleanup_close_ int fd = open(sec->from + 5, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    char *buf = fd >= 0 ? calloc(1, NET_SECRET_MAX + 1) : NULL;
    ssize_t n = buf ? read(fd, buf, NET_SECRET_MAX) : -1;
    if (n <= 0) {
        free(buf);
        return NULL;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    if (n == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Does the NUL-separated file /proc/PID/WHAT hold NEEDLE? -errno when
 * unreadable. */
static int proc_file_holds(pid_t pid, const char *what, const char *needle)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    static char buf[262144];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0)
        return -errno;
    size_t len = strlen(needle);
    return len <= (size_t)n && memmem(buf, (size_t)n, needle, len) ? 1 : 0;
}

/* [[secrets]] (docs/secrets.md): the sandbox's variable holds the
 * placeholder, the value is in neither the environment the sandbox was
 * built from nor the agent's environment and command line as the kernel
 * holds them. */
static void check_secrets(struct verify_run *r)
{
    const struct launch *l = r->l;
    if (l->net.secret_count == 0) {
        row(r, "secrets", "SKIP", "no [[secrets]] configured");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    for (size_t i = 0; i < l->net.secret_count; i++) {
        const struct net_secret *sec = &l->net.secrets[i];
        size_t nlen = strlen(sec->name);
        const char *inside = NULL;
        for (size_t k = 0; l->env && l->env[k]; k++)
            if (strncmp(l->env[k], sec->name, nlen) == 0 && l->env[k][nlen] == '=')
                inside = l->env[k] + nlen + 1;
        bool placeholder = inside && strcmp(inside, sec->placeholder) == 0;
        fail |= !placeholder;
        add(ev, sizeof(ev), "%s%s: the sandbox's variable %s", i ? "; " : "", sec->name,
            placeholder ? "holds the session's placeholder"
            : inside    ? "is NOT the placeholder"
                        : "is missing");
        char *value = secret_value_for_check(sec);
        if (!value) {
            add(ev, sizeof(ev), ", value not read here (%s)",
                strncmp(sec->from, "command:", 8) == 0 ? "command: source" : "unreadable");
            continue;
        }
        bool in_env = false;
        for (size_t k = 0; l->env && l->env[k]; k++)
            in_env |= strstr(l->env[k], value) != NULL;
        int in_agent_env =
            r->agent_pid > 0 ? proc_file_holds(r->agent_pid, "environ", value) : -ESRCH;
        int in_agent_cmd =
            r->agent_pid > 0 ? proc_file_holds(r->agent_pid, "cmdline", value) : -ESRCH;
        explicit_bzero(value, strlen(value));
        free(value);
        fail |= in_env || in_agent_env > 0 || in_agent_cmd > 0;
        add(ev, sizeof(ev), "; its value %s the sandbox's environment",
            in_env ? "IS IN" : "is not in");
        add(ev, sizeof(ev), ", %s the agent's environ",
            in_agent_env > 0   ? "IS IN"
            : in_agent_env < 0 ? "cannot read"
                               : "not in");
        if (in_agent_env < 0)
            add(ev, sizeof(ev), " (%s)", strerrorname_np(-in_agent_env));
        add(ev, sizeof(ev), ", %s its cmdline (from the host)",
            in_agent_cmd > 0   ? "IS IN"
            : in_agent_cmd < 0 ? "cannot read"
                               : "not in");
    }
    if (l->net.mode != NET_MODE_ALLOWLIST)
        add(ev, sizeof(ev), "; network.mode is not allowlist: no request gets the values");
    row(r, "secrets", fail ? "FAIL" : "PASS", "%s", ev);
}

static void check_host_files(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "host-files", "FAIL", "no probe answer");
        return;
    }
    char ev[2048] = "", bad[1024] = "";
    size_t i, absent = 0, other = 0;
    json_t *h;
    size_t named = json_array_size(json_object_get(p, "host_paths"));
    json_array_foreach (json_object_get(p, "host_paths"), i, h) {
        const char *stat_result = str(h, "stat");
        if (strcmp(stat_result, "ok") != 0) {
            absent++;
        } else if (json_is_true(json_object_get(h, "same_as_host"))) {
            add(bad, sizeof(bad), "%s%s (the host's file, open: %s)", bad[0] ? ", " : "",
                str(h, "path"), str(h, "open"));
        } else {
            other++;
        }
    }
    add(ev, sizeof(ev),
        "%zu host paths probed at their path (home, ~/.ssh, ~/.docker, ~/.aws, /root, "
        "/etc/shadow ...): %zu absent inside, %zu present only as the sandbox's own files",
        named, absent, other);
    json_t *elsewhere = json_object_get(json_object_get(p, "sockets"), "host_files_elsewhere");
    json_array_foreach (elsewhere, i, h) {
        json_int_t id = json_integer_value(json_object_get(h, "host"));
        const char *name = json_string_value(json_array_get(r->host_names, (size_t)id));
        add(bad, sizeof(bad), "%s%s (the host's file, at %s inside)", bad[0] ? ", " : "",
            name ? name : "?", str(h, "inside"));
    }
    add(ev, sizeof(ev),
        "; the view (all but /proc, /sys, /usr) searched for these and the home "
        "directory's %zu entries (sent as device and inode only): %zu found",
        json_array_size(r->host_names) - named, json_array_size(elsewhere));
    if (bad[0])
        add(ev, sizeof(ev), "; visible: %s", bad);
    row(r, "host-files", bad[0] ? "FAIL" : "PASS", "%s", ev);
}

/* What the backend is (backend/backend.h): with a kernel of its own (vm)
 * the "agent" seen from the host is QEMU and the probe runs under the
 * guest's kernel; in a container (docker) the agent is its PID 1, under
 * Docker's seccomp profile and capability set, in the host's user
 * namespace, with no Landlock of cordon's from the host. */
static bool backend_is(const struct verify_run *r, unsigned caps)
{
    return r->l && backend_has(r->l->backend, caps);
}

static bool on_own_kernel(const struct verify_run *r)
{
    return backend_is(r, BACKEND_CAP_OWN_KERNEL);
}

static void check_docker(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "docker-socket", "FAIL", "no probe answer");
        return;
    }
    json_t *so = json_object_get(p, "sockets");
    char ev[2048] = "", bad[1024] = "";
    size_t i;
    json_t *k;
    /* The vm guest's own daemon (src/agent/vm-docker.c) is the one socket
     * allowed to answer, and only when it is verified as the guest's. */
    json_t *gd = json_object_get(p, "guest_docker");
    bool vm = backend_is(r, BACKEND_CAP_OWN_DOCKER);
    bool guest_own_ok = vm && json_is_true(json_object_get(gd, "own"));
    if (json_is_object(gd)) {
        add(ev, sizeof(ev), "guest dockerd: %s%s%s (pid %lld, ID %s): %s; ", str(gd, "state"),
            str(gd, "reason")[0] ? ": " : "", str(gd, "reason"),
            (long long)json_integer_value(json_object_get(gd, "pid")), str(gd, "id"),
            str(gd, "detail"));
        if (!guest_own_ok)
            add(bad, sizeof(bad), "%s%s", bad[0] ? ", " : "",
                vm ? "an unverified Docker socket in the guest"
                   : "a Docker status file outside the vm backend");
    } else if (vm) {
        add(ev, sizeof(ev), "no guest dockerd (docker.mode = \"%s\"); ",
            cfg_enum_name(CFG_DOCKER_MODE, r->l->cfg.docker.mode));
    }
    add(ev, sizeof(ev), "connect:");
    json_array_foreach (json_object_get(so, "known"), i, k) {
        add(ev, sizeof(ev), " %s %s;", str(k, "path"), str(k, "connect"));
        if (json_is_true(json_object_get(k, "guest_own")) && guest_own_ok)
            continue;
        if (strcmp(str(k, "connect"), "ok") == 0 || json_is_true(json_object_get(k, "guest_own")))
            add(bad, sizeof(bad), "%s%s", bad[0] ? ", " : "", str(k, "path"));
    }
    size_t found = json_array_size(json_object_get(so, "found"));
    add(ev, sizeof(ev), " %lld entries scanned (all but /proc, /sys, /usr)%s, %zu sockets found",
        (long long)json_integer_value(json_object_get(so, "scanned")),
        json_is_true(json_object_get(so, "scan_complete")) ? "" : " (scan bounded)", found);
    json_array_foreach (json_object_get(so, "found"), i, k) {
        if (json_is_true(json_object_get(k, "docker")))
            add(bad, sizeof(bad), "%s%s (answers the Docker API)", bad[0] ? ", " : "",
                str(k, "path"));
    }
    if (bad[0])
        add(ev, sizeof(ev), "; reachable: %s", bad);
    row(r, "docker-socket", bad[0] ? "FAIL" : "PASS", "%s", ev);
}

static bool loopback_bind(const char *bind)
{
    return strcmp(bind, "127.0.0.1") == 0 || strcmp(bind, "::1") == 0 ||
           strcmp(bind, "localhost") == 0 || strncmp(bind, "127.", 4) == 0;
}

/* Listening sockets on the host for a port: loopback-only is the rule. */
static void host_listeners(int port, char *out, size_t size, bool *nonloop, bool *any)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        _cleanup_fclose_ FILE *fp = fopen(files[f], "re");
        char line[512];
        while (fp && fgets(line, sizeof(line), fp)) {
            char local[64];
            unsigned lport, st;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x", local, &lport, &st) != 3)
                continue;
            if (st != 0x0A || (int)lport != port)
                continue;
            *any = true;
            bool loop = f == 0 ? strcmp(local, "0100007F") == 0
                               : strcmp(local, "00000000000000000000000001000000") == 0;
            if (!loop)
                *nonloop = true;
            add(out, size, " %s:%d%s", f == 0 ? "tcp" : "tcp6", port,
                loop ? " on loopback" : " on a non-loopback address");
        }
    }
}

static void check_ports(struct verify_run *r)
{
    const struct cfg_ports *pp = &r->l->cfg.network.publish_ports;
    if (pp->count == 0) {
        row(r, "published-ports", "SKIP", "no ports published (network.publish_ports is empty)");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    for (size_t i = 0; i < pp->count; i++) {
        const struct cfg_port *p = &pp->items[i];
        bool nonloop = false, any = false;
        char seen[512] = "";
        host_listeners((int)p->host_port, seen, sizeof(seen), &nonloop, &any);
        add(ev, sizeof(ev), "%s%s:%ld -> %ld: host listeners:%s", i ? "; " : "", p->bind,
            (long)p->host_port, (long)p->guest_port, any ? seen : " none");
        if (!loopback_bind(p->bind) || nonloop)
            fail = true;
    }
    row(r, "published-ports", fail ? "FAIL" : "PASS", "%s", ev);
}

static const char *host_side_name(const struct verify_run *r)
{
    return r->l && r->l->backend ? r->l->backend->caps.host_side : "agent";
}

static void check_seccomp(struct verify_run *r, const json_t *p)
{
    json_t *self = json_object_get(r->host, "self_status");
    json_t *agent = json_object_get(r->host, "agent_status");
    long host_filters = strtol(str(self, "Seccomp_filters"), NULL, 10);
    long agent_filters = strtol(str(agent, "Seccomp_filters"), NULL, 10);
    json_t *st = p ? json_object_get(p, "status") : NULL;
    json_t *sys = p ? json_object_get(p, "syscalls") : NULL;
    long in_filters = st ? strtol(str(st, "Seccomp_filters"), NULL, 10) : -1;
    bool agent_ok = strcmp(str(agent, "Seccomp"), "2") == 0 && agent_filters > host_filters;
    /* The guest's kernel counts its own filters: none are inherited from
     * the host's supervisor there. */
    bool inside_ok = st && strcmp(str(st, "Seccomp"), "2") == 0 &&
                     (on_own_kernel(r) ? in_filters >= 1 : in_filters > host_filters) &&
                     strcmp(str(sys, "keyctl"), "EPERM") == 0;
    row(r, "seccomp", agent_ok && inside_ok ? "PASS" : "FAIL",
        "%s (pid %d, from the host%s): Seccomp %s, %ld filter(s) (supervisor: %ld); inside%s: "
        "Seccomp %s, %ld filter(s); keyctl(invalid) -> %s (EPERM when filtered), "
        "io_uring_setup -> %s, clone3 -> %s, unshare -> %s",
        host_side_name(r), (int)r->agent_pid, on_own_kernel(r) ? "; its own -sandbox filter" : "",
        str(agent, "Seccomp"), agent_filters, host_filters, on_own_kernel(r) ? " the guest" : "",
        st ? str(st, "Seccomp") : "?", in_filters, sys ? str(sys, "keyctl") : "?",
        sys ? str(sys, "io_uring_setup") : "?", sys ? str(sys, "clone3") : "?",
        sys ? str(sys, "unshare") : "?");
}

static void check_privileges(struct verify_run *r, const json_t *p)
{
    json_t *agent = json_object_get(r->host, "agent_status");
    json_t *st = p ? json_object_get(p, "status") : NULL;
    bool nnp =
        strcmp(str(agent, "NoNewPrivs"), "1") == 0 && st && strcmp(str(st, "NoNewPrivs"), "1") == 0;
    row(r, "no-new-privs", nnp ? "PASS" : "FAIL", "NoNewPrivs: %s (from the host) %s, inside %s",
        host_side_name(r), str(agent, "NoNewPrivs"), st ? str(st, "NoNewPrivs") : "?");
    bool caps = all_zero_caps(agent) && st && all_zero_caps(st);
    /* The QEMU of an unprivileged supervisor outside a user namespace
     * (vm-protect.c makes one only when needed) keeps the default bounding
     * set: an unprivileged process can neither empty nor use it (no
     * capability held, no_new_privs: no exec grants any; a new user
     * namespace gets a full set whatever the bounding set says). */
    bool bounding_only = on_own_kernel(r) && !caps && geteuid() != 0 && st && all_zero_caps(st) &&
                         strcmp(str(agent, "NoNewPrivs"), "1") == 0 && zero_hex(agent, "CapInh") &&
                         zero_hex(agent, "CapPrm") && zero_hex(agent, "CapEff") &&
                         zero_hex(agent, "CapAmb");
    row(r, "capabilities", caps || bounding_only ? "PASS" : "FAIL",
        "%s (from the host): CapPrm %s CapEff %s CapBnd %s CapAmb %s; inside: CapPrm %s "
        "CapEff %s CapBnd %s CapAmb %s%s",
        host_side_name(r), str(agent, "CapPrm"), str(agent, "CapEff"), str(agent, "CapBnd"),
        str(agent, "CapAmb"), st ? str(st, "CapPrm") : "?", st ? str(st, "CapEff") : "?",
        st ? str(st, "CapBnd") : "?", st ? str(st, "CapAmb") : "?",
        bounding_only ? "; QEMU's bounding set is the unprivileged default (no user namespace "
                        "for it): with nothing permitted and no_new_privs it grants nothing"
                      : "");
}

/* The guest runs its own kernel: another boot_id. ev (may be NULL) gets
 * the evidence. */
static bool guest_kernel_distinct(const struct verify_run *r, const json_t *p, char *ev,
                                  size_t size)
{
    json_t *hk = json_object_get(r->host, "self_kernel");
    json_t *gk = p ? json_object_get(p, "kernel") : NULL;
    const char *hb = str(hk, "boot_id"), *gb = gk ? str(gk, "boot_id") : "?";
    bool distinct = gk && gb[0] && strcmp(gb, "?") != 0 && hb[0] && strcmp(gb, hb) != 0;
    if (ev)
        add(ev, size,
            "kernel boundary (microVM): boot_id inside %s, host %s; kernel inside %s (%s), host "
            "%s (%s)",
            gb, hb, gk ? str(gk, "release") : "?", gk ? str(gk, "version") : "?",
            str(hk, "release"), str(hk, "version"));
    return distinct;
}

/* vm: no namespace of the host is shared with the guest at all; what
 * matters is that the probe runs under another kernel and that the host's
 * pids name nothing of the host there. */
static void check_kernel_boundary(struct verify_run *r, const json_t *p)
{
    char ev[2048] = "";
    bool fail = !guest_kernel_distinct(r, p, ev, sizeof(ev));
    json_t *pids = p ? json_object_get(json_object_get(p, "kernel"), "host_pids") : NULL;
    if (!json_array_size(pids))
        fail = true;
    size_t i;
    json_t *e;
    json_array_foreach (pids, i, e) {
        pid_t pid = (pid_t)json_integer_value(json_object_get(e, "pid"));
        const char *inside = str(e, "comm");
        const char *host = pid == getpid()       ? str(r->host, "self_comm")
                           : pid == r->agent_pid ? str(r->host, "agent_comm")
                                                 : "?";
        /* The same number may be one of the guest's own processes; the
         * same name as the host's would mean the host's process. */
        bool same = host[0] && strcmp(host, "?") != 0 && strcmp(inside, host) == 0;
        fail |= same;
        add(ev, sizeof(ev), "; host pid %d (%s on the host) inside: %s", (int)pid, host,
            inside[0] == 'E' ? inside
            : same           ? "the same process"
                             : "another process of the guest");
        if (inside[0] != 'E' && !same)
            add(ev, sizeof(ev), " (%s)", inside);
    }
    json_t *in = p ? json_object_get(p, "ns") : NULL;
    add(ev, sizeof(ev), "; the probe's namespaces are the guest kernel's (mnt %s, pid %s, net %s)",
        in ? str(in, "mnt") : "?", in ? str(in, "pid") : "?", in ? str(in, "net") : "?");
    row(r, "namespaces", fail ? "FAIL" : "PASS", "%s", ev);
}

static void check_namespaces(struct verify_run *r, const json_t *p)
{
    if (on_own_kernel(r)) {
        check_kernel_boundary(r, p);
        return;
    }
    json_t *self = json_object_get(r->host, "self_ns");
    json_t *agent = json_object_get(r->host, "agent_ns");
    json_t *in = p ? json_object_get(p, "ns") : NULL;
    char ev[2048] = "";
    bool fail = !in;
    for (size_t i = 0; i < ARRAY_SIZE(ns_names); i++) {
        const char *host = str(self, ns_names[i]);
        const char *a = str(agent, ns_names[i]);
        const char *inside = in ? str(in, ns_names[i]) : "?";
        /* The agent seen from the host is evidence the sandbox cannot
         * forge; the probe's view must agree with it. */
        bool distinct = strcmp(a, "?") != 0 && strcmp(a, host) != 0 && strcmp(inside, a) == 0;
        /* Docker (without userns-remap) keeps the host's user namespace:
         * the container runs as the user's own uid, with no capability
         * (the capabilities row). */
        bool shared_ok = backend_is(r, BACKEND_CAP_HOST_USERNS) &&
                         strcmp(ns_names[i], "user") == 0 && strcmp(a, "?") != 0 &&
                         strcmp(inside, a) == 0;
        if (!distinct && !shared_ok)
            fail = true;
        add(ev, sizeof(ev), "%s%s: supervisor %s, agent %s, inside %s%s", i ? "; " : "",
            ns_names[i], host, a, inside,
            shared_ok && !distinct ? " (the host's: docker, the user's uid, no capabilities)" : "");
    }
    row(r, "namespaces", fail ? "FAIL" : "PASS", "%s", ev);
}

static void check_processes(struct verify_run *r, const json_t *p)
{
    json_t *pr = p ? json_object_get(p, "processes") : NULL;
    if (!pr) {
        row(r, "processes", "FAIL", "no probe answer");
        return;
    }
    json_t *foreign = json_object_get(pr, "foreign");
    if (on_own_kernel(r)) {
        /* Every process the guest shows is the guest kernel's own (some,
         * kernel threads, unreadable to a probe without capabilities). */
        bool distinct = guest_kernel_distinct(r, p, NULL, 0);
        bool ok = distinct && strcmp(str(pr, "pid1_comm"), r->pid1_comm) == 0;
        row(r, "processes", ok ? "PASS" : "FAIL",
            "%lld processes visible inside, all the guest kernel's own (%s); PID 1 is %s; "
            "kill(0) on the supervisor's host pid %d -> %s (a number of the guest's, see "
            "namespaces)",
            (long long)json_integer_value(json_object_get(pr, "count")),
            distinct ? "its boot_id differs from the host's" : "NOT shown to be another kernel",
            str(pr, "pid1_comm"), (int)getpid(), str(pr, "kill_supervisor_pid"));
        return;
    }
    bool ok = json_array_size(foreign) == 0 && strcmp(str(pr, "pid1_comm"), r->pid1_comm) == 0;
    _cleanup_free_ char *f = json_dumps(foreign, JSON_COMPACT);
    char fds[512] = "";
    size_t i;
    json_t *fd;
    json_array_foreach (json_object_get(p, "fds"), i, fd)
        add(fds, sizeof(fds), "%s%s", i ? ", " : "",
            json_string_value(fd) ? json_string_value(fd) : "?");
    row(r, "processes", ok ? "PASS" : "FAIL",
        "%lld processes visible inside, all in the sandbox's PID namespace unless listed: %s; "
        "PID 1 is %s; kill(0) on the supervisor's host pid %d -> %s; the probe's open "
        "descriptors: %s",
        (long long)json_integer_value(json_object_get(pr, "count")), f ? f : "?",
        str(pr, "pid1_comm"), (int)getpid(), str(pr, "kill_supervisor_pid"), fds[0] ? fds : "?");
}

static void check_network(struct verify_run *r, const json_t *p)
{
    int mode = r->l->cfg.network.mode;
    char ev[2048] = "";
    bool fail = !p;
    add(ev, sizeof(ev), "network.mode = %s",
        mode == CFG_NETWORK_OPEN        ? "open"
        : mode == CFG_NETWORK_ALLOWLIST ? "allowlist (only through cordon's proxy)"
                                        : "deny");
    size_t i;
    json_t *t;
    json_array_foreach (p ? json_object_get(p, "tcp") : NULL, i, t) {
        add(ev, sizeof(ev), "; connect %s:%lld (host listener) -> %s", str(t, "addr"),
            (long long)json_integer_value(json_object_get(t, "port")), str(t, "connect"));
        if (strcmp(str(t, "connect"), "ok") == 0)
            fail = true;
    }
    json_array_foreach (p ? json_object_get(p, "proxy") : NULL, i, t) {
        const char *status = str(t, "status");
        add(ev, sizeof(ev), "; proxy CONNECT %s (not allowlisted) -> %s", str(t, "target"),
            status[0] ? status : str(t, "connect"));
        if (strncmp(status, "HTTP/1.1 2", 10) == 0 || strncmp(status, "HTTP/1.0 2", 10) == 0)
            fail = true;
    }
    /* Evidence the sandbox cannot forge: nothing reached the listeners. */
    for (size_t k = 0; k < r->nlisteners; k++) {
        int c = accept4(r->listeners[k].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
            close(c);
            fail = true;
            add(ev, sizeof(ev), "; the host listener on %s:%d ACCEPTED a connection",
                r->listeners[k].addr, r->listeners[k].port);
        }
    }
    if (!fail)
        add(ev, sizeof(ev), "; the host listeners accepted nothing");
    if (mode == CFG_NETWORK_OPEN) {
        add(ev, sizeof(ev), "; warning: egress is not restricted in open mode");
        row(r, "network-egress", "WARN", "%s", ev);
        return;
    }
    row(r, "network-egress", fail ? "FAIL" : "PASS", "%s", ev);
}

static bool write_refused(const char *result)
{
    return strcmp(result, "EROFS") == 0 || strcmp(result, "EACCES") == 0 ||
           strcmp(result, "EPERM") == 0;
}

/* The git metadata row: what the probe created at each guarded git
 * directory's top level is not in the host's (docs/git-metadata.md). */
static void check_git_metadata(struct verify_run *r, const json_t *p)
{
    const struct gitguard *g = r->l->git;
    if (!g || !g->active) {
        row(r, "git-metadata", r->l->ws.is_git ? "SKIP" : "PASS", "%s",
            r->l->ws.is_git
                ? "the workspace is read-only: its git metadata with it"
                : "not a git repository: a .git, .vscode, .idea or .envrc the sandbox makes at "
                  "the root, or a .git below it, is moved aside when the session ends");
        return;
    }
    if (!p) {
        row(r, "git-metadata", "FAIL", "no probe answer");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    size_t i;
    json_t *w;
    json_array_foreach (json_object_get(p, "plant"), i, w) {
        if (i >= g->ndirs)
            break;
        const struct gitguard_dir *d = &g->dirs[i];
        char host[PATH_MAX + 64];
        snprintf(host, sizeof(host), "%s/" VERIFY_PLANT_NAME, d->host);
        struct stat st;
        bool leaked = lstat(host, &st) == 0;
        fail |= leaked;
        add(ev, sizeof(ev), "%s%s: created inside -> %s, on the host -> %s", ev[0] ? "; " : "",
            str(w, "path"), str(w, "write"), leaked ? "PRESENT" : "absent");
    }
    if (json_array_size(json_object_get(p, "plant")) != g->ndirs)
        fail = true;
    row(r, "git-metadata", fail ? "FAIL" : "PASS",
        "%zu git director%s host-owned (the sandbox writes copies; cordon carries HEAD, index "
        "and refs only): %s",
        g->ndirs, g->ndirs == 1 ? "y" : "ies", ev);
}

static void check_writes(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "protected-paths", "FAIL", "no probe answer");
        row(r, "workspace", "FAIL", "no probe answer");
        row(r, "policy-dir", "FAIL", "no probe answer");
        return;
    }
    json_t *policy = json_object_get(r->request, "policy");
    char ev[2048] = "", pev[1024] = "";
    bool fail = false, pfail = false;
    size_t nprot = 0, i, j;
    json_t *w, *pol;
    json_array_foreach (json_object_get(p, "readonly"), i, w) {
        bool is_policy = false;
        json_array_foreach (policy, j, pol) {
            is_policy |= strcmp(json_string_value(pol), str(w, "path")) == 0;
        }
        const char *res = str(w, "write");
        if (is_policy) {
            bool absent = json_is_false(json_object_get(w, "exists"));
            add(pev, sizeof(pev), "%s%s: %s", pev[0] ? "; " : "", str(w, "path"),
                absent ? "not visible" : res);
            if (!absent && !write_refused(res))
                pfail = true;
            continue;
        }
        nprot++;
        add(ev, sizeof(ev), "%s%s: write -> %s", ev[0] ? "; " : "", str(w, "path"), res);
        if (!write_refused(res))
            fail = true;
    }
    if (nprot == 0)
        row(r, "protected-paths", "SKIP",
            "none of the protected paths exists in this workspace (nothing to probe)");
    else
        row(r, "protected-paths", fail ? "FAIL" : "PASS", "%s", ev);
    row(r, "policy-dir", pfail ? "FAIL" : "PASS", "%s", pev);

    json_t *ws = json_array_get(json_object_get(p, "writable"), 0);
    const char *res = ws ? str(ws, "write") : "?";
    bool readonly = r->l->cfg.workspace_readonly;
    bool ok = readonly ? write_refused(res) : strcmp(res, "ok") == 0;
    row(r, "workspace", ok ? "PASS" : "FAIL", "%s (%s mode): creating a file -> %s",
        r->l->ws.view_root, readonly ? "read-only" : "writable", res);
}

static void check_landlock(struct verify_run *r, const json_t *p)
{
    json_t *ll = p ? json_object_get(p, "landlock") : NULL;
    if (r->l && !backend_is(r, BACKEND_CAP_HOST_LANDLOCK)) {
        /* The guest's kernel decides, not the host's; in a container,
         * Docker's profile too (the agent applies Landlock when it can). */
        const char *where = on_own_kernel(r) ? "the guest's kernel" : "the container";
        json_t *gabi = json_object_get(ll, "abi");
        if (!ll) {
            row(r, "landlock", "FAIL", "no probe answer");
        } else if (!json_is_integer(gabi)) {
            row(r, "landlock", "SKIP",
                "Landlock is not available in %s (%s): %s and the seccomp filter are the "
                "filesystem boundary inside",
                where, json_string_value(gabi) ? json_string_value(gabi) : "?",
                on_own_kernel(r) ? "the guest's mounts" : "the container's mounts");
        } else {
            const char *res = str(ll, "proc_self_comm_write");
            row(r, "landlock", strcmp(res, "EACCES") == 0 ? "PASS" : "FAIL",
                "%s ABI %lld; inside, opening /proc/self/comm for writing (allowed by the mounts, "
                "not by the ruleset) -> %s",
                on_own_kernel(r) ? "guest kernel" : "kernel (seen in the container)",
                (long long)json_integer_value(gabi), res);
        }
        return;
    }
    int abi = ns_landlock_abi();
    if (abi <= 0) {
        row(r, "landlock", "SKIP",
            "Landlock is not available on this kernel (%s): the mount namespace is the only "
            "filesystem boundary",
            strerrorname_np(-abi) ? strerrorname_np(-abi) : "?");
        return;
    }
    const char *res = ll ? str(ll, "proc_self_comm_write") : "?";
    row(r, "landlock", strcmp(res, "EACCES") == 0 ? "PASS" : "FAIL",
        "kernel ABI %d; inside, opening /proc/self/comm for writing (allowed by the mounts, not "
        "by the ruleset) -> %s",
        abi, res);
}

/* The CORDON-PROBE line of one output text; NULL (why filled) when there
 * is none (why left empty) or it is not JSON. */
static json_t *probe_answer_in(const char *text, char *why, size_t size)
{
    const char *at = text ? strstr(text, PROBE_MARKER) : NULL;
    if (!at)
        return NULL;
    at += strlen(PROBE_MARKER);
    json_error_t jerr;
    json_t *answer = json_loadb(at, strcspn(at, "\n"), 0, &jerr);
    if (json_is_object(answer))
        return answer;
    json_decref(answer);
    snprintf(why, size, "the probe's answer is not JSON: %s", jerr.text);
    return NULL;
}

/* Parses the CORDON-PROBE line out of the bash tool's output. */
static json_t *probe_answer(const struct tool_result *res, char *why, size_t size)
{
    if (!res) {
        snprintf(why, size, "the probe call failed");
        return NULL;
    }
    size_t i;
    json_t *part;
    json_array_foreach (res->content, i, part) {
        json_t *answer =
            probe_answer_in(json_string_value(json_object_get(part, "text")), why, size);
        if (answer || why[0])
            return answer;
    }
    json_t *first = json_array_get(res->content, 0);
    snprintf(why, size, "the probe printed no answer: %.300s",
             json_string_value(json_object_get(first, "text"))
                 ? json_string_value(json_object_get(first, "text"))
                 : "(no output)");
    return NULL;
}

/* The session's lock must be held (a fresh open file description cannot
 * take it) and its record must name this supervisor. */
static void check_ownership(struct verify_run *r)
{
    const char *dir = r->state_dir;
    if (!dir) {
        row(r, "ownership", "SKIP", "this session has no state directory (host session)");
        return;
    }
    char path[PATH_MAX], evidence[PATH_MAX + 200];
    snprintf(path, sizeof(path), "%s/lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(evidence, sizeof(evidence), "%s: %s", path, strerror(errno));
        row(r, "ownership", "FAIL", "%s", evidence);
        return;
    }
    bool held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    if (!held)
        flock(fd, LOCK_UN);
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    json_t *rec = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
    json_int_t pid = rec ? json_integer_value(json_object_get(rec, "pid")) : 0;
    json_decref(rec);
    snprintf(evidence, sizeof(evidence),
             "flock on %s: %s; the record names pid %lld, this supervisor is %d", path,
             held ? "busy (held)" : "free", (long long)pid, (int)getpid());
    row(r, "ownership", held && pid == getpid() ? "PASS" : "FAIL", "%s", evidence);
}

static json_t *judge(struct verify_run *r, json_t *p, const char *why);

json_t *verify_finish(struct verify_run *r, const struct tool_result *probe, const char *call_error)
{
    char why[512] = "";
    json_t *p = call_error ? NULL : probe_answer(probe, why, sizeof(why));
    if (call_error)
        snprintf(why, sizeof(why), "%s", call_error);
    return judge(r, p, why);
}

json_t *verify_finish_output(struct verify_run *r, const char *output, const char *probe_error)
{
    char why[512] = "";
    json_t *p = NULL;
    if (probe_error) {
        snprintf(why, sizeof(why), "%s", probe_error);
    } else {
        p = probe_answer_in(output, why, sizeof(why));
        if (!p && !why[0])
            snprintf(why, sizeof(why), "the probe printed no answer: %.300s",
                     output && output[0] ? output : "(no output)");
    }
    return judge(r, p, why);
}

json_t *verify_finish_init_probe(struct verify_run *r, const char *output, const char *end)
{
    char why[1024] = "";
    if (strcmp(end, "timeout") == 0)
        snprintf(why, sizeof(why), "the probe in the sandbox was killed after %d s (timeout)",
                 INIT_PROBE_TIMEOUT_MS / 1000);
    else if (strcmp(end, "exit 0") != 0)
        snprintf(why, sizeof(why), "the probe in the sandbox ended: %.200s; its output: %.300s",
                 end, output[0] ? output : "(none)");
    return verify_finish_output(r, output, why[0] ? why : NULL);
}

/* The probe's answer p (consumed; NULL: none, why says why) judged against
 * the host's facts. */
static json_t *judge(struct verify_run *r, json_t *p, const char *why)
{
    check_env(r, p);
    check_host_files(r, p);
    check_docker(r, p);
    check_ports(r);
    check_secrets(r);
    check_seccomp(r, p);
    check_privileges(r, p);
    check_namespaces(r, p);
    check_processes(r, p);
    check_network(r, p);
    check_writes(r, p);
    check_git_metadata(r, p);
    check_landlock(r, p);
    check_ownership(r);
    json_decref(p);

    int failed = 0, warnings = 0;
    size_t i;
    json_t *c;
    json_array_foreach (r->checks, i, c) {
        failed += strcmp(str(c, "status"), "FAIL") == 0;
        warnings += strcmp(str(c, "status"), "WARN") == 0;
    }
    json_t *report = json_pack("{s:s, s:s, s:i, s:i, s:O, s:O}", "sandbox", r->name, "result",
                               failed ? "FAIL" : "PASS", "failed", failed, "warnings", warnings,
                               "checks", r->checks, "host", r->host);
    if (why[0])
        json_object_set_new(report, "probe_error", json_string(why));
    /* which backend runs, and why (backend = "auto" says what it chose) */
    if (r->l)
        json_object_set_new(report, "backend",
                            json_pack("{s:s, s:s}", "name",
                                      cfg_enum_name(CFG_BACKEND, r->l->cfg.backend), "reason",
                                      r->l->backend_reason));
    if (failed) {
        char advice[512];
        snprintf(advice, sizeof(advice),
                 "Treat sandbox %s as compromised: stop using it, end the session and remove it "
                 "(`cordon rm %s`), then report the failed checks.",
                 r->name, r->name);
        json_object_set_new(report, "advice", json_string(advice));
    }
    return report;
}

void verify_free(struct verify_run *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nlisteners; i++)
        close(r->listeners[i].fd);
    free(r->name);
    free(r->state_dir);
    json_decref(r->host);
    json_decref(r->request);
    json_decref(r->checks);
    json_decref(r->host_names);
    free(r);
}

int verify_session(struct session *s, json_t **report, struct cordon_error *err)
{
    struct verify_run *r;
    json_t *args;
    if (verify_prepare(s, &r, &args, err) < 0)
        return -1;
    struct tool_result res = {0};
    struct cordon_error call_err = {0};
    int rc = session_call_sync(s, "bash", args, &res, &call_err);
    json_decref(args);
    *report = verify_finish(r, rc < 0 ? NULL : &res, rc < 0 ? call_err.message : NULL);
    tool_result_clear(&res);
    verify_free(r);
    return 0;
}

void verify_report_add_ownership(json_t *report, const char *name, bool held, pid_t record_pid,
                                 pid_t peer_pid)
{
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(report, "checks"), i, c) {
        if (strcmp(str(c, "check"), "ownership") != 0)
            continue;
        bool ok = held && record_pid > 0 && record_pid == peer_pid &&
                  strcmp(str(c, "status"), "PASS") == 0;
        char evidence[3072];
        snprintf(evidence, sizeof(evidence),
                 "%s; seen by `cordon verify %s`: the lock is %s, its record names pid %d, the "
                 "control socket's peer (SO_PEERCRED) is pid %d",
                 str(c, "evidence"), name, held ? "held" : "free", (int)record_pid, (int)peer_pid);
        json_object_set_new(c, "evidence", json_string(evidence));
        json_object_set_new(c, "status", json_string(ok ? "PASS" : "FAIL"));
    }
    int failed = 0;
    json_array_foreach (json_object_get(report, "checks"), i, c)
        failed += strcmp(str(c, "status"), "FAIL") == 0;
    json_object_set_new(report, "failed", json_integer(failed));
    json_object_set_new(report, "result", json_string(failed ? "FAIL" : "PASS"));
    if (failed && !json_object_get(report, "advice")) {
        char advice[512];
        snprintf(advice, sizeof(advice),
                 "Treat sandbox %s as compromised: stop using it, end the session and remove it "
                 "(`cordon rm %s`), then report the failed checks.",
                 name, name);
        json_object_set_new(report, "advice", json_string(advice));
    }
}

int verify_report_failed(const json_t *report)
{
    return (int)json_integer_value(json_object_get(report, "failed"));
}

char *verify_report_text(const json_t *report)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    fprintf(f, "cordon verify: sandbox %s\n", str(report, "sandbox"));
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(report, "checks"), i, c)
        fprintf(f, "%-4s  %-16s %s\n", str(c, "status"), str(c, "check"), str(c, "evidence"));
    if (json_object_get(report, "probe_error"))
        fprintf(f, "probe: %s\n", str(report, "probe_error"));
    const json_t *backend = json_object_get(report, "backend");
    if (backend)
        fprintf(f, "backend: %s (%s)\n", str(backend, "name"), str(backend, "reason"));
    int failed = verify_report_failed(report);
    int warnings = (int)json_integer_value(json_object_get(report, "warnings"));
    fprintf(f, "result: %s (%d failed, %d warning%s)\n", failed ? "FAIL" : "PASS", failed, warnings,
            warnings == 1 ? "" : "s");
    if (failed)
        fprintf(f, "%s\n", str(report, "advice"));
    fclose(f);
    return buf;
}

json_t *verify_tool_definition(void)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:{}}, s:{s:b, s:b, s:b}}", "name", "sandbox_verify", "description",
        "Audit this session's sandbox from inside and outside: environment scrubbing, host "
        "files and Docker sockets not visible, seccomp, no_new_privs, no capabilities, "
        "namespaces, processes, network egress, protected paths, Landlock. One row per check "
        "(PASS/FAIL/WARN/SKIP with evidence); structuredContent holds the report. If any check "
        "FAILs, treat the sandbox as compromised.",
        "inputSchema", "type", "object", "properties", "annotations", "readOnlyHint", 1,
        "destructiveHint", 0, "openWorldHint", 0);
}
