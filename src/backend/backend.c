/* The table of backends, looked up by name. Host context. */
#include "backend/backend.h"
#include "backend/docker/docker.h"
#include "backend/ns/ns.h"
#include "backend/vm/vm.h"

#include <string.h>

static const struct backend_ops *const backends[] = {
    &ns_backend_ops,
    &vm_backend_ops,
    &docker_backend_ops,
};

void backend_relayed_signals(sigset_t *mask)
{
    static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++)
        sigaddset(mask, relayed[i]);
}

const struct backend_ops *backend_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    }
    return NULL;
}

/* ---- the host probe (backend/probe.h), by name; in the order of enum
 * cfg_backend, which doctor reports in ---- */
static const struct {
    const char *name;
    backend_host_probe_fn probe;
} host_probes[] = {
    [CFG_BACKEND_NS] = {"ns", ns_host_probe},
    [CFG_BACKEND_VM] = {"vm", vm_host_probe},
    [CFG_BACKEND_DOCKER] = {"docker", docker_host_probe},
};

size_t backend_probe_count(void)
{
    return sizeof(host_probes) / sizeof(host_probes[0]);
}

const char *backend_probe_name(size_t i)
{
    return i < backend_probe_count() ? host_probes[i].name : NULL;
}

backend_host_probe_fn backend_probe_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof(host_probes) / sizeof(host_probes[0]); i++)
        if (strcmp(host_probes[i].name, name) == 0)
            return host_probes[i].probe;
    return NULL;
}
