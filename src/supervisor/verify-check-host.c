/* The verify audit's checks of what reaches the sandbox from the host
 * (verify.c): the environment, secrets, host files, container runtime
 * sockets and published ports. Host context, unprivileged supervisor. */
extern char **environ;

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

/* --- judging --- */

bool zero_hex(const json_t *st, const char *key)
{
    const char *v = json_string_value(json_object_get(st, key));
    return v && v[0] && strspn(v, "0") == strlen(v);
}

bool all_zero_caps(const json_t *st)
{
    static const char *const keys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const char *v = json_string_value(json_object_get(st, keys[i]));
        if (!v || strspn(v, "0") != strlen(v))
            return false;
    }
    return true;
}

void check_env(struct verify_run *r, const json_t *p)
{
    const struct launch *l = r->l;
    /* The scrubber itself, on this environment plus the sentinels. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **input = calloc(n + ARRAY_SIZE(verify_sentinel_names) + 2, sizeof(char *));
    char **built = NULL;
    struct cordon_error err;
    char scrub_flagged[512] = "", built_flagged[512] = "";
    const char *agent_flagged = r->agent_env_rc < 0 ? "" : r->agent_env_flagged;
    bool scrub_probe = false, built_probe = false;
    int scrub_rc = -1;
    if (input) {
        size_t k = 0;
        static char sentinel_entries[ARRAY_SIZE(verify_sentinel_names)][64];
        for (size_t i = 0; i < ARRAY_SIZE(verify_sentinel_names); i++) {
            snprintf(sentinel_entries[i], sizeof(sentinel_entries[i]), "%s=%s",
                     verify_sentinel_names[i], VERIFY_SENTINEL_VALUE);
            input[k++] = sentinel_entries[i];
        }
        static char probe_entry[64];
        snprintf(probe_entry, sizeof(probe_entry), "%s=%s", VERIFY_PROBE_VAR,
                 VERIFY_SENTINEL_VALUE);
        input[k++] = probe_entry;
        for (size_t i = 0; i < n; i++)
            input[k++] = environ[i];
        enum env_mode mode = l->cfg.env.mode == CFG_ENV_PASSTHROUGH ? ENV_MODE_PASSTHROUGH
                             : l->cfg.env.mode == CFG_ENV_ALLOWLIST ? ENV_MODE_ALLOWLIST
                                                                    : ENV_MODE_STRICT;
        scrub_rc = env_build(mode, input, l->env_allow, l->home, &built, &err);
        if (scrub_rc == 0)
            flagged_in(built, scrub_flagged, sizeof(scrub_flagged), &scrub_probe);
        env_free(built);
        free(input);
    }
    flagged_in(l->env, built_flagged, sizeof(built_flagged), &built_probe);
    int agent_rc = r->agent_env_rc;

    char ev[2048] = "";
    bool fail = scrub_rc < 0 || scrub_flagged[0] || built_flagged[0] || agent_flagged[0];
    add(ev, sizeof(ev),
        "scrubber run on this environment + DOCKER_HOST, DOCKER_CONTEXT, "
        "COMPOSE_PROJECT_NAME, COMPOSE_FILE, CORDON_VERIFY_SENTINEL: %s",
        scrub_rc < 0       ? "failed"
        : scrub_flagged[0] ? scrub_flagged
                           : "all removed");
    add(ev, sizeof(ev), "; the sandbox was built from an environment %s",
        sentinels_injected() ? "holding the sentinels"
                             : "without them (it started before verify ran)");
    add(ev, sizeof(ev), "; sandbox environment: %s",
        built_flagged[0] ? built_flagged : "no Docker/Compose/sentinel variables");
    if (agent_rc < 0)
        add(ev, sizeof(ev), "; agent /proc/%d/environ from the host: %s", (int)r->agent_pid,
            strerrorname_np(-agent_rc));
    else
        add(ev, sizeof(ev), "; agent /proc/%d/environ from the host: %s", (int)r->agent_pid,
            agent_flagged[0] ? agent_flagged : "clean");
    if (p) {
        json_t *found = json_object_get(json_object_get(p, "env"), "found");
        if (json_array_size(found)) {
            fail = true;
            _cleanup_free_ char *txt = json_dumps(found, JSON_COMPACT);
            add(ev, sizeof(ev), "; inside: %s", txt ? txt : "?");
        } else {
            add(ev, sizeof(ev), "; inside (%s): none present", r->probe_via);
        }
    } else {
        add(ev, sizeof(ev), "; inside: no probe answer");
        fail = true;
    }
    row(r, "env-scrub", fail ? "FAIL" : "PASS", "%s", ev);

    /* Forwarding mode and the non-allowlisted probe variable. */
    const char *mode = l->cfg.env.mode == CFG_ENV_PASSTHROUGH ? "passthrough"
                       : l->cfg.env.mode == CFG_ENV_ALLOWLIST ? "allowlist"
                                                              : "strict";
    bool passthrough = l->cfg.env.mode == CFG_ENV_PASSTHROUGH;
    bool allowlisted = false;
    for (size_t i = 0; l->env_allow[i]; i++)
        allowlisted |= strcmp(l->env_allow[i], VERIFY_PROBE_VAR) == 0;
    bool inside =
        p && json_is_true(json_object_get(json_object_get(p, "env"), "probe_var_present"));
    char ev2[1024] = "";
    add(ev2, sizeof(ev2), "env.mode = %s", mode);
    add(ev2, sizeof(ev2), "; %s (not allowlisted) through the scrubber: %s", VERIFY_PROBE_VAR,
        scrub_probe ? "forwarded" : "removed");
    add(ev2, sizeof(ev2), "; inside: %s", !p ? "no probe answer" : inside ? "present" : "absent");
    if (!sentinels_injected())
        add(ev2, sizeof(ev2), " (not injected into this sandbox's environment)");
    if (passthrough || allowlisted) {
        add(ev2, sizeof(ev2), "; warning: the host's environment %s is forwarded",
            passthrough ? "(except Docker, Compose, loader and CORDON_* variables)"
                        : "named by env.allow");
        row(r, "env-forwarding", "WARN", "%s", ev2);
    } else {
        row(r, "env-forwarding", scrub_probe || built_probe || inside || !p ? "FAIL" : "PASS", "%s",
            ev2);
    }
}

/* The value of an env: or file: secret, read here on the host only to
 * look for it (never sent anywhere); NULL for command: (not run twice). */
static char *secret_value_for_check(const struct net_secret *sec)
{
    if (strncmp(sec->from, "env:", 4) == 0) {
        const char *v = getenv(sec->from + 4);
        return v && *v ? strdup(v) : NULL;
    }
    if (strncmp(sec->from, "file:", 5) != 0)
        return NULL;
    _cleanup_close_ int fd = open(sec->from + 5, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    char *buf = fd >= 0 ? calloc(1, NET_SECRET_MAX + 1) : NULL;
    ssize_t n = buf ? read(fd, buf, NET_SECRET_MAX) : -1;
    if (n <= 0) {
        free(buf);
        return NULL;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    if (n == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Does the NUL-separated file /proc/PID/WHAT hold NEEDLE? -errno when
 * unreadable. */
static int proc_file_holds(pid_t pid, const char *what, const char *needle)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    static char buf[262144];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0)
        return -errno;
    size_t len = strlen(needle);
    return len <= (size_t)n && memmem(buf, (size_t)n, needle, len) ? 1 : 0;
}

/* [[secrets]] (docs/secrets.md): the sandbox's variable holds the
 * placeholder, the value is in neither the environment the sandbox was
 * built from nor the agent's environment and command line as the kernel
 * holds them. */
void check_secrets(struct verify_run *r)
{
    const struct launch *l = r->l;
    if (l->net.secret_count == 0) {
        row(r, "secrets", "SKIP", "no [[secrets]] configured");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    for (size_t i = 0; i < l->net.secret_count; i++) {
        const struct net_secret *sec = &l->net.secrets[i];
        size_t nlen = strlen(sec->name);
        const char *inside = NULL;
        for (size_t k = 0; l->env && l->env[k]; k++)
            if (strncmp(l->env[k], sec->name, nlen) == 0 && l->env[k][nlen] == '=')
                inside = l->env[k] + nlen + 1;
        bool placeholder = inside && strcmp(inside, sec->placeholder) == 0;
        fail |= !placeholder;
        add(ev, sizeof(ev), "%s%s: the sandbox's variable %s", i ? "; " : "", sec->name,
            placeholder ? "holds the session's placeholder"
            : inside    ? "is NOT the placeholder"
                        : "is missing");
        char *value = secret_value_for_check(sec);
        if (!value) {
            add(ev, sizeof(ev), ", value not read here (%s)",
                strncmp(sec->from, "command:", 8) == 0 ? "command: source" : "unreadable");
            continue;
        }
        bool in_env = false;
        for (size_t k = 0; l->env && l->env[k]; k++)
            in_env |= strstr(l->env[k], value) != NULL;
        int in_agent_env =
            r->agent_pid > 0 ? proc_file_holds(r->agent_pid, "environ", value) : -ESRCH;
        int in_agent_cmd =
            r->agent_pid > 0 ? proc_file_holds(r->agent_pid, "cmdline", value) : -ESRCH;
        explicit_bzero(value, strlen(value));
        free(value);
        fail |= in_env || in_agent_env > 0 || in_agent_cmd > 0;
        add(ev, sizeof(ev), "; its value %s the sandbox's environment",
            in_env ? "IS IN" : "is not in");
        add(ev, sizeof(ev), ", %s the agent's environ",
            in_agent_env > 0   ? "IS IN"
            : in_agent_env < 0 ? "cannot read"
                               : "not in");
        if (in_agent_env < 0)
            add(ev, sizeof(ev), " (%s)", strerrorname_np(-in_agent_env));
        add(ev, sizeof(ev), ", %s its cmdline (from the host)",
            in_agent_cmd > 0   ? "IS IN"
            : in_agent_cmd < 0 ? "cannot read"
                               : "not in");
    }
    if (l->net.mode != NET_MODE_ALLOWLIST)
        add(ev, sizeof(ev), "; network.mode is not allowlist: no request gets the values");
    row(r, "secrets", fail ? "FAIL" : "PASS", "%s", ev);
}

void check_host_files(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "host-files", "FAIL", "no probe answer");
        return;
    }
    char ev[2048] = "", bad[1024] = "";
    size_t i, absent = 0, other = 0;
    json_t *h;
    size_t named = json_array_size(json_object_get(p, "host_paths"));
    json_array_foreach (json_object_get(p, "host_paths"), i, h) {
        const char *stat_result = str(h, "stat");
        if (strcmp(stat_result, "ok") != 0) {
            absent++;
        } else if (json_is_true(json_object_get(h, "same_as_host"))) {
            add(bad, sizeof(bad), "%s%s (the host's file, open: %s)", bad[0] ? ", " : "",
                str(h, "path"), str(h, "open"));
        } else {
            other++;
        }
    }
    add(ev, sizeof(ev),
        "%zu host paths probed at their path (home, ~/.ssh, ~/.docker, ~/.aws, /root, "
        "/etc/shadow ...): %zu absent inside, %zu present only as the sandbox's own files",
        named, absent, other);
    json_t *elsewhere = json_object_get(json_object_get(p, "sockets"), "host_files_elsewhere");
    json_array_foreach (elsewhere, i, h) {
        json_int_t id = json_integer_value(json_object_get(h, "host"));
        const char *name = json_string_value(json_array_get(r->host_names, (size_t)id));
        add(bad, sizeof(bad), "%s%s (the host's file, at %s inside)", bad[0] ? ", " : "",
            name ? name : "?", str(h, "inside"));
    }
    add(ev, sizeof(ev),
        "; the view (all but /proc, /sys, /usr) searched for these and the home "
        "directory's %zu entries (sent as device and inode only): %zu found",
        json_array_size(r->host_names) - named, json_array_size(elsewhere));
    if (bad[0])
        add(ev, sizeof(ev), "; visible: %s", bad);
    row(r, "host-files", bad[0] ? "FAIL" : "PASS", "%s", ev);
}

/* What the backend is (backend/backend.h): with a kernel of its own (vm)
 * the "agent" seen from the host is QEMU and the probe runs under the
 * guest's kernel; in a container (docker) the agent is its PID 1, under
 * Docker's seccomp profile and capability set, in the host's user
 * namespace, with no Landlock of cordon's from the host. */
bool backend_is(const struct verify_run *r, unsigned caps)
{
    return r->l && backend_has(r->l->backend, caps);
}

bool on_own_kernel(const struct verify_run *r)
{
    return backend_is(r, BACKEND_CAP_OWN_KERNEL);
}

void check_docker(struct verify_run *r, const json_t *p)
{
    if (!p) {
        row(r, "docker-socket", "FAIL", "no probe answer");
        return;
    }
    json_t *so = json_object_get(p, "sockets");
    char ev[2048] = "", bad[1024] = "";
    size_t i;
    json_t *k;
    /* The vm guest's own daemon (src/agent/vm-docker.c) is the one socket
     * allowed to answer, and only when it is verified as the guest's. */
    json_t *gd = json_object_get(p, "guest_docker");
    bool vm = backend_is(r, BACKEND_CAP_OWN_DOCKER);
    bool guest_own_ok = vm && json_is_true(json_object_get(gd, "own"));
    if (json_is_object(gd)) {
        add(ev, sizeof(ev), "guest dockerd: %s%s%s (pid %lld, ID %s): %s; ", str(gd, "state"),
            str(gd, "reason")[0] ? ": " : "", str(gd, "reason"),
            (long long)json_integer_value(json_object_get(gd, "pid")), str(gd, "id"),
            str(gd, "detail"));
        if (!guest_own_ok)
            add(bad, sizeof(bad), "%s%s", bad[0] ? ", " : "",
                vm ? "an unverified Docker socket in the guest"
                   : "a Docker status file outside the vm backend");
    } else if (vm) {
        add(ev, sizeof(ev), "no guest dockerd (docker.mode = \"%s\"); ",
            cfg_enum_name(CFG_DOCKER_MODE, r->l->cfg.docker.mode));
    }
    add(ev, sizeof(ev), "connect:");
    json_array_foreach (json_object_get(so, "known"), i, k) {
        add(ev, sizeof(ev), " %s %s;", str(k, "path"), str(k, "connect"));
        if (json_is_true(json_object_get(k, "guest_own")) && guest_own_ok)
            continue;
        if (strcmp(str(k, "connect"), "ok") == 0 || json_is_true(json_object_get(k, "guest_own")))
            add(bad, sizeof(bad), "%s%s", bad[0] ? ", " : "", str(k, "path"));
    }
    size_t found = json_array_size(json_object_get(so, "found"));
    add(ev, sizeof(ev), " %lld entries scanned (all but /proc, /sys, /usr)%s, %zu sockets found",
        (long long)json_integer_value(json_object_get(so, "scanned")),
        json_is_true(json_object_get(so, "scan_complete")) ? "" : " (scan bounded)", found);
    json_array_foreach (json_object_get(so, "found"), i, k) {
        if (json_is_true(json_object_get(k, "docker")))
            add(bad, sizeof(bad), "%s%s (answers the Docker API)", bad[0] ? ", " : "",
                str(k, "path"));
    }
    if (bad[0])
        add(ev, sizeof(ev), "; reachable: %s", bad);
    row(r, "docker-socket", bad[0] ? "FAIL" : "PASS", "%s", ev);
}

static bool loopback_bind(const char *bind)
{
    return strcmp(bind, "127.0.0.1") == 0 || strcmp(bind, "::1") == 0 ||
           strcmp(bind, "localhost") == 0 || strncmp(bind, "127.", 4) == 0;
}

/* Listening sockets on the host for a port: loopback-only is the rule. */
static void host_listeners(int port, char *out, size_t size, bool *nonloop, bool *any)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        _cleanup_fclose_ FILE *fp = fopen(files[f], "re");
        char line[512];
        while (fp && fgets(line, sizeof(line), fp)) {
            char local[64];
            unsigned lport, st;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x", local, &lport, &st) != 3)
                continue;
            if (st != 0x0A || (int)lport != port)
                continue;
            *any = true;
            bool loop = f == 0 ? strcmp(local, "0100007F") == 0
                               : strcmp(local, "00000000000000000000000001000000") == 0;
            if (!loop)
                *nonloop = true;
            add(out, size, " %s:%d%s", f == 0 ? "tcp" : "tcp6", port,
                loop ? " on loopback" : " on a non-loopback address");
        }
    }
}

void check_ports(struct verify_run *r)
{
    const struct cfg_ports *pp = &r->l->cfg.network.publish_ports;
    if (pp->count == 0) {
        row(r, "published-ports", "SKIP", "no ports published (network.publish_ports is empty)");
        return;
    }
    char ev[2048] = "";
    bool fail = false;
    for (size_t i = 0; i < pp->count; i++) {
        const struct cfg_port *p = &pp->items[i];
        bool nonloop = false, any = false;
        char seen[512] = "";
        host_listeners((int)p->host_port, seen, sizeof(seen), &nonloop, &any);
        add(ev, sizeof(ev), "%s%s:%ld -> %ld: host listeners:%s", i ? "; " : "", p->bind,
            (long)p->host_port, (long)p->guest_port, any ? seen : " none");
        if (!loopback_bind(p->bind) || nonloop)
            fail = true;
    }
    row(r, "published-ports", fail ? "FAIL" : "PASS", "%s", ev);
}
