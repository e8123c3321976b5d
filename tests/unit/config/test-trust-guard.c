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

static size_t count_suffix(const char *suffix)
{
    DIR *d = opendir(guard);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name), s = strlen(suffix);
        if (len > s && strcmp(e->d_name + len - s, suffix) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
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
    snprintf(name, sizeof(name), "%s/%s.1-1-0.pending", guard, key);
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
    ok(count_suffix(".window") + count_suffix(".sessions") >= 1, "the window is recorded");
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
        snprintf(name, sizeof(name), "%s/%s.%d-%d.window", guard, key, 1000 + i, 1000 + i);
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
    ok(count_suffix(".sessions") >= 1, "into .sessions");
    ok(written(inner, d), "the file written in the first one's window is still flagged");
    /* A window record left by a crash between the fold's sync and its
     * removals counts twice, harmlessly; a pending record left by a crash
     * before the end's rename flags as a dead session's. */
    unlink(inner_file);
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
    test_guard_dir();
    char command[600];
    snprintf(command, sizeof(command), "rm -rf '%s'", root);
    if (system(command) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
