/* The vm backend's start and stop: prepares the session's state directory
 * (sockets 0600 in a 0700 directory, the curated /etc), starts QEMU as a
 * child that dies with the supervisor (PR_SET_PDEATHSIG), accepts its three
 * virtio-serial connections, sends the guest its boot spec and waits until
 * the guest's init reports the view is built. When KVM is chosen but cannot
 * boot a stock guest (this host's paravirtual KVM), the boot is retried under
 * TCG and the verdict cached. Host context (supervisor, unprivileged or
 * root); QEMU runs with the supervisor's uid but no capability, a minimal
 * environment, no_new_privs and its own seccomp sandbox. Beside this file:
 * vm-etc.c (the curated /etc), vm-launch.c (QEMU's process and its
 * connections), vm-state.h (the state they share). */
#include "config.h"
#include "backend/vm/vm.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm-docker-plan.h"
#include "backend/vm/vm-protect.h"
#include "supervisor/gitguard.h"
#include "backend/vm/vm-net.h"
#include "backend/vm/vm-qemu.h"
#include "backend/vm/vm-snapshot.h"
#include "backend/vm/vm-etc.h"
#include "backend/vm/vm-launch.h"
#include "backend/vm/vm-state.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <sys/mman.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A TCG boot takes 2.5-4 s here; a KVM boot that has not reported by this
 * time is taken as KVM failing on this host. */
#define KVM_BOOT_TIMEOUT_MS 8000
#define TCG_BOOT_TIMEOUT_MS 60000

/* ---- the state directory ---- */

/* <state root>/<name>/vm: inside the session's state directory, which the
 * lifecycle layer owns (lock, teardown); this backend's part is removed by
 * stop(). Left over from a crashed session of the same name, it is
 * replaced: the caller holds the name's lock. */

static int state_dir_make(const char *name, char *out, size_t size, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    char session[PATH_MAX];
    if (snprintf(session, sizeof(session), "%s/%s", root, name) >= (int)sizeof(session) ||
        snprintf(out, size, "%s/vm", session) >= (int)size || strlen(out) + sizeof("/con") > 100)
        return error_set(err, ENAMETOOLONG, "vm: state directory %s/%s/vm is too long for sockets",
                         root, name);
    if (mkdir(session, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "vm: creating %s", session);
    _cleanup_close_ int sfd = open(session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return error_set(err, errno, "vm: opening %s", session);
    fs_remove_tree_at(sfd, "vm");
    if (mkdirat(sfd, "vm", 0700) < 0)
        return error_set(err, errno, "vm: creating %s", out);
    return 0;
}
static json_t *boot_spec(const struct launch *l, char *const *agent_argv,
                         const struct vm_share *shares, size_t nshares)
{
    json_t *argv = json_array(), *env = json_array(), *sh = json_array(), *prot = json_array();
    for (size_t i = 0; agent_argv[i]; i++)
        json_array_append_new(argv, json_string(agent_argv[i]));
    for (size_t i = 0; l->env && l->env[i]; i++)
        json_array_append_new(env, json_string(l->env[i]));
    for (size_t i = 0; i < nshares; i++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "s%zu", i); /* the mount_tag given to QEMU */
        json_array_append_new(sh, json_pack("{s:s,s:s,s:b}", "tag", tag, "path", shares[i].guest,
                                            "ro", shares[i].readonly));
    }
    /* The view plan's read-only paths (vm-protect.c); without them no spec
     * is made (json_pack refuses a NULL "protected"). */
    struct cordon_error verr;
    struct view_plan view _cleanup_view_plan_ = {0};
    if (view_plan_build(&l->spec, &view, &verr) < 0 || vm_view_guest_protected(&view, prot) < 0) {
        json_decref(prot);
        prot = NULL;
    }
    const struct sandbox_limits *lim = &l->limits;
    /* The in-guest restrictions (guest/vm-command.c guest_confine_user): Landlock's
     * writable places, as the ns backend's, and a debug build's test hook
     * that leaves the seccomp filter out so that `cordon verify` can be
     * shown to FAIL (tests/security/vm-escapes.sh). */
    bool no_seccomp = CORDON_TEST_HOOKS && getenv("CORDON_TEST_VM_NO_SECCOMP");
    json_t *spec =
        json_pack("{s:s,s:o,s:o,s:s,s:s,s:I,s:I,s:o,s:o,s:b,s:{s:I,s:I,s:I,s:I}}", "t", "boot",
                  "argv", argv, "env", env, "cwd", l->spec.cwd, "home", l->spec.home, "uid",
                  (json_int_t)getuid(), "gid", (json_int_t)getgid(), "shares", sh, "protected",
                  prot, "workspace_readonly", l->spec.workspace_readonly, "rlimits", "nofile",
                  (json_int_t)lim->open_files, "fsize_mib", (json_int_t)lim->file_size_mib, "cpu",
                  (json_int_t)lim->cpu_seconds, "nproc", (json_int_t)lim->pids);
    if (spec) {
        json_object_set_new(spec, "workspace", json_string(l->spec.workspace_view));
        json_object_set_new(spec, "tmpfs",
                            json_pack("{s:I,s:I}", "mib", (json_int_t)lim->tmpfs_mib, "inodes",
                                      (json_int_t)lim->tmpfs_inodes));
        if (no_seccomp)
            json_object_set_new(spec, "test_no_seccomp", json_true());
        /* The guest's pty starts at the host terminal's size (vm-pty.c). */
        json_t *winsize = vm_frame_winsize_pack(l->pty_rows, l->pty_cols);
        if (winsize)
            json_object_set_new(spec, "winsize", winsize);
    }
    return spec;
}

/* What the QEMU command line is built from (vm-qemu.c). */
static struct vm_qemu_input qemu_input(const struct launch *l, const struct vm_kernel *k,
                                       const char *initrd, const struct vm_state *st,
                                       const struct vm_share *shares, size_t nshares)
{
    return (struct vm_qemu_input){
        .accel = st->accel,
        .dir = st->dir,
        .vmlinuz = k->vmlinuz,
        .initrd = initrd,
        .limits = &l->limits,
        .tsc_khz = vm_qemu_host_tsc_khz(),
        .append_extra = getenv("CORDON_VM_APPEND"),
        .net = &st->net,
        .shares = shares,
        .nshares = nshares,
        .docker_disk = st->docker.start ? st->docker.disk : NULL,
    };
}

/* What makes a restored guest as fresh as a booted one (guest/vm-fresh.c
 * guest_fresh_start): seed material for its RNG and the host's clock, in
 * every boot spec. */
static int spec_add_fresh(json_t *spec, struct cordon_error *err)
{
    unsigned char seed[64];
    char hex[sizeof(seed) * 2 + 1];
    if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
        return error_set(err, errno, "vm: random seed for the guest");
    for (size_t i = 0; i < sizeof(seed); i++)
        snprintf(hex + 2 * i, 3, "%02x", seed[i]);
    explicit_bzero(seed, sizeof(seed));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    json_object_set_new(spec, "seed", json_string(hex));
    explicit_bzero(hex, sizeof(hex));
    json_object_set_new(
        spec, "clock",
        json_pack("{s:I,s:I}", "sec", (json_int_t)now.tv_sec, "nsec", (json_int_t)now.tv_nsec));
    return 0;
}
/* ---- one boot attempt ---- */

/* The listeners QEMU's chardevs (and, for a snapshot, its monitor) connect
 * to, replacing an earlier attempt's. */
static int boot_listen(struct vm_state *st, enum boot_mode mode, struct cordon_error *err)
{
    if (mode == BOOT_SAVE || mode == BOOT_RESTORE) {
        char qmp[PATH_MAX];
        snprintf(qmp, sizeof(qmp), "%s/qmp", st->dir);
        unlink(qmp); /* an attempt before this one's, failed before QEMU connected */
        st->qmp_listen = vm_launch_listen(st->dir, "qmp", err);
        if (st->qmp_listen < 0)
            return -1;
    }
    for (int i = 0; i < SOCK_COUNT; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", st->dir, vm_sock_names[i]);
        unlink(path);
        st->listen[i] = vm_launch_listen(st->dir, vm_sock_names[i], err);
        if (st->listen[i] < 0)
            return -1;
    }
    return 0;
}

/* The network's host side prepared, QEMU's command line built and QEMU
 * started (sb->pid, sb->pidfd). */
static int boot_spawn(const struct launch *l, const struct vm_kernel *k, const char *initrd,
                      struct vm_state *st, const struct vm_share *shares, size_t nshares,
                      enum boot_mode mode, int snap_fd, struct sandbox *sb,
                      struct cordon_error *err)
{
    vm_net_init(&st->net, &l->net);
    if (vm_net_prepare(&st->net, st->dir, err) < 0) {
        vm_launch_close(st);
        vm_net_stop(&st->net);
        return -1;
    }
    struct vm_qemu_argv b = {0};
    struct vm_qemu_input in = qemu_input(l, k, initrd, st, shares, nshares);
    in.qmp = mode == BOOT_SAVE || mode == BOOT_RESTORE;
    in.incoming = mode == BOOT_RESTORE;
    /* A restore's vCPUs wait until the snapshot's checksum, computed
     * while QEMU loads it, has passed (vm_snapshot_resume). */
    in.paused = mode == BOOT_RESTORE;
    in.ram = mode == BOOT_SAVE      ? VM_RAM_FILE_SHARED
             : mode == BOOT_RESTORE ? VM_RAM_FILE_PRIVATE
                                    : VM_RAM_ANON;
    if (vm_qemu_argv_build(&in, &b) < 0) {
        vm_qemu_argv_free(&b);
        return error_set(err, E2BIG, "vm: QEMU command line");
    }
    if (log_debug_enabled) {
        char line[4096] = "";
        size_t pos = 0;
        for (size_t i = 0; i < b.n && pos < sizeof(line) - 2; i++)
            pos += (size_t)snprintf(line + pos, sizeof(line) - pos, "%s ", b.args[i]);
        log_debug("vm: %s", line);
    }
    int pidfd = -1;
    pid_t pid =
        vm_launch_spawn(b.args, st->dir, st->net.passt_qemu_fd, mode == BOOT_RESTORE ? snap_fd : -1,
                        mode == BOOT_PLAIN ? -1 : st->snap_ram_fd, st->protect, &pidfd, err);
    vm_qemu_argv_free(&b);
    if (pid < 0)
        return -1;
    sb->pid = pid;
    sb->pidfd = pidfd;
    return 0;
}

/* How long the guest has to report it booted. */
static long long boot_timeout_ms(const struct vm_state *st)
{
    long long timeout = strcmp(st->accel, "kvm") == 0 ? KVM_BOOT_TIMEOUT_MS : TCG_BOOT_TIMEOUT_MS;
    /* docker.mode = "require": the guest answers once its daemon is verified
     * (10 s under TCG on an idle host, a first boot formats its disk). */
    if (st->docker.start && st->docker.mode == CFG_DOCKER_REQUIRE)
        timeout += strcmp(st->accel, "kvm") == 0 ? 30000 : 120000;
    return timeout;
}

/* While the guest's kernel boots (or QEMU loads the snapshot): /etc filled,
 * the snapshot's checksum, QEMU's connections; then a restore resumed or a
 * save's guest parked and saved. */
static int boot_connect(const struct launch *l, struct vm_state *st, enum boot_mode mode,
                        int snap_fd, int pidfd, long long deadline, long long t_spawned,
                        struct cordon_error *err)
{
    if (!st->etc_filled) {
        if (vm_etc_fill(st->etc_path, &l->cfg.etc.extra, net_ssh_proxied(&l->net), err) < 0)
            return -1;
        st->etc_filled = true;
    }
    long long t_etc = clock_now_ms();
    /* A restore: the checksums while QEMU starts, then QEMU reads the
     * device state (its memory is mapped, not read), then the vCPUs run. */
    if (mode == BOOT_RESTORE &&
        vm_snapshot_verify(snap_fd, st->snap_ram_fd, st->snap_path, err) < 0)
        return -1;
    long long t_sum = clock_now_ms();
    _cleanup_close_ int qmp = -1;
    if (mode == BOOT_RESTORE && ((qmp = vm_launch_qmp_accept(st, pidfd, deadline, err)) < 0 ||
                                 vm_snapshot_incoming(qmp, deadline, err) < 0))
        return -1;
    long long t_incoming = clock_now_ms();
    if (vm_launch_accept(st, pidfd, deadline, err) < 0 ||
        vm_net_accept(&st->net, deadline, err) < 0)
        return -1;
    if (mode == BOOT_RESTORE) {
        if (vm_snapshot_resume(qmp, deadline, err) < 0)
            return -1;
        log_debug("vm: snapshot checksum passed in %lld ms while QEMU started; its device state "
                  "loading %lld ms after QEMU's start; vCPUs resumed",
                  t_sum - t_etc, t_incoming - t_spawned);
    }
    log_debug("vm: /etc copied in %lld ms; QEMU's ports connected %lld ms after its start",
              t_etc - t_spawned, clock_now_ms() - t_spawned);
    if (mode == BOOT_SAVE && vm_launch_park_and_save(st, pidfd, deadline, err) < 0)
        return -1;
    return 0;
}

/* The boot spec (boot_spec, and what makes the guest fresh, its network
 * and its Docker) sent on the channel. */
static int boot_send_spec(const struct launch *l, char *const *agent_argv, struct vm_state *st,
                          const struct vm_share *shares, size_t nshares, struct cordon_error *err)
{
    json_t *spec = boot_spec(l, agent_argv, shares, nshares);
    if (spec && spec_add_fresh(spec, err) < 0) {
        json_decref(spec);
        return -1;
    }
    json_t *net = vm_net_spec(&st->net);
    if (spec && net)
        json_object_set_new(spec, "net", net);
    if (spec)
        json_object_set_new(spec, "docker", vm_docker_plan_spec(&st->docker));
    int rc = spec ? vm_frame_write(st->fds[SOCK_CHANNEL], spec) : -1;
    int e = errno;
    json_decref(spec);
    if (rc < 0)
        return error_set(err, e, "vm: sending the boot spec");
    return 0;
}

/* The guest's answer to the boot spec, or NULL with err filled. */
static json_t *boot_await(const struct vm_state *st, long long deadline, long long timeout,
                          struct cordon_error *err)
{
    long long left = deadline - clock_now_ms();
    json_t *reply = vm_frame_read(st->fds[SOCK_CHANNEL], left > 0 ? (int)left : 0);
    if (!reply) {
        int e = errno;
        if (e == ETIMEDOUT)
            error_set(err, 0, "vm: the guest did not finish booting within %lld s (%s)",
                      timeout / 1000, st->accel);
        else
            error_set(err, e, "vm: the guest's channel closed during boot");
    }
    return reply;
}

/* A booted guest: where its start went (for --debug) and the sandbox's
 * description. */
static void boot_report(const struct launch *l, const struct vm_state *st, enum boot_mode mode,
                        json_t *reply, long long t_spawned, long long t_spec, struct sandbox *sb)
{
    json_t *gms = json_object_get(reply, "ms");
    long long g_view = json_integer_value(json_object_get(gms, "view")),
              g_fresh = json_integer_value(json_object_get(gms, "fresh")),
              g_docker = json_integer_value(json_object_get(gms, "docker")),
              g_net = json_integer_value(json_object_get(gms, "net"));
    log_debug("vm: boot spec sent %lld ms after QEMU's start, the guest's view built %lld ms "
              "later (in the guest: shares and view %lld ms, fresh start %lld ms, docker %lld "
              "ms, network %lld ms; the rest is QEMU%s and the channel)",
              t_spec - t_spawned, clock_now_ms() - t_spec, g_view, g_fresh, g_docker, g_net,
              mode == BOOT_RESTORE ? " loading the snapshot" : " and the kernel's boot");
    snprintf(sb->description, sizeof(sb->description), "vm (%s, %ld vCPU, %ld MiB, kernel %s%s)",
             st->accel, vm_qemu_cpus(&l->limits, st->accel), vm_qemu_memory_mib(&l->limits),
             json_string_value(json_object_get(reply, "kernel"))
                 ? json_string_value(json_object_get(reply, "kernel"))
                 : "?",
             mode == BOOT_RESTORE ? ", restored from a snapshot" : "");
    json_t *docker = json_object_get(reply, "docker");
    if (docker)
        log_debug("vm: docker: %s (%s)", json_string_value(json_object_get(docker, "state")),
                  json_string_value(json_object_get(docker, "detail")));
}

/* A failed attempt: QEMU and its connections gone, and what QEMU and the
 * guest's console said last added to err, for the user. */
static void boot_cleanup(struct vm_state *st, struct sandbox *sb, struct cordon_error *err)
{
    vm_launch_kill(sb);
    vm_launch_close(st);
    vm_net_stop(&st->net);
    if (st->qmp_listen >= 0) {
        close(st->qmp_listen);
        st->qmp_listen = -1;
    }
    static const char *const logs[][2] = {{"qemu.log", "QEMU"}, {"console.log", "guest console"}};
    for (size_t i = 0; i < ARRAY_SIZE(logs); i++) {
        char path[PATH_MAX], tail[300];
        snprintf(path, sizeof(path), "%s/%s", st->dir, logs[i][0]);
        vm_launch_log_tail(path, tail, sizeof(tail));
        if (tail[0]) {
            size_t len = strlen(err->message);
            snprintf(err->message + len, sizeof(err->message) - len, " (%s: %s)", logs[i][1], tail);
        }
    }
}

/* One boot attempt with st->accel. On failure QEMU is gone again. */
static int boot_once(const struct launch *l, char *const *agent_argv, const struct vm_kernel *k,
                     const char *initrd, struct vm_state *st, const struct vm_share *shares,
                     size_t nshares, enum boot_mode mode, int snap_fd, struct sandbox *sb,
                     struct cordon_error *err)
{
    st->snap_broke = false;
    if (boot_listen(st, mode, err) < 0 ||
        boot_spawn(l, k, initrd, st, shares, nshares, mode, snap_fd, sb, err) < 0)
        return -1;
    long long timeout = boot_timeout_ms(st);
    long long deadline = clock_now_ms() + timeout;
    long long t_spawned = clock_now_ms();
    if (boot_connect(l, st, mode, snap_fd, sb->pidfd, deadline, t_spawned, err) < 0) {
        boot_cleanup(st, sb, err);
        return -1;
    }
    if (boot_send_spec(l, agent_argv, st, shares, nshares, err) < 0) {
        boot_cleanup(st, sb, err);
        return -1;
    }
    long long t_spec = clock_now_ms();
    json_t *reply = boot_await(st, deadline, timeout, err);
    const char *t = json_string_value(json_object_get(reply, "t"));
    if (t && strcmp(t, "booted") == 0) {
        boot_report(l, st, mode, reply, t_spawned, t_spec, sb);
        json_decref(reply);
        return 0;
    }
    if (reply) {
        const char *msg = json_string_value(json_object_get(reply, "message"));
        error_set(err, 0, "vm: guest setup failed: %s", msg ? msg : "(no message)");
    }
    json_decref(reply);
    boot_cleanup(st, sb, err);
    return -1;
}

static int qemu_locate(char *out, size_t size, struct cordon_error *err)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    _cleanup_free_ char *copy = strdup(path);
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        char bin[PATH_MAX];
        if (snprintf(bin, sizeof(bin), "%s/" QEMU_BINARY, d) < (int)sizeof(bin) &&
            access(bin, X_OK) == 0) {
            snprintf(out, size, "%s", bin);
            return 0;
        }
    }
    error_set(err, ENOENT,
              "vm: " QEMU_BINARY " not found in PATH (Debian: apt-get install qemu-system-x86)");
    return error_hint_doctor(err);
}

static int qemu_find(struct cordon_error *err)
{
    char bin[PATH_MAX];
    return qemu_locate(bin, sizeof(bin), err);
}

/* The boots of one accelerator: from the snapshot when there is a valid
 * one; else a boot that saves one (the first session of a configuration
 * pays the save, ~0.1-0.3 s here, once); a restore that fails discards the
 * snapshot and boots normally, and a saving boot that failed is followed
 * by a normal one. Both fallbacks start the same guest with the same
 * configuration. */
static int boot_accel(const struct launch *l, char *const *agent_argv, const struct vm_kernel *k,
                      const char *initrd, struct vm_state *st, const struct vm_share *shares,
                      size_t n, struct sandbox *sb, struct cordon_error *err)
{
    if (!st->snap_usable)
        return boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_PLAIN, -1, sb, err);
    const struct vm_qemu_input in = qemu_input(l, k, initrd, st, shares, n);
    st->snap_key = vm_snapshot_key(&in, st->qemu);
    struct cordon_error serr;
    if (vm_snapshot_path(k->cache_dir, st->snap_key, st->snap_path, sizeof(st->snap_path), &serr) <
        0) {
        log_debug("%s: no snapshot", serr.message);
        return boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_PLAIN, -1, sb, err);
    }
    /* Its header here; its checksums while QEMU starts (boot_once). */
    int fd = vm_snapshot_open_unchecked(st->snap_path, st->snap_key, &st->snap_ram_fd, &serr);
    if (fd >= 0) {
        long long t0 = clock_now_ms();
        int rc = boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_RESTORE, fd, sb, err);
        close(st->snap_ram_fd);
        st->snap_ram_fd = -1;
        if (rc == 0) {
            close(fd);
            log_debug("vm: restored from %s in %lld ms", st->snap_path, clock_now_ms() - t0);
            return 0;
        }
        log_debug("vm: restoring %s failed (%s); booting normally", st->snap_path, err->message);
        vm_snapshot_discard_fd(fd, st->snap_path);
        close(fd);
    } else {
        log_debug("%s; booting normally and saving one", serr.message);
    }
    /* The saving guest's memory: a memfd QEMU maps shared, copied into
     * the snapshot's file while the guest is stopped for its save. */
    st->snap_ram_fd = memfd_create("cordon-vm-memory", MFD_CLOEXEC);
    if (st->snap_ram_fd < 0) {
        log_debug("vm: memfd_create: %s; booting without a snapshot", strerror(errno));
        return boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_PLAIN, -1, sb, err);
    }
    int rc = boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_SAVE, -1, sb, err);
    close(st->snap_ram_fd); /* QEMU keeps its own mapping */
    st->snap_ram_fd = -1;
    /* A saving boot's QEMU has a command line of its own (the memory
     * backend, the monitor): whatever failed, the plain boot is tried
     * before the accelerator is given up. */
    if (rc < 0) {
        log_debug("vm: the boot that saves a snapshot failed (%s%s); booting without",
                  st->snap_broke ? "in its save: " : "", err->message);
        rc = boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_PLAIN, -1, sb, err);
    }
    return rc;
}

int vm_sandbox_start(const struct launch *l, char *const *agent_argv, struct sandbox *sb,
                     struct cordon_error *err)
{
    *sb = (struct sandbox){.ops = &vm_backend_ops, .pid = -1, .pidfd = -1, .channel_fd = -1};
    char qemu[PATH_MAX];
    if (qemu_locate(qemu, sizeof(qemu), err) < 0)
        return -1;
    struct vm_kernel k;
    if (vm_kernel_find(&k, true, err) < 0)
        return -1;
    char initrd[PATH_MAX];
    if (vm_initramfs_get(&k, l->agent_path, initrd, sizeof(initrd), err) < 0)
        return -1;
    struct vm_state *st = calloc(1, sizeof(*st));
    if (!st)
        return error_set(err, ENOMEM, "vm");
    for (int i = 0; i < SOCK_COUNT; i++)
        st->fds[i] = st->listen[i] = -1;
    st->qmp_listen = -1;
    st->snap_ram_fd = -1;
    snprintf(st->qemu, sizeof(st->qemu), "%s", qemu);
    vm_net_init(&st->net, &l->net);
    sb->priv = st;
    if (state_dir_make(l->name, st->dir, sizeof(st->dir), err) < 0) {
        st->dir[0] = '\0';
        return -1;
    }
    if (vm_etc_cache_find(l, st, err) < 0)
        return -1;
    struct view_plan view _cleanup_view_plan_ = {0};
    if (vm_docker_plan_make(l, &st->docker, err) < 0 || view_plan_build(&l->spec, &view, err) < 0 ||
        vm_protect_plan(&view, st->docker.start, &st->protect, err) < 0)
        return -1;
    log_debug("vm: docker: %s", st->docker.reason);
    /* No snapshot of a guest with a network device: open mode's
     * virtio-net talks to a passt started per session (its link state and
     * the guest's view of it would be the saved session's). */
    st->snap_usable = vm_snapshot_enabled() && l->net.mode != NET_MODE_OPEN;
    if (!st->snap_usable)
        log_debug("vm: no snapshot for this session (%s)",
                  !vm_snapshot_enabled() ? "CORDON_VM_SNAPSHOT=0" : "network mode open");

    /* /usr, /etc, the workspace, two git directories, and [[mounts]]: each
     * a 9p device on its own virtio-mmio slot, of which microvm has few. */
    struct vm_share shares[VM_MAX_SHARES];
    size_t n = 0;
    shares[n++] = (struct vm_share){"/usr", "/usr", true};
    shares[n++] = (struct vm_share){st->etc_path, "/etc", true};
    if (vm_view_shares(&view, shares, &n, ARRAY_SIZE(shares), err) < 0)
        return -1;

    char accel_why[PATH_MAX * 2 + 512];
    snprintf(st->accel, sizeof(st->accel), "%s", vm_accel_decide(&k, accel_why, sizeof(accel_why)));
    /* A cached KVM failure is said, not applied silently: it is the one
     * case where KVM is there and cordon does not use it. On a terminal
     * (the user's), and always in --debug, `cordon doctor`, the sandbox's
     * description (`cordon mcp`'s status); a command's redirected stderr
     * stays its own. */
    bool cached_failure =
        strcmp(st->accel, "tcg") == 0 && strncmp(accel_why, "KVM failed", 10) == 0;
    if (cached_failure && isatty(STDERR_FILENO))
        log_warn("vm: running under TCG (emulated, slower): %s; run `cordon doctor`", accel_why);
    else
        log_debug("vm: using %s: %s", st->accel, accel_why);
    int rc = boot_accel(l, agent_argv, &k, initrd, st, shares, n, sb, err);
    if (rc < 0 && strcmp(st->accel, "kvm") == 0) {
        /* Whatever failed under KVM (this host's paravirtual KVM makes QEMU
         * abort at its first vCPU register write) is retried under TCG; KVM
         * is marked broken only when TCG then boots the same guest. */
        struct cordon_error kvm_err = *err;
        log_warn("vm: KVM did not boot the guest (%s); trying TCG (if TCG boots, later sessions "
                 "use TCG until the host kernel changes; run `cordon doctor` to see it and how to "
                 "retry KVM)",
                 kvm_err.message);
        snprintf(st->accel, sizeof(st->accel), "tcg");
        rc = boot_accel(l, agent_argv, &k, initrd, st, shares, n, sb, err);
        if (rc == 0)
            vm_accel_mark_kvm_broken(&k, kvm_err.message);
    }
    if (rc < 0 || vm_net_start(&st->net, st->dir, err) < 0)
        return -1;
    vm_etc_cache_store(st);
    if (cached_failure) {
        size_t len = strlen(sb->description);
        snprintf(sb->description + len, sizeof(sb->description) - len,
                 " [KVM failed here before: cordon doctor]");
    }
    sb->channel_fd = st->fds[SOCK_CHANNEL];
    log_debug("vm: %s booted (%s)", l->name, sb->description);
    return 0;
}

static void vm_stop(struct sandbox *sb)
{
    struct vm_state *st = sb->priv;
    vm_launch_kill(sb);
    if (st) {
        vm_launch_close(st);
        vm_net_stop(&st->net);
        if (st->dir[0] && !getenv("CORDON_VM_KEEP_STATE")) {
            char parent[PATH_MAX];
            snprintf(parent, sizeof(parent), "%s", st->dir);
            char *slash = strrchr(parent, '/');
            *slash = '\0';
            _cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0)
                fs_remove_tree_at(pfd, slash + 1);
        }
        vm_protect_free(st->protect);
        free(st);
    }
    sb->priv = NULL;
    sb->channel_fd = -1;
}

static int vm_probe(struct cordon_error *err)
{
    struct vm_kernel k;
    if (qemu_find(err) < 0 || vm_kernel_find(&k, false, err) < 0)
        return -1;
    return 0;
}

int vm_qemu_find(struct cordon_error *err)
{
    return qemu_find(err);
}

int vm_sandbox_console_fd(const struct sandbox *sb)
{
    const struct vm_state *st = sb->priv;
    return st ? st->fds[SOCK_CONSOLE] : -1;
}

int vm_sandbox_stderr_fd(const struct sandbox *sb)
{
    const struct vm_state *st = sb->priv;
    return st ? st->fds[SOCK_STDERR] : -1;
}

const char *vm_sandbox_accel(const struct sandbox *sb)
{
    const struct vm_state *st = sb->priv;
    return st ? st->accel : "?";
}

static int vm_serve_start(const struct launch *l, struct sandbox *sb, struct cordon_error *err)
{
    static char *const agent_argv[] = {"cordon-agent", "serve", NULL};
    return vm_sandbox_start(l, agent_argv, sb, err);
}

/* The watchdog's part: QEMU is gone; its sockets, the /etc copy and the
 * logs in the state directory go too (teardown "stop" would keep them). */
static void vm_orphan_teardown(const struct sandbox *sb, int state_dir_fd)
{
    fs_remove_tree_at(state_dir_fd, "vm");
}

const struct backend_ops vm_backend_ops = {
    .name = "vm",
    .caps = {.flags = BACKEND_CAP_OWN_KERNEL | BACKEND_CAP_PUBLISH_PORTS | BACKEND_CAP_OWN_DOCKER |
                      BACKEND_CAP_TERM_SIZE_AT_START | BACKEND_CAP_TLS_INTERCEPT |
                      BACKEND_CAP_TLS_CA_IN_SPEC | BACKEND_CAP_DENY_PROXY | BACKEND_CAP_REVIEW |
                      BACKEND_CAP_HOST_SERVICES,
             .host_side = "QEMU"},
    .probe = vm_probe,
    .start = vm_serve_start,
    .stop = vm_stop,
    .run = vm_run,
    .orphan_teardown = vm_orphan_teardown,
};
