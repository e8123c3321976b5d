/* Host-owned git metadata (docs/git-metadata.md). Host context, unprivileged
 * supervisor, before the sandbox exists and after each tool call.
 *
 * The sandbox never writes a host git directory's top level. Each git
 * directory the workspace uses (its own, the common directory of a linked
 * worktree, every submodule's below modules/) appears inside as a copy in the
 * session's state directory, over which the parts git writes in normal work
 * (objects/, refs/, logs/ ...) are bound read-write from the host, and the
 * parts the host's git trusts (config, hooks/, info/, commondir, gitdir ...)
 * are read-only. What git writes at the top level (HEAD, index, ORIG_HEAD,
 * packed-refs ...) lands in the copy, and cordon carries it over to the host
 * for a fixed list of names only, through git's own lock files: nothing the
 * sandbox writes there can change where the host's git looks for its
 * configuration, hooks, work tree or common directory, or what it runs.
 *
 * At the end of a session, what the sandbox left for the host's tools to
 * trust at the workspace root (.git in a non-git workspace, .vscode, .idea,
 * .envrc) or below it (a new .git directory or file) is moved aside. */
#pragma once

#include "supervisor/workspace.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define GITGUARD_MAX_DIRS  32
#define GITGUARD_MAX_BINDS 512
#define GITGUARD_MAX_FILES 48

/* One bind of the sandbox's view of git metadata, in order: later binds sit
 * on earlier ones. */
struct gitguard_bind {
    char *source;      /* host path of what is bound */
    char *host_target; /* host path it covers (vm: in QEMU's mount namespace) */
    char *view_target; /* the same place as the sandbox sees it (ns, docker) */
    bool readonly;
    /* Sources the workspace holds (objects/, refs/ ...) are identified when
     * planned; a backend checks the bound tree is the same directory. */
    bool pinned;
    dev_t dev;
    ino_t ino;
};

struct gitguard_stamp {
    bool exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

enum gitguard_file_kind {
    GITGUARD_SYNC,   /* written by git in normal work: carried over both ways */
    GITGUARD_MIRROR, /* host-owned (config ...): read-only inside, refreshed from the host */
};

struct gitguard_file {
    char name[64];
    enum gitguard_file_kind kind;
    struct gitguard_stamp host, copy;
    bool reported;
};

struct gitguard_dir {
    char *host; /* canonical host path */
    int host_fd;
    char *view; /* where the sandbox sees it */
    char *copy; /* its copy in the state directory */
    int copy_fd;
    struct gitguard_file files[GITGUARD_MAX_FILES];
    size_t nfiles;
};

struct gitguard {
    bool active;
    char *root; /* canonical workspace root */
    int root_fd;
    size_t ndirs;
    size_t nbinds;
    /* Workspace-relative paths the host's git configuration trusts
     * (core.hooksPath, included files) that lie in the workspace: protected
     * by the backends like protected_paths; missing ones are watched. */
    char *trusted_paths[16];
    size_t ntrusted;
    bool trusted_absent[16];
    /* The root's trusted-by-tools names that were absent at the start. */
    unsigned root_absent;
    struct timespec started;
    long long last_sync_ms;
    char session[128];
    /* Last, and not zeroed by gitguard_reset (340 KB: 85 pages a start
     * would fault in): a slot is written whole when it is taken. */
    struct gitguard_dir dirs[GITGUARD_MAX_DIRS];
    struct gitguard_bind binds[GITGUARD_MAX_BINDS];
};

/* Empties g's header (no dirs, binds or trusted paths, no fds) without
 * touching the slots of its arrays. */
void gitguard_reset(struct gitguard *g);

/* How often a relay loop (cordon run, shell) carries git's writes over. */
#define GITGUARD_SYNC_INTERVAL_MS 1000

/* Builds the copies under state_dir_fd's "git/" and the list of binds for
 * the workspace ws. A workspace that is not a repository gets no binds (its
 * root is still watched at the end). Fails closed: a git directory that is,
 * or is reached through, a symlink, or that cannot be copied, refuses the
 * start with the reason. */
int gitguard_prepare(struct gitguard *g, const struct workspace *ws, const char *session,
                     int state_dir_fd, const char *state_dir, struct cordon_error *err);
/* Carries what git wrote in the copies over to the host and the host's
 * changes into the copies (docs/git-metadata.md); refusals are logged. */
void gitguard_sync(struct gitguard *g);
/* For relay loops: the poll timeout that wakes them for the next sync
 * (timeout_ms, or sooner; -1 means none), and the sync once it is due. */
int gitguard_poll_timeout(const struct gitguard *g, int timeout_ms);
void gitguard_sync_if_due(struct gitguard *g);
/* The last sync, then the end-of-session check of the workspace for planted
 * repositories and editor/shell hooks. */
void gitguard_finish(struct gitguard *g);
void gitguard_free(struct gitguard *g);

/* Whether a workspace-relative protected path is one the git metadata plan
 * covers (".git" and below), so a backend skips it: gitguard_protect()
 * makes it read-only in the plan instead (what is bound there and below, or
 * a read-only bind of the copy's entry). */
int gitguard_protect(struct gitguard *g, const char *view_root, const char *rel,
                     struct cordon_error *err);
bool gitguard_covers(const struct gitguard *g, const char *rel);

/* What the host's tools trust on sight in a workspace (NULL-terminated):
 * cordon's and direnv's files, editors' and coding agents' settings, which
 * run commands or name MCP servers when the user opens the folder. A
 * session that plants one at the root has it moved aside at the end; review
 * mode never applies one (docs/git-metadata.md, docs/review.md). */
extern const char *const gitguard_host_trusted[];
