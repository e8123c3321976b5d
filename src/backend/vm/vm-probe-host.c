/* The vm backend's part of the host probe (backend/probe.h): QEMU, the
 * guest kernel, and KVM as vm_start decides it (vm_accel_decide: /dev/kvm
 * usable and no cached failure of an earlier KVM boot). Host context. */
#include "backend/probe.h"
#include "backend/vm/vm-protect.h"
#include "backend/vm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void vm_host_probe(const struct cordon_config *cfg, struct probe_report *r, struct probe_verdict *v)
{
    (void)cfg;
    *v = (struct probe_verdict){.strength = "kernel-boundary"};
    struct cordon_error err = {0}, kerr = {0};
    bool qemu = vm_qemu_find(&err) == 0;
    if (qemu)
        probe_add(r, "qemu", PROBE_PASS, NULL, "qemu-system-x86_64 is in PATH");
    else
        probe_add(r, "qemu", PROBE_FAIL, "sudo apt-get install qemu-system-x86", "%s", err.message);
    struct vm_kernel k;
    bool kernel = vm_kernel_find(&k, false, &kerr) == 0;
    if (kernel)
        probe_add(r, "guest-kernel", PROBE_PASS, NULL, "%s (%s)", k.vmlinuz, k.version);
    else
        probe_add(r, "guest-kernel", PROBE_FAIL,
                  "sudo scripts/vm-kernel.sh (fetches Debian's kernel once; the first vm "
                  "session also does it)",
                  "%s", kerr.message);

    /* KVM: the device, then the same decision vm_start makes. */
    struct stat st;
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    int kvm_errno = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    char why[PATH_MAX * 2 + 512] = "";
    const char *accel = kernel ? vm_accel_decide(&k, why, sizeof(why)) : kvm_errno ? "tcg" : "kvm";
    snprintf(v->detail, sizeof(v->detail), "%s", accel);
    if (kvm_errno == ENOENT)
        probe_add(r, "kvm", PROBE_WARN,
                  "enable virtualisation in the firmware (or nested virtualisation for a VM) and "
                  "sudo modprobe kvm_intel (or kvm_amd); in a container: --device /dev/kvm",
                  "/dev/kvm does not exist: the vm backend runs under TCG (emulated, a few "
                  "seconds to start)");
    else if (kvm_errno)
        probe_add(r, "kvm", PROBE_WARN,
                  stat("/dev/kvm", &st) == 0 && st.st_gid != 0
                      ? "sudo usermod -aG kvm $USER (then log in again)"
                      : "make /dev/kvm accessible to this user (group kvm, mode 0660)",
                  "/dev/kvm: %s: the vm backend runs under TCG", strerror(kvm_errno));
    else if (strcmp(accel, "tcg") == 0) {
        /* vm_accel_decide's reason ends with how to retry KVM */
        char *retry = strstr(why, "; to retry KVM: ");
        char fix[512] = "";
        if (retry) {
            snprintf(fix, sizeof(fix), "to retry KVM: %s", retry + strlen("; to retry KVM: "));
            *retry = '\0';
        }
        probe_add(r, "kvm", PROBE_WARN, fix, "/dev/kvm is usable but the vm backend uses TCG: %s",
                  why);
    } else
        probe_add(r, "kvm", PROBE_PASS, NULL, "%s: the vm backend uses KVM",
                  why[0] ? why : "/dev/kvm opens read-write");
    /* QEMU runs in a mount namespace of its own, where the protected paths
     * are read-only binds (vm-protect.h): without it the vm backend refuses
     * to start rather than leave them writable to a guest root. */
    const char *step = "";
    int pe = vm_protect_probe(&step);
    if (pe < 0) {
        probe_add(r, "qemu-mountns", PROBE_FAIL,
                  geteuid() == 0
                      ? "as root cordon needs CAP_SYS_ADMIN for QEMU's mount namespace: in a "
                        "container, run cordon as a non-root user with user namespaces allowed, "
                        "or see docs/ci.md"
                      : "allow unprivileged user namespaces (the userns row's fix)",
                  "%s: %s (the host-side protected paths of the vm backend need it)", step,
                  strerror(-pe));
        if (qemu && kernel) {
            snprintf(v->why, sizeof(v->why),
                     "QEMU cannot get the mount namespace that keeps the protected paths "
                     "read-only on the host (%s: %s)",
                     step, strerror(-pe));
            return;
        }
    } else {
        probe_add(r, "qemu-mountns", PROBE_PASS, NULL,
                  "QEMU can run in a mount namespace of its own with read-only binds (%s)",
                  geteuid() == 0 ? "root: CLONE_NEWNS" : "a user namespace of the caller's ids");
    }
    if (!qemu || !kernel) {
        snprintf(v->why, sizeof(v->why), "%s", qemu ? kerr.message : err.message);
        probe_strip_hint(v->why);
        return;
    }
    v->works = true;
    snprintf(v->why, sizeof(v->why), "QEMU and the guest kernel are here; accelerator %s (%.900s)",
             accel, why);
}
