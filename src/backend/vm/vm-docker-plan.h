/* Docker inside the microVM, host side: whether the guest starts its own
 * dockerd (docker.mode, and dockerd in the shared /usr), and the guest-private
 * disk its storage lives on. Host context (supervisor). */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

struct launch;

struct vm_docker_plan {
    int mode;               /* enum cfg_docker_mode */
    bool start;             /* the guest starts its daemon */
    char dockerd[PATH_MAX]; /* as the guest sees it (under the shared /usr) */
    char disk[PATH_MAX];    /* the raw image, "" for none */
    char reason[512];       /* why Docker is not started, or what it gets */
};

/* Decides from the configuration and the host's /usr. "require" with no
 * dockerd is an error (the session must not start); "auto" records the
 * reason and carries on. Creates the sparse disk image in the session's state
 * directory (<state root>/<name>/docker.img: kept by teardown "stop",
 * removed with the session's state by "remove", `cordon rm` and `gc`). */
int vm_docker_plan_make(const struct launch *l, struct vm_docker_plan *p, struct cordon_error *err);

/* The boot spec's "docker" object. */
json_t *vm_docker_plan_spec(const struct vm_docker_plan *p);
