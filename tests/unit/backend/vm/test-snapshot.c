/* Unit tests of the vm snapshot's key and of what a restore refuses
 * (backend/vm/vm-snapshot.c), without QEMU: the key must ignore what is
 * only the session's (its state directory, the shares' host paths and
 * modes, the Docker disk's path, the QMP and -incoming options) and change
 * with everything the saved guest depends on (memory, vCPUs, accelerator,
 * the device set, kernel, initramfs); a file that is not a complete
 * snapshot of this key, this user's, 0600, is refused and removed. Any
 * context (a scratch directory under TMPDIR). */
#include "backend/vm/vm-snapshot.h"
#include "backend/vm/vm.h"
#include "tap.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[PATH_MAX / 2];

static void write_file(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd >= 0) {
        if (write(fd, content, strlen(content)) < 0)
            perror("write");
        fchmod(fd, mode);
        close(fd);
    }
}

static void key_invariants(void)
{
    char kernel[PATH_MAX], initrd[PATH_MAX];
    snprintf(kernel, sizeof(kernel), "%s/vmlinuz", scratch);
    snprintf(initrd, sizeof(initrd), "%s/initrd", scratch);
    write_file(kernel, "kernel", 0644);
    write_file(initrd, "initrd", 0644);
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {.memory_mib = 512};
    struct vm_share a[] = {
        {"/usr", "/usr", true}, {"/s1/etc", "/etc", true}, {"/w1", "/w1", false}};
    struct vm_share b[] = {{"/usr", "/usr", true}, {"/s2/etc", "/etc", true}, {"/w2", "/w2", true}};
    struct vm_qemu_input in = {.accel = "tcg",
                               .dir = "/state/one/vm",
                               .vmlinuz = kernel,
                               .initrd = initrd,
                               .limits = &limits,
                               .tsc_khz = 2000000,
                               .net = &net,
                               .shares = a,
                               .nshares = 3,
                               .docker_disk = "/state/one/docker.img"};
    uint64_t base = vm_snapshot_key(&in, "/bin/sh");
    struct vm_qemu_input other = in;
    other.dir = "/state/two/vm";
    other.shares = b;
    other.docker_disk = "/state/two/docker.img";
    other.qmp = true;
    other.tsc_khz = 2100000;
    ok(vm_snapshot_key(&other, "/bin/sh") == base,
       "another session's paths, share modes, QMP and TSC rate: the same key");
    other.incoming = true;
    ok(vm_snapshot_key(&other, "/bin/sh") == base, "-incoming is not in the key");
    other.ram = VM_RAM_FILE_SHARED;
    other.paused = true;
    ok(vm_snapshot_key(&other, "/bin/sh") == base,
       "the memory's file, shared (saving) or private (restoring), is not in the key");
    other.ram = VM_RAM_FILE_PRIVATE;
    ok(vm_snapshot_key(&other, "/bin/sh") == base, "... either way");

    struct sandbox_limits more = {.memory_mib = 1024};
    other = in;
    other.limits = &more;
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "another memory size: another key");
    struct sandbox_limits cpus = {.memory_mib = 512, .cpus = 2};
    other.limits = &cpus;
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "more vCPUs: another key");
    other = in;
    other.accel = "kvm";
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "KVM: another key");
    other = in;
    other.nshares = 2;
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "one share fewer: another key");
    other = in;
    other.docker_disk = NULL;
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "no Docker disk: another key");
    struct net_policy allow = {.mode = NET_MODE_ALLOWLIST};
    struct vm_net net2;
    vm_net_init(&net2, &allow);
    other = in;
    other.net = &net2;
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "the allowlist's ports: another key");
    other = in;
    other.append_extra = "debug";
    ok(vm_snapshot_key(&other, "/bin/sh") != base, "extra kernel parameters: another key");
    ok(vm_snapshot_key(&in, "/bin/ls") != base, "another QEMU binary: another key");
    write_file(initrd, "initrd, rebuilt", 0644);
    ok(vm_snapshot_key(&in, "/bin/sh") != base, "a rebuilt initramfs: another key");
}

static void refused(void)
{
    char path[PATH_MAX];
    struct cordon_error err;
    ok(vm_snapshot_path(scratch, 0x1234, path, sizeof(path), &err) == 0, "the path is made");
    ok(strstr(path, "/snapshots/vm-0000000000001234.snap") != NULL, "... named by its key");
    struct stat st;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/snapshots", scratch);
    ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the snapshots directory is 0700");

    ok(vm_snapshot_open(path, 0x1234, &err) < 0, "no file: refused");

    char big[8192];
    memset(big, 'A', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    write_file(path, big, 0600);
    ok(vm_snapshot_open(path, 0x1234, &err) < 0, "no header (an interrupted save): refused");
    ok(strstr(err.message, "no snapshot header") != NULL, "... saying so");
    ok(access(path, F_OK) < 0, "... and removed");

    write_file(path, big, 0644);
    ok(vm_snapshot_open(path, 0x1234, &err) < 0, "mode 0644: refused");
    ok(strstr(err.message, "mode 0600") != NULL, "... saying so");

    write_file(path, "short", 0600);
    ok(vm_snapshot_open(path, 0x1234, &err) < 0, "shorter than a header: refused");
    ok(strstr(err.message, "shorter than its header") != NULL, "... saying so");

    char link[PATH_MAX];
    snprintf(link, sizeof(link), "%s/snapshots/vm-0000000000005678.snap", scratch);
    write_file(path, big, 0600);
    if (symlink(path, link) == 0) {
        ok(vm_snapshot_open(link, 0x5678, &err) < 0, "a symlink: refused (O_NOFOLLOW)");
        unlink(link);
    }
    unlink(path);
}

/* A memory file like a guest's: sparse, some pages of data, a last page
 * cut short (size not a multiple of 4096). */
static int memory_fd(void)
{
    int fd = memfd_create("test-memory", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 9 * 4096 + 100) < 0)
        return -1;
    char page[4096];
    memset(page, 'p', sizeof(page));
    if (pwrite(fd, page, sizeof(page), 0) != 4096 ||
        pwrite(fd, page, sizeof(page), 3 * 4096) != 4096 ||
        pwrite(fd, "tail", 4, 9 * 4096 + 90) != 4)
        return -1;
    return fd;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The pair vm_snapshot_save writes (here from a stream in memory): what a
 * restore accepts, and what it refuses and removes or leaves alone. */
static void memory_pairs(void)
{
    char path[PATH_MAX], ram[PATH_MAX], cmd[5 * PATH_MAX];
    struct cordon_error err;
    const char stream[] = "QEVM device state only";
    uint64_t key = 0xabcd;
    int mem = memory_fd();
    ok(mem >= 0, "a guest memory file to save");
    ok(vm_snapshot_path(scratch, key, path, sizeof(path), &err) == 0, "the pair's path");
    snprintf(ram, sizeof(ram), "%.*s.ram", (int)(strlen(path) - 5), path);

    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "a pair is stored");
    struct stat st;
    ok(stat(ram, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid(),
       "... its memory file beside it, this user's, 0600");
    ok(st.st_size == 9 * 4096 + 100, "... as long as the memory");
    snprintf(cmd, sizeof(cmd),
             "ls '%s/snapshots' | grep -c '\\.X\\|\\.ram\\.\\|\\.snap\\.' >/dev/null", scratch);
    ok(system(cmd) != 0, "... and no temp file left");
    int fd = vm_snapshot_open(path, key, &err);
    ok(fd >= 0, "a stored pair opens, both checksums match");
    if (fd >= 0)
        close(fd);
    int ram_fd = -1;
    fd = vm_snapshot_open_unchecked(path, key, &ram_fd, &err);
    ok(fd >= 0 && ram_fd >= 0, "... unchecked, with its memory file");
    ok(fd >= 0 && vm_snapshot_verify(fd, ram_fd, path, &err) == 0, "... whose checksums then pass");
    if (fd >= 0)
        close(fd);
    if (ram_fd >= 0)
        close(ram_fd);

    /* Zeros written where the file had a hole: the same memory. */
    char zeros[4096] = {0};
    int w = open(ram, O_WRONLY | O_CLOEXEC);
    ok(w >= 0 && pwrite(w, zeros, sizeof(zeros), 5 * 4096) == 4096, "a hole filled with zeros");
    if (w >= 0)
        close(w);
    fd = vm_snapshot_open(path, key, &err);
    ok(fd >= 0, "... is the same memory: the pair still opens");
    if (fd >= 0)
        close(fd);

    /* One byte changed in the last, short page. */
    w = open(ram, O_WRONLY | O_CLOEXEC);
    ok(w >= 0 && pwrite(w, "T", 1, 9 * 4096 + 90) == 1, "a byte of the last page changed");
    if (w >= 0)
        close(w);
    ok(vm_snapshot_open(path, key, &err) < 0 && strstr(err.message, "does not match its checksum"),
       "... is damage: refused, saying so");
    ok(!exists(path) && !exists(ram), "... and both files removed");

    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    chmod(ram, 0644);
    ok(vm_snapshot_open(path, key, &err) < 0 && strstr(err.message, "mode 0600"),
       "a memory file readable by others: refused, saying so");
    ok(!exists(path) && !exists(ram), "... and both removed");

    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    unlink(ram);
    ok(vm_snapshot_open(path, key, &err) < 0 && strstr(err.message, "memory file is missing"),
       "no memory file: refused, saying so");
    ok(!exists(path), "... and the snapshot removed");

    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    char other[PATH_MAX];
    snprintf(other, sizeof(other), "%s/elsewhere", scratch);
    snprintf(cmd, sizeof(cmd), "mv '%s' '%s' && ln -s '%s' '%s'", ram, other, other, ram);
    ok(system(cmd) == 0, "the memory file replaced by a symlink to it");
    ok(vm_snapshot_open(path, key, &err) < 0, "... refused (O_NOFOLLOW)");
    unlink(other);
    unlink(ram);

    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    ok(truncate(ram, 4096) == 0, "the memory file truncated");
    ok(vm_snapshot_open(path, key, &err) < 0 && strstr(err.message, "truncated"),
       "... refused, saying so");

    /* Another save's memory file (a copy: another inode) beside this
     * snapshot, as between a concurrent save's two renames: refused, and
     * left for that save. */
    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s.copy' && mv '%s.copy' '%s'", ram, ram, ram, ram);
    ok(system(cmd) == 0, "the memory file replaced by a copy (another inode)");
    ok(vm_snapshot_open(path, key, &err) < 0 && strstr(err.message, "another save's"),
       "... refused, saying so");
    ok(exists(path) && exists(ram), "... and both left in place");

    /* A discard removes only the files it opened: a save that replaced
     * them meanwhile keeps its own. */
    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0, "stored again");
    ram_fd = -1;
    fd = vm_snapshot_open_unchecked(path, key, &ram_fd, &err);
    ok(fd >= 0, "opened for a restore");
    ok(vm_snapshot_store(path, key, stream, sizeof(stream), mem, &err) == 0,
       "... while another session stores a new pair");
    if (fd >= 0) {
        vm_snapshot_discard_fd(fd, path);
        close(fd);
    }
    if (ram_fd >= 0)
        close(ram_fd);
    fd = vm_snapshot_open(path, key, &err);
    ok(fd >= 0, "discarding the old one left the new pair usable");
    if (fd >= 0) {
        vm_snapshot_discard_fd(fd, path);
        close(fd);
    }
    ok(!exists(path) && !exists(ram), "... and discarding that one removes both");
    close(mem);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof(scratch), "%s/test-vm-snapshot.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    key_invariants();
    refused();
    memory_pairs();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", scratch);
    return tap_done();
}
