// The whole agent in the sandbox: `cordon run -- pi` (docs/agents.md,
// "Wrapping a whole agent CLI") with the real pi 0.73.1 and its scripted
// model, set up as the page says: pi's configuration directory as an
// explicit read-write mount, its API key through the environment
// allowlist, its API host on the network allowlist (a local HTTP server
// named api.pi.test through --net-hosts-file). pi's own tools run in the
// sandbox: bash sees cordon-agent as init, the key but no other variable,
// reaches the API host but not another one, cannot write the host outside
// the workspace, and pi's session lands in the mounted directory on the
// host. Without the mount, pi's directory is not there. TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { ok, skipAll, n, done } from "../lib/tap.mjs";
import { piCommand } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = piCommand(src);
if (spawnSync("sh", ["-c", "command -v curl"]).status !== 0) {
    skipAll("curl is not installed");
}
const text = (r) => (r?.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-pi-wrap-"));
fs.chmodSync(tmp, 0o755);
const home = path.join(tmp, "home");
const piDir = path.join(home, ".pi");
const agentDir = path.join(piDir, "agent");
const ws = path.join(tmp, "ws");
const outside = path.join(tmp, "outside");
for (const d of [agentDir, ws, outside]) fs.mkdirSync(d, { recursive: true });
fs.chmodSync(outside, 0o777);
fs.writeFileSync(path.join(ws, "hello.txt"), "hello\n");

// pi and the scripted model live in the source tree: mounted read-only, as
// a toolchain under your home would be (the page says so).
const piModules = fs.realpathSync(path.join(src, "tests/pi/node_modules"));
const piCli = fs.realpathSync(piBin);
const fauxDir = fs.realpathSync(path.join(src, "tests/e2e/pi"));

// The API host: a server on one of this machine's non-loopback addresses
// (cordon's proxy refuses a name that resolves to loopback unless an
// address rule allows it, against DNS rebinding), named through the hosts
// file cordon's proxy reads.
const addr = Object.values(os.networkInterfaces()).flat().find((i) => i.family === "IPv4" && !i.internal)?.address;
if (!addr) {
    skipAll("no non-loopback IPv4 address for the API host");
}
// In a child process: the test blocks in spawnSync while pi runs.
const server = spawn("node", ["-e", `const s = require("http").createServer((q, r) => r.end("hello-from-api\\n"));
s.listen(0, ${JSON.stringify(addr)}, () => console.log(s.address().port));`], { stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise((resolve, reject) => {
    let buf = "";
    server.stdout.on("data", (d) => {
        buf += d;
        if (buf.includes("\n")) resolve(Number(buf.trim()));
    });
    server.on("exit", (c) => reject(new Error(`the API server exited ${c}`)));
});
const hosts = path.join(tmp, "hosts");
fs.writeFileSync(hosts, `${addr} api.pi.test other.pi.test\n`);
fs.writeFileSync(path.join(agentDir, "host-marker"), "from the host\n");

function wrap(steps, { mountPi = true } = {}) {
    const script = path.join(tmp, `script-${n}.json`);
    fs.writeFileSync(script, JSON.stringify(steps));
    fs.chmodSync(script, 0o644);
    const mounts = [
        `{host_path="${piModules}", readonly=true}`,
        `{host_path="${fauxDir}", readonly=true}`,
        `{host_path="${script}", readonly=true}`,
    ];
    if (mountPi) mounts.push(`{host_path="${piDir}", readonly=false}`);
    const args = [
        "run", "--no-pty",
        "--env-mode", "allowlist", "--set", 'env.allow=["PI_TEST_API_KEY","PI_CODING_AGENT_DIR","PI_FAUX_SCRIPT","PI_OFFLINE"]',
        "--network", "allowlist", "--net-hosts-file", hosts, "--allow-host", `api.pi.test:${port}`,
        // the test server is on this machine: an address rule lets the name reach it
        "--allow-host", `${addr}:${port}`,
        "--set", `mounts=[${mounts.join(", ")}]`,
        "--", "node", "--disable-wasm-trap-handler", piCli, "--offline", "-ne", "-e", path.join(fauxDir, "faux.ts"), "--provider", "faux", "--model", "faux-1",
        "--tools", "read,write,bash", "--mode", "json", "-p", "go",
    ];
    const env = {
        ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"),
        PI_TEST_API_KEY: "sk-test-allowed", PI_TEST_OTHER_SECRET: "must-not-pass",
        PI_CODING_AGENT_DIR: agentDir, PI_FAUX_SCRIPT: script, PI_OFFLINE: "1",
    };
    const r = spawnSync(cordon, args, { cwd: ws, env, encoding: "utf8", timeout: 180000 });
    const events = r.stdout.split("\n").filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return {}; } });
    return { status: r.status, stderr: r.stderr, ends: events.filter((e) => e.type === "tool_execution_end") };
}
const bash = (command) => [{ name: "bash", args: { command } }];

try {
    const planted = path.join(outside, "planted");
    const r = wrap([
        bash(`cat /proc/1/comm; cat hello.txt; cat ${agentDir}/host-marker`),
        bash('echo "key=${PI_TEST_API_KEY:-unset} other=${PI_TEST_OTHER_SECRET:-unset}"'),
        bash(`curl -sS -m 10 http://api.pi.test:${port}/; curl -sS -m 10 -o /dev/null -w '%{http_code}\\n' http://other.pi.test:${port}/ 2>&1; echo other=$?`),
        bash(`echo x > ${planted}; ls -A ~; echo done`),
    ]);
    const e = r.ends;
    ok(r.status === 0 && e.length === 4, "cordon run -- pi: pi runs its scripted turn to the end in the sandbox", { status: r.status, stderr: r.stderr.slice(-2000), n: e.length });
    ok(text(e[0]?.result) === "cordon-init\nhello\nfrom the host\n", "pi's own bash runs in the sandbox (init is cordon's), in the workspace, and sees the mounted pi directory", e[0]);
    ok(text(e[1]?.result) === "key=sk-test-allowed other=unset\n", "the API key passes by the env allowlist; another variable does not", e[1]);
    const net = text(e[2]?.result);
    ok(net === "hello-from-api\n403\nother=0\n",
        "the API host on the allowlist answers; another name for the same address gets the proxy's 403", net);
    const homeLines = text(e[3]?.result).split("\n").filter((l) => l && l !== "done" && !l.includes(planted));
    ok(!fs.existsSync(planted) && JSON.stringify(homeLines) === '[".pi"]', "nothing is written outside the workspace; the home holds only the mounted .pi", e[3]);
    // pi's settings directory is the host's: a file pi wrote there is on the host
    const written = fs.readdirSync(agentDir, { recursive: true }).filter((f) => f !== "host-marker");
    ok(written.length > 0, "pi's configuration directory is the host's (what pi wrote there is on the host)", written);

    // without the mount, pi's configuration directory is not there
    const r2 = wrap([bash(`cat ${agentDir}/host-marker 2>&1; echo rc=$?`)], { mountPi: false });
    ok(/No such file or directory\nrc=1\n$/.test(text(r2.ends[0]?.result)), "without the mount, the sandbox has no pi configuration directory", { out: text(r2.ends[0]?.result), stderr: r2.stderr.slice(-800) });
} catch (err) {
    ok(false, "no exception", err.stack);
} finally {
    server.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
}
done();
