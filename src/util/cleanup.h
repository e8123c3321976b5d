/* Scope-bound ownership: variables declared with these attributes release
 * their resource when they leave scope; TAKE_PTR/TAKE_FD hand it on. Every
 * destructor accepts the "empty" value (NULL, -1). Any process context except
 * between clone() and exec, where nothing is freed. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>

static inline void cleanup_freep(void *p)
{
    free(*(void **)p);
}

static inline void cleanup_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

static inline void cleanup_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

static inline void cleanup_closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

#define _cleanup_free_     __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_    __attribute__((cleanup(cleanup_closep)))
#define _cleanup_fclose_   __attribute__((cleanup(cleanup_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(cleanup_closedirp)))

#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _taken = (p);                                                                \
        (p) = NULL;                                                                                \
        _taken;                                                                                    \
    })

#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _taken = (fd);                                                                         \
        (fd) = -1;                                                                                 \
        _taken;                                                                                    \
    })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
