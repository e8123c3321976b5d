/* Unit tests of util/dirscan.c: every entry of a directory larger than one
 * buffer, once each, with its type; the end; a bad fd. */
#include "tap.h"
#include "util/dirscan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILES 1500

int main(void)
{
    char root[256];
    snprintf(root, sizeof(root), "%s/cordon-dirscan-XXXXXX", getenv("TMPDIR") ?: "/tmp");
    if (!mkdtemp(root))
        abort();
    int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* names of 40 bytes: 1,500 records are about 84 KiB, three buffers */
    for (int i = 0; i < FILES; i++) {
        char name[64];
        snprintf(name, sizeof(name), "file-%04d-padding-padding-padding-padd", i);
        close(openat(dir, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    }
    mkdirat(dir, "sub", 0700);
    symlinkat("file-0000", dir, "link");

    char *buf = malloc(DIRSCAN_BUFFER);
    struct dirscan s;
    dirscan_init(&s, dir, buf);
    static bool seen[FILES];
    int files = 0, dups = 0, dots = 0, other = 0, r;
    bool sub_dir = false, link_lnk = false, regular = true;
    const char *name;
    unsigned char type;
    while ((r = dirscan_next(&s, &name, &type)) > 0) {
        int n;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
            dots++;
        } else if (strcmp(name, "sub") == 0) {
            sub_dir = type == DT_DIR || type == DT_UNKNOWN;
        } else if (strcmp(name, "link") == 0) {
            link_lnk = type == DT_LNK || type == DT_UNKNOWN;
        } else if (sscanf(name, "file-%d-", &n) == 1 && n >= 0 && n < FILES) {
            dups += seen[n];
            seen[n] = true;
            files++;
            regular = regular && (type == DT_REG || type == DT_UNKNOWN);
        } else {
            other++;
        }
    }
    is_int(r, 0, "the listing ends with 0");
    is_int(files, FILES, "every file once, across buffers");
    is_int(dups, 0, "none twice");
    is_int(dots, 2, ". and .. are listed");
    ok(sub_dir && link_lnk && regular, "types: directory, symlink, regular files");
    is_int(other, 0, "no other name");
    is_int(dirscan_next(&s, &name, &type), 0, "still the end when asked again");

    dirscan_init(&s, -1, buf);
    errno = 0;
    ok(dirscan_next(&s, &name, &type) < 0 && errno == EBADF, "a bad fd: -1 with EBADF");
    int file = openat(dir, "file-0001-padding-padding-padding-padd", O_RDONLY | O_CLOEXEC);
    dirscan_init(&s, file, buf);
    ok(dirscan_next(&s, &name, &type) < 0 && errno == ENOTDIR, "a file: -1 with ENOTDIR");
    close(file);
    free(buf);
    close(dir);

    char command[300];
    snprintf(command, sizeof(command), "rm -rf '%s'", root);
    if (system(command) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
