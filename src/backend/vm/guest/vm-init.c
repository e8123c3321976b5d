/* cordon-agent as the microVM's init (PID 1 of the guest, root in the guest,
 * started by the kernel from the initramfs as /init). Early boot: devtmpfs,
 * /proc, /sys, the modules listed in /cordon/modules, the virtio-serial
 * channel; then the boot spec from the supervisor (first frame on the
 * channel) says what to build: the 9p shares at the same paths as on the
 * host (read-only or read-write), fresh tmpfs /tmp /run /var/tmp
 * /var/lib/docker and home, protected paths bound read-only, loopback up,
 * the root made read-only. It answers {"t":"booted"} and continues into the
 * requested mode:
 *   - "init -- CMD...": runs CMD as the host user with its stdin/stdout on
 *     the virtio console (hvc0) and stderr on its own port, reports
 *     {"t":"exit","status":N} on the channel and powers off; with "init
 *     --pty", CMD has a terminal of the guest's instead, its master relayed
 *     over hvc0 (vm-pty.c);
 *   - anything else: re-executes the agent with that argv, the channel as
 *     fd 3 (the agent protocol's stream).
 * Whatever runs for the user (CMD above, or the agent and all it starts) is
 * confined first: confine_user() (no capability, no_new_privs, Landlock,
 * the ns backend's seccomp filter); the init and dockerd are not.
 * A failure before the channel exists ends in a kernel panic (QEMU exits,
 * -no-reboot); after, it is reported as {"t":"error","message":...}. */
#include "backend/vm/guest/vm-init.h"
#include "backend/vm/guest/vm-docker.h"
#include "backend/vm/guest/vm-pty.h"
#include "agent/path-prune.h"
#include "util/fs.h"
#include "confine/landlock.h"
#include "confine/seccomp-filter.h"
#include "backend/vm/guest/vm-probe.h"
#include "proto/init-channel.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm.h"
#include "backend/vm/vmux.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "confine/privs.h"
#include "config.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <linux/fs.h>
#include <linux/random.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL_FD   3
#define PORT_WAIT_MS 10000

extern char **environ;

static int channel = -1;

static void guest_poweroff(void) __attribute__((noreturn));

static void guest_poweroff(void)
{
    sync();
    /* reboot=t and QEMU's -no-reboot: a reset ends QEMU. */
    reboot(RB_AUTOBOOT);
    for (;;)
        pause();
}

static void guest_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void guest_fail(const char *fmt, ...)
{
    char msg[CORDON_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "cordon-agent (vm init): %s\n", msg);
    if (channel >= 0) {
        vm_probe_flush(); /* a probe's answer partly sent: whole frames first */
        json_t *m = json_pack("{s:s,s:s}", "t", "error", "message", msg);
        if (m)
            vm_frame_write(channel, m);
        json_decref(m);
    }
    guest_poweroff();
}

static void mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags,
                          const char *data)
{
    if (fs_mkdir_p(dst, 0755) < 0)
        guest_fail("mkdir %s: %s", dst, strerror(errno));
    if (mount(src, dst, type, flags, data) < 0)
        guest_fail("mount %s on %s (%s): %s", src, dst, type, strerror(errno));
}

static void load_modules_from(const char *list)
{
    _cleanup_fclose_ FILE *f = fopen(list, "re");
    if (!f)
        return;
    char line[PATH_MAX];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        _cleanup_close_ int fd = open(line, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            guest_fail("module %s: %s", line, strerror(errno));
        if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
            guest_fail("loading %s: %s", line, strerror(errno));
    }
}

static void load_modules(void)
{
    load_modules_from("/cordon/modules");
}

/* The port's device exists before QEMU's "host connected" message has
 * reached the driver; until then a read returns EOF at once (and poll says
 * POLLHUP). A boot fast enough to read the boot spec in that window failed
 * with "reading the boot spec: Connection reset by peer". */
static int port_wait_host(int fd, const char *name, long long deadline)
{
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) >= 0 && ((p.revents & POLLIN) || !(p.revents & POLLHUP)))
            return fd;
        if (clock_now_ms() > deadline)
            guest_fail("virtio port %s: the host side did not connect", name);
        usleep(2000);
    }
}

/* /dev/vportNpM of the port called name (no udev here to make the
 * /dev/virtio-ports/ links); the device may appear a moment after its
 * module is loaded. */
static int open_port(const char *name)
{
    long long deadline = clock_now_ms() + PORT_WAIT_MS;
    for (;;) {
        _cleanup_closedir_ DIR *d = opendir("/sys/class/virtio-ports");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char path[PATH_MAX], got[128] = "";
            snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
            _cleanup_fclose_ FILE *f = fopen(path, "re");
            if (!f || !fgets(got, sizeof(got), f))
                continue;
            got[strcspn(got, "\n")] = '\0';
            if (strcmp(got, name) != 0)
                continue;
            snprintf(path, sizeof(path), "/dev/%s", de->d_name);
            int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
            if (fd >= 0)
                return port_wait_host(fd, name, deadline);
        }
        if (clock_now_ms() > deadline)
            guest_fail("virtio port %s did not appear", name);
        usleep(5000);
    }
}

static void loopback_up(void)
{
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    memcpy(ifr.ifr_name, "lo", 3);
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        guest_fail("loopback: %s", strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        guest_fail("loopback up: %s", strerror(errno));
}

static bool is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int share_depth_cmp(const void *a, const void *b)
{
    const char *pa = json_string_value(json_object_get(*(json_t *const *)a, "path"));
    const char *pb = json_string_value(json_object_get(*(json_t *const *)b, "path"));
    size_t la = pa ? strlen(pa) : 0, lb = pb ? strlen(pb) : 0;
    return (la > lb) - (la < lb);
}

/* The view (docs/design.md "The sandbox's view"), built from the boot spec. */
static void build_view(json_t *spec, uid_t uid, gid_t gid)
{
    const unsigned long nosuid = MS_NOSUID | MS_NODEV;
    /* Each writable tmpfs bounded as on the host backends (the host's
     * limits.tmpfs_mib and limits.tmpfs_inodes); without them, the kernel's
     * half of the guest's RAM, each. */
    json_t *bounds = json_object_get(spec, "tmpfs");
    long mib = (long)json_integer_value(json_object_get(bounds, "mib"));
    long inodes = (long)json_integer_value(json_object_get(bounds, "inodes"));
    char size[64] = "";
    if (mib > 0 && inodes > 0)
        snprintf(size, sizeof(size), ",size=%ldm,nr_inodes=%ld", mib, inodes);
    char tmpfs_opts[128];
    snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=1777%s", size);
    mount_or_fail("tmpfs", "/tmp", "tmpfs", nosuid, tmpfs_opts);
    mount_or_fail("tmpfs", "/var/tmp", "tmpfs", nosuid, tmpfs_opts);
    mount_or_fail("tmpfs", "/dev/shm", "tmpfs", nosuid, tmpfs_opts);
    snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=0755%s", size);
    mount_or_fail("tmpfs", "/run", "tmpfs", nosuid, tmpfs_opts);
    /* Images and containers of the guest's daemon when it has no disk: as
     * large as the kernel allows a tmpfs (half the guest's RAM), said
     * explicitly. */
    mount_or_fail("tmpfs", "/var/lib/docker", "tmpfs", MS_NODEV, "mode=0711,size=50%");
    mount_or_fail("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620");

    const char *home = json_string_value(json_object_get(spec, "home"));
    if (home && home[0] == '/' && !is_under(home, "/tmp") && !is_under(home, "/var/tmp") &&
        !is_under(home, "/run")) {
        snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=0700,uid=%u,gid=%u%s", uid, gid, size);
        mount_or_fail("tmpfs", home, "tmpfs", nosuid, tmpfs_opts);
    } else if (home && home[0] == '/') {
        /* The parents stay traversable for the user (0755, as on a host
         * where such a home exists); the home itself is the user's. */
        if (fs_mkdir_p(home, 0755) < 0 || chmod(home, 0700) < 0 || chown(home, uid, gid) < 0)
            guest_fail("home %s: %s", home, strerror(errno));
    }

    /* Outer paths first: /usr, then the workspace (which may sit below the
     * home just mounted). */
    json_t *shares = json_object_get(spec, "shares");
    size_t n = json_array_size(shares);
    json_t **sorted = calloc(n + 1, sizeof(*sorted));
    if (!sorted)
        guest_fail("out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(shares, i);
    qsort(sorted, n, sizeof(*sorted), share_depth_cmp);
    for (size_t i = 0; i < n; i++) {
        const char *tag = json_string_value(json_object_get(sorted[i], "tag"));
        const char *path = json_string_value(json_object_get(sorted[i], "path"));
        bool ro = json_is_true(json_object_get(sorted[i], "ro"));
        if (!tag || !path || path[0] != '/')
            guest_fail("bad share in the boot spec");
        /* System directories do not change under a session: let the guest
         * cache them (exec from /usr over 9p is otherwise slow). */
        bool system = strcmp(path, "/usr") == 0 || strcmp(path, "/etc") == 0;
        const char *opts = system ? "trans=virtio,version=9p2000.L,msize=524288,cache=loose"
                                  : "trans=virtio,version=9p2000.L,msize=524288";
        mount_or_fail(tag, path, "9p", nosuid | (ro ? MS_RDONLY : 0), opts);
    }
    free(sorted);

    /* Protected paths: read-only binds over themselves. Only a defence
     * against mistakes while the guest's root could undo it; see
     * docs/vm-backend.md. */
    json_t *prot = json_object_get(spec, "protected");
    for (size_t i = 0; i < json_array_size(prot); i++) {
        const char *p = json_string_value(json_array_get(prot, i));
        struct stat st;
        if (!p || lstat(p, &st) < 0 || S_ISLNK(st.st_mode))
            continue;
        if (mount(p, p, NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | nosuid, NULL) < 0)
            guest_fail("protecting %s: %s", p, strerror(errno));
    }

    if (sethostname("cordon", 6) < 0)
        guest_fail("sethostname: %s", strerror(errno));
    loopback_up();
    /* The initramfs root itself becomes read-only, as the ns view's root. */
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
        fprintf(stderr, "cordon-agent (vm init): root stays writable: %s\n", strerror(errno));
}

/* Where the ns view keeps the agent binary (NS_AGENT_VIEW_PATH), which
 * `cordon verify` runs as its probe: in the guest the agent is /init. */
static void agent_view_link(void)
{
    if (fs_mkdir_p("/run/cordon", 0755) < 0 || symlink("/init", "/run/cordon/agent") < 0)
        fprintf(stderr, "cordon-agent (vm init): /run/cordon/agent: %s\n", strerror(errno));
}

/* Docker inside the guest (vm-docker.c), when the boot spec asks for it.
 * "require" fails the boot when the daemon does not come up; "auto" only
 * reports. Returns the summary for the boot answer, or NULL. */
static json_t *start_docker(json_t *spec, gid_t gid)
{
    json_t *docker = json_object_get(spec, "docker");
    if (!json_is_true(json_object_get(docker, "start")))
        return NULL;
    /* The allowlist proxy's variables (set by cordon, src/net/net.c), so
     * that the daemon's pulls take the same road as the agent's traffic. */
    static const char *const proxy_vars[] = {
        "HTTP_PROXY=", "HTTPS_PROXY=", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy="};
    json_t *penv = json_array();
    json_t *env = json_object_get(spec, "env");
    for (size_t i = 0; i < json_array_size(env); i++) {
        const char *e = json_string_value(json_array_get(env, i));
        for (size_t j = 0; e && j < ARRAY_SIZE(proxy_vars); j++)
            if (strncmp(e, proxy_vars[j], strlen(proxy_vars[j])) == 0)
                json_array_append_new(penv, json_string(e));
    }
    json_object_set_new(docker, "proxy_env", penv);
    char reason[700];
    json_t *summary = NULL;
    int fds[] = {channel, -1};
    if (vm_docker_guest_start(docker, gid, fds, reason, sizeof(reason), &summary) == 0)
        return summary;
    const char *mode = json_string_value(json_object_get(docker, "mode"));
    if (mode && strcmp(mode, "require") == 0)
        guest_fail("docker.mode = \"require\": the guest's Docker daemon is not available: %s",
                   reason);
    return json_pack("{s:s,s:s}", "state", "unavailable", "detail", reason);
}

static char **json_strv(json_t *arr)
{
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof(char *));
    if (!v)
        guest_fail("out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            guest_fail("bad string array in the boot spec");
        v[i] = (char *)s;
    }
    return v;
}

struct guest_command {
    char **argv;
    char **env;
    const char *cwd;
    uid_t uid;
    gid_t gid;
    json_t *rlimits;
    const char *home;
    const char *workspace;
    bool workspace_readonly;
    json_t *shares;  /* the boot spec's: the writable ones stay writable */
    bool no_seccomp; /* debug builds' test hook only */
    bool pty;        /* "init --pty": a terminal of the guest (vm-pty.c) */
    json_t *winsize; /* the boot spec's: the terminal's first size */
};

/* Every process started for the user (the agent and all it runs, or the
 * command of `cordon run`) runs as the ns sandbox's do: the host user's
 * uid (uid 0 when cordon runs as root: root of a guest whose every
 * capability is gone), no capability and no way back (securebits locked,
 * empty bounding set), no_new_privs, Landlock where the guest kernel has
 * it (writes only to the workspace, /tmp, /var/tmp, /run, /dev and home)
 * and the ns backend's seccomp filter (no mount, umount, pivot_root,
 * unshare, setns, keyctl, bpf...). The guest's root could otherwise undo
 * the read-only binds over protected paths. The guest init, the Docker
 * daemon and the port forwarder were started before and keep theirs.
 * Returns -1 with err filled; no allocation. */
static int confine_user(const struct guest_command *c, struct cordon_error *err)
{
    /* Landlock first, while still the guest's root: its rules open the
     * writable places, which the user may not be able to reach (a home
     * below a root-owned directory); restricting itself needs no
     * no_new_privs with CAP_SYS_ADMIN. */
    const char *writable[32];
    size_t n = 0;
    static const char *const always[] = {"/tmp", "/var/tmp", "/run", "/dev"};
    for (size_t i = 0; i < ARRAY_SIZE(always); i++)
        writable[n++] = always[i];
    if (c->home && c->home[0] == '/')
        writable[n++] = c->home;
    if (c->workspace && c->workspace[0] == '/' && !c->workspace_readonly)
        writable[n++] = c->workspace;
    /* Every share mounted read-write (a linked worktree's git directories,
     * [[mounts]] with readonly = false): the mounts say what is writable,
     * Landlock must not take it back. */
    for (size_t i = 0; i < json_array_size(c->shares) && n + 1 < ARRAY_SIZE(writable); i++) {
        json_t *sh = json_array_get(c->shares, i);
        const char *path = json_string_value(json_object_get(sh, "path"));
        if (path && path[0] == '/' && !json_is_true(json_object_get(sh, "ro")))
            writable[n++] = path;
    }
    writable[n] = NULL;
    if (ns_landlock_apply_in_child(ns_landlock_abi(), writable, err) < 0)
        return -1;
    if (privs_drop_all(true, c->uid, c->gid, err) < 0)
        return -1;
    if (CORDON_UNSAFE_NO_SECCOMP || (CORDON_TEST_HOOKS && c->no_seccomp))
        return 0;
    struct sock_fprog prog;
    ns_seccomp_program(&prog);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        return error_set_raw(err, errno, "load seccomp filter", NULL);
    return 0;
}

static void set_limit(int resource, json_int_t value, rlim_t unit)
{
    if (value <= 0)
        return;
    struct rlimit rl = {(rlim_t)value * unit, (rlim_t)value * unit};
    setrlimit(resource, &rl);
}

/* The limits the ns backend applies to its sandbox, from the boot spec. */
static void apply_limits(json_t *r)
{
    set_limit(RLIMIT_NOFILE, json_integer_value(json_object_get(r, "nofile")), 1);
    set_limit(RLIMIT_FSIZE, json_integer_value(json_object_get(r, "fsize_mib")), 1 << 20);
    set_limit(RLIMIT_CPU, json_integer_value(json_object_get(r, "cpu")), 1);
    set_limit(RLIMIT_NPROC, json_integer_value(json_object_get(r, "nproc")), 1);
}

/* In the forked child: its stdio (pipes, or the terminal's slave as its
 * controlling terminal), the host user's identity, the limits the ns
 * backend applies, then exec. */
static void exec_guest_command(const struct guest_command *c, int in, int out, int errfd,
                               const char *slave)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    if (slave) {
        if (vm_pty_attach_in_child(slave) < 0) {
            fprintf(stderr, "cordon: terminal %s: %s\n", slave, strerror(errno));
            _exit(CORDON_EXIT_FAILURE);
        }
    } else {
        dup2(in, 0);
        dup2(out, 1);
        dup2(errfd, 2);
    }
    apply_limits(c->rlimits);
    struct cordon_error err;
    if (confine_user(c, &err) < 0) {
        fprintf(stderr, "cordon: confining the command (uid %u): %s\n", c->uid, err.message);
        _exit(CORDON_EXIT_FAILURE);
    }
    if (c->cwd && chdir(c->cwd) < 0) {
        fprintf(stderr, "cordon: chdir %s: %s\n", c->cwd, strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
    agent_path_prune(c->env); /* the guest's view, as on ns (path-prune.c) */
    environ = c->env;
    execvp(c->argv[0], c->argv);
    int e = errno;
    fprintf(stderr, "cordon: %s: %s\n", c->argv[0], strerror(e));
    _exit(e == ENOENT ? CORDON_EXIT_NOT_FOUND : CORDON_EXIT_CANNOT_EXEC);
}

/* The probe of `cordon verify NAME` (vm-probe.c), in its forked child:
 * the command's own confinement step, then the agent's probe mode from
 * where the ns view keeps the agent (agent_view_link). */
static void exec_probe(const void *ctx)
{
    const struct guest_command *c = ctx;
    apply_limits(c->rlimits);
    struct cordon_error err;
    if (confine_user(c, &err) < 0) {
        fprintf(stderr, "cordon: confining the probe (uid %u): %s\n", c->uid, err.message);
        _exit(CORDON_EXIT_FAILURE);
    }
    if (c->cwd && chdir(c->cwd) < 0) {
        fprintf(stderr, "cordon: chdir %s: %s\n", c->cwd, strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
    char *argv[] = {"cordon-agent", "probe", NULL};
    execve(NS_AGENT_VIEW_PATH, argv, c->env);
    fprintf(stderr, "cordon: exec %s: %s\n", NS_AGENT_VIEW_PATH, strerror(errno));
    _exit(CORDON_EXIT_CANNOT_EXEC);
}

static ssize_t write_some(int fd, const char *buf, size_t len)
{
    ssize_t n;
    do {
        n = write(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n;
}

static void write_all_blocking(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write_some(fd, buf, len);
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, 100);
            continue;
        }
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* "init" mode: the command with its stdio relayed over the console and the
 * stderr port; control messages (stdin EOF, signals) on the channel. */
static void run_relayed(const struct guest_command *c) __attribute__((noreturn));

static void run_relayed(const struct guest_command *c)
{
    int console = open("/dev/hvc0", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (console < 0)
        guest_fail("open /dev/hvc0: %s", strerror(errno));
    struct termios t;
    if (tcgetattr(console, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(console, TCSANOW, &t);
    }
    /* Input the host sent before the line discipline was raw would have
     * been echoed back: the host relays stdin only after this message. */
    json_t *ready = json_pack("{s:s}", "t", "stdin-ready");
    if (!ready || vm_frame_write(channel, ready) < 0)
        guest_fail("channel: %s", strerror(errno));
    json_decref(ready);
    int errport = open_port(VM_PORT_STDERR);
    /* `cordon verify NAME` sees PID 1 as on ns (the probe reads its comm). */
    prctl(PR_SET_NAME, "cordon-init");
    vm_probe_setup(channel, exec_probe, c);
    int in[2], out[2], errp[2];
    struct vm_pty pty = {.master = -1};
    if (c->pty) {
        /* The master takes the pipes' places: input is written to it, its
         * output (stdout and stderr alike) read from a second descriptor
         * (the loop closes each end on its own). */
        struct cordon_error err;
        if (vm_pty_open(&pty, c->winsize, c->uid, c->gid, &err) < 0)
            guest_fail("%s", err.message);
        in[0] = out[1] = errp[0] = errp[1] = -1;
        in[1] = pty.master;
        out[0] = fcntl(pty.master, F_DUPFD_CLOEXEC, 3);
        if (out[0] < 0)
            guest_fail("dup: %s", strerror(errno));
    } else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
               pipe2(errp, O_CLOEXEC) < 0) {
        guest_fail("pipe: %s", strerror(errno));
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t child = fork();
    if (child < 0)
        guest_fail("fork: %s", strerror(errno));
    if (child == 0)
        exec_guest_command(c, in[0], out[1], errp[1], c->pty ? pty.slave : NULL);
    if (!c->pty) {
        close(in[0]);
        close(out[1]);
        close(errp[1]);
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);

    char inbuf[16384];
    size_t inlen = 0, inoff = 0;
    bool stdin_open = true;
    /* stdin-eof says how many bytes the host sent: the console and the
     * channel are separate ports, so the EOF can overtake the last input. */
    unsigned long long in_total = 0;
    long long eof_after = -1;
    int status = -1;
    long long exited_at = 0;
    int outfd = out[0], errfd = errp[0];
    for (;;) {
        if (status >= 0 && ((outfd < 0 && errfd < 0) || clock_now_ms() - exited_at > 500))
            break;
        struct pollfd p[5] = {
            {stdin_open && inlen == 0 ? console : -1, POLLIN, 0},
            {stdin_open && inlen > 0 ? in[1] : -1, POLLOUT, 0},
            {outfd, POLLIN, 0},
            {errfd, POLLIN, 0},
            {channel, POLLIN, 0},
        };
        struct pollfd ps = {sigfd, POLLIN, 0};
        struct pollfd all[6 + VM_PROBE_POLLFDS] = {p[0], p[1], p[2], p[3], p[4], ps};
        vm_probe_pollfds(all + 6);
        int timeout = vm_probe_timeout_ms();
        if (status >= 0 && (timeout < 0 || timeout > 100))
            timeout = 100;
        if (poll(all, ARRAY_SIZE(all), timeout) < 0 && errno != EINTR)
            guest_fail("poll: %s", strerror(errno));
        vm_probe_events(all + 6);
        if (all[0].revents & POLLIN) {
            ssize_t n = read(console, inbuf, sizeof(inbuf));
            if (n > 0) {
                inlen = (size_t)n;
                inoff = 0;
                in_total += (unsigned long long)n;
            }
        }
        if (inlen > 0 && (all[1].revents & (POLLOUT | POLLERR))) {
            ssize_t n = write_some(in[1], inbuf + inoff, inlen);
            if (n > 0) {
                inoff += (size_t)n;
                inlen -= (size_t)n;
            } else if (n < 0 && errno != EAGAIN) {
                inlen = 0; /* the command closed its stdin */
            }
        }
        char buf[16384];
        if (all[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(outfd, buf, sizeof(buf));
            if (n > 0)
                write_all_blocking(console, buf, (size_t)n);
            else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                close(outfd), outfd = -1; /* a pty's master: EIO, no slave left */
        }
        if (all[3].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(errfd, buf, sizeof(buf));
            if (n > 0)
                write_all_blocking(errport, buf, (size_t)n);
            else if (n == 0 || errno != EINTR)
                close(errfd), errfd = -1;
        }
        if (all[4].revents & POLLIN) {
            json_t *m = vm_frame_read(channel, 1000);
            if (!m)
                guest_fail("the channel failed: %s", strerror(errno));
            const char *type = json_string_value(json_object_get(m, "t"));
            if (type && strcmp(type, "stdin-eof") == 0 && !c->pty) {
                /* (A terminal's input has no end: the master stays open,
                 * as on the ns backend.) */
                json_t *bytes = json_object_get(m, "bytes");
                eof_after = json_is_integer(bytes) ? json_integer_value(bytes) : 0;
            } else if (type && strcmp(type, "probe") == 0) {
                vm_probe_request(m);
            } else if (type && strcmp(type, "signal") == 0) {
                int sig = (int)json_integer_value(json_object_get(m, "signal"));
                if (sig > 0 && sig < 65 && c->pty)
                    vm_pty_signal(&pty, child, sig);
                else if (sig > 0 && sig < 65)
                    kill(-child, sig);
            } else if (type && strcmp(type, "resize") == 0 && c->pty) {
                vm_pty_resize(&pty, m);
            }
            json_decref(m);
        }
        if (stdin_open && eof_after >= 0 && in_total >= (unsigned long long)eof_after) {
            stdin_open = false;
            /* What was read is still delivered before the EOF. */
            fcntl(in[1], F_SETFL, 0);
            if (inlen > 0)
                write_all_blocking(in[1], inbuf + inoff, inlen);
            inlen = 0;
            close(in[1]);
            in[1] = -1;
        }
        if (all[5].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof(si)) == sizeof(si))
                ;
            int ws;
            pid_t pid;
            while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
                if (vm_probe_reaped(pid, ws))
                    continue;
                if (pid == child && status < 0) {
                    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
                    exited_at = clock_now_ms();
                }
            }
        }
    }
    tcdrain(console);
    vm_probe_finish();
    json_t *m = json_pack("{s:s,s:i}", "t", "exit", "status", status);
    /* How the guest's Docker daemon fared (started on first use, so only
     * known now), for `cordon --debug run`. */
    json_error_t jerr;
    json_t *docker = json_load_file(VM_DOCKER_STATUS, 0, &jerr);
    if (m && docker)
        json_object_set_new(m, "docker", docker);
    else
        json_decref(docker);
    if (m)
        vm_frame_write(channel, m);
    json_decref(m);
    guest_poweroff();
}

/* ---- network (docs/vm-backend.md "Network") ---- */

static void set_ifr_addr(struct ifreq *ifr, const char *text)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr->ifr_addr;
    *sin = (struct sockaddr_in){.sin_family = AF_INET};
    if (inet_pton(AF_INET, text, &sin->sin_addr) != 1)
        guest_fail("network: bad address %s in the boot spec", text);
}

/* Open mode: the virtio-net interface passt serves, configured with the
 * address, prefix and gateway passt was given (no DHCP client here). */
static void net_interface_up(json_t *net)
{
    const char *addr = json_string_value(json_object_get(net, "addr"));
    const char *gw = json_string_value(json_object_get(net, "gw"));
    json_int_t prefix = json_integer_value(json_object_get(net, "prefix"));
    if (!addr || !gw || prefix < 1 || prefix > 32)
        guest_fail("network: the boot spec lacks the interface's address");
    load_modules_from("/cordon/modules-net");
    char name[IF_NAMESIZE] = "";
    _cleanup_closedir_ DIR *d = opendir("/sys/class/net");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] != '.' && strcmp(de->d_name, "lo") != 0 &&
            strlen(de->d_name) < sizeof(name)) {
            memcpy(name, de->d_name, strlen(de->d_name) + 1);
            break;
        }
    }
    if (!name[0])
        guest_fail("network: no network interface appeared");
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    set_ifr_addr(&ifr, addr);
    if (fd < 0 || ioctl(fd, SIOCSIFADDR, &ifr) < 0)
        guest_fail("network: address %s on %s: %s", addr, name, strerror(errno));
    struct sockaddr_in *mask = (struct sockaddr_in *)&ifr.ifr_netmask;
    *mask = (struct sockaddr_in){.sin_family = AF_INET};
    mask->sin_addr.s_addr = htonl(prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix));
    if (ioctl(fd, SIOCSIFNETMASK, &ifr) < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        guest_fail("network: netmask on %s: %s", name, strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        guest_fail("network: %s up: %s", name, strerror(errno));
    struct rtentry rt = {0};
    struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
    struct sockaddr_in *gwa = (struct sockaddr_in *)&rt.rt_gateway;
    struct sockaddr_in *gm = (struct sockaddr_in *)&rt.rt_genmask;
    *dst = *gm = (struct sockaddr_in){.sin_family = AF_INET};
    *gwa = (struct sockaddr_in){.sin_family = AF_INET};
    inet_pton(AF_INET, gw, &gwa->sin_addr);
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    rt.rt_dev = name;
    if (ioctl(fd, SIOCADDRT, &rt) < 0)
        guest_fail("network: default route via %s: %s", gw, strerror(errno));
}

/* Guest side of an in port: the host opened a connection to a published
 * port; it goes to the guest's own loopback. */
static int forwarder_connect(struct vmux *m, uint16_t port, void *ctx)
{
    (void)m;
    (void)ctx;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    /* Loopback: refused or accepted at once, a blocking connect is short. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The forwarder (a child of init, then of the agent): the guest's end of
 * the allowlist proxy (a listener on 127.0.0.1:proxy_port whose
 * connections go out on the "cordon.out.N" ports) and of published ports
 * ("cordon.in.N"). It opens the ports as root, then runs as nobody. The
 * boot goes on once its listener exists. */
static void net_forwarder_start(json_t *net)
{
    size_t n_out = (size_t)json_integer_value(json_object_get(net, "out"));
    size_t n_in = (size_t)json_integer_value(json_object_get(net, "in"));
    json_int_t proxy_port = json_integer_value(json_object_get(net, "proxy_port"));
    if (n_out + n_in == 0)
        return;
    /* proxy_port 0: no proxy listener (host services only). */
    json_t *services = json_object_get(net, "host_services");
    size_t n_services = json_is_array(services) ? json_array_size(services) : 0;
    if (n_out + n_in > VMUX_MAX_PORTS || proxy_port < 0 || proxy_port > 65535 ||
        n_services >= VMUX_MAX_LISTEN || (n_services && !n_out))
        guest_fail("network: bad port counts in the boot spec");
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        guest_fail("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        guest_fail("fork: %s", strerror(errno));
    if (pid > 0) {
        close(ready[1]);
        char byte;
        if (read(ready[0], &byte, 1) != 1)
            guest_fail("network: the port forwarder did not start");
        close(ready[0]);
        return;
    }
    close(ready[0]);
    static struct vmux mux;
    struct cordon_error err;
    vmux_init(&mux, forwarder_connect, NULL);
    for (size_t i = 0; i < n_out + n_in; i++) {
        char name[32];
        bool out = i < n_out;
        snprintf(name, sizeof(name), "cordon.%s.%zu", out ? "out" : "in", out ? i : i - n_out);
        if (vmux_add_port(&mux, open_port(name), out, &err) < 0)
            _exit(1);
    }
    /* The proxy's port, then each host service's (network.host_services):
     * the host's relay tells them apart by the port each connection names. */
    for (size_t i = 0; n_out && i <= n_services; i++) {
        json_int_t port = i == 0 ? proxy_port : json_integer_value(json_array_get(services, i - 1));
        if (i == 0 && port == 0)
            continue;
        if (port < 1 || port > 65535)
            _exit(1);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0 ||
            vmux_add_listener(&mux, fd, (uint16_t)port, &err) < 0)
            _exit(1);
    }
    close(channel);
    channel = -1;
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
        _exit(1);
    signal(SIGPIPE, SIG_IGN);
    if (write(ready[1], "r", 1) != 1)
        _exit(1);
    close(ready[1]);
    vmux_run(&mux);
    _exit(0);
}

/* TLS interception (docs/network.md): the bundle the guest's clients
 * trust is the host's (from the /etc share) plus the session CA of the
 * boot spec, written to /run by init and bound read-only over it; the
 * name on /run goes again, so only the read-only bind reaches the file.
 * The CA's key stays in the host's proxy. */
static void net_ca_install(json_t *net)
{
    const char *ca = json_string_value(json_object_get(net, "ca"));
    const char *bundle = json_string_value(json_object_get(net, "ca_bundle"));
    if (!ca)
        return;
    if (!bundle || bundle[0] != '/' || strlen(ca) > 16384)
        guest_fail("network: bad session CA in the boot spec");
    static const char tmp[] = "/run/cordon/ca-bundle.pem";
    if (fs_mkdir_p("/run/cordon", 0755) < 0)
        guest_fail("mkdir /run/cordon: %s", strerror(errno));
    _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    _cleanup_close_ int in = open(bundle, O_RDONLY | O_CLOEXEC);
    if (out < 0)
        guest_fail("network: %s: %s", tmp, strerror(errno));
    if (in < 0)
        guest_fail("network: TLS interception: the guest's %s: %s", bundle, strerror(errno));
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (fs_write_all(out, buf, (size_t)n) < 0)
            guest_fail("network: writing %s: %s", tmp, strerror(errno));
    }
    if (n < 0 || fs_write_all(out, "\n", 1) < 0 || fs_write_all(out, ca, strlen(ca)) < 0 ||
        fs_write_all(out, "\n", 1) < 0)
        guest_fail("network: writing %s: %s", tmp, strerror(errno));
    if (mount(tmp, bundle, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, bundle, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
            0)
        guest_fail("network: binding the session CA's bundle over %s: %s", bundle, strerror(errno));
    unlink(tmp);
}

static void net_setup(json_t *net)
{
    if (!net)
        return;
    const char *mode = json_string_value(json_object_get(net, "mode"));
    if (mode && strcmp(mode, "open") == 0)
        net_interface_up(net);
    net_ca_install(net);
    net_forwarder_start(net);
}

/* The first frame on the channel. An EOF before the first byte: the
 * port's "host connected" state was still settling (seen about once in ten
 * TCG boots under load, after port_wait_host had seen it connected); wait
 * for it again. */
static json_t *read_first_frame(void)
{
    json_t *msg = NULL;
    long long deadline = clock_now_ms() + PORT_WAIT_MS;
    while (!(msg = vm_frame_read(channel, -1)) && errno == ECONNRESET &&
           clock_now_ms() < deadline) {
        usleep(2000);
        port_wait_host(channel, VM_PORT_CHANNEL, deadline);
    }
    if (!msg)
        guest_fail("reading the boot spec: %s", strerror(errno));
    return msg;
}

/* The boot spec. Before it, the host may ask the guest to park for a
 * snapshot (vm-snapshot.c): the answer is sent and the spec awaited, and
 * the host saves the guest in between. Nothing of a session exists then:
 * no share is mounted (a mounted 9p export blocks QEMU's migration), no
 * tmpfs, no process but this one, no byte of the spec read. */
static json_t *read_boot_spec(void)
{
    json_t *spec = read_first_frame();
    const char *t = json_string_value(json_object_get(spec, "t"));
    if (t && strcmp(t, "park") == 0) {
        json_decref(spec);
        json_t *parked = json_pack("{s:s}", "t", "parked");
        if (!parked || vm_frame_write(channel, parked) < 0)
            guest_fail("reporting the park: %s", strerror(errno));
        json_decref(parked);
        spec = read_first_frame();
        t = json_string_value(json_object_get(spec, "t"));
    }
    if (!t || strcmp(t, "boot") != 0)
        guest_fail("expected the boot spec, got another frame");
    return spec;
}

/* A restored guest as fresh as a booted one (the same for both): the
 * host's seed mixed into the RNG and the CRNG reseeded at once (every
 * restore of one snapshot starts with the same pool; the seed makes the
 * outputs differ from the first read on), the host's clock (a restored
 * guest's clock is the snapshot's), and a boot id of this session bound
 * over the kernel's (generated once per kernel boot, so shared by all
 * restores when anything read it before the save). */
static void fresh_start(json_t *spec)
{
    const char *hex = json_string_value(json_object_get(spec, "seed"));
    struct {
        struct rand_pool_info info;
        unsigned char bytes[64];
    } seed = {.info = {.entropy_count = 0, .buf_size = sizeof(seed.bytes)}};
    if (!hex || strlen(hex) != 2 * sizeof(seed.bytes))
        guest_fail("the boot spec lacks the random seed");
    for (size_t i = 0; i < sizeof(seed.bytes); i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            guest_fail("bad random seed in the boot spec");
        seed.bytes[i] = (unsigned char)byte;
    }
    seed.info.entropy_count = (int)sizeof(seed.bytes) * 8;
    _cleanup_close_ int rnd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    if (rnd < 0 || ioctl(rnd, RNDADDENTROPY, &seed.info) < 0 || ioctl(rnd, RNDRESEEDCRNG) < 0)
        guest_fail("reseeding the RNG: %s", strerror(errno));
    explicit_bzero(&seed, sizeof(seed));

    json_t *clock = json_object_get(spec, "clock");
    struct timespec now = {.tv_sec = (time_t)json_integer_value(json_object_get(clock, "sec")),
                           .tv_nsec = (long)json_integer_value(json_object_get(clock, "nsec"))};
    if (now.tv_sec <= 0 || now.tv_nsec < 0 || now.tv_nsec >= 1000000000L ||
        clock_settime(CLOCK_REALTIME, &now) < 0)
        guest_fail("setting the clock from the host: %s", strerror(errno));

    /* A disk's blocks the kernel read before a snapshot (its partition
     * scan) are the snapshot's disk's, not this session's: dropped. */
    _cleanup_closedir_ DIR *blocks = opendir("/sys/block");
    for (struct dirent *de; blocks && (de = readdir(blocks));) {
        if (strncmp(de->d_name, "vd", 2) != 0)
            continue;
        char dev[300];
        snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
        _cleanup_close_ int bfd = open(dev, O_RDONLY | O_CLOEXEC);
        if (bfd < 0 || ioctl(bfd, BLKFLSBUF, 0) < 0)
            guest_fail("dropping the cached blocks of %s: %s", dev, strerror(errno));
    }

    unsigned char id[16];
    if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
        guest_fail("boot id: %s", strerror(errno));
    id[6] = (unsigned char)((id[6] & 0x0f) | 0x40); /* a version 4 UUID, as the kernel's */
    id[8] = (unsigned char)((id[8] & 0x3f) | 0x80);
    char text[40];
    snprintf(text, sizeof(text),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", id[0], id[1],
             id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13],
             id[14], id[15]);
    /* In /run, the session's fresh tmpfs; root's and read-only to all. */
    const char *file = "/run/cordon-boot_id";
    _cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0 || fs_write_all(fd, text, strlen(text)) < 0 ||
        mount(file, "/proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, "/proc/sys/kernel/random/boot_id", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        guest_fail("boot id: %s", strerror(errno));
}

bool vm_init_is_guest(int argc, char **argv)
{
    return argc >= 1 && strcmp(argv[0], "/init") == 0 && getpid() == 1;
}

int vm_init_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0 && errno != EBUSY)
        guest_poweroff();
    int console = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (console >= 0) {
        for (int fd = 0; fd < 3; fd++)
            dup2(console, fd);
        if (console > 2)
            close(console);
    }
    mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount_or_fail("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    load_modules();
    channel = open_port(VM_PORT_CHANNEL);
    json_t *spec = read_boot_spec();
    struct guest_command c = {
        .argv = json_strv(json_object_get(spec, "argv")),
        .env = json_strv(json_object_get(spec, "env")),
        .cwd = json_string_value(json_object_get(spec, "cwd")),
        .uid = (uid_t)json_integer_value(json_object_get(spec, "uid")),
        .gid = (gid_t)json_integer_value(json_object_get(spec, "gid")),
        .rlimits = json_object_get(spec, "rlimits"),
        .home = json_string_value(json_object_get(spec, "home")),
        .workspace = json_string_value(json_object_get(spec, "workspace")),
        .workspace_readonly = json_is_true(json_object_get(spec, "workspace_readonly")),
        .shares = json_object_get(spec, "shares"),
        .no_seccomp = json_is_true(json_object_get(spec, "test_no_seccomp")),
        .winsize = json_object_get(spec, "winsize"),
    };
    if (!c.argv[0])
        guest_fail("empty argv in the boot spec");
    /* Where the guest's part of a start goes, for the host's --debug
     * (monotonic: the clock is set in between). */
    long long t_spec = clock_now_ms();
    build_view(spec, c.uid, c.gid);
    long long t_view = clock_now_ms();
    fresh_start(spec);
    agent_view_link();
    long long t_fresh = clock_now_ms();
    json_t *docker = start_docker(spec, c.gid);
    long long t_docker = clock_now_ms();
    net_setup(json_object_get(spec, "net"));
    long long t_net = clock_now_ms();

    struct utsname u;
    uname(&u);
    json_t *booted =
        json_pack("{s:s,s:s,s:{s:I,s:I,s:I,s:I}}", "t", "booted", "kernel", u.release, "ms", "view",
                  (json_int_t)(t_view - t_spec), "fresh", (json_int_t)(t_fresh - t_view), "docker",
                  (json_int_t)(t_docker - t_fresh), "net", (json_int_t)(t_net - t_docker));
    if (booted && docker)
        json_object_set_new(booted, "docker", docker);
    if (!booted || vm_frame_write(channel, booted) < 0)
        guest_fail("reporting the boot: %s", strerror(errno));
    json_decref(booted);

    if (c.argv[1] && strcmp(c.argv[1], "init") == 0) {
        /* Skip init's own options up to "--"; --pty is the only one that
         * matters here. */
        char **cmd = c.argv + 2;
        for (; *cmd && strcmp(*cmd, "--") != 0; cmd++)
            c.pty = c.pty || strcmp(*cmd, "--pty") == 0;
        if (!*cmd || !cmd[1])
            guest_fail("init: no command given");
        c.argv = cmd + 1;
        run_relayed(&c);
    }
    /* Other modes: the agent itself, PID 1 still, the channel as fd 3,
     * with the user's identity, limits and restrictions (confine_user, as
     * the ns backend's agent has): nothing it runs needs the guest's root. */
    if (dup2(channel, CHANNEL_FD) < 0)
        guest_fail("dup2: %s", strerror(errno));
    if (c.cwd && chdir(c.cwd) < 0)
        guest_fail("chdir %s: %s", c.cwd, strerror(errno));
    apply_limits(c.rlimits);
    struct cordon_error err;
    if (confine_user(&c, &err) < 0)
        guest_fail("confining the agent (uid %u): %s", c.uid, err.message);
    execve("/init", c.argv, c.env);
    guest_fail("exec /init: %s", strerror(errno));
}
