/* The security suite's probe: makes one syscall named on the command line
 * with harmless arguments and prints what the kernel answered: "OK", an errno
 * name ("EPERM"), or "SIGNAL:SIGSYS" when the attempt killed the process.
 * Runs inside the sandbox; the tests compare the printed word. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static int report(long rc)
{
    if (rc < 0) {
        const char *name = strerrorname_np(errno);
        printf("%s\n", name ? name : "E?");
    } else {
        printf("OK\n");
    }
    return 0;
}

/* Runs fn in a child and reports how the child ended: attempts through
 * foreign syscall entry points are expected to kill the process. */
static int in_child(long (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long rc = fn();
        report(rc);
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        printf("SIGNAL:%s\n",
               sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    return 0;
}

static long int80_getpid(void)
{
    long rc;
    /* __NR_getpid is 20 on i386. */
    __asm__ volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    return rc;
}

static long int80_keyctl(void)
{
    long rc;
    /* __NR_keyctl is 288 on i386. */
    __asm__ volatile("int $0x80" : "=a"(rc) : "a"(288L), "b"(0L), "c"(0L) : "memory");
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    return rc;
}

static long x32_getpid(void)
{
    return syscall(0x40000000L | SYS_getpid);
}

static long do_tiocsti_high(void)
{
    char c = 'x';
    /* The request with the upper 32 bits set: the kernel truncates it to
     * TIOCSTI, so the filter must compare only the low half. */
    return syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | 0x100000000UL, &c);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: syscall-probe NAME [ARG...]\n");
        return 2;
    }
    const char *p = argv[1];
    const char *arg = argc > 2 ? argv[2] : NULL;
    char c = 'x';
    if (!strcmp(p, "keyctl"))
        return report(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    if (!strcmp(p, "add_key"))
        return report(syscall(SYS_add_key, "user", "cordon", "x", 1, -3));
    if (!strcmp(p, "request_key"))
        return report(syscall(SYS_request_key, "user", "cordon", NULL, -3));
    if (!strcmp(p, "ptrace"))
        return report(syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, arg ? atoi(arg) : 1, 0, 0));
    if (!strcmp(p, "process_vm_readv")) {
        char buf[8];
        struct iovec local = {buf, sizeof(buf)}, remote = {(void *)0x400000, sizeof(buf)};
        return report(syscall(SYS_process_vm_readv, arg ? atoi(arg) : 1, &local, 1, &remote, 1, 0));
    }
    if (!strcmp(p, "userfaultfd"))
        return report(syscall(SYS_userfaultfd, 0));
    if (!strcmp(p, "perf_event_open"))
        return report(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
    if (!strcmp(p, "bpf"))
        return report(syscall(SYS_bpf, 0, NULL, 0));
    if (!strcmp(p, "io_uring_setup"))
        return report(syscall(SYS_io_uring_setup, 1, NULL));
    if (!strcmp(p, "mount_tmpfs"))
        return report(mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
    /* With a path: over that path (a protected path, for instance). */
    if (!strcmp(p, "mount_bind"))
        return report(mount("/usr", arg ? arg : "/tmp", NULL, MS_BIND, NULL));
    if (!strcmp(p, "umount"))
        return report(umount2(arg ? arg : "/usr", MNT_DETACH));
    if (!strcmp(p, "pivot_root"))
        return report(syscall(SYS_pivot_root, "/tmp", "/tmp"));
    if (!strcmp(p, "chroot"))
        return report(chroot("/tmp"));
    if (!strcmp(p, "unshare_user"))
        return report(unshare(CLONE_NEWUSER));
    if (!strcmp(p, "unshare_mount"))
        return report(unshare(CLONE_NEWNS));
    if (!strcmp(p, "clone_newuser")) {
        long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
        if (rc == 0)
            _exit(0);
        if (rc > 0)
            waitpid((pid_t)rc, NULL, 0);
        return report(rc);
    }
    if (!strcmp(p, "clone3"))
        return report(syscall(SYS_clone3, NULL, 0));
    if (!strcmp(p, "setns")) {
        int fd = open(arg ? arg : "/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return report(-1);
        return report(setns(fd, 0));
    }
    if (!strcmp(p, "tiocsti"))
        return report(ioctl(0, TIOCSTI, &c));
    if (!strcmp(p, "tiocsti_high"))
        return report(do_tiocsti_high());
    if (!strcmp(p, "tioclinux")) {
        char sub = 2;
        return report(ioctl(0, TIOCLINUX, &sub));
    }
    if (!strcmp(p, "int80_getpid"))
        return in_child(int80_getpid);
    if (!strcmp(p, "int80_keyctl"))
        return in_child(int80_keyctl);
    if (!strcmp(p, "x32_getpid"))
        return in_child(x32_getpid);
    if (!strcmp(p, "socket_vsock"))
        return report(socket(AF_VSOCK, SOCK_STREAM, 0));
    if (!strcmp(p, "socket_netlink_audit"))
        return report(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
    if (!strcmp(p, "kexec_load"))
        return report(syscall(SYS_kexec_load, 0, 0, NULL, 0));
    if (!strcmp(p, "init_module"))
        return report(syscall(SYS_init_module, NULL, 0, ""));
    if (!strcmp(p, "finit_module"))
        return report(syscall(SYS_finit_module, -1, "", 0));
    if (!strcmp(p, "reboot"))
        return report(syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321fedc /* POWER_OFF */, NULL));
    if (!strcmp(p, "swapon"))
        return report(syscall(SYS_swapon, "/tmp/none", 0));
    if (!strcmp(p, "acct"))
        return report(syscall(SYS_acct, NULL));
    if (!strcmp(p, "syslog"))
        return report(syscall(SYS_syslog, 3 /* READ_ALL */, NULL, 0));
    if (!strcmp(p, "open_by_handle_at"))
        return report(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0));
    if (!strcmp(p, "mknod"))
        return report(mknod(arg ? arg : "node", S_IFCHR | 0666, makedev(1, 3)));
    if (!strcmp(p, "link") && argc > 3)
        return report(link(argv[2], argv[3]));
    if (!strcmp(p, "open_write"))
        return report(open(arg, O_WRONLY | O_CLOEXEC));
    if (!strcmp(p, "fchdir_fds")) {
        /* Every fd other than 0-2 that lets us fchdir is a leak. */
        int leaks = 0;
        for (int fd = 3; fd < 1024; fd++) {
            if (fchdir(fd) == 0) {
                char cwd[4096];
                printf("fd %d: %s\n", fd, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
                leaks++;
            }
        }
        printf("%d\n", leaks);
        return 0;
    }
    if (!strcmp(p, "connect_abstract") && arg) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t len = strlen(arg);
        if (len + 1 > sizeof(sa.sun_path))
            len = sizeof(sa.sun_path) - 1;
        memcpy(sa.sun_path + 1, arg, len);
        return report(connect(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)));
    }
    if (!strcmp(p, "connect_unix") && arg) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", arg);
        return report(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
    }
    if (!strcmp(p, "kill0") && arg)
        return report(kill(atoi(arg), 0));
    fprintf(stderr, "syscall-probe: unknown probe %s\n", p);
    return 2;
}
