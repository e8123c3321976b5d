/* What the vm guest's dockerd keeper (src/backend/vm/guest/vm-docker.c)
 * leaves for the agent's probe (src/agent/probe.c), both in the guest. */
#pragma once

/* The socket clients use (a link to /run/docker.sock in the guest), and
 * the status file the keeper maintains (JSON, world-readable, root-owned):
 *   {"mode", "state": "idle"|"starting"|"ready"|"unavailable"|"exited",
 *    "reason", "socket_ino" (sockfs), "path_ino" (the file in /run), "pid", "id",
 *    "version", "ready_ms", "log"} */
#define VM_DOCKER_SOCKET "/var/run/docker.sock"
#define VM_DOCKER_STATUS "/run/cordon/docker.json"
