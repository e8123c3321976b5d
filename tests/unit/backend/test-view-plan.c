/* Unit tests of a pure builder: the view plan (backend/view.c), the one
 * list of operations that makes the workspace's part of the sandbox's view,
 * and its translations by the three backends: the ns mount plan
 * (ns-mount.c), docker's --mount arguments (docker-run.c), QEMU's binds,
 * the 9p shares and the guest's read-only list (vm-protect.c). What the
 * tests hold them to: the order (later binds sit on earlier ones), what is
 * read-only, the git metadata's pinned sources, the fallback protections
 * of a git directory, a bounded list, and that each backend carries every
 * operation of one spec. Host context, any uid, no namespace. */
#include "backend/docker/docker-run.h"
#include "backend/ns/ns-mount.h"
#include "backend/view.h"
#include "backend/vm/vm-protect.h"
#include "backend/vm/vm-qemu.h"
#include "supervisor/gitguard.h"
#include "supervisor/launch.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char root[] = "/tmp/cordon-view-plan-XXXXXX";
static char ws[256], ws_file[256], gitdir[256], copy[256], copy_hooks[256], copy_modules[256];
static char objects[256], sub_objects[256], mnt[256], mnt_file[256], review[256], etc_cache[256];
static char ws_git[256], ws_hooks[256], ws_objects[256], ws_modules[256], ws_sub_objects[256];

static void path(char *out, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, 256, "%s/%s", dir, name) >= 256)
        tap_bail("path too long");
}

static void make_dir(const char *p)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
    if (system(cmd) != 0)
        tap_bail("mkdir %s", p);
}

static void make_file(const char *p, const char *text)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) < 0)
        tap_bail("write %s", p);
}

/* The scratch tree: a workspace with .git (hooks/, objects/), a git
 * directory outside it, a copy of the git metadata as gitguard makes one,
 * a directory and a file to mount, a review layer. */
static void make_tree(void)
{
    if (!mkdtemp(root))
        tap_bail("mkdtemp");
    path(ws, root, "ws");
    path(ws_file, root, "ws-linked");
    path(gitdir, root, "gitdir");
    path(copy, root, "state/git/ws");
    path(copy_hooks, copy, "hooks");
    path(copy_modules, copy, "modules");
    path(sub_objects, root, "sub-objects");
    path(mnt, root, "cache");
    path(mnt_file, root, "notes.txt");
    path(review, root, "state/review");
    path(etc_cache, root, "etc-cache");
    path(ws_git, ws, ".git");
    path(ws_hooks, ws_git, "hooks");
    path(ws_objects, ws_git, "objects");
    path(ws_modules, ws_git, "modules");
    path(ws_sub_objects, ws_modules, "sub/objects");
    path(objects, ws_git, "objects");
    const char *dirs[] = {ws_hooks,    ws_objects, ws_sub_objects,
                          ws_file,     copy_hooks, copy_modules,
                          sub_objects, mnt,        review};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
        make_dir(dirs[i]);
    char p[300];
    snprintf(p, sizeof(p), "%s/upper", review);
    make_dir(p);
    snprintf(p, sizeof(p), "%s/work", review);
    make_dir(p);
    snprintf(p, sizeof(p), "%s/hooks", gitdir);
    make_dir(p);
    snprintf(p, sizeof(p), "%s/config", gitdir);
    make_file(p, "[core]\n");
    snprintf(p, sizeof(p), "%s/.cordon.toml", ws);
    make_file(p, "");
    snprintf(p, sizeof(p), "%s/.git", ws_file);
    make_file(p, "gitdir: /elsewhere\n");
    make_file(mnt_file, "notes\n");
}

static const char *const protected_paths[] = {".cordon.toml", ".git/hooks", NULL};
static struct gitguard_bind binds[5];

/* The git metadata plan's shape (supervisor/gitguard.c): the copy over
 * .git, the host's objects/ back over it (pinned), hooks/ read-only, the
 * read-only modules/ with a submodule's writable objects/ below it. */
static void make_binds(void)
{
    struct stat st;
    if (stat(objects, &st) < 0)
        tap_bail("stat %s", objects);
    binds[0] = (struct gitguard_bind){copy, ws_git, ws_git, false, false, 0, 0};
    binds[1] =
        (struct gitguard_bind){objects, ws_objects, ws_objects, false, true, st.st_dev, st.st_ino};
    binds[2] = (struct gitguard_bind){copy_hooks, ws_hooks, ws_hooks, true, false, 0, 0};
    binds[3] = (struct gitguard_bind){copy_modules, ws_modules, ws_modules, true, false, 0, 0};
    binds[4] =
        (struct gitguard_bind){sub_objects, ws_sub_objects, ws_sub_objects, false, false, 0, 0};
}

static struct ns_spec plain_spec(void)
{
    return (struct ns_spec){.workspace = ws, .workspace_view = ws, .cwd = ws};
}

static const char *kind_name(enum view_op_kind k)
{
    static const char *const names[] = {"workspace", "review",  "protect",
                                        "git-bind",  "git-dir", "mount"};
    return (size_t)k < sizeof(names) / sizeof(*names) ? names[k] : "?";
}

/* The plan's kinds as one string ("workspace protect protect ..."). */
static const char *kinds(const struct view_plan *plan)
{
    static char out[4096];
    size_t pos = 0;
    out[0] = '\0';
    for (size_t i = 0; i < plan->count && pos < sizeof(out) - 16; i++)
        pos += (size_t)snprintf(out + pos, sizeof(out) - pos, "%s%s", i ? " " : "",
                                kind_name(plan->ops[i].kind));
    return out;
}

static void test_plain_readonly_review(void)
{
    struct cordon_error err = {0};
    struct ns_spec spec = plain_spec();
    struct view_plan plan;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a plain workspace plans");
    is_str(kinds(&plan), "workspace", "... one operation: the workspace");
    is_str(plan.ops[0].source, ws, "... from the host's workspace");
    is_str(plan.ops[0].target, ws, "... at its lexical path");
    ok(!plan.ops[0].readonly && !plan.workspace_readonly && !plan.review, "... read-write");
    view_plan_free(&plan);
    ok(plan.ops == NULL && plan.count == 0, "view_plan_free empties the plan");
    view_plan_free(&plan);

    spec.workspace_readonly = true;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a read-only workspace plans");
    ok(plan.ops[0].kind == VIEW_WORKSPACE && plan.ops[0].readonly && plan.workspace_readonly,
       "... its bind is read-only");
    view_plan_free(&plan);

    spec = plain_spec();
    spec.review_dir = review;
    is_int(view_plan_build(&spec, &plan, &err), 0, "review mode plans");
    is_str(kinds(&plan), "review", "... the workspace is the overlay instead of a bind");
    is_str(plan.ops[0].source, ws, "... the host's workspace its lower layer");
    is_str(plan.ops[0].layer, review, "... the review directory its upper and work");
    ok(plan.review && !plan.ops[0].readonly, "... writable (into the upper layer)");
    view_plan_free(&plan);
}

static void test_protected_and_git_file(void)
{
    struct cordon_error err = {0};
    struct ns_spec spec = plain_spec();
    spec.protected_paths = protected_paths;
    struct view_plan plan;
    is_int(view_plan_build(&spec, &plan, &err), 0, "protected paths plan");
    is_str(kinds(&plan), "workspace protect protect",
           "... each after the workspace it sits on (.git is a directory: no .git protection)");
    const struct view_op *p = &plan.ops[2];
    is_str(p->rel, ".git/hooks", "... in the configured order");
    ok(p->readonly && p->origin == VIEW_PROTECT_CONFIGURED && strcmp(p->source, ws) == 0 &&
           strcmp(p->target, ws) == 0,
       "... read-only, below the workspace on the host and in the view");
    view_plan_free(&plan);

    spec.workspace = ws_file;
    spec.workspace_view = ws_file;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a workspace whose .git is a file plans");
    is_str(kinds(&plan), "workspace protect protect protect", "... one protection more");
    ok(strcmp(plan.ops[3].rel, ".git") == 0 && plan.ops[3].origin == VIEW_PROTECT_GIT_FILE,
       "... the .git file, which names the git directory the host's git trusts");
    view_plan_free(&plan);
}

static void test_git(void)
{
    struct cordon_error err = {0};
    const char *const git_dirs[] = {gitdir, NULL};
    struct ns_spec spec = plain_spec();
    spec.git_dirs = git_dirs;
    struct view_plan plan;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a git directory outside the workspace plans");
    is_str(kinds(&plan), "workspace git-dir protect protect protect",
           "... without a git metadata plan: bound, then three protections in it");
    ok(!plan.ops[1].covered && !plan.ops[1].readonly && strcmp(plan.ops[1].source, gitdir) == 0 &&
           strcmp(plan.ops[1].target, gitdir) == 0,
       "... at its own path, writable as the workspace");
    ok(strcmp(plan.ops[2].rel, "hooks") == 0 && strcmp(plan.ops[3].rel, "config") == 0 &&
           strcmp(plan.ops[4].rel, "config.worktree") == 0,
       "... its hooks/, config and config.worktree");
    ok(plan.ops[4].origin == VIEW_PROTECT_GIT_DIR && strcmp(plan.ops[4].source, gitdir) == 0,
       "... below the git directory");
    view_plan_free(&plan);
    spec.workspace_readonly = true;
    is_int(view_plan_build(&spec, &plan, &err), 0, "... read-only workspace");
    ok(plan.ops[1].readonly, "... the git directory is read-only too");
    view_plan_free(&plan);

    spec.workspace_readonly = false;
    spec.git_binds = binds;
    spec.ngit_binds = 5;
    is_int(view_plan_build(&spec, &plan, &err), 0, "the git metadata plan's binds plan");
    is_str(kinds(&plan), "workspace git-bind git-bind git-bind git-bind git-bind git-dir",
           "... in their order; the git directory covered, with no protection of its own");
    ok(plan.ops[6].covered, "... the git directory is marked covered");
    const struct view_op *b = &plan.ops[2];
    ok(b->pinned && b->dev == binds[1].dev && b->ino == binds[1].ino,
       "... a source the workspace holds keeps its pinned (dev, ino)");
    ok(strcmp(b->source, objects) == 0 && strcmp(b->host_target, ws_objects) == 0 &&
           strcmp(b->target, ws_objects) == 0 && !b->readonly,
       "... its source, host target and view target, writable");
    ok(plan.ops[3].readonly && !plan.ops[3].pinned, "... hooks/ read-only, not pinned");
    view_plan_free(&plan);
}

static void test_mounts_order_bound(void)
{
    struct cordon_error err = {0};
    const struct ns_extra_mount mounts[] = {{mnt, "/opt/cache", false},
                                            {mnt_file, "/opt/notes.txt", true}};
    const char *const git_dirs[] = {gitdir, NULL};
    struct ns_spec spec = plain_spec();
    spec.mounts = mounts;
    spec.nmounts = 2;
    spec.protected_paths = protected_paths;
    spec.git_dirs = git_dirs;
    spec.git_binds = binds;
    spec.ngit_binds = 2;
    spec.review_dir = review;
    struct view_plan plan;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a full spec plans");
    is_str(kinds(&plan), "review protect protect git-bind git-bind git-dir mount mount",
           "... workspace, protections, git binds, git directories, then [[mounts]]");
    ok(strcmp(plan.ops[6].source, mnt) == 0 && strcmp(plan.ops[6].target, "/opt/cache") == 0 &&
           !plan.ops[6].readonly && plan.ops[7].readonly,
       "... each mount from its host path at its guest path, read-only as configured");
    view_plan_free(&plan);

    /* One operation too many: the workspace and VIEW_PLAN_MAX_OPS binds. */
    struct gitguard_bind *many = calloc(VIEW_PLAN_MAX_OPS, sizeof(*many));
    if (!many)
        tap_bail("calloc");
    for (size_t i = 0; i < VIEW_PLAN_MAX_OPS; i++)
        many[i] = binds[0];
    spec = plain_spec();
    spec.git_binds = many;
    spec.ngit_binds = VIEW_PLAN_MAX_OPS - 1;
    is_int(view_plan_build(&spec, &plan, &err), 0, "a plan of exactly the maximum builds");
    is_int((long long)plan.count, VIEW_PLAN_MAX_OPS, "... with every operation");
    view_plan_free(&plan);
    spec.ngit_binds = VIEW_PLAN_MAX_OPS;
    err = (struct cordon_error){0};
    int rc = view_plan_build(&spec, &plan, &err);
    ok(rc < 0 && err.errnum == E2BIG && strstr(err.message, "more than 1024 operations"),
       "one more is refused, with the bound in the message");
    tap_diag("%s", err.message);
    ok(plan.ops == NULL && plan.count == 0, "... and leaves no plan");
    free(many);
}

/* ---- the translations of one spec ---- */

static const struct ns_op *ns_find(const struct ns_mount_plan *p, enum ns_op_kind kind,
                                   const char *source, const char *dest, size_t *index)
{
    for (size_t i = 0; i < p->count; i++) {
        const struct ns_op *op = &p->ops[i];
        if (op->kind == kind && (!source || (op->source && strcmp(op->source, source) == 0)) &&
            strcmp(op->dest, dest) == 0) {
            if (index)
                *index = i;
            return op;
        }
    }
    return NULL;
}

static void test_ns(void)
{
    const char *agent = getenv("CORDON_AGENT");
    const char *const git_dirs[] = {gitdir, NULL};
    const struct ns_extra_mount mounts[] = {{mnt, "/opt/cache", true}};
    struct ns_spec spec = plain_spec();
    spec.home = "/home/view-plan";
    spec.agent_path = agent;
    spec.etc_cache_root = etc_cache;
    spec.protected_paths = protected_paths;
    spec.git_dirs = git_dirs;
    spec.mounts = mounts;
    spec.nmounts = 1;
    struct ns_mount_plan p;
    struct cordon_error err = {0};
    int rc = ns_mount_plan_build(&spec, getuid(), getgid(), &p, &err);
    is_int(rc, 0, "ns: the mount plan builds from the view plan");
    if (rc < 0) {
        tap_diag("%s", err.message);
        return;
    }
    const unsigned long ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    const unsigned long rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    char old[400], new[400];
    size_t iws = 0, iprot = 0, igit = 0, ihooks = 0, imnt = 0;
    snprintf(old, sizeof(old), "/oldroot%s", ws);
    snprintf(new, sizeof(new), "/newroot%s", ws);
    const struct ns_op *op = ns_find(&p, NS_OP_BIND, old, new, &iws);
    ok(op && op->attr == rw, "ns: the workspace bound read-write from /oldroot");
    ok(ns_find(&p, NS_OP_PROTECT, new, ".cordon.toml", &iprot) &&
           ns_find(&p, NS_OP_PROTECT, new, ".git/hooks", NULL) && iprot > iws,
       "ns: each protected path walked in the child, after the workspace");
    snprintf(old, sizeof(old), "/oldroot%s", gitdir);
    snprintf(new, sizeof(new), "/newroot%s", gitdir);
    op = ns_find(&p, NS_OP_BIND, old, new, &igit);
    ok(op && op->attr == rw && igit > iprot, "ns: the git directory bound at its path, after");
    ok(ns_find(&p, NS_OP_PROTECT, new, "hooks", &ihooks) && ihooks > igit &&
           ns_find(&p, NS_OP_PROTECT, new, "config", NULL) &&
           ns_find(&p, NS_OP_PROTECT, new, "config.worktree", NULL),
       "ns: ... its hooks/, config and config.worktree protected on top");
    snprintf(old, sizeof(old), "/oldroot%s", mnt);
    op = ns_find(&p, NS_OP_BIND, old, "/newroot/opt/cache", &imnt);
    ok(op && op->attr == ro && imnt > ihooks, "ns: the read-only mount last of the view");
    ns_mount_plan_free(&p);

    spec.git_binds = binds;
    spec.ngit_binds = 5;
    spec.protected_paths = NULL;
    rc = ns_mount_plan_build(&spec, getuid(), getgid(), &p, &err);
    is_int(rc, 0, "ns: with the git metadata plan");
    if (rc < 0) {
        tap_diag("%s", err.message);
        return;
    }
    snprintf(old, sizeof(old), "/oldroot%s", objects);
    snprintf(new, sizeof(new), "/newroot%s", ws_objects);
    op = ns_find(&p, NS_OP_BIND, old, new, &igit);
    ok(op && (op->flags & NS_OP_CHECK_ID) && op->dev == binds[1].dev && op->ino == binds[1].ino &&
           op->attr == rw,
       "ns: objects/ bound writable, checked in the child to be the directory planned");
    snprintf(old, sizeof(old), "/oldroot%s", copy);
    snprintf(new, sizeof(new), "/newroot%s", ws_git);
    size_t icopy = 0;
    ok(ns_find(&p, NS_OP_BIND, old, new, &icopy) && icopy < igit,
       "ns: ... on top of the copy bound over .git before it");
    snprintf(old, sizeof(old), "/oldroot%s", copy_hooks);
    snprintf(new, sizeof(new), "/newroot%s", ws_hooks);
    op = ns_find(&p, NS_OP_BIND, old, new, NULL);
    ok(op && op->attr == ro && !(op->flags & NS_OP_CHECK_ID), "ns: hooks/ the copy's, read-only");
    snprintf(old, sizeof(old), "/oldroot%s", gitdir);
    snprintf(new, sizeof(new), "/newroot%s", gitdir);
    ok(!ns_find(&p, NS_OP_BIND, old, new, NULL) && !ns_find(&p, NS_OP_PROTECT, new, "hooks", NULL),
       "ns: a covered git directory gets no bind and no protection of its own");
    ns_mount_plan_free(&p);
}

/* Whether --mount value is in the argv, and its index. */
static bool docker_mount(const struct docker_args *a, const char *value, size_t *index)
{
    for (size_t i = 0; i + 1 < a->n; i++) {
        if (strcmp(a->v[i], "--mount") == 0 && strcmp(a->v[i + 1], value) == 0) {
            if (index)
                *index = i;
            return true;
        }
    }
    return false;
}

static int listen_unix(const char *dir, const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/%s", dir, name) >=
        sizeof(sa.sun_path))
        tap_bail("socket path too long");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0)
        tap_bail("socket %s", sa.sun_path);
    return fd;
}

static void test_docker(void)
{
    char home[300], etc[300], state[300], cmd[600];
    snprintf(home, sizeof(home), "%s/home", root);
    snprintf(etc, sizeof(etc), "%s/etc", root);
    snprintf(state, sizeof(state), "%s/dstate", root);
    make_dir(home);
    make_dir(etc);
    make_dir(state);
    int guard = listen_unix(state, DOCKER_GUARD_SOCKET);
    int proxy = listen_unix(state, DOCKER_PROXY_SOCKET);
    snprintf(cmd, sizeof(cmd), "git init -q '%s'", ws);
    if (system(cmd) != 0 || chdir(ws) < 0)
        tap_bail("git init");
    tap_launch_env(home, etc);
    const char *sets[] = {"network.mode=deny", NULL};
    struct launch_request req = {sets, NULL, NULL, NULL};
    struct launch l;
    struct cordon_error err = {0};
    if (launch_prepare(&req, &l, &err) < 0)
        tap_bail("launch_prepare: %s", err.message);
    static const char *const prot[] = {".cordon.toml", NULL};
    l.spec.protected_paths = prot;
    l.spec.git_binds = binds;
    l.spec.ngit_binds = 5;
    char *const serve[] = {"cordon-agent", "serve", NULL};
    struct docker_args a = {0};
    int rc = docker_run_argv(&l, "/usr/bin/docker", "view-plan", state, serve, true, &a, &err);
    is_int(rc, 0, "docker: the argv builds from the view plan");
    if (rc < 0)
        tap_diag("%s", err.message);
    const char *view = l.spec.workspace_view;
    char want[1200];
    size_t iws = 0, iprot = 0, icopy = 0, iobj = 0;
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s", l.spec.workspace, view);
    ok(docker_mount(&a, want, &iws), "docker: the workspace bound at its lexical path");
    snprintf(want, sizeof(want), "type=bind,source=%s/.cordon.toml,target=%s/.cordon.toml,readonly",
             l.spec.workspace, view);
    ok(docker_mount(&a, want, &iprot) && iprot > iws,
       "docker: the protected path bound read-only over it");
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s", copy, ws_git);
    ok(docker_mount(&a, want, &icopy) && icopy > iprot, "docker: the copy over .git, after");
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s", objects, ws_objects);
    ok(docker_mount(&a, want, &iobj) && iobj > icopy, "docker: the host's objects/ over the copy");
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s,readonly", copy_hooks, ws_hooks);
    ok(docker_mount(&a, want, NULL), "docker: hooks/ the copy's, read-only");
    docker_args_free(&a);

    /* workspace_readonly: docker makes every git bind read-only (ns keeps
     * the bind's own mode; docs/design.md "The view plan"). */
    l.spec.workspace_readonly = true;
    struct docker_args b = {0};
    rc = docker_run_argv(&l, "/usr/bin/docker", "view-plan", state, serve, true, &b, &err);
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s,readonly", objects, ws_objects);
    ok(rc == 0 && docker_mount(&b, want, NULL),
       "docker: a read-only workspace makes objects/ read-only too");
    docker_args_free(&b);
    l.spec.workspace_readonly = false;
    l.spec.protected_paths = NULL;
    l.spec.git_binds = NULL;
    l.spec.ngit_binds = 0;
    launch_free(&l);
    close(guard);
    close(proxy);
    if (chdir("/") < 0)
        tap_bail("chdir /");
}

static const struct vm_bind *vm_find(const struct vm_bind *list, const char *source,
                                     const char *target, size_t *index)
{
    for (size_t i = 0; list && list[i].target; i++) {
        if (strcmp(list[i].source, source) == 0 && strcmp(list[i].target, target) == 0) {
            if (index)
                *index = i;
            return &list[i];
        }
    }
    return NULL;
}

static bool json_has(const json_t *list, const char *want)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(json_string_value(json_array_get(list, i)), want) == 0)
            return true;
    return false;
}

static void test_vm(void)
{
    const char *const git_dirs[] = {gitdir, NULL};
    const struct ns_extra_mount mounts[] = {{mnt, "/opt/cache", true}};
    struct ns_spec spec = plain_spec();
    spec.protected_paths = protected_paths;
    spec.git_dirs = git_dirs;
    spec.mounts = mounts;
    spec.nmounts = 1;
    struct cordon_error err = {0};
    struct view_plan view;
    if (view_plan_build(&spec, &view, &err) < 0)
        tap_bail("view_plan_build: %s", err.message);
    /* The guest's Docker daemon hands the agent guest root: QEMU's own
     * view must hold every protection (as for root). */
    struct vm_bind *list = NULL;
    is_int(vm_protect_plan(&view, true, &list, &err), 0, "vm: QEMU's binds plan");
    char p[400], q[400];
    snprintf(p, sizeof(p), "%s/.cordon.toml", ws);
    const struct vm_bind *b = vm_find(list, p, p, NULL);
    ok(b && b->readonly, "vm: the protected path read-only over itself in QEMU's view");
    size_t igit = 0, ihooks = 0;
    const struct vm_bind *g = vm_find(list, ws_git, ws_git, &igit);
    b = vm_find(list, ws_hooks, ws_hooks, &ihooks);
    ok(g && !g->readonly && b && b->readonly && igit < ihooks,
       "vm: .git on the way pinned by a bind over itself, then .git/hooks read-only");
    snprintf(q, sizeof(q), "%s/hooks", gitdir);
    b = vm_find(list, q, q, NULL);
    ok(b && b->readonly, "vm: the git directory's hooks/ read-only (no git metadata plan)");
    vm_protect_free(list);

    struct vm_share shares[8] = {{"/usr", "/usr", true}, {"/etc", "/etc", true}};
    size_t n = 2;
    is_int(vm_view_shares(&view, shares, &n, 8, &err), 0, "vm: the shares plan");
    ok(n == 5 && strcmp(shares[2].host, ws) == 0 && strcmp(shares[3].host, gitdir) == 0 &&
           strcmp(shares[4].guest, "/opt/cache") == 0 && shares[4].readonly,
       "vm: the workspace, the git directory, the mount, in that order");
    json_t *prot = json_array();
    is_int(vm_view_guest_protected(&view, prot), 0, "vm: the guest's read-only list");
    ok(json_array_size(prot) == 2 && json_has(prot, p) && json_has(prot, ws_hooks),
       "vm: ... the configured paths as the guest sees them, nothing of the git directory");
    json_decref(prot);
    view_plan_free(&view);

    /* A file as a mount: 9p shares directories only. */
    const struct ns_extra_mount file_mount[] = {{mnt_file, "/opt/notes.txt", true}};
    spec.mounts = file_mount;
    if (view_plan_build(&spec, &view, &err) < 0)
        tap_bail("view_plan_build: %s", err.message);
    n = 2;
    ok(vm_view_shares(&view, shares, &n, 8, &err) < 0 && strstr(err.message, "directories only"),
       "vm: a file mount refuses the start, with the reason");
    view_plan_free(&view);

    /* The git metadata plan, in review mode (its .git/hooks is then no
     * configured protected path: lifecycle.c hands it to the plan). */
    static const char *const prot_review[] = {".cordon.toml", NULL};
    spec = plain_spec();
    spec.protected_paths = prot_review;
    spec.git_binds = binds;
    spec.ngit_binds = 5;
    spec.git_dirs = git_dirs;
    spec.review_dir = review;
    if (view_plan_build(&spec, &view, &err) < 0)
        tap_bail("view_plan_build: %s", err.message);
    is_int(vm_protect_plan(&view, true, &list, &err), 0, "vm: review mode with git binds plans");
    ok(list && list[0].layer && strcmp(list[0].layer, review) == 0 &&
           strcmp(list[0].target, ws) == 0,
       "vm: the overlay over the workspace first");
    size_t iobj = 0, icopy = 0;
    b = vm_find(list, objects, ws_objects, &iobj);
    ok(vm_find(list, copy, ws_git, &icopy) && b && b->pinned && b->dev == binds[1].dev &&
           b->ino == binds[1].ino && icopy < iobj,
       "vm: then the git binds in order, objects/ pinned");
    snprintf(p, sizeof(p), "%s/.cordon.toml", ws);
    ok(!vm_find(list, p, p, NULL), "vm: review mode binds no workspace path of the host's");
    vm_protect_free(list);
    n = 2;
    is_int(vm_view_shares(&view, shares, &n, 8, &err), 0, "vm: review mode's shares");
    ok(n == 4 && strcmp(shares[2].host, ws) == 0 && strcmp(shares[3].host, gitdir) == 0,
       "vm: the workspace (QEMU's overlay) and the covered git directory are still shared");
    prot = json_array();
    is_int(vm_view_guest_protected(&view, prot), 0, "vm: the guest's list with git binds");
    ok(json_has(prot, ws_hooks) && !json_has(prot, ws_modules) && !json_has(prot, ws_objects),
       "vm: read-only git binds that cover no writable one (hooks/, not modules/ or objects/)");
    json_decref(prot);
    view_plan_free(&view);
}

int main(void)
{
    make_tree();
    make_binds();
    test_plain_readonly_review();
    test_protected_and_git_file();
    test_git();
    test_mounts_order_bound();
    test_ns();
    test_vm();
    test_docker();
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
