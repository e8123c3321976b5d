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
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", scratch);
    return tap_done();
}
