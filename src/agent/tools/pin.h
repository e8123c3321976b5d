/* Approved host calls open exactly what the user approved. When the user
 * approves a host call (docs/routing.md), the supervisor resolves the path
 * the call touches to a canonical one, pins the directory it lies in (and
 * the working directory) by fd, and sends the host agent a "pin" with the
 * call. The host agent re-opens each pinned directory by its canonical path
 * with RESOLVE_NO_SYMLINKS and checks on the opened fd that it is the very
 * inode that was approved (the supervisor keeps its fd open, so the inode
 * number cannot be reused meanwhile); the tool then opens its target only as
 * openat2(dir_fd, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink the
 * sandbox planted after the prompt is refused, never followed. Host context
 * (cordon-agent serve --host), or the supervisor for the wire format. */
#pragma once

#include "agent/tools/tool.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The frame field the supervisor adds to a host call ("pin"):
 *   {"cwd": {"path": HEX, "dev": N, "ino": N},
 *    "dir": {"path": HEX, "dev": N, "ino": N},   file tools only
 *    "target": HEX, "rel": HEX}                   file tools only
 * Paths are hex-encoded bytes: a canonical path need not be UTF-8, and a
 * JSON string must be. */
#define TOOL_PIN_FIELD "pin"

struct tool_pin {
    int cwd_fd;         /* the approved working directory (O_PATH), or -1 */
    const char *target; /* the path as the tool resolves it (pi's rules), or NULL */
    int dir_fd;         /* the approved directory the target lies in (O_PATH), or -1 */
    const char *dir;    /* its canonical path, for messages */
    const char *rel;    /* the target below dir_fd, canonical at approval; "" is dir itself */
    /* owned storage of the strings above */
    char *storage[3];
};

/* Host agent: opens and checks the pin of one call. -1 with a message in
 * why (a refusal naming the path and the reason) when a pinned directory is
 * not the approved one any more. Release with tool_pin_close(). */
int tool_pin_from_json(json_t *pin_json, struct tool_pin *pin, char *why, size_t why_size);
void tool_pin_close(struct tool_pin *pin);

/* Opens the pinned target for a tool that resolved its path to abs_path:
 * openat2(dir_fd, rel, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS).
 * -1 with errno on failure; when the open is refused because abs_path is not
 * the approved path or a symlink stands where the approval saw none, why is
 * filled ("cordon: a symlink appeared at /ws/notes after approval; refused")
 * and errno is EPERM or ELOOP; otherwise why is "". */
int tool_pin_open(const struct tool_pin *pin, const char *abs_path, int flags, mode_t mode,
                  char *why, size_t why_size);

/* The directory that holds the pinned target, for write and edit, as an
 * O_PATH fd; *base is the target's last component. With create, missing
 * directories are made (mkdir -p, mode 0777 & ~umask), each one with
 * mkdirat() and opened with RESOLVE_NO_SYMLINKS. -1 with errno (and
 * *failed_path, malloc'd, the component that failed) or with why filled as
 * in tool_pin_open. */
int tool_pin_parent(const struct tool_pin *pin, const char *abs_path, bool create,
                    const char **base, char **failed_path, char *why, size_t why_size);

/* Hex encoding of the pin's paths (lower case); malloc'd, NULL on failure. */
char *tool_pin_hex(const char *s);
