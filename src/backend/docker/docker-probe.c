/* The docker backend's part of the host probe (backend/probe.h): the same
 * checks docker_start makes of the daemon (docker_check_host) and of the
 * configuration (docker_check_config). Host context. */
#include "backend/docker/docker.h"
#include "backend/probe.h"

#include <stdio.h>
#include <string.h>

void docker_host_probe(const struct cordon_config *cfg, struct probe_report *r,
                       struct probe_verdict *v)
{
    *v = (struct probe_verdict){.strength = "container"};
    struct cordon_error err = {0};
    const char *stage = "cli";
    int rc = docker_check_host(cfg, &stage, &err);
    if (rc < 0 && strcmp(stage, "image") != 0) {
        const char *fix = strcmp(stage, "cli") == 0 ? "sudo apt-get install docker.io"
                          : strcmp(stage, "socket") == 0
                              ? "start a daemon (sudo systemctl start docker; rootless: "
                                "dockerd-rootless-setuptool.sh install) and set docker.host in "
                                "~/.config/cordon/config.toml to its socket; in a container, "
                                "mount the socket on purpose (docs/ci.md)"
                              : "run the daemon with its default seccomp profile and the pids "
                                "and memory cgroup controllers (docs/docker-backend.md)";
        probe_add(r, "docker", PROBE_FAIL, fix, "%s", err.message);
        snprintf(v->why, sizeof(v->why), "%s", err.message);
        probe_strip_hint(v->why);
        return;
    }
    probe_add(r, "docker", PROBE_PASS, NULL,
              "the daemon at %s answers and confines containers with seccomp (the docker "
              "backend's checks)",
              cfg->docker.host);
    if (rc < 0) {
        probe_add(r, "docker-image", PROBE_FAIL,
                  "set docker.image in ~/.config/cordon/config.toml to an image on that daemon "
                  "(docker import of a root file system works offline; docs/docker-backend.md)",
                  "%s", err.message);
        snprintf(v->why, sizeof(v->why), "%s", err.message);
        probe_strip_hint(v->why);
        return;
    }
    probe_add(r, "docker-image", PROBE_PASS, NULL, "image %s is on the daemon", cfg->docker.image);
    if (docker_check_config(cfg, &err) < 0) {
        snprintf(v->why, sizeof(v->why), "%s", err.message);
        probe_strip_hint(v->why);
        return;
    }
    v->works = true;
    snprintf(v->why, sizeof(v->why), "the daemon at %s with image %s", cfg->docker.host,
             cfg->docker.image);
}
