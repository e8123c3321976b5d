/* Tests of find and grep that the differential suite cannot make: find's
 * ignore rules outside a git repository (Debian's fd 8.6 cannot run pi's
 * command there, so these assert the documented fd >= 9 behaviour with
 * --no-require-git), and robustness: symlink loops, FIFOs, /dev/zero as a
 * grep path, unreadable entries, /proc. Also that the fast paths agree with
 * the slow ones: ignore lines compared without their glob, and grep's
 * parallel prefilter (order, limits, binary and large files). Host context,
 * test-only. */
#include "agent/tools/glob.h"
#include "agent/tools/grep-internal.h"
#include "agent/tools/ignore.h"
#include "agent/tools/registry.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs a tool and returns its first text part (malloc'd). */
static char *run(const char *tool, const char *json, bool *is_error)
{
    struct tool_env env = {.cwd = root, .home = root, .tmpdir = root};
    json_error_t jerr;
    json_t *args = json_loads(json, 0, &jerr);
    struct tool_result res = {0};
    const struct tool_entry *t = tool_lookup(tool);
    t->run(&env, args, &res);
    json_decref(args);
    json_t *part = json_array_get(res.content, 0);
    json_t *jt = part ? json_object_get(part, "text") : NULL;
    size_t len = jt ? json_string_length(jt) : 0;
    char *text = malloc(len + 1);
    memcpy(text, jt ? json_string_value(jt) : "", len);
    text[len] = '\0';
    /* NUL bytes (from /dev/zero) shown as '@' so the text stays one string. */
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\0')
            text[i] = '@';
    if (is_error)
        *is_error = res.is_error;
    tool_result_clear(&res);
    return text;
}

static void test_find_outside_git(void)
{
    put(".gitignore", "*.log\nbuild/\n");
    put("a.log", "");
    put("b.txt", "");
    put("build/out.txt", "");
    put("sub/.gitignore", "!keep.log\n");
    put("sub/keep.log", "");
    put("sub/drop.log", "");
    put(".ignore", "secret\n");
    put("secret", "");
    put(".fdignore", "private.txt\n");
    put("private.txt", "");
    char *out = run("find", "{\"pattern\":\"*\"}", NULL);
    is_str(out, ".fdignore\n.gitignore\n.ignore\nb.txt\nsub/\nsub/.gitignore\nsub/keep.log",
           "find applies .gitignore, .ignore and .fdignore outside git (fd --no-require-git)");
    free(out);
    /* grep does not (ripgrep needs a repository for .gitignore). */
    put("a.log", "needle\n");
    put("b.txt", "needle\n");
    put("secret", "needle\n");
    out = run("grep", "{\"pattern\":\"needle\"}", NULL);
    is_str(out, "a.log:1: needle\nb.txt:1: needle", "grep ignores .gitignore outside git only");
    free(out);
}

static void test_robustness(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/loop", root);
    symlink(".", path);
    snprintf(path, sizeof(path), "%s/sub/up", root);
    symlink("..", path);
    snprintf(path, sizeof(path), "%s/fifo", root);
    mkfifo(path, 0644);
    time_t start = time(NULL);
    char *out = run("find", "{\"pattern\":\"*o*\"}", NULL);
    is_str(out, ".fdignore\n.gitignore\n.ignore\nfifo\nloop\nsub/.gitignore\nsub/keep.log",
           "find lists symlinks and FIFOs without following them");
    free(out);
    out = run("grep", "{\"pattern\":\"needle\",\"path\":\"sub\"}", NULL);
    is_str(out, "No matches found", "grep skips the FIFO and symlinked directories");
    free(out);
    out = run("grep", "{\"pattern\":\"x\",\"path\":\"fifo\"}", NULL);
    is_str(out, "No matches found", "grep on a FIFO without writer returns");
    free(out);
    out = run("grep", "{\"pattern\":\"x\",\"path\":\"/dev/zero\"}", NULL);
    is_str(out, "No matches found", "grep on /dev/zero ends (bounded read)");
    free(out);
    out = run("grep", "{\"pattern\":\"^\",\"path\":\"/dev/zero\",\"limit\":1}", NULL);
    ok(strncmp(out, "zero:1: @@@", 11) == 0 && strstr(out, "@... [truncated]"),
       "an empty-match on /dev/zero reports one cut line");
    free(out);
    out = run("find", "{\"pattern\":\"status\",\"path\":\"/proc/self\",\"limit\":5}", NULL);
    ok(strstr(out, "status") != NULL, "find in /proc/self terminates with results");
    free(out);
    bool err = false;
    out = run("grep", "{\"pattern\":\"zzqqxx_not_there\",\"path\":\"/proc/self/task\"}", &err);
    ok(strstr(out, "No matches found") || err, "grep in /proc/self/task terminates");
    free(out);
    ok(time(NULL) - start < 60, "robustness checks finished in bounded time");
}

/* Every gitignore line against every path: ignore_rules_match (which
 * compares plain names, suffixes and paths directly) must say what the
 * line's glob says, as ignore.c builds it ("**" "/" before an unanchored
 * line). */
static void test_ignore_fast_paths(void)
{
    static const char *const lines[] = {
        "foo",  "*.o",   "*~",  "/foo", "a/b", "/a/b",   "build/", "*.tar.gz", ".o",    "*.", "f*o",
        "!foo", "é.txt", "*.é", "foo.", "x/",  "**/foo", "**/*.o", "a\\b",     "{a,b}", "a}"};
    static const char *const paths[] = {"foo",
                                        "x/foo",
                                        "foo/x",
                                        "xfoo",
                                        "a.o",
                                        ".o",
                                        "o",
                                        "x/y/a.o",
                                        "a.oo",
                                        "a~",
                                        "~",
                                        "a/b",
                                        "x/a/b",
                                        "a/bc",
                                        "build",
                                        "x/build",
                                        "a.tar.gz",
                                        "tar.gz",
                                        "\xff.o",
                                        "d\xff/a.o",
                                        "\xc3\xa9.txt",
                                        "x/\xc3\xa9.txt",
                                        "a.\xc3\xa9",
                                        "foo.",
                                        "fo",
                                        "f.o",
                                        "x",
                                        "x/x",
                                        "a\nb/foo",
                                        "a\nb.o",
                                        "ab",
                                        "a}",
                                        "a\\b",
                                        ""};
    int disagreements = 0;
    for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
        const char *line = lines[i];
        struct ignore_rules *rules = ignore_rules_parse(line, strlen(line), 100);
        bool negated = line[0] == '!';
        const char *body = line + negated;
        size_t len = strlen(body);
        bool dir_only = len > 0 && body[len - 1] == '/';
        if (dir_only)
            len--;
        bool anchored = body[0] == '/' || memchr(body, '/', len);
        const char *start = body[0] == '/' ? body + 1 : body;
        size_t start_len = len - (size_t)(start - body);
        char glob[128];
        snprintf(glob, sizeof(glob), "%s%.*s",
                 anchored || strncmp(start, "**/", 3) == 0 ? "" : "**/", (int)start_len, start);
        struct tool_glob *g = NULL;
        struct cordon_error err;
        bool compiled =
            tool_glob_compile(glob, strlen(glob), TOOL_GLOB_LITERAL_SEPARATOR, &g, &err) == 0;
        for (size_t j = 0; j < sizeof(paths) / sizeof(*paths); j++) {
            for (int is_dir = 0; is_dir < 2; is_dir++) {
                enum ignore_match want = IGNORE_NONE;
                if (compiled && (!dir_only || is_dir) &&
                    tool_glob_match(g, paths[j], strlen(paths[j])))
                    want = negated ? IGNORE_WHITELIST : IGNORE_IGNORE;
                enum ignore_match got = ignore_rules_match(rules, paths[j], is_dir);
                if (got != want) {
                    disagreements++;
                    tap_diag("line '%s' path '%s' dir %d: got %d, the glob says %d", line, paths[j],
                             is_dir, got, want);
                }
            }
        }
        tool_glob_free(g);
        ignore_rules_free(rules);
    }
    ok(disagreements == 0, "ignore lines compared directly agree with their globs");
}

/* grep over enough files that the prefilter's workers take part: the
 * result is the sequential one, in the walk's order, whatever finishes
 * first. */
static void test_grep_prefilter(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/many", root);
    mkdir(path, 0755);
    struct membuf_s {
        char *data;
        size_t len;
    } want = {0};
    FILE *w = open_memstream(&want.data, &want.len);
    int matches = 0;
    for (int i = 0; i < 600; i++) {
        char rel[64], text[128];
        snprintf(rel, sizeof(rel), "many/d%d/f%03d.txt", i % 7, i);
        bool hit = i % 5 == 0;
        snprintf(text, sizeof(text), "line one\r\n%s\nlast%s", hit ? "a needle here" : "hay",
                 i % 10 == 0 ? " needle" : "");
        put(rel, text);
    }
    /* Sorted walk order: d0 .. d6, files sorted within each. */
    for (int d = 0; d < 7; d++) {
        for (int i = d; i < 600; i += 7) {
            if (i % 5 == 0) {
                fprintf(w, "%sd%d/f%03d.txt:2: a needle here", matches ? "\n" : "", d, i);
                matches++;
            }
            if (i % 10 == 0) {
                fprintf(w, "\nd%d/f%03d.txt:3: last needle", d, i);
                matches++;
            }
        }
    }
    /* A NUL in the first read: binary, no match reported; a large file
     * with the match at its end; a NUL after a first read with a match. */
    char *big = malloc(6u << 20);
    memset(big, 'x', 6u << 20);
    for (size_t i = 100; i < (6u << 20); i += 100)
        big[i] = '\n';
    memcpy(big + (6u << 20) - 7, "\nneedle", 7);
    snprintf(path, sizeof(path), "%s/many/d9/big.txt", root);
    put("many/d9/big.txt", "");
    FILE *f = fopen(path, "w");
    fwrite(big, 1, 6u << 20, f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/many/d9/bin.dat", root);
    f = fopen(path, "w");
    fputs("needle\n", f);
    fputc('\0', f);
    fclose(f);
    memset(big, 'y', 70000);
    memcpy(big, "needle\n", 7);
    big[69999] = '\0';
    snprintf(path, sizeof(path), "%s/many/d9/late-nul.dat", root);
    f = fopen(path, "w");
    fwrite(big, 1, 70000, f);
    fclose(f);
    free(big);
    fprintf(w, "\nd9/big.txt:62916: needle\nd9/late-nul.dat:1: needle");
    matches += 2;
    fclose(w);
    char *out = run("grep", "{\"pattern\":\"needle\",\"path\":\"many\",\"limit\":1000}", NULL);
    is_str(out, want.data, "grep over 600 files: every match, in the walk's order (%d)", matches);
    free(out);
    out = run("grep", "{\"pattern\":\"needle\",\"path\":\"many\",\"literal\":true,\"limit\":1000}",
              NULL);
    is_str(out, want.data, "the same as a literal");
    free(out);
    static const char *const same[] = {"ne{1,2}dle", "needle|zzz", "need+le",
                                       "needle\\\\b"}; /* JSON: \\b */
    for (size_t i = 0; i < sizeof(same) / sizeof(*same); i++) {
        char args[160];
        snprintf(args, sizeof(args), "{\"pattern\":\"%s\",\"path\":\"many\",\"limit\":1000}",
                 same[i]);
        out = run("grep", args, NULL);
        is_str(out, want.data, "the same with the regex %s", same[i]);
        free(out);
    }
    /* A limit keeps the first matches of the walk. */
    out = run("grep", "{\"pattern\":\"ne+dle\",\"path\":\"many\",\"limit\":25}", NULL);
    char *cut = want.data;
    for (int i = 0; i < 25 && cut; i++)
        cut = strchr(cut + 1, '\n');
    size_t n = cut ? (size_t)(cut - want.data) : strlen(want.data);
    ok(strncmp(out, want.data, n) == 0 && out[n] == '\n' && strstr(out, "25 matches limit reached"),
       "with a limit: the first 25 matches in the walk's order");
    free(out);
    free(want.data);
}

/* More files than the prefilter keeps ahead of the search (PF_WINDOW,
 * 4096), in directories of different sizes: the workers take them in
 * batches and the calling thread takes its own share once it is that far
 * behind; the result is still every match once, in the walk's order, and a
 * limit still cuts at the first matches. */
static void test_grep_prefilter_window(void)
{
    static const int sizes[] = {4500, 3, 17, 1200};
    char *want = NULL;
    size_t want_len = 0;
    FILE *w = open_memstream(&want, &want_len);
    int matches = 0;
    for (int d = 0; d < 4; d++) {
        for (int i = 0; i < sizes[d]; i++) {
            char rel[64];
            snprintf(rel, sizeof(rel), "window/d%d/f%05d", d, i);
            bool hit = i % 97 == 3 || i == sizes[d] - 1;
            put(rel, hit ? "hay\nthe marker_q here\n" : "hay\nnothing\n");
            if (hit)
                fprintf(w, "%sd%d/f%05d:2: the marker_q here", matches++ ? "\n" : "", d, i);
        }
    }
    fclose(w);
    char *out = run("grep", "{\"pattern\":\"marker_q\",\"path\":\"window\",\"limit\":1000}", NULL);
    is_str(out, want, "grep over 5,720 files: every match once, in the walk's order (%d)", matches);
    free(out);
    out = run("grep", "{\"pattern\":\"mark(er)_q\",\"path\":\"window\",\"limit\":1000}", NULL);
    is_str(out, want, "the same with a regex");
    free(out);
    out = run("grep", "{\"pattern\":\"marker_q\",\"path\":\"window\",\"limit\":50}", NULL);
    char *cut = want;
    for (int i = 0; i < 50 && cut; i++)
        cut = strchr(cut + 1, '\n');
    size_t n = cut ? (size_t)(cut - want) : strlen(want);
    ok(strncmp(out, want, n) == 0 && out[n] == '\n' && strstr(out, "50 matches limit reached"),
       "with a limit: the first 50 matches in the walk's order");
    free(out);
    free(want);
}

/* needle_find against memmem: subjects over small alphabets (many places
 * where one or both rare bytes agree), needles cut from the subject and
 * made up, every length from 1, at the subject's start and end, subjects
 * shorter than one SIMD block, a needle of one repeated byte. */
static void test_needle_find_differential(void)
{
    uint64_t state = 0x243f6a8885a308d3ULL;
    int wrong = 0, cases = 0;
    char hay[700], needle[40];
    for (int round = 0; round < 20000; round++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        size_t len = (size_t)(state % 600);
        unsigned alphabet = 1 + (unsigned)((state >> 20) % 4);
        for (size_t i = 0; i < len; i++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            hay[i] = (char)("xs_ab"[state % alphabet]);
        }
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        size_t nlen = 1 + (size_t)(state % 24);
        if (len >= nlen && (state >> 40) % 3 != 0) {
            size_t at = (size_t)((state >> 8) % (len - nlen + 1));
            memcpy(needle, hay + at, nlen);
        } else {
            for (size_t i = 0; i < nlen; i++)
                needle[i] = (char)("xs_abz"[(state >> (i % 50)) % 6]);
        }
        size_t r1 = rare_index(needle, nlen), r2 = rare_index2(needle, nlen, r1);
        const char *got = needle_find(hay, len, needle, nlen, r1, r2);
        const char *want = memmem(hay, len, needle, nlen);
        cases++;
        if (got != want && wrong++ < 3)
            tap_diag("len %zu needle %.*s: at %td, memmem %td", len, (int)nlen, needle,
                     got ? got - hay : -1, want ? want - hay : -1);
    }
    ok(wrong == 0, "needle_find agrees with memmem on %d subjects and needles", cases);
}

/* The prefilter's needle search (memchr on the needle's rarest byte, memmem
 * once that byte turns out common): a needle at the first and the last
 * byte of a file, after many false candidates, and a near miss. */
static void test_grep_rare_byte(void)
{
    put("rare/a.txt", "Copyright Joyent");
    size_t n = 40000;
    char *text = malloc(n + 64);
    for (size_t i = 0; i < n; i += 2)
        memcpy(text + i, i % 200 == 198 ? "J\n" : "J ", 2);
    snprintf(text + n, 64, "\nCopyright Joyent\n");
    put("rare/b.txt", text);
    for (size_t i = 0; i < n; i += 5)
        memcpy(text + i, "JJJJ\n", 5);
    snprintf(text + n, 64, "Copyright Joyent");
    put("rare/c.txt", text);
    free(text);
    put("rare/d.txt", "Copyright Joyen\nopyright Joyent\nCopyright  Joyent\n");
    const char *want = "a.txt:1: Copyright Joyent\nb.txt:202: Copyright Joyent\n"
                       "c.txt:8001: Copyright Joyent";
    char *out =
        run("grep", "{\"pattern\":\"Copyright Joyent\",\"path\":\"rare\",\"literal\":true}", NULL);
    is_str(out, want, "a literal at a file's first and last byte, after 20,000 false candidates");
    free(out);
    out = run("grep", "{\"pattern\":\"Copyright Joy\\\\w+t\",\"path\":\"rare\"}", NULL);
    is_str(out, want, "the same as a regex with a leading literal run");
    free(out);
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/cordon-walk-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    test_find_outside_git();
    test_robustness();
    test_ignore_fast_paths();
    test_grep_prefilter();
    test_grep_prefilter_window();
    test_grep_rare_byte();
    test_needle_find_differential();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("cleanup failed");
    return tap_done();
}
