// Differential test: every case in tests/diff/cases/*.json runs through pi
// 0.73.1's real tool (tests/pi/node_modules) and through cordon's runner on
// the same fixture at the same path, and both results must be the same bytes.
// TAP on stdout. Host context, test-only.
//
// A case file holds one case object or an array of them:
// {
//   "name": "read: offset beyond end",        // unique within the file
//   "tool": "read",                           // any tool pi and cordon have
//   "args": {"path": "a.txt", "offset": 9},   // the call's arguments
//   "cwd": "sub",                             // session cwd inside the fixture (default ".")
//   "home": "h",                              // $HOME inside the fixture (default: none)
//   "files": {                                // the fixture, created in this order
//     "a.txt": "utf-8 text",
//     "b.txt": {"text": "x", "mode": "0600"},
//     "big.txt": {"repeat": "line\n", "count": 2001, "prefix": "", "suffix": ""},
//     "img.png": {"base64": "iVBOR..."},
//     "link": {"symlink": "a.txt"},
//     "dir": {"dir": true, "mode": "0755"},   // parent directories are implicit
//     "pipe": {"fifo": true}
//   },
//   "generate": {"dir": "d", "count": 600, "nameLength": 100},  // many empty files
//   "tree": true,            // also compare the fixture tree afterwards (write/edit)
//   "normalize": [{"pattern": "regex", "flags": "g", "replace": "X"}],
//                            // applied to both outputs: values that legitimately differ
//   "user": "root" | "unprivileged",   // run only as that kind of user
//   "outsideWorkspace": true,          // reads outside cwd: skipped when sandboxed
//   "timeout": 30,           // seconds for each side
//   "git": true              // `git init` the fixture root first (find/grep
//                            // ignore rules depend on it)
// }
// pi's find and grep run `fd` and `rg` from PATH; the harness puts shims
// first on PATH (see installShims) so pi's side runs on this machine and
// in a defined order.
// Environment: CORDON_TOOL_RUNNER (command, split on spaces; default the
// tool-run binary), CORDON_BUILD, CORDON_SRC, DIFF_FILTER (regex on
// "file: name"), DIFF_VERBOSE=1 (print both outputs), CORDON_DIFF_JOBS
// (how many cordon-side calls run at once, default 1; results are still
// reported in case order).
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const src = process.env.CORDON_SRC || path.resolve(here, "../..");
const modules = path.join(src, "tests/pi/node_modules");
const piTools = path.join(modules, "@mariozechner/pi-coding-agent/dist/core/tools/index.js");
const piAi = path.join(modules, "@mariozechner/pi-ai/dist/index.js");

let testNumber = 0;
let failures = 0;
function tapOk(passed, description, diagnostics = []) {
    testNumber++;
    console.log(`${passed ? "ok" : "not ok"} ${testNumber} - ${description}`);
    for (const line of diagnostics) console.log(`#   ${String(line).split("\n").join("\n#   ")}`);
    if (!passed) failures++;
}
function tapSkip(description, reason) {
    testNumber++;
    console.log(`ok ${testNumber} - ${description} # SKIP ${reason}`);
}

if (!fs.existsSync(piTools) || !fs.existsSync(piAi)) {
    console.log("1..0 # SKIP tests/pi/node_modules is missing (run scripts/bootstrap.sh --test)");
    process.exit(0);
}

function findRunner() {
    if (process.env.CORDON_TOOL_RUNNER) return process.env.CORDON_TOOL_RUNNER.split(" ").filter(Boolean);
    const build = process.env.CORDON_BUILD || path.join(src, "build-test");
    for (const candidate of [path.join(build, "tests/tools/tool-run"), path.join(build, "tool-run")]) {
        if (fs.existsSync(candidate)) return [path.resolve(candidate)];
    }
    return null;
}
const runner = findRunner();
if (!runner) {
    console.log("1..0 # SKIP no tool-run binary (set CORDON_BUILD or CORDON_TOOL_RUNNER)");
    process.exit(0);
}

// Shims for pi's side. fd: pi passes --no-require-git, which Debian 12's
// fdfind 8.6 rejects; inside a git repository fd 8.6 without it applies the
// same rules, so fixtures with .gitignore files are git repositories. fd 9+
// also leaves out .git (an implicit --exclude .git). fd's output order is
// only defined when it sorts (small trees), and with --max-results it is
// whichever results the parallel walk finds first; the shim sorts by path
// components and then cuts at the limit, the order cordon defines. rg: the
// parallel order is not defined either; --sort path is cordon's order.
function installShims() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-diff-shims-"));
    const fdShim = `#!/bin/bash
args=() max=0
while [ $# -gt 0 ]; do
    case "$1" in
        --no-require-git) ;;
        --max-results) max=$2; shift ;;
        --) args+=("$@"); break ;;
        *) args+=("$1") ;;
    esac
    shift
done
if [ "\${args[0]}" = --version ]; then exec fdfind --version; fi
# A value fd cannot parse: let fdfind report it.
case "$max" in ''|*[!0-9]*) exec fdfind --max-results "$max" "\${args[@]}" ;; esac
fdfind --exclude .git "\${args[@]}" | sed 's|/|\x01|g' | LC_ALL=C sort | sed 's|\x01|/|g' |
    if [ "$max" -gt 0 ]; then head -n "$max"; else cat; fi
exit "\${PIPESTATUS[0]}"
`;
    fs.writeFileSync(path.join(dir, "fd"), fdShim, { mode: 0o755 });
    // The real rg by absolute path: the shim itself is "rg" on PATH.
    const realRg = spawnSync("sh", ["-c", "command -v rg"], { encoding: "utf-8" }).stdout.trim() || "/usr/bin/rg";
    fs.writeFileSync(path.join(dir, "rg"), `#!/bin/sh\nexec ${realRg} --sort path "$@"\n`, { mode: 0o755 });
    process.env.PATH = `${dir}:${process.env.PATH}`;
    process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
}
installShims();

const tools = await import(pathToFileURL(piTools).href);
const { validateToolArguments } = await import(pathToFileURL(piAi).href);
const creators = {
    read: tools.createReadTool,
    write: tools.createWriteTool,
    edit: tools.createEditTool,
    ls: tools.createLsTool,
    find: tools.createFindTool,
    grep: tools.createGrepTool,
    bash: tools.createBashTool,
};

function fileBytes(spec) {
    if (typeof spec === "string") return Buffer.from(spec, "utf-8");
    if (spec.base64 !== undefined) return Buffer.from(spec.base64, "base64");
    if (spec.repeat !== undefined) {
        return Buffer.from((spec.prefix ?? "") + spec.repeat.repeat(spec.count ?? 1) + (spec.suffix ?? ""), "utf-8");
    }
    return Buffer.from(spec.text ?? "", "utf-8");
}

// Names may be given with \uXXXX escapes or as "base64:..." for bytes that
// are not valid UTF-8.
function nameBytes(name) {
    return name.startsWith("base64:") ? Buffer.from(name.slice(7), "base64") : Buffer.from(name, "utf-8");
}

function buildFixture(root, files, generate, git) {
    fs.mkdirSync(root, { recursive: true });
    if (git) {
        const made = spawnSync("git", ["init", "-q", root]);
        if (made.status !== 0) throw new Error(`git init failed: ${made.stderr}`);
    }
    if (generate) {
        // Many empty files with long names: {"dir": "d", "count": 600, "nameLength": 100}
        const dir = path.join(root, generate.dir ?? ".");
        fs.mkdirSync(dir, { recursive: true });
        for (let i = 0; i < generate.count; i++) {
            fs.writeFileSync(path.join(dir, String(i).padStart(5, "0").padEnd(generate.nameLength ?? 8, "x")), "");
        }
    }
    for (const [name, spec] of Object.entries(files ?? {})) {
        const full = Buffer.concat([Buffer.from(root + "/"), nameBytes(name)]);
        const parent = path.dirname(full.toString("latin1"));
        fs.mkdirSync(Buffer.from(parent, "latin1"), { recursive: true });
        if (typeof spec === "object" && spec.symlink !== undefined) {
            fs.symlinkSync(spec.symlink, full);
        } else if (typeof spec === "object" && spec.dir) {
            fs.mkdirSync(full, { recursive: true });
        } else if (typeof spec === "object" && spec.fifo) {
            const made = spawnSync("mkfifo", [full.toString("latin1")]);
            if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
        } else {
            fs.writeFileSync(full, fileBytes(spec));
        }
        if (typeof spec === "object" && spec.mode !== undefined && spec.symlink === undefined) {
            fs.chmodSync(full, parseInt(spec.mode, 8));
        }
    }
    // Directory modes last: a read-only directory must not stop the files above.
    for (const [name, spec] of Object.entries(files ?? {})) {
        if (typeof spec === "object" && spec.dir && spec.mode !== undefined) {
            fs.chmodSync(Buffer.concat([Buffer.from(root + "/"), nameBytes(name)]), parseInt(spec.mode, 8));
        }
    }
}

function snapshotTree(root) {
    const out = [];
    const walk = (dir, rel) => {
        let names;
        try {
            names = fs.readdirSync(dir, { encoding: "buffer" }).map((b) => b.toString("latin1")).sort();
        } catch (e) {
            out.push(`${rel || "."} unreadable ${e.code}`);
            return;
        }
        for (const name of names) {
            const full = path.join(dir, name);
            const r = rel ? `${rel}/${name}` : name;
            const st = fs.lstatSync(Buffer.from(full, "latin1"));
            const mode = (st.mode & 0o7777).toString(8);
            if (st.isSymbolicLink()) out.push(`${r} -> ${fs.readlinkSync(Buffer.from(full, "latin1"))}`);
            else if (st.isDirectory()) {
                out.push(`${r}/ ${mode}`);
                walk(full, r);
            } else if (st.isFile()) {
                out.push(`${r} ${mode} ${fs.readFileSync(Buffer.from(full, "latin1")).toString("base64")}`);
            } else out.push(`${r} special ${mode}`);
        }
    };
    walk(root, "");
    return out.join("\n");
}

function removeTree(root) {
    spawnSync("chmod", ["-R", "u+rwx", root]);
    fs.rmSync(root, { recursive: true, force: true });
}

// What pi's agent loop does with a tool call: prepareArguments, schema
// validation (with coercion), execute; a thrown error becomes an error
// result with details {}.
async function runPi(testCase, cwd) {
    const tool = creators[testCase.tool](cwd);
    const call = { type: "toolCall", id: "call-1", name: testCase.tool, arguments: structuredClone(testCase.args) };
    let result;
    let isError = false;
    try {
        const prepared = tool.prepareArguments ? tool.prepareArguments(call.arguments) : call.arguments;
        const args = validateToolArguments(tool, { ...call, arguments: prepared });
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), (testCase.timeout ?? 30) * 1000);
        try {
            result = await tool.execute(call.id, args, controller.signal, () => {});
        } finally {
            clearTimeout(timer);
        }
    } catch (error) {
        result = { content: [{ type: "text", text: error instanceof Error ? error.message : String(error) }], details: {} };
        isError = true;
    }
    return JSON.stringify({ content: result.content, details: result.details, isError });
}

function runCordon(testCase, cwd, home) {
    const env = { ...process.env, HOME: home };
    const run = spawnSync(runner[0], [...runner.slice(1), testCase.tool, JSON.stringify(testCase.args)], {
        cwd,
        env,
        encoding: "utf-8",
        timeout: (testCase.timeout ?? 30) * 1000,
        maxBuffer: 64 * 1024 * 1024,
    });
    if (run.error) return { failed: `runner error: ${run.error.message}` };
    if (run.status !== 0) return { failed: `runner exit ${run.status ?? run.signal}: ${run.stderr}` };
    return { output: run.stdout.replace(/\n$/, ""), stderr: run.stderr };
}

// runCordon without blocking: the next case's pi side runs meanwhile.
function runCordonAsync(testCase, cwd, home) {
    return new Promise((resolve) => {
        const env = { ...process.env, HOME: home };
        const child = spawn(runner[0], [...runner.slice(1), testCase.tool, JSON.stringify(testCase.args)], {
            cwd,
            env,
            stdio: ["ignore", "pipe", "pipe"],
            timeout: (testCase.timeout ?? 30) * 1000,
        });
        const out = [];
        const err = [];
        let size = 0;
        const keep = (into) => (chunk) => {
            size += chunk.length;
            if (size > 64 * 1024 * 1024) child.kill("SIGKILL");
            else into.push(chunk);
        };
        child.stdout.on("data", keep(out));
        child.stderr.on("data", keep(err));
        child.on("error", (error) => resolve({ failed: `runner error: ${error.message}` }));
        child.on("close", (status, signal) => {
            const stdout = Buffer.concat(out).toString("utf-8");
            const stderr = Buffer.concat(err).toString("utf-8");
            if (size > 64 * 1024 * 1024) resolve({ failed: "runner error: output over 64 MiB" });
            else if (status !== 0) resolve({ failed: `runner exit ${status ?? signal}: ${stderr}` });
            else resolve({ output: stdout.replace(/\n$/, ""), stderr });
        });
    });
}

function normalise(text, rules) {
    let out = text;
    for (const rule of rules ?? []) out = out.replace(new RegExp(rule.pattern, rule.flags ?? "g"), rule.replace);
    return out;
}

function firstDifference(a, b) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    const from = Math.max(0, i - 60);
    return [`first difference at ${i}:`, `pi:     ${JSON.stringify(a.slice(from, i + 60))}`, `cordon: ${JSON.stringify(b.slice(from, i + 60))}`];
}

const isRoot = process.getuid?.() === 0;
const filter = process.env.DIFF_FILTER ? new RegExp(process.env.DIFF_FILTER) : null;
// Set when the runner is `cordon tool` (a real sandbox) rather than the
// host-side tool-run.
const sandboxed = process.env.CORDON_DIFF_SANDBOX === "1";
const caseDir = path.join(here, "cases");
const caseFiles = fs.readdirSync(caseDir).filter((f) => f.endsWith(".json")).sort();
const seen = new Set();
const jobs = Math.max(1, Number(process.env.CORDON_DIFF_JOBS) || 1);
// Reports of the cases in flight, in case order: each settles to a function
// that prints the case's TAP line.
const inFlight = [];
async function emit(report) {
    inFlight.push(Promise.resolve(report));
    while (inFlight.length >= jobs) (await inFlight.shift())();
}

for (const file of caseFiles) {
    const parsed = JSON.parse(fs.readFileSync(path.join(caseDir, file), "utf-8"));
    for (const testCase of Array.isArray(parsed) ? parsed : [parsed]) {
        const label = `${file}: ${testCase.name}`;
        if (seen.has(label)) {
            await emit(() => tapOk(false, label, ["duplicate case name"]));
            continue;
        }
        seen.add(label);
        if (filter && !filter.test(label)) continue;
        if (!creators[testCase.tool]) {
            await emit(() => tapOk(false, label, [`unknown tool ${testCase.tool}`]));
            continue;
        }
        if (testCase.user === "unprivileged" && isRoot) {
            await emit(() => tapSkip(label, "needs an unprivileged user (file modes do not stop root)"));
            continue;
        }
        if (testCase.user === "root" && !isRoot) {
            await emit(() => tapSkip(label, "needs root"));
            continue;
        }
        // Through `cordon tool` the call runs in a sandbox of the fixture:
        // paths outside the workspace are hidden and $HOME is the sandbox's
        // own (both asserted by the security suite instead).
        if (sandboxed && testCase.home) {
            await emit(() => tapSkip(label, "sets $HOME inside the workspace; the sandbox's home is its own"));
            continue;
        }
        if (sandboxed && testCase.outsideWorkspace) {
            await emit(() => tapSkip(label, "reaches outside the workspace, which the sandbox hides"));
            continue;
        }
        const base = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-diff-"));
        const root = path.join(base, "fx");
        const cwd = path.join(root, testCase.cwd ?? ".");
        const home = testCase.home ? path.join(root, testCase.home) : path.join(base, "no-home");
        let report;
        try {
            buildFixture(root, testCase.files, testCase.generate, testCase.git);
            const savedHome = process.env.HOME;
            process.env.HOME = home; // os.homedir() reads $HOME
            // rg resolves --glob against its working directory: pi's process
            // cwd is the session cwd.
            const savedCwd = process.cwd();
            process.chdir(cwd);
            let piOut;
            try {
                piOut = await runPi(testCase, cwd);
            } finally {
                process.env.HOME = savedHome;
                process.chdir(savedCwd);
            }
            const piTree = testCase.tree ? snapshotTree(root) : "";
            removeTree(root);

            buildFixture(root, testCase.files, testCase.generate, testCase.git);
            const judge = (cordon) => {
                if (cordon.failed) {
                    tapOk(false, label, [cordon.failed, `pi: ${piOut.slice(0, 2000)}`]);
                    return;
                }
                const cordonTree = testCase.tree ? snapshotTree(root) : "";
                const want = normalise(piOut, testCase.normalize);
                const got = normalise(cordon.output, testCase.normalize);
                const diagnostics = [];
                if (want !== got) diagnostics.push(...firstDifference(want, got));
                if (piTree !== cordonTree) diagnostics.push("fixture trees differ:", `pi:\n${piTree.slice(0, 3000)}`, `cordon:\n${cordonTree.slice(0, 3000)}`);
                if (process.env.DIFF_VERBOSE) diagnostics.push(`pi:     ${want.slice(0, 3000)}`, `cordon: ${got.slice(0, 3000)}`);
                tapOk(want === got && piTree === cordonTree, label, diagnostics);
            };
            const settle = (cordon) => () => {
                try {
                    judge(cordon);
                } catch (error) {
                    tapOk(false, label, [`harness error: ${error.stack ?? error}`]);
                } finally {
                    removeTree(base);
                }
            };
            report = jobs > 1 ? runCordonAsync(testCase, cwd, home).then(settle) : settle(runCordon(testCase, cwd, home));
        } catch (error) {
            report = () => {
                tapOk(false, label, [`harness error: ${error.stack ?? error}`]);
                removeTree(base);
            };
        }
        await emit(report);
    }
}
while (inFlight.length) (await inFlight.shift())();
console.log(`1..${testNumber}`);
process.exit(failures ? 1 : 0);
