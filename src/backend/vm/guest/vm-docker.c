/* Docker inside the microVM (issue 9): the guest's init creates the Docker
 * socket and forks the keeper, a root process of the guest that prepares the
 * daemon's storage (the guest-private virtio-blk disk, formatted on first
 * use, mounted on /var/lib/docker), starts dockerd with the socket handed
 * over as fd 3 (LISTEN_FDS, as systemd's socket activation does) and an
 * environment of its own, probes it with the docker client pinned to the
 * socket, verifies that the daemon answering is the one it started, and
 * records the outcome in VM_DOCKER_STATUS for the agent's probe. Guest
 * context, root in the guest; nothing here runs on the host.
 *
 * Why activation: dockerd and containerd take seconds to start under TCG
 * and would compete with the agent for the guest's only vCPU. With "auto"
 * the daemon starts when something first connects; that client simply
 * waits in the socket's backlog. "require" starts it during the boot and
 * the boot fails when it does not come up. */
#include "backend/vm/guest/vm-docker.h"
#include "backend/vm/guest/vm-guest.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/clock.h"
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DOCKER_RUN_SOCKET "/run/docker.sock"
#define DOCKER_PIDFILE    "/run/docker.pid"
#define DOCKER_LOG        "/var/log/dockerd.log"
#define DOCKER_DISK       "/dev/vda"
#define DOCKER_DATA_ROOT  "/var/lib/docker"
/* Under TCG the daemon answers 5-10 s after it starts; a loaded host
 * stretches that several times. */
#define DOCKER_READY_MS 120000
#define DOCKER_PATH     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct keeper {
    const char *mode; /* "auto" or "require" */
    const char *dockerd;
    json_t *proxy_env; /* the allowlist proxy's variables, or empty */
    int listener;
    ino_t socket_ino; /* the listening socket's (sockfs) inode: "socket:[N]" in /proc */
    dev_t path_dev;   /* the socket file's identity in /run */
    ino_t path_ino;
    int report_fd; /* to the waiting init ("require"), or -1 */
    long long started_ms;
    pid_t daemon;
};

/* Replaces the status file in one rename: the probe never reads half of it. */
static void status_write(const struct keeper *k, const char *state, const char *reason,
                         json_t *extra)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "mode", k->mode, "state", state, "reason",
                          reason ? reason : "", "socket_ino", (json_int_t)k->socket_ino, "path_ino",
                          (json_int_t)k->path_ino, "log", DOCKER_LOG);
    if (!o)
        return;
    if (extra)
        json_object_update(o, extra);
    if (fs_mkdir_p("/run/cordon", 0755) == 0)
        json_dump_file(o, VM_DOCKER_STATUS ".tmp", JSON_COMPACT);
    chmod(VM_DOCKER_STATUS ".tmp", 0644);
    rename(VM_DOCKER_STATUS ".tmp", VM_DOCKER_STATUS);
    json_decref(o);
}

static int load_docker_modules(char *reason, size_t size)
{
    struct cordon_error err;
    if (guest_load_modules("/cordon/modules.docker", &err) == 0)
        return 0;
    snprintf(reason, size, "%.400s", err.message); /* reason buffers are 512 bytes */
    return -1;
}

/* Runs argv (absolute or found in DOCKER_PATH) with a clean environment,
 * stdout captured into out; kills it at the deadline, or as soon as the
 * process watch (when > 0) has exited: a client queued on the socket of a
 * dead daemon would wait forever. Exit status, or -1. */
static int run_capture(char *const *argv, char *out, size_t size, long long deadline, pid_t watch)
{
    int pipefd[2];
    pid_t pid = proc_fork_pipe(pipefd);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *env[] = {"PATH=" DOCKER_PATH, "HOME=/run/cordon/docker-client", NULL};
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 0);
        /* The client must never pick another daemon: no config, no
         * context, only the socket on the command line. */
        execvpe(argv[0], argv, env);
        _exit(127);
    }
    close(pipefd[1]);
    size_t len = 0;
    out[0] = '\0';
    bool watched_exited = false;
    for (;;) {
        siginfo_t si = {0};
        /* WNOWAIT: the caller reaps it and reads its status. */
        if (watch > 0 && waitid(P_PID, (id_t)watch, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == watch) {
            watched_exited = true;
            break;
        }
        long long left = deadline - clock_now_ms();
        struct pollfd p = {pipefd[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
            if (left <= 0 || errno != EINTR)
                break;
            continue;
        }
        if (!p.revents)
            continue;
        char buf[512];
        ssize_t n = read(pipefd[0], buf, sizeof(buf));
        if (n <= 0)
            break;
        size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
        memcpy(out + len, buf, take);
        len += take;
        out[len] = '\0';
    }
    close(pipefd[0]);
    if (clock_now_ms() >= deadline || watched_exited)
        kill(pid, SIGKILL);
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* An ext4 superblock on the disk? (magic 0xEF53 at byte 1080) */
static bool disk_formatted(void)
{
    _cleanup_close_ int fd = open(DOCKER_DISK, O_RDONLY | O_CLOEXEC);
    unsigned char magic[2];
    return fd >= 0 && pread(fd, magic, 2, 1080) == 2 && magic[0] == 0x53 && magic[1] == 0xEF;
}

/* The daemon's storage: the guest-private disk (formatted here the first
 * time; kept by `stop`, removed with the session's state) on
 * /var/lib/docker. Without the disk, the tmpfs already there stays. */
static int prepare_storage(char *reason, size_t size)
{
    long long deadline = clock_now_ms() + 5000;
    struct stat st;
    while (stat(DOCKER_DISK, &st) < 0 && clock_now_ms() < deadline)
        usleep(10000);
    if (stat(DOCKER_DISK, &st) < 0)
        return 0;
    if (!disk_formatted()) {
        char out[1024];
        char *argv[] = {"/usr/sbin/mkfs.ext4",
                        "-q",
                        "-F",
                        "-m",
                        "0",
                        "-E",
                        "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
                        "-L",
                        "cordon-docker",
                        DOCKER_DISK,
                        NULL};
        int rc = run_capture(argv, out, sizeof(out), clock_now_ms() + 60000, 0);
        if (rc != 0) {
            snprintf(reason, size, "formatting the Docker disk (mkfs.ext4): exit %d: %.300s", rc,
                     out);
            return -1;
        }
    }
    /* commit=1: the guest may end without a sync (a session's agent exits,
     * QEMU is stopped); in ordered mode at most a second of writes is lost
     * and the filesystem stays consistent for the next boot of a kept
     * session. */
    if (mount(DOCKER_DISK, DOCKER_DATA_ROOT, "ext4", MS_NODEV | MS_NOATIME, "commit=1") < 0) {
        snprintf(reason, size, "mounting the Docker disk on " DOCKER_DATA_ROOT ": %s",
                 strerror(errno));
        return -1;
    }
    chmod(DOCKER_DATA_ROOT, 0711);
    return 0;
}

/* What dockerd needs of the guest that a plain boot does not build. */
static int prepare_guest(char *reason, size_t size)
{
    if (load_docker_modules(reason, size) < 0)
        return -1;
    static const struct {
        const char *src, *dst, *type, *data;
        unsigned long flags;
    } mounts[] = {
        {"cgroup2", "/sys/fs/cgroup", "cgroup2", "nsdelegate", MS_NOSUID | MS_NODEV | MS_NOEXEC},
        /* daemon.json and the daemon's key: the host's /etc/docker is never shared. */
        {"tmpfs", "/etc/docker", "tmpfs", "mode=0700,size=4m,nr_inodes=1024", MS_NOSUID | MS_NODEV},
        {"tmpfs", "/var/log", "tmpfs", "mode=0755,size=64m,nr_inodes=16384", MS_NOSUID | MS_NODEV},
    };
    for (size_t i = 0; i < ARRAY_SIZE(mounts); i++) {
        if (mount(mounts[i].src, mounts[i].dst, mounts[i].type, mounts[i].flags, mounts[i].data) <
                0 &&
            errno != EBUSY) {
            snprintf(reason, size, "mounting %s on %s: %s", mounts[i].type, mounts[i].dst,
                     strerror(errno));
            return -1;
        }
    }
    /* dockerd warns on every `docker run` ("IPv4 forwarding is disabled.
     * Networking will not work.") while the guest's ip_forward is 0. With
     * --bridge=none a container has loopback only (or the guest's network
     * with --network host) whatever it says: there is no second interface
     * to forward between, and the guest's root, who could add one, could
     * set this too. So it is on, and the warning that misled is gone. */
    int fwd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
    if (fwd >= 0) {
        ssize_t w = write(fwd, "1", 1);
        (void)w;
        close(fwd);
    }
    return prepare_storage(reason, size);
}

static bool overlay_available(void)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/filesystems", "re");
    char line[128];
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "\toverlay\n"))
            return true;
    return false;
}

static pid_t start_daemon(struct keeper *k, char *reason, size_t size)
{
    int log = open(DOCKER_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log < 0) {
        snprintf(reason, size, "opening " DOCKER_LOG ": %s", strerror(errno));
        return -1;
    }
    bool overlay = overlay_available();
    pid_t pid = fork();
    if (pid < 0) {
        close(log);
        snprintf(reason, size, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* The socket as fd 3, the only inherited descriptor besides stdio. */
        if (k->listener == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(k->listener, 3) < 0)
            _exit(127);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        dup2(null, 0);
        dup2(log, 1);
        dup2(log, 2);
        setsid();
        char listen_pid[32];
        snprintf(listen_pid, sizeof(listen_pid), "LISTEN_PID=%d", (int)getpid());
        /* A fresh environment: no DOCKER_*, COMPOSE_*, LD_* or anything
         * else of the host user's. DOCKER_RAMDISK is cordon's own: the
         * guest's root is the initramfs, where pivot_root(2) fails, so
         * runc enters a container's root with MS_MOVE and chroot instead
         * (a container is guest-root code either way: safety-model.md). */
        char *env[16] = {"PATH=" DOCKER_PATH, "HOME=/root", listen_pid, "LISTEN_FDS=1",
                         "DOCKER_RAMDISK=true"};
        size_t n = 5;
        /* The allowlist proxy's variables: pulls go where the agent may go. */
        for (size_t i = 0; i < json_array_size(k->proxy_env) && n + 1 < ARRAY_SIZE(env); i++)
            env[n++] = (char *)json_string_value(json_array_get(k->proxy_env, i));
        env[n] = NULL;
        /* Only the socket handed over (no TCP); no bridge and no iptables:
         * a container gets loopback of its own, or the guest's network
         * with --network host, never more than the guest has. */
        char *argv[] = {(char *)k->dockerd,
                        "-H",
                        "fd://",
                        "--data-root=" DOCKER_DATA_ROOT,
                        "--exec-root=/run/docker",
                        "--pidfile=" DOCKER_PIDFILE,
                        "--bridge=none",
                        "--iptables=false",
                        "--ip-masq=false",
                        "--ip-forward=false",
                        overlay ? "--storage-driver=overlay2" : "--storage-driver=vfs",
                        NULL};
        execve(k->dockerd, argv, env);
        dprintf(2, "exec %s: %s\n", k->dockerd, strerror(errno));
        _exit(127);
    }
    close(log);
    return pid;
}

/* The pid in the daemon's pidfile. */
static pid_t pidfile_pid(void)
{
    _cleanup_fclose_ FILE *f = fopen(DOCKER_PIDFILE, "re");
    int pid = 0;
    if (!f || fscanf(f, "%d", &pid) != 1)
        return -1;
    return (pid_t)pid;
}

/* Does process pid hold the socket whose inode is ino? */
static bool holds_socket(pid_t pid, ino_t ino)
{
    char dir[64], want[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long)ino);
    _cleanup_closedir_ DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char target[64];
        ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strcmp(target, want) == 0)
                return true;
        }
    }
    return false;
}

/* The socket at VM_DOCKER_SOCKET is the keeper's (same inode, root's,
 * created by the guest's init: SO_PEERCRED names the process that listened,
 * pid 1), and the daemon answering through it is the one the keeper started
 * (the pidfile names it and it holds that socket). */
static int verify_daemon(const struct keeper *k, char *reason, size_t size)
{
    struct stat st;
    if (stat(VM_DOCKER_SOCKET, &st) < 0 || !S_ISSOCK(st.st_mode))
        return snprintf(reason, size, VM_DOCKER_SOCKET " is not a socket"), -1;
    if (st.st_ino != k->path_ino || st.st_dev != k->path_dev || st.st_uid != 0)
        return snprintf(reason, size,
                        VM_DOCKER_SOCKET " was replaced (inode %llu, owner %u; expected %llu, 0)",
                        (unsigned long long)st.st_ino, st.st_uid, (unsigned long long)k->path_ino),
               -1;
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = VM_DOCKER_SOCKET};
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return snprintf(reason, size, "connecting to " VM_DOCKER_SOCKET ": %s", strerror(errno)),
               -1;
    if (cred.pid != 1 || cred.uid != 0)
        return snprintf(reason, size,
                        VM_DOCKER_SOCKET " is served by pid %d uid %u, not the guest's init",
                        (int)cred.pid, cred.uid),
               -1;
    pid_t named = pidfile_pid();
    if (named != k->daemon)
        return snprintf(reason, size, DOCKER_PIDFILE " names pid %d, the keeper started %d",
                        (int)named, (int)k->daemon),
               -1;
    if (!holds_socket(k->daemon, k->socket_ino))
        return snprintf(reason, size, "dockerd (pid %d) does not hold the socket", (int)k->daemon),
               -1;
    return 0;
}

/* The daemon log's last line: the reason a failed start gives (the log
 * itself goes with the guest). */
static void log_last_line(char *out, size_t size)
{
    out[0] = '\0';
    _cleanup_close_ int fd = open(DOCKER_LOG, O_RDONLY | O_CLOEXEC);
    char buf[1024];
    off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (end <= 0)
        return;
    off_t start = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, start);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    const char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    size_t len = strnlen(line, size - 1);
    memcpy(out, line, len);
    out[len] = '\0';
}

static void report(struct keeper *k, const char *verdict)
{
    if (k->report_fd < 0)
        return;
    if (write(k->report_fd, verdict, strlen(verdict)) < 0) {
        /* init is gone: nothing to tell */
    }
    close(k->report_fd);
    k->report_fd = -1;
}

/* The keeper's failure: no daemon, no socket (clients get "cannot connect"
 * instead of waiting forever), the reason in the status file. */
static void keeper_fail(struct keeper *k, const char *reason) __attribute__((noreturn));

static void keeper_fail(struct keeper *k, const char *reason)
{
    if (k->daemon > 0) {
        kill(k->daemon, SIGKILL);
        waitpid(k->daemon, NULL, 0);
    }
    unlink(DOCKER_RUN_SOCKET);
    close(k->listener);
    status_write(k, "unavailable", reason, NULL);
    char verdict[600];
    snprintf(verdict, sizeof(verdict), "unavailable: %s", reason);
    report(k, verdict);
    _exit(1);
}

static void keeper_run(struct keeper *k) __attribute__((noreturn));

static void keeper_run(struct keeper *k)
{
    prctl(PR_SET_NAME, "cordon-docker");
    /* Out of the init's session: no signal meant for a command reaches it. */
    setsid();
    char reason[512] = "";
    if (strcmp(k->mode, "require") != 0) {
        /* "auto": start on the first connection (which waits in the backlog). */
        struct pollfd p = {k->listener, POLLIN, 0};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
    }
    k->started_ms = clock_now_ms();
    status_write(k, "starting", NULL, NULL);
    if (prepare_guest(reason, sizeof(reason)) < 0)
        keeper_fail(k, reason);
    k->daemon = start_daemon(k, reason, sizeof(reason));
    if (k->daemon < 0)
        keeper_fail(k, reason);
    json_t *extra = json_pack("{s:I}", "pid", (json_int_t)k->daemon);
    status_write(k, "starting", NULL, extra);
    json_decref(extra);

    long long deadline = clock_now_ms() + DOCKER_READY_MS;
    char version[256] = "", id[256] = "";
    char *vargv[] = {"docker",  "-H",       "unix://" VM_DOCKER_SOCKET,
                     "version", "--format", "{{.Server.Version}}",
                     NULL};
    char *iargv[] = {"docker",  "-H", "unix://" VM_DOCKER_SOCKET, "info", "--format",
                     "{{.ID}}", NULL};
    int rc = run_capture(vargv, version, sizeof(version), deadline, k->daemon);
    if (rc == 0)
        rc = run_capture(iargv, id, sizeof(id), deadline, k->daemon);
    int ws;
    if (waitpid(k->daemon, &ws, WNOHANG) == k->daemon) {
        k->daemon = -1;
        char last[240];
        log_last_line(last, sizeof(last));
        snprintf(reason, sizeof(reason),
                 "dockerd exited (%s %d) during start; see " DOCKER_LOG "%s%.240s",
                 WIFEXITED(ws) ? "status" : "signal",
                 WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), last[0] ? ": " : "", last);
        keeper_fail(k, reason);
    }
    if (rc != 0) {
        snprintf(reason, sizeof(reason), "docker version/info did not answer (exit %d): %.300s", rc,
                 id[0] ? id : version);
        keeper_fail(k, reason);
    }
    if (verify_daemon(k, reason, sizeof(reason)) < 0)
        keeper_fail(k, reason);
    long long ready_ms = clock_now_ms() - k->started_ms;
    extra = json_pack("{s:I,s:s,s:s,s:I}", "pid", (json_int_t)k->daemon, "id", id, "version",
                      version, "ready_ms", (json_int_t)ready_ms);
    status_write(k, "ready", NULL, extra);
    json_decref(extra);
    char verdict[600];
    snprintf(verdict, sizeof(verdict), "ready: dockerd %s (pid %d, ID %s) in %lld ms", version,
             (int)k->daemon, id, ready_ms);
    report(k, verdict);
    /* The socket stays open in dockerd; the keeper only watches it end. */
    close(k->listener);
    while (waitpid(k->daemon, &ws, 0) < 0 && errno == EINTR)
        ;
    unlink(DOCKER_RUN_SOCKET);
    snprintf(reason, sizeof(reason), "dockerd exited (%s %d); see " DOCKER_LOG,
             WIFEXITED(ws) ? "status" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    status_write(k, "exited", reason, NULL);
    _exit(0);
}

static int make_socket(struct keeper *k, gid_t gid, char *reason, size_t size)
{
    unlink(DOCKER_RUN_SOCKET);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = DOCKER_RUN_SOCKET};
    struct stat st, path;
    /* Access to the socket is root in the guest (not on the host): the
     * user the agent runs as gets it through the socket's group. */
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        chown(DOCKER_RUN_SOCKET, 0, gid) < 0 || chmod(DOCKER_RUN_SOCKET, 0660) < 0 ||
        listen(fd, 128) < 0 || fstat(fd, &st) < 0 || lstat(DOCKER_RUN_SOCKET, &path) < 0) {
        snprintf(reason, size, "creating " DOCKER_RUN_SOCKET ": %s", strerror(errno));
        return -1;
    }
    k->socket_ino = st.st_ino;
    k->path_dev = path.st_dev;
    k->path_ino = path.st_ino;
    return TAKE_FD(fd);
}

int vm_docker_guest_start(json_t *spec, gid_t gid, const int *fds_to_close, char *reason,
                          size_t size, json_t **summary)
{
    *summary = NULL;
    const char *mode = json_string_value(json_object_get(spec, "mode"));
    const char *dockerd = json_string_value(json_object_get(spec, "dockerd"));
    if (!mode || !dockerd || dockerd[0] != '/') {
        snprintf(reason, size, "bad docker object in the boot spec");
        return -1;
    }
    struct keeper k = {.mode = mode,
                       .dockerd = dockerd,
                       .proxy_env = json_object_get(spec, "proxy_env"),
                       .report_fd = -1,
                       .daemon = -1};
    k.listener = make_socket(&k, gid, reason, size);
    if (k.listener < 0)
        return -1;
    bool require = strcmp(mode, "require") == 0;
    int pipefd[2] = {-1, -1};
    if (require && pipe2(pipefd, O_CLOEXEC) < 0) {
        snprintf(reason, size, "pipe: %s", strerror(errno));
        close(k.listener);
        return -1;
    }
    status_write(&k, require ? "starting" : "idle", NULL, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(reason, size, "fork: %s", strerror(errno));
        close(k.listener);
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (size_t i = 0; fds_to_close && fds_to_close[i] >= 0; i++)
            close(fds_to_close[i]);
        if (require) {
            close(pipefd[0]);
            k.report_fd = pipefd[1];
        }
        keeper_run(&k);
    }
    close(k.listener);
    if (!require) {
        *summary = json_pack("{s:s,s:s}", "state", "idle", "detail",
                             "dockerd starts on the first connection to " VM_DOCKER_SOCKET);
        return 0;
    }
    close(pipefd[1]);
    char verdict[600] = "";
    size_t len = 0;
    ssize_t n;
    while ((n = read(pipefd[0], verdict + len, sizeof(verdict) - 1 - len)) > 0 ||
           (n < 0 && errno == EINTR))
        len += n > 0 ? (size_t)n : 0;
    verdict[len] = '\0';
    close(pipefd[0]);
    if (strncmp(verdict, "ready: ", 7) != 0) {
        snprintf(reason, size, "%s", verdict[0] ? verdict : "the Docker keeper died");
        return -1;
    }
    *summary = json_pack("{s:s,s:s}", "state", "ready", "detail", verdict + 7);
    return 0;
}
