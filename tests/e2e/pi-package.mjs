// The pi package (integrations/pi) installed the three ways pi installs
// packages, with the real pi 0.73.1, offline: `pi install <local path>`,
// `pi install http://...` (this repository served over HTTP on
// 127.0.0.1) and `pi install npm:cordon-pi` (the tarball `npm pack` makes,
// served by a local registry, tests/lib/npm-registry.mjs). After each
// install, a pi started without `-e` runs its bash tool in the sandbox
// (/proc/1/comm is cordon-agent); after `pi remove`, the settings, the
// installed copy and the sandboxing are gone, and pi's own bash runs on the
// host again. TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { ok, skipAll, n, done } from "../lib/tap.mjs";
import { piCommand } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = piCommand(src);
for (const tool of ["git", "npm"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) {
        skipAll(`${tool} is not installed`);
    }
}
const faux = path.join(src, "tests/e2e/pi/faux.ts");

const text = (r) => (r?.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-pi-pkg-"));
fs.chmodSync(tmp, 0o755);
const home = path.join(tmp, "home");
const agentDir = path.join(home, ".pi", "agent");
const ws = path.join(tmp, "ws");
fs.mkdirSync(agentDir, { recursive: true });
fs.mkdirSync(ws);
fs.writeFileSync(path.join(ws, "hello.txt"), "hello\n");
const npmPrefix = path.join(tmp, "npm-global");
const baseEnv = {
    ...process.env,
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    CORDON_BIN: cordon,
    npm_config_prefix: npmPrefix,
    npm_config_cache: path.join(tmp, "npm-cache"),
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
};
const children = [];
function cleanup() {
    for (const c of children) c.kill("SIGTERM");
}
process.on("exit", cleanup);

function pi(args, env = {}) {
    return spawnSync(piBin, args, { cwd: ws, env: { ...baseEnv, ...env }, encoding: "utf8", timeout: 180000 });
}
const settings = () => JSON.parse(fs.readFileSync(path.join(agentDir, "settings.json"), "utf8"));
// One turn of the scripted model: bash `cat /proc/1/comm`, with whatever
// pi loads from its settings (no -e for cordon).
function bashComm() {
    const script = path.join(tmp, `script-${n}.json`);
    fs.writeFileSync(script, JSON.stringify([[{ name: "bash", args: { command: "cat /proc/1/comm" } }]]));
    const r = pi(["--offline", "--no-session", "-e", faux, "--provider", "faux", "--model", "faux-1", "--tools", "bash", "--mode", "json", "-p", "go"],
        { PI_OFFLINE: "1", CORDON_FAUX_SCRIPT: script });
    const ends = r.stdout.split("\n").filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return {}; } })
        .filter((e) => e.type === "tool_execution_end");
    return { status: r.status, out: text(ends[0]?.result), stderr: r.stderr.slice(-1500) };
}
const hostComm = fs.readFileSync("/proc/1/comm", "utf8");

function checkInstalled(label, source, installedDir) {
    const inst = pi(["install", source]);
    ok(inst.status === 0 && settings().packages?.length === 1, `${label}: pi install ${source} exits 0 and records the package`,
        { status: inst.status, stdout: inst.stdout, stderr: inst.stderr.slice(-1500) });
    if (installedDir) ok(fs.existsSync(path.join(installedDir, "integrations/pi/index.ts")) || fs.existsSync(path.join(installedDir, "index.ts")),
        `${label}: the package is at ${path.relative(tmp, installedDir)}`);
    const list = pi(["list"]);
    ok(list.status === 0 && list.stdout.includes(source.replace(/^npm:/, "npm:")) , `${label}: pi list names it`, list.stdout);
    let r = bashComm();
    ok(r.status === 0 && r.out === "cordon-agent\n", `${label}: pi (no -e) runs its bash tool in the sandbox`, r);
    const rm = pi(["remove", source]);
    ok(rm.status === 0 && settings().packages?.length === 0, `${label}: pi remove exits 0 and the settings hold no package`,
        { status: rm.status, stderr: rm.stderr.slice(-1500), settings: settings() });
    if (installedDir) ok(!fs.existsSync(installedDir), `${label}: pi remove deleted ${path.relative(tmp, installedDir)}`);
    r = bashComm();
    ok(r.status === 0 && r.out === hostComm, `${label}: after pi remove, pi's own bash runs on the host again`, r);
}

async function waitPort(child) {
    return await new Promise((resolve, reject) => {
        let buf = "";
        child.stdout.on("data", (d) => {
            buf += d;
            if (buf.includes("\n")) resolve(Number(buf.trim()));
        });
        child.on("exit", (c) => reject(new Error(`exited ${c}`)));
    });
}

try {
    // --- a local path: recorded in settings, nothing copied
    checkInstalled("local path", path.join(src, "integrations/pi"), null);

    // --- a git URL: this repository's root package.json points pi at the
    // extension. The repository is made from the files a clone has.
    const gitBase = path.join(tmp, "git");
    const repo = path.join(gitBase, "you", "cordon");
    fs.mkdirSync(path.join(repo, "integrations"), { recursive: true });
    fs.copyFileSync(path.join(src, "package.json"), path.join(repo, "package.json"));
    fs.cpSync(path.join(src, "integrations/pi"), path.join(repo, "integrations/pi"), { recursive: true });
    const git = (args, cwd = repo) => spawnSync("git", args, { cwd, env: baseEnv, encoding: "utf8" });
    git(["init", "-q", "-b", "main"]);
    git(["add", "."]);
    const c = git(["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "cordon"]);
    ok(c.status === 0, "git: a repository with the package", c.stderr);
    // pi 0.73.1 reads git:// as a local path: this serves the repository
    // over HTTP (git's dumb protocol, static files) instead.
    const bare = path.join(gitBase, "www", "you", "cordon.git");
    const cl = git(["clone", "-q", "--bare", repo, bare], tmp);
    git(["update-server-info"], bare);
    const www = spawn("python3", ["-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", path.join(gitBase, "www"), "0"],
        { stdio: ["ignore", "pipe", "ignore"] });
    children.push(www);
    const port = await new Promise((resolve, reject) => {
        let buf = "";
        www.stdout.on("data", (d) => {
            buf += d;
            const m = buf.match(/port (\d+)/);
            if (m) resolve(Number(m[1]));
        });
        www.on("exit", (code) => reject(new Error(`http.server exited ${code}`)));
    });
    const url = `http://127.0.0.1:${port}/you/cordon.git`;
    ok(cl.status === 0 && git(["ls-remote", url], tmp).status === 0, "git: the repository is served on 127.0.0.1", cl.stderr);
    checkInstalled("git URL", url, path.join(agentDir, "git", "127.0.0.1", "you", "cordon"));

    // --- npm: the tarball `npm pack` makes, from a local registry
    const packDir = path.join(tmp, "pack");
    fs.mkdirSync(packDir);
    const pack = spawnSync("npm", ["pack", "--pack-destination", packDir, path.join(src, "integrations/pi")],
        { cwd: tmp, env: baseEnv, encoding: "utf8" });
    const tgz = path.join(packDir, "cordon-pi-0.1.0.tgz");
    ok(pack.status === 0 && fs.existsSync(tgz), "npm pack makes cordon-pi-0.1.0.tgz", pack.stderr);
    const listing = spawnSync("tar", ["-tzf", tgz], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).sort();
    ok(JSON.stringify(listing) === JSON.stringify(["package/README.md", "package/index.ts", "package/package.json"]),
        "the tarball holds the extension, its README and package.json, nothing else", listing);
    const reg = spawn("node", [path.join(src, "tests/lib/npm-registry.mjs"), tgz], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(reg);
    const regPort = await waitPort(reg);
    baseEnv.npm_config_registry = `http://127.0.0.1:${regPort}/`;
    const globalRoot = path.join(npmPrefix, "lib", "node_modules", "cordon-pi");
    checkInstalled("npm tarball", "npm:cordon-pi", globalRoot);
} catch (e) {
    ok(false, "no exception", e.stack);
} finally {
    cleanup();
    fs.rmSync(tmp, { recursive: true, force: true });
}
done();
