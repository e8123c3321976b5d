/* The guest's initramfs, written by cordon as a cpio "newc" archive: the
 * agent as /init, the shared libraries it links (at their real paths, with
 * the host's symlink chains, so the dynamic loader finds them before any
 * share is mounted), the kernel modules the guest needs for virtio, the
 * console and 9p (with their modules.dep dependencies, in load order, listed
 * in /cordon/modules; stored under /cordon/lib/modules, clear of the /lib
 * symlink), and the host's top-level merged-/usr symlinks.
 *
 * A dynamically linked agent (test builds) carries its libraries rather than
 * mounting /usr first, because a dynamically linked /init cannot run at all
 * until its loader and libc exist in the root filesystem; carrying them costs
 * a few MiB per image and keeps one binary as init (no separate static
 * stub). The release agent is static and carries nothing. Once /usr is
 * mounted over 9p the guest's commands use the host's (same) files.
 *
 * The image is cached under a name derived from everything it holds (agent
 * contents, each library's identity, the kernel version), so a rebuilt agent
 * or an upgraded library gives a new image. Host context (supervisor). */
#include "backend/vm/vm.h"
#include "util/cleanup.h"
#include "util/elf-info.h"
#include "util/log.h"
#include "confine/privs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The modules the guest loads itself (their dependencies are added from
 * modules.dep): the virtio transport of QEMU's microvm (mmio; vm.c uses no
 * other machine, and loading virtio_pci with its two helpers cost ~50 ms
 * of a TCG boot), the console/serial ports and the 9p filesystem over
 * virtio. */
static const char *const root_modules[] = {
    "virtio_mmio",
    "virtio_console",
    "9pnet_virtio",
    "9p",
};

/* Loaded by the guest only in network mode "open" (listed in
 * /cordon/modules-net): the virtio-net driver for passt's interface. */
static const char *const net_modules[] = {"virtio_net"};

/* Loaded only when the guest starts its Docker daemon (vm-docker.c): the
 * disk its storage lives on, the filesystem on it, and overlayfs for the
 * image layers. Listed apart so that a boot without Docker pays nothing.
 * crc32c: ext4's metadata checksums ask the crypto API for it, which would
 * otherwise request a module through a modprobe the guest does not have
 * (the mount then fails with ENOENT). */
static const char *const docker_modules[] = {"virtio_blk", "crc32c_generic", "ext4", "overlay"};

/* The tail the kernel's sign-file appends to a module: the PKCS#7 signature,
 * a struct module_signature (12 bytes, sig_len big-endian at its end) and
 * this marker. */
#define MODULE_SIG_MAGIC "~Module signature appended~\n"
#define MODULE_SIG_INFO  12

/* A module's length without its signature. The guest kernel (Debian's:
 * CONFIG_MODULE_SIG without _FORCE) then loads it unverified and marks
 * itself tainted; verifying ten RSA signatures and hashing 1 MiB of modules
 * cost ~0.1-0.2 s of a TCG boot. Nothing is lost: the modules come from
 * cordon's own cache, and the guest's root could load any unsigned module
 * anyway. */
static size_t module_unsigned_len(const char *buf, size_t len)
{
    size_t magic = sizeof(MODULE_SIG_MAGIC) - 1;
    if (len < magic + MODULE_SIG_INFO || memcmp(buf + len - magic, MODULE_SIG_MAGIC, magic) != 0)
        return len;
    const unsigned char *info = (const unsigned char *)buf + len - magic - MODULE_SIG_INFO;
    size_t sig = (size_t)info[8] << 24 | (size_t)info[9] << 16 | (size_t)info[10] << 8 | info[11];
    size_t extra = (size_t)info[3] + info[4]; /* signer and key id: 0 for PKCS#7 */
    if (sig + extra > len - magic - MODULE_SIG_INFO)
        return len;
    return len - magic - MODULE_SIG_INFO - sig - extra;
}

#define CPIO_MAX_ENTRIES 512

struct cpio_entry {
    char *name; /* without the leading '/' */
    mode_t mode;
    char *data; /* symlink target, or host path of a regular file */
};

struct cpio_plan {
    struct cpio_entry entries[CPIO_MAX_ENTRIES];
    size_t count;
    uint64_t key; /* FNV-1a over the identity of everything in the image */
    char modules_list[8192];
    size_t modules_len;
    char docker_list[8192]; /* /cordon/modules.docker */
    size_t docker_len;
    char net_list[2048]; /* modules-net: loaded for network mode "open" only */
    size_t net_len;
    bool net_pass; /* modules being added go to net_list */
};

static void key_mix(struct cpio_plan *p, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        p->key ^= b[i];
        p->key *= 1099511628211ULL;
    }
}

static bool plan_has(const struct cpio_plan *p, const char *name)
{
    for (size_t i = 0; i < p->count; i++) {
        if (strcmp(p->entries[i].name, name) == 0)
            return true;
    }
    return false;
}

static int plan_add(struct cpio_plan *p, const char *name, mode_t mode, const char *data,
                    struct cordon_error *err)
{
    while (*name == '/')
        name++;
    if (plan_has(p, name))
        return 0;
    if (p->count == CPIO_MAX_ENTRIES)
        return error_set(err, E2BIG, "initramfs: more than %d entries", CPIO_MAX_ENTRIES);
    struct cpio_entry *e = &p->entries[p->count];
    e->name = strdup(name);
    e->data = data ? strdup(data) : NULL;
    if (!e->name || (data && !e->data))
        return error_set(err, ENOMEM, "initramfs");
    e->mode = mode;
    p->count++;
    key_mix(p, name, strlen(name) + 1);
    if (data)
        key_mix(p, data, strlen(data) + 1);
    return 0;
}

/* Parent directories of path, outermost first. */
static int plan_add_parents(struct cpio_plan *p, const char *path, struct cordon_error *err)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *s = buf + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (plan_add(p, buf, S_IFDIR | 0755, NULL, err) < 0)
            return -1;
        *s = '/';
    }
    return 0;
}

/* Adds the host file at path, reproducing every symlink met on the way (in
 * directories and at the end), so that the same path resolves in the guest. */
static int plan_add_host_path(struct cpio_plan *p, const char *path, int depth,
                              struct cordon_error *err)
{
    if (depth > 16)
        return error_set(err, ELOOP, "initramfs: %s", path);
    char prefix[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(prefix) || path[0] != '/')
        return error_set(err, EINVAL, "initramfs: bad path %s", path);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        struct stat st;
        if (lstat(prefix, &st) < 0)
            return error_set(err, errno, "initramfs: %s", prefix);
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlink(prefix, target, sizeof(target) - 1);
            if (n < 0)
                return error_set(err, errno, "initramfs: readlink %s", prefix);
            target[n] = '\0';
            if (plan_add_parents(p, prefix, err) < 0 ||
                plan_add(p, prefix, S_IFLNK | 0777, target, err) < 0)
                return -1;
            /* Continue with the link resolved, then the rest of the path. */
            char resolved[PATH_MAX];
            if (target[0] == '/') {
                snprintf(resolved, sizeof(resolved), "%s%s", target, path + i);
            } else {
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", prefix);
                *strrchr(dir, '/') = '\0';
                if (snprintf(resolved, sizeof(resolved), "%s/%s%s", dir, target, path + i) >=
                    (int)sizeof(resolved))
                    return error_set(err, ENAMETOOLONG, "initramfs: %s", prefix);
            }
            return plan_add_host_path(p, resolved, depth + 1, err);
        }
        if (i == len) {
            if (!S_ISREG(st.st_mode))
                return error_set(err, EINVAL, "initramfs: %s is not a regular file", path);
            if (plan_add_parents(p, prefix, err) < 0 ||
                plan_add(p, prefix, S_IFREG | (st.st_mode & 0755), prefix, err) < 0)
                return -1;
            key_mix(p, &st.st_size, sizeof(st.st_size));
            key_mix(p, &st.st_mtim, sizeof(st.st_mtim));
            key_mix(p, &st.st_ino, sizeof(st.st_ino));
        }
    }
    return 0;
}

/* Whether the ELF file at path names a program interpreter (is dynamically
 * linked); a release agent is static and needs no libraries. */
static int elf_is_dynamic(const char *path, struct cordon_error *err)
{
    int dynamic = elf_has_interpreter(path, err);
    return dynamic < 0 ? error_prefix(err, "initramfs") : dynamic;
}

/* The libraries agent_path links, as the host's dynamic loader resolves them
 * (`ld.so --list`, what ldd does), each added with plan_add_host_path. */
static int plan_add_libraries(struct cpio_plan *p, const char *agent_path, struct cordon_error *err)
{
    int dynamic = elf_is_dynamic(agent_path, err);
    if (dynamic <= 0)
        return dynamic;
    static const char *const loaders[] = {"/lib64/ld-linux-x86-64.so.2",
                                          "/lib/ld-linux-aarch64.so.1"};
    const char *loader = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(loaders) && !loader; i++) {
        if (access(loaders[i], X_OK) == 0)
            loader = loaders[i];
    }
    if (!loader)
        return error_set(err, ENOENT, "initramfs: no dynamic loader found on the host");
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return error_set(err, errno, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return error_set(err, errno, "fork");
    }
    if (pid == 0) {
        dup2(pipefd[1], 1);
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 2);
        execle(loader, loader, "--list", agent_path, (char *)NULL, privs_helper_environ());
        _exit(127);
    }
    close(pipefd[1]);
    _cleanup_fclose_ FILE *f = fdopen(pipefd[0], "r");
    if (!f) {
        close(pipefd[0]);
        waitpid(pid, NULL, 0);
        return error_set(err, errno, "fdopen");
    }
    char line[PATH_MAX + 128];
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        /* "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
         * "\t/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file. */
        char *path = strstr(line, "=> ");
        path = path ? path + 3 : line + strspn(line, " \t");
        if (path[0] != '/')
            continue;
        char *end = strstr(path, " (");
        if (end)
            *end = '\0';
        path[strcspn(path, "\n")] = '\0';
        if (rc == 0 && plan_add_host_path(p, path, 0, err) < 0)
            rc = -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = error_set(err, 0, "initramfs: %s --list %s failed", loader, agent_path);
    return rc;
}

/* modules.dep: "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko". */
static int modules_dep_lookup(FILE *dep, const char *name, char *line, size_t size)
{
    rewind(dep);
    size_t nlen = strlen(name);
    while (fgets(line, (int)size, dep)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        /* Compare the file name without directory and ".ko". */
        char *slash = memrchr(line, '/', (size_t)(colon - line));
        char *base = slash ? slash + 1 : line;
        if ((size_t)(colon - base) == nlen + 3 && strncmp(base, name, nlen) == 0 &&
            strncmp(base + nlen, ".ko", 3) == 0)
            return 0;
        /* modules.dep spells dashes and underscores as in the file name. */
        if ((size_t)(colon - base) == nlen + 3) {
            bool same = true;
            for (size_t i = 0; i < nlen && same; i++) {
                char a = base[i] == '-' ? '_' : base[i];
                char b = name[i] == '-' ? '_' : name[i];
                same = a == b;
            }
            if (same && strncmp(base + nlen, ".ko", 3) == 0)
                return 0;
        }
    }
    return -1;
}

/* Adds the module at relpath (relative to the modules directory) after its
 * dependencies: a depth-first post-order is a valid load order. */
static int plan_add_module_path(struct cpio_plan *p, FILE *dep, const struct vm_kernel *k,
                                const char *relpath, int depth, bool docker,
                                struct cordon_error *err)
{
    if (depth > 16)
        return error_set(err, ELOOP, "initramfs: module dependencies of %s", relpath);
    char guest[PATH_MAX];
    if (snprintf(guest, sizeof(guest), "cordon/lib/modules/%s/%s", k->version, relpath) >=
        (int)sizeof(guest))
        return error_set(err, ENAMETOOLONG, "initramfs: module %s", relpath);
    if (plan_has(p, guest))
        return 0;
    /* Find this module's own line to learn its dependencies. */
    char line[4096];
    rewind(dep);
    size_t rlen = strlen(relpath);
    bool found = false;
    while (fgets(line, sizeof(line), dep)) {
        if (strncmp(line, relpath, rlen) == 0 && line[rlen] == ':') {
            found = true;
            break;
        }
    }
    if (!found)
        return error_set(err, ENOENT, "initramfs: %s is not in modules.dep", relpath);
    char *deps = strdup(line + rlen + 1);
    if (!deps)
        return error_set(err, ENOMEM, "initramfs");
    char *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(deps, " \t\n", &save); tok && rc == 0;
         tok = strtok_r(NULL, " \t\n", &save))
        rc = plan_add_module_path(p, dep, k, tok, depth + 1, docker, err);
    free(deps);
    if (rc < 0)
        return -1;
    char host[PATH_MAX];
    snprintf(host, sizeof(host), "%s/%s", k->modules, relpath);
    struct stat st;
    if (stat(host, &st) < 0)
        return error_set(err, errno, "initramfs: module %s", host);
    if (plan_add_parents(p, guest, err) < 0 || plan_add(p, guest, S_IFREG | 0644, host, err) < 0)
        return -1;
    key_mix(p, &st.st_size, sizeof(st.st_size));
    char *list = p->net_pass ? p->net_list : docker ? p->docker_list : p->modules_list;
    size_t *len = p->net_pass ? &p->net_len : docker ? &p->docker_len : &p->modules_len;
    size_t size = p->net_pass ? sizeof(p->net_list)
                  : docker    ? sizeof(p->docker_list)
                              : sizeof(p->modules_list);
    int n = snprintf(list + *len, size - *len, "/%s\n", guest);
    if (n < 0 || (size_t)n >= size - *len)
        return error_set(err, E2BIG, "initramfs: module list too long");
    *len += (size_t)n;
    return 0;
}

static int plan_add_modules(struct cpio_plan *p, const struct vm_kernel *k,
                            struct cordon_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/modules.dep", k->modules);
    _cleanup_fclose_ FILE *dep = fopen(path, "re");
    if (!dep)
        return error_set(err, errno, "initramfs: %s", path);
    size_t nroot = ARRAY_SIZE(root_modules);
    for (size_t i = 0; i < nroot + ARRAY_SIZE(docker_modules); i++) {
        const char *name = i < nroot ? root_modules[i] : docker_modules[i - nroot];
        char line[4096];
        if (modules_dep_lookup(dep, name, line, sizeof(line)) < 0) {
            /* Built into this kernel: nothing to load. */
            log_debug("vm: module %s not in modules.dep (built in?)", name);
            continue;
        }
        *strchr(line, ':') = '\0';
        if (plan_add_module_path(p, dep, k, line, 0, i >= nroot, err) < 0)
            return -1;
    }
    p->net_pass = true;
    for (size_t i = 0; i < ARRAY_SIZE(net_modules); i++) {
        char line[4096];
        if (modules_dep_lookup(dep, net_modules[i], line, sizeof(line)) < 0)
            continue;
        *strchr(line, ':') = '\0';
        if (plan_add_module_path(p, dep, k, line, 0, false, err) < 0)
            return -1;
    }
    p->net_pass = false;
    return 0;
}

/* ---- writing the archive ---- */

static int write_all(int fd, const void *buf, size_t len)
{
    const char *b = buf;
    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_pad(int fd, size_t offset)
{
    static const char zeros[4] = {0};
    size_t pad = (4 - offset % 4) % 4;
    return pad ? write_all(fd, zeros, pad) : 0;
}

/* One newc header + name + data; *offset tracks the 4-byte alignment. */
static int cpio_write(int fd, size_t *offset, unsigned ino, const char *name, mode_t mode,
                      const void *data, size_t size)
{
    char hdr[160];
    size_t namesize = strlen(name) + 1;
    snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", ino,
             (unsigned)mode, 0u, 0u, 1u, 0u, size, 0u, 0u, 0u, 0u, namesize, 0u);
    if (write_all(fd, hdr, 110) < 0 || write_all(fd, name, namesize) < 0)
        return -1;
    *offset += 110 + namesize;
    if (write_pad(fd, *offset) < 0)
        return -1;
    *offset += (4 - *offset % 4) % 4;
    if (size && write_all(fd, data, size) < 0)
        return -1;
    *offset += size;
    if (write_pad(fd, *offset) < 0)
        return -1;
    *offset += (4 - *offset % 4) % 4;
    return 0;
}

static int cpio_write_file(int fd, size_t *offset, unsigned ino, const char *name, mode_t mode,
                           const char *host, struct cordon_error *err)
{
    _cleanup_close_ int src = open(host, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return error_set(err, errno, "initramfs: %s", host);
    struct stat st;
    if (fstat(src, &st) < 0)
        return error_set(err, errno, "initramfs: %s", host);
    _cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return error_set(err, ENOMEM, "initramfs: %s", host);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(src, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return error_set(err, n < 0 ? errno : EIO, "initramfs: reading %s", host);
        got += (size_t)n;
    }
    size_t nlen = strlen(name);
    if (nlen > 3 && strcmp(name + nlen - 3, ".ko") == 0)
        got = module_unsigned_len(buf, got);
    if (cpio_write(fd, offset, ino, name, mode, buf, got) < 0)
        return error_set(err, errno, "initramfs: writing");
    return 0;
}

static int cpio_write_plan(const struct cpio_plan *p, int fd, struct cordon_error *err)
{
    size_t offset = 0;
    unsigned ino = 1;
    for (size_t i = 0; i < p->count; i++, ino++) {
        const struct cpio_entry *e = &p->entries[i];
        int rc;
        if (S_ISREG(e->mode))
            rc = cpio_write_file(fd, &offset, ino, e->name, e->mode, e->data, err);
        else if (S_ISLNK(e->mode))
            rc = cpio_write(fd, &offset, ino, e->name, e->mode, e->data, strlen(e->data));
        else
            rc = cpio_write(fd, &offset, ino, e->name, e->mode, NULL, 0);
        if (rc < 0)
            return err->message[0] ? -1 : error_set(err, errno, "initramfs: writing");
    }
    if (cpio_write(fd, &offset, ino++, "cordon/modules", S_IFREG | 0644, p->modules_list,
                   p->modules_len) < 0 ||
        cpio_write(fd, &offset, ino++, "cordon/modules.docker", S_IFREG | 0644, p->docker_list,
                   p->docker_len) < 0 ||
        cpio_write(fd, &offset, ino++, "cordon/modules-net", S_IFREG | 0644, p->net_list,
                   p->net_len) < 0 ||
        cpio_write(fd, &offset, 0, "TRAILER!!!", 0, NULL, 0) < 0)
        return error_set(err, errno, "initramfs: writing");
    return 0;
}

static void plan_free(struct cpio_plan *p)
{
    for (size_t i = 0; i < p->count; i++) {
        free(p->entries[i].name);
        free(p->entries[i].data);
    }
    p->count = 0;
}

static int plan_build(struct cpio_plan *p, const struct vm_kernel *k, const char *agent_path,
                      struct cordon_error *err)
{
    static const char *const dirs[] = {"dev", "proc", "sys", "tmp",     "run",  "mnt", "cordon",
                                       "etc", "usr",  "var", "var/log", "home", "root"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (plan_add(p, dirs[i], S_IFDIR | 0755, NULL, err) < 0)
            return -1;
    }
    /* Docker's clients and daemon know the socket as /var/run/docker.sock. */
    if (plan_add(p, "var/run", S_IFLNK | 0777, "../run", err) < 0)
        return -1;
    /* The merged-/usr links (/bin -> usr/bin ...), as on the host. */
    static const char *const links[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
        struct stat st;
        char target[PATH_MAX];
        ssize_t n;
        if (lstat(links[i], &st) == 0 && S_ISLNK(st.st_mode) &&
            (n = readlink(links[i], target, sizeof(target) - 1)) > 0) {
            target[n] = '\0';
            if (plan_add(p, links[i], S_IFLNK | 0777, target, err) < 0)
                return -1;
        }
    }
    struct stat st;
    if (stat(agent_path, &st) < 0)
        return error_set(err, errno, "initramfs: %s", agent_path);
    if (plan_add(p, "init", S_IFREG | 0755, agent_path, err) < 0)
        return -1;
    key_mix(p, &st.st_size, sizeof(st.st_size));
    key_mix(p, &st.st_mtim, sizeof(st.st_mtim));
    key_mix(p, &st.st_ino, sizeof(st.st_ino));
    key_mix(p, k->version, strlen(k->version));
    /* The image's own format: modules stored without their signatures. */
    key_mix(p, "unsigned-modules,modules-net", 27);
    if (plan_add_libraries(p, agent_path, err) < 0 || plan_add_modules(p, k, err) < 0)
        return -1;
    return 0;
}

int vm_initramfs_get(const struct vm_kernel *k, const char *agent_path, char *out, size_t out_size,
                     struct cordon_error *err)
{
    struct cpio_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return error_set(err, ENOMEM, "initramfs");
    p->key = 14695981039346656037ULL;
    int rc = plan_build(p, k, agent_path, err);
    if (rc < 0)
        goto out;
    snprintf(out, out_size, "%s/initramfs-%016llx.cpio", k->cache_dir, (unsigned long long)p->key);
    if (access(out, R_OK) == 0) {
        log_debug("vm: initramfs %s (cached)", out);
        goto out;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = error_set(err, errno, "initramfs: creating %s", tmp);
        goto out;
    }
    rc = cpio_write_plan(p, fd, err);
    if (rc == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
        rc = error_set(err, errno, "initramfs: %s", tmp);
    close(fd);
    if (rc == 0 && rename(tmp, out) < 0)
        rc = error_set(err, errno, "initramfs: rename to %s", out);
    if (rc < 0)
        unlink(tmp);
    else
        log_debug("vm: built initramfs %s (%zu entries)", out, p->count);
out:
    plan_free(p);
    free(p);
    return rc;
}
