/* The guest's /etc (vm-etc.h): the guest's root could read anything QEMU
 * exports, so only a copy of the allowed entries (etc-allowlist.c, the same
 * list as the ns view) is shared, never the host's /etc itself; the copy
 * is made once per content and reused read-only by later sessions. Host
 * context (supervisor), walking the host's /etc with fds, never following
 * a symlink. */
#include "backend/vm/vm-etc.h"
#include "backend/etc-allowlist.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the copy ---- */

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
 * entries are copied by vm_etc_fill() while the guest kernel boots: with a
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

int vm_etc_fill(const char *dst, const struct cfg_strings *extra, bool ssh_proxied,
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

/* ---- prepared once per content ---- */

/* vm_etc_fill() costs 20-600 ms (a thousand symlinks in /etc/alternatives, on
 * a loaded disk), which a cold boot hides behind the kernel's boot but a
 * restored guest waits for. So the copy is made once per content, in
 * <state root>/.vm-etc/<key>, and shared read-only (readonly=on, as the
 * session's copy was) by every later session. The key is the identity
 * (inode, size, mtime, ctime, mode, owner) of every host entry vm_etc_fill()
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

/* vm_etc_fill()'s walk, hashing instead of copying. */
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
 * session's own (made here, filled by vm.c boot_once, stored after the boot). */
int vm_etc_cache_find(const struct launch *l, struct vm_state *st, struct cordon_error *err)
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
void vm_etc_cache_store(struct vm_state *st)
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
