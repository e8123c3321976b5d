/* Name resolution for the proxy (see resolve.h). Host context. */
#include "net/resolve.h"
#include "util/cleanup.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static int resolve_from_file(const char *host, const char *path, struct allow_addr *out,
                             size_t *count, struct cordon_error *err)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return error_set(err, errno, "hosts file %s", path);
    char line[1024];
    while (fgets(line, sizeof(line), f) && *count < RESOLVE_MAX) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *addr = strtok_r(line, " \t\r\n", &save);
        if (!addr)
            continue;
        struct allow_addr a;
        if (!allow_addr_parse(addr, &a))
            continue;
        for (char *name = strtok_r(NULL, " \t\r\n", &save); name;
             name = strtok_r(NULL, " \t\r\n", &save)) {
            if (strcasecmp(name, host) == 0) {
                out[(*count)++] = a;
                break;
            }
        }
    }
    if (*count == 0) {
        /* Not strerror(ENOENT): that would read as if the file were missing. */
        error_set(err, 0, "%s: not found in %s", host, path);
        err->errnum = ENOENT;
        return -1;
    }
    return 0;
}

int net_resolve(const char *host, const char *hosts_file, struct allow_addr *out, size_t *count,
                struct cordon_error *err)
{
    *count = 0;
    if (allow_addr_parse(host, &out[0])) {
        *count = 1;
        return 0;
    }
    if (hosts_file)
        return resolve_from_file(host, hosts_file, out, count, err);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int r = getaddrinfo(host, NULL, &hints, &res);
    if (r != 0)
        return error_set(err, r == EAI_SYSTEM ? errno : 0, "resolving %s: %s", host,
                         gai_strerror(r));
    for (struct addrinfo *i = res; i && *count < RESOLVE_MAX; i = i->ai_next) {
        if (i->ai_family == AF_INET || i->ai_family == AF_INET6)
            allow_addr_from_sockaddr(i->ai_addr, &out[(*count)++]);
    }
    freeaddrinfo(res);
    if (*count == 0) {
        error_set(err, 0, "resolving %s: no IPv4 or IPv6 address", host);
        err->errnum = ENOENT;
        return -1;
    }
    return 0;
}
