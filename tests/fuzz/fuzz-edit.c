/* Fuzz target for the edit tool's matcher and diff (edit.c, edit-diff.c):
 * file content, oldText and newText come from the input (separated by NUL
 * bytes; more NUL-separated pairs are more edits). The edit runs for real on
 * a file in a private temporary directory; whatever the texts, the result
 * is a result, never a crash, leak or stall. Also runs the fuzzy
 * normalisation and the diff on the raw parts. Host, test-only. */
#include "agent/tools/edit-diff.h"
#include "agent/tools/registry.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[PATH_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 14)
        return 0; /* the diff is quadratic at worst, like pi's */
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "%s/cordon-fuzz-edit-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir))
            abort();
    }
    const char *parts[9];
    size_t lens[9], n = 0;
    const char *p = (const char *)data, *end = p + size;
    while (n < 9) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        parts[n] = p;
        lens[n] = nul ? (size_t)(nul - p) : (size_t)(end - p);
        n++;
        if (!nul)
            break;
        p = nul + 1;
    }
    size_t norm_len;
    free(edit_fuzzy_normalize(parts[0], lens[0], &norm_len));
    if (n >= 2) {
        size_t first;
        free(edit_diff_string(parts[0], lens[0], parts[1], lens[1], &first));
    }

    char path[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s/f", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, parts[0], lens[0]) != (ssize_t)lens[0])
        abort();
    close(fd);
    json_t *edits = json_array();
    for (size_t i = 1; i + 1 < n; i += 2)
        json_array_append_new(edits, json_pack("{s:s%, s:s%}", "oldText", parts[i], lens[i],
                                               "newText", parts[i + 1], lens[i + 1]));
    json_t *args = json_pack("{s:s, s:o}", "path", "f", "edits", edits);
    struct tool_env env = {.cwd = dir, .home = dir, .tmpdir = dir};
    struct tool_result res = {0};
    if (args)
        tool_edit(&env, args, &res);
    tool_result_clear(&res);
    json_decref(args);
    return 0;
}
