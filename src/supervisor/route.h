/* Routing policy of the supervisor: where each tool call runs (sandbox, host,
 * the skill read exception, or nowhere), the exact-call approvals that host
 * execution needs while sandboxed, and the skill read exception itself. Pure
 * decisions plus fd-walking opens; the MCP server owns the state and does the
 * talking. Host context, unprivileged supervisor. */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exact refusal text for a host call that nobody can approve. */
#define ROUTE_NO_INTERACTIVE_CLIENT                                                                \
    "host execution requires user approval, but no interactive client is available"

enum route_state {
    ROUTE_STARTING,      /* the sandbox is being started */
    ROUTE_SANDBOXED,     /* calls run in the sandbox */
    ROUTE_OFF,           /* the user handed over to the host explicitly */
    ROUTE_HOST_FALLBACK, /* the sandbox failed and fallback_mode = "host" */
    ROUTE_BLOCKED,       /* nothing runs; a reason says why */
};

/* "starting", "sandboxed", "off", "host fallback", "blocked" */
const char *route_state_name(enum route_state state);

enum route_target {
    ROUTE_TO_SANDBOX,
    ROUTE_TO_HOST, /* without a prompt (off, host fallback) */
    ROUTE_ASK,     /* host, once the user approved this exact call */
    ROUTE_REFUSE,  /* an error result naming the reason; runs nowhere */
};

/* "sandbox", "host", "approval", "none": the value of _meta "cordon/route". */
const char *route_target_name(enum route_target target);

struct route_inputs {
    enum route_state state;
    const char *blocked_reason; /* for ROUTE_BLOCKED */
    const char *tool;
    json_t *args; /* the call's arguments (execution_target is read here) */
    bool allow_host_execution;
    bool interactive; /* the client can ask the user (elicitation), not headless */
};

/* Decides where a call goes. On ROUTE_REFUSE the reason is in reason. */
enum route_target route_decide(const struct route_inputs *in, char *reason, size_t reason_size);

/* The call's identity for approval: {"args":…,"cwd":…,"tool":…} with every
 * object's keys sorted recursively and execution_target removed from the
 * top-level arguments. malloc'd; NULL on allocation failure. */
char *route_fingerprint(const char *tool, const char *cwd, json_t *args);
/* args without execution_target (a new reference), as the tool receives them. */
json_t *route_strip_target(json_t *args);

/* What a host call will touch, resolved when the user is asked and pinned
 * by fd from then until the call ends (agent/tools/pin.h has the host
 * agent's half). The prompt shows canonical; the host agent opens only rel
 * beneath dir_fd, with no symlink anywhere. */
struct route_pin {
    char *target;       /* the tool's absolute path (pi's rules); NULL: no path (bash) */
    char *canonical;    /* what target resolves to now, symlinks and all */
    char *dir;          /* the approved directory holding it: the cwd, the workspace, or / */
    char *rel;          /* canonical below dir ("" when it is dir itself) */
    char *cwd;          /* the working directory, canonical */
    int dir_fd, cwd_fd; /* O_PATH; -1 when not open */
    uint64_t dir_dev, dir_ino, cwd_dev, cwd_ino;
    bool outside_workspace; /* canonical is not below the workspace */
    bool through_symlink;   /* canonical differs from target */
};

/* Resolves and pins the call's path (read, write, edit: "path"; ls, find,
 * grep: "path" or "."; any other tool: the cwd only). -1 with err naming
 * the path and the reason when it cannot be pinned (a dangling symlink, a
 * path that cannot be resolved). *pin is cleared first; free it with
 * route_pin_free() in any case. */
int route_pin_prepare(const char *tool, json_t *args, const char *cwd, const char *home,
                      const char *workspace, struct route_pin *pin, struct cordon_error *err);
/* The "pin" field of the host agent's call frame (agent/tools/pin.h). */
json_t *route_pin_json(const struct route_pin *pin);
void route_pin_free(struct route_pin *pin);

/* The approval prompt for a host call (the elicitation message): tool,
 * working directory, the resolved path with what it crosses, and the
 * arguments (key-sorted JSON), every hidden character escaped
 * (util/escape.h), with a line saying how many when there are any.
 * *hidden (when not NULL) is that number. malloc'd; NULL when out of
 * memory. */
char *route_prompt_text(const char *tool, const char *cwd, json_t *args,
                        const struct route_pin *pin, const char *workspace, size_t *hidden);

/* Approvals: asked for one fingerprint, answered once, consumed once. */
#define ROUTE_MAX_APPROVALS 64

struct route_approval {
    uint64_t id; /* 0: free slot */
    char *fingerprint;
    bool answered;
    bool granted;
};

struct route_approvals {
    struct route_approval items[ROUTE_MAX_APPROVALS];
    uint64_t next_id;
};

/* Records a question for fingerprint; returns its id (> 0), or 0 when too
 * many are open or memory ran out. */
uint64_t route_approval_ask(struct route_approvals *a, const char *fingerprint);
/* The user's answer. -1 when id is unknown or already answered. */
int route_approval_answer(struct route_approvals *a, uint64_t id, bool granted);
/* Uses the approval for the call about to run: 0 only when id was granted,
 * was never used, and fingerprint is byte-identical to the approved one.
 * Any use, successful or not, ends the approval (no second try, no replay). */
int route_approval_consume(struct route_approvals *a, uint64_t id, const char *fingerprint,
                           struct cordon_error *err);
void route_approvals_free(struct route_approvals *a);

/* The skill read exception. Grants come from the client (replaced as a whole
 * on each update) and from [skills] paths in configuration:
 *   a file named SKILL.md      -> regular files below its directory
 *   a directory                -> regular files below any directory under it
 *                                 (or itself) that holds a SKILL.md
 *   any other regular file     -> that exact file only */
struct route_skill {
    char *path;      /* as given, absolute and lexically normalised */
    char *canonical; /* realpath at the time it was set */
    bool tree;       /* a directory grant (the first two kinds) */
};

struct route_skills {
    struct route_skill *items;
    size_t count;
};

#define ROUTE_MAX_SKILLS 1024

/* Replaces the client's grants with paths (absolute files; others are
 * skipped: a directory grant, which reaches every SKILL.md tree below it,
 * comes only from configuration), keeping config_paths. Paths under workspace (the sandbox sees those) and
 * paths that do not exist are skipped. Returns the number of grants. */
int route_skills_set(struct route_skills *s, const char *const *paths, size_t npaths,
                     const char *const *config_paths, size_t nconfig, const char *workspace);
void route_skills_free(struct route_skills *s);

/* Opens abs_path (absolute, lexically normalised) for reading when a grant
 * covers it. Returns an fd (O_RDONLY, blocking) >= 0; -1 when no grant
 * covers the path (route the call as usual); -2 when a grant covers the path
 * but the file may not be served (err says why: a symlink leaving the skill
 * directory, not a regular file ...). Opens with RESOLVE_BENEATH from the
 * skill directory's fd and checks what was opened: no check-then-open. */
int route_skill_open(const struct route_skills *s, const char *abs_path, struct cordon_error *err);
