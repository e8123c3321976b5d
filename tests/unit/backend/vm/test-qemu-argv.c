/* Unit tests of a pure builder: the vm backend's QEMU command line
 * (backend/vm/vm-qemu.c), without QEMU or a kernel. What the tests hold it
 * to is what the guest must never get (a network device in deny and
 * allowlist mode, PCI and firmware, QEMU without its own seccomp sandbox, a
 * writable /usr or /etc) and what the configuration asks for (memory,
 * vCPUs, the network's ports, the shares, the Docker disk). Any context. */
#include "backend/vm/vm-qemu.h"
#include "backend/vm/vm.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index of the first argv entry equal to want, or -1. */
static int find(const struct vm_qemu_argv *a, const char *want)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->args[i], want) == 0)
            return (int)i;
    return -1;
}

/* The entry after the first flag, or "" when there is none. */
static const char *after(const struct vm_qemu_argv *a, const char *flag)
{
    int i = find(a, flag);
    return i >= 0 && (size_t)i + 1 < a->n ? a->args[i + 1] : "";
}

/* Whether flag is followed by value anywhere (flags given more than once). */
static bool has_pair(const struct vm_qemu_argv *a, const char *flag, const char *value)
{
    for (size_t i = 0; i + 1 < a->n; i++)
        if (strcmp(a->args[i], flag) == 0 && strcmp(a->args[i + 1], value) == 0)
            return true;
    return false;
}

/* How many times flag is given. */
static int count(const struct vm_qemu_argv *a, const char *flag)
{
    int n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += strcmp(a->args[i], flag) == 0;
    return n;
}

static const struct vm_share shares[] = {
    {"/usr", "/usr", true},
    {"/run/state/vm/etc", "/etc", true},
    {"/home/u/project", "/home/u/project", false},
};

static struct vm_qemu_input input(const char *accel, const struct sandbox_limits *limits,
                                  const struct vm_net *net)
{
    return (struct vm_qemu_input){
        .accel = accel,
        .dir = "/run/state/vm",
        .vmlinuz = "/k/vmlinuz",
        .initrd = "/k/initrd.img",
        .limits = limits,
        .tsc_khz = 2000000,
        .net = net,
        .shares = shares,
        .nshares = sizeof(shares) / sizeof(shares[0]),
    };
}

static void deny_mode_tcg(void)
{
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {.memory_mib = 512, .cpus = 1.5};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    struct vm_qemu_argv a = {0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "deny, tcg: the argv builds");
    is_str(a.args[0], QEMU_BINARY, "argv[0] is QEMU, found in PATH");
    ok(strncmp(after(&a, "-M"), "microvm,", 8) == 0, "a microvm machine");
    ok(strstr(after(&a, "-M"), "x-option-roms=off") && strstr(after(&a, "-M"), "pcie=off"),
       "no option ROMs, no PCI");
    is_str(after(&a, "-accel"), "tcg", "the accelerator chosen");
    is_str(after(&a, "-cpu"), "max", "tcg: -cpu max");
    is_str(after(&a, "-m"), "512", "limits.memory_mib becomes -m");
    is_str(after(&a, "-smp"), "2", "limits.cpus = 1.5 becomes 2 vCPUs (rounded up)");
    ok(find(&a, "-nodefaults") > 0 && find(&a, "-no-user-config") > 0,
       "no default devices, no user configuration");
    is_str(after(&a, "-nic"), "none", "deny mode: no network device");
    is_int(count(&a, "-netdev"), 0, "deny mode: no -netdev");
    const char *sandbox = after(&a, "-sandbox");
    ok(strncmp(sandbox, "on,", 3) == 0 && strstr(sandbox, "spawn=deny") &&
           strstr(sandbox, "elevateprivileges=deny") && strstr(sandbox, "obsolete=deny") &&
           strstr(sandbox, "resourcecontrol=deny"),
       "QEMU runs in its own seccomp sandbox: %s", sandbox);
    is_str(after(&a, "-kernel"), "/k/vmlinuz", "the kernel");
    is_str(after(&a, "-initrd"), "/k/initrd.img", "the initramfs");
    const char *append = after(&a, "-append");
    ok(strstr(append, "panic=-1") && strstr(append, "rdinit=/init"),
       "a dying init ends the guest; init is cordon's");
    ok(strstr(append, "tsc_early_khz=2000000 lpj=8000000"), "the host's TSC rate: %s", append);
    is_str(after(&a, "-serial"), "file:/proc/self/fd/4", "the console goes to the log keeper's fd");
    ok(has_pair(&a, "-chardev", "socket,id=ch,path=/run/state/vm/ch,server=off") &&
           has_pair(&a, "-chardev", "socket,id=con,path=/run/state/vm/con,server=off") &&
           has_pair(&a, "-chardev", "socket,id=err,path=/run/state/vm/err,server=off"),
       "the three chardevs connect to sockets in the state directory");
    ok(has_pair(&a, "-device", "virtserialport,chardev=ch,name=" VM_PORT_CHANNEL ",nr=1"),
       "the agent's channel port");
    ok(has_pair(&a, "-device", "virtio-serial-device,max_ports=4"), "deny: four serial ports");
    is_int(count(&a, "-fsdev"), 3, "one 9p device a share");
    ok(has_pair(&a, "-fsdev",
                "local,id=fs0,path=/usr,security_model=none,multidevs=remap,readonly=on"),
       "/usr is shared read-only");
    ok(has_pair(&a, "-fsdev",
                "local,id=fs1,path=/run/state/vm/etc,security_model=none,multidevs=remap,"
                "readonly=on"),
       "the curated /etc is shared read-only");
    ok(has_pair(&a, "-fsdev",
                "local,id=fs2,path=/home/u/project,security_model=none,multidevs=remap"),
       "the workspace is shared writable");
    ok(has_pair(&a, "-device", "virtio-9p-device,fsdev=fs2,mount_tag=s2"),
       "each share's tag is its index");
    is_int(count(&a, "-drive"), 0, "no Docker disk unless asked");
    ok(a.args[a.n] == NULL, "the argv is NULL-terminated");
    vm_qemu_argv_free(&a);
}

static void kvm_defaults(void)
{
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {0};
    struct vm_qemu_input in = input("kvm", &limits, &net);
    in.append_extra = "debug earlyprintk";
    struct vm_qemu_argv a = {0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "kvm: the argv builds");
    is_str(after(&a, "-cpu"), "host", "kvm: -cpu host");
    is_int(atoi(after(&a, "-m")), VM_DEFAULT_MEMORY_MIB, "no memory limit: the default memory");
    is_str(after(&a, "-smp"), "2", "no CPU limit under kvm: two vCPUs");
    const char *append = after(&a, "-append");
    size_t len = strlen(append);
    ok(len > 18 && strcmp(append + len - 18, " debug earlyprintk") == 0 && strstr(append, "quiet"),
       "CORDON_VM_APPEND's parameters come after cordon's own");
    vm_qemu_argv_free(&a);

    in.accel = "tcg";
    a = (struct vm_qemu_argv){0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "tcg, no limits: builds");
    is_str(after(&a, "-smp"), "1", "no CPU limit under tcg: one vCPU");
    vm_qemu_argv_free(&a);
}

static void allowlist_and_ports(void)
{
    struct net_policy policy = {.mode = NET_MODE_ALLOWLIST, .publish_count = 1};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {0};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    struct vm_qemu_argv a = {0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "allowlist with a published port: builds");
    is_str(after(&a, "-nic"), "none", "allowlist mode: still no network device");
    char want[64];
    snprintf(want, sizeof(want), "virtio-serial-device,max_ports=%d",
             4 + VM_NET_OUT_PORTS + VM_NET_IN_PORTS);
    ok(has_pair(&a, "-device", want), "a serial port for each proxy and published connection");
    ok(has_pair(&a, "-chardev", "socket,id=o0,path=/run/state/vm/o0,server=off") &&
           has_pair(&a, "-device", "virtserialport,chardev=o0,name=cordon.out.0,nr=3"),
       "the first proxy port follows the three fixed ones");
    snprintf(want, sizeof(want), "virtserialport,chardev=i0,name=cordon.in.0,nr=%d",
             VM_NET_PORT_BASE + VM_NET_OUT_PORTS);
    ok(has_pair(&a, "-device", want), "the published ports come after the proxy's");
    is_int(count(&a, "-chardev"), 3 + VM_NET_OUT_PORTS + VM_NET_IN_PORTS, "one chardev a port");
    vm_qemu_argv_free(&a);
}

static void open_mode_and_docker(void)
{
    struct net_policy policy = {.mode = NET_MODE_OPEN};
    struct vm_net net;
    vm_net_init(&net, &policy);
    net.passt_qemu_fd = 9; /* whatever fd it is here, QEMU gets it as 3 */
    struct sandbox_limits limits = {0};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    in.docker_disk = "/run/state/docker.img";
    struct vm_qemu_argv a = {0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "open mode with Docker: builds");
    is_int(count(&a, "-nic"), 0, "open mode: no -nic none");
    is_str(after(&a, "-netdev"), "stream,id=net0,server=off,addr.type=fd,addr.str=3",
           "open mode: a stream netdev on passt's fd 3");
    ok(has_pair(&a, "-device", "virtio-net-device,netdev=net0"), "... as a virtio-net device");
    is_str(after(&a, "-drive"),
           "file=/run/state/docker.img,if=none,id=dk,format=raw,cache=unsafe,discard=unmap",
           "the Docker disk is the guest's private raw image");
    ok(has_pair(&a, "-device", "virtio-blk-device,drive=dk"), "... as a virtio-blk device");
    vm_qemu_argv_free(&a);
}

/* More shares than the argv holds: refused, never cut short. */
static void too_long(void)
{
    static struct vm_share many[VM_MAX_ARGS];
    for (size_t i = 0; i < VM_MAX_ARGS; i++)
        many[i] = (struct vm_share){"/usr", "/usr", true};
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {0};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    in.shares = many;
    in.nshares = VM_MAX_ARGS;
    in.append_extra = "debug";
    struct vm_qemu_argv a = {0};
    ok(vm_qemu_argv_build(&in, &a) < 0, "an argv over %d entries is an error", VM_MAX_ARGS);
    ok(a.n < VM_MAX_ARGS && a.args[a.n] == NULL, "... and what was built stays terminated");
    vm_qemu_argv_free(&a);
    is_int((int)a.n, 0, "free empties it");
}

/* A comma in a host path is doubled: it cannot end the path and add an
 * option of its own (",path=/" would export the host's root). */
static void comma_in_paths(void)
{
    static const struct vm_share odd[] = {
        {"/home/u/a,path=/,readonly=off", "/home/u/a,path=/,readonly=off", false},
    };
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {0};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    in.shares = odd;
    in.nshares = 1;
    in.dir = "/run/st,ate";
    in.docker_disk = "/run/st,ate/docker.img";
    struct vm_qemu_argv a = {0};
    ok(vm_qemu_argv_build(&in, &a) == 0, "paths with commas build");
    ok(has_pair(&a, "-fsdev",
                "local,id=fs0,path=/home/u/a,,path=/,,readonly=off,security_model=none,"
                "multidevs=remap"),
       "a share's commas are doubled: one path, no option of its own");
    ok(has_pair(&a, "-chardev", "socket,id=ch,path=/run/st,,ate/ch,server=off"),
       "... the state directory's in the sockets");
    ok(has_pair(&a, "-drive",
                "file=/run/st,,ate/docker.img,if=none,id=dk,format=raw,cache=unsafe,discard=unmap"),
       "... and the Docker disk's");
    vm_qemu_argv_free(&a);
    is_int((int)a.nesc, 0, "free releases the escaped copies");
}

/* A snapshot's memory (vm-snapshot.c): anonymous by default; a file on
 * VM_QEMU_RAM_FD mapped shared while saving, private (copy-on-write, the
 * snapshot's file never written) when restoring, whose stream then waits
 * for QMP (-incoming defer: x-ignore-shared is set first). */
static void snapshot_memory(void)
{
    struct net_policy policy = {.mode = NET_MODE_DENY};
    struct vm_net net;
    vm_net_init(&net, &policy);
    struct sandbox_limits limits = {.memory_mib = 1024};
    struct vm_qemu_input in = input("tcg", &limits, &net);
    struct vm_qemu_argv a = {0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "anonymous memory: builds");
    is_int(count(&a, "-object"), 0, "anonymous memory: no memory backend object");
    ok(!strstr(after(&a, "-M"), "memory-backend"), "... and the machine names none");
    vm_qemu_argv_free(&a);

    char want[128];
    snprintf(want, sizeof(want),
             "memory-backend-file,id=ram0,size=1024M,mem-path=/proc/self/fd/%d,share=on",
             VM_QEMU_RAM_FD);
    in.ram = VM_RAM_FILE_SHARED;
    in.qmp = true;
    a = (struct vm_qemu_argv){0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "saving: builds");
    is_str(after(&a, "-object"), want, "saving: the memory is the file on its fd, shared");
    ok(strstr(after(&a, "-M"), ",memory-backend=ram0") != NULL, "... the machine's memory");
    is_int(atoi(after(&a, "-m")), 1024, "... of the configured size");
    is_int(count(&a, "-incoming"), 0, "... and no -incoming");
    vm_qemu_argv_free(&a);

    snprintf(want, sizeof(want),
             "memory-backend-file,id=ram0,size=1024M,mem-path=/proc/self/fd/%d,share=off",
             VM_QEMU_RAM_FD);
    in.ram = VM_RAM_FILE_PRIVATE;
    in.incoming = true;
    in.paused = true;
    a = (struct vm_qemu_argv){0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "restoring: builds");
    is_str(after(&a, "-object"), want, "restoring: the snapshot's file, private (copy-on-write)");
    is_str(after(&a, "-incoming"), "defer", "... the stream given over QMP (-incoming defer)");
    is_int(count(&a, "-S"), 1, "... the vCPUs held (-S)");
    bool discards = false;
    for (size_t i = 0; i < a.n; i++)
        discards = discards || strstr(a.args[i], "balloon") || strstr(a.args[i], "virtio-mem");
    ok(!discards,
       "... and no device that would punch holes in the shared file (balloon, virtio-mem)");
    vm_qemu_argv_free(&a);

    in.ram = VM_RAM_ANON;
    a = (struct vm_qemu_argv){0};
    is_int(vm_qemu_argv_build(&in, &a), 0, "a restore with anonymous memory: builds");
    is_str(after(&a, "-incoming"), "fd:5", "... reads the whole stream from fd 5");
    vm_qemu_argv_free(&a);
}

int main(void)
{
    deny_mode_tcg();
    kvm_defaults();
    allowlist_and_ports();
    open_mode_and_docker();
    too_long();
    comma_in_paths();
    snapshot_memory();
    return tap_done();
}
