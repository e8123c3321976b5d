/* The rows of a host probe, where cordon runs, and backend = "auto"'s
 * choice (probe.h). Host context, unprivileged. */
#include "backend/probe.h"
#include "util/cleanup.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void probe_add(struct probe_report *r, const char *id, enum probe_status status, const char *fix,
               const char *fmt, ...)
{
    if (!r || r->count >= PROBE_MAX_ROWS)
        return;
    struct probe_row *row = &r->rows[r->count++];
    snprintf(row->id, sizeof(row->id), "%s", id);
    row->status = status;
    snprintf(row->fix, sizeof(row->fix), "%s", fix ? fix : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->evidence, sizeof(row->evidence), fmt, ap);
    va_end(ap);
    probe_strip_hint(row->evidence);
}

void probe_strip_hint(char *text)
{
    static const char hint[] = "; run `cordon doctor`";
    char *at = strstr(text, hint);
    if (at)
        memmove(at, at + strlen(hint), strlen(at + strlen(hint)) + 1);
}

const char *probe_status_name(enum probe_status status)
{
    return status == PROBE_PASS ? "PASS" : status == PROBE_WARN ? "WARN" : "FAIL";
}

/* The first line of path that contains needle, or false. */
static bool file_has(const char *path, const char *needle, char *line, size_t size)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return false;
    while (fgets(line, (int)size, f)) {
        if (strstr(line, needle)) {
            line[strcspn(line, "\n")] = '\0';
            return true;
        }
    }
    return false;
}

void probe_container(struct probe_report *r)
{
    char line[512];
    const char *which = NULL;
    char evidence[600] = "";
    if (access("/.dockerenv", F_OK) == 0) {
        which = "docker";
        snprintf(evidence, sizeof(evidence), "/.dockerenv exists");
    } else if (access("/run/.containerenv", F_OK) == 0) {
        which = "podman";
        snprintf(evidence, sizeof(evidence), "/run/.containerenv exists");
    } else if (getenv("KUBERNETES_SERVICE_HOST")) {
        which = "kubernetes";
        snprintf(evidence, sizeof(evidence), "KUBERNETES_SERVICE_HOST is set");
    } else if (file_has("/proc/1/cgroup", "docker", line, sizeof(line)) ||
               file_has("/proc/1/cgroup", "kubepods", line, sizeof(line)) ||
               file_has("/proc/1/cgroup", "lxc", line, sizeof(line))) {
        which = strstr(line, "kubepods") ? "kubernetes" : strstr(line, "lxc") ? "lxc" : "docker";
        snprintf(evidence, sizeof(evidence), "/proc/1/cgroup: %s", line);
    } else if (getenv("WSL_DISTRO_NAME") ||
               file_has("/proc/sys/kernel/osrelease", "microsoft", line, sizeof(line))) {
        which = NULL;
        probe_add(r, "container", PROBE_PASS, NULL,
                  "not in a container; WSL2 (%s): its kernel decides what is available below",
                  getenv("WSL_DISTRO_NAME") ? getenv("WSL_DISTRO_NAME") : line);
        return;
    }
    if (!which) {
        probe_add(r, "container", PROBE_PASS, NULL,
                  "not in a container (no /.dockerenv, /run/.containerenv, container cgroup)");
        return;
    }
    probe_add(r, "container", PROBE_WARN,
              "see docs/ci.md for the container options each backend needs",
              "inside a %s container (%s): its seccomp profile and capabilities limit the ns "
              "backend",
              which, evidence);
}

const char *probe_backend_strength(int backend)
{
    switch (backend) {
    case CFG_BACKEND_VM:
        return "kernel-boundary";
    case CFG_BACKEND_DOCKER:
        return "container";
    default:
        return "ns";
    }
}

bool probe_auto_considers(int backend, const struct cordon_config *cfg)
{
    return backend != CFG_BACKEND_DOCKER || cfg->docker.image;
}

bool probe_meets_floor(const char *strength, int floor)
{
    if (floor == PROBE_FLOOR_KERNEL)
        return strcmp(strength, "kernel-boundary") == 0;
    if (floor == PROBE_FLOOR_NS)
        return strcmp(strength, "container") != 0;
    return true;
}

static const char *floor_name(int floor)
{
    return floor == PROBE_FLOOR_KERNEL ? "kernel-boundary" : floor == PROBE_FLOOR_NS ? "ns" : "any";
}

/* The order auto tries (docs/doctor.md): vm on KVM (its own kernel, fast),
 * ns (namespaces, seccomp, Landlock on the host's kernel), vm under TCG (its
 * own kernel, emulated: seconds to start), docker (when docker.image is
 * configured and the daemon passes the backend's checks). */
int probe_choose_backend(const struct cordon_config *cfg, int *backend, char *why, size_t size)
{
    struct probe_verdict vm = {0}, ns = {0}, docker = {0};
    int floor = cfg->backend_floor;
    vm_host_probe(cfg, NULL, &vm);
    bool vm_ok = vm.works && probe_meets_floor(vm.strength, floor);
    if (vm_ok && strcmp(vm.detail, "kvm") == 0) {
        *backend = CFG_BACKEND_VM;
        snprintf(why, size, "auto chose vm (kvm): a kernel boundary with hardware acceleration");
        return 0;
    }
    if (floor != PROBE_FLOOR_KERNEL) {
        ns_host_probe(cfg, NULL, &ns);
        if (ns.works) {
            *backend = CFG_BACKEND_NS;
            snprintf(why, size, "auto chose ns: %s%s%.300s", ns.why,
                     vm.works ? "" : "; vm: ", vm.works ? "" : vm.why);
            return 0;
        }
    }
    if (vm_ok) {
        *backend = CFG_BACKEND_VM;
        snprintf(why, size, "auto chose vm (%s)%s%.400s", vm.detail,
                 floor == PROBE_FLOOR_KERNEL ? ": backend_floor = \"kernel-boundary\"" : "; ns: ",
                 floor == PROBE_FLOOR_KERNEL ? "" : ns.why);
        return 0;
    }
    if (floor == PROBE_FLOOR_ANY && cfg->docker.image) {
        docker_host_probe(cfg, NULL, &docker);
        if (docker.works) {
            *backend = CFG_BACKEND_DOCKER;
            snprintf(why, size, "auto chose docker; ns: %.300s; vm: %.300s", ns.why, vm.why);
            return 0;
        }
    }
    snprintf(why, size,
             "backend = \"auto\": no backend that works here meets backend_floor = \"%s\" "
             "(vm: %.250s%s%.250s)",
             floor_name(floor), vm.why, floor == PROBE_FLOOR_KERNEL ? "" : "; ns: ",
             floor == PROBE_FLOOR_KERNEL ? "" : ns.why);
    return -1;
}
