/* The vm backend's initramfs builder: a cpio newc archive a kernel can
 * unpack, holding the agent as /init, its libraries with their symlink
 * chains, the modules in dependency order, and cached by content. Host
 * context; builds from a fake kernel tree in a temporary directory. */
#include "backend/vm/vm.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct entry {
    char name[PATH_MAX];
    unsigned mode;
    size_t size;
    const char *data;
};

static unsigned long hex8(const char *p)
{
    char buf[9];
    memcpy(buf, p, 8);
    buf[8] = '\0';
    return strtoul(buf, NULL, 16);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Finds name in the archive; returns false when absent or malformed. */
static bool cpio_find(const char *archive, size_t len, const char *name, struct entry *out,
                      bool *trailer_seen)
{
    size_t off = 0;
    while (off + 110 <= len) {
        const char *h = archive + off;
        if (memcmp(h, "070701", 6) != 0)
            return false;
        unsigned mode = (unsigned)hex8(h + 14);
        size_t size = hex8(h + 54), namesize = hex8(h + 94);
        const char *n = h + 110;
        size_t data = (off + 110 + namesize + 3) & ~(size_t)3;
        if (data + size > len)
            return false;
        if (strcmp(n, "TRAILER!!!") == 0) {
            *trailer_seen = true;
            return false;
        }
        if (strcmp(n, name) == 0) {
            snprintf(out->name, sizeof(out->name), "%s", n);
            out->mode = mode;
            out->size = size;
            out->data = archive + data;
            return true;
        }
        off = (data + size + 3) & ~(size_t)3;
    }
    return false;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    char tmp[] = "/tmp/cordon-initramfs-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    struct vm_kernel k = {0};
    snprintf(k.version, sizeof(k.version), "9.9.9-test");
    snprintf(k.modules, sizeof(k.modules), "%s/modules", tmp);
    snprintf(k.cache_dir, sizeof(k.cache_dir), "%s/cache", tmp);
    char path[PATH_MAX];
    mkdir(k.modules, 0755);
    mkdir(k.cache_dir, 0755);
    snprintf(path, sizeof(path), "%s/kernel", k.modules);
    mkdir(path, 0755);
    /* virtio_console needs virtio, which needs virtio_ring; 9p needs 9pnet. */
    static const char *const mods[] = {
        "virtio_ring", "virtio",     "virtio_console", "virtio_mmio", "9pnet",  "9pnet_virtio",
        "9p",          "virtio_blk", "jbd2",           "ext4",        "overlay"};
    for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
        snprintf(path, sizeof(path), "%s/kernel/%s.ko", k.modules, mods[i]);
        write_file(path, mods[i]);
    }
    snprintf(path, sizeof(path), "%s/modules.dep", k.modules);
    write_file(path, "kernel/virtio_ring.ko:\n"
                     "kernel/virtio.ko: kernel/virtio_ring.ko\n"
                     "kernel/virtio_console.ko: kernel/virtio.ko kernel/virtio_ring.ko\n"
                     "kernel/virtio_mmio.ko: kernel/virtio.ko kernel/virtio_ring.ko\n"
                     "kernel/9pnet.ko:\n"
                     "kernel/9pnet_virtio.ko: kernel/9pnet.ko kernel/virtio.ko\n"
                     "kernel/9p.ko: kernel/9pnet.ko\n"
                     "kernel/virtio_blk.ko: kernel/virtio.ko kernel/virtio_ring.ko\n"
                     "kernel/jbd2.ko:\n"
                     "kernel/ext4.ko: kernel/jbd2.ko\n"
                     "kernel/overlay.ko:\n");
    /* The agent: a copy of a dynamically linked system binary. */
    char agent[PATH_MAX];
    snprintf(agent, sizeof(agent), "%s/agent", tmp);
    size_t agent_len = 0;
    char *agent_bytes = slurp("/usr/bin/true", &agent_len);
    ok(agent_bytes != NULL, "read /usr/bin/true as the agent");
    FILE *f = fopen(agent, "wb");
    fwrite(agent_bytes, 1, agent_len, f);
    fclose(f);
    chmod(agent, 0755);

    struct cordon_error err = {0};
    char image[PATH_MAX], again[PATH_MAX], changed[PATH_MAX];
    int rc = vm_initramfs_get(&k, agent, image, sizeof(image), &err);
    is_int(rc, 0, "builds the initramfs (%s)", err.message);
    size_t len = 0;
    char *archive = slurp(image, &len);
    ok(archive && len % 4 == 0, "the archive exists and is 4-byte aligned");

    struct entry e;
    bool trailer = false;
    ok(cpio_find(archive, len, "init", &e, &trailer), "/init is in the archive");
    is_int(e.size, (long long)agent_len, "/init has the agent's size");
    ok(e.size == agent_len && memcmp(e.data, agent_bytes, agent_len) == 0,
       "/init has the agent's bytes");
    is_int(e.mode & 0170000, 0100000, "/init is a regular file");
    ok(e.mode & 0100, "/init is executable");

    ok(cpio_find(archive, len, "lib64", &e, &trailer) && (e.mode & 0170000) == 0120000,
       "the /lib64 merged-usr link is kept as a symlink");
    bool libc = cpio_find(archive, len, "usr/lib/x86_64-linux-gnu/libc.so.6", &e, &trailer) ||
                cpio_find(archive, len, "lib/x86_64-linux-gnu/libc.so.6", &e, &trailer);
    ok(libc, "libc is carried at its real path");
    ok(cpio_find(archive, len, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", &e, &trailer) ||
           cpio_find(archive, len, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", &e, &trailer),
       "the dynamic loader is carried");

    ok(cpio_find(archive, len, "cordon/modules", &e, &trailer), "the module list is there");
    char list[4096] = "";
    if (e.size < sizeof(list))
        memcpy(list, e.data, e.size);
    const char *ring = strstr(list, "/virtio_ring.ko");
    const char *virtio = strstr(list, "/virtio.ko");
    const char *console = strstr(list, "/virtio_console.ko");
    const char *p9net = strstr(list, "/9pnet.ko");
    const char *p9 = strstr(list, "/9p.ko");
    ok(ring && virtio && console && ring < virtio && virtio < console,
       "virtio_ring, virtio, virtio_console load in dependency order");
    ok(p9net && p9 && p9net < p9, "9pnet loads before 9p");
    ok(strstr(list, "/cordon/lib/modules/9.9.9-test/kernel/virtio.ko\n") != NULL,
       "modules are listed at their guest paths");
    int count = 0;
    for (const char *s = list; (s = strstr(s, "/virtio.ko")); s++)
        count++;
    is_int(count, 1, "a shared dependency is listed once");
    ok(cpio_find(archive, len, "cordon/lib/modules/9.9.9-test/kernel/9p.ko", &e, &trailer) &&
           e.size == 2 && memcmp(e.data, "9p", 2) == 0,
       "module files carry their contents");
    ok(strstr(list, "/ext4.ko") == NULL && strstr(list, "/virtio_blk.ko") == NULL,
       "Docker's modules are not in the boot's list");
    ok(cpio_find(archive, len, "cordon/modules.docker", &e, &trailer), "Docker's module list");
    char dlist[4096] = "";
    if (e.size < sizeof(dlist))
        memcpy(dlist, e.data, e.size);
    const char *jbd2 = strstr(dlist, "/jbd2.ko"), *ext4 = strstr(dlist, "/ext4.ko");
    ok(strstr(dlist, "/virtio_blk.ko\n") && strstr(dlist, "/overlay.ko\n") && jbd2 && ext4 &&
           jbd2 < ext4,
       "Docker's list: virtio_blk, overlay, jbd2 before ext4 (%s)", dlist);
    ok(strstr(dlist, "/virtio.ko") == NULL, "a dependency the boot loads is not listed again");
    ok(cpio_find(archive, len, "var/run", &e, &trailer) && (e.mode & 0170000) == 0120000 &&
           e.size == 6 && memcmp(e.data, "../run", 6) == 0,
       "/var/run links to /run (Docker's socket path)");
    trailer = false;
    cpio_find(archive, len, "no-such-entry", &e, &trailer);
    ok(trailer, "the archive ends with a TRAILER!!! entry");

    rc = vm_initramfs_get(&k, agent, again, sizeof(again), &err);
    ok(rc == 0 && strcmp(image, again) == 0, "unchanged inputs reuse the cached image");
    struct timespec later[2] = {{0, UTIME_OMIT}, {time(NULL) + 10, 0}};
    utimensat(AT_FDCWD, agent, later, 0);
    rc = vm_initramfs_get(&k, agent, changed, sizeof(changed), &err);
    ok(rc == 0 && strcmp(image, changed) != 0, "a changed agent gives a new image");

    snprintf(path, sizeof(path), "%s/modules.dep", k.modules);
    write_file(path, "kernel/other.ko:\n");
    rc = vm_initramfs_get(&k, agent, changed, sizeof(changed), &err);
    ok(rc == 0, "a kernel without these modules (built in) still gives an image");

    /* A static agent (the release build's) needs no loader or libraries. */
    if (access("/sbin/ldconfig", R_OK) == 0) {
        size_t slen = 0;
        char *sbytes = slurp("/sbin/ldconfig", &slen);
        snprintf(agent, sizeof(agent), "%s/static-agent", tmp);
        f = fopen(agent, "wb");
        if (f && sbytes) {
            fwrite(sbytes, 1, slen, f);
            fclose(f);
        }
        chmod(agent, 0755);
        free(sbytes);
        char static_image[PATH_MAX];
        rc = vm_initramfs_get(&k, agent, static_image, sizeof(static_image), &err);
        is_int(rc, 0, "builds an initramfs around a static agent (%s)", err.message);
        size_t slen2 = 0;
        char *sarchive = rc == 0 ? slurp(static_image, &slen2) : NULL;
        ok(sarchive && cpio_find(sarchive, slen2, "init", &e, &trailer) && e.size == slen,
           "the static agent is /init");
        ok(sarchive &&
               !cpio_find(sarchive, slen2, "usr/lib/x86_64-linux-gnu/libc.so.6", &e, &trailer),
           "no libc is carried for a static agent");
        free(sarchive);
    } else {
        tap_skip("no static binary to stand in for the agent", "static agent");
    }

    free(archive);
    free(agent_bytes);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmp);
    return tap_done();
}
