/* Docker inside the microVM, host side (see vm-docker-plan.h and
 * src/agent/vm-docker.c for the guest's part): the daemon must come from the
 * shared system directories (the guest only sees /usr of the host), and its
 * storage is a sparse raw image attached as virtio-blk, private to the guest.
 * Host context (supervisor). */
#include "backend/vm/vm-docker-plan.h"
#include "config/config.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sparse: only what the guest writes takes space on the host. */
#define DOCKER_DISK_BYTES (16LL << 30)

static bool executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The first of names found in the shared system directories, or NULL. */
static const char *find_in_usr(const char *name, char *out, size_t size)
{
    static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                       "/usr/bin"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        snprintf(out, size, "%s/%s", dirs[i], name);
        if (executable_file(out))
            return out;
    }
    return NULL;
}

static int disk_make(const struct launch *l, char *out, size_t size, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    if (snprintf(out, size, "%s/%s/docker.img", root, l->name) >= (int)size)
        return error_set(err, ENAMETOOLONG, "vm: docker disk path");
    _cleanup_close_ int fd = open(out, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(err, errno, "vm: creating the Docker disk %s", out);
    if (st.st_size == 0 && ftruncate(fd, DOCKER_DISK_BYTES) < 0)
        return error_set(err, errno, "vm: sizing the Docker disk %s", out);
    return 0;
}

int vm_docker_plan_make(const struct launch *l, struct vm_docker_plan *p, struct cordon_error *err)
{
    *p = (struct vm_docker_plan){.mode = l->cfg.docker.mode};
    if (p->mode == CFG_DOCKER_DISABLED) {
        snprintf(p->reason, sizeof(p->reason), "disabled (docker.mode = \"disabled\")");
        return 0;
    }
    const char *mode = p->mode == CFG_DOCKER_REQUIRE ? "require" : "auto";
    /* A test seam: another dockerd path under /usr (or a missing one). */
    const char *override = getenv("CORDON_VM_DOCKERD");
    char found[PATH_MAX], runc[PATH_MAX], containerd[PATH_MAX];
    const char *missing = NULL;
    if (override && override[0]) {
        if (strncmp(override, "/usr/", 5) != 0 || !executable_file(override))
            missing = override;
        else
            snprintf(found, sizeof(found), "%s", override);
    } else if (!find_in_usr("dockerd", found, sizeof(found))) {
        missing = "dockerd";
    }
    if (!missing && !find_in_usr("containerd", containerd, sizeof(containerd)))
        missing = "containerd";
    if (!missing && !find_in_usr("runc", runc, sizeof(runc)))
        missing = "runc";
    if (missing) {
        snprintf(p->reason, sizeof(p->reason),
                 "missing: %s is not in the shared system directories (/usr; Debian: apt-get "
                 "install docker.io)",
                 missing);
        if (p->mode == CFG_DOCKER_REQUIRE)
            return error_set(err, 0, "docker.mode = \"require\": Docker is %s", p->reason);
        return 0;
    }
    snprintf(p->dockerd, sizeof(p->dockerd), "%s", found);
    if (disk_make(l, p->disk, sizeof(p->disk), err) < 0)
        return -1;
    p->start = true;
    int n = snprintf(p->reason, sizeof(p->reason), "%s: the guest's own %.200s, storage on %.250s",
                     mode, p->dockerd, p->disk);
    (void)n;
    return 0;
}

json_t *vm_docker_plan_spec(const struct vm_docker_plan *p)
{
    return json_pack("{s:s,s:b,s:s}", "mode", p->mode == CFG_DOCKER_REQUIRE ? "require" : "auto",
                     "start", p->start, "dockerd", p->dockerd);
}
