/* Resource limits (host side: cgroups; child side: rlimits). RLIMIT_NPROC is
 * counted per user namespace since Linux 5.14 (ucounts), so in the sandbox's
 * own user namespace it bounds the sandbox's processes, not the host user's:
 * a fork bomb stops there even where no cgroup can be made. */
#include "backend/ns/ns-limits.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ns_limits_prepare(const struct sandbox_limits *limits, struct ns_rlimits *out)
{
    out->count = 0;
    if (limits->pids > 0)
        out->items[out->count++] =
            (struct ns_rlimit){RLIMIT_NPROC, {(rlim_t)limits->pids, (rlim_t)limits->pids}};
    if (limits->open_files > 0)
        out->items[out->count++] = (struct ns_rlimit){
            RLIMIT_NOFILE, {(rlim_t)limits->open_files, (rlim_t)limits->open_files}};
    if (limits->file_size_mib > 0) {
        rlim_t bytes = (rlim_t)limits->file_size_mib << 20;
        out->items[out->count++] = (struct ns_rlimit){RLIMIT_FSIZE, {bytes, bytes}};
    }
    /* The hard limit one second later: SIGXCPU first (a catchable warning,
     * exit 152 when not caught), SIGKILL only if that is ignored. */
    if (limits->cpu_seconds > 0)
        out->items[out->count++] = (struct ns_rlimit){
            RLIMIT_CPU, {(rlim_t)limits->cpu_seconds, (rlim_t)limits->cpu_seconds + 1}};
    /* No core files of sandboxed processes on the host's behalf. */
    out->items[out->count++] = (struct ns_rlimit){RLIMIT_CORE, {0, 0}};
}

int ns_limits_apply_in_child(const struct ns_rlimits *rl, struct cordon_error *err)
{
    for (int i = 0; i < rl->count; i++) {
        struct rlimit cur;
        struct rlimit want = rl->items[i].value;
        /* Never raise a limit the host already set lower. */
        if (getrlimit(rl->items[i].resource, &cur) == 0) {
            if (cur.rlim_max != RLIM_INFINITY && want.rlim_max > cur.rlim_max)
                want.rlim_max = cur.rlim_max;
            if (want.rlim_cur > want.rlim_max)
                want.rlim_cur = want.rlim_max;
        }
        if (setrlimit(rl->items[i].resource, &want) < 0)
            return error_set_raw(err, errno, "setrlimit", NULL);
    }
    return 0;
}

static int write_file(const char *path, const char *value)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    size_t len = strlen(value);
    return write(fd, value, len) == (ssize_t)len ? 0 : -1;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void note(struct ns_sandbox *sb, const char *what)
{
    size_t len = strlen(sb->limits_applied);
    snprintf(sb->limits_applied + len, sizeof(sb->limits_applied) - len, "%s%s", len ? ", " : "",
             what);
}

/* One cgroup v1 controller: mkdir <mount>/cordon/<name>, write the limits,
 * open its tasks file for the child (ns_cgroups_join_in_child). Returns 1
 * when made, 0 when not possible here, -1 when made but not enforceable
 * (which fails closed). */
static int cgroup_v1(struct ns_sandbox *sb, struct ns_cgroup_join *join, int slot,
                     const char *controller, const char *name, const char *file, const char *value,
                     struct cordon_error *err)
{
    char base[256], dir[512], path[600];
    snprintf(base, sizeof(base), "/sys/fs/cgroup/%s", controller);
    if (!is_dir(base) || access(base, W_OK) != 0)
        return 0;
    snprintf(dir, sizeof(dir), "%s/cordon", base);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return 0;
    snprintf(dir, sizeof(dir), "%s/cordon/%s", base, name);
    if (mkdir(dir, 0755) < 0) {
        if (errno != EEXIST)
            return 0;
        /* One left by a supervisor that was killed: made young again, so
         * that `cordon gc` (state.c) leaves it until the child joins. */
        utimensat(AT_FDCWD, dir, NULL, 0);
    }
    sb->cgroup_paths[slot] = strdup(dir);
    if (!sb->cgroup_paths[slot])
        return error_set(err, ENOMEM, "cgroup: %s", dir);
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (write_file(path, value) < 0)
        return error_set(err, errno, "cgroup: writing %s to %s", value, path);
    /* The child moves itself: "0" written to the v1 tasks file moves the
     * writing thread, and the kernel takes no global lock for that (a pid
     * written to cgroup.procs waits for every fork on the host and an RCU
     * grace period: 5-40 ms under load). The child has one thread, so that
     * is the whole process, before anything else runs in it. */
    snprintf(path, sizeof(path), "%s/tasks", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return error_set(err, errno, "cgroup: opening %s", path);
    join->fds[join->count] = fd;
    join->dirs[join->count] = sb->cgroup_paths[slot];
    join->count++;
    return 1;
}

/* cgroup v2: a child of our own cgroup, when it is delegated to us (writable
 * and with the controllers enabled for children). */
static int cgroup_v2(const struct ns_spec *spec, struct ns_sandbox *sb, struct cordon_error *err)
{
    char own[640] = "";
    _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    char line[640];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(own, sizeof(own), "%s", line + 3);
            own[strcspn(own, "\n")] = '\0';
        }
    }
    const char *mnt =
        is_dir("/sys/fs/cgroup/unified") ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
    char ctl[1024], dir[1024], path[1100];
    snprintf(ctl, sizeof(ctl), "%s%s/cgroup.subtree_control", mnt, own);
    char enabled[256] = "";
    _cleanup_fclose_ FILE *c = fopen(ctl, "re");
    if (!c || !fgets(enabled, sizeof(enabled), c) || !strstr(enabled, "pids"))
        return 0;
    snprintf(dir, sizeof(dir), "%s%s/cordon-%s", mnt, own, spec->name);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return 0;
    sb->cgroup_paths[0] = strdup(dir);
    char value[64];
    if (spec->limits.pids > 0) {
        snprintf(path, sizeof(path), "%s/pids.max", dir);
        snprintf(value, sizeof(value), "%ld", spec->limits.pids);
        if (write_file(path, value) < 0)
            return error_set(err, errno, "cgroup: writing %s", path);
    }
    if (spec->limits.memory_mib > 0 && strstr(enabled, "memory")) {
        snprintf(path, sizeof(path), "%s/memory.max", dir);
        snprintf(value, sizeof(value), "%ld", spec->limits.memory_mib << 20);
        if (write_file(path, value) < 0)
            return error_set(err, errno, "cgroup: writing %s", path);
        snprintf(path, sizeof(path), "%s/memory.swap.max", dir);
        write_file(path, "0");
    }
    if (spec->limits.cpus > 0 && strstr(enabled, "cpu")) {
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        snprintf(value, sizeof(value), "%ld 100000", (long)(spec->limits.cpus * 100000));
        if (write_file(path, value) < 0)
            return error_set(err, errno, "cgroup: writing %s", path);
    }
    note(sb, "cgroup v2 (pids, memory, cpu)");
    return 1;
}

int ns_cgroups_prepare(const struct ns_spec *spec, struct ns_sandbox *sb,
                       struct ns_cgroup_join *join, struct cordon_error *err)
{
    const struct sandbox_limits *l = &spec->limits;
    *join = (struct ns_cgroup_join){.fds = {-1, -1, -1}};
    int rc = cgroup_v2(spec, sb, err);
    if (rc != 0) {
        join->v2 = rc > 0;
        return rc < 0 ? -1 : 0;
    }
    char value[64];
    /* RLIMIT_NPROC is counted per user namespace, so for a sandbox of an
     * ordinary user it bounds exactly the sandbox's processes. The kernel
     * exempts kuid 0 from it, though: a sandbox of root needs the pids
     * cgroup. */
    if (l->pids > 0 && geteuid() == 0) {
        snprintf(value, sizeof(value), "%ld", l->pids);
        rc = cgroup_v1(sb, join, 0, "pids", spec->name, "pids.max", value, err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            note(sb, "pids: cgroup v1");
        else
            note(sb, "pids: NO LIMIT (root, and no pids cgroup could be made)");
    } else if (l->pids > 0) {
        note(sb, "pids: RLIMIT_NPROC (per user namespace)");
    }
    if (l->memory_mib > 0) {
        snprintf(value, sizeof(value), "%ld", l->memory_mib << 20);
        rc = cgroup_v1(sb, join, 1, "memory", spec->name, "memory.limit_in_bytes", value, err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            note(sb, "memory: cgroup v1");
    }
    if (l->cpus > 0) {
        snprintf(value, sizeof(value), "%ld", (long)(l->cpus * 100000));
        rc = cgroup_v1(sb, join, 2, "cpu", spec->name, "cpu.cfs_quota_us", value, err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            note(sb, "cpu: cgroup v1");
    }
    if (!sb->limits_applied[0])
        note(sb, "no cgroup available: rlimits only");
    return 0;
}

int ns_cgroups_attach(const struct ns_cgroup_join *join, pid_t pid, struct ns_sandbox *sb,
                      struct cordon_error *err)
{
    if (!join->v2)
        return 0; /* v1: the child joined its cgroups itself */
    char path[1100], value[32];
    snprintf(path, sizeof(path), "%s/cgroup.procs", sb->cgroup_paths[0]);
    snprintf(value, sizeof(value), "%d", pid);
    if (write_file(path, value) < 0)
        return error_set(err, errno, "cgroup: adding the sandbox to %s", sb->cgroup_paths[0]);
    return 0;
}

int ns_cgroups_join_in_child(const struct ns_cgroup_join *join, struct cordon_error *err)
{
    for (int i = 0; i < join->count; i++) {
        if (write(join->fds[i], "0", 1) != 1)
            return error_set_raw(err, errno, "cgroup: joining", join->dirs[i]);
    }
    return 0;
}

void ns_cgroups_join_close(struct ns_cgroup_join *join)
{
    for (int i = 0; i < join->count; i++) {
        if (join->fds[i] >= 0)
            close(join->fds[i]);
        join->fds[i] = -1;
    }
    join->count = 0;
}

void ns_cgroups_remove(struct ns_sandbox *sb)
{
    for (size_t i = 0; i < ARRAY_SIZE(sb->cgroup_paths); i++) {
        if (!sb->cgroup_paths[i])
            continue;
        /* The sandbox's processes are gone once PID 1 has been reaped; the
         * kernel may need a moment to drop them from the cgroup. */
        for (int tries = 0; tries < 50 && rmdir(sb->cgroup_paths[i]) < 0 && errno == EBUSY; tries++)
            usleep(2000);
        free(sb->cgroup_paths[i]);
        sb->cgroup_paths[i] = NULL;
    }
}
