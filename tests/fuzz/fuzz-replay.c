/* Replays fuzz corpus files through a fuzz target's LLVMFuzzerTestOneInput
 * in the normal (gcc, sanitizer) build, as a TAP test: every corpus file
 * the fuzzer ever kept stays a regression test. Usage: fuzz-replay DIR... */
#include "tap.h"
#include "util/cleanup.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void replay_file(const char *path)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f) {
        ok(false, "open %s", path);
        return;
    }
    size_t capacity = 1 << 16, length = 0;
    _cleanup_free_ uint8_t *data = malloc(capacity);
    size_t n;
    while (data && (n = fread(data + length, 1, capacity - length, f)) > 0) {
        length += n;
        if (length == capacity) {
            uint8_t *grown = realloc(data, capacity *= 2);
            if (!grown)
                break;
            data = grown;
        }
    }
    ok(data && LLVMFuzzerTestOneInput(data, length) == 0, "replay %s", path);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        _cleanup_closedir_ DIR *dir = opendir(argv[i]);
        if (!dir) {
            ok(false, "open corpus %s", argv[i]);
            continue;
        }
        struct dirent *entry;
        while ((entry = readdir(dir))) {
            if (entry->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], entry->d_name);
            replay_file(path);
        }
    }
    return tap_done();
}
