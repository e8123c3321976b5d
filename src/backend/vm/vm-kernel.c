/* Locating the guest kernel (Debian's, unpacked by scripts/vm-kernel.sh) and
 * remembering which accelerator works on this host. Host context
 * (supervisor). */
#include "backend/vm/vm.h"
#include "util/fs.h"
#include "config.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* Candidate cache directories, most specific first: $CORDON_VM_DIR, the
 * user's cache, the system cache (filled by bootstrap as root). */
static size_t cache_candidates(char dirs[3][512])
{
    size_t n = 0;
    const char *env = getenv("CORDON_VM_DIR");
    if (env && env[0] == '/') {
        snprintf(dirs[n++], 512, "%s", env);
        return n;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (getuid() != 0) {
        if (xdg && xdg[0] == '/')
            snprintf(dirs[n++], 512, "%s/cordon/vm", xdg);
        else if (home && home[0] == '/')
            snprintf(dirs[n++], 512, "%s/.cache/cordon/vm", home);
    }
    snprintf(dirs[n++], 512, "/var/cache/cordon/vm");
    return n;
}

static bool kernel_in(const char *dir, struct vm_kernel *k)
{
    char link[600];
    snprintf(link, sizeof(link), "%s/current", dir);
    char target[128];
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    if (strchr(target, '/'))
        return false;
    snprintf(k->version, sizeof(k->version), "%s", target);
    snprintf(k->dir, sizeof(k->dir), "%s/%s", dir, target);
    /* The uncompressed ELF (booted through its PVH entry) when the fetch
     * script could extract it: decompressing under TCG costs a second. */
    snprintf(k->vmlinuz, sizeof(k->vmlinuz), "%s/vmlinux", k->dir);
    if (access(k->vmlinuz, R_OK) != 0)
        snprintf(k->vmlinuz, sizeof(k->vmlinuz), "%s/vmlinuz", k->dir);
    snprintf(k->modules, sizeof(k->modules), "%s/modules/%s", k->dir, target);
    return access(k->vmlinuz, R_OK) == 0 && access(k->modules, R_OK) == 0;
}

/* scripts/vm-kernel.sh of the source tree (cordon run from its build
 * directory) or the installed copy. */
static int find_kernel_script(char *out, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        snprintf(out, size, "%s/../scripts/vm-kernel.sh", dir);
        if (access(out, X_OK) == 0)
            return 0;
    }
    snprintf(out, size, "%s/vm-kernel.sh", CORDON_LIBEXEC_DIR);
    return access(out, X_OK) == 0 ? 0 : -1;
}

static int run_kernel_script(const char *script, struct cordon_error *err)
{
    log_warn("vm: no guest kernel yet; fetching Debian's with %s", script);
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "fork");
    if (pid == 0) {
        /* Its progress goes to our stderr; stdout (the directory) is not
         * ours to print. */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 1);
        execl(script, script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return error_set(
            err, 0, "vm: fetching the guest kernel failed (%s); see the messages above", script);
    return 0;
}

int vm_kernel_find(struct vm_kernel *k, bool fetch, struct cordon_error *err)
{
    *k = (struct vm_kernel){0};
    char dirs[3][512];
    size_t n = cache_candidates(dirs);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        found = kernel_in(dirs[i], k);
    if (!found && fetch) {
        char script[PATH_MAX];
        if (find_kernel_script(script, sizeof(script)) < 0)
            return error_set(err, ENOENT,
                             "vm: no guest kernel in %s and no vm-kernel.sh to "
                             "fetch one; run scripts/vm-kernel.sh",
                             dirs[0]);
        if (run_kernel_script(script, err) < 0)
            return -1;
        for (size_t i = 0; i < n && !found; i++)
            found = kernel_in(dirs[i], k);
    }
    if (!found) {
        error_set(err, ENOENT, "vm: no guest kernel in %s; run scripts/vm-kernel.sh", dirs[0]);
        return error_hint_doctor(err);
    }
    /* Images are written where we may write: the kernel's directory, else
     * the first candidate (the user's cache). */
    snprintf(k->cache_dir, sizeof(k->cache_dir), "%s", k->dir);
    if (access(k->cache_dir, W_OK) != 0) {
        if (snprintf(k->cache_dir, sizeof(k->cache_dir), "%s/%s", dirs[0], k->version) >=
                (int)sizeof(k->cache_dir) ||
            fs_mkdir_p(k->cache_dir, 0700) < 0)
            return error_set(err, errno, "vm: creating %s", k->cache_dir);
    }
    return 0;
}

/* The verdict file is keyed on the host kernel: a PVM host rejecting stock
 * guests stays so until the host kernel changes. */
void vm_accel_verdict_path(const struct vm_kernel *k, char *out, size_t size)
{
    struct utsname u;
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "unknown");
    snprintf(out, size, "%s/kvm-broken-%s", k->cache_dir, u.release);
}

const char *vm_accel_decide(const struct vm_kernel *k, char *why, size_t size)
{
    const char *forced = getenv("CORDON_VM_ACCEL");
    if (forced && (strcmp(forced, "kvm") == 0 || strcmp(forced, "tcg") == 0)) {
        snprintf(why, size, "CORDON_VM_ACCEL=%s", forced);
        return forced;
    }
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, size, "/dev/kvm: %s", strerror(errno));
        return "tcg";
    }
    close(fd);
    char path[PATH_MAX];
    vm_accel_verdict_path(k, path, sizeof(path));
    _cleanup_close_ int vfd = open(path, O_RDONLY | O_CLOEXEC);
    if (vfd >= 0) {
        char was[256] = "";
        ssize_t n = read(vfd, was, sizeof(was) - 1);
        was[n > 0 ? n : 0] = '\0';
        was[strcspn(was, "\n")] = '\0';
        snprintf(why, size,
                 "KVM failed to boot a guest on this host before (%s, recorded in %s); to retry "
                 "KVM: rm %s, or CORDON_VM_ACCEL=kvm for one session",
                 was[0] ? was : "no reason recorded", path, path);
        return "tcg";
    }
    snprintf(why, size, "/dev/kvm opens read-write and no earlier KVM boot failed");
    return "kvm";
}

const char *vm_accel_choose(const struct vm_kernel *k)
{
    char why[PATH_MAX * 2 + 512];
    const char *accel = vm_accel_decide(k, why, sizeof(why));
    log_debug("vm: using %s: %s", accel, why);
    return accel;
}

void vm_accel_mark_kvm_broken(const struct vm_kernel *k, const char *why)
{
    char path[PATH_MAX];
    vm_accel_verdict_path(k, path, sizeof(path));
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, why, strlen(why));
        (void)w;
    }
}
