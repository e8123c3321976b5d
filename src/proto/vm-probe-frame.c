/* The probe frames of a vm run/shell session's channel (vm-probe-frame.h).
 * Any context: the supervisor and the guest's init both link it. What one
 * end reads from the other is checked here and bounded. */
#include "proto/vm-probe-frame.h"
#include "proto/init-channel.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *vm_probe_request_new(json_int_t id, const char *request)
{
    json_t *text = json_string(request);
    return text ? json_pack("{s:s, s:I, s:o}", "t", "probe", "id", id, "request", text) : NULL;
}

int vm_probe_request_check(const json_t *m, json_int_t *id, const char **request, size_t *len,
                           const char **why)
{
    json_t *jid = json_object_get(m, "id");
    json_t *jrequest = json_object_get(m, "request");
    *id = json_is_integer(jid) ? json_integer_value(jid) : 0;
    if (!json_is_integer(jid) || !json_is_string(jrequest)) {
        *why = "error: a probe request needs an integer id and a string request";
        return -1;
    }
    if (json_string_length(jrequest) > INIT_PROBE_REQUEST_MAX) {
        *why = "error: the probe's request is too long";
        return -1;
    }
    *request = json_string_value(jrequest);
    *len = json_string_length(jrequest);
    return 0;
}

/* A JSON string must be UTF-8; the probe's own line is, what else reaches
 * its stderr need not be. */
static json_t *output_string(const char *data, size_t len)
{
    json_t *s = json_stringn(data, len);
    if (s)
        return s;
    _cleanup_free_ char *copy = malloc(len ? len : 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < len; i++)
        copy[i] = (unsigned char)data[i] < 0x80 ? data[i] : '?';
    return json_stringn(copy, len);
}

static int queue(struct frame_writer *w, json_t *msg, struct cordon_error *err)
{
    int rc = msg ? frame_writer_queue(w, msg, err) : error_set(err, ENOMEM, "probe answer");
    json_decref(msg);
    return rc;
}

int vm_probe_answer_queue(struct frame_writer *w, json_int_t id, const char *output, size_t len,
                          const char *end, struct cordon_error *err)
{
    for (size_t off = 0; off < len;) {
        size_t piece = len - off;
        if (piece > VM_PROBE_CHUNK) {
            piece = VM_PROBE_CHUNK;
            /* Not inside a UTF-8 sequence (at most 3 continuation bytes
             * follow its lead): each piece must be valid on its own. */
            for (int back = 0; back < 3 && ((unsigned char)output[off + piece] & 0xC0) == 0x80;
                 back++)
                piece--;
        }
        json_t *data = output_string(output + off, piece);
        if (queue(w,
                  data ? json_pack("{s:s, s:I, s:o}", "t", "probe-out", "id", id, "data", data)
                       : NULL,
                  err) < 0)
            return -1;
        off += piece;
    }
    return queue(w, json_pack("{s:s, s:I, s:s}", "t", "probe-end", "id", id, "end", end), err);
}

void vm_probe_answer_start(struct vm_probe_answer *a, json_int_t id)
{
    vm_probe_answer_clear(a);
    a->waiting = true;
    a->id = id;
}

void vm_probe_answer_clear(struct vm_probe_answer *a)
{
    free(a->output);
    *a = (struct vm_probe_answer){0};
}

static void add_output(struct vm_probe_answer *a, const char *data, size_t len)
{
    if (len > INIT_PROBE_OUTPUT_MAX - a->output_len) {
        len = INIT_PROBE_OUTPUT_MAX - a->output_len;
        a->output_cut = true;
    }
    char *grown = realloc(a->output, a->output_len + len + 1);
    if (!grown) {
        a->output_cut = true;
        return;
    }
    a->output = grown;
    memcpy(a->output + a->output_len, data, len);
    a->output_len += len;
    a->output[a->output_len] = '\0';
}

enum vm_probe_frame vm_probe_answer_take(struct vm_probe_answer *a, const json_t *m)
{
    const char *t = json_string_value(json_object_get(m, "t"));
    bool out = t && strcmp(t, "probe-out") == 0;
    bool end = t && strcmp(t, "probe-end") == 0;
    if (!out && !end)
        return VM_PROBE_FRAME_OTHER;
    json_t *id = json_object_get(m, "id");
    /* An answer to a request given up on, or to none at all. */
    if (!a->waiting || !json_is_integer(id) || json_integer_value(id) != a->id)
        return VM_PROBE_FRAME_STALE;
    if (out) {
        json_t *data = json_object_get(m, "data");
        if (!json_is_string(data))
            return VM_PROBE_FRAME_STALE;
        add_output(a, json_string_value(data), json_string_length(data));
        return VM_PROBE_FRAME_OUTPUT;
    }
    const char *text = json_string_value(json_object_get(m, "end"));
    snprintf(a->end, sizeof(a->end), "%s", text ? text : "error: the guest's answer has no end");
    a->waiting = false;
    return VM_PROBE_FRAME_END;
}
