/* The verify audit's checks of the sandbox's own confinement (verify.c):
 * seccomp, privileges, the kernel boundary, namespaces, processes, the
 * network, git metadata, writes, Landlock and the session's ownership.
 * Host context, unprivileged supervisor. */
#include "supervisor/verify-internal.h"
#include "proto/init-channel.h"
#include "confine/landlock.h"
#include "net/denial.h"
#include "supervisor/environ.h"
#include "supervisor/gitguard.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/file.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

static const char *host_side_name(const struct verify_run *r)
{
    return r->l && r->l->backend ? r->l->backend->caps.host_side : "agent";
}

void check_seccomp(struct verify_run *r, const json_t *p)
{
    json_t *self = json_object_get(r->host, "self_status");
    json_t *agent = json_object_get(r->host, "agent_status");
    long host_filters = strtol(str(self, "Seccomp_filters"), NULL, 10);
    long agent_filters = strtol(str(agent, "Seccomp_filters"), NULL, 10);
    json_t *st = p ? json_object_get(p, "status") : NULL;
    json_t *sys = p ? json_object_get(p, "syscalls") : NULL;
    long in_filters = st ? strtol(str(st, "Seccomp_filters"), NULL, 10) : -1;
    bool agent_ok = strcmp(str(agent, "Seccomp"), "2") == 0 && agent_filters > host_filters;
    /* The guest's kernel counts its own filters: none are inherited from
     * the host's supervisor there. */
    bool inside_ok = st && strcmp(str(st, "Seccomp"), "2") == 0 &&
                     (on_own_kernel(r) ? in_filters >= 1 : in_filters > host_filters) &&
                     strcmp(str(sys, "keyctl"), "EPERM") == 0;
    row(r, "seccomp", agent_ok && inside_ok ? "PASS" : "FAIL",
        "%s (pid %d, from the host%s): Seccomp %s, %ld filter(s) (supervisor: %ld); inside%s: "
        "Seccomp %s, %ld filter(s); keyctl(invalid) -> %s (EPERM when filtered), "
        "io_uring_setup -> %s, clone3 -> %s, unshare -> %s",
        host_side_name(r), (int)r->agent_pid, on_own_kernel(r) ? "; its own -sandbox filter" : "",
        str(agent, "Seccomp"), agent_filters, host_filters, on_own_kernel(r) ? " the guest" : "",
        st ? str(st, "Seccomp") : "?", in_filters, sys ? str(sys, "keyctl") : "?",
        sys ? str(sys, "io_uring_setup") : "?", sys ? str(sys, "clone3") : "?",
        sys ? str(sys, "unshare") : "?");
}

void check_privileges(struct verify_run *r, const json_t *p)
{
    json_t *agent = json_object_get(r->host, "agent_status");
    json_t *st = p ? json_object_get(p, "status") : NULL;
    bool nnp =
        strcmp(str(agent, "NoNewPrivs"), "1") == 0 && st && strcmp(str(st, "NoNewPrivs"), "1") == 0;
    row(r, "no-new-privs", nnp ? "PASS" : "FAIL", "NoNewPrivs: %s (from the host) %s, inside %s",
        host_side_name(r), str(agent, "NoNewPrivs"), st ? str(st, "NoNewPrivs") : "?");
    bool caps = all_zero_caps(agent) && st && all_zero_caps(st);
    /* The QEMU of an unprivileged supervisor outside a user namespace
     * (vm-protect.c makes one only when needed) keeps the default bounding
     * set: an unprivileged process can neither empty nor use it (no
     * capability held, no_new_privs: no exec grants any; a new user
     * namespace gets a full set whatever the bounding set says). */
    bool bounding_only = on_own_kernel(r) && !caps && geteuid() != 0 && st && all_zero_caps(st) &&
                         strcmp(str(agent, "NoNewPrivs"), "1") == 0 && zero_hex(agent, "CapInh") &&
                         zero_hex(agent, "CapPrm") && zero_hex(agent, "CapEff") &&
                         zero_hex(agent, "CapAmb");
    row(r, "capabilities", caps || bounding_only ? "PASS" : "FAIL",
        "%s (from the host): CapPrm %s CapEff %s CapBnd %s CapAmb %s; inside: CapPrm %s "
        "CapEff %s CapBnd %s CapAmb %s%s",
        host_side_name(r), str(agent, "CapPrm"), str(agent, "CapEff"), str(agent, "CapBnd"),
        str(agent, "CapAmb"), st ? str(st, "CapPrm") : "?", st ? str(st, "CapEff") : "?",
        st ? str(st, "CapBnd") : "?", st ? str(st, "CapAmb") : "?",
        bounding_only ? "; QEMU's bounding set is the unprivileged default (no user namespace "
                        "for it): with nothing permitted and no_new_privs it grants nothing"
                      : "");
}

/* The guest runs its own kernel: another boot_id. ev (may be NULL) gets
 * the evidence. */
static bool guest_kernel_distinct(const struct verify_run *r, const json_t *p, char *ev,
                                  size_t size)
{
    json_t *hk = json_object_get(r->host, "self_kernel");
    json_t *gk = p ? json_object_get(p, "kernel") : NULL;
    const char *hb = str(hk, "boot_id"), *gb = gk ? str(gk, "boot_id") : "?";
    bool distinct = gk && gb[0] && strcmp(gb, "?") != 0 && hb[0] && strcmp(gb, hb) != 0;
    if (ev)
        add(ev, size,
            "kernel boundary (microVM): boot_id inside %s, host %s; kernel inside %s (%s), host "
            "%s (%s)",
            gb, hb, gk ? str(gk, "release") : "?", gk ? str(gk, "version") : "?",
            str(hk, "release"), str(hk, "version"));
    return distinct;
}

/* vm: no namespace of the host is shared with the guest at all; what
 * matters is that the probe runs under another kernel and that the host's
 * pids name nothing of the host there. */
static void check_kernel_boundary(struct verify_run *r, const json_t *p)
{
    char ev[2048] = "";
    bool fail = !guest_kernel_distinct(r, p, ev, sizeof(ev));
    json_t *pids = p ? json_object_get(json_object_get(p, "kernel"), "host_pids") : NULL;
    if (!json_array_size(pids))
        fail = true;
    size_t i;
    json_t *e;
    json_array_foreach (pids, i, e) {
        pid_t pid = (pid_t)json_integer_value(json_object_get(e, "pid"));
        const char *inside = str(e, "comm");
        const char *host = pid == getpid()       ? str(r->host, "self_comm")
                           : pid == r->agent_pid ? str(r->host, "agent_comm")
                                                 : "?";
        /* The same number may be one of the guest's own processes; the
         * same name as the host's would mean the host's process. */
        bool same = host[0] && strcmp(host, "?") != 0 && strcmp(inside, host) == 0;
        fail |= same;
        add(ev, sizeof(ev), "; host pid %d (%s on the host) inside: %s", (int)pid, host,
            inside[0] == 'E' ? inside
            : same           ? "the same process"
                             : "another process of the guest");
        if (inside[0] != 'E' && !same)
            add(ev, sizeof(ev), " (%s)", inside);
    }
    json_t *in = p ? json_object_get(p, "ns") : NULL;
    add(ev, sizeof(ev), "; the probe's namespaces are the guest kernel's (mnt %s, pid %s, net %s)",
        in ? str(in, "mnt") : "?", in ? str(in, "pid") : "?", in ? str(in, "net") : "?");
    row(r, "namespaces", fail ? "FAIL" : "PASS", "%s", ev);
}

void check_namespaces(struct verify_run *r, const json_t *p)
{
    if (on_own_kernel(r)) {
        check_kernel_boundary(r, p);
        return;
    }
    json_t *self = json_object_get(r->host, "self_ns");
    json_t *agent = json_object_get(r->host, "agent_ns");
    json_t *in = p ? json_object_get(p, "ns") : NULL;
    char ev[2048] = "";
    bool fail = !in;
    for (size_t i = 0; i < ARRAY_SIZE(verify_ns_names); i++) {
        const char *host = str(self, verify_ns_names[i]);
        const char *a = str(agent, verify_ns_names[i]);
        const char *inside = in ? str(in, verify_ns_names[i]) : "?";
        /* The agent seen from the host is evidence the sandbox cannot
         * forge; the probe's view must agree with it. */
        bool distinct = strcmp(a, "?") != 0 && strcmp(a, host) != 0 && strcmp(inside, a) == 0;
        /* Docker (without userns-remap) keeps the host's user namespace:
         * the container runs as the user's own uid, with no capability
         * (the capabilities row). */
        bool shared_ok = backend_is(r, BACKEND_CAP_HOST_USERNS) &&
                         strcmp(verify_ns_names[i], "user") == 0 && strcmp(a, "?") != 0 &&
                         strcmp(inside, a) == 0;
        if (!distinct && !shared_ok)
            fail = true;
        add(ev, sizeof(ev), "%s%s: supervisor %s, agent %s, inside %s%s", i ? "; " : "",
            verify_ns_names[i], host, a, inside,
            shared_ok && !distinct ? " (the host's: docker, the user's uid, no capabilities)" : "");
    }
    row(r, "namespaces", fail ? "FAIL" : "PASS", "%s", ev);
}

void check_processes(struct verify_run *r, const json_t *p)
{
    json_t *pr = p ? json_object_get(p, "processes") : NULL;
    if (!pr) {
        row(r, "processes", "FAIL", "no probe answer");
        return;
    }
    json_t *foreign = json_object_get(pr, "foreign");
    if (on_own_kernel(r)) {
        /* Every process the guest shows is the guest kernel's own (some,
         * kernel threads, unreadable to a probe without capabilities). */
        bool distinct = guest_kernel_distinct(r, p, NULL, 0);
        bool ok = distinct && strcmp(str(pr, "pid1_comm"), r->pid1_comm) == 0;
        row(r, "processes", ok ? "PASS" : "FAIL",
            "%lld processes visible inside, all the guest kernel's own (%s); PID 1 is %s; "
            "kill(0) on the supervisor's host pid %d -> %s (a number of the guest's, see "
            "namespaces)",
            (long long)json_integer_value(json_object_get(pr, "count")),
            distinct ? "its boot_id differs from the host's" : "NOT shown to be another kernel",
            str(pr, "pid1_comm"), (int)getpid(), str(pr, "kill_supervisor_pid"));
        return;
    }
    bool ok = json_array_size(foreign) == 0 && strcmp(str(pr, "pid1_comm"), r->pid1_comm) == 0;
    _cleanup_free_ char *f = json_dumps(foreign, JSON_COMPACT);
    char fds[512] = "";
    size_t i;
    json_t *fd;
    json_array_foreach (json_object_get(p, "fds"), i, fd)
        add(fds, sizeof(fds), "%s%s", i ? ", " : "",
            json_string_value(fd) ? json_string_value(fd) : "?");
    row(r, "processes", ok ? "PASS" : "FAIL",
        "%lld processes visible inside, all in the sandbox's PID namespace unless listed: %s; "
        "PID 1 is %s; kill(0) on the supervisor's host pid %d -> %s; the probe's open "
        "descriptors: %s",
        (long long)json_integer_value(json_object_get(pr, "count")), f ? f : "?",
        str(pr, "pid1_comm"), (int)getpid(), str(pr, "kill_supervisor_pid"), fds[0] ? fds : "?");
}

void check_network(struct verify_run *r, const json_t *p)
{
    int mode = r->l->cfg.network.mode;
    char ev[2048] = "";
    bool fail = !p;
    add(ev, sizeof(ev), "network.mode = %s",
        mode == CFG_NETWORK_OPEN        ? "open"
        : mode == CFG_NETWORK_ALLOWLIST ? "allowlist (only through cordon's proxy)"
                                        : "deny");
    size_t i;
    json_t *t;
    json_array_foreach (p ? json_object_get(p, "tcp") : NULL, i, t) {
        add(ev, sizeof(ev), "; connect %s:%lld (host listener) -> %s", str(t, "addr"),
            (long long)json_integer_value(json_object_get(t, "port")), str(t, "connect"));
        if (strcmp(str(t, "connect"), "ok") == 0)
            fail = true;
    }
    json_array_foreach (p ? json_object_get(p, "proxy") : NULL, i, t) {
        const char *status = str(t, "status");
        add(ev, sizeof(ev), "; proxy CONNECT %s (not allowlisted) -> %s", str(t, "target"),
            status[0] ? status : str(t, "connect"));
        if (strncmp(status, "HTTP/1.1 2", 10) == 0 || strncmp(status, "HTTP/1.0 2", 10) == 0)
            fail = true;
    }
    /* Evidence the sandbox cannot forge: nothing reached the listeners. */
    for (size_t k = 0; k < r->nlisteners; k++) {
        int c = accept4(r->listeners[k].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
            close(c);
            fail = true;
            add(ev, sizeof(ev), "; the host listener on %s:%d ACCEPTED a connection",
                r->listeners[k].addr, r->listeners[k].port);
        }
    }
    if (!fail)
        add(ev, sizeof(ev), "; the host listeners accepted nothing");
    if (mode == CFG_NETWORK_OPEN) {
        add(ev, sizeof(ev), "; warning: egress is not restricted in open mode");
        row(r, "network-egress", "WARN", "%s", ev);
        return;
    }
    row(r, "network-egress", fail ? "FAIL" : "PASS", "%s", ev);
}

static bool write_refused(const char *result)
{
    return strcmp(result, "EROFS") == 0 || strcmp(result, "EACCES") == 0 ||
           strcmp(result, "EPERM") == 0;
}

/* The git metadata row: what the probe created at each guarded git
 * directory's top level is not in the host's (docs/git-metadata.md). */
void check_git_metadata(struct verify_run *r, const json_t *p)
{
    const struct gitguard *g = r->l->git;
    if (!g || !g->active) {
        row(r, "git-metadata", r->l->ws.is_git ? "SKIP" : "PASS", "%s",
            r->l->ws.is_git
                ? "the workspace is read-only: its git metadata with it"
                : "not a git repository: a .git, .vscode, .idea or .envrc the sandbox makes at "
                  "the root, or a .git below it, is moved aside when the session ends");
        return;
    }
    if (!p) {
        row(r, "git-metadata", "FAIL", "no probe answer");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    size_t i;
    json_t *w;
    json_array_foreach (json_object_get(p, "plant"), i, w) {
        if (i >= g->ndirs)
            break;
        const struct gitguard_dir *d = &g->dirs[i];
        char host[PATH_MAX + 64];
        snprintf(host, sizeof(host), "%s/" VERIFY_PLANT_NAME, d->host);
        struct stat st;
        bool leaked = lstat(host, &st) == 0;
        fail |= leaked;
        add(ev, sizeof(ev), "%s%s: created inside -> %s, on the host -> %s", ev[0] ? "; " : "",
            str(w, "path"), str(w, "write"), leaked ? "PRESENT" : "absent");
    }
    if (json_array_size(json_object_get(p, "plant")) != g->ndirs)
        fail = true;
    row(r, "git-metadata", fail ? "FAIL" : "PASS",
        "%zu git director%s host-owned (the sandbox writes copies; cordon carries HEAD, index "
        "and refs only): %s",
        g->ndirs, g->ndirs == 1 ? "y" : "ies", ev);
}

void check_writes(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "protected-paths", "FAIL", "no probe answer");
        row(r, "workspace", "FAIL", "no probe answer");
        row(r, "policy-dir", "FAIL", "no probe answer");
        return;
    }
    json_t *policy = json_object_get(r->request, "policy");
    char ev[2048] = "", pev[1024] = "";
    bool fail = false, pfail = false;
    size_t nprot = 0, i, j;
    json_t *w, *pol;
    json_array_foreach (json_object_get(p, "readonly"), i, w) {
        bool is_policy = false;
        json_array_foreach (policy, j, pol) {
            is_policy |= strcmp(json_string_value(pol), str(w, "path")) == 0;
        }
        const char *res = str(w, "write");
        if (is_policy) {
            bool absent = json_is_false(json_object_get(w, "exists"));
            add(pev, sizeof(pev), "%s%s: %s", pev[0] ? "; " : "", str(w, "path"),
                absent ? "not visible" : res);
            if (!absent && !write_refused(res))
                pfail = true;
            continue;
        }
        nprot++;
        add(ev, sizeof(ev), "%s%s: write -> %s", ev[0] ? "; " : "", str(w, "path"), res);
        if (!write_refused(res))
            fail = true;
    }
    if (nprot == 0)
        row(r, "protected-paths", "SKIP",
            "none of the protected paths exists in this workspace (nothing to probe)");
    else
        row(r, "protected-paths", fail ? "FAIL" : "PASS", "%s", ev);
    row(r, "policy-dir", pfail ? "FAIL" : "PASS", "%s", pev);

    json_t *ws = json_array_get(json_object_get(p, "writable"), 0);
    const char *res = ws ? str(ws, "write") : "?";
    bool readonly = r->l->cfg.workspace_readonly;
    bool ok = readonly ? write_refused(res) : strcmp(res, "ok") == 0;
    row(r, "workspace", ok ? "PASS" : "FAIL", "%s (%s mode): creating a file -> %s",
        r->l->ws.view_root, readonly ? "read-only" : "writable", res);
}

void check_landlock(struct verify_run *r, const json_t *p)
{
    json_t *ll = p ? json_object_get(p, "landlock") : NULL;
    if (r->l && !backend_is(r, BACKEND_CAP_HOST_LANDLOCK)) {
        /* The guest's kernel decides, not the host's; in a container,
         * Docker's profile too (the agent applies Landlock when it can). */
        const char *where = on_own_kernel(r) ? "the guest's kernel" : "the container";
        json_t *gabi = json_object_get(ll, "abi");
        if (!ll) {
            row(r, "landlock", "FAIL", "no probe answer");
        } else if (!json_is_integer(gabi)) {
            row(r, "landlock", "SKIP",
                "Landlock is not available in %s (%s): %s and the seccomp filter are the "
                "filesystem boundary inside",
                where, json_string_value(gabi) ? json_string_value(gabi) : "?",
                on_own_kernel(r) ? "the guest's mounts" : "the container's mounts");
        } else {
            const char *res = str(ll, "proc_self_comm_write");
            row(r, "landlock", strcmp(res, "EACCES") == 0 ? "PASS" : "FAIL",
                "%s ABI %lld; inside, opening /proc/self/comm for writing (allowed by the mounts, "
                "not by the ruleset) -> %s",
                on_own_kernel(r) ? "guest kernel" : "kernel (seen in the container)",
                (long long)json_integer_value(gabi), res);
        }
        return;
    }
    int abi = ns_landlock_abi();
    if (abi <= 0) {
        row(r, "landlock", "SKIP",
            "Landlock is not available on this kernel (%s): the mount namespace is the only "
            "filesystem boundary",
            strerrorname_np(-abi) ? strerrorname_np(-abi) : "?");
        return;
    }
    const char *res = ll ? str(ll, "proc_self_comm_write") : "?";
    row(r, "landlock", strcmp(res, "EACCES") == 0 ? "PASS" : "FAIL",
        "kernel ABI %d; inside, opening /proc/self/comm for writing (allowed by the mounts, not "
        "by the ruleset) -> %s",
        abi, res);
}

/* The session's lock must be held (a fresh open file description cannot
 * take it) and its record must name this supervisor. */
void check_ownership(struct verify_run *r)
{
    const char *dir = r->state_dir;
    if (!dir) {
        row(r, "ownership", "SKIP", "this session has no state directory (host session)");
        return;
    }
    char path[PATH_MAX], evidence[PATH_MAX + 200];
    snprintf(path, sizeof(path), "%s/lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(evidence, sizeof(evidence), "%s: %s", path, strerror(errno));
        row(r, "ownership", "FAIL", "%s", evidence);
        return;
    }
    bool held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    if (!held)
        flock(fd, LOCK_UN);
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    json_t *rec = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
    json_int_t pid = rec ? json_integer_value(json_object_get(rec, "pid")) : 0;
    json_decref(rec);
    snprintf(evidence, sizeof(evidence),
             "flock on %s: %s; the record names pid %lld, this supervisor is %d", path,
             held ? "busy (held)" : "free", (long long)pid, (int)getpid());
    row(r, "ownership", held && pid == getpid() ? "PASS" : "FAIL", "%s", evidence);
}
