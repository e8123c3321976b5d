/* The start-time socket scan (docs/sockets.md) on a tree: how long it takes
 * and how many entries it looks at. Host context.
 *   sock-scan DIR [ROUNDS] */
#include "supervisor/sock-guard.h"
#include "util/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: sock-scan DIR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long long best = -1;
    size_t visited = 0;
    char found[PATH_MAX] = "";
    int r = 0;
    for (int i = 0; i < rounds; i++) {
        struct cordon_error err = {0};
        long long t0 = log_now_us();
        r = sock_scan_tree(argv[1], NULL, 0, found, sizeof(found), &visited, &err);
        long long us = log_now_us() - t0;
        if (r < 0) {
            fprintf(stderr, "sock-scan: %s\n", err.message);
            return 1;
        }
        if (best < 0 || us < best)
            best = us;
    }
    printf("%zu entries, best of %d: %.1f ms, %s%s\n", visited, rounds, best / 1000.0,
           r ? "socket found: " : "no socket", found);
    return 0;
}
