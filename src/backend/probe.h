/* What this host allows, per backend: the capability query `cordon doctor`
 * prints and `backend = "auto"` chooses from (docs/doctor.md). Each backend
 * has its probe in its own folder (ns/ns-probe.c, vm/vm-probe-host.c,
 * docker/docker-probe.c), reusing the checks its start makes. Host context,
 * unprivileged; a probe starts nothing that outlives it. */
#pragma once

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>

enum probe_status { PROBE_PASS, PROBE_WARN, PROBE_FAIL };

struct probe_row {
    char id[32];
    enum probe_status status;
    char evidence[640];
    char fix[512]; /* empty: nothing to do */
};

#define PROBE_MAX_ROWS 40

/* The rows of the checks (may be NULL when only the verdict matters). */
struct probe_report {
    struct probe_row rows[PROBE_MAX_ROWS];
    size_t count;
};

/* One backend's answer. */
struct probe_verdict {
    bool works;
    /* "kernel-boundary" (vm: its own kernel), "ns" (namespaces, seccomp and
     * Landlock on the host's kernel) or "container" (docker: a container on
     * a daemon cordon drives) */
    const char *strength;
    char detail[32]; /* vm: the accelerator it would use ("kvm", "tcg") */
    char why[1024];  /* works: what it runs on; else: what is missing and the fix */
};

/* Fills v (and appends rows to r when r is not NULL) for this host and
 * configuration. Never fails: what cannot be checked is a FAIL row. */
typedef void (*backend_host_probe_fn)(const struct cordon_config *cfg, struct probe_report *r,
                                      struct probe_verdict *v);

void probe_add(struct probe_report *r, const char *id, enum probe_status status, const char *fix,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const char *probe_status_name(enum probe_status status);
/* Removes the "run `cordon doctor`" hint of an error message (doctor is
 * what is running). */
void probe_strip_hint(char *text);

/* The backends' probes (ns/ns-probe.c, vm/vm-probe-host.c,
 * docker/docker-probe.c) and the host checks shared by all (probe.c). */
void ns_host_probe(const struct cordon_config *cfg, struct probe_report *r,
                   struct probe_verdict *v);
void vm_host_probe(const struct cordon_config *cfg, struct probe_report *r,
                   struct probe_verdict *v);
void docker_host_probe(const struct cordon_config *cfg, struct probe_report *r,
                       struct probe_verdict *v);
/* Whether cordon runs inside a container, and which (a row "container"). */
void probe_container(struct probe_report *r);

/* backend = "auto" (docs/doctor.md "auto"): the order it tries. */
enum probe_floor { PROBE_FLOOR_ANY, PROBE_FLOOR_NS, PROBE_FLOOR_KERNEL };
/* The strength of a backend (enum cfg_backend, not auto), as in
 * struct probe_verdict. */
const char *probe_backend_strength(int backend);
/* Whether auto considers backend (enum cfg_backend) for cfg: docker only
 * with a docker.image. */
bool probe_auto_considers(int backend, const struct cordon_config *cfg);
/* Whether a backend of this strength meets the floor. */
bool probe_meets_floor(const char *strength, int floor);
/* Picks the backend for cfg (auto) into *backend (enum cfg_backend); why
 * says which and why, in one line. <0 when nothing that works here meets
 * backend_floor: why is then the refusal with every backend's reason. */
int probe_choose_backend(const struct cordon_config *cfg, int *backend, char *why, size_t size);
