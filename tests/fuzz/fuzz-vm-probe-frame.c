/* Fuzz target for the probe frames of a vm run/shell session's channel
 * (src/proto/vm-probe-frame.c). Each end reads the other's frames as
 * untrusted: any JSON the guest sends must leave the host's answer within
 * its bounds, any request the host sends is either taken or answered with
 * an "error: " end, and any output bytes the guest queues come back on the
 * host at their length, the ASCII ones unchanged. The input's lines are
 * frames (JSON) fed to both checks; the whole input is also the probe's
 * output. Host, test-only. */
#include "proto/init-channel.h"
#include "proto/vm-probe-frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void frames(const char *text, size_t size)
{
    struct vm_probe_answer a = {0};
    vm_probe_answer_start(&a, 1);
    for (size_t off = 0; off < size;) {
        const char *nl = memchr(text + off, '\n', size - off);
        size_t len = nl ? (size_t)(nl - (text + off)) : size - off;
        json_error_t jerr;
        json_t *m = json_loadb(text + off, len, JSON_ALLOW_NUL, &jerr);
        off += len + 1;
        if (!m)
            continue;
        json_int_t id;
        const char *request = NULL, *why = NULL;
        size_t rlen = 0;
        if (vm_probe_request_check(m, &id, &request, &rlen, &why) < 0) {
            if (!why || strncmp(why, "error: ", 7) != 0)
                abort();
        } else if (!request || rlen > INIT_PROBE_REQUEST_MAX) {
            abort();
        }
        enum vm_probe_frame k = vm_probe_answer_take(&a, m);
        json_decref(m);
        if (a.output_len > INIT_PROBE_OUTPUT_MAX || strlen(a.end) > VM_PROBE_END_MAX)
            abort();
        if (a.output && a.output[a.output_len] != '\0')
            abort();
        if (k == VM_PROBE_FRAME_END && a.waiting)
            abort();
    }
    vm_probe_answer_clear(&a);
}

static void round_trip(const char *output, size_t size)
{
    struct frame_writer w = {0};
    struct cordon_error err;
    if (vm_probe_answer_queue(&w, 7, output, size, "exit 0", &err) < 0)
        abort();
    struct frame_reader r = {.buf = w.buf, .len = w.len, .cap = w.cap};
    struct vm_probe_answer a = {0};
    vm_probe_answer_start(&a, 7);
    int status = 0;
    json_t *m;
    while ((m = frame_reader_next(&r, &status, &err))) {
        json_t *d = json_object_get(m, "data");
        if (d && json_string_length(d) > VM_PROBE_CHUNK)
            abort();
        vm_probe_answer_take(&a, m);
        json_decref(m);
    }
    if (status < 0 || r.len != 0 || a.waiting || strcmp(a.end, "exit 0") != 0)
        abort();
    if (size <= INIT_PROBE_OUTPUT_MAX) {
        if (a.output_len != size)
            abort();
        for (size_t i = 0; i < size; i++) {
            if ((unsigned char)output[i] < 0x80 && a.output[i] != output[i])
                abort();
        }
    }
    vm_probe_answer_clear(&a);
    frame_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frames((const char *)data, size);
    round_trip((const char *)data, size);
    return 0;
}
