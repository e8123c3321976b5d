/* Passing file descriptors between cordon's own processes over a Unix
 * socket (SCM_RIGHTS), with a small fixed-size payload. Host context; used
 * by the proxy and the namespace socket factory. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Sends PAYLOAD and, when FD >= 0, FD. Returns 0 or -errno. */
int fdpass_send(int sock, const void *payload, size_t length, int fd);
/* Receives exactly LENGTH bytes of payload and at most one fd (-1 when none
 * came) into *FD, with O_CLOEXEC. Returns 0, -errno, or -EPIPE at EOF. */
int fdpass_recv(int sock, void *payload, size_t length, int *fd);
