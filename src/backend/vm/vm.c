/* The vm backend's start and stop: prepares the session's state directory
 * (sockets 0600 in a 0700 directory, the curated /etc), starts QEMU as a
 * child that dies with the supervisor (PR_SET_PDEATHSIG), accepts its three
 * virtio-serial connections, sends the guest its boot spec and waits until
 * the guest's init reports the view is built. When KVM is chosen but cannot
 * boot a stock guest (this host's paravirtual KVM), the boot is retried under
 * TCG and the verdict cached. Host context (supervisor, unprivileged or
 * root); QEMU runs with the supervisor's uid but no capability, a minimal
 * environment, no_new_privs and its own seccomp sandbox. */
#include "backend/etc-allowlist.h"
#include "config.h"
#include "backend/vm/vm.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm-docker-plan.h"
#include "backend/vm/vm-protect.h"
#include "supervisor/gitguard.h"
#include "backend/vm/vm-net.h"
#include "backend/vm/vm-log.h"
#include "backend/vm/vm-qemu.h"
#include "backend/vm/vm-snapshot.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "confine/privs.h"
#include "util/fs.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
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

struct vm_state {
    char dir[256];          /* the session's state directory (socket paths must fit 108 bytes) */
    char accel[8];          /* "kvm" or "tcg" */
    int fds[SOCK_COUNT];    /* connected streams to QEMU's chardevs */
    int listen[SOCK_COUNT]; /* listening sockets, closed once accepted */
    struct vm_docker_plan docker;
    struct vm_bind *protect; /* QEMU's binds (vm-protect.c), or NULL */
    bool etc_filled;         /* etc_fill() done (once, even across a KVM retry) */
    /* The /etc the guest gets: a prepared copy of this content in the
     * state root's .vm-etc (etc_cache_find), or the session's own etc,
     * filled while QEMU starts and moved there once the guest booted. */
    char etc_path[PATH_MAX];
    char etc_cache[PATH_MAX]; /* <state root>/.vm-etc, or "" (no cache) */
    char etc_name[20];        /* the content's key, the entry's name */
    bool etc_store;           /* this session's copy goes into the cache */
    struct vm_net net;        /* network mode, port relay, passt */
    char qemu[PATH_MAX];      /* the QEMU binary found in PATH */
    /* Snapshot restore (vm-snapshot.c): where this configuration's saved
     * guest is, its key, and how this session's guest started. */
    char snap_path[PATH_MAX];
    uint64_t snap_key;
    bool snap_usable; /* a configuration a snapshot can be taken of */
    bool snap_broke;  /* the last boot failed in its snapshot save */
    int qmp_listen;   /* QMP's listener while saving, else -1 */
};

/* How one boot attempt starts the guest. */
enum boot_mode {
    BOOT_PLAIN,   /* a normal boot */
    BOOT_SAVE,    /* a normal boot that saves the parked guest first */
    BOOT_RESTORE, /* QEMU restores the saved guest (-incoming) */
};

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

/* ---- the curated /etc, copied (never shared) ---- */

/* The guest's root could read anything QEMU exports, so only a copy of the
 * allowed entries (etc-allowlist.c, the same list as the ns view) is shared,
 * never the host's /etc itself. */

#define ETC_COPY_MAX_BYTES (16 << 20)

static int copy_entry(int srcdir, int dstdir, const char *name, size_t *budget, int depth)
{
    struct stat st;
    if (depth > 8 || fstatat(srcdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(srcdir, name, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (symlinkat(target, dstdir, name) < 0)
                return -1;
        }
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        if (mkdirat(dstdir, name, 0755) < 0)
            return -1;
        int s = openat(srcdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s < 0)
            return 0; /* unreadable: stays empty */
        _cleanup_close_ int d = openat(dstdir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = fdopendir(s);
        if (!dir) {
            close(s);
            return -1;
        }
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(dir))) {
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                rc = copy_entry(dirfd(dir), d, de->d_name, budget, depth + 1);
        }
        closedir(dir);
        return rc;
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > *budget)
        return 0;
    _cleanup_close_ int in = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return 0; /* unreadable to us: not in the copy either */
    _cleanup_close_ int out =
        openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0755);
    if (out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n)
            return -1;
        *budget -= (size_t)n < *budget ? (size_t)n : *budget;
    }
    return 0;
}

/* The share's directory exists before QEMU starts (QEMU opens it then); its
 * entries are copied by etc_fill() while the guest kernel boots: with a
 * thousand symlinks in /etc/alternatives the copy costs 0.3-0.7 s here,
 * which the boot then hides (the guest mounts /etc only after the boot
 * spec, which is sent after the copy). */
static int etc_dir_make(const char *state, struct cordon_error *err)
{
    char dst[PATH_MAX];
    snprintf(dst, sizeof(dst), "%s/etc", state);
    if (mkdir(dst, 0755) < 0)
        return error_set(err, errno, "vm: creating %s", dst);
    /* An empty /etc/docker, made before the guest can look: where the guest
     * mounts its daemon's own (the host's is never copied). */
    snprintf(dst, sizeof(dst), "%s/etc/docker", state);
    if (mkdir(dst, 0755) < 0)
        return error_set(err, errno, "vm: creating %s", dst);
    return 0;
}

/* One etc.extra entry (etc-cache.c collect_extra() for the ns view): its
 * directories walked without following a symlink and made in the copy,
 * then the entry copied as the listed ones are. Missing: left out. */
static int etc_fill_extra(int etcfd, int dstfd, const char *rel, size_t *budget,
                          struct cordon_error *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path) || rel[0] == '/' ||
        strstr(rel, ".."))
        return error_set(err, EINVAL, "vm: etc.extra: %s is not a path below /etc", rel);
    _cleanup_close_ int src = fcntl(etcfd, F_DUPFD_CLOEXEC, 3);
    _cleanup_close_ int dst = fcntl(dstfd, F_DUPFD_CLOEXEC, 3);
    if (src < 0 || dst < 0)
        return error_set(err, errno, "vm: etc.extra: %s", rel);
    char *name = path;
    for (char *slash; (slash = strchr(name, '/'));) {
        *slash = '\0';
        int next = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            struct stat st;
            if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                return error_set(err, ELOOP,
                                 "vm: etc.extra: %s: /etc/%.*s is a symlink; name the place it "
                                 "points to instead",
                                 rel, (int)(slash - path), rel);
            return 0;
        }
        close(src);
        src = next;
        if (mkdirat(dst, name, 0755) < 0 && errno != EEXIST)
            return error_set(err, errno, "vm: etc.extra: %s", rel);
        int dnext = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dnext < 0)
            return error_set(err, errno, "vm: etc.extra: %s", rel);
        close(dst);
        dst = dnext;
        *slash = '/';
        name = slash + 1;
    }
    struct stat st;
    if (fstatat(dst, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return 0; /* already in the copy (a listed entry, or named twice) */
    if (copy_entry(src, dst, name, budget, 0) < 0)
        return error_set(err, errno, "vm: copying /etc/%s", rel);
    return 0;
}

static int etc_fill(const char *dst, const struct cfg_strings *extra, bool ssh_proxied,
                    struct cordon_error *err)
{
    _cleanup_close_ int d = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_closedir_ DIR *etc = opendir("/etc");
    if (d < 0 || !etc)
        return error_set(err, errno, "vm: copying /etc");
    size_t budget = ETC_COPY_MAX_BYTES;
    struct dirent *de;
    while ((de = readdir(etc))) {
        if (de->d_name[0] == '.' || !etc_entry_allowed(de->d_name))
            continue;
        if (copy_entry(dirfd(etc), d, de->d_name, &budget, 0) < 0)
            return error_set(err, errno, "vm: copying /etc/%s", de->d_name);
    }
    /* TLS roots without /etc/ssl/private. */
    _cleanup_close_ int ssl = open("/etc/ssl", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ssl >= 0 && mkdirat(d, "ssl", 0755) == 0) {
        _cleanup_close_ int dssl = openat(d, "ssl", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (copy_entry(ssl, dssl, "certs", &budget, 0) < 0 ||
            copy_entry(ssl, dssl, "openssl.cnf", &budget, 0) < 0)
            return error_set(err, errno, "vm: copying /etc/ssl");
    }
    for (size_t i = 0; i < extra->count; i++)
        if (etc_fill_extra(dirfd(etc), d, extra->items[i], &budget, err) < 0)
            return -1;
    /* ssh: the servers' public keys and, where ssh goes through the proxy,
     * cordon's ssh_config (etc-allowlist.h); etc.extra's own copies win. */
    _cleanup_close_ int ssh = open("/etc/ssh", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ssh >= 0 || ssh_proxied) {
        if (mkdirat(d, "ssh", 0755) < 0 && errno != EEXIST)
            return error_set(err, errno, "vm: copying /etc/ssh");
        _cleanup_close_ int dssh =
            openat(d, "ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (dssh < 0 ||
            (ssh >= 0 && fstatat(dssh, "ssh_known_hosts", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
             copy_entry(ssh, dssh, "ssh_known_hosts", &budget, 0) < 0) ||
            (ssh_proxied && etc_write_ssh_config(d) < 0))
            return error_set(err, errno, "vm: copying /etc/ssh");
    }
    return 0;
}

/* ---- the curated /etc, prepared once per content ---- */

/* etc_fill() costs 20-600 ms (a thousand symlinks in /etc/alternatives, on
 * a loaded disk), which a cold boot hides behind the kernel's boot but a
 * restored guest waits for. So the copy is made once per content, in
 * <state root>/.vm-etc/<key>, and shared read-only (readonly=on, as the
 * session's copy was) by every later session. The key is the identity
 * (inode, size, mtime, ctime, mode, owner) of every host entry etc_fill()
 * reads, walked the same way, plus the format, the etc.extra list and
 * cordon's ssh_config when it is added: any change of the host's /etc or
 * of the configuration gives a new key and a fresh copy. An entry is
 * complete when it is in place (only a copy whose fill finished and whose
 * guest booted is renamed there) and is never modified after; entries
 * unused for ETC_VM_CACHE_KEEP_DAYS are removed. */
#define ETC_VM_CACHE_FORMAT    1
#define ETC_VM_CACHE_KEEP_DAYS 7

static void etc_mix(uint64_t *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        *h ^= p[i];
        *h *= 0x100000001b3ull;
    }
}

static void etc_mix_stat(uint64_t *h, const char *name, const struct stat *st)
{
    uint64_t f[] = {(uint64_t)st->st_dev,         (uint64_t)st->st_ino,
                    (uint64_t)st->st_mode,        (uint64_t)st->st_size,
                    (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
                    (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
                    (uint64_t)st->st_uid,         (uint64_t)st->st_gid};
    etc_mix(h, name, strlen(name) + 1);
    etc_mix(h, f, sizeof(f));
}

/* What copy_entry() reads, by identity. */
static void key_entry(int srcdir, const char *name, uint64_t *h, int depth)
{
    struct stat st;
    if (depth > 8 || fstatat(srcdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        etc_mix(h, name, strlen(name) + 1);
        return;
    }
    etc_mix_stat(h, name, &st);
    if (!S_ISDIR(st.st_mode))
        return;
    int s = openat(srcdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dir = s >= 0 ? fdopendir(s) : NULL;
    if (!dir) {
        if (s >= 0)
            close(s);
        etc_mix(h, "?", 2);
        return;
    }
    for (struct dirent *de; (de = readdir(dir));)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            key_entry(dirfd(dir), de->d_name, h, depth + 1);
    closedir(dir);
    etc_mix(h, "/", 2); /* the end of a directory */
}

/* etc_fill()'s walk, hashing instead of copying. */
static uint64_t etc_key(const struct cfg_strings *extra, bool ssh_proxied)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned format = ETC_VM_CACHE_FORMAT;
    etc_mix(&h, &format, sizeof(format));
    etc_mix(&h, &ssh_proxied, sizeof(ssh_proxied));
    if (ssh_proxied)
        etc_mix(&h, etc_ssh_config, etc_ssh_config_len);
    _cleanup_closedir_ DIR *etc = opendir("/etc");
    if (!etc)
        return h;
    for (struct dirent *de; (de = readdir(etc));)
        if (de->d_name[0] != '.' && etc_entry_allowed(de->d_name))
            key_entry(dirfd(etc), de->d_name, &h, 0);
    _cleanup_close_ int ssl = open("/etc/ssl", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ssl >= 0) {
        key_entry(ssl, "certs", &h, 0);
        key_entry(ssl, "openssl.cnf", &h, 0);
    }
    for (size_t i = 0; i < extra->count; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s", extra->items[i]);
        etc_mix(&h, path, strlen(path) + 1);
        _cleanup_close_ int src = fcntl(dirfd(etc), F_DUPFD_CLOEXEC, 3);
        char *name = path;
        for (char *slash; src >= 0 && (slash = strchr(name, '/')); name = slash + 1) {
            *slash = '\0';
            struct stat st;
            if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                etc_mix_stat(&h, name, &st);
            int next = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(src);
            src = next;
        }
        if (src >= 0)
            key_entry(src, name, &h, 0);
    }
    _cleanup_close_ int ssh = open("/etc/ssh", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ssh >= 0)
        key_entry(ssh, "ssh_known_hosts", &h, 0);
    return h;
}

/* The cache directory, this user's and 0700, made if missing; -1 (no
 * cache, the session's own copy) on anything else. */
static int etc_cache_open(char *path, size_t size)
{
    struct cordon_error e;
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, &e) < 0 || snprintf(path, size, "%s/.vm-etc", root) >= (int)size)
        return -1;
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -1;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        log_debug("vm: %s is not this user's 0700 directory; /etc copied for this session only",
                  path);
        return -1;
    }
    return TAKE_FD(fd);
}

/* Chooses st->etc_path: the prepared copy of this content, or the
 * session's own (made here, filled by boot_once, stored after the boot). */
static int etc_cache_find(const struct launch *l, struct vm_state *st, struct cordon_error *err)
{
    long long t0 = clock_now_ms();
    snprintf(st->etc_path, sizeof(st->etc_path), "%s/etc", st->dir);
    _cleanup_close_ int root = etc_cache_open(st->etc_cache, sizeof(st->etc_cache));
    if (root < 0) {
        st->etc_cache[0] = '\0';
        return etc_dir_make(st->dir, err);
    }
    uint64_t key = etc_key(&l->cfg.etc.extra, net_ssh_proxied(&l->net));
    snprintf(st->etc_name, sizeof(st->etc_name), "%016llx", (unsigned long long)key);
    _cleanup_close_ int fd =
        openat(root, st->etc_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sst;
    if (fd >= 0 && fstat(fd, &sst) == 0 && sst.st_uid == geteuid() && !(sst.st_mode & 022) &&
        snprintf(st->etc_path, sizeof(st->etc_path), "%s/%s", st->etc_cache, st->etc_name) <
            (int)sizeof(st->etc_path)) {
        futimens(fd, NULL); /* its mtime says when it was last used */
        st->etc_filled = true;
        log_debug("vm: /etc: the prepared copy %s (key walked in %lld ms)", st->etc_path,
                  clock_now_ms() - t0);
        return 0;
    }
    if (fd >= 0 && sst.st_uid == geteuid()) {
        /* Not as cordon leaves one (writable by others): not used, and
         * removed so that this session's copy can take its place. */
        log_warn("vm: /etc: %s/%s is writable by group or others; removing it", st->etc_cache,
                 st->etc_name);
        fs_remove_tree_at(root, st->etc_name);
    }
    snprintf(st->etc_path, sizeof(st->etc_path), "%s/etc", st->dir);
    st->etc_store = true;
    log_debug("vm: /etc: no prepared copy %s/%s yet; this session's goes there (key walked in "
              "%lld ms)",
              st->etc_cache, st->etc_name, clock_now_ms() - t0);
    return etc_dir_make(st->dir, err);
}

/* After the boot: the session's filled copy becomes the prepared one (the
 * guest keeps it: QEMU holds the share's directory open, not its path).
 * Another session's of the same content may be there first: then this one
 * stays the session's and goes with it. Old entries are pruned here, the
 * rare moment the cache grows. */
static void etc_cache_store(struct vm_state *st)
{
    if (!st->etc_store || !st->etc_filled)
        return;
    char final[PATH_MAX];
    if (snprintf(final, sizeof(final), "%s/%s", st->etc_cache, st->etc_name) >= (int)sizeof(final))
        return;
    _cleanup_close_ int root = open(st->etc_cache, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0 || renameat2(AT_FDCWD, st->etc_path, root, st->etc_name, RENAME_NOREPLACE) < 0) {
        log_debug("vm: /etc: keeping this session's copy (%s)", strerror(errno));
        return;
    }
    log_debug("vm: /etc: this session's copy is now the prepared %s", final);
    memcpy(st->etc_path, final, sizeof(final));
    st->etc_store = false;
    _cleanup_closedir_ DIR *d = fdopendir(TAKE_FD(root));
    time_t old = time(NULL) - (time_t)ETC_VM_CACHE_KEEP_DAYS * 86400;
    for (struct dirent *de; d && (de = readdir(d));) {
        struct stat est;
        if (de->d_name[0] != '.' && strcmp(de->d_name, st->etc_name) != 0 &&
            fstatat(dirfd(d), de->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(est.st_mode) &&
            est.st_mtime < old)
            fs_remove_tree_at(dirfd(d), de->d_name);
    }
}

/* ---- sockets ---- */

static int listen_at(const char *dir, const char *name, struct cordon_error *err)
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

/* ---- QEMU ---- */

static pid_t spawn_qemu(char *const *argv, const char *dir, int net_fd, int incoming_fd,
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
        if (console_high < 0 || (net_fd >= 0 && net_high < 0) ||
            (incoming_fd >= 0 && incoming_high < 0))
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
static void log_tail(const char *path, char *out, size_t size)
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
static int accept_all(struct vm_state *st, int pidfd, long long deadline, struct cordon_error *err)
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
    /* The in-guest restrictions (vm-init.c confine_user): Landlock's
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

static void state_close(struct vm_state *st)
{
    for (int i = 0; i < SOCK_COUNT; i++) {
        if (st->fds[i] >= 0)
            close(st->fds[i]);
        if (st->listen[i] >= 0)
            close(st->listen[i]);
        st->fds[i] = st->listen[i] = -1;
    }
}

static void kill_qemu(struct sandbox *sb)
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

/* What makes a restored guest as fresh as a booted one (vm-init.c
 * fresh_start): seed material for its RNG and the host's clock, in every
 * boot spec. */
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

/* BOOT_SAVE: QEMU's monitor connects, the guest is asked to park (its
 * init answers before it has read a boot spec, mounted a share or started
 * anything: nothing of a session exists yet), QEMU saves it and lets it
 * continue. A failed save costs only the snapshot; -1 when the guest did
 * not park (as a normal boot would fail) or may be left stopped
 * (st->snap_broke: a normal boot is tried next). */
/* QEMU's monitor connection (BOOT_SAVE, BOOT_RESTORE); its listener goes. */
static int qmp_accept(struct vm_state *st, int pidfd, long long deadline, struct cordon_error *err)
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

static int park_and_save(struct vm_state *st, int pidfd, long long deadline,
                         struct cordon_error *err)
{
    long long t0 = clock_now_ms();
    _cleanup_close_ int qmp = qmp_accept(st, pidfd, deadline, err);
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
    int rc = vm_snapshot_save(qmp, st->snap_path, st->snap_key, deadline, &serr);
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

/* One boot attempt with st->accel. On failure QEMU is gone again. */
static int boot_once(const struct launch *l, char *const *agent_argv, const struct vm_kernel *k,
                     const char *initrd, struct vm_state *st, const struct vm_share *shares,
                     size_t nshares, enum boot_mode mode, int snap_fd, struct sandbox *sb,
                     struct cordon_error *err)
{
    st->snap_broke = false;
    if (mode == BOOT_SAVE || mode == BOOT_RESTORE) {
        char qmp[PATH_MAX];
        snprintf(qmp, sizeof(qmp), "%s/qmp", st->dir);
        unlink(qmp); /* an attempt before this one's, failed before QEMU connected */
        st->qmp_listen = listen_at(st->dir, "qmp", err);
        if (st->qmp_listen < 0)
            return -1;
    }
    for (int i = 0; i < SOCK_COUNT; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", st->dir, vm_sock_names[i]);
        unlink(path);
        st->listen[i] = listen_at(st->dir, vm_sock_names[i], err);
        if (st->listen[i] < 0)
            return -1;
    }
    vm_net_init(&st->net, &l->net);
    if (vm_net_prepare(&st->net, st->dir, err) < 0) {
        state_close(st);
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
    pid_t pid = spawn_qemu(b.args, st->dir, st->net.passt_qemu_fd,
                           mode == BOOT_RESTORE ? snap_fd : -1, st->protect, &pidfd, err);
    vm_qemu_argv_free(&b);
    if (pid < 0)
        return -1;
    sb->pid = pid;
    sb->pidfd = pidfd;

    long long timeout = strcmp(st->accel, "kvm") == 0 ? KVM_BOOT_TIMEOUT_MS : TCG_BOOT_TIMEOUT_MS;
    /* docker.mode = "require": the guest answers once its daemon is verified
     * (10 s under TCG on an idle host, a first boot formats its disk). */
    if (st->docker.start && st->docker.mode == CFG_DOCKER_REQUIRE)
        timeout += strcmp(st->accel, "kvm") == 0 ? 30000 : 120000;
    long long deadline = clock_now_ms() + timeout;
    json_t *spec = NULL, *reply = NULL;
    long long t_spawned = clock_now_ms();
    if (!st->etc_filled) {
        if (etc_fill(st->etc_path, &l->cfg.etc.extra, net_ssh_proxied(&l->net), err) < 0)
            goto fail;
        st->etc_filled = true;
    }
    long long t_etc = clock_now_ms();
    if (mode == BOOT_RESTORE && vm_snapshot_verify(snap_fd, st->snap_path, err) < 0)
        goto fail;
    long long t_sum = clock_now_ms();
    if (accept_all(st, pidfd, deadline, err) < 0 || vm_net_accept(&st->net, deadline, err) < 0)
        goto fail;
    if (mode == BOOT_RESTORE) {
        _cleanup_close_ int qmp = qmp_accept(st, pidfd, deadline, err);
        if (qmp < 0 || vm_snapshot_resume(qmp, deadline, err) < 0)
            goto fail;
        log_debug("vm: snapshot checksum passed in %lld ms while QEMU loaded it; vCPUs resumed",
                  t_sum - t_etc);
    }
    log_debug("vm: /etc copied in %lld ms; QEMU's ports connected %lld ms after its start",
              t_etc - t_spawned, clock_now_ms() - t_spawned);
    if (mode == BOOT_SAVE && park_and_save(st, pidfd, deadline, err) < 0)
        goto fail;
    spec = boot_spec(l, agent_argv, shares, nshares);
    if (spec && spec_add_fresh(spec, err) < 0)
        goto fail;
    json_t *net = vm_net_spec(&st->net);
    if (spec && net)
        json_object_set_new(spec, "net", net);
    if (spec)
        json_object_set_new(spec, "docker", vm_docker_plan_spec(&st->docker));
    if (!spec || vm_frame_write(st->fds[SOCK_CHANNEL], spec) < 0) {
        error_set(err, errno, "vm: sending the boot spec");
        goto fail;
    }
    long long t_spec = clock_now_ms();
    long long left = deadline - clock_now_ms();
    reply = vm_frame_read(st->fds[SOCK_CHANNEL], left > 0 ? (int)left : 0);
    if (!reply) {
        int e = errno;
        if (e == ETIMEDOUT)
            error_set(err, 0, "vm: the guest did not finish booting within %lld s (%s)",
                      timeout / 1000, st->accel);
        else
            error_set(err, e, "vm: the guest's channel closed during boot");
        goto fail;
    }
    const char *t = json_string_value(json_object_get(reply, "t"));
    if (t && strcmp(t, "booted") == 0) {
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
        snprintf(sb->description, sizeof(sb->description),
                 "vm (%s, %ld vCPU, %ld MiB, kernel %s%s)", st->accel,
                 vm_qemu_cpus(&l->limits, st->accel), vm_qemu_memory_mib(&l->limits),
                 json_string_value(json_object_get(reply, "kernel"))
                     ? json_string_value(json_object_get(reply, "kernel"))
                     : "?",
                 mode == BOOT_RESTORE ? ", restored from a snapshot" : "");
        json_t *docker = json_object_get(reply, "docker");
        if (docker)
            log_debug("vm: docker: %s (%s)", json_string_value(json_object_get(docker, "state")),
                      json_string_value(json_object_get(docker, "detail")));
        json_decref(spec);
        json_decref(reply);
        return 0;
    }
    const char *msg = json_string_value(json_object_get(reply, "message"));
    error_set(err, 0, "vm: guest setup failed: %s", msg ? msg : "(no message)");
fail:
    json_decref(spec);
    json_decref(reply);
    kill_qemu(sb);
    state_close(st);
    vm_net_stop(&st->net);
    if (st->qmp_listen >= 0) {
        close(st->qmp_listen);
        st->qmp_listen = -1;
    }
    /* What QEMU and the guest's console said last, for the user. */
    static const char *const logs[][2] = {{"qemu.log", "QEMU"}, {"console.log", "guest console"}};
    for (size_t i = 0; i < ARRAY_SIZE(logs); i++) {
        char path[PATH_MAX], tail[300];
        snprintf(path, sizeof(path), "%s/%s", st->dir, logs[i][0]);
        log_tail(path, tail, sizeof(tail));
        if (tail[0]) {
            size_t len = strlen(err->message);
            snprintf(err->message + len, sizeof(err->message) - len, " (%s: %s)", logs[i][1], tail);
        }
    }
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
 * snapshot and boots normally, and so does a save that broke the boot.
 * Both fallbacks start the same guest with the same configuration. */
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
    /* Its header here; its checksum while QEMU loads it (boot_once). */
    int fd = vm_snapshot_open_unchecked(st->snap_path, st->snap_key, &serr);
    if (fd >= 0) {
        long long t0 = clock_now_ms();
        int rc = boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_RESTORE, fd, sb, err);
        close(fd);
        if (rc == 0) {
            log_debug("vm: restored from %s in %lld ms", st->snap_path, clock_now_ms() - t0);
            return 0;
        }
        log_debug("vm: restoring %s failed (%s); booting normally", st->snap_path, err->message);
        vm_snapshot_discard(st->snap_path);
    } else {
        log_debug("%s; booting normally and saving one", serr.message);
    }
    int rc = boot_once(l, agent_argv, k, initrd, st, shares, n, BOOT_SAVE, -1, sb, err);
    if (rc < 0 && st->snap_broke) {
        log_debug("vm: saving the snapshot broke the boot (%s); booting without", err->message);
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
    snprintf(st->qemu, sizeof(st->qemu), "%s", qemu);
    vm_net_init(&st->net, &l->net);
    sb->priv = st;
    if (state_dir_make(l->name, st->dir, sizeof(st->dir), err) < 0) {
        st->dir[0] = '\0';
        return -1;
    }
    if (etc_cache_find(l, st, err) < 0)
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
    etc_cache_store(st);
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
    kill_qemu(sb);
    if (st) {
        state_close(st);
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
