/* The ns backend's part of the host probe (backend/probe.h): user
 * namespaces (and the sysctls and AppArmor setting that refuse them), the
 * mount API and overlayfs inside one, seccomp with user notification,
 * Landlock and its ABI, cgroups, /dev/net/tun and pasta. The namespaces are
 * tried for real in a child process that exits at once, the way ns.c makes
 * them. Host context, unprivileged. */
#include "confine/landlock.h"
#include "backend/probe.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The value of a sysctl file, or -1 when it does not exist. */
static long sysctl_long(const char *path)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    long v = -1;
    if (!f || fscanf(f, "%ld", &v) != 1)
        return -1;
    return v;
}

static bool in_container(void)
{
    return access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0 ||
           getenv("KUBERNETES_SERVICE_HOST") != NULL;
}

/* The steps the child takes, in order; it reports the first that failed. */
enum step {
    STEP_USERNS,
    STEP_IDMAP,
    STEP_NAMESPACES,
    STEP_MOUNT_API,
    STEP_TMPFS,
    STEP_PROC,
    STEP_OVERLAY,
    STEP_DONE,
};
static const char *const step_names[] = {
    "unshare(CLONE_NEWUSER)",
    "writing the uid/gid maps",
    "unshare(mount, PID, network, IPC, UTS, cgroup namespaces)",
    "open_tree + mount_setattr (the mount API)",
    "fsopen(\"tmpfs\")",
    "mount(\"proc\") in the new PID namespace",
    "fsopen(\"overlay\")",
    "",
};

struct trial {
    int step; /* the first step that failed; STEP_DONE: all worked */
    int errnum;
    int overlay_errnum; /* overlay is tried even when the rest worked */
};

/* Child context (forked, exits at once): no allocation, no stdio but snprintf
 * into stack buffers. */
static void trial_in_child(int fd, uid_t uid, gid_t gid)
{
    struct trial t = {.step = STEP_DONE};
    char map[64];
    if (unshare(CLONE_NEWUSER) < 0) {
        t = (struct trial){STEP_USERNS, errno, 0};
        goto out;
    }
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
    if (fs_write_file("/proc/self/setgroups", "deny") < 0 ||
        fs_write_file("/proc/self/uid_map", map) < 0) {
        t = (struct trial){STEP_IDMAP, errno, 0};
        goto out;
    }
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
    if (fs_write_file("/proc/self/gid_map", map) < 0) {
        t = (struct trial){STEP_IDMAP, errno, 0};
        goto out;
    }
    if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_NEWCGROUP) < 0) {
        t = (struct trial){STEP_NAMESPACES, errno, 0};
        goto out;
    }
    int tree = open_tree(AT_FDCWD, "/usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
    if (tree < 0 || mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
        t = (struct trial){STEP_MOUNT_API, errno, 0};
        goto out;
    }
    close(tree);
    int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0) {
        t = (struct trial){STEP_TMPFS, errno, 0};
        goto out;
    }
    close(fs);
    /* A new proc, as the sandbox's PID 1 mounts it: the kernel refuses it
     * when the current /proc is partly hidden (a container's masked paths). */
    pid_t init = fork();
    if (init == 0) {
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            _exit(errno & 0xff ? errno & 0xff : 1);
        _exit(0);
    }
    int status = 0;
    if (init < 0 || waitpid(init, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        t = (struct trial){STEP_PROC,
                           init < 0            ? errno
                           : WIFEXITED(status) ? WEXITSTATUS(status)
                                               : EINTR,
                           0};
        goto out;
    }
    fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
    if (fs < 0)
        t.overlay_errnum = errno;
    else
        close(fs);
out:;
    ssize_t w = write(fd, &t, sizeof(t));
    _exit(w == sizeof(t) ? 0 : 1);
}

static int try_namespaces(struct trial *t)
{
    int p[2];
    uid_t uid = geteuid();
    gid_t gid = getegid();
    pid_t pid = proc_fork_pipe(p);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        trial_in_child(p[1], uid, gid);
    }
    close(p[1]);
    ssize_t n;
    do
        n = read(p[0], t, sizeof(*t));
    while (n < 0 && errno == EINTR);
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return n == sizeof(*t) ? 0 : -1;
}

/* The fix for a refused user namespace, from what refuses it. */
static void userns_fix(const struct trial *t, char *fix, size_t size, char *cause, size_t csize)
{
    long max = sysctl_long("/proc/sys/user/max_user_namespaces");
    long clone = sysctl_long("/proc/sys/kernel/unprivileged_userns_clone");
    long aa = sysctl_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    if (max == 0) {
        snprintf(cause, csize, "user.max_user_namespaces is 0");
        snprintf(fix, size,
                 "sudo sysctl -w user.max_user_namespaces=15000 (and the same line in "
                 "/etc/sysctl.d/60-cordon.conf to keep it)");
    } else if (clone == 0) {
        snprintf(cause, csize, "kernel.unprivileged_userns_clone is 0");
        snprintf(fix, size,
                 "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and in "
                 "/etc/sysctl.d/60-cordon.conf to keep it)");
    } else if (aa == 1 && t->step != STEP_USERNS) {
        snprintf(cause, csize,
                 "AppArmor restricts unprivileged user namespaces "
                 "(kernel.apparmor_restrict_unprivileged_userns = 1)");
        snprintf(fix, size,
                 "give cordon an AppArmor profile that allows userns (docs/doctor.md "
                 "\"AppArmor\"): /etc/apparmor.d/cordon with `abi <abi/4.0>, include "
                 "<tunables/global> profile cordon /usr/bin/cordon flags=(unconfined) { userns, "
                 "}` then `sudo apparmor_parser -r /etc/apparmor.d/cordon`; or, for the whole "
                 "host, sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
    } else if (in_container()) {
        snprintf(cause, csize,
                 "the container's seccomp profile or missing capabilities refuse it (Docker's "
                 "default profile allows unshare(CLONE_NEWUSER) only with CAP_SYS_ADMIN)");
        snprintf(fix, size,
                 "start the container with --security-opt seccomp=unconfined --security-opt "
                 "apparmor=unconfined --security-opt systempaths=unconfined (docs/ci.md says "
                 "what each gives up), or use the docker backend through a socket mounted on "
                 "purpose; on Kubernetes: hostUsers: false and an unconfined seccomp and "
                 "AppArmor profile");
    } else {
        snprintf(cause, csize, "the kernel or a security module refuses it");
        snprintf(fix, size,
                 "check dmesg for an LSM denial (AppArmor, SELinux); use backend = \"vm\" "
                 "meanwhile");
    }
}

static void userns_rows(const struct trial *t, bool tried, struct probe_report *r,
                        struct probe_verdict *v)
{
    long max = sysctl_long("/proc/sys/user/max_user_namespaces");
    long clone = sysctl_long("/proc/sys/kernel/unprivileged_userns_clone");
    long aa = sysctl_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    char sysctls[256];
    int len = snprintf(sysctls, sizeof(sysctls), "user.max_user_namespaces = %ld", max);
    if (clone >= 0)
        len += snprintf(sysctls + len, sizeof(sysctls) - (size_t)len,
                        ", kernel.unprivileged_userns_clone = %ld", clone);
    if (aa >= 0)
        snprintf(sysctls + len, sizeof(sysctls) - (size_t)len,
                 ", kernel.apparmor_restrict_unprivileged_userns = %ld", aa);
    if (!tried) {
        probe_add(r, "userns", PROBE_FAIL, "", "could not start a child to try (%s); %s",
                  strerror(errno), sysctls);
        snprintf(v->why, sizeof(v->why), "could not try a user namespace");
        return;
    }
    if (t->step <= STEP_NAMESPACES) {
        char fix[512], cause[256];
        userns_fix(t, fix, sizeof(fix), cause, sizeof(cause));
        probe_add(r, "userns", PROBE_FAIL, fix, "%s failed: %s; %s; %s", step_names[t->step],
                  strerror(t->errnum), cause, sysctls);
        snprintf(v->why, sizeof(v->why),
                 "unprivileged user namespaces are refused (%s: %.60s; %.250s); fix: %.500s",
                 step_names[t->step], strerror(t->errnum), cause, fix);
        return;
    }
    probe_add(r, "userns", PROBE_PASS, NULL,
              "a user namespace with mount, PID, network, IPC, UTS and cgroup namespaces was "
              "made and mapped; %s",
              sysctls);
    if (t->step == STEP_PROC) {
        bool contained = in_container();
        const char *fix = contained
                              ? "start the container with --security-opt "
                                "systempaths=unconfined (the container runtime hides parts "
                                "of /proc, and the kernel then refuses a new proc in a user "
                                "namespace; docs/ci.md)"
                              : "unmount what covers parts of /proc (the kernel refuses a new "
                                "proc in a user namespace while any is hidden)";
        probe_add(r, "mount-api", PROBE_PASS, NULL,
                  "open_tree + mount_setattr(MOUNT_ATTR_RDONLY) and fsopen(\"tmpfs\") work in a "
                  "user namespace");
        probe_add(r, "proc", PROBE_FAIL, fix, "%s: %s", step_names[t->step], strerror(t->errnum));
        snprintf(v->why, sizeof(v->why), "the sandbox's /proc cannot be mounted (%s); fix: %.400s",
                 strerror(t->errnum), fix);
        return;
    }
    if (t->step == STEP_MOUNT_API || t->step == STEP_TMPFS) {
        probe_add(r, "mount-api", PROBE_FAIL,
                  "a kernel >= 5.12 with the new mount API (open_tree, mount_setattr, fsopen)",
                  "%s in a user namespace: %s", step_names[t->step], strerror(t->errnum));
        snprintf(v->why, sizeof(v->why),
                 "the new mount API is refused in a user namespace (%s: %s); fix: a kernel >= "
                 "5.12",
                 step_names[t->step], strerror(t->errnum));
        return;
    }
    probe_add(r, "mount-api", PROBE_PASS, NULL,
              "open_tree + mount_setattr(MOUNT_ATTR_RDONLY) and fsopen(\"tmpfs\") work in a user "
              "namespace");
    probe_add(r, "proc", PROBE_PASS, NULL, "a new proc mounts in the new PID namespace");
    if (t->overlay_errnum)
        probe_add(r, "overlayfs", PROBE_WARN,
                  "a kernel >= 5.11 allows overlayfs in a user namespace (modprobe overlay)",
                  "fsopen(\"overlay\") in a user namespace: %s", strerror(t->overlay_errnum));
    else
        probe_add(r, "overlayfs", PROBE_PASS, NULL,
                  "fsopen(\"overlay\") works in a user namespace");
    v->works = true;
}

static void seccomp_row(struct probe_report *r, struct probe_verdict *v)
{
    int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    char avail[256] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/sys/kernel/seccomp/actions_avail", "re");
    if (f && fgets(avail, sizeof(avail), f))
        avail[strcspn(avail, "\n")] = '\0';
    if (mode < 0 && errno == EINVAL) {
        probe_add(r, "seccomp", PROBE_FAIL, "a kernel built with CONFIG_SECCOMP_FILTER",
                  "prctl(PR_GET_SECCOMP): %s", strerror(errno));
        v->works = false;
        snprintf(v->why, sizeof(v->why), "the kernel has no seccomp; fix: CONFIG_SECCOMP_FILTER");
        return;
    }
    if (!strstr(avail, "user_notif")) {
        probe_add(r, "seccomp", PROBE_FAIL, "a kernel >= 5.5 (seccomp user notification)",
                  "actions available: %s (no user_notif, which the socket guard needs)",
                  avail[0] ? avail : "unknown");
        v->works = false;
        snprintf(v->why, sizeof(v->why),
                 "seccomp user notification is missing; fix: a kernel >= 5.5");
        return;
    }
    probe_add(r, "seccomp", PROBE_PASS, NULL, "filter mode available%s; actions: %s",
              mode == 2 ? " (this process is already filtered: cordon's filter stacks on it)" : "",
              avail);
}

static void landlock_row(struct probe_report *r)
{
    int abi = ns_landlock_abi();
    if (abi > 0)
        probe_add(r, "landlock", PROBE_PASS, NULL, "ABI %d: applied as a second filesystem layer",
                  abi);
    else
        probe_add(r, "landlock", PROBE_WARN,
                  "boot with lsm=...,landlock (CONFIG_SECURITY_LANDLOCK); ns runs without it, the "
                  "mount namespace is then the only filesystem boundary",
                  "landlock_create_ruleset: %s", strerror(-abi));
}

static void cgroup_row(struct probe_report *r)
{
    bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
    char own[640] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
    char line[640];
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(own, sizeof(own), "%s", line + 3);
            own[strcspn(own, "\n")] = '\0';
        }
    if (!v2) {
        bool pids = access("/sys/fs/cgroup/pids", W_OK) == 0;
        probe_add(r, "cgroups", pids ? PROBE_PASS : PROBE_WARN,
                  pids ? NULL
                       : "limits.pids then holds through RLIMIT_NPROC only; memory through "
                         "RLIMIT_AS (run as a user with a delegated cgroup v2 for both)",
                  "cgroup v1; /sys/fs/cgroup/pids is %swritable by this user", pids ? "" : "not ");
        return;
    }
    char ctl[1100], enabled[256] = "";
    snprintf(ctl, sizeof(ctl), "/sys/fs/cgroup%s/cgroup.subtree_control", own);
    _cleanup_fclose_ FILE *c = fopen(ctl, "re");
    if (c && fgets(enabled, sizeof(enabled), c))
        enabled[strcspn(enabled, "\n")] = '\0';
    char dir[1100];
    snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", own);
    bool writable = access(dir, W_OK) == 0;
    if (writable && strstr(enabled, "pids"))
        probe_add(r, "cgroups", PROBE_PASS, NULL,
                  "cgroup v2; %s is delegated to this user (controllers for children: %s)", dir,
                  enabled);
    else
        probe_add(r, "cgroups", PROBE_WARN,
                  "systemd-run --user --scope -p Delegate=yes cordon ... (or run cordon in a "
                  "delegated unit); without it limits.pids holds through RLIMIT_NPROC, memory "
                  "through RLIMIT_AS and the tmpfs budget",
                  "cgroup v2; %s is %s (controllers for children: %s)", dir,
                  writable ? "writable" : "not writable by this user",
                  enabled[0] ? enabled : "none");
}

static bool find_in_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = strdup(path ? path : "/usr/bin:/bin");
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
        if (snprintf(out, size, "%s/%s", d, name) < (int)size && access(out, X_OK) == 0)
            return true;
    return false;
}

static void network_rows(const struct cordon_config *cfg, struct probe_report *r,
                         struct probe_verdict *v)
{
    bool open_mode = cfg->network.mode == CFG_NETWORK_OPEN;
    struct stat st;
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    int tun_errno = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    char pasta[512];
    bool have_pasta = find_in_path("pasta", pasta, sizeof(pasta));
    enum probe_status bad = open_mode ? PROBE_FAIL : PROBE_WARN;
    if (tun_errno)
        probe_add(r, "tun", bad,
                  stat("/dev/net/tun", &st) == 0
                      ? "make /dev/net/tun readable and writable (mode 0666, as Debian ships it); "
                        "in a container: --device /dev/net/tun"
                      : "sudo modprobe tun; in a container: --device /dev/net/tun",
                  "/dev/net/tun: %s (network.mode = \"open\" needs it)", strerror(tun_errno));
    else
        probe_add(r, "tun", PROBE_PASS, NULL, "/dev/net/tun opens read-write");
    if (!have_pasta)
        probe_add(r, "pasta", bad, "sudo apt-get install passt",
                  "pasta is not in PATH (network.mode = \"open\" needs it)");
    else
        probe_add(r, "pasta", PROBE_PASS, NULL, "%s", pasta);
    if (open_mode && (tun_errno || !have_pasta) && v->works) {
        v->works = false;
        snprintf(v->why, sizeof(v->why),
                 "network.mode = \"open\" needs pasta and /dev/net/tun (%s)",
                 tun_errno ? "no /dev/net/tun" : "no pasta");
    }
}

void ns_host_probe(const struct cordon_config *cfg, struct probe_report *r, struct probe_verdict *v)
{
    *v = (struct probe_verdict){.strength = "ns"};
    struct trial t = {0};
    bool tried = try_namespaces(&t) == 0;
    userns_rows(&t, tried, r, v);
    seccomp_row(r, v);
    landlock_row(r);
    cgroup_row(r);
    network_rows(cfg, r, v);
    if (v->works)
        snprintf(v->why, sizeof(v->why),
                 "user namespaces, the mount API and seccomp work here (Landlock %s)",
                 ns_landlock_abi() > 0 ? "too" : "absent");
}
