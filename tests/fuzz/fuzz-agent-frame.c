/* Fuzz target for the agent protocol's frame decoder (src/proto/protocol.c):
 * the supervisor reads frames from an untrusted sandbox, so any bytes must
 * give frames or a clean error, never a crash, leak or unbounded
 * allocation. The input arrives in pieces (the first byte sets the piece
 * size) to exercise frames split across reads. Host, test-only. */
#include "proto/protocol.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] * 7 + 1;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
        abort();
    struct frame_reader r = {0};
    struct cordon_error err;
    size_t off = 0;
    bool failed = false;
    bool closed = false;
    while (!failed) {
        if (off < size) {
            size_t n = size - off < piece ? size - off : piece;
            if (write(sv[1], data + off, n) != (ssize_t)n)
                abort();
            off += n;
        }
        if (off == size && !closed) {
            close(sv[1]);
            closed = true;
        }
        if (frame_reader_fill(&r, sv[0], &err) < 0)
            break;
        for (;;) {
            int status = 0;
            json_t *msg = frame_reader_next(&r, &status, &err);
            if (status < 0) {
                failed = true;
                break;
            }
            if (!msg)
                break;
            if (!json_is_object(msg))
                abort(); /* the decoder promises objects */
            json_decref(msg);
        }
        if (r.eof)
            break;
    }
    if (!closed)
        close(sv[1]);
    close(sv[0]);
    frame_reader_free(&r);
    return 0;
}
