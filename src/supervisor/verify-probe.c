/* The verify audit's facts (verify.c): what the host sees of the agent
 * (its status, namespaces, environment, kernel), the listeners and paths
 * planted for the probe, and the probe request the sandbox answers. Host
 * context, unprivileged supervisor. */
#include "supervisor/verify-internal.h"
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

static const char *const docker_socket_paths[] = {
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
};

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
    for (size_t i = 0; i < ARRAY_SIZE(verify_ns_names); i++) {
        char path[64], link[64];
        if (pid > 0)
            snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, verify_ns_names[i]);
        else
            snprintf(path, sizeof(path), "/proc/self/ns/%s", verify_ns_names[i]);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        if (n > 0)
            json_object_set_new(o, verify_ns_names[i], json_string(link));
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
    for (size_t i = 0; i < ARRAY_SIZE(verify_sentinel_names); i++) {
        if (strlen(verify_sentinel_names[i]) == len &&
            strncmp(verify_sentinel_names[i], name, len) == 0)
            return true;
    }
    return false;
}

/* Flagged names in a NULL-terminated KEY=VALUE array, comma-separated. */
void flagged_in(char *const *env, char *out, size_t size, bool *probe_var)
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
json_t *host_paths(const struct launch *l, json_t *names)
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
    for (size_t i = 0; i < ARRAY_SIZE(verify_sentinel_names); i++)
        json_array_append_new(sentinels, json_string(verify_sentinel_names[i]));
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
