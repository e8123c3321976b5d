/* Direct mode's undo of the write and edit tools: see undo.h and
 * docs/review.md ("Rewind in direct mode"). */
#include "supervisor/undo.h"
#include "agent/tools/path.h"
#include "agent/tools/tool.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define STRICT        (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define UNDO_META_MAX (64 * 1024)

int undo_init(struct undo *u, int state_fd, const char *ws_root, const char *view_root,
              const char *view_cwd, const char *home, struct cordon_error *err)
{
    *u = (struct undo){.state_fd = state_fd, .ws_fd = -1};
    if (mkdirat(state_fd, UNDO_DIR, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "cannot create the undo directory %s", UNDO_DIR);
    u->ws_fd = open(ws_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    u->view_root = strdup(view_root);
    u->view_cwd = strdup(view_cwd);
    u->home = strdup(home ? home : "/");
    if (u->ws_fd < 0 || !u->view_root || !u->view_cwd || !u->home) {
        int e = errno;
        undo_free(u);
        return error_set(err, e, "undo: workspace %s", ws_root);
    }
    return 0;
}

void undo_free(struct undo *u)
{
    if (u->ws_fd >= 0)
        close(u->ws_fd);
    u->ws_fd = -1;
    free(u->view_root);
    free(u->view_cwd);
    free(u->home);
    u->view_root = u->view_cwd = u->home = NULL;
}

/* Removes undo/NAME (its two files). */
static void remove_entry(int undo_fd, const char *name)
{
    int d = openat(undo_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d >= 0) {
        unlinkat(d, "before", 0);
        unlinkat(d, "meta.json", 0);
        close(d);
    }
    unlinkat(undo_fd, name, AT_REMOVEDIR);
}

static bool has_git_component(const char *rel)
{
    for (const char *p = rel; p; p = strchr(p, '/')) {
        if (*p == '/')
            p++;
        if (strncmp(p, ".git", 4) == 0 && (p[4] == '/' || p[4] == '\0'))
            return true;
    }
    return false;
}

/* The workspace-relative path of a tool's path argument, or false when it
 * is outside the workspace (not the host's file). */
static bool relative(const struct undo *u, const char *path, char *rel, size_t size)
{
    struct tool_env env = {.cwd = u->view_cwd, .home = u->home};
    _cleanup_free_ char *abs = tool_resolve_path(path, &env);
    size_t n = strlen(u->view_root);
    while (n > 1 && u->view_root[n - 1] == '/')
        n--;
    if (!abs || strncmp(abs, u->view_root, n) != 0 || abs[n] != '/' || !abs[n + 1])
        return false;
    return snprintf(rel, size, "%s", abs + n + 1) < (int)size;
}

void undo_before(struct undo *u, long long id, const char *tool, json_t *args)
{
    if (u->ws_fd < 0 || (strcmp(tool, "write") != 0 && strcmp(tool, "edit") != 0))
        return;
    const char *path = json_string_value(json_object_get(args, "path"));
    struct undo_slot *slot = NULL;
    for (size_t i = 0; i < UNDO_SLOTS && !slot; i++)
        if (!u->slots[i].used)
            slot = &u->slots[i];
    if (!path || !slot)
        return;
    *slot = (struct undo_slot){.id = id};
    if (!relative(u, path, slot->rel, sizeof(slot->rel)))
        return;
    snprintf(slot->pending, sizeof(slot->pending), ".pending-%lld", id);
    for (size_t i = 0; i < UNDO_SLOTS; i++)
        if (u->slots[i].used && strcmp(u->slots[i].rel, slot->rel) == 0)
            slot->concurrent = true;
    _cleanup_close_ int undo_fd =
        openat(u->state_fd, UNDO_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* The sandbox chose the file: a FIFO or device there must neither block
     * the supervisor nor be read (it is not kept). */
    _cleanup_close_ int in = fs_open_regular(u->ws_fd, slot->rel, STRICT);
    struct stat st;
    if (in < 0 && errno != ENOENT) {
        log_debug("undo: %s not kept: %s", slot->rel, strerror(errno));
        return;
    }
    if (undo_fd < 0 || (in >= 0 && (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))))
        return;
    remove_entry(undo_fd, slot->pending);
    if (mkdirat(undo_fd, slot->pending, 0700) < 0)
        return;
    slot->used = true;
    slot->existed = in >= 0;
    if (!slot->existed)
        return;
    slot->mode = st.st_mode & 0777;
    slot->before_ino = (long long)st.st_ino;
    slot->before_size = (long long)st.st_size;
    slot->before_mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    if (st.st_size > UNDO_FILE_MAX || slot->concurrent)
        return; /* not kept: rewind says so */
    _cleanup_close_ int d =
        openat(undo_fd, slot->pending, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int out =
        d < 0 ? -1
              : openat(d, "before", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    char buf[65536];
    ssize_t n;
    off_t total = 0;
    while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0 && total + n <= UNDO_FILE_MAX) {
        if (fs_write_all(out, buf, (size_t)n) < 0)
            return;
        total += n;
    }
    slot->saved = out >= 0 && n == 0;
}

static json_t *identity(int ws_fd, const char *rel)
{
    _cleanup_close_ int fd = fs_openat2(ws_fd, rel, O_PATH | O_NOFOLLOW, STRICT);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return json_null();
    return json_pack("{s:I, s:I, s:I}", "ino", (json_int_t)st.st_ino, "size",
                     (json_int_t)st.st_size, "mtime_ns",
                     (json_int_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
}

/* The numbered entries of undo/, in *RET (malloc'd, ascending). */
static size_t list_entries(int undo_fd, long **ret)
{
    *ret = NULL;
    DIR *dir = fs_opendir_at(undo_fd, ".");
    if (!dir)
        return 0;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end || v <= 0)
            continue;
        if (n == cap) {
            long *more = realloc(*ret, (cap = cap ? cap * 2 : 64) * sizeof(long));
            if (!more)
                break;
            *ret = more;
        }
        (*ret)[n++] = v;
    }
    closedir(dir);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && (*ret)[j - 1] > (*ret)[j]; j--) {
            long t = (*ret)[j];
            (*ret)[j] = (*ret)[j - 1];
            (*ret)[j - 1] = t;
        }
    return n;
}

void undo_after(struct undo *u, long long id, long *ret_n)
{
    *ret_n = 0;
    struct undo_slot *slot = NULL;
    for (size_t i = 0; i < UNDO_SLOTS && !slot; i++)
        if (u->slots[i].used && u->slots[i].id == id)
            slot = &u->slots[i];
    if (!slot)
        return;
    slot->used = false;
    _cleanup_close_ int undo_fd =
        openat(u->state_fd, UNDO_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int d = undo_fd < 0 ? -1
                                        : openat(undo_fd, slot->pending,
                                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return;
    json_t *before = slot->existed ? json_pack("{s:I, s:I, s:I}", "ino", slot->before_ino, "size",
                                               slot->before_size, "mtime_ns", slot->before_mtime_ns)
                                   : json_null();
    json_t *meta =
        json_pack("{s:s, s:b, s:b, s:b, s:i, s:o, s:o}", "path", slot->rel, "existed",
                  slot->existed, "saved", slot->saved, "concurrent", slot->concurrent, "mode",
                  (int)slot->mode, "before", before, "after", identity(u->ws_fd, slot->rel));
    _cleanup_free_ char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    _cleanup_close_ int out =
        openat(d, "meta.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (!text || out < 0 || fs_write_all(out, text, strlen(text)) < 0) {
        remove_entry(undo_fd, slot->pending);
        return;
    }
    _cleanup_free_ long *have = NULL;
    size_t count = list_entries(undo_fd, &have);
    long n = count ? have[count - 1] + 1 : 1;
    char name[32];
    snprintf(name, sizeof(name), "%ld", n);
    if (renameat(undo_fd, slot->pending, undo_fd, name) < 0) {
        remove_entry(undo_fd, slot->pending);
        return;
    }
    /* The bounds: the oldest go, by count and by the bytes kept. */
    long long total = slot->saved ? slot->before_size : 0;
    size_t keep_from = count;
    for (size_t i = count; i-- > 0;) {
        struct stat st;
        char kept[64];
        snprintf(kept, sizeof(kept), "%ld/before", have[i]);
        long long size = fstatat(undo_fd, kept, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_size : 0;
        if (have[i] <= n - UNDO_CALLS_MAX || total + size > UNDO_TOTAL_MAX)
            break;
        total += size;
        keep_from = i;
    }
    for (size_t i = 0; i < keep_from; i++) {
        snprintf(name, sizeof(name), "%ld", have[i]);
        remove_entry(undo_fd, name);
    }
    *ret_n = n;
}

/* ---- rewind ---- */

struct seen {
    char *path;
    bool skip, ours;
    json_t *expect; /* what the file was before the newer call undone */
};

static bool same(json_t *a, json_t *b)
{
    if (json_is_null(a) || json_is_null(b))
        return json_is_null(a) && json_is_null(b);
    const char *keys[] = {"ino", "size", "mtime_ns"};
    for (size_t i = 0; i < 3; i++)
        if (json_integer_value(json_object_get(a, keys[i])) !=
            json_integer_value(json_object_get(b, keys[i])))
            return false;
    return true;
}

static json_t *read_meta(int d)
{
    _cleanup_close_ int fd = openat(d, "meta.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[UNDO_META_MAX];
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
    if (n <= 0 || n == (ssize_t)sizeof(buf))
        return NULL;
    return json_loadb(buf, (size_t)n, 0, NULL);
}

/* Replaces the "after" identity of entry D's record (AFTER is taken). */
static void rewrite_after(int d, json_t *meta, json_t *after)
{
    json_object_set_new(meta, "after", after);
    _cleanup_free_ char *text = json_dumps(meta, JSON_COMPACT);
    _cleanup_close_ int out =
        text ? openat(d, "meta.json.new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                      0600)
             : -1;
    if (out < 0 || fs_write_all(out, text, strlen(text)) < 0 ||
        renameat(d, "meta.json.new", d, "meta.json") < 0)
        unlinkat(d, "meta.json.new", 0);
}

/* Puts undo entry D's previous content at REL, beneath WS_FD. */
static int restore(int ws_fd, int d, const char *rel, unsigned mode)
{
    const char *slash = strrchr(rel, '/');
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
    const char *base = slash ? slash + 1 : rel;
    _cleanup_close_ int dir = strcmp(parent, ".") == 0
                                  ? fcntl(ws_fd, F_DUPFD_CLOEXEC, 3)
                                  : fs_openat2(ws_fd, parent, O_PATH | O_DIRECTORY, STRICT);
    _cleanup_close_ int in = openat(d, "before", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0 || in < 0)
        return -1;
    unsigned char rnd[6];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -1;
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".cordon-rewind-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5]);
    _cleanup_close_ int out =
        openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (fs_write_all(out, buf, (size_t)n) < 0)
            break;
    return fs_rename_temp(dir, tmp, base,
                          n == 0 && fchmod(out, mode & 0777) == 0 && fsync(out) == 0);
}

/* One rewind: where its records and the workspace are, whom it tells. */
struct rewind {
    int undo_fd, ws_fd;
    bool force;
    void (*report)(void *ctx, const char *what, const char *path, const char *why);
    void *ctx;
};

/* Reports rel refused, why formatted: true (refused). */
__attribute__((format(printf, 3, 4))) static bool
rewind_refuse(const struct rewind *rw, const char *rel, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    rw->report(rw->ctx, "refused", rel, why);
    return true;
}

/* A recorded file that did not exist before the call: removed. true when
 * refused. */
static bool rewind_remove(const struct rewind *rw, const char *rel)
{
    _cleanup_close_ int probe = fs_openat2(rw->ws_fd, rel, O_PATH | O_NOFOLLOW, STRICT);
    const char *slash = strrchr(rel, '/');
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
    _cleanup_close_ int dir = strcmp(parent, ".") == 0
                                  ? fcntl(rw->ws_fd, F_DUPFD_CLOEXEC, 3)
                                  : fs_openat2(rw->ws_fd, parent, O_PATH | O_DIRECTORY, STRICT);
    if (probe < 0)
        return false; /* nothing there: nothing to remove */
    if (dir < 0 || unlinkat(dir, slash ? slash + 1 : rel, 0) < 0)
        return rewind_refuse(rw, rel, "cannot remove it: %s", strerror(errno));
    rw->report(rw->ctx, "removed", rel, NULL);
    return false;
}

/* Undoes call number call (record dir d, metadata meta) on rel, whose
 * identity is expected to be expect: true when refused (and reported). */
static bool rewind_call(const struct rewind *rw, long call, int d, json_t *meta, const char *rel,
                        json_t *expect)
{
    json_t *after = json_object_get(meta, "after");
    if (has_git_component(rel))
        return rewind_refuse(rw, rel, "%s", "git metadata is the host's");
    if (!rw->force && !same(expect, after))
        return rewind_refuse(
            rw, rel, "changed since call %ld by something else; --force restores it anyway", call);
    if (json_is_true(json_object_get(meta, "concurrent")))
        return rewind_refuse(rw, rel,
                             "call %ld ran while another call on it was in flight: its content "
                             "before is not known",
                             call);
    if (!json_is_true(json_object_get(meta, "existed")))
        return rewind_remove(rw, rel);
    if (!json_is_true(json_object_get(meta, "saved")))
        return rewind_refuse(rw, rel,
                             "its content before call %ld was not kept (larger than %ld MiB)", call,
                             UNDO_FILE_MAX >> 20);
    if (restore(rw->ws_fd, d, rel, (unsigned)json_integer_value(json_object_get(meta, "mode"))) < 0)
        return rewind_refuse(rw, rel, "cannot restore it: %s", strerror(errno));
    rw->report(rw->ctx, "restored", rel, NULL);
    return false;
}

/* The file of seen[...] a path was first met as, or a new one. */
static struct seen *rewind_seen(struct seen *seen, size_t *nseen, int ws_fd, const char *rel)
{
    for (size_t k = 0; k < *nseen; k++)
        if (strcmp(seen[k].path, rel) == 0)
            return &seen[k];
    struct seen *sn = &seen[(*nseen)++];
    *sn = (struct seen){.path = strdup(rel), .expect = identity(ws_fd, rel)};
    return sn;
}

/* Call number call's record: its directory in *d (named entry) and its
 * metadata, NULL when it cannot be read. */
static json_t *rewind_open_call(const struct rewind *rw, long call, char *entry, size_t size,
                                int *d)
{
    snprintf(entry, size, "%ld", call);
    *d = openat(rw->undo_fd, entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return *d < 0 ? NULL : read_meta(*d);
}

/* The file rewind wrote is the state after the newest call kept, if
 * nothing else changed it in between: that call's record gets the new
 * identity, so a later rewind does not take it for someone else's. */
static void rewind_stamp_kept(const struct rewind *rw, const struct seen *sn, const long *have,
                              size_t count, long to)
{
    for (size_t i = count; sn->ours && !sn->skip && i-- > 0;) {
        if (have[i] > to)
            continue;
        char entry[32];
        _cleanup_close_ int d = -1;
        json_t *meta = rewind_open_call(rw, have[i], entry, sizeof(entry), &d);
        const char *rel = json_string_value(json_object_get(meta, "path"));
        if (rel && strcmp(rel, sn->path) == 0) {
            if (same(json_object_get(meta, "after"), sn->expect))
                rewrite_after(d, meta, identity(rw->ws_fd, rel));
            i = 0;
        }
        json_decref(meta);
    }
}

/* The calls after `to`, newest first: each undone unless its file was
 * refused already. Returns how many files were refused. */
static int rewind_calls(const struct rewind *rw, const long *have, size_t count, long to)
{
    struct seen seen[UNDO_CALLS_MAX + 1];
    size_t nseen = 0;
    int refused = 0;
    for (size_t i = count; i-- > 0 && have[i] > to;) {
        char entry[32];
        _cleanup_close_ int d = -1;
        json_t *meta = rewind_open_call(rw, have[i], entry, sizeof(entry), &d);
        const char *rel = json_string_value(json_object_get(meta, "path"));
        if (!rel || !*rel || rel[0] == '/' || nseen == ARRAY_SIZE(seen)) {
            json_decref(meta);
            continue;
        }
        struct seen *sn = rewind_seen(seen, &nseen, rw->ws_fd, rel);
        if (sn->skip) {
            json_decref(meta);
            continue;
        }
        if (rewind_call(rw, have[i], d, meta, rel, sn->expect)) {
            sn->skip = true;
            refused++;
        } else {
            sn->ours = true;
            json_decref(sn->expect);
            sn->expect = json_incref(json_object_get(meta, "before"));
            if (!sn->expect)
                sn->expect = json_null();
            remove_entry(rw->undo_fd, entry);
        }
        json_decref(meta);
    }
    for (size_t k = 0; k < nseen; k++)
        rewind_stamp_kept(rw, &seen[k], have, count, to);
    for (size_t k = 0; k < nseen; k++) {
        free(seen[k].path);
        json_decref(seen[k].expect);
    }
    return refused;
}

int undo_rewind(const char *name, long to, bool force,
                void (*report)(void *ctx, const char *what, const char *path, const char *why),
                void *ctx, struct cordon_error *err)
{
    struct state_entry e;
    _cleanup_close_ int sd = state_dir_open(name, O_RDONLY, &e, err);
    if (sd < 0)
        return -1;
    _cleanup_close_ int undo_fd =
        openat(sd, UNDO_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (undo_fd < 0)
        return error_set(err, errno == ENOENT ? ENOTSUP : errno,
                         "sandbox %s has no undo records (direct mode keeps them for the write "
                         "and edit tools while its state directory lasts)",
                         name);
    _cleanup_close_ int ws_fd = open(e.workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ws_fd < 0)
        return error_set(err, errno, "sandbox %s: its workspace %s", name, e.workspace);
    _cleanup_free_ long *have = NULL;
    size_t count = list_entries(undo_fd, &have);
    if (to < 0 || (to > 0 && (count == 0 || to > have[count - 1])))
        return error_set(err, ENOENT, "sandbox %s has no call %ld (the last recorded is %ld)", name,
                         to, count ? have[count - 1] : 0L);
    const struct rewind rw = {undo_fd, ws_fd, force, report, ctx};
    return rewind_calls(&rw, have, count, to);
}

bool undo_exists(const char *name)
{
    struct cordon_error err;
    _cleanup_close_ int root = state_root_open(NULL, &err);
    if (root < 0)
        return false;
    _cleanup_close_ int sd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    return sd >= 0 && fstatat(sd, UNDO_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}
