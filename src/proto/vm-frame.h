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

/* A terminal's size in a frame (the boot spec's "winsize", a "resize"
 * message): {"rows":R,"cols":C}, each 1..65535 (struct winsize's fields).
 * vm_frame_winsize_pack returns NULL for a size out of that range;
 * vm_frame_winsize_get returns -1 (and leaves rows/cols alone) for a
 * missing field, another type or a value out of range. */
json_t *vm_frame_winsize_pack(long rows, long cols);
int vm_frame_winsize_get(const json_t *obj, unsigned short *rows, unsigned short *cols);
