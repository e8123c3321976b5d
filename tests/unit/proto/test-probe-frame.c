/* The probe frames of a vm run/shell session's channel (backend/vm/
 * vm-probe-frame.c): a request checked by the guest, an answer cut into
 * frames by the guest and put back together by the host, and what each end
 * does with frames that break the rules (wrong types, stale ids, too much
 * output, an over-long end). Host context, no VM. */
#include "proto/init-channel.h"
#include "proto/vm-probe-frame.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* The frames queued on w, decoded as the other end reads them. */
static size_t decode(struct frame_writer *w, json_t **frames, size_t max)
{
    struct frame_reader r = {.buf = w->buf, .len = w->len, .cap = w->cap};
    *w = (struct frame_writer){0};
    size_t n = 0;
    int status = 0;
    struct cordon_error err;
    json_t *m;
    while (n < max && (m = frame_reader_next(&r, &status, &err)))
        frames[n++] = m;
    ok(status == 0 && r.len == 0, "decode: every byte is part of a well-formed frame");
    frame_reader_free(&r);
    return n;
}

static void test_request(void)
{
    json_int_t id = -1;
    const char *request = NULL, *why = NULL;
    size_t len = 0;
    json_t *m = vm_probe_request_new(7, "{\"sentinels\":[]}");
    is_str(json_string_value(json_object_get(m, "t")), "probe", "request: the frame's type");
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), 0, "request: a well-formed one");
    is_int(id, 7, "request: its id");
    is_str(request, "{\"sentinels\":[]}", "request: its text");
    is_int((long long)len, 16, "request: its length");
    json_decref(m);

    ok(vm_probe_request_new(1, "bad \xff utf-8") == NULL,
       "request: text that is not UTF-8 is not sent");

    m = json_pack("{s:s, s:s, s:s}", "t", "probe", "id", "7", "request", "{}");
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), -1, "request: a string id");
    is_int(id, 0, "request: a string id is answered as id 0");
    ok(why && strstr(why, "error: ") == why && strstr(why, "integer id"),
       "request: the answer says what is wrong");
    json_decref(m);

    m = json_pack("{s:s, s:i, s:i}", "t", "probe", "id", 3, "request", 42);
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), -1, "request: a number request");
    is_int(id, 3, "request: the error answers the request's own id");
    json_decref(m);

    m = json_pack("{s:s, s:i}", "t", "probe", "id", 4);
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), -1, "request: none at all");
    json_decref(m);

    char *big = malloc(INIT_PROBE_REQUEST_MAX + 2);
    memset(big, 'x', INIT_PROBE_REQUEST_MAX + 1);
    big[INIT_PROBE_REQUEST_MAX + 1] = '\0';
    m = vm_probe_request_new(5, big);
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), -1,
           "request: one byte over INIT_PROBE_REQUEST_MAX is refused");
    is_str(why, "error: the probe's request is too long", "request: ... and said so");
    json_decref(m);
    big[INIT_PROBE_REQUEST_MAX] = '\0';
    m = vm_probe_request_new(5, big);
    is_int(vm_probe_request_check(m, &id, &request, &len, &why), 0,
           "request: exactly INIT_PROBE_REQUEST_MAX is taken");
    json_decref(m);
    free(big);
}

/* An answer through both ends: the cuts respect UTF-8, bytes that are not
 * UTF-8 become '?', the rest arrives as it was. */
static void test_round_trip(void)
{
    size_t len = 3 * VM_PROBE_CHUNK + 100;
    char *output = malloc(len + 1);
    memset(output, 'a', len);
    /* "é" straddles the first cut: the first piece must end before it. */
    output[VM_PROBE_CHUNK - 1] = (char)0xC3;
    output[VM_PROBE_CHUNK] = (char)0xA9;
    /* A stray byte in a later piece. */
    output[2 * VM_PROBE_CHUNK + 10] = (char)0xFF;
    output[len] = '\0';

    struct frame_writer w = {0};
    struct cordon_error err;
    is_int(vm_probe_answer_queue(&w, 9, output, len, "exit 0", &err), 0, "answer: queued");
    json_t *frames[16];
    size_t n = decode(&w, frames, 16);
    is_int((long long)n, 5, "answer: four output frames and the end");
    bool small = true;
    for (size_t i = 0; i + 1 < n; i++)
        small &= json_string_length(json_object_get(frames[i], "data")) <= VM_PROBE_CHUNK;
    ok(small, "answer: no frame carries more than VM_PROBE_CHUNK bytes of output");
    is_int((long long)json_string_length(json_object_get(frames[0], "data")), VM_PROBE_CHUNK - 1,
           "answer: the first cut is before the two-byte sequence, not inside it");

    struct vm_probe_answer a = {0};
    vm_probe_answer_start(&a, 9);
    int outputs = 0, ends = 0;
    for (size_t i = 0; i < n; i++) {
        enum vm_probe_frame k = vm_probe_answer_take(&a, frames[i]);
        outputs += k == VM_PROBE_FRAME_OUTPUT;
        ends += k == VM_PROBE_FRAME_END;
        json_decref(frames[i]);
    }
    is_int(outputs, 4, "host: four output frames taken");
    is_int(ends, 1, "host: one end");
    is_str(a.end, "exit 0", "host: the end as sent");
    output[2 * VM_PROBE_CHUNK + 10] = '?';
    ok(a.output_len == len && memcmp(a.output, output, len) == 0,
       "host: the output as it was (the UTF-8 sequence whole, the stray byte '?')");
    ok(!a.output_cut && !a.waiting, "host: nothing cut, the answer complete");
    vm_probe_answer_clear(&a);
    free(output);
}

static json_t *out_frame(json_int_t id, const char *data)
{
    return json_pack("{s:s, s:I, s:s}", "t", "probe-out", "id", id, "data", data);
}

/* take() on a frame it owns. */
static enum vm_probe_frame take(struct vm_probe_answer *a, json_t *m)
{
    enum vm_probe_frame k = vm_probe_answer_take(a, m);
    json_decref(m);
    return k;
}

static void test_host_checks(void)
{
    struct vm_probe_answer a = {0};
    is_int(take(&a, out_frame(1, "x")), VM_PROBE_FRAME_STALE,
           "host: output while no request is out is dropped");
    is_int(take(&a, json_pack("{s:s, s:i}", "t", "exit", "status", 0)), VM_PROBE_FRAME_OTHER,
           "host: another frame is the relay's");
    is_int(take(&a, json_pack("{s:i}", "t", 1)), VM_PROBE_FRAME_OTHER,
           "host: a frame without a string type is not a probe frame");

    vm_probe_answer_start(&a, 2);
    is_int(take(&a, out_frame(1, "old")), VM_PROBE_FRAME_STALE,
           "host: output of an earlier request is dropped");
    is_int(take(&a, json_pack("{s:s, s:s, s:s}", "t", "probe-out", "id", "2", "data", "x")),
           VM_PROBE_FRAME_STALE, "host: a string id is not the request's");
    is_int(take(&a, json_pack("{s:s, s:i, s:i}", "t", "probe-out", "id", 2, "data", 5)),
           VM_PROBE_FRAME_STALE, "host: data that is not a string is dropped");
    ok(a.output == NULL && a.waiting, "host: nothing kept of them, still waiting");
    is_int(take(&a, json_pack("{s:s, s:i, s:s}", "t", "probe-end", "id", 1, "end", "exit 0")),
           VM_PROBE_FRAME_STALE, "host: the end of an earlier request does not end this one");

    /* More output than the guest may send: the first INIT_PROBE_OUTPUT_MAX
     * bytes are kept. */
    char *piece = malloc(VM_PROBE_CHUNK + 1);
    memset(piece, 'o', VM_PROBE_CHUNK);
    piece[VM_PROBE_CHUNK] = '\0';
    for (int i = 0; i < INIT_PROBE_OUTPUT_MAX / VM_PROBE_CHUNK + 4; i++)
        take(&a, out_frame(2, piece));
    is_int((long long)a.output_len, INIT_PROBE_OUTPUT_MAX,
           "host: output past INIT_PROBE_OUTPUT_MAX is dropped");
    ok(a.output_cut, "host: ... and marked as cut");
    free(piece);

    char long_end[1000];
    memset(long_end, 'e', sizeof(long_end) - 1);
    long_end[sizeof(long_end) - 1] = '\0';
    is_int(take(&a, json_pack("{s:s, s:i, s:s}", "t", "probe-end", "id", 2, "end", long_end)),
           VM_PROBE_FRAME_END, "host: the end");
    is_int((long long)strlen(a.end), VM_PROBE_END_MAX, "host: an end is cut at VM_PROBE_END_MAX");
    is_int(take(&a, out_frame(2, "late")), VM_PROBE_FRAME_STALE,
           "host: output after the end is dropped");

    vm_probe_answer_start(&a, 3);
    ok(a.output == NULL && !a.output_cut, "host: a new request starts from nothing");
    is_int(take(&a, json_pack("{s:s, s:i}", "t", "probe-end", "id", 3)), VM_PROBE_FRAME_END,
           "host: an end without its text still ends the answer");
    is_str(a.end, "error: the guest's answer has no end", "host: ... as an error");
    vm_probe_answer_clear(&a);
}

int main(void)
{
    test_request();
    test_round_trip();
    test_host_checks();
    return tap_done();
}
