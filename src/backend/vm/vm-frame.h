/* Length-prefixed JSON frames (docs/agent-protocol.md "Framing") for the
 * vm backend's boot exchange on the virtio-serial channel, before the agent
 * protocol proper takes the stream over. Any context (host supervisor and
 * the guest's init). */
#pragma once

#include <jansson.h>

/* The boot exchange is small; anything larger is a protocol error. */
#define VM_FRAME_MAX (1 << 20)

/* Writes one frame; 0 or -1 with errno. */
int vm_frame_write(int fd, const json_t *msg);
/* Reads one frame, waiting at most timeout_ms (-1: forever); NULL with errno
 * (ETIMEDOUT, EPROTO for a malformed frame, ECONNRESET at end of stream). */
json_t *vm_frame_read(int fd, int timeout_ms);
