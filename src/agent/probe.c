/* `cordon-agent probe`: the in-sandbox half of `cordon verify`. Runs inside
 * the sandbox as an ordinary child of the bash tool (so it sees what any
 * command the agent runs sees), reads a JSON request on stdin naming what to
 * look at, and prints one line "CORDON-PROBE {json}" of observations. It
 * judges nothing: the supervisor compares the observations with what it
 * knows from the host side. Every list it reports is bounded. */
#include "agent/probe.h"
#include "proto/vm-docker-status.h"
#include "util/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define PROBE_INPUT_MAX (1u << 20)
/* Directory entries walked looking for sockets. /proc and /sys are not
 * files, and /usr (the host's, read-only, large) would take the budget. */
#define PROBE_SCAN_MAX    50000
#define PROBE_SOCKETS_MAX 32
#define PROBE_PROCS_MAX   64
#define PROBE_CONNECT_MS  1000

extern char **environ;

static const char *errno_name(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "EUNKNOWN";
}

/* "ok" or the errno's name: the form every observation takes. */
static json_t *outcome(int rc, int e)
{
    return json_string(rc >= 0 ? "ok" : errno_name(e));
}

/* One observation per element of LIST, in order; an element ONE answers
 * NULL for (not the shape asked for) is passed over. */
static json_t *observe_each(json_t *list, json_t *(*one)(json_t *item, const void *ctx),
                            const void *ctx)
{
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item) {
        json_t *o = one(item, ctx);
        if (o)
            json_array_append_new(out, o);
    }
    return out;
}

static json_t *status_fields(const char *path)
{
    static const char *const keys[] = {"Seccomp", "Seccomp_filters", "NoNewPrivs", "CapInh",
                                       "CapPrm",  "CapEff",          "CapBnd",     "CapAmb"};
    json_t *o = json_object();
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f) {
        json_object_set_new(o, "error", json_string(errno_name(errno)));
        return o;
    }
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            if (strcmp(line, keys[i]) == 0) {
                char *v = colon + 1;
                v += strspn(v, " \t");
                v[strcspn(v, "\n")] = '\0';
                json_object_set_new(o, keys[i], json_string(v));
            }
        }
    }
    return o;
}

static json_t *namespaces(const char *proc_dir)
{
    static const char *const names[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
    json_t *o = json_object();
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        char path[64], link[64];
        snprintf(path, sizeof(path), "%s/ns/%s", proc_dir, names[i]);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        json_object_set_new(o, names[i], json_string(n > 0 ? link : errno_name(errno)));
    }
    return o;
}

/* Blocked by the filter with EPERM/ENOSYS; without it these calls fail with
 * other errnos (their arguments are invalid), so the answer tells the two
 * apart. */
static json_t *syscall_attempts(void)
{
    json_t *o = json_object();
    errno = 0;
    long rc = syscall(SYS_keyctl, 0x7fff, 0, 0, 0, 0);
    json_object_set_new(o, "keyctl", outcome((int)rc, errno));
    rc = syscall(SYS_io_uring_setup, 0, NULL);
    json_object_set_new(o, "io_uring_setup", outcome((int)rc, errno));
    rc = syscall(SYS_clone3, NULL, 0);
    json_object_set_new(o, "clone3", outcome((int)rc, errno));
    rc = syscall(SYS_unshare, 0x80000000u);
    json_object_set_new(o, "unshare", outcome((int)rc, errno));
    return o;
}

static bool name_is_flagged(const char *name, size_t len, json_t *sentinels)
{
    if ((len > 7 && strncmp(name, "DOCKER_", 7) == 0) ||
        (len > 8 && strncmp(name, "COMPOSE_", 8) == 0))
        return true;
    size_t i;
    json_t *v;
    json_array_foreach (sentinels, i, v) {
        const char *s = json_string_value(v);
        if (s && strlen(s) == len && strncmp(s, name, len) == 0)
            return true;
    }
    return false;
}

static void scan_environ_block(const char *block, size_t size, json_t *sentinels, json_t *found,
                               const char *where)
{
    for (size_t off = 0; off < size;) {
        const char *entry = block + off;
        size_t elen = strnlen(entry, size - off);
        const char *eq = memchr(entry, '=', elen);
        size_t nlen = eq ? (size_t)(eq - entry) : elen;
        if (nlen && name_is_flagged(entry, nlen, sentinels) && json_array_size(found) < 32) {
            char buf[160];
            snprintf(buf, sizeof(buf), "%.*s (%s)", (int)(nlen > 120 ? 120 : nlen), entry, where);
            json_array_append_new(found, json_string(buf));
        }
        off += elen + 1;
    }
}

static json_t *environment(json_t *req)
{
    json_t *sentinels = json_object_get(req, "sentinels");
    json_t *found = json_array();
    for (char **e = environ; *e; e++)
        scan_environ_block(*e, strlen(*e) + 1, sentinels, found, "this process");
    /* The agent's own environment: what every tool call starts from. */
    int fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
    json_t *o = json_object();
    if (fd >= 0) {
        char buf[65536];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0)
            scan_environ_block(buf, (size_t)n, sentinels, found, "agent");
        json_object_set_new(o, "agent_environ", json_string(n >= 0 ? "read" : errno_name(errno)));
    } else {
        json_object_set_new(o, "agent_environ", json_string(errno_name(errno)));
    }
    json_object_set_new(o, "found", found);
    const char *probe_var = json_string_value(json_object_get(req, "probe_var"));
    json_object_set_new(o, "probe_var_present", json_boolean(probe_var && getenv(probe_var)));
    return o;
}

/* A host path: does the same file (device and inode) exist here, can it
 * be read? */
static json_t *host_path(json_t *p, const void *ctx)
{
    (void)ctx;
    const char *path = json_string_value(json_object_get(p, "path"));
    if (!path)
        return NULL;
    json_t *o = json_pack("{s:s}", "path", path);
    struct stat st;
    if (lstat(path, &st) < 0) {
        json_object_set_new(o, "stat", json_string(errno_name(errno)));
        return o;
    }
    json_object_set_new(o, "stat", json_string("ok"));
    bool same = (json_int_t)st.st_dev == json_integer_value(json_object_get(p, "dev")) &&
                (json_int_t)st.st_ino == json_integer_value(json_object_get(p, "ino"));
    json_object_set_new(o, "same_as_host", json_boolean(same));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    json_object_set_new(o, "open", outcome(fd, errno));
    if (fd >= 0)
        close(fd);
    return o;
}

static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len)
{
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -1;
    struct pollfd p = {fd, POLLOUT, 0};
    int n = poll(&p, 1, PROBE_CONNECT_MS);
    if (n == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
        errno = soerr;
        return -1;
    }
    return 0;
}

/* The vm guest's own Docker socket (vm-docker.c), by identity, when the
 * guest's init made one: it is reported apart (guest_docker) and never
 * pinged here, which would start an idle daemon. */
static dev_t guest_sock_dev;
static ino_t guest_sock_ino;

static bool is_guest_socket(const char *path)
{
    struct stat st;
    return guest_sock_ino && stat(path, &st) == 0 && st.st_dev == guest_sock_dev &&
           st.st_ino == guest_sock_ino;
}

/* Connects to a Unix socket and asks the Docker API's ping: "docker" is
 * true when something answered like a Docker (or Podman) daemon. */
static json_t *try_unix(const char *path)
{
    json_t *o = json_pack("{s:s}", "path", path);
    if (is_guest_socket(path)) {
        json_object_set_new(o, "connect", json_string("guest's own"));
        json_object_set_new(o, "guest_own", json_true());
        json_object_set_new(o, "docker", json_false());
        return o;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        json_object_set_new(o, "connect", json_string("ENAMETOOLONG"));
        return o;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -1 : connect_timeout(fd, (struct sockaddr *)&sa, sizeof(sa));
    json_object_set_new(o, "connect", outcome(rc, errno));
    bool docker = false;
    if (rc == 0) {
        static const char ping[] = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
        if (send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) > 0) {
            char buf[1024];
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, PROBE_CONNECT_MS) > 0) {
                ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
                buf[n > 0 ? n : 0] = '\0';
                docker = strcasestr(buf, "Api-Version") || strcasestr(buf, "Docker") ||
                         strcasestr(buf, "Libpod");
            }
        }
    }
    json_object_set_new(o, "docker", json_boolean(docker));
    return o;
}

struct scan {
    size_t entries;
    json_t *found;
    json_t *host_paths; /* [{id, dev, ino, path?}]: host files to look for anywhere */
    json_t *found_host; /* [{inside, host}] */
};

/* A host file seen at another path (a bind mount of ~/.ssh elsewhere):
 * compared by device and inode, the one identity a mount cannot change. */
static void match_host_identity(struct scan *sc, const char *path)
{
    struct stat st;
    if (json_array_size(sc->found_host) >= PROBE_SOCKETS_MAX || lstat(path, &st) < 0)
        return;
    size_t i;
    json_t *h;
    json_array_foreach (sc->host_paths, i, h) {
        if ((json_int_t)st.st_dev == json_integer_value(json_object_get(h, "dev")) &&
            (json_int_t)st.st_ino == json_integer_value(json_object_get(h, "ino")))
            json_array_append_new(sc->found_host, json_pack("{s:s, s:O}", "inside", path, "host",
                                                            json_object_get(h, "id")));
    }
}

static void scan_dir(struct scan *sc, const char *dir, int depth)
{
    if (depth > 12 || sc->entries >= PROBE_SCAN_MAX)
        return;
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && sc->entries < PROBE_SCAN_MAX) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        sc->entries++;
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name) >=
            (int)sizeof(path))
            continue;
        if (de->d_type == DT_SOCK) {
            if (json_array_size(sc->found) < PROBE_SOCKETS_MAX)
                json_array_append_new(sc->found, try_unix(path));
        } else if (de->d_type == DT_DIR || de->d_type == DT_REG) {
            /* Directories are stat'ed (a mount point's d_ino is the
             * covered directory's); files only when d_ino matches. */
            bool candidate = de->d_type == DT_DIR;
            size_t k;
            json_t *h;
            json_array_foreach (sc->host_paths, k, h) {
                candidate |= (json_int_t)de->d_ino == json_integer_value(json_object_get(h, "ino"));
            }
            if (candidate)
                match_host_identity(sc, path);
        }
        if (de->d_type == DT_DIR) {
            if (depth == 0 && (strcmp(de->d_name, "proc") == 0 || strcmp(de->d_name, "sys") == 0 ||
                               strcmp(de->d_name, "usr") == 0))
                continue;
            scan_dir(sc, path, depth + 1);
        }
    }
}

/* GET path over the Docker socket; the response (headers and body) in buf. */
static int docker_get(const char *path, char *buf, size_t size, struct ucred *cred)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = VM_DOCKER_SOCKET};
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(*cred);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0)
        return -1;
    char req[256];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", path);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        return -1;
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (got + 1 >= size || poll(&p, 1, 10000) <= 0)
            break;
        ssize_t r = recv(fd, buf + got, size - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    return got ? 0 : -1;
}

/* Docker inside the vm guest: what its init started (the status file) and
 * what answers on the socket: the socket file must be the one init made
 * (inode, root's), its listener the guest's init (SO_PEERCRED pid 1, uid
 * 0), and the daemon's ID seen through it the ID the keeper recorded. Null
 * when the guest runs no Docker (and in the ns backend). */
static json_t *guest_docker(void)
{
    json_error_t jerr;
    json_t *st = json_load_file(VM_DOCKER_STATUS, 0, &jerr);
    if (!json_is_object(st)) {
        json_decref(st);
        return json_null();
    }
    json_t *o = json_object();
    static const char *const keys[] = {"state", "reason", "pid", "id"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (json_object_get(st, keys[i]))
            json_object_set(o, keys[i], json_object_get(st, keys[i]));
    const char *state = json_string_value(json_object_get(st, "state"));
    const char *want_id = json_string_value(json_object_get(st, "id"));
    struct stat sock;
    bool own = false;
    char detail[512] = "";
    if (stat(VM_DOCKER_SOCKET, &sock) < 0) {
        snprintf(detail, sizeof(detail), "no socket at " VM_DOCKER_SOCKET);
        own = state && strcmp(state, "ready") != 0;
    } else if ((json_int_t)sock.st_ino != json_integer_value(json_object_get(st, "path_ino")) ||
               sock.st_uid != 0 || !S_ISSOCK(sock.st_mode)) {
        snprintf(detail, sizeof(detail),
                 VM_DOCKER_SOCKET " is not the socket the guest's init made");
    } else {
        guest_sock_dev = sock.st_dev;
        guest_sock_ino = sock.st_ino;
        if (!state || strcmp(state, "ready") != 0) {
            own = true;
            snprintf(detail, sizeof(detail), "socket made by the guest's init (inode %llu, root's)",
                     (unsigned long long)sock.st_ino);
        } else {
            static char buf[65536];
            struct ucred cred = {0};
            if (docker_get("/info", buf, sizeof(buf), &cred) < 0) {
                snprintf(detail, sizeof(detail), "no answer on " VM_DOCKER_SOCKET ": %s",
                         strerror(errno));
            } else {
                char seen[128] = "";
                const char *id = strstr(buf, "\"ID\":\"");
                if (id)
                    sscanf(id + 6, "%127[^\"]", seen);
                json_object_set_new(o, "id_seen", json_string(seen));
                json_object_set_new(o, "peer_pid", json_integer(cred.pid));
                json_object_set_new(o, "peer_uid", json_integer(cred.uid));
                own = cred.pid == 1 && cred.uid == 0 && want_id && strcmp(seen, want_id) == 0;
                snprintf(detail, sizeof(detail),
                         "listener pid %d uid %u; daemon ID seen %s, started %s", (int)cred.pid,
                         cred.uid, seen[0] ? seen : "(none)", want_id ? want_id : "(none)");
            }
        }
    }
    json_object_set_new(o, "own", json_boolean(own));
    json_object_set_new(o, "detail", json_string(detail));
    json_decref(st);
    return o;
}

static json_t *known_socket(json_t *path, const void *ctx)
{
    (void)ctx;
    return json_is_string(path) ? try_unix(json_string_value(path)) : NULL;
}

static json_t *sockets(json_t *req)
{
    json_t *o = json_object();
    json_object_set_new(o, "known",
                        observe_each(json_object_get(req, "sockets"), known_socket, NULL));
    struct scan sc = {.found = json_array(),
                      .host_paths = json_object_get(req, "host_paths"),
                      .found_host = json_array()};
    scan_dir(&sc, "/", 0);
    json_object_set_new(o, "found", sc.found);
    json_object_set_new(o, "host_files_elsewhere", sc.found_host);
    json_object_set_new(o, "scanned", json_integer((json_int_t)sc.entries));
    json_object_set_new(o, "scan_complete", json_boolean(sc.entries < PROBE_SCAN_MAX));
    return o;
}

static json_t *tcp_attempt(json_t *t, const void *ctx)
{
    (void)ctx;
    const char *addr = json_string_value(json_object_get(t, "addr"));
    json_int_t port = json_integer_value(json_object_get(t, "port"));
    if (!addr)
        return NULL;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    json_t *o = json_pack("{s:s, s:I}", "addr", addr, "port", port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        json_object_set_new(o, "connect", json_string("EINVAL"));
    } else {
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int rc = fd < 0 ? -1 : connect_timeout(fd, (struct sockaddr *)&sa, sizeof(sa));
        json_object_set_new(o, "connect", outcome(rc, errno));
    }
    return o;
}

/* Allowlist mode: asks cordon's proxy (inside, on loopback, at the port
 * ctx points to) to CONNECT to the target; the status line is the
 * observation. */
static json_t *proxy_attempt(json_t *t, const void *ctx)
{
    json_int_t port = *(const json_int_t *)ctx;
    const char *target = json_string_value(t);
    if (!target || port <= 0)
        return NULL;
    json_t *o = json_pack("{s:s}", "target", target);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -1 : connect_timeout(fd, (struct sockaddr *)&sa, sizeof(sa));
    json_object_set_new(o, "connect", outcome(rc, errno));
    char line[512] = "";
    if (rc == 0) {
        char msg[256];
        int n =
            snprintf(msg, sizeof(msg), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
        struct pollfd p = {fd, POLLIN, 0};
        if (send(fd, msg, (size_t)n, MSG_NOSIGNAL) == n && poll(&p, 1, 3000) > 0) {
            ssize_t m = recv(fd, line, sizeof(line) - 1, 0);
            line[m > 0 ? m : 0] = '\0';
            line[strcspn(line, "\r\n")] = '\0';
        }
    }
    json_object_set_new(o, "status", json_string(line));
    return o;
}

static json_t *proxy_attempts(json_t *req)
{
    json_t *proxy = json_object_get(req, "proxy");
    json_int_t port = json_integer_value(json_object_get(proxy, "port"));
    return observe_each(json_object_get(proxy, "targets"), proxy_attempt, &port);
}

/* The outcome of opening path with flags (O_CREAT: mode 0600); what was
 * opened is closed, and removed again with remove. */
static json_t *open_outcome(const char *path, int flags, bool remove)
{
    int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = errno;
    if (fd >= 0) {
        close(fd);
        if (remove)
            unlink(path);
    }
    return outcome(fd, e);
}

/* Creates the named file (the git metadata check: the host looks for it
 * in its own git directory afterwards); the file stays, in the sandbox's
 * copy, where the session's teardown removes it. */
static json_t *plant_attempt(json_t *p, const void *ctx)
{
    (void)ctx;
    const char *path = json_string_value(p);
    if (!path)
        return NULL;
    return json_pack("{s:s, s:o}", "path", path, "write",
                     open_outcome(path, O_WRONLY | O_CREAT | O_EXCL, false));
}

/* Can a new file be made in a directory (or a file opened for writing)?
 * Nothing is left behind and no existing file is changed: O_WRONLY without
 * O_TRUNC writes nothing. */
static json_t *write_attempt(json_t *p, const void *ctx)
{
    (void)ctx;
    const char *path = json_string_value(p);
    if (!path)
        return NULL;
    json_t *o = json_pack("{s:s}", "path", path);
    struct stat st;
    if (stat(path, &st) < 0) {
        json_object_set_new(o, "exists", json_false());
        json_object_set_new(o, "write", json_string(errno_name(errno)));
    } else if (S_ISDIR(st.st_mode)) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s/.cordon-verify-%d-%ld", path, getpid(), (long)time(NULL));
        json_object_set_new(o, "write", open_outcome(tmp, O_WRONLY | O_CREAT | O_EXCL, true));
    } else {
        json_object_set_new(o, "write",
                            open_outcome(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY, false));
    }
    return o;
}

/* How many pids /proc/PID/status's NSpid names (the namespaces from this
 * /proc's down to the process's own), 0 when unknown. */
static int nspid_levels(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        int levels = 0;
        char *save = NULL;
        for (char *t = strtok_r(line + 6, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
            levels++;
        return levels;
    }
    return 0;
}

static json_t *processes(json_t *req)
{
    json_t *o = json_object();
    char own[64] = "";
    ssize_t n = readlink("/proc/self/ns/pid", own, sizeof(own) - 1);
    own[n > 0 ? n : 0] = '\0';
    /* This /proc is our own namespace's. */
    bool own_level = nspid_levels((long)getpid()) == 1;
    json_t *foreign = json_array();
    json_int_t count = 0;
    _cleanup_closedir_ DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        count++;
        char path[64], link[64];
        snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
        ssize_t m = readlink(path, link, sizeof(link) - 1);
        int e = errno;
        link[m > 0 ? m : 0] = '\0';
        /* EACCES: PID 1 is not dumpable; it is in our namespace by
         * construction (it is our namespace's init). A process of another
         * Landlock domain (the docker backend's probe is a `docker exec`,
         * not init's child) is no ptrace target either: its status, which
         * needs no such access, names one pid per namespace from this
         * /proc's down, so one is this namespace's own. */
        bool same = (m > 0 && strcmp(link, own) == 0) || (m < 0 && pid == 1) ||
                    (m < 0 && e == EACCES && own_level && nspid_levels(pid) == 1);
        if (!same && json_array_size(foreign) < PROBE_PROCS_MAX)
            json_array_append_new(foreign, json_integer(pid));
    }
    json_object_set_new(o, "count", json_integer(count));
    json_object_set_new(o, "foreign", foreign);
    char comm[64] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/1/comm", "re");
    if (f && fgets(comm, sizeof(comm), f))
        comm[strcspn(comm, "\n")] = '\0';
    json_object_set_new(o, "pid1_comm", json_string(comm));
    json_int_t sup = json_integer_value(json_object_get(req, "supervisor_pid"));
    if (sup > 1) {
        int rc = kill((pid_t)sup, 0);
        json_object_set_new(o, "kill_supervisor_pid", outcome(rc, errno));
    }
    return o;
}

/* The probe's own open descriptors, by kind ("0 pipe", "3 socket"): what
 * whoever started it left it holding (evidence; nothing of the supervisor's
 * should be among them). */
static json_t *descriptors(void)
{
    json_t *list = json_array();
    _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    while (d && (de = readdir(d)) && json_array_size(list) < PROBE_PROCS_MAX) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || de->d_name[0] == '.' || fd == dirfd(d))
            continue;
        char link[256] = "";
        ssize_t m = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
        link[m > 0 ? m : 0] = '\0';
        const char *kind = strncmp(link, "socket:", 7) == 0        ? "socket"
                           : strncmp(link, "pipe:", 5) == 0        ? "pipe"
                           : strncmp(link, "anon_inode:", 11) == 0 ? link + 11
                                                                   : "file";
        char item[sizeof(link) + 32];
        snprintf(item, sizeof(item), "%ld %s", fd, kind);
        json_array_append_new(list, json_string(item));
    }
    return list;
}

/* Which kernel this is (a microVM's guest has its own: another boot_id),
 * and what the pids the host named are here: on the vm backend a host pid
 * is at most a number the guest happens to use too, for another process. */
static json_t *kernel_identity(json_t *req)
{
    json_t *o = json_object();
    char boot_id[64] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f && fgets(boot_id, sizeof(boot_id), f))
        boot_id[strcspn(boot_id, "\n")] = '\0';
    json_object_set_new(o, "boot_id", json_string(boot_id));
    struct utsname u;
    if (uname(&u) == 0) {
        json_object_set_new(o, "release", json_string(u.release));
        json_object_set_new(o, "version", json_string(u.version));
    }
    json_t *pids = json_array();
    json_t *asked = json_object_get(req, "host_pids");
    for (size_t i = 0; i < json_array_size(asked) && i < PROBE_PROCS_MAX; i++) {
        json_int_t pid = json_integer_value(json_array_get(asked, i));
        if (pid <= 0)
            continue;
        char path[64], comm[64] = "";
        snprintf(path, sizeof(path), "/proc/%lld/comm", (long long)pid);
        _cleanup_fclose_ FILE *c = fopen(path, "re");
        int e = errno;
        if (c && fgets(comm, sizeof(comm), c))
            comm[strcspn(comm, "\n")] = '\0';
        json_array_append_new(
            pids, json_pack("{s:I, s:s}", "pid", pid, "comm", c ? comm : errno_name(e)));
    }
    json_object_set_new(o, "host_pids", pids);
    return o;
}

static json_t *landlock(void)
{
    json_t *o = json_object();
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    json_object_set_new(o, "abi", abi < 0 ? json_string(errno_name(errno)) : json_integer(abi));
    /* /proc is writable as a mount but not among Landlock's writable
     * places: only Landlock refuses this open. */
    int fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
    json_object_set_new(o, "proc_self_comm_write", outcome(fd, errno));
    if (fd >= 0)
        close(fd);
    return o;
}

int agent_probe(void)
{
    _cleanup_free_ char *input = malloc(PROBE_INPUT_MAX);
    size_t len = 0;
    ssize_t n;
    while (input && len < PROBE_INPUT_MAX && (n = read(0, input + len, PROBE_INPUT_MAX - len)) > 0)
        len += (size_t)n;
    json_error_t jerr;
    json_t *req = input ? json_loadb(input, len, 0, &jerr) : NULL;
    if (!json_is_object(req)) {
        fprintf(stderr, "cordon-agent probe: expected a JSON object on stdin\n");
        json_decref(req);
        return 2;
    }
    json_t *out = json_object();
    json_object_set_new(out, "status", status_fields("/proc/self/status"));
    json_object_set_new(out, "agent_status", status_fields("/proc/1/status"));
    json_object_set_new(out, "ns", namespaces("/proc/self"));
    json_object_set_new(out, "syscalls", syscall_attempts());
    json_object_set_new(out, "env", environment(req));
    json_object_set_new(out, "host_paths",
                        observe_each(json_object_get(req, "host_paths"), host_path, NULL));
    /* Before the socket scan: it identifies the guest's own socket. */
    json_object_set_new(out, "guest_docker", guest_docker());
    json_object_set_new(out, "sockets", sockets(req));
    json_object_set_new(out, "tcp", observe_each(json_object_get(req, "tcp"), tcp_attempt, NULL));
    json_object_set_new(out, "proxy", proxy_attempts(req));
    json_object_set_new(out, "writable",
                        observe_each(json_object_get(req, "writable"), write_attempt, NULL));
    json_object_set_new(out, "readonly",
                        observe_each(json_object_get(req, "readonly"), write_attempt, NULL));
    json_object_set_new(out, "plant",
                        observe_each(json_object_get(req, "plant"), plant_attempt, NULL));
    json_object_set_new(out, "processes", processes(req));
    json_object_set_new(out, "fds", descriptors());
    json_object_set_new(out, "landlock", landlock());
    json_object_set_new(out, "kernel", kernel_identity(req));
    _cleanup_free_ char *text = json_dumps(out, JSON_COMPACT);
    printf("CORDON-PROBE %s\n", text ? text : "{}");
    json_decref(out);
    json_decref(req);
    return 0;
}
