/* Passing file descriptors between cordon's own processes over a Unix
 * socket (SCM_RIGHTS), with a small fixed-size payload. Host context; used
 * by the proxy, the namespace socket factory and the ns relay's init
 * channel. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Sends PAYLOAD and, when FD >= 0, FD. 0, or -1 with errno (EPROTO: sent
 * short). */
int fdpass_send(int sock, const void *payload, size_t length, int fd);
/* Receives exactly LENGTH bytes of payload and at most one fd (-1 when none
 * came) into *FD, with O_CLOEXEC. 0, or -1 with errno (EPIPE at EOF,
 * EPROTO for a short or truncated message). */
int fdpass_recv(int sock, void *payload, size_t length, int *fd);
/* One recvmsg of at most CAP bytes with FLAGS (MSG_DONTWAIT ...): the
 * payload's length (0 at EOF), or -1 with errno; at most one fd (-1 when
 * none came) into *FD, with O_CLOEXEC; the message's flags (MSG_TRUNC ...)
 * into *MSG_FLAGS when given. */
ssize_t fdpass_recv_one(int sock, void *payload, size_t cap, int flags, int *fd, int *msg_flags);
