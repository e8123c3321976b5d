/* The guest's network (vm-guest-net.h, docs/vm-backend.md "Network"): open
 * mode's virtio-net interface, the session CA bound over the guest's
 * bundle (TLS interception), and the port forwarder that carries the
 * allowlist proxy's and published ports' connections over virtio-serial
 * ports (vmux.c). Guest context: the init, PID 1, the guest's root; the
 * forwarder is its child and runs as nobody once its ports are open. */
#include "backend/vm/guest/vm-guest-net.h"
#include "backend/vm/guest/vm-guest.h"
#include "backend/vm/vmux.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

static void set_ifr_addr(struct ifreq *ifr, const char *text)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr->ifr_addr;
    *sin = (struct sockaddr_in){.sin_family = AF_INET};
    if (inet_pton(AF_INET, text, &sin->sin_addr) != 1)
        guest_fail("network: bad address %s in the boot spec", text);
}

/* Open mode: the virtio-net interface passt serves, configured with the
 * address, prefix and gateway passt was given (no DHCP client here). */
static void net_interface_up(json_t *net)
{
    const char *addr = json_string_value(json_object_get(net, "addr"));
    const char *gw = json_string_value(json_object_get(net, "gw"));
    json_int_t prefix = json_integer_value(json_object_get(net, "prefix"));
    if (!addr || !gw || prefix < 1 || prefix > 32)
        guest_fail("network: the boot spec lacks the interface's address");
    struct cordon_error err;
    if (guest_load_modules("/cordon/modules-net", &err) < 0)
        guest_fail("%s", err.message);
    char name[IF_NAMESIZE] = "";
    _cleanup_closedir_ DIR *d = opendir("/sys/class/net");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] != '.' && strcmp(de->d_name, "lo") != 0 &&
            strlen(de->d_name) < sizeof(name)) {
            memcpy(name, de->d_name, strlen(de->d_name) + 1);
            break;
        }
    }
    if (!name[0])
        guest_fail("network: no network interface appeared");
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    set_ifr_addr(&ifr, addr);
    if (fd < 0 || ioctl(fd, SIOCSIFADDR, &ifr) < 0)
        guest_fail("network: address %s on %s: %s", addr, name, strerror(errno));
    struct sockaddr_in *mask = (struct sockaddr_in *)&ifr.ifr_netmask;
    *mask = (struct sockaddr_in){.sin_family = AF_INET};
    mask->sin_addr.s_addr = htonl(prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix));
    if (ioctl(fd, SIOCSIFNETMASK, &ifr) < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        guest_fail("network: netmask on %s: %s", name, strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        guest_fail("network: %s up: %s", name, strerror(errno));
    struct rtentry rt = {0};
    struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
    struct sockaddr_in *gwa = (struct sockaddr_in *)&rt.rt_gateway;
    struct sockaddr_in *gm = (struct sockaddr_in *)&rt.rt_genmask;
    *dst = *gm = (struct sockaddr_in){.sin_family = AF_INET};
    *gwa = (struct sockaddr_in){.sin_family = AF_INET};
    inet_pton(AF_INET, gw, &gwa->sin_addr);
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    rt.rt_dev = name;
    if (ioctl(fd, SIOCADDRT, &rt) < 0)
        guest_fail("network: default route via %s: %s", gw, strerror(errno));
}

/* Guest side of an in port: the host opened a connection to a published
 * port; it goes to the guest's own loopback. */
static int forwarder_connect(struct vmux *m, uint16_t port, void *ctx)
{
    (void)m;
    (void)ctx;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Loopback: refused or accepted at once, a blocking connect is short. */
    return vmux_connect_local((struct sockaddr *)&sa, sizeof(sa));
}

/* The forwarder (a child of init, then of the agent): the guest's end of
 * the allowlist proxy (a listener on 127.0.0.1:proxy_port whose
 * connections go out on the "cordon.out.N" ports) and of published ports
 * ("cordon.in.N"). It opens the ports as root, then runs as nobody. The
 * boot goes on once its listener exists. */
static void net_forwarder_start(json_t *net)
{
    size_t n_out = (size_t)json_integer_value(json_object_get(net, "out"));
    size_t n_in = (size_t)json_integer_value(json_object_get(net, "in"));
    json_int_t proxy_port = json_integer_value(json_object_get(net, "proxy_port"));
    if (n_out + n_in == 0)
        return;
    /* proxy_port 0: no proxy listener (host services only). */
    json_t *services = json_object_get(net, "host_services");
    size_t n_services = json_is_array(services) ? json_array_size(services) : 0;
    if (n_out + n_in > VMUX_MAX_PORTS || proxy_port < 0 || proxy_port > 65535 ||
        n_services >= VMUX_MAX_LISTEN || (n_services && !n_out))
        guest_fail("network: bad port counts in the boot spec");
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        guest_fail("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        guest_fail("fork: %s", strerror(errno));
    if (pid > 0) {
        close(ready[1]);
        char byte;
        if (read(ready[0], &byte, 1) != 1)
            guest_fail("network: the port forwarder did not start");
        close(ready[0]);
        return;
    }
    close(ready[0]);
    static struct vmux mux;
    struct cordon_error err;
    vmux_init(&mux, forwarder_connect, NULL);
    for (size_t i = 0; i < n_out + n_in; i++) {
        char name[32];
        bool out = i < n_out;
        snprintf(name, sizeof(name), "cordon.%s.%zu", out ? "out" : "in", out ? i : i - n_out);
        if (vmux_add_port(&mux, guest_open_port(name), out, &err) < 0)
            _exit(1);
    }
    /* The proxy's port, then each host service's (network.host_services):
     * the host's relay tells them apart by the port each connection names. */
    for (size_t i = 0; n_out && i <= n_services; i++) {
        json_int_t port = i == 0 ? proxy_port : json_integer_value(json_array_get(services, i - 1));
        if (i == 0 && port == 0)
            continue;
        if (port < 1 || port > 65535)
            _exit(1);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0 ||
            vmux_add_listener(&mux, fd, (uint16_t)port, &err) < 0)
            _exit(1);
    }
    close(guest_channel);
    guest_channel = -1;
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
        _exit(1);
    signal(SIGPIPE, SIG_IGN);
    if (write(ready[1], "r", 1) != 1)
        _exit(1);
    close(ready[1]);
    vmux_run(&mux);
    _exit(0);
}

/* TLS interception (docs/network.md): the bundle the guest's clients
 * trust is the host's (from the /etc share) plus the session CA of the
 * boot spec, written to /run by init and bound read-only over it; the
 * name on /run goes again, so only the read-only bind reaches the file.
 * The CA's key stays in the host's proxy. */
static void net_ca_install(json_t *net)
{
    const char *ca = json_string_value(json_object_get(net, "ca"));
    const char *bundle = json_string_value(json_object_get(net, "ca_bundle"));
    if (!ca)
        return;
    if (!bundle || bundle[0] != '/' || strlen(ca) > 16384)
        guest_fail("network: bad session CA in the boot spec");
    static const char tmp[] = "/run/cordon/ca-bundle.pem";
    if (fs_mkdir_p("/run/cordon", 0755) < 0)
        guest_fail("mkdir /run/cordon: %s", strerror(errno));
    _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    _cleanup_close_ int in = open(bundle, O_RDONLY | O_CLOEXEC);
    if (out < 0)
        guest_fail("network: %s: %s", tmp, strerror(errno));
    if (in < 0)
        guest_fail("network: TLS interception: the guest's %s: %s", bundle, strerror(errno));
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (fs_write_all(out, buf, (size_t)n) < 0)
            guest_fail("network: writing %s: %s", tmp, strerror(errno));
    }
    if (n < 0 || fs_write_all(out, "\n", 1) < 0 || fs_write_all(out, ca, strlen(ca)) < 0 ||
        fs_write_all(out, "\n", 1) < 0)
        guest_fail("network: writing %s: %s", tmp, strerror(errno));
    if (mount(tmp, bundle, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, bundle, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
            0)
        guest_fail("network: binding the session CA's bundle over %s: %s", bundle, strerror(errno));
    unlink(tmp);
}

void guest_net_setup(json_t *net)
{
    if (!net)
        return;
    const char *mode = json_string_value(json_object_get(net, "mode"));
    if (mode && strcmp(mode, "open") == 0)
        net_interface_up(net);
    net_ca_install(net);
    net_forwarder_start(net);
}
