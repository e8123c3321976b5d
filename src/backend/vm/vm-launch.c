/* QEMU's process and its connections for one boot attempt (vm-launch.h):
 * the AF_UNIX listeners of its chardevs, QEMU forked as a child that dies
 * with the supervisor and holds no capability, its three serial
 * connections and its monitor (the snapshot's park and save). Host context
 * (supervisor); the code between fork and exec runs in QEMU's child. */
#include "backend/vm/vm-launch.h"
#include "backend/vm/vm-log.h"
#include "backend/vm/vm-snapshot.h"
#include "confine/privs.h"
#include "proto/vm-frame.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int vm_launch_listen(const char *dir, const char *name, struct cordon_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >= (int)sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "vm: socket path %s/%s", dir, name);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "vm: socket");
    /* The directory is 0700 already; 0600 on the socket as well. */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 ||
        listen(fd, 1) < 0)
        return error_set(err, errno, "vm: listening on %s", sa.sun_path);
    return TAKE_FD(fd);
}

pid_t vm_launch_spawn(char *const *argv, const char *dir, int net_fd, int incoming_fd, int ram_fd,
                      const struct vm_bind *protect, int *pidfd_out, struct cordon_error *err)
{
    /* The guest's serial console and QEMU's own output, each capped. */
    static const char *const log_names[VM_LOG_STREAMS] = {"console.log", "qemu.log"};
    int log_fds[VM_LOG_STREAMS];
    if (vm_log_keeper_start(dir, log_names, VM_LOG_FILE_MAX, log_fds, NULL, err) < 0)
        return -1;
    _cleanup_close_ int consolefd = log_fds[0];
    _cleanup_close_ int logfd = log_fds[1];
    _cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return error_set(err, errno, "vm: opening /dev/null");
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "vm: fork");
    if (pid == 0) {
        /* QEMU dies with the supervisor, including on SIGKILL. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Its own process group: a terminal's ^C reaches cordon, which
         * decides, not QEMU. */
        setpgid(0, 0);
        /* Above the fixed numbers first: no dup2 below overwrites a
         * source that happens to sit on another's target. */
        int console_high = fcntl(consolefd, F_DUPFD_CLOEXEC, 64);
        int net_high = net_fd >= 0 ? fcntl(net_fd, F_DUPFD_CLOEXEC, 64) : -1;
        int incoming_high = incoming_fd >= 0 ? fcntl(incoming_fd, F_DUPFD_CLOEXEC, 64) : -1;
        int ram_high = ram_fd >= 0 ? fcntl(ram_fd, F_DUPFD_CLOEXEC, 64) : -1;
        if (console_high < 0 || (net_fd >= 0 && net_high < 0) ||
            (incoming_fd >= 0 && incoming_high < 0) || (ram_fd >= 0 && ram_high < 0))
            _exit(127);
        dup2(null, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        if (net_high >= 0 && dup2(net_high, VM_QEMU_NET_FD) < 0)
            _exit(127);
        if (dup2(console_high, VM_QEMU_CONSOLE_FD) < 0)
            _exit(127);
        if (incoming_high >= 0 && dup2(incoming_high, VM_SNAPSHOT_QEMU_FD) < 0)
            _exit(127);
        if (ram_high >= 0 && dup2(ram_high, VM_QEMU_RAM_FD) < 0)
            _exit(127);
        if (vm_protect_apply(protect) < 0) {
            dprintf(2, "cordon: protecting paths for QEMU: %s\n", strerror(errno));
            _exit(127);
        }
        /* QEMU needs no capability: everything it opens belongs to the
         * supervisor's uid (state directory, kernel cache, the shares as
         * the ns sandbox would see them). A root supervisor's QEMU keeps
         * uid 0 but no capability, so a QEMU escape is not full root; in
         * vm_protect_apply's user namespace the bounding set goes too. */
        struct cordon_error perr;
        if (privs_drop_all(false, 0, 0, &perr) < 0) {
            dprintf(2, "dropping privileges for QEMU: %s\n", perr.message);
            _exit(127);
        }
        /* Nothing of the supervisor's environment (DOCKER_HOST, tokens)
         * in a process whose /proc/PID/environ other host processes of
         * the same user can read. */
        execvpe(argv[0], argv, privs_helper_environ());
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return error_set(err, errno, "vm: pidfd_open");
    }
    *pidfd_out = pidfd;
    return pid;
}

/* The last lines of a log file, for an error message. */
void vm_launch_log_tail(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
    ssize_t n = pread(fd, out, size - 1, start);
    if (n <= 0)
        return;
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
}

/* Accepts QEMU's three connections; fails when QEMU exits first. */
int vm_launch_accept(struct vm_state *st, int pidfd, long long deadline, struct cordon_error *err)
{
    for (;;) {
        struct pollfd p[SOCK_COUNT + 1];
        int pending = 0;
        for (int i = 0; i < SOCK_COUNT; i++) {
            p[i] = (struct pollfd){st->fds[i] < 0 ? st->listen[i] : -1, POLLIN, 0};
            pending += st->fds[i] < 0;
        }
        if (!pending)
            return 0;
        p[SOCK_COUNT] = (struct pollfd){pidfd, POLLIN, 0};
        long long left = deadline - clock_now_ms();
        if (left <= 0)
            return error_set(err, ETIMEDOUT, "vm: QEMU did not connect its serial ports");
        int r = poll(p, SOCK_COUNT + 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return error_set(err, errno, "vm: poll");
        if (p[SOCK_COUNT].revents)
            return error_set(err, 0, "vm: QEMU exited during start");
        for (int i = 0; i < SOCK_COUNT; i++) {
            if (p[i].revents & POLLIN) {
                st->fds[i] = accept4(st->listen[i], NULL, NULL, SOCK_CLOEXEC);
                if (st->fds[i] < 0)
                    return error_set(err, errno, "vm: accept");
                close(st->listen[i]);
                st->listen[i] = -1;
            }
        }
    }
}

void vm_launch_close(struct vm_state *st)
{
    for (int i = 0; i < SOCK_COUNT; i++) {
        if (st->fds[i] >= 0)
            close(st->fds[i]);
        if (st->listen[i] >= 0)
            close(st->listen[i]);
        st->fds[i] = st->listen[i] = -1;
    }
}

void vm_launch_kill(struct sandbox *sb)
{
    if (sb->pid > 0) {
        kill(sb->pid, SIGKILL);
        while (waitpid(sb->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (sb->pidfd >= 0)
        close(sb->pidfd);
    sb->pid = -1;
    sb->pidfd = -1;
}

/* QEMU's monitor connection (BOOT_SAVE, BOOT_RESTORE); its listener goes. */
int vm_launch_qmp_accept(struct vm_state *st, int pidfd, long long deadline,
                         struct cordon_error *err)
{
    int qmp = -1;
    struct pollfd p[2] = {{st->qmp_listen, POLLIN, 0}, {pidfd, POLLIN, 0}};
    long long left = deadline - clock_now_ms();
    int r;
    while ((r = poll(p, 2, left > 0 ? (int)left : 0)) < 0 && errno == EINTR)
        ;
    if (r <= 0 || p[1].revents || (qmp = accept4(st->qmp_listen, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return error_set(err, r < 0 ? errno : 0, "vm: QEMU's monitor did not connect");
    close(st->qmp_listen);
    st->qmp_listen = -1;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/qmp", st->dir);
    unlink(path);
    return qmp;
}

/* BOOT_SAVE: QEMU's monitor connects, the guest is asked to park (its
 * init answers before it has read a boot spec, mounted a share or started
 * anything: nothing of a session exists yet), QEMU saves it and lets it
 * continue. A failed save costs only the snapshot; -1 when the guest did
 * not park (as a normal boot would fail) or may be left stopped
 * (st->snap_broke: a normal boot is tried next). */

int vm_launch_park_and_save(struct vm_state *st, int pidfd, long long deadline,
                            struct cordon_error *err)
{
    long long t0 = clock_now_ms();
    _cleanup_close_ int qmp = vm_launch_qmp_accept(st, pidfd, deadline, err);
    if (qmp < 0)
        return -1;
    json_t *park = json_pack("{s:s}", "t", "park");
    int w = park ? vm_frame_write(st->fds[SOCK_CHANNEL], park) : -1;
    json_decref(park);
    if (w < 0)
        return error_set(err, errno, "vm: asking the guest to park");
    long long left = deadline - clock_now_ms();
    json_t *reply = vm_frame_read(st->fds[SOCK_CHANNEL], left > 0 ? (int)left : 0);
    const char *t = json_string_value(json_object_get(reply, "t"));
    bool parked = t && strcmp(t, "parked") == 0;
    json_decref(reply);
    if (!parked)
        return error_set(err, errno, "vm: the guest did not park for its snapshot");
    long long t1 = clock_now_ms();
    struct cordon_error serr;
    int rc = vm_snapshot_save(qmp, st->snap_path, st->snap_key, st->snap_ram_fd, deadline, &serr);
    if (rc == -2) {
        /* Only here is the snapshot to blame: a guest that did not park
         * would not have read a boot spec either. */
        st->snap_broke = true;
        *err = serr;
        return -1;
    }
    if (rc < 0)
        log_debug("vm: snapshot not saved: %s", serr.message);
    else
        log_debug("vm: snapshot saved to %s in %lld ms (guest parked after %lld ms)", st->snap_path,
                  clock_now_ms() - t1, t1 - t0);
    return 0;
}
