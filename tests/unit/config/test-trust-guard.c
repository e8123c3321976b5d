/* Unit tests of the trust guard (src/config/trust-guard.c): what a session
 * records, what flags a file, a dead session's record, a nested workspace's
 * file, forgetting after trust. */
#include "config/sha256.h"
#include "config/trust-guard.h"
#include "tap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256], ws[300], guard[300], file[400];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static bool written(const char *workspace, const char *hash)
{
    bool flagged = false;
    struct cordon_error err = {0};
    if (trust_guard_written(guard, workspace, hash, &flagged, &err) < 0)
        tap_diag("trust_guard_written: %s", err.message);
    return flagged;
}

static void hash_of(const char *text, char hex[TRUST_GUARD_HASH_SIZE])
{
    sha256_hex(text, strlen(text), hex);
}

/* Records whose name ends in suffix, in the guard directory and in its
 * workspaces' directories (a record of the flat layout counts too). */
static size_t count_suffix_in(const char *dir, const char *suffix, int depth)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name), s = strlen(suffix);
        if (len >= s && strcmp(e->d_name + len - s, suffix) == 0)
            n++;
        if (depth > 0 && e->d_type == DT_DIR && e->d_name[0] != '.') {
            char sub[700];
            snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
            n += count_suffix_in(sub, suffix, depth - 1);
        }
    }
    if (d)
        closedir(d);
    return n;
}

static size_t count_suffix(const char *suffix)
{
    return count_suffix_in(guard, suffix, 1);
}

static void test_session(void)
{
    struct trust_guard g;
    struct cordon_error err = {0};
    char a[TRUST_GUARD_HASH_SIZE], b[TRUST_GUARD_HASH_SIZE];
    hash_of("pids = 1\n", a);
    hash_of("pids = 2\n", b);

    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "session start: %s", err.message);
    is_str(g.start, "-", "no file at the start");
    is_int(count_suffix(".pending"), 1, "a pending record while the session runs");
    write_text(file, "pids = 1\n");
    ok(written(ws, a), "created during a running session: flagged already");
    is_int(trust_note_session_end(&g, &err), 0, "session end: %s", err.message);
    is_int(count_suffix(".pending"), 0, "the pending record is gone");
    ok(written(ws, a), "created during the session: flagged after it");
    ok(!written(ws, b), "other content is not");
    ok(!g.armed, "the guard is disarmed");
    is_int(trust_note_session_end(&g, &err), 0, "ending twice is harmless");

    is_int(trust_guard_forget(guard, ws, &err), 0, "forget: %s", err.message);
    ok(!written(ws, a), "after the user trusted it: no longer flagged");

    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "a session over unchanged content");
    is_str(g.start, a, "the start hash is the file's");
    trust_note_session_end(&g, &err);
    ok(!written(ws, a), "unchanged content is not flagged");

    /* a file a sandboxed session cannot read (a symlink it planted) */
    unlink(file);
    if (symlink("/etc/passwd", file) < 0)
        abort();
    char h[TRUST_GUARD_HASH_SIZE];
    trust_guard_hash_file(ws, h);
    is_str(h, "?", "a symlink is recorded as unreadable, never followed");
    unlink(file);
}

static void test_dead_session(void)
{
    struct cordon_error err = {0};
    char key[TRUST_GUARD_HASH_SIZE], name[600], c[TRUST_GUARD_HASH_SIZE];
    hash_of(ws, key);
    key[32] = '\0';
    hash_of("pids = 3\n", c);
    /* pid 1 never started at tick 1: a supervisor that died without its end */
    snprintf(name, sizeof(name), "%s/%s/1-1-0.pending", guard, key);
    write_text(name, "-\n0\n");
    write_text(file, "pids = 3\n");
    ok(written(ws, c), "content differing from a dead session's start is flagged");

    struct trust_guard g;
    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "the next session starts");
    ok(access(name, F_OK) != 0, "it settled the dead session's record");
    trust_note_session_end(&g, &err);
    ok(written(ws, c), "the content stays flagged as a marker");
    is_int(count_suffix(".written"), 1, "one marker");
    trust_guard_forget(guard, ws, &err);
    unlink(file);
}

static void test_nested(void)
{
    struct cordon_error err = {0};
    char inner[400], inner_file[500], d[TRUST_GUARD_HASH_SIZE];
    snprintf(inner, sizeof(inner), "%s/sub", ws);
    snprintf(inner_file, sizeof(inner_file), "%s/.cordon.toml", inner);
    mkdir(inner, 0755);
    hash_of("pids = 4\n", d);
    struct trust_guard g;
    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "an enclosing workspace's session");
    write_text(inner_file, "pids = 4\n");
    ok(written(inner, d), "a nested file written while it runs is flagged");
    trust_note_session_end(&g, &err);
    ok(written(inner, d), "... and after it ended (its window)");
    ok(count_suffix(".window") + count_suffix("sessions") >= 1, "the window is recorded");
    is_int(count_suffix(".pending"), 0, "and no pending record stays");
}

/* Many sessions: their windows are folded into .sessions, and a file
 * written in the first one's window is still flagged. */
static void test_fold(void)
{
    struct cordon_error err = {0};
    char inner[400], inner_file[500], d[TRUST_GUARD_HASH_SIZE];
    snprintf(inner, sizeof(inner), "%s/fold", ws);
    snprintf(inner_file, sizeof(inner_file), "%s/.cordon.toml", inner);
    mkdir(inner, 0755);
    hash_of("pids = 5\n", d);
    struct trust_guard g;
    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "a session of the enclosing one");
    write_text(inner_file, "pids = 5\n");
    trust_note_session_end(&g, &err);
    /* 70 earlier sessions' windows (in one second, real sessions share
     * one name), none covering the file's ctime. */
    char key[TRUST_GUARD_HASH_SIZE], name[600];
    hash_of(ws, key);
    key[32] = '\0';
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof(name), "%s/%s/%d-%d.window", guard, key, 1000 + i, 1000 + i);
        write_text(name, "");
    }
    ok(written(inner, d), "flagged among 71 window records");
    bool all = true;
    for (int i = 0; i < 3; i++) {
        if (trust_note_session_start(&g, guard, ws, &err) < 0 ||
            trust_note_session_end(&g, &err) < 0)
            all = false;
    }
    ok(all, "more sessions start and end: %s", err.message);
    ok(count_suffix(".window") < 64, "their windows are folded (%zu window records left)",
       count_suffix(".window"));
    ok(count_suffix("sessions") >= 1, "into .sessions");
    ok(written(inner, d), "the file written in the first one's window is still flagged");
    /* A window record left by a crash between the fold's sync and its
     * removals counts twice, harmlessly; a pending record left by a crash
     * before the end's rename flags as a dead session's. */
    unlink(inner_file);
}

/* A guard directory of the first, flat layout (<key>.<record>, as an
 * earlier cordon kept it): its records still flag, and they move into
 * their workspaces' directories once. */
static void test_flat_layout(void)
{
    char saved[sizeof(guard)], name[700], key[TRUST_GUARD_HASH_SIZE], outer[TRUST_GUARD_HASH_SIZE];
    char e[TRUST_GUARD_HASH_SIZE], f[TRUST_GUARD_HASH_SIZE], inner[400], inner_file[500];
    snprintf(saved, sizeof(saved), "%s", guard);
    snprintf(guard, sizeof(guard), "%.280s-flat", saved);
    mkdir(guard, 0700);
    hash_of(ws, key);
    key[32] = '\0';
    hash_of("pids = 6\n", e);
    hash_of("pids = 7\n", f);
    /* a marker, and a dead session that started with no file */
    snprintf(name, sizeof(name), "%s/%s.%s.written", guard, key, e);
    write_text(name, "");
    snprintf(name, sizeof(name), "%s/%s.1-1-0.pending", guard, key);
    write_text(name, "-\n0\n");
    /* an enclosing workspace's folded window around now */
    snprintf(inner, sizeof(inner), "%s/flat", ws);
    snprintf(inner_file, sizeof(inner_file), "%s/.cordon.toml", inner);
    mkdir(inner, 0755);
    write_text(inner_file, "pids = 7\n");
    hash_of(ws, outer);
    outer[32] = '\0';
    snprintf(name, sizeof(name), "%s/%s.sessions", guard, outer);
    char window[64];
    snprintf(window, sizeof(window), "%lld %lld\n", (long long)time(NULL) - 60,
             (long long)time(NULL) + 60);
    write_text(name, window);
    write_text(file, "pids = 6\n");

    ok(written(ws, e), "a marker of the flat layout still flags its content");
    is_int(count_suffix_in(guard, ".written", 0), 0,
           "... and it moved into the workspace's directory");
    ok(count_suffix(".written") == 1 && count_suffix(".pending") == 1,
       "the marker and the dead session's record are there");
    ok(access(name, F_OK) != 0 && count_suffix("sessions") == 1, "so is the window record");
    snprintf(name, sizeof(name), "%s/.layout", guard);
    ok(access(name, F_OK) == 0, "the move is recorded once");
    ok(written(inner, f), "an enclosing workspace's flat window still flags a nested file");
    char other[TRUST_GUARD_HASH_SIZE];
    hash_of("pids = 8\n", other);
    ok(written(ws, other), "the flat dead session flags other content");

    /* a record of the flat layout left by an older cordon after the move
     * would be ignored: the move happens once; that mix is not supported */
    struct trust_guard g;
    struct cordon_error err = {0};
    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "a session starts: %s", err.message);
    trust_note_session_end(&g, &err);
    ok(written(ws, e), "the content stays flagged");
    is_int(count_suffix(".pending"), 0, "the dead session was settled");
    unlink(file);
    unlink(inner_file);
    snprintf(guard, sizeof(guard), "%s", saved);
}

/* Flat records written after the move (an older cordon running beside
 * this one) are still seen by the check before a nudge; one that cannot
 * be moved flags the file instead of letting it be offered for trust. */
static void test_flat_after_move(void)
{
    char saved[sizeof(guard)], name[700], key[TRUST_GUARD_HASH_SIZE], h[TRUST_GUARD_HASH_SIZE];
    char other[TRUST_GUARD_HASH_SIZE];
    snprintf(saved, sizeof(saved), "%s", guard);
    snprintf(guard, sizeof(guard), "%.280s-late", saved);
    mkdir(guard, 0700);
    struct trust_guard g;
    struct cordon_error err = {0};
    is_int(trust_note_session_start(&g, guard, ws, &err), 0, "a session moves nothing: %s",
           err.message);
    trust_note_session_end(&g, &err);
    snprintf(name, sizeof(name), "%s/.layout", guard);
    ok(access(name, F_OK) == 0, "the layout is recorded");
    hash_of(ws, key);
    key[32] = '\0';
    hash_of("pids = 11\n", h);
    hash_of("pids = 12\n", other);
    snprintf(name, sizeof(name), "%s/%s.%s.written", guard, key, h);
    write_text(name, "");
    ok(written(ws, h), "a flat marker written after the move still flags its content");
    ok(access(name, F_OK) != 0, "... and was moved");
    snprintf(name, sizeof(name), "%s/%s.4-4-0.pending", guard, key);
    write_text(name, "-\n0\n");
    ok(written(ws, other), "a flat dead session's record written after the move flags");
    /* a record whose workspace directory cannot be made (a file there) */
    char stuck[TRUST_GUARD_HASH_SIZE];
    hash_of("/elsewhere", stuck);
    stuck[32] = '\0';
    snprintf(name, sizeof(name), "%s/%s", guard, stuck);
    write_text(name, "");
    snprintf(name, sizeof(name), "%s/%s.5-5-0.pending", guard, stuck);
    write_text(name, "-\n0\n");
    char fresh[TRUST_GUARD_HASH_SIZE];
    hash_of("pids = 13\n", fresh);
    char other_ws[400];
    snprintf(other_ws, sizeof(other_ws), "%s-clean", ws);
    ok(written(other_ws, fresh),
       "a flat record that cannot be moved flags (never a nudge on a guess)");
    snprintf(guard, sizeof(guard), "%s", saved);
}

/* One workspace's records say nothing about another's content. */
static void test_other_workspace(void)
{
    char other_ws[400], key[TRUST_GUARD_HASH_SIZE], name[700], g_hash[TRUST_GUARD_HASH_SIZE];
    snprintf(other_ws, sizeof(other_ws), "%s-other", ws);
    mkdir(other_ws, 0755);
    hash_of(other_ws, key);
    key[32] = '\0';
    hash_of("pids = 9\n", g_hash);
    struct trust_guard g;
    struct cordon_error err = {0};
    is_int(trust_note_session_start(&g, guard, other_ws, &err), 0, "another workspace's session");
    snprintf(name, sizeof(name), "%s/%s/%s.written", guard, key, g_hash);
    write_text(name, "");
    snprintf(name, sizeof(name), "%s/%s/1-1-0.pending", guard, key);
    write_text(name, "-\n0\n");
    ok(!written(ws, g_hash), "its records do not flag this workspace's file");
    ok(written(other_ws, g_hash), "they flag its own");
    trust_note_session_end(&g, &err);
    rmdir(other_ws);
}

static void test_guard_dir(void)
{
    struct cordon_error err = {0};
    struct trust_guard g;
    chmod(guard, 0777);
    ok(trust_note_session_start(&g, guard, ws, &err) < 0, "a guard directory others can write");
    ok(strstr(err.message, "not writable by group or others") != NULL, "is refused: %s",
       err.message);
    chmod(guard, 0700);
    char key[TRUST_GUARD_HASH_SIZE], dir[400];
    hash_of(ws, key);
    key[32] = '\0';
    snprintf(dir, sizeof(dir), "%s/%s", guard, key);
    chmod(dir, 0777);
    ok(trust_note_session_start(&g, guard, ws, &err) < 0,
       "a workspace's directory others can write");
    ok(strstr(err.message, key) && strstr(err.message, "not writable by group or others"),
       "is refused too: %s", err.message);
    bool flagged = false;
    hash_of("pids = 10\n", key);
    ok(trust_guard_written(guard, ws, key, &flagged, &err) < 0, "and a lookup through it fails");
    chmod(dir, 0700);
}

int main(void)
{
    snprintf(root, sizeof(root), "%s/cordon-trust-guard-XXXXXX", getenv("TMPDIR") ?: "/tmp");
    if (!mkdtemp(root))
        abort();
    char *real = realpath(root, NULL);
    snprintf(ws, sizeof(ws), "%s/ws", real);
    snprintf(guard, sizeof(guard), "%s/xdg/cordon/trust-guard", real);
    snprintf(file, sizeof(file), "%s/.cordon.toml", ws);
    free(real);
    mkdir(ws, 0755);
    test_session();
    test_dead_session();
    test_nested();
    test_fold();
    test_flat_layout();
    test_flat_after_move();
    test_other_workspace();
    test_guard_dir();
    char command[600];
    snprintf(command, sizeof(command), "rm -rf '%s'", root);
    if (system(command) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
