/* Pinned paths of approved host calls (pin.h). Host context: cordon-agent
 * serve --host, running with the user's rights on the user's files, on paths
 * that the sandbox can rewrite while the call waits for its approval. Every
 * open here goes through openat2() from a pinned directory fd with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS; no path string is checked and then
 * opened again. */
#include "agent/tools/pin.h"
#include "util/cleanup.h"
#include "util/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PIN_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

static int openat2_pinned(int dirfd, const char *rel, int flags, mode_t mode, uint64_t resolve)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = resolve,
    };
    return (int)syscall(SYS_openat2, dirfd, rel && rel[0] ? rel : ".", &how, sizeof(how));
}

/* "dir/rel[0..len)", escaped for a message (it may hold anything). */
static char *shown_path(const char *dir, const char *rel, size_t rel_len)
{
    _cleanup_free_ char *joined = NULL;
    bool root = strcmp(dir, "/") == 0;
    if (asprintf(&joined, "%s%s%.*s", dir, rel_len && !root ? "/" : "", (int)rel_len, rel) < 0)
        return NULL;
    return text_escape_visible(joined, strlen(joined), TEXT_ESCAPE_BACKSLASH, NULL);
}

/* After ELOOP: finds the component of rel that is a symlink now and says
 * so. The walk is for the message only; nothing is opened through it. */
static void explain_symlink(int dir_fd, const char *dir, const char *rel, char *why, size_t size)
{
    _cleanup_close_ int cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    const char *p = rel;
    while (cur >= 0 && *p) {
        const char *end = strchrnul(p, '/');
        _cleanup_free_ char *name = strndup(p, (size_t)(end - p));
        struct stat st;
        if (!name || fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            break;
        if (S_ISLNK(st.st_mode)) {
            _cleanup_free_ char *at = shown_path(dir, rel, (size_t)(end - rel));
            snprintf(why, size, "cordon: a symlink appeared at %s after approval; refused",
                     at ? at : dir);
            return;
        }
        int next = openat(cur, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        close(cur);
        cur = next;
        p = *end ? end + 1 : end;
    }
    _cleanup_free_ char *at = shown_path(dir, "", 0);
    snprintf(why, size, "cordon: a symlink appeared below %s after approval; refused",
             at ? at : dir);
}

static bool is_target(const struct tool_pin *pin, const char *abs_path, char *why, size_t size)
{
    if (pin->target && pin->dir_fd >= 0 && strcmp(abs_path, pin->target) == 0)
        return true;
    _cleanup_free_ char *got =
        text_escape_visible(abs_path, strlen(abs_path), TEXT_ESCAPE_BACKSLASH, NULL);
    snprintf(why, size, "cordon: host execution refused: %s is not the path that was approved",
             got ? got : "this path");
    errno = EPERM;
    return false;
}

int tool_pin_open(const struct tool_pin *pin, const char *abs_path, int flags, mode_t mode,
                  char *why, size_t why_size)
{
    why[0] = '\0';
    if (!is_target(pin, abs_path, why, why_size))
        return -1;
    int fd = openat2_pinned(pin->dir_fd, pin->rel, flags, mode, PIN_RESOLVE);
    if (fd < 0 && (errno == ELOOP || errno == EXDEV)) {
        explain_symlink(pin->dir_fd, pin->dir, pin->rel, why, why_size);
        errno = ELOOP;
    }
    return fd;
}

int tool_pin_parent(const struct tool_pin *pin, const char *abs_path, bool create,
                    const char **base, char **failed_path, char *why, size_t why_size)
{
    why[0] = '\0';
    *failed_path = NULL;
    if (!is_target(pin, abs_path, why, why_size))
        return -1;
    const char *slash = strrchr(pin->rel, '/');
    if (!pin->rel[0]) {
        errno = EISDIR; /* the approved directory itself */
        return -1;
    }
    *base = slash ? slash + 1 : pin->rel;
    size_t parent_len = slash ? (size_t)(slash - pin->rel) : 0;
    _cleanup_close_ int cur = fcntl(pin->dir_fd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return -1;
    for (size_t at = 0; at < parent_len;) {
        const char *p = pin->rel + at;
        size_t n = strcspn(p, "/");
        if (n > parent_len - at)
            n = parent_len - at;
        _cleanup_free_ char *name = strndup(p, n);
        if (!name)
            return -1;
        if (create && mkdirat(cur, name, 0777) < 0 && errno != EEXIST) {
            int e = errno;
            *failed_path = shown_path(pin->dir, pin->rel, at + n);
            errno = e;
            return -1;
        }
        int next = openat2_pinned(cur, name, O_PATH | O_DIRECTORY, 0, PIN_RESOLVE);
        if (next < 0) {
            int e = errno;
            if (e == ELOOP || e == EXDEV) {
                explain_symlink(pin->dir_fd, pin->dir, pin->rel, why, why_size);
                e = ELOOP;
            } else {
                *failed_path = shown_path(pin->dir, pin->rel, at + n);
            }
            errno = e;
            return -1;
        }
        close(cur);
        cur = next;
        at += n + 1;
    }
    return TAKE_FD(cur);
}

char *tool_pin_hex(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(len * 2 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)s[i]);
    out[len * 2] = '\0';
    return out;
}

static char *unhex(const char *hex)
{
    size_t len = hex ? strlen(hex) : 0;
    if (!hex || len % 2 || len > 2 * 8192)
        return NULL;
    char *out = malloc(len / 2 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1 || v == 0) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[len / 2] = '\0';
    return out;
}

/* Opens a pinned directory by its canonical path and checks that it is the
 * approved inode. */
static int open_approved_dir(json_t *spec, const char *what, char **path_out, char *why,
                             size_t size)
{
    _cleanup_free_ char *path = unhex(json_string_value(json_object_get(spec, "path")));
    json_t *dev = json_object_get(spec, "dev"), *ino = json_object_get(spec, "ino");
    if (!path || path[0] != '/' || !json_is_integer(dev) || !json_is_integer(ino)) {
        snprintf(why, size, "cordon: host execution refused: malformed pin (%s)", what);
        return -1;
    }
    _cleanup_free_ char *shown =
        text_escape_visible(path, strlen(path), TEXT_ESCAPE_BACKSLASH, NULL);
    /* The path is canonical (no symlink in it at approval): any symlink now
     * is new. */
    _cleanup_close_ int fd =
        openat2_pinned(AT_FDCWD, path, O_PATH | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(why, size, "cordon: host execution refused: the approved %s %s %s", what,
                 shown ? shown : "",
                 errno == ELOOP ? "has a symlink in its path now (it had none at approval)"
                                : "cannot be opened any more");
        return -1;
    }
    if ((json_int_t)st.st_dev != json_integer_value(dev) ||
        (json_int_t)st.st_ino != json_integer_value(ino)) {
        snprintf(why, size,
                 "cordon: host execution refused: the approved %s %s was replaced after approval",
                 what, shown ? shown : "");
        return -1;
    }
    if (path_out)
        *path_out = TAKE_PTR(path);
    return TAKE_FD(fd);
}

int tool_pin_from_json(json_t *pin_json, struct tool_pin *pin, char *why, size_t why_size)
{
    *pin = (struct tool_pin){.cwd_fd = -1, .dir_fd = -1};
    why[0] = '\0';
    json_t *cwd = json_object_get(pin_json, "cwd");
    if (!json_is_object(pin_json) || !json_is_object(cwd)) {
        snprintf(why, why_size, "cordon: host execution refused: malformed pin");
        return -1;
    }
    pin->cwd_fd = open_approved_dir(cwd, "working directory", NULL, why, why_size);
    if (pin->cwd_fd < 0)
        goto fail;
    json_t *dir = json_object_get(pin_json, "dir");
    if (!dir)
        return 0; /* bash: the working directory only */
    pin->dir_fd = open_approved_dir(dir, "directory", &pin->storage[0], why, why_size);
    if (pin->dir_fd < 0)
        goto fail;
    pin->dir = pin->storage[0];
    pin->storage[1] = unhex(json_string_value(json_object_get(pin_json, "target")));
    const char *rel_hex = json_string_value(json_object_get(pin_json, "rel"));
    pin->storage[2] = rel_hex && !rel_hex[0] ? strdup("") : unhex(rel_hex);
    if (!pin->storage[1] || !pin->storage[2] || pin->storage[2][0] == '/') {
        snprintf(why, why_size, "cordon: host execution refused: malformed pin (path)");
        goto fail;
    }
    pin->target = pin->storage[1];
    pin->rel = pin->storage[2];
    return 0;
fail:
    tool_pin_close(pin);
    return -1;
}

void tool_pin_close(struct tool_pin *pin)
{
    if (pin->cwd_fd >= 0)
        close(pin->cwd_fd);
    if (pin->dir_fd >= 0)
        close(pin->dir_fd);
    for (size_t i = 0; i < ARRAY_SIZE(pin->storage); i++)
        free(pin->storage[i]);
    *pin = (struct tool_pin){.cwd_fd = -1, .dir_fd = -1};
}
