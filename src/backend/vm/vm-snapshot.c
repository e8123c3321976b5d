/* Saving and restoring a parked guest (vm-snapshot.h). The file is this
 * uid's, 0600, in the kernel's cache: a header written last (magic, format
 * version, key, payload size), so a crash mid-save leaves a file that does
 * not verify, then QEMU's migration stream from offset VM_SNAPSHOT_HEADER.
 * The stream itself is checked by QEMU on load (section names, sizes, the
 * device set); one that fails to load is removed and the guest booted
 * normally. The monitor is spoken to only while saving, over a socket only
 * the supervisor holds. Host context (supervisor). */
#include "backend/vm/vm-snapshot.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define VM_SNAPSHOT_HEADER  4096
#define VM_SNAPSHOT_VERSION 3
#define VM_SNAPSHOT_MAGIC   "cordon-vm-snapshot\n"
#define QMP_LINE_MAX        65536
/* Snapshots kept per cache (one per configuration in use: a rebuilt agent
 * or kernel makes a new one; the least recently used go). */
#define VM_SNAPSHOTS_KEPT 4

struct snapshot_header {
    char magic[24];
    uint32_t version;
    uint32_t header_size;
    uint64_t key;
    uint64_t payload;
    uint64_t sum; /* payload_sum() of the stream */
    /* The guest's memory, a file beside it (ram_path_of): QEMU maps it
     * copy-on-write at a restore instead of reading it from the stream,
     * which holds the device state only (x-ignore-shared). */
    uint64_t ram_size;
    uint64_t ram_ino; /* binds the pair: a save beside this one replaces both */
    uint64_t ram_sum; /* ram_scan() of the memory */
};

/* A checksum of the migration stream that catches a damaged file (a bit
 * flipped on disk, a partial copy) before QEMU loads guest memory from it:
 * a stream QEMU parses but whose RAM pages are wrong would boot a guest
 * that hangs or misbehaves. Not a MAC: the file is this user's own, 0600,
 * in this user's cache; whoever can write it runs as the user already.
 * Four lanes of 64-bit words, each multiplied and shifted (independent
 * lanes let the CPU overlap the multiplies), the tail bytewise: ~1 GB/s
 * on this loaded machine, 0.1-0.2 s of a restore. */
static int payload_sum(int fd, uint64_t offset, uint64_t len, uint64_t *out)
{
    void *map = mmap(NULL, (size_t)(offset + len), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return -1;
    madvise(map, (size_t)(offset + len), MADV_SEQUENTIAL);
    const unsigned char *p = (const unsigned char *)map + offset;
    uint64_t lane[4] = {0x9e3779b97f4a7c15ULL ^ len, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                        0x27d4eb2f165667c5ULL};
    size_t blocks = (size_t)(len / 32);
    for (size_t i = 0; i < blocks; i++) {
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + 32 * i + 8 * (size_t)k, 8);
            lane[k] = (lane[k] ^ w) * 0xff51afd7ed558ccdULL;
            lane[k] ^= lane[k] >> 29;
        }
    }
    uint64_t h = lane[0];
    for (int k = 1; k < 4; k++)
        h = (h ^ lane[k]) * 0xc4ceb9fe1a85ec53ULL;
    for (size_t i = blocks * 32; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    munmap(map, (size_t)(offset + len));
    *out = h;
    return 0;
}

/* The memory's checksum: every 4 KiB page that is not all zeros, with
 * its index, in payload_sum()'s lanes. Zero pages count as absent, so a
 * hole and a page of zeros sum alike (the file is sparse: the pages the
 * guest never touched are holes, skipped with SEEK_DATA). Read with pread
 * into one buffer, not mapped: no page fault per page (~4 GB/s here). At a restore it
 * runs while QEMU starts, before the vCPUs do; at a save the pages that
 * are not zeros are also written to copy_to (>= 0), at their offsets. */
#define RAM_PAGE  4096
#define RAM_CHUNK (1u << 20)
/* Fills buf with len bytes at off; what lies past the end of the file
 * reads as zeros. */
static int read_full(int fd, unsigned char *buf, size_t len, off_t off)
{
    ssize_t got = fs_pread_full(fd, buf, len, off);
    if (got < 0)
        return -1;
    memset(buf + got, 0, len - (size_t)got);
    return 0;
}

static bool page_is_zero(const unsigned char *p, size_t len)
{
    uint64_t any = 0;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        any |= w;
    }
    for (size_t i = len & ~(size_t)7; i < len; i++)
        any |= p[i];
    return any == 0;
}

static int ram_scan(int fd, uint64_t size, int copy_to, uint64_t *out)
{
    /* Page-aligned: the kernel's copy into a misaligned buffer runs at a
     * third of the speed here. */
    _cleanup_free_ unsigned char *buf = NULL;
    if ((errno = posix_memalign((void **)&buf, RAM_PAGE, RAM_CHUNK)) != 0)
        return -1;
    uint64_t lane[4] = {0x9e3779b97f4a7c15ULL ^ size, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                        0x27d4eb2f165667c5ULL};
    /* Whole pages, each looked at once: an extent's ends are rounded out
     * to pages (a file system's blocks may be smaller), and the next
     * extent is looked for from the page after. */
    const off_t page = RAM_PAGE, end = (off_t)size;
    off_t pos = 0;
    while (pos < end) {
        off_t data = lseek(fd, pos, SEEK_DATA);
        if (data < 0 && errno == ENXIO)
            break; /* only a hole up to the end */
        if (data < 0)
            return -1;
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0)
            return -1;
        data &= ~(page - 1);
        hole = (hole + page - 1) & ~(page - 1);
        if (hole > end)
            hole = end;
        for (off_t at = data; at < hole;) {
            size_t want = (size_t)(hole - at) < RAM_CHUNK ? (size_t)(hole - at) : RAM_CHUNK;
            if (read_full(fd, buf, want, at) < 0)
                return -1;
            for (size_t off = 0; off < want; off += RAM_PAGE) {
                size_t len = want - off < RAM_PAGE ? want - off : RAM_PAGE;
                const unsigned char *p = buf + off;
                if (page_is_zero(p, len))
                    continue;
                ssize_t w = copy_to >= 0 ? pwrite(copy_to, p, len, at + (off_t)off) : (ssize_t)len;
                if (w != (ssize_t)len) {
                    if (w >= 0)
                        errno = EIO;
                    return -1;
                }
                uint64_t index = (uint64_t)(at + (off_t)off) / RAM_PAGE;
                lane[0] = (lane[0] ^ index) * 0xff51afd7ed558ccdULL;
                for (size_t i = 0; i + 32 <= len; i += 32)
                    for (int k = 0; k < 4; k++) {
                        uint64_t v;
                        memcpy(&v, p + i + 8 * (size_t)k, 8);
                        lane[k] = (lane[k] ^ v) * 0xff51afd7ed558ccdULL;
                        lane[k] ^= lane[k] >> 29;
                    }
                for (size_t i = len & ~(size_t)31; i < len; i++)
                    lane[3] = (lane[3] ^ p[i]) * 1099511628211ULL;
            }
            at += (off_t)want;
        }
        pos = hole;
    }
    uint64_t h = lane[0];
    for (int k = 1; k < 4; k++)
        h = (h ^ lane[k]) * 0xc4ceb9fe1a85ec53ULL;
    *out = h;
    return 0;
}

/* <dir>/vm-KEY.ram beside <dir>/vm-KEY.snap. */
static int ram_path_of(const char *path, char *out, size_t size)
{
    size_t len = strlen(path);
    if (len < 5 || strcmp(path + len - 5, ".snap") != 0 || len - 5 + 5 >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(out, path, len - 5);
    memcpy(out + len - 5, ".ram", 5);
    return 0;
}

bool vm_snapshot_enabled(void)
{
    const char *e = getenv("CORDON_VM_SNAPSHOT");
    return !e || strcmp(e, "0") != 0;
}

static void key_mix(uint64_t *key, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        *key ^= b[i];
        *key *= 1099511628211ULL;
    }
}

static void key_mix_file(uint64_t *key, const char *path)
{
    struct stat st;
    key_mix(key, path, strlen(path) + 1);
    if (stat(path, &st) == 0) {
        key_mix(key, &st.st_size, sizeof(st.st_size));
        key_mix(key, &st.st_mtim, sizeof(st.st_mtim));
        key_mix(key, &st.st_ino, sizeof(st.st_ino));
        key_mix(key, &st.st_dev, sizeof(st.st_dev));
    }
}

uint64_t vm_snapshot_key(const struct vm_qemu_input *in, const char *qemu_path)
{
    /* The session's paths are host-side only (QEMU opens them; the guest
     * sees mount tags), and the TSC rate is what the saved kernel was told
     * at its boot: none of them is in the saved state. */
    struct vm_share canon[VM_MAX_SHARES];
    for (size_t i = 0; i < in->nshares && i < VM_MAX_SHARES; i++)
        canon[i] = (struct vm_share){"/-", in->shares[i].guest, false};
    struct vm_qemu_input c = *in;
    c.dir = "/-";
    c.shares = canon;
    c.tsc_khz = 0;
    c.qmp = false;
    c.incoming = false;
    c.paused = false;
    c.ram = VM_RAM_ANON; /* shared while saving, private when restored */
    /* The Docker disk is per session; its size is what the saved guest's
     * driver read at its probe (its cached blocks are dropped after a
     * restore, guest/vm-fresh.c). */
    c.docker_disk = in->docker_disk && in->docker_disk[0] ? "/-" : NULL;
    uint64_t key = 14695981039346656037ULL;
    int version = VM_SNAPSHOT_VERSION;
    key_mix(&key, &version, sizeof(version));
    struct vm_qemu_argv b = {0};
    if (vm_qemu_argv_build(&c, &b) == 0)
        for (size_t i = 0; i < b.n; i++)
            key_mix(&key, b.args[i], strlen(b.args[i]) + 1);
    else
        key_mix(&key, "unbuildable", 11);
    vm_qemu_argv_free(&b);
    key_mix_file(&key, qemu_path);
    key_mix_file(&key, in->vmlinuz);
    key_mix_file(&key, in->initrd);
    struct stat st;
    if (c.docker_disk && stat(in->docker_disk, &st) == 0)
        key_mix(&key, &st.st_size, sizeof(st.st_size));
    return key;
}

int vm_snapshot_path(const char *cache_dir, uint64_t key, char *out, size_t size,
                     struct cordon_error *err)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s/snapshots", cache_dir) >= (int)sizeof(dir) ||
        snprintf(out, size, "%s/vm-%016llx.snap", dir, (unsigned long long)key) >= (int)size)
        return error_set(err, ENAMETOOLONG, "vm: snapshot path in %s", cache_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "vm: creating %s", dir);
    return 0;
}

void vm_snapshot_discard(const char *path)
{
    char ram[PATH_MAX];
    if (unlink(path) == 0)
        log_debug("vm: snapshot %s removed", path);
    if (ram_path_of(path, ram, sizeof(ram)) == 0)
        unlink(ram);
}

/* Unlinks path when it still names inode ino (0: any): a save that
 * replaced it meanwhile keeps its new file. */
static bool unlink_if_same(const char *path, const struct stat *was, uint64_t ino)
{
    struct stat now;
    if (lstat(path, &now) < 0 || now.st_dev != was->st_dev || (uint64_t)now.st_ino != ino)
        return false;
    return unlink(path) == 0;
}

void vm_snapshot_discard_fd(int fd, const char *path)
{
    struct stat st;
    struct snapshot_header h = {0};
    char ram[PATH_MAX];
    if (fstat(fd, &st) < 0)
        return;
    if (unlink_if_same(path, &st, (uint64_t)st.st_ino))
        log_debug("vm: snapshot %s removed", path);
    if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
        memcmp(h.magic, VM_SNAPSHOT_MAGIC, sizeof(VM_SNAPSHOT_MAGIC)) == 0 &&
        h.version == VM_SNAPSHOT_VERSION && ram_path_of(path, ram, sizeof(ram)) == 0)
        unlink_if_same(ram, &st, h.ram_ino);
}

/* The memory file of the snapshot whose header is h: this user's regular
 * file, 0600, of the size and inode the header names, open read-write as
 * QEMU 7.2 will reopen it (it maps it copy-on-write: share=off). *bad
 * says why it is unusable; *keep when that is no reason to remove the
 * pair (another save's memory file, being renamed into place beside this
 * one, or a cache this user may not write). */
static int ram_open(const char *path, const struct snapshot_header *h, const char **bad, bool *keep,
                    struct cordon_error *err)
{
    char ram[PATH_MAX];
    if (ram_path_of(path, ram, sizeof(ram)) < 0)
        return error_set(err, ENAMETOOLONG, "vm: snapshot %s", path);
    _cleanup_close_ int fd = open(ram, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
        *bad = "its memory file cannot be opened read-write here (QEMU 7.2 needs that to map it)";
        *keep = true;
    } else if (fd < 0 && errno != ENOENT && errno != ELOOP) {
        return error_set(err, errno, "vm: snapshot memory %s", ram);
    } else if (fd < 0) {
        *bad = "its memory file is missing";
    } else if (fstat(fd, &st) < 0) {
        return error_set(err, errno, "vm: snapshot memory %s", ram);
    } else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600) {
        *bad = "its memory file is not a regular file of this user with mode 0600";
    } else if ((uint64_t)st.st_ino != h->ram_ino) {
        *bad = "its memory file is another save's";
        *keep = true;
    } else if ((uint64_t)st.st_size != h->ram_size) {
        *bad = "its memory file was truncated or extended after its save";
    }
    if (*bad)
        return -1;
    return TAKE_FD(fd);
}

static int snapshot_open(const char *path, uint64_t key, bool check_sum, int *ram_out,
                         struct cordon_error *err)
{
    _cleanup_close_ int ram = -1;
    bool keep = false;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "vm: snapshot %s", path);
    struct stat st;
    struct snapshot_header h = {0};
    const char *bad = NULL;
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "vm: snapshot %s", path);
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        bad = "not a regular file of this user with mode 0600";
    else if (st.st_size <= VM_SNAPSHOT_HEADER || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        bad = "shorter than its header";
    else if (memcmp(h.magic, VM_SNAPSHOT_MAGIC, sizeof(VM_SNAPSHOT_MAGIC)) != 0)
        bad = "no snapshot header (an interrupted save?)";
    else if (h.version != VM_SNAPSHOT_VERSION || h.header_size != VM_SNAPSHOT_HEADER)
        bad = "another format version";
    else if (h.key != key)
        bad = "saved for another configuration";
    else if (h.payload != (uint64_t)st.st_size - VM_SNAPSHOT_HEADER)
        bad = "truncated or extended after its save";
    else if ((ram = ram_open(path, &h, &bad, &keep, err)) < 0 && !bad)
        return -1;
    else if (check_sum && !bad) {
        uint64_t sum = 0, rsum = 0;
        if (payload_sum(fd, VM_SNAPSHOT_HEADER, h.payload, &sum) < 0 ||
            ram_scan(ram, h.ram_size, -1, &rsum) < 0)
            return error_set(err, errno, "vm: snapshot %s: reading", path);
        if (sum != h.sum || rsum != h.ram_sum)
            bad = "its content does not match its checksum (damaged)";
    }
    if (bad) {
        /* Only a file of ours is removed, and only while the path still
         * names it; anything else is left alone and ignored. */
        if (!keep && S_ISREG(st.st_mode) && st.st_uid == geteuid())
            vm_snapshot_discard_fd(fd, path);
        return error_set(err, EINVAL, "vm: snapshot %s: %s", path, bad);
    }
    if (lseek(fd, VM_SNAPSHOT_HEADER, SEEK_SET) != VM_SNAPSHOT_HEADER)
        return error_set(err, errno, "vm: snapshot %s", path);
    /* Its mtime says when it was last used (snapshots_prune). */
    futimens(fd, NULL);
    if (ram_out)
        *ram_out = TAKE_FD(ram);
    return TAKE_FD(fd);
}

int vm_snapshot_open(const char *path, uint64_t key, struct cordon_error *err)
{
    return snapshot_open(path, key, true, NULL, err);
}

int vm_snapshot_open_unchecked(const char *path, uint64_t key, int *ram_fd,
                               struct cordon_error *err)
{
    return snapshot_open(path, key, false, ram_fd, err);
}

int vm_snapshot_verify(int fd, int ram_fd, const char *path, struct cordon_error *err)
{
    struct snapshot_header h = {0};
    uint64_t sum = 0, rsum = 0;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
        payload_sum(fd, VM_SNAPSHOT_HEADER, h.payload, &sum) < 0 ||
        ram_scan(ram_fd, h.ram_size, -1, &rsum) < 0)
        return error_set(err, errno, "vm: snapshot %s: reading", path);
    if (sum != h.sum || rsum != h.ram_sum) {
        vm_snapshot_discard_fd(fd, path);
        return error_set(err, EINVAL,
                         "vm: snapshot %s: its content does not match its checksum (damaged)",
                         path);
    }
    return 0;
}

struct snapshot_entry {
    char name[64];
    struct timespec mtime;
};

static int entry_newer_first(const void *a, const void *b)
{
    const struct timespec *x = &((const struct snapshot_entry *)a)->mtime;
    const struct timespec *y = &((const struct snapshot_entry *)b)->mtime;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? 1 : -1;
    return (x->tv_nsec < y->tv_nsec) - (x->tv_nsec > y->tv_nsec);
}

/* All but the VM_SNAPSHOTS_KEPT most recently used snapshots in dir go
 * (of the first 64 seen), and temp files of a save that died. */
static void snapshots_prune(const char *dir)
{
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dup = dfd >= 0 ? fcntl(dfd, F_DUPFD_CLOEXEC, 3) : -1;
    _cleanup_closedir_ DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    if (!d) {
        if (dup >= 0)
            close(dup);
        return;
    }
    struct snapshot_entry found[64];
    size_t n = 0;
    for (struct dirent *de; (de = readdir(d)) && n < ARRAY_SIZE(found);) {
        struct stat st;
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "vm-", 3) != 0 || len >= sizeof(found[0].name) ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (strstr(de->d_name, ".snap.") || strstr(de->d_name, ".ram.")) {
            /* vm-KEY.snap.XXXXXX, vm-KEY.ram.XXXXXX: a save that died (one
             * takes seconds). */
            if (st.st_mtime < time(NULL) - 600)
                unlinkat(dfd, de->d_name, 0);
            continue;
        }
        if (len > 4 && strcmp(de->d_name + len - 4, ".ram") == 0) {
            /* A memory file whose snapshot is gone (a save that died
             * between the two renames): kept while a save may be on it. */
            char snap[sizeof(found[0].name) + 2];
            snprintf(snap, sizeof(snap), "%.*s.snap", (int)(len - 4), de->d_name);
            if (faccessat(dfd, snap, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
                st.st_mtime < time(NULL) - 600)
                unlinkat(dfd, de->d_name, 0);
            continue;
        }
        memcpy(found[n].name, de->d_name, len + 1);
        found[n++].mtime = st.st_mtim;
    }
    qsort(found, n, sizeof(found[0]), entry_newer_first);
    for (size_t i = VM_SNAPSHOTS_KEPT; i < n; i++) {
        if (unlinkat(dfd, found[i].name, 0) == 0)
            log_debug("vm: snapshot %s/%s removed (unused the longest)", dir, found[i].name);
        char ram[sizeof(found[0].name) + 2];
        size_t len = strlen(found[i].name);
        if (len > 5 && strcmp(found[i].name + len - 5, ".snap") == 0) {
            snprintf(ram, sizeof(ram), "%.*s.ram", (int)(len - 5), found[i].name);
            unlinkat(dfd, ram, 0);
        }
    }
}

/* ---- QMP, only while saving ---- */

struct qmp {
    int fd;
    char buf[QMP_LINE_MAX];
    size_t len;
    long long deadline;
};

/* The next line from QEMU that is not an event, as JSON. */
static json_t *qmp_read(struct qmp *q, struct cordon_error *err)
{
    for (;;) {
        char *nl = memchr(q->buf, '\n', q->len);
        if (nl) {
            *nl = '\0';
            json_t *msg = json_loads(q->buf, 0, NULL);
            size_t used = (size_t)(nl + 1 - q->buf);
            memmove(q->buf, nl + 1, q->len - used);
            q->len -= used;
            if (msg && !json_object_get(msg, "event"))
                return msg;
            json_decref(msg);
            continue;
        }
        if (q->len == sizeof(q->buf)) {
            error_set(err, EPROTO, "vm: QMP: a line longer than %d bytes", QMP_LINE_MAX);
            return NULL;
        }
        long long left = q->deadline - clock_now_ms();
        struct pollfd p = {q->fd, POLLIN, 0};
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            error_set(err, r == 0 ? ETIMEDOUT : errno, "vm: QMP: no answer");
            return NULL;
        }
        ssize_t n = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
        if (n <= 0) {
            error_set(err, n == 0 ? ECONNRESET : errno, "vm: QMP: reading");
            return NULL;
        }
        q->len += (size_t)n;
    }
}

/* Runs one command (with pass_fd attached when >= 0); the "return" value's
 * owner is the caller, NULL with err on an error answer. */
static json_t *qmp_run(struct qmp *q, const char *cmd, int pass_fd, struct cordon_error *err)
{
    struct iovec iov = {(void *)cmd, strlen(cmd)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control = {0};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (pass_fd >= 0) {
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t n;
    while ((n = sendmsg(q->fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)iov.iov_len) {
        error_set(err, n < 0 ? errno : EIO, "vm: QMP: sending");
        return NULL;
    }
    json_t *answer = qmp_read(q, err);
    if (!answer)
        return NULL;
    json_t *ret = json_object_get(answer, "return");
    if (!ret) {
        const char *desc =
            json_string_value(json_object_get(json_object_get(answer, "error"), "desc"));
        error_set(err, EIO, "vm: QMP: %.60s: %s", cmd, desc ? desc : "error");
        json_decref(answer);
        return NULL;
    }
    json_incref(ret);
    json_decref(answer);
    return ret;
}

static int qmp_do(struct qmp *q, const char *cmd, int pass_fd, struct cordon_error *err)
{
    json_t *ret = qmp_run(q, cmd, pass_fd, err);
    json_decref(ret);
    return ret ? 0 : -1;
}

/* Until the migration ends; 0 when it completed. */
static int qmp_migrate_wait(struct qmp *q, struct cordon_error *err)
{
    for (;;) {
        json_t *ret = qmp_run(q, "{\"execute\":\"query-migrate\"}\n", -1, err);
        if (!ret)
            return -1;
        const char *status = json_string_value(json_object_get(ret, "status"));
        char why[200] = "";
        snprintf(why, sizeof(why), "%s",
                 json_string_value(json_object_get(ret, "error-desc"))
                     ? json_string_value(json_object_get(ret, "error-desc"))
                     : "");
        bool done = status && strcmp(status, "completed") == 0;
        bool failed = !status || strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0;
        char st[32];
        snprintf(st, sizeof(st), "%s", status ? status : "?");
        json_decref(ret);
        if (done)
            return 0;
        if (failed)
            return error_set(err, EIO, "vm: saving the guest: migration %s%s%s", st,
                             why[0] ? ": " : "", why);
        if (clock_now_ms() > q->deadline)
            return error_set(err, ETIMEDOUT, "vm: saving the guest: migration still %s", st);
        usleep(5000);
    }
}

static struct qmp *qmp_new(int qmp_fd, long long deadline, struct cordon_error *err)
{
    struct qmp *q = calloc(1, sizeof(*q));
    if (!q) {
        error_set(err, ENOMEM, "vm: QMP");
        return NULL;
    }
    q->fd = qmp_fd;
    q->deadline = deadline;
    return q;
}

static const char set_ignore_shared[] =
    "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
    "[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}\n";

int vm_snapshot_incoming(int qmp_fd, long long deadline, struct cordon_error *err)
{
    _cleanup_free_ struct qmp *q = qmp_new(qmp_fd, deadline, err);
    if (!q)
        return -1;
    json_t *greeting = qmp_read(q, err);
    if (!greeting)
        return -1;
    json_decref(greeting);
    /* The memory is the file QEMU mapped (-object memory-backend-file,
     * share=off): the stream names it but carries none of its pages. */
    if (qmp_do(q, "{\"execute\":\"qmp_capabilities\"}\n", -1, err) < 0 ||
        qmp_do(q, set_ignore_shared, -1, err) < 0 ||
        qmp_do(
            q,
            "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:" VM_SNAPSHOT_QEMU_FD_STR
            "\"}}\n",
            -1, err) < 0)
        return -1;
    return 0;
}

int vm_snapshot_resume(int qmp_fd, long long deadline, struct cordon_error *err)
{
    _cleanup_free_ struct qmp *q = qmp_new(qmp_fd, deadline, err);
    if (!q)
        return -1;
    /* cont while the stream still loads: QEMU starts the vCPUs once it is
     * loaded (autostart), not before. */
    return qmp_do(q, "{\"execute\":\"cont\"}\n", -1, err);
}

/* The two temp files of a save beside path: the stream's (fd, written
 * from VM_SNAPSHOT_HEADER on) and the memory's (rfd). */
struct save_files {
    char tmp[PATH_MAX], ram[PATH_MAX], ram_tmp[PATH_MAX];
    int fd, rfd;
};

static int save_files_create(const char *path, struct save_files *f, struct cordon_error *err)
{
    *f = (struct save_files){.fd = -1, .rfd = -1};
    if (snprintf(f->tmp, sizeof(f->tmp), "%s.XXXXXX", path) >= (int)sizeof(f->tmp) ||
        ram_path_of(path, f->ram, sizeof(f->ram)) < 0 ||
        snprintf(f->ram_tmp, sizeof(f->ram_tmp), "%s.XXXXXX", f->ram) >= (int)sizeof(f->ram_tmp)) {
        f->tmp[0] = f->ram_tmp[0] = '\0';
        return error_set(err, ENAMETOOLONG, "vm: snapshot path %s", path);
    }
    f->fd = mkostemp(f->tmp, O_CLOEXEC); /* 0600 */
    if (f->fd < 0) {
        error_set(err, errno, "vm: creating %s", f->tmp);
        f->tmp[0] = f->ram_tmp[0] = '\0';
        return -1;
    }
    f->rfd = mkostemp(f->ram_tmp, O_CLOEXEC);
    if (f->rfd < 0) {
        error_set(err, errno, "vm: creating %s", f->ram_tmp);
        f->ram_tmp[0] = '\0';
        return -1;
    }
    if (lseek(f->fd, VM_SNAPSHOT_HEADER, SEEK_SET) != VM_SNAPSHOT_HEADER)
        return error_set(err, errno, "vm: %s", f->tmp);
    return 0;
}

/* What is left of the temp files after a save, committed or not. */
static void save_files_end(struct save_files *f)
{
    if (f->tmp[0])
        unlink(f->tmp);
    if (f->ram_tmp[0])
        unlink(f->ram_tmp);
    if (f->fd >= 0)
        close(f->fd);
    if (f->rfd >= 0)
        close(f->rfd);
    *f = (struct save_files){.fd = -1, .rfd = -1};
}

/* The stream written to f->fd and the memory in ram_fd made the snapshot
 * at path: the memory's pages that are not zeros copied to f->rfd
 * (sparse), the header, the memory file renamed into place, then the
 * stream's. */
static int save_files_commit(const char *path, uint64_t key, struct save_files *f, int ram_fd,
                             struct cordon_error *err)
{
    struct stat st, rst;
    struct snapshot_header h = {
        .version = VM_SNAPSHOT_VERSION, .header_size = VM_SNAPSHOT_HEADER, .key = key};
    memcpy(h.magic, VM_SNAPSHOT_MAGIC, sizeof(VM_SNAPSHOT_MAGIC));
    errno = 0;
    if (fstat(f->fd, &st) < 0 || st.st_size <= VM_SNAPSHOT_HEADER)
        return error_set(err, errno ? errno : EIO, "vm: saving the guest: %s is empty", f->tmp);
    if (fstat(ram_fd, &rst) < 0 || rst.st_size <= 0)
        return error_set(err, errno ? errno : EIO,
                         "vm: saving the guest: its memory file is empty");
    h.payload = (uint64_t)st.st_size - VM_SNAPSHOT_HEADER;
    h.ram_size = (uint64_t)rst.st_size;
    /* Not synced to disk: a memory file the kernel lost part of does not
     * match its checksum, and the next session saves anew. */
    if (ftruncate(f->rfd, (off_t)h.ram_size) < 0 ||
        ram_scan(ram_fd, h.ram_size, f->rfd, &h.ram_sum) < 0 || fstat(f->rfd, &rst) < 0)
        return error_set(err, errno, "vm: writing %s", f->ram_tmp);
    h.ram_ino = (uint64_t)rst.st_ino;
    if (payload_sum(f->fd, VM_SNAPSHOT_HEADER, h.payload, &h.sum) < 0)
        return error_set(err, errno, "vm: reading back %s", f->tmp);
    /* The memory first, then the snapshot that names its inode: a reader
     * never pairs a snapshot with a memory file of another save. */
    if (pwrite(f->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || fdatasync(f->fd) < 0 ||
        rename(f->ram_tmp, f->ram) < 0)
        return error_set(err, errno, "vm: writing %s", path);
    f->ram_tmp[0] = '\0';
    if (rename(f->tmp, path) < 0) {
        error_set(err, errno, "vm: writing %s", path);
        unlink(f->ram);
        return -1;
    }
    f->tmp[0] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        snapshots_prune(dir);
    }
    return 0;
}

int vm_snapshot_store(const char *path, uint64_t key, const void *stream, size_t len, int ram_fd,
                      struct cordon_error *err)
{
    struct save_files f;
    int rc = -1;
    if (save_files_create(path, &f, err) == 0) {
        if (write(f.fd, stream, len) != (ssize_t)len)
            error_set(err, errno ? errno : EIO, "vm: writing %s", f.tmp);
        else
            rc = save_files_commit(path, key, &f, ram_fd, err);
    }
    save_files_end(&f);
    return rc;
}

int vm_snapshot_save(int qmp_fd, const char *path, uint64_t key, int ram_fd, long long deadline,
                     struct cordon_error *err)
{
    struct qmp *q = qmp_new(qmp_fd, deadline, err);
    if (!q)
        return -1;
    struct save_files f = {.fd = -1, .rfd = -1};
    bool stopped = false;
    int rc = -1;
    json_t *greeting = qmp_read(q, err);
    if (!greeting)
        goto out;
    json_decref(greeting);
    if (qmp_do(q, "{\"execute\":\"qmp_capabilities\"}\n", -1, err) < 0 ||
        save_files_create(path, &f, err) < 0)
        goto out;
    /* QEMU 7.2 caps a migration at 128 MiB/s by default; this one goes to a
     * file. The guest is not stopped first: the stream records the run
     * state, and a restore of a stopped guest would stay stopped (the
     * parked guest dirties next to nothing while QEMU copies it). Its
     * memory, the shared ram_fd, is left out of the stream and copied
     * once the migration has stopped the guest. */
    if (qmp_do(q,
               "{\"execute\":\"migrate-set-parameters\",\"arguments\":"
               "{\"max-bandwidth\":1099511627776}}\n",
               -1, err) < 0 ||
        qmp_do(q, set_ignore_shared, -1, err) < 0 ||
        qmp_do(q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"snap\"}}\n", f.fd, err) < 0)
        goto out;
    /* From here the guest may end stopped (a completed migration leaves it
     * so): "cont" below in every case. */
    stopped = true;
    if (qmp_do(q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:snap\"}}\n", -1, err) < 0 ||
        qmp_migrate_wait(q, err) < 0 || save_files_commit(path, key, &f, ram_fd, err) < 0)
        goto out;
    rc = 0;
out:
    save_files_end(&f);
    if (stopped) {
        struct cordon_error cerr;
        if (qmp_do(q, "{\"execute\":\"cont\"}\n", -1, &cerr) < 0) {
            if (rc == 0)
                *err = cerr;
            rc = -2;
        }
    }
    free(q);
    return rc;
}
