/* Fuzz target for `cordon mcp`'s framing and dispatch (jsonrpc.c line
 * reader, server.c message handling) with no sandbox behind the tools: any
 * bytes from a client must give well-formed JSON-RPC lines back, never a
 * crash, leak or hang. Checks the property too: every line written is a JSON
 * object with "jsonrpc":"2.0" and either a result or an error, or a
 * notification. Host, test-only (fd 1 is redirected to a memfd per input). */
#include "mcp/server.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_output(int fd)
{
    off_t len = lseek(fd, 0, SEEK_END);
    if (len <= 0)
        return;
    char *out = malloc((size_t)len);
    if (!out || pread(fd, out, (size_t)len, 0) != len)
        abort();
    for (char *line = out; line < out + len;) {
        char *nl = memchr(line, '\n', (size_t)(out + len - line));
        if (!nl)
            abort(); /* every message ends with a newline */
        json_t *msg = json_loadb(line, (size_t)(nl - line), 0, NULL);
        const char *v = json_string_value(json_object_get(msg, "jsonrpc"));
        if (!json_is_object(msg) || !v || strcmp(v, "2.0") != 0 ||
            (!json_object_get(msg, "result") && !json_object_get(msg, "error") &&
             !json_object_get(msg, "method")))
            abort();
        json_decref(msg);
        line = nl + 1;
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int in = memfd_create("fuzz-mcp-in", MFD_CLOEXEC);
    int out = memfd_create("fuzz-mcp-out", MFD_CLOEXEC);
    int saved = dup(1);
    if (in < 0 || out < 0 || saved < 0 || write(in, data, size) != (ssize_t)size ||
        lseek(in, 0, SEEK_SET) != 0)
        abort();
    dup2(out, 1);
    mcp_dispatch_fd_for_fuzzing(in);
    dup2(saved, 1);
    close(saved);
    check_output(out);
    close(in);
    close(out);
    return 0;
}
