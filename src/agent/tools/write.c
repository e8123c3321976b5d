/* pi's write tool (write.js): creates parent directories and replaces the
 * file's content atomically (fileio.c); the message counts JavaScript string
 * length. Sandbox (cordon-agent) or host context. */
#include "agent/tools/args.h"
#include "agent/tools/fileio.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>

static int write_done(const char *path, const char *content, size_t content_len,
                      struct tool_result *res)
{
    _cleanup_free_ char *text = NULL;
    if (asprintf(&text, "Successfully wrote %zu bytes to %s", utf16_length(content, content_len),
                 path) < 0)
        return -1;
    return tool_result_text(res, text, NULL);
}

/* An approved host call: the directories and the file the user approved,
 * through the pin's directory fd, never a symlink (pin.h). */
static int write_pinned(const struct tool_pin *pin, const char *path, const char *abs_path,
                        const char *content, size_t content_len, struct tool_result *res)
{
    char msg[8192];
    const char *base = NULL;
    _cleanup_free_ char *failed = NULL;
    _cleanup_close_ int dirfd =
        tool_pin_parent(pin, abs_path, true, &base, &failed, msg, sizeof(msg));
    if (dirfd < 0 && msg[0])
        return tool_result_error(res, "%s", msg);
    if (dirfd < 0)
        return tool_result_error(res, "%s",
                                 tool_node_error(errno, errno == EISDIR ? "open" : "mkdir",
                                                 failed ? failed : abs_path, msg, sizeof(msg)));
    int lock = tool_lock_path(abs_path);
    const char *syscall = "open";
    int r = tool_write_file_at(dirfd, base, content, content_len, &syscall);
    int saved = errno;
    tool_unlock_path(lock);
    if (r < 0 && saved == ELOOP) {
        /* Names the symlink in the message. */
        _cleanup_close_ int probe = tool_pin_open(pin, abs_path, O_PATH, 0, msg, sizeof(msg));
        return tool_result_error(
            res, "%s", msg[0] ? msg : "cordon: a symlink appeared after approval; refused");
    }
    if (r < 0)
        return tool_result_error(res, "%s",
                                 tool_node_error(saved, syscall, abs_path, msg, sizeof(msg)));
    return write_done(path, content, content_len, res);
}

int tool_write(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    const char *path = NULL, *content = NULL;
    size_t path_len = 0, content_len = 0;
    if (tool_arg_string("write", args, "path", true, &path, &path_len, res) < 0 ||
        tool_arg_string("write", args, "content", true, &content, &content_len, res) < 0)
        return 0;
    if (strlen(path) != path_len)
        return tool_result_error(res,
                                 "The argument 'path' must be a string, Uint8Array, or URL "
                                 "without null bytes. Received '%s\\x00...'",
                                 path);

    _cleanup_free_ char *abs_path = tool_resolve_path(path, env);
    _cleanup_free_ char *dir_copy = abs_path ? strdup(abs_path) : NULL;
    if (!abs_path || !dir_copy)
        return tool_result_error(res, "out of memory");
    char msg[8192];
    _cleanup_free_ char *failed = NULL;
    if (env->pin)
        return write_pinned(env->pin, path, abs_path, content, content_len, res);
    if (tool_mkdir_parents(dirname(dir_copy), &failed) < 0)
        return tool_result_error(
            res, "%s",
            tool_node_error(errno, "mkdir", failed ? failed : abs_path, msg, sizeof(msg)));

    int lock = tool_lock_path(abs_path);
    const char *syscall = "open";
    int r = tool_write_file(abs_path, content, content_len, &syscall);
    int saved = errno;
    tool_unlock_path(lock);
    if (r < 0)
        return tool_result_error(res, "%s",
                                 tool_node_error(saved, syscall, abs_path, msg, sizeof(msg)));
    return write_done(path, content, content_len, res);
}
