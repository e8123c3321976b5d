/* The socket guard (sock-guard.h, docs/sockets.md). Host context: a child of
 * the supervisor, single-threaded, holding nothing of the supervisor's but
 * its stderr; it forks a short-lived child of its own for each call that
 * would block.
 *
 * For every notified call the guard
 *   1. takes the caller's socket (pidfd_getfd) and copies the arguments out
 *      of the caller's memory (/proc/PID/mem), bounded, then checks that the
 *      notification is still live (the pid was not reused);
 *   2. for a unix socket path, resolves it itself with openat2 from the
 *      caller's root (/proc/PID/root, RESOLVE_IN_ROOT, no magic links) to an
 *      O_PATH fd, and allows it only when that inode is bound by a socket of
 *      the sandbox's network namespace (sock_diag, UNIX_DIAG_VFS, on a
 *      NETLINK_SOCK_DIAG socket made inside it) or is a socket named in
 *      sockets.allow (resolved from the workspace root, beneath it, without
 *      symlinks);
 *   3. performs the call on its copy of the socket, the address replaced by
 *      /proc/self/fd/N of the inode it checked, and returns the result as the
 *      syscall's. The caller's memory is never read twice: nothing the
 *      sandbox changes after the check reaches the kernel. */
#include "supervisor/sock-guard.h"
#include "confine/privs.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* Bounds on what a caller can make the guard copy. A stream socket gets a
 * short write beyond SEND_MAX (as the kernel may give); a datagram larger
 * than it is refused with EMSGSIZE. */
#define SEND_MAX        (1u << 20)
#define CONTROL_MAX     (64u << 10)
#define MMSG_MAX        1024
#define CHILDREN_MAX    64
#define REFUSALS_LOGGED 20

/* The guard's fds after it has moved them. */
enum { GUARD_LISTENER = 3, GUARD_DIAG = 4, GUARD_WORKSPACE = 5, GUARD_HOLD = 6 };

struct guard {
    pid_t pid1; /* the sandbox's PID 1 (host pid) */
    const char *const *allow;
    size_t nallow;
    const dev_t *own_dev;
    const ino_t *own_ino;
    size_t nown;
    unsigned refusals;
    unsigned children;
    uint32_t diag_seq;
};

/* One notified call's caller. */
struct target {
    uint64_t id;
    pid_t pid;
    int pidfd;
    int mem_fd;
};

static void target_close(struct target *t)
{
    if (t->pidfd >= 0)
        close(t->pidfd);
    if (t->mem_fd >= 0)
        close(t->mem_fd);
    t->pidfd = t->mem_fd = -1;
}

static bool notif_live(uint64_t id)
{
    return ioctl(GUARD_LISTENER, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void reply(const struct target *t, long val)
{
    struct seccomp_notif_resp resp = {.id = t->id};
    if (val < 0)
        resp.error = (int32_t)val;
    else
        resp.val = val;
    /* ENOENT: the caller was interrupted or died meanwhile. */
    (void)ioctl(GUARD_LISTENER, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static int target_read(const struct target *t, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (addr == 0 || addr > (uint64_t)INT64_MAX - len)
        return -EFAULT;
    ssize_t n = pread(t->mem_fd, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

static int target_write(const struct target *t, uint64_t addr, const void *buf, size_t len)
{
    if (addr == 0 || addr > (uint64_t)INT64_MAX - len)
        return -EFAULT;
    ssize_t n = pwrite(t->mem_fd, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Our own reference to the caller's fd (-errno on failure). */
static int target_getfd(const struct target *t, uint64_t fd)
{
    if (fd > INT_MAX)
        return -EBADF;
    int r = (int)syscall(SYS_pidfd_getfd, t->pidfd, (int)fd, 0);
    return r < 0 ? -errno : r;
}

/* The thread group of thread tid (its Tgid), or -1. */
static pid_t thread_group(pid_t tid)
{
    char path[64], line[128];
    snprintf(path, sizeof(path), "/proc/%d/status", tid);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    long tgid = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Tgid: %ld", &tgid) == 1)
            break;
    return tgid > 0 && tgid <= INT_MAX ? (pid_t)tgid : -1;
}

static int target_open(struct target *t, const struct seccomp_notif *req)
{
    *t = (struct target){.id = req->id, .pid = (pid_t)req->pid, .pidfd = -1, .mem_fd = -1};
    /* The caller is a thread: its own pidfd where the kernel has them
     * (6.9); else its process's, whose fd table a thread shares (a thread
     * made without CLONE_FILES would have the guard act on the leader's fd
     * of that number: the address is still checked). The liveness check
     * below covers the time the Tgid was read. */
    t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, PIDFD_THREAD);
    if (t->pidfd < 0)
        t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
    if (t->pidfd < 0) {
        pid_t tgid = thread_group(t->pid);
        if (tgid > 0)
            t->pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/mem", t->pid);
    t->mem_fd = open(path, O_RDWR | O_CLOEXEC);
    if (t->pidfd < 0 || t->mem_fd < 0 || !notif_live(t->id)) {
        target_close(t);
        return -ESRCH;
    }
    return 0;
}

static int openat2_path(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
    struct open_how how = {.flags = flags, .resolve = resolve};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    return fd < 0 ? -errno : fd;
}

/* The kernel's dev_t of an inode's super block, as UNIX_DIAG_VFS reports it
 * (MKDEV: major << 20 | minor), from stat's encoding. */
static uint32_t kernel_dev(dev_t dev)
{
    return (uint32_t)(major(dev) << 20 | minor(dev));
}

/* 1 when (dev, ino) is the file a socket of the sandbox's network namespace
 * is bound to, 0 when not, -errno when the dump failed (the caller refuses). */
static int bound_in_sandbox(struct guard *g, dev_t dev, ino_t ino)
{
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req req;
    } msg = {
        .nlh = {.nlmsg_len = sizeof(msg),
                .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                .nlmsg_seq = ++g->diag_seq},
        .req = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_show = UDIAG_SHOW_VFS},
    };
    if (send(GUARD_DIAG, &msg, sizeof(msg), MSG_NOSIGNAL) != (ssize_t)sizeof(msg))
        return -errno;
    uint32_t want_dev = kernel_dev(dev);
    int found = 0;
    /* Aligned for nlmsghdr; every reply of this dump is read to its end so
     * the next dump starts clean. */
    static uint64_t buf[8192];
    for (;;) {
        ssize_t n = recv(GUARD_DIAG, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPROTO;
        size_t left = (size_t)n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
             h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != g->diag_seq)
                continue;
            if (h->nlmsg_type == NLMSG_DONE)
                return found;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error
                                                                                : -EPROTO;
            }
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
                continue;
            const struct unix_diag_msg *d = NLMSG_DATA(h);
            size_t alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(*d));
            for (const struct rtattr *a = (const struct rtattr *)(d + 1); RTA_OK(a, alen);
                 a = RTA_NEXT(a, alen)) {
                if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof(struct unix_diag_vfs))
                    continue;
                const struct unix_diag_vfs *v = RTA_DATA(a);
                if (v->udiag_vfs_ino == (uint32_t)ino && (uint64_t)v->udiag_vfs_ino == ino &&
                    v->udiag_vfs_dev == want_dev)
                    found = 1;
            }
        }
    }
}

/* 1 when st is the socket file a sockets.allow entry names now, or one of
 * cordon's own. */
static int allowed_by_config(const struct guard *g, const struct stat *st)
{
    for (size_t i = 0; i < g->nown; i++)
        if (g->own_dev[i] == st->st_dev && g->own_ino[i] == st->st_ino)
            return 1;
    for (size_t i = 0; i < g->nallow; i++) {
        _cleanup_close_ int fd =
            openat2_path(GUARD_WORKSPACE, g->allow[i], O_PATH | O_CLOEXEC | O_NOFOLLOW,
                         RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
        struct stat a;
        if (fd >= 0 && fstat(fd, &a) == 0 && S_ISSOCK(a.st_mode) && a.st_dev == st->st_dev &&
            a.st_ino == st->st_ino)
            return 1;
    }
    return 0;
}

/* The caller's cwd as a path inside its root: the kernel prints it so for a
 * process of another mount namespace. Checked against the cwd itself, so a
 * path that does not lead there (renamed meanwhile) refuses the call. */
static int target_cwd(const struct target *t, int rootfd, char *out, size_t size)
{
    char link[64];
    snprintf(link, sizeof(link), "/proc/%d/cwd", t->pid);
    ssize_t n = readlink(link, out, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return -EACCES;
    out[n] = '\0';
    if (out[0] != '/')
        return -EACCES;
    _cleanup_close_ int cwd = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_close_ int again = openat2_path(rootfd, out, O_PATH | O_DIRECTORY | O_CLOEXEC,
                                             RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    struct stat a, b;
    if (cwd < 0 || again < 0 || fstat(cwd, &a) < 0 || fstat(again, &b) < 0 ||
        a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return -EACCES;
    /* The cwd opened above was the caller's, not a reused pid's. */
    return notif_live(t->id) ? 0 : -ESRCH;
}

/* The sandbox chose the path: on the user's terminal its control bytes are
 * shown escaped, never sent. */
static void escape_path(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < size; p++) {
        if (*p < 0x20 || *p == 0x7f || *p >= 0x80 || *p == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
        else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
}

static void log_refusal(struct guard *g, const struct target *t, const char *path, const char *why)
{
    char shown[4 * PATH_MAX + 8];
    escape_path(path, shown, sizeof(shown));
    if (g->refusals++ < REFUSALS_LOGGED)
        log_warn("sandbox process %d: connection to the unix socket %s refused (EACCES): %s; "
                 "sockets.allow names the sockets of the workspace the sandbox may reach "
                 "(docs/sockets.md)",
                 t->pid, shown, why);
    else if (g->refusals == REFUSALS_LOGGED + 1)
        log_warn("further refused unix socket connections are not shown");
}

/* N when path is /proc/self/fd/N, /proc/thread-self/fd/N or /dev/fd/N
 * (the caller's fd N), else -1. */
static int caller_fd_link(const char *path)
{
    static const char *const prefixes[] = {"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/"};
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(path, prefixes[i], n) != 0)
            continue;
        const char *digits = path + n;
        if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
            return -1;
        return atoi(digits);
    }
    return -1;
}

/* Checks a unix socket address the caller passed. Returns 0 with
 * *ret_pathfd = -1 when the address names no path (unnamed, abstract:
 * those are scoped by the network namespace), 0 with an O_PATH fd of the
 * checked socket file, or -errno (the syscall's result). */
static int check_unix_address(struct guard *g, const struct target *t, const struct sockaddr_un *sa,
                              socklen_t len, int *ret_pathfd)
{
    *ret_pathfd = -1;
    size_t base = offsetof(struct sockaddr_un, sun_path);
    if (len <= base || sa->sun_path[0] == '\0')
        return 0;
    char path[sizeof(sa->sun_path) + 1];
    size_t plen = len - base < sizeof(sa->sun_path) ? len - base : sizeof(sa->sun_path);
    memcpy(path, sa->sun_path, plen);
    path[plen] = '\0';

    char root_link[64];
    snprintf(root_link, sizeof(root_link), "/proc/%d/root", t->pid);
    _cleanup_close_ int rootfd = open(root_link, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0 || !notif_live(t->id))
        return -ESRCH;
    char full[PATH_MAX + sizeof(path) + 2];
    if (path[0] == '/') {
        snprintf(full, sizeof(full), "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (target_cwd(t, rootfd, cwd, sizeof(cwd)) < 0) {
            log_refusal(g, t, path, "the caller's working directory could not be placed");
            return -EACCES;
        }
        snprintf(full, sizeof(full), "%s/%s", cwd, path);
    }
    /* The caller's own fd by its magic link (cordon's forwarder connects
     * so, to a socket it opened O_PATH): that file, taken from the caller.
     * Any other magic link is refused by the resolution below. */
    int own_fd = caller_fd_link(path);
    int fd = own_fd >= 0 ? target_getfd(t, (uint64_t)own_fd)
                         : openat2_path(rootfd, full, O_PATH | O_CLOEXEC,
                                        RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (own_fd >= 0 && fd == -EBADF)
        return -ENOENT;
    if (fd < 0)
        return fd == -ELOOP ? -ECONNREFUSED : fd;
    _cleanup_close_ int pathfd = fd;
    struct stat st;
    if (fstat(pathfd, &st) < 0)
        return -errno;
    if (!S_ISSOCK(st.st_mode))
        return -ECONNREFUSED;
    int bound = bound_in_sandbox(g, st.st_dev, st.st_ino);
    if (bound < 0) {
        log_refusal(g, t, full, "the sandbox's own sockets could not be listed (sock_diag)");
        return -EACCES;
    }
    if (!bound && !allowed_by_config(g, &st)) {
        log_refusal(g, t, full,
                    "no socket of the sandbox is bound to it (a host service's socket, "
                    "or one made outside the sandbox)");
        return -EACCES;
    }
    *ret_pathfd = TAKE_FD(pathfd);
    return 0;
}

/* An address that reaches the kernel: a unix path becomes /proc/self/fd/N
 * of the checked inode (resolved by the kernel through that magic link,
 * which is the inode itself), anything else is the caller's copy. */
static int rewrite_address(struct guard *g, const struct target *t, struct sockaddr_storage *addr,
                           socklen_t *len, int *ret_pathfd)
{
    *ret_pathfd = -1;
    if (*len < sizeof(sa_family_t) || addr->ss_family != AF_UNIX)
        return 0;
    int pathfd;
    int r = check_unix_address(g, t, (struct sockaddr_un *)addr, *len, &pathfd);
    if (r < 0 || pathfd < 0)
        return r;
    struct sockaddr_un *un = (struct sockaddr_un *)addr;
    memset(un->sun_path, 0, sizeof(un->sun_path));
    int n = snprintf(un->sun_path, sizeof(un->sun_path), "/proc/self/fd/%d", pathfd);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
    *ret_pathfd = pathfd;
    return 0;
}

/* One call as the guard performs it. */
struct op {
    bool is_connect;
    bool await_connect; /* a connect in progress: wait for it (child) */
    int sock;           /* our reference to the caller's socket */
    int pathfd;         /* the checked socket file, or -1 */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    bool has_addr;
    char *data;
    size_t datalen;
    char *control;
    size_t controllen;
    int passed[CONTROL_MAX / sizeof(int)];
    size_t npassed;
    int flags;
};

static void op_free(struct op *op)
{
    if (op->sock >= 0)
        close(op->sock);
    if (op->pathfd >= 0)
        close(op->pathfd);
    for (size_t i = 0; i < op->npassed; i++)
        close(op->passed[i]);
    free(op->data);
    free(op->control);
    op->sock = op->pathfd = -1;
    op->npassed = 0;
    op->data = op->control = NULL;
}

static bool op_blocking(const struct op *op)
{
    int fl = fcntl(op->sock, F_GETFL);
    return fl >= 0 && !(fl & O_NONBLOCK) && !(op->flags & MSG_DONTWAIT);
}

/* A connect that must not block the guard: the file's O_NONBLOCK is the
 * caller's too, so it is set only around the call (the caller is inside
 * this very connect meanwhile). A TCP connect in progress, or a unix
 * listener's full backlog, returns -EAGAIN for a child to finish. */
static long op_connect(struct op *op, bool may_block)
{
    if (op->await_connect) {
        struct pollfd p = {.fd = op->sock, .events = POLLOUT};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
        int e = 0;
        socklen_t el = sizeof(e);
        if (getsockopt(op->sock, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
            e = errno;
        return -e;
    }
    if (may_block)
        return connect(op->sock, (struct sockaddr *)&op->addr, op->addrlen) < 0 ? -errno : 0;
    int fl = fcntl(op->sock, F_GETFL);
    bool toggled = fl >= 0 && !(fl & O_NONBLOCK);
    if (toggled && fcntl(op->sock, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    int r = connect(op->sock, (struct sockaddr *)&op->addr, op->addrlen);
    int e = errno;
    if (toggled)
        fcntl(op->sock, F_SETFL, fl);
    if (r == 0)
        return 0;
    if (toggled && e == EINPROGRESS) {
        op->await_connect = true;
        return -EAGAIN;
    }
    return -e;
}

static long op_run(const struct target *t, struct op *op, bool may_block)
{
    if (op->is_connect)
        return op_connect(op, may_block);
    struct iovec iov = {.iov_base = op->data, .iov_len = op->datalen};
    struct msghdr msg = {.msg_name = op->has_addr ? &op->addr : NULL,
                         .msg_namelen = op->has_addr ? op->addrlen : 0,
                         .msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = op->controllen ? op->control : NULL,
                         .msg_controllen = op->controllen};
    int flags = op->flags | MSG_NOSIGNAL | (may_block ? 0 : MSG_DONTWAIT);
    ssize_t n = sendmsg(op->sock, &msg, flags);
    if (n < 0 && errno == EPIPE && !(op->flags & MSG_NOSIGNAL))
        /* What the kernel would have done to the caller. */
        syscall(SYS_pidfd_send_signal, t->pidfd, SIGPIPE, NULL, 0);
    return n < 0 ? -errno : n;
}

/* Copies the caller's data (iov) into op, bounded. */
static int op_read_iov(const struct target *t, struct op *op, uint64_t iov_addr, uint64_t iovlen)
{
    if (iovlen > IOV_MAX)
        return -EMSGSIZE;
    int type = 0;
    socklen_t tl = sizeof(type);
    if (getsockopt(op->sock, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
        return -errno;
    _cleanup_free_ struct iovec *iov = calloc(iovlen ? iovlen : 1, sizeof(*iov));
    if (!iov)
        return -ENOMEM;
    int r = target_read(t, iov_addr, iov, iovlen * sizeof(*iov));
    if (r < 0)
        return r;
    size_t total = 0;
    for (size_t i = 0; i < iovlen; i++) {
        if (iov[i].iov_len > SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    if (total > SEND_MAX) {
        if (type != SOCK_STREAM)
            return -EMSGSIZE;
        total = SEND_MAX;
    }
    op->data = malloc(total ? total : 1);
    if (!op->data)
        return -ENOMEM;
    size_t off = 0;
    for (size_t i = 0; i < iovlen && off < total; i++) {
        size_t take = iov[i].iov_len < total - off ? iov[i].iov_len : total - off;
        if ((r = target_read(t, (uint64_t)(uintptr_t)iov[i].iov_base, op->data + off, take)) < 0)
            return r;
        off += take;
    }
    op->datalen = total;
    return 0;
}

/* Copies the control messages; SCM_RIGHTS fds are the caller's numbers and
 * become our references to the same files. */
static int op_read_control(const struct target *t, struct op *op, uint64_t addr, uint64_t len)
{
    if (len == 0)
        return 0;
    if (len > CONTROL_MAX)
        return -ENOBUFS;
    op->control = calloc(1, len);
    if (!op->control)
        return -ENOMEM;
    int r = target_read(t, addr, op->control, len);
    if (r < 0)
        return r;
    op->controllen = len;
    struct msghdr msg = {.msg_control = op->control, .msg_controllen = len};
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        /* The caller wrote every length: each message stays inside the
         * copy, or the call is refused as the kernel would. */
        if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_len > (size_t)(op->control + len - (char *)c))
            return -EINVAL;
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *fds = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < n; i++) {
            if (op->npassed >= ARRAY_SIZE(op->passed))
                return -EINVAL;
            int mine = target_getfd(t, (uint64_t)(unsigned)fds[i]);
            if (mine < 0)
                return -EBADF;
            op->passed[op->npassed++] = mine;
            fds[i] = mine;
        }
    }
    return 0;
}

/* Reads one struct msghdr at addr into op (sock already set). */
static int op_read_msghdr(struct guard *g, const struct target *t, struct op *op, uint64_t addr)
{
    struct msghdr m;
    int r = target_read(t, addr, &m, sizeof(m));
    if (r < 0)
        return r;
    if (m.msg_name && m.msg_namelen) {
        op->addrlen = m.msg_namelen < sizeof(op->addr) ? m.msg_namelen : sizeof(op->addr);
        if ((r = target_read(t, (uint64_t)(uintptr_t)m.msg_name, &op->addr, op->addrlen)) < 0)
            return r;
        op->has_addr = true;
        if ((r = rewrite_address(g, t, &op->addr, &op->addrlen, &op->pathfd)) < 0)
            return r;
    }
    if ((r = op_read_iov(t, op, (uint64_t)(uintptr_t)m.msg_iov, m.msg_iovlen)) < 0)
        return r;
    return op_read_control(t, op, (uint64_t)(uintptr_t)m.msg_control, m.msg_controllen);
}

/* A call that would block runs in a child of the guard, which answers the
 * notification itself; the guard goes on serving the others. */
static void run_blocking(struct guard *g, const struct target *t, struct op *op,
                         uint64_t mmsg_len_addr)
{
    while (g->children > 0 && waitpid(-1, NULL, WNOHANG) > 0)
        g->children--;
    if (g->children >= CHILDREN_MAX && waitpid(-1, NULL, 0) > 0)
        g->children--;
    pid_t guard = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        reply(t, -EAGAIN);
        return;
    }
    if (pid == 0) {
        /* Not the view's last holder (the guard is): a blocked call's
         * child may outlive the guard for a moment. */
        close(GUARD_HOLD);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != guard)
            _exit(0);
        long r = op_run(t, op, true);
        if (mmsg_len_addr && r >= 0) {
            unsigned int sent = (unsigned int)r;
            target_write(t, mmsg_len_addr, &sent, sizeof(sent));
            r = 1;
        }
        reply(t, r);
        _exit(0);
    }
    g->children++;
}

static int op_start(const struct target *t, struct op *op, uint64_t fd)
{
    *op = (struct op){.sock = -1, .pathfd = -1};
    int s = target_getfd(t, fd);
    if (s < 0)
        return s;
    op->sock = s;
    return 0;
}

/* The end every handler shares: the call made (r == 0 so far), finished in
 * a child when it would block, answered, the operation freed. */
static void op_finish(struct guard *g, const struct target *t, struct op *op, long r)
{
    if (r == 0) {
        r = op_run(t, op, false);
        if (r == -EAGAIN && op_blocking(op)) {
            run_blocking(g, t, op, 0);
            op_free(op);
            return;
        }
    }
    op_free(op);
    reply(t, r);
}

static void handle_connect(struct guard *g, const struct target *t, const struct seccomp_notif *req)
{
    struct op op;
    long r = op_start(t, &op, req->data.args[0]);
    op.is_connect = true;
    uint64_t len = req->data.args[2];
    if (r == 0 && (len > sizeof(op.addr) || len < sizeof(sa_family_t)))
        r = -EINVAL;
    if (r == 0) {
        op.addrlen = (socklen_t)len;
        r = target_read(t, req->data.args[1], &op.addr, op.addrlen);
    }
    if (r == 0 && !notif_live(t->id))
        r = -ESRCH;
    if (r == 0)
        r = rewrite_address(g, t, &op.addr, &op.addrlen, &op.pathfd);
    op_finish(g, t, &op, r);
}

static void handle_sendto(struct guard *g, const struct target *t, const struct seccomp_notif *req)
{
    struct op op;
    long r = op_start(t, &op, req->data.args[0]);
    op.flags = (int)req->data.args[3];
    uint64_t len = req->data.args[5];
    /* As the kernel's sendto: an address longer than any is EINVAL. */
    if (r == 0 && len > sizeof(op.addr))
        r = -EINVAL;
    if (r == 0 && len > 0) {
        op.addrlen = (socklen_t)len;
        op.has_addr = true;
        r = target_read(t, req->data.args[4], &op.addr, op.addrlen);
    }
    if (r == 0) {
        uint64_t buf = req->data.args[1];
        uint64_t buflen = req->data.args[2];
        int type = 0;
        socklen_t tl = sizeof(type);
        if (getsockopt(op.sock, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
            r = -errno;
        else if (buflen > SEND_MAX && type != SOCK_STREAM)
            r = -EMSGSIZE;
        size_t take = buflen > SEND_MAX ? SEND_MAX : (size_t)buflen;
        if (r == 0 && !(op.data = malloc(take ? take : 1)))
            r = -ENOMEM;
        if (r == 0 && (r = target_read(t, buf, op.data, take)) == 0)
            op.datalen = take;
    }
    if (r == 0 && !notif_live(t->id))
        r = -ESRCH;
    if (r == 0 && op.has_addr)
        r = rewrite_address(g, t, &op.addr, &op.addrlen, &op.pathfd);
    op_finish(g, t, &op, r);
}

static void handle_sendmsg(struct guard *g, const struct target *t, const struct seccomp_notif *req)
{
    struct op op;
    long r = op_start(t, &op, req->data.args[0]);
    op.flags = (int)req->data.args[2];
    if (r == 0)
        r = op_read_msghdr(g, t, &op, req->data.args[1]);
    if (r == 0 && !notif_live(t->id))
        r = -ESRCH;
    op_finish(g, t, &op, r);
}

/* sendmmsg: message by message, each checked; it returns how many went,
 * as the kernel's does, and the first that would block waits in a child. */
static void handle_sendmmsg(struct guard *g, const struct target *t,
                            const struct seccomp_notif *req)
{
    uint64_t vec = req->data.args[1];
    uint64_t vlen = req->data.args[2] > MMSG_MAX ? MMSG_MAX : req->data.args[2];
    long sent = 0, r = 0;
    for (uint64_t i = 0; i < vlen; i++) {
        struct op op;
        uint64_t at = vec + i * sizeof(struct mmsghdr);
        r = op_start(t, &op, req->data.args[0]);
        op.flags = (int)req->data.args[3];
        if (r == 0)
            r = op_read_msghdr(g, t, &op, at);
        if (r == 0 && !notif_live(t->id))
            r = -ESRCH;
        if (r == 0) {
            r = op_run(t, &op, false);
            if (r == -EAGAIN && sent == 0 && op_blocking(&op)) {
                run_blocking(g, t, &op, at + offsetof(struct mmsghdr, msg_len));
                op_free(&op);
                return;
            }
        }
        op_free(&op);
        if (r < 0)
            break;
        unsigned int len = (unsigned int)r;
        target_write(t, at + offsetof(struct mmsghdr, msg_len), &len, sizeof(len));
        sent++;
    }
    reply(t, sent > 0 ? sent : r);
}

static void guard_handle(struct guard *g, const struct seccomp_notif *req)
{
    /* The sandbox's PID 1 is cordon's own code (init or serve), one thread,
     * not dumpable, its fds and memory out of the sandbox's reach (no
     * ptrace, no process_vm_*, no /proc/1/mem for a non-dumpable process):
     * nothing can change its arguments between a check and the kernel's
     * re-read, so it is the one caller the kernel may serve directly. It
     * has to be: its memory belongs to the host's user namespace when it
     * never exec'd (init in process), which the guard cannot read once it
     * dropped its privileges, and it sends the supervisor its terminal and
     * probe pidfds with sendmsg. */
    if (g->pid1 > 0 && (pid_t)req->pid == g->pid1) {
        struct seccomp_notif_resp resp = {.id = req->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
        (void)ioctl(GUARD_LISTENER, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        return;
    }
    struct target t;
    if (target_open(&t, req) < 0) {
        struct target dead = {.id = req->id};
        reply(&dead, -ESRCH);
        return;
    }
    switch (req->data.nr) {
    case __NR_connect:
        handle_connect(g, &t, req);
        break;
    case __NR_sendto:
        handle_sendto(g, &t, req);
        break;
    case __NR_sendmsg:
        handle_sendmsg(g, &t, req);
        break;
    case __NR_sendmmsg:
        handle_sendmmsg(g, &t, req);
        break;
    default:
        reply(&t, -ENOSYS);
        break;
    }
    target_close(&t);
}

static void guard_main(struct guard *g)
{
    struct seccomp_notif_sizes sizes = {0};
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
        _exit(1);
    /* The kernel's structs may be larger than this build's headers. */
    size_t req_size = sizes.seccomp_notif > sizeof(struct seccomp_notif)
                          ? sizes.seccomp_notif
                          : sizeof(struct seccomp_notif);
    struct seccomp_notif *req = malloc(req_size);
    if (!req)
        _exit(1);
    for (;;) {
        struct pollfd p = {.fd = GUARD_LISTENER, .events = POLLIN};
        int n = poll(&p, 1, g->children ? 1000 : -1);
        while (g->children > 0 && waitpid(-1, NULL, WNOHANG) > 0)
            g->children--;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            _exit(1);
        if (n == 0)
            continue;
        /* No process is left under the filter: the sandbox has ended. */
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
            _exit(0);
        memset(req, 0, req_size);
        if (ioctl(GUARD_LISTENER, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
            if (errno == EINTR || errno == ENOENT)
                continue;
            _exit(1);
        }
        guard_handle(g, req);
    }
}

/* The guard performs calls with its own credentials, and the kernel checks
 * some of them against the caller's (current) capabilities: rtnetlink's
 * requests, netlink multicast, SO_MARK and SO_PRIORITY in control
 * messages, SCM_CREDENTIALS naming another pid or uid. As the owner of the
 * sandbox's user namespace the guard would hold every capability there,
 * and as root every capability on the host: `ip link set lo down` from the
 * sandbox went through. So the guard first joins the sandbox's user
 * namespace (when it is another), which ends the owner's privilege over
 * it, and keeps one capability: CAP_SYS_PTRACE, to read its callers'
 * memory and take their fds (the sandbox's PID 1 is not dumpable). */
static int drop_privileges(int userns_fd, pid_t parent)
{
    if (userns_fd >= 0) {
        struct stat theirs, ours;
        if (fstat(userns_fd, &theirs) < 0 || stat("/proc/self/ns/user", &ours) < 0)
            return -1;
        if ((theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino) &&
            setns(userns_fd, CLONE_NEWUSER) < 0)
            return -1;
    }
    /* EPERM: without CAP_SETPCAP there is nothing to drop it could use
     * (the guard never execs). */
    if (privs_drop_bounding(CAP_SYS_PTRACE) < 0 && errno != EPERM)
        return -1;
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capget, &hdr, data) < 0)
        return -1;
    bool had_ptrace = data[0].permitted & (1u << CAP_SYS_PTRACE);
    memset(data, 0, sizeof(data));
    if (had_ptrace)
        data[0].effective = data[0].permitted = 1u << CAP_SYS_PTRACE;
    if (syscall(SYS_capset, &hdr, data) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    /* A credential change may clear the parent-death signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        return -1;
    prctl(PR_SET_DUMPABLE, 0);
    return 0;
}

int sock_guard_start(const struct sock_guard_spec *spec, pid_t *ret_pid, struct cordon_error *err)
{
    _cleanup_close_ int ws = open(spec->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ws < 0)
        return error_set(err, errno, "socket guard: open %s", spec->workspace);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "socket guard: fork");
    if (pid > 0) {
        *ret_pid = pid;
        return 0;
    }
    /* Child: the guard. Its fds first: the three it needs at fixed numbers,
     * /dev/null for stdin and stdout (the supervisor's may be a client's
     * protocol stream), stderr for its warnings, nothing else. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);
    /* Every source copied above the fixed numbers before any of those is
     * written: a source may sit at one of them. */
    int keep[3] = {fcntl(spec->listener_fd, F_DUPFD_CLOEXEC, 100),
                   fcntl(spec->diag_fd, F_DUPFD_CLOEXEC, 100), fcntl(ws, F_DUPFD_CLOEXEC, 100)};
    int hold = spec->hold_fd >= 0 ? fcntl(spec->hold_fd, F_DUPFD_CLOEXEC, 100) : -1;
    int userns = spec->userns_fd >= 0 ? fcntl(spec->userns_fd, F_DUPFD_CLOEXEC, 100) : -1;
    int opened = open("/dev/null", O_RDWR | O_CLOEXEC);
    int devnull = opened >= 0 ? fcntl(opened, F_DUPFD_CLOEXEC, 100) : -1;
    if (keep[0] < 0 || keep[1] < 0 || keep[2] < 0 || devnull < 0 ||
        (spec->hold_fd >= 0 && hold < 0) || (spec->userns_fd >= 0 && userns < 0) ||
        dup3(keep[0], GUARD_LISTENER, O_CLOEXEC) < 0 || dup3(keep[1], GUARD_DIAG, O_CLOEXEC) < 0 ||
        dup3(keep[2], GUARD_WORKSPACE, O_CLOEXEC) < 0 ||
        (hold >= 0 && dup3(hold, GUARD_HOLD, O_CLOEXEC) < 0) || dup2(devnull, 0) < 0 ||
        dup2(devnull, 1) < 0)
        _exit(127);
    if (drop_privileges(userns, parent) < 0) {
        log_warn("socket guard: dropping its privileges: %s", strerror(errno));
        _exit(127);
    }
    if (userns >= 0)
        close(userns);
    close_range(spec->hold_fd >= 0 ? GUARD_HOLD + 1 : GUARD_WORKSPACE + 1, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    prctl(PR_SET_NAME, "cordon-sockgrd");
    struct guard g = {.pid1 = spec->pid1,
                      .allow = spec->allow,
                      .nallow = spec->nallow,
                      .own_dev = spec->own_dev,
                      .own_ino = spec->own_ino,
                      .nown = spec->nown};
    guard_main(&g);
    _exit(0);
}

void sock_guard_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}
