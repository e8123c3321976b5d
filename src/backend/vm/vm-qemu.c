/* The QEMU command line of one vm boot (vm-qemu.h): microvm with
 * virtio-mmio devices, QEMU's own seccomp sandbox, the guest kernel's
 * parameters, the three chardev sockets, the network's ports, the 9p
 * shares and the Docker disk. A pure builder: nothing here opens, spawns or
 * reads anything but /proc/cpuinfo (vm_qemu_host_tsc_khz). Host context. */
#include "backend/vm/vm-qemu.h"
#include "backend/vm/vm.h"
#include "util/cleanup.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const vm_sock_names[SOCK_COUNT] = {"ch", "con", "err"};

static void arg_add(struct vm_qemu_argv *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void arg_add(struct vm_qemu_argv *b, const char *fmt, ...)
{
    if (b->n + 1 >= VM_MAX_ARGS) {
        b->failed = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&b->args[b->n], fmt, ap) < 0)
        b->failed = true;
    else
        b->n++;
    va_end(ap);
}

/* A host path as the value of a QEMU option list ("path=...,readonly=on"):
 * a comma there would end the value and start an option of the path's
 * choosing (",path=/" exporting the host's root), so each is doubled, as
 * QEMU reads a literal comma. The copy is kept in b->esc until free. */
static const char *opt_value(struct vm_qemu_argv *b, const char *value)
{
    if (!strchr(value, ','))
        return value;
    if (b->nesc >= VM_MAX_ESCAPED) {
        b->failed = true;
        return "";
    }
    size_t len = strlen(value), commas = 0;
    for (const char *c = value; *c; c++)
        commas += *c == ',';
    char *out = malloc(len + commas + 1);
    if (!out) {
        b->failed = true;
        return "";
    }
    char *o = out;
    for (const char *c = value; *c; c++) {
        *o++ = *c;
        if (*c == ',')
            *o++ = ',';
    }
    *o = '\0';
    b->esc[b->nesc++] = out;
    return out;
}

void vm_qemu_argv_free(struct vm_qemu_argv *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->args[i]);
    b->n = 0;
    for (size_t i = 0; i < b->nesc; i++)
        free(b->esc[i]);
    b->nesc = 0;
}

long vm_qemu_memory_mib(const struct sandbox_limits *limits)
{
    long mib = limits->memory_mib;
    return mib > 0 ? mib : VM_DEFAULT_MEMORY_MIB;
}

/* vCPUs from the CPU limit; without one, a single vCPU under TCG (each is
 * a host thread spinning through translated code: a second one slows a
 * boot on a small host) and two under KVM. */
long vm_qemu_cpus(const struct sandbox_limits *limits, const char *accel)
{
    double c = limits->cpus;
    long whole = (long)c;
    if (c > 0)
        return whole + ((double)whole < c);
    return strcmp(accel, "kvm") == 0 ? 2 : 1;
}

/* Under TCG the guest's TSC runs at the host's rate; telling the guest that
 * rate skips its calibration (see the kernel parameters below) and keeps its
 * clock in step with the host's. */
long vm_qemu_host_tsc_khz(void)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
    char line[256];
    double mhz = 0;
    while (f && fgets(line, sizeof(line), f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "cpu MHz", 7) == 0 && colon && sscanf(colon + 1, "%lf", &mhz) == 1)
            break;
    }
    return mhz > 100 ? (long)(mhz * 1000) : 2000000;
}

/* deny and allowlist: no network device at all (allowlist connections
 * travel over virtio-serial ports); open: virtio-net to passt on fd 3
 * (see vm-launch.c vm_launch_spawn), QEMU 7.2's -netdev stream. */
static void add_net_args(const struct vm_net *net, struct vm_qemu_argv *b)
{
    if (net->passt_qemu_fd < 0) {
        arg_add(b, "-nic");
        arg_add(b, "none");
        return;
    }
    arg_add(b, "-netdev");
    arg_add(b, "stream,id=net0,server=off,addr.type=fd,addr.str=%d", VM_QEMU_NET_FD);
    arg_add(b, "-device");
    arg_add(b, "virtio-net-device,netdev=net0");
}

/* The virtio-serial ports of the allowlist proxy and published ports. */
static void add_net_ports(const struct vm_qemu_input *in, struct vm_qemu_argv *b)
{
    for (size_t i = 0; i < in->net->n_out + in->net->n_in; i++) {
        char id[16], name[32];
        vm_net_port_names(in->net, i, id, sizeof(id), name, sizeof(name));
        arg_add(b, "-chardev");
        arg_add(b, "socket,id=%s,path=%s/%s,server=off", id, opt_value(b, in->dir), id);
        arg_add(b, "-device");
        arg_add(b, "virtserialport,chardev=%s,name=%s,nr=%zu", id, name, VM_NET_PORT_BASE + i);
    }
}

/* The guest-private disk of the Docker daemon's storage (vm-docker-plan.c).
 * cache=unsafe: its content is a cache of images and containers that only
 * this guest uses; a host crash may cost it, not a QEMU kill. */
static void add_docker_disk(struct vm_qemu_argv *b, const char *disk)
{
    if (!disk || !disk[0])
        return;
    arg_add(b, "-drive");
    arg_add(b, "file=%s,if=none,id=dk,format=raw,cache=unsafe,discard=unmap", opt_value(b, disk));
    arg_add(b, "-device");
    arg_add(b, "virtio-blk-device,drive=dk");
}

/* A snapshot's memory (vm-snapshot.c): the file on VM_QEMU_RAM_FD, the
 * machine's memory-backend=ram0. */
static void add_memory_backend(const struct vm_qemu_input *in, struct vm_qemu_argv *b)
{
    if (in->ram == VM_RAM_ANON)
        return;
    /* Reopened by QEMU 7.2 through /proc, read-write (it has no
     * read-only file under writable private memory before 8.2); with
     * share=off the guest's writes stay in QEMU's private copy. No
     * device that discards guest memory (virtio-balloon, virtio-mem:
     * 7.2 punches holes in the file for them) may ever come with it:
     * test-qemu-argv checks. */
    arg_add(b, "-object");
    arg_add(b, "memory-backend-file,id=ram0,size=%ldM,mem-path=/proc/self/fd/%d,share=%s",
            vm_qemu_memory_mib(in->limits), VM_QEMU_RAM_FD,
            in->ram == VM_RAM_FILE_SHARED ? "on" : "off");
}

int vm_qemu_argv_build(const struct vm_qemu_input *in, struct vm_qemu_argv *b)
{
    arg_add(b, QEMU_BINARY);
    arg_add(b, "-M");
    /* microvm: virtio-mmio devices, described to the guest by ACPI (Debian's
     * kernel lacks VIRTIO_MMIO_CMDLINE_DEVICES); no PCI, no firmware ROMs. */
    arg_add(b, "microvm,x-option-roms=off,isa-serial=on,rtc=on,acpi=on,pcie=off%s",
            in->ram != VM_RAM_ANON ? ",memory-backend=ram0" : "");
    arg_add(b, "-accel");
    arg_add(b, "%s", in->accel);
    if (strcmp(in->accel, "kvm") == 0) {
        arg_add(b, "-cpu");
        arg_add(b, "host");
    } else {
        arg_add(b, "-cpu");
        arg_add(b, "max");
    }
    arg_add(b, "-m");
    arg_add(b, "%ld", vm_qemu_memory_mib(in->limits));
    arg_add(b, "-smp");
    arg_add(b, "%ld", vm_qemu_cpus(in->limits, in->accel));
    add_memory_backend(in, b);
    arg_add(b, "-nodefaults");
    arg_add(b, "-no-user-config");
    arg_add(b, "-nographic");
    arg_add(b, "-no-reboot");
    add_net_args(in->net, b);
    /* QEMU's own seccomp filter: no exec, no privilege changes. */
    arg_add(b, "-sandbox");
    arg_add(b, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
    arg_add(b, "-kernel");
    arg_add(b, "%s", in->vmlinuz);
    arg_add(b, "-initrd");
    arg_add(b, "%s", in->initrd);
    arg_add(b, "-append");
    /* panic=-1 + reboot=t + -no-reboot: a dying init ends QEMU at once.
     * Under TCG the PIT-based TSC calibration fails at random and the boot
     * hangs; the host's TSC rate and loops-per-jiffy given here skip it.
     * The rest trims a TCG boot (docs/vm-backend.md "Boot time"):
     * swiotlb=noforce: no 64 MiB bounce buffer to clear (virtio-mmio
     * devices use guest-physical addresses, no DMA mapping: ~0.1-0.3 s);
     * one 8250 UART probed, not four; initcalls skipped: kprobe-event
     * tracing, /sys/kernel/btf/vmlinux (parsing the BTF: ~50 ms), the KDF
     * self-test (~30 ms), the built-in certificates (modules are stored
     * unsigned, see vm-initramfs.c). */
    long khz = in->tsc_khz;
    arg_add(b,
            "console=ttyS0 quiet loglevel=1 panic=-1 reboot=t rdinit=/init tsc=reliable "
            "tsc_early_khz=%ld lpj=%ld "
            "no_timer_check i8042.noaux i8042.nokbd i8042.nopnp cryptomgr.notests "
            "random.trust_cpu=on swiotlb=noforce 8250.nr_uarts=1 "
            "initcall_blacklist=init_kprobe_trace,btf_vmlinux_init,crypto_kdf108_init,"
            "load_system_certificate_list",
            khz, khz * 4 /* loops per jiffy at Debian's HZ=250 */);
    /* Extra guest kernel parameters, for debugging a boot. */
    const char *extra = in->append_extra;
    if (extra && extra[0] && !b->failed) {
        char *last = b->args[b->n - 1];
        if (asprintf(&b->args[b->n - 1], "%s %s", last, extra) < 0)
            b->failed = true;
        else
            free(last);
    }
    /* Into the log keeper's pipe, which caps console.log (vm-log.c): a
     * file chardev would grow as long as the guest writes. */
    arg_add(b, "-serial");
    arg_add(b, "file:/proc/self/fd/%d", VM_QEMU_CONSOLE_FD);
    arg_add(b, "-device");
    arg_add(b, "virtio-serial-device,max_ports=%zu", 4 + in->net->n_out + in->net->n_in);
    for (int i = 0; i < SOCK_COUNT; i++) {
        arg_add(b, "-chardev");
        arg_add(b, "socket,id=%s,path=%s/%s,server=off", vm_sock_names[i], opt_value(b, in->dir),
                vm_sock_names[i]);
    }
    arg_add(b, "-device");
    arg_add(b, "virtconsole,chardev=con,nr=0");
    arg_add(b, "-device");
    arg_add(b, "virtserialport,chardev=ch,name=" VM_PORT_CHANNEL ",nr=1");
    arg_add(b, "-device");
    arg_add(b, "virtserialport,chardev=err,name=" VM_PORT_STDERR ",nr=2");
    add_net_ports(in, b);
    for (size_t i = 0; i < in->nshares; i++) {
        /* security_model=none: files are created with QEMU's (the
         * supervisor's) credentials and ownership changes are ignored. */
        arg_add(b, "-fsdev");
        arg_add(b, "local,id=fs%zu,path=%s,security_model=none,multidevs=remap%s", i,
                opt_value(b, in->shares[i].host), in->shares[i].readonly ? ",readonly=on" : "");
        arg_add(b, "-device");
        arg_add(b, "virtio-9p-device,fsdev=fs%zu,mount_tag=s%zu", i, i);
    }
    add_docker_disk(b, in->docker_disk);
    /* Neither is part of the saved state: the monitor is the supervisor's
     * only (a socket it listens on, closed after the save), and the
     * restoring QEMU reads the stream from an fd it inherits. */
    if (in->qmp) {
        arg_add(b, "-chardev");
        arg_add(b, "socket,id=qmp,path=%s/qmp,server=off", opt_value(b, in->dir));
        arg_add(b, "-mon");
        arg_add(b, "chardev=qmp,mode=control");
    }
    if (in->paused)
        arg_add(b, "-S");
    if (in->incoming) {
        /* With the memory in a file, the capability x-ignore-shared has
         * to be set before the stream is read: QEMU 7.2 takes it over QMP
         * only, so the load waits for migrate-incoming. */
        arg_add(b, "-incoming");
        if (in->ram == VM_RAM_ANON)
            arg_add(b, "fd:%d", 5 /* VM_SNAPSHOT_QEMU_FD */);
        else
            arg_add(b, "defer");
    }
    b->args[b->n] = NULL;
    return b->failed ? -1 : 0;
}
