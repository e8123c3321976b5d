/* Unit tests of workspace detection's own readers (supervisor/workspace-git.h,
 * workspace.h): the git config scanner against git's syntax, and the unsafe
 * root rules on paths. Host context, any uid. */
#include "supervisor/workspace-git.h"
#include "supervisor/workspace.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int scan(const char *text, struct ws_git_core *core, struct cordon_error *err)
{
    *core = (struct ws_git_core){.bare = -1};
    return ws_git_config_scan(text, strlen(text), "cfg", core, err);
}

static void test_config(void)
{
    struct ws_git_core c;
    struct cordon_error err = {0};

    is_int(scan("[core]\n\trepositoryformatversion = 0\n\tbare = false\n", &c, &err), 0,
           "a config git init writes parses");
    ok(!c.worktree_set && c.bare == 0 && !c.worktree_config, "... no worktree, not bare");

    scan("[core]\n\tworktree = /home/u/.ssh\n", &c, &err);
    ok(c.worktree_set && c.worktree_line == 2, "core.worktree is found, with its line");
    is_str(c.worktree, "/home/u/.ssh", "... and its value");

    scan("[CoRe]\n\tWorkTree=\"/a b\"  # comment\n", &c, &err);
    is_str(c.worktree, "/a b", "section and key are case-insensitive; quotes and comments");

    scan("[core] worktree = /x\n", &c, &err);
    is_str(c.worktree, "/x", "a key on the section's own line counts (git allows it)");

    scan("[core]\n\tworktree = /first\n[core]\n\tworktree = /second\n", &c, &err);
    is_str(c.worktree, "/second", "the last setting wins, as in git");

    scan("[core]\n\tworktree = /a\\\n/b\n", &c, &err);
    is_str(c.worktree, "/a/b", "a continued line is joined");

    scan("[core]\r\n\tworktree = /crlf\r\n", &c, &err);
    is_str(c.worktree, "/crlf", "CRLF line ends");

    scan("[core \"sub\"]\n\tworktree = /not-core\n[core.sub]\n\tworktree = /old-form\n", &c, &err);
    ok(!c.worktree_set, "[core \"sub\"] and [core.sub] are not [core]");

    scan("[remote \"o\"]\n\turl = x\n[include]\n\tpath = /elsewhere\n", &c, &err);
    ok(!c.worktree_set, "other sections and includes are not followed");

    scan("[extensions]\n\tworktreeConfig\n[core]\n\tbare = yes\n", &c, &err);
    ok(c.worktree_config && c.bare == 1, "a bare key is true; yes is true");

    scan("\xef\xbb\xbf[core]\n\tbare = 1\n", &c, &err);
    ok(c.bare == 1, "a UTF-8 BOM is skipped");

    is_int(scan("[broken\n", &c, &err), -1, "an unclosed section is refused");
    ok(strstr(err.message, "bad config line 1 in cfg") != NULL, "... naming the file and line");
    is_int(scan("[core]\n\tworktree = \"open\n", &c, &err), -1, "an unclosed quote is refused");
    ok(strstr(err.message, "line 2") != NULL, "... on its line");
    is_int(scan("worktree = /x\n", &c, &err), -1, "a key before any section is refused");
    is_int(scan("[core]\n\t=x\n", &c, &err), -1, "a line without a key is refused");
    is_int(scan("[core]\n\tworktree = \\q\n", &c, &err), -1, "a bad escape is refused");
    is_int(scan("[core]\n\tbare = maybe\n", &c, &err), -1,
           "a bad boolean for core.bare is refused");

    char big[PATH_MAX + 64];
    memset(big, 'a', sizeof(big));
    memcpy(big, "[core]\nworktree=", 16);
    big[sizeof(big) - 2] = '\n';
    big[sizeof(big) - 1] = '\0';
    is_int(scan(big, &c, &err), -1, "a core.worktree longer than PATH_MAX is refused");
}

static void test_safe(void)
{
    struct cordon_error err = {0};
    static const char *const bad[][2] = {
        {"/", "root directory"},
        {"/tmp", "shared temporary"},
        {"/var/tmp", "shared temporary"},
        {"/dev/shm", "shared temporary"},
        {"/usr/src", "system directory /usr"},
        {"/run/user/1000", "/run"},
        {"/home/u", "home directory"},
        {"/home", "home directory"},
        {"/home/u/.ssh", "~/.ssh"},
        {"/home/u/.config/x", "~/.config"},
        {"/home/u/.aws/sub", "~/.aws"},
        {"/home/u/.local", "contains ~/.local/share/keyrings"},
        {"/home/u/.local/share/keyrings", "~/.local/share/keyrings"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.message[0] = '\0';
        int r = workspace_check_safe(bad[i][0], "/home/u/", &err);
        ok(r < 0 && strstr(err.message, bad[i][1]), "%s is refused (%s)", bad[i][0], bad[i][1]);
    }
    /* A project directory passes (it must exist: its mode is checked). */
    char dir[] = "/tmp/cordon-unit-ws.XXXXXX";
    if (mkdtemp(dir)) {
        is_int(workspace_check_safe(dir, "/home/u", &err), 0,
               "a project directory below /tmp is fine");
        chmod(dir, 01777);
        ok(workspace_check_safe(dir, "/home/u", &err) < 0 && strstr(err.message, "sticky"),
           "... unless it is sticky and world-writable");
        rmdir(dir);
    }
}

/* workspace_detect() on a repository made here: the root is where .git is,
 * the git directories inside it are not handed on separately, and the
 * validated layout is kept in layout_*. */
static void test_detect(void)
{
    char dir[] = "/tmp/cordon-unit-repo.XXXXXX";
    if (!mkdtemp(dir)) {
        tap_skip("mkdtemp failed", "workspace_detect");
        return;
    }
    char cmd[256], sub[64], gitdir[64];
    snprintf(cmd, sizeof(cmd), "git init -q %s 2>/dev/null && mkdir %s/sub", dir, dir);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    snprintf(gitdir, sizeof(gitdir), "%s/.git", dir);
    if (system(cmd) != 0) {
        tap_skip("git is not installed", "workspace_detect");
    } else {
        struct workspace ws;
        struct cordon_error err = {0};
        int r = workspace_detect(sub, &ws, &err);
        is_int(r, 0, "workspace_detect in a repository's subdirectory succeeds");
        if (r == 0) {
            is_str(ws.root, dir, "... the root holds .git");
            ok(ws.is_git && !ws.git_dir && !ws.git_common_dir,
               "... git, nothing outside the root to hand on");
            is_str(ws.layout_git_dir, gitdir, "... layout_git_dir is the validated .git");
            is_str(ws.layout_common_dir, gitdir, "... and so is layout_common_dir");
            workspace_free(&ws);
        }
        snprintf(cmd, sizeof(cmd), "git -C %s config core.worktree /", dir);
        if (system(cmd) == 0) {
            r = workspace_detect(sub, &ws, &err);
            ok(r < 0 && strstr(err.message, "sets core.worktree = /"),
               "core.worktree = / is refused, naming it");
        }
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
}

int main(void)
{
    test_config();
    test_safe();
    test_detect();
    return tap_done();
}
