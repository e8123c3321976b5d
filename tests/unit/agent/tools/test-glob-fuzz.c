/* Drives the glob fuzz target (tests/fuzz/fuzz-glob.c) in the normal
 * sanitizer build: its seed corpus, then deterministic pseudo-random inputs
 * built from glob syntax. Until main's fuzz-replay list includes the glob
 * target, this is where it runs. Host context, test-only. */
#include "tap.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void replay_corpus(const char *dir_path)
{
    DIR *dir = opendir(dir_path);
    if (!dir) {
        ok(false, "open corpus %s", dir_path);
        return;
    }
    int files = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir_path, de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        uint8_t buf[65536];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        files++;
    }
    closedir(dir);
    ok(files >= 10, "replayed %d corpus files", files);
}

static void random_inputs(int count)
{
    static const char *const pieces[] = {
        "*", "**", "/", "?", "[",  "]", "!", "^",    "-",  "{",   "}",   ",",     "\\",
        "a", "b",  ".", "é", "\n", "#", " ", "\xff", "\0", "**/", "/**", "[a-z]", "{x,y}"};
    time_t start = time(NULL);
    for (int i = 0; i < count; i++) {
        uint8_t buf[256];
        size_t n = 0;
        buf[n++] = (uint8_t)next_random();
        int parts = (int)(next_random() % 24);
        for (int p = 0; p < parts; p++) {
            const char *piece = pieces[next_random() % (sizeof(pieces) / sizeof(pieces[0]))];
            size_t len = piece[0] ? strlen(piece) : 1;
            if (n + len >= sizeof(buf))
                break;
            memcpy(buf + n, piece, len);
            n += len;
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    ok(time(NULL) - start < 60, "%d random inputs without a crash or stall", count);
}

int main(void)
{
    const char *src = getenv("CORDON_SRC");
    char dir[900];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/glob", src ? src : ".");
    replay_corpus(dir);
    random_inputs(20000);
    return tap_done();
}
