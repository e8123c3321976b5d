/* The one table of cordon's tools: name -> synchronous implementation. The
 * agent's dispatcher, `cordon tool` and the host-side test runner all look
 * tools up here. Sandbox (cordon-agent) or host context. */
#pragma once

#include "agent/tools/tool.h"

/* A tool fills res (content, details, is_error) and returns 0; a call that
 * the tool rejects is an error *result*, not a failure. < 0 only when the
 * result could not be built at all (out of memory). args is borrowed. */
typedef int (*tool_fn)(const struct tool_env *env, json_t *args, struct tool_result *res);

/* What kind of tool it is, for the dispatcher (serve.c) and the host's
 * pinning of the path it opens (supervisor/route.c). */
enum tool_flag {
    /* Opens the one file its "path" names (read, write, edit). */
    TOOL_OPENS_FILE = 1u << 0,
    /* Walks the tree below "path", "." when none is given (ls, find, grep). */
    TOOL_LISTS_TREE = 1u << 1,
    /* "path" resolves as read's does (pi's macOS name variants). */
    TOOL_READ_PATH = 1u << 2,
    /* Runs on a worker thread of the agent, cancellable (find, grep). */
    TOOL_ON_WORKER = 1u << 3,
    /* Runs a process the agent watches, with progress (bash); run is the
     * synchronous form (cordon tool, the host-side test runner). */
    TOOL_RUNS_PROCESS = 1u << 4,
};

struct tool_entry {
    const char *name;
    unsigned flags; /* enum tool_flag */
    tool_fn run;
};

/* NULL when no tool has that name. */
const struct tool_entry *tool_lookup(const char *name);

int tool_read(const struct tool_env *env, json_t *args, struct tool_result *res);
/* read on a file the caller opened already (the supervisor's skill read
 * exception); abs_path is for messages only. */
int tool_read_fd(int fd, const char *abs_path, json_t *args, struct tool_result *res);
int tool_write(const struct tool_env *env, json_t *args, struct tool_result *res);
int tool_edit(const struct tool_env *env, json_t *args, struct tool_result *res);
int tool_ls(const struct tool_env *env, json_t *args, struct tool_result *res);
int tool_find(const struct tool_env *env, json_t *args, struct tool_result *res);
int tool_grep(const struct tool_env *env, json_t *args, struct tool_result *res);
int tool_bash_run(const struct tool_env *env, json_t *args, struct tool_result *res);
