/* The terminal size carried in vm frames (the boot spec's "winsize", a
 * "resize" message): both sides accept only 1..65535 for rows and cols, and
 * a rejected frame leaves the caller's size alone. Any context. */
#include "proto/vm-frame.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static int get(const char *text, unsigned short *rows, unsigned short *cols)
{
    json_error_t e;
    json_t *m = json_loads(text, 0, &e);
    int rc = vm_frame_winsize_get(m, rows, cols);
    json_decref(m);
    return rc;
}

int main(void)
{
    json_t *m = vm_frame_winsize_pack(40, 120);
    char *text = json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT);
    is_str(text, "{\"cols\":120,\"rows\":40}", "pack: rows and cols");
    free(text);
    json_decref(m);
    ok(vm_frame_winsize_pack(0, 80) == NULL, "pack: 0 rows (no host terminal) gives no size");
    ok(vm_frame_winsize_pack(24, 65536) == NULL, "pack: 65536 columns is out of range");
    m = vm_frame_winsize_pack(65535, 1);
    ok(m != NULL, "pack: the extremes 65535 and 1 are sizes");
    json_decref(m);

    unsigned short rows = 7, cols = 9;
    is_int(get("{\"t\":\"resize\",\"rows\":50,\"cols\":200}", &rows, &cols), 0, "get: a resize");
    is_int(rows, 50, "get: rows");
    is_int(cols, 200, "get: cols");
    static const char *const bad[] = {
        "{\"rows\":0,\"cols\":80}",
        "{\"rows\":24,\"cols\":-1}",
        "{\"rows\":65536,\"cols\":80}",
        "{\"rows\":24,\"cols\":4294967297}",
        "{\"rows\":\"24\",\"cols\":80}",
        "{\"rows\":24.5,\"cols\":80}",
        "{\"cols\":80}",
        "{\"rows\":24}",
        "[24,80]",
        "null",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rows = 7;
        cols = 9;
        int rc = get(bad[i], &rows, &cols);
        ok(rc < 0 && rows == 7 && cols == 9, "get: %s is refused, the size left alone", bad[i]);
    }
    ok(vm_frame_winsize_get(NULL, &rows, &cols) < 0, "get: no object at all");
    return tap_done();
}
