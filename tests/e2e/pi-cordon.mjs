// End-to-end: the real pi 0.73.1, offline, driven by a scripted model
// (pi/faux.ts), with the cordon extension (integrations/pi). Checks from
// pi's JSON event stream that the seven tools ran in the sandbox and
// returned pi's format; that a missing cordon blocks the tools and pi goes
// on; that host execution in print mode (no UI) is refused; and, in RPC
// mode, that an approval round-trip (extension_ui_request/response) runs
// exactly the approved call on the host, once. TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { ok, n, done } from "../lib/tap.mjs";
import { piCommand } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = piCommand(src);
const ext = path.join(src, "integrations/pi");
const faux = path.join(src, "tests/e2e/pi/faux.ts");
const NO_ELICIT = "host execution requires user approval, but no interactive client is available";

const text = (r) => (r?.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-pi-"));
fs.chmodSync(tmp, 0o755);
const ws = path.join(tmp, "ws");
const outside = path.join(tmp, "outside");
fs.mkdirSync(ws);
fs.mkdirSync(outside);
fs.chmodSync(outside, 0o777);
fs.writeFileSync(path.join(ws, "hello.txt"), "hello\nworld\n");

function piArgs(mode) {
    const a = ["--offline", "--no-session", "-ne", "-e", faux, "-e", ext, "--provider", "faux", "--model", "faux-1",
        "--tools", "read,write,edit,ls,find,grep,bash", "--mode", mode];
    return mode === "rpc" ? a : [...a, "-p", "go"];
}
const agentDir = path.join(tmp, "agent");
const skillDir = path.join(agentDir, "skills", "demo");
fs.mkdirSync(skillDir, { recursive: true });
fs.writeFileSync(path.join(skillDir, "SKILL.md"), "---\nname: demo\ndescription: A demo skill for the cordon test.\n---\n# demo skill\n");
fs.writeFileSync(path.join(skillDir, "notes.md"), "skill notes\n");
fs.writeFileSync(path.join(agentDir, "secret.txt"), "agent secret\n");
function piEnv(steps, cordonBin) {
    const script = path.join(tmp, `script-${n}-${Math.random()}.json`);
    fs.writeFileSync(script, JSON.stringify(steps));
    return { ...process.env, PI_OFFLINE: "1", PI_CODING_AGENT_DIR: agentDir, CORDON_BIN: cordonBin, CORDON_FAUX_SCRIPT: script };
}
function runJson(steps, cordonBin = cordon) {
    const r = spawnSync(piBin, piArgs("json"), { cwd: ws, env: piEnv(steps, cordonBin), encoding: "utf8", timeout: 120000 });
    const events = r.stdout.split("\n").filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return {}; } });
    return { status: r.status, stderr: r.stderr, events, ends: events.filter((e) => e.type === "tool_execution_end") };
}
const one = (name, args) => [{ name, args }];

try {
    // --- the seven tools, in the sandbox, in pi's format
    const outsideFile = path.join(outside, "escaped.txt");
    let r = runJson([
        one("read", { path: "hello.txt" }),
        one("write", { path: "dir/new.txt", content: "new é\n" }),
        one("edit", { path: "hello.txt", edits: [{ oldText: "world", newText: "there" }] }),
        one("ls", {}),
        one("find", { pattern: "*.txt" }),
        one("grep", { pattern: "there" }),
        one("bash", { command: "cat /proc/1/comm" }),
        one("write", { path: "/etc/cordon-pi-e2e", content: "x" }),
        one("bash", { command: `echo planted > ${outsideFile}; ls ~ | wc -l` }),
    ]);
    const e = r.ends;
    ok(r.status === 0 && e.length === 9, "pi ran the script to the end with cordon's tools", { status: r.status, stderr: r.stderr.slice(-2000), n: e.length });
    ok(e[0]?.toolName === "read" && text(e[0].result) === "hello\nworld\n" && !e[0].isError, "read: the file's text", e[0]);
    ok(text(e[1]?.result) === "Successfully wrote 6 bytes to dir/new.txt" && fs.readFileSync(path.join(ws, "dir/new.txt"), "utf8") === "new é\n",
        "write: pi's message (UTF-16 length) and the file on the host", e[1]);
    ok(text(e[2]?.result) === "Successfully replaced 1 block(s) in hello.txt." && e[2].result.details?.diff?.includes("+2 there") &&
        e[2].result.details?.firstChangedLine === 2, "edit: pi's message and details {diff, firstChangedLine}", e[2]);
    ok(text(e[3]?.result) === "dir/\nhello.txt", "ls: pi's listing", e[3]);
    ok(text(e[4]?.result) === "dir/new.txt\nhello.txt", "find: pi's relative paths", e[4]);
    ok(text(e[5]?.result) === "hello.txt:2: there", "grep: pi's match line", e[5]);
    ok(text(e[6]?.result) === "cordon-agent\n", "bash runs inside the sandbox (/proc/1/comm is cordon-agent)", e[6]);
    ok(e[7]?.isError && !fs.existsSync("/etc/cordon-pi-e2e"), "a write outside the workspace fails; nothing on the host", e[7]);
    ok(text(e[8]?.result).endsWith("\n0\n") && !fs.existsSync(outsideFile),
        "bash cannot write outside the workspace; the home is empty", e[8]);
    const updates = r.events.filter((x) => x.type === "tool_execution_update" && x.toolName === "bash");
    ok(updates.length >= 1, "bash streams partial results", updates.length);

    // --- pi's discovered skills are readable from the host, nothing else
    r = runJson([
        one("read", { path: path.join(skillDir, "SKILL.md") }),
        one("read", { path: path.join(skillDir, "notes.md") }),
        one("read", { path: path.join(agentDir, "secret.txt") }),
    ]);
    ok(text(r.ends[0]?.result).includes("# demo skill") && text(r.ends[1]?.result) === "skill notes\n",
        "pi's discovered skill (SKILL.md and a file below it) is read from the host", r.ends);
    ok(r.ends[2]?.isError && !text(r.ends[2].result).includes("agent secret"), "a file next to the skills is not", r.ends[2]);

    // --- cordon missing: the tools are blocked, pi keeps working
    r = runJson([one("read", { path: "hello.txt" }), one("bash", { command: "echo ran" })], path.join(tmp, "no-such-cordon"));
    ok(r.status === 0 && r.ends.length === 2 && r.ends.every((x) => x.isError && /blocked/.test(text(x.result))) &&
        !r.ends.some((x) => text(x.result).includes("ran")),
        "cordon missing: every tool is blocked with the reason, pi finishes the turn", r.ends.map((x) => text(x.result)));

    // --- print mode: host execution is refused (no UI to ask)
    const marker = path.join(outside, "host-marker");
    r = runJson([one("bash", { command: `touch ${marker}`, execution_target: "host" })]);
    ok(r.ends[0]?.isError && text(r.ends[0].result) === NO_ELICIT && !fs.existsSync(marker),
        "-p mode: execution_target host is refused with cordon's text, nothing ran on the host", r.ends[0]);

    // pi fires user_bash (`!` commands) in interactive mode only, not for
    // RPC's bash command: pi-extension.mjs drives that handler directly.

    // --- RPC mode: an approval round-trip, then a refused replay
    const log = path.join(outside, "approved.log");
    const hostCall = { command: `echo ran >> ${log}; cat /proc/1/comm`, execution_target: "host" };
    const steps = [one("bash", hostCall), one("bash", hostCall)];
    const child = spawn(piBin, piArgs("rpc"), { cwd: ws, env: piEnv(steps, cordon), stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const confirms = [];
    const ends = [];
    const finished = new Promise((resolve) => {
        let buf = "";
        child.stdout.on("data", (d) => {
            buf += d;
            let i;
            while ((i = buf.indexOf("\n")) >= 0) {
                const line = buf.slice(0, i);
                buf = buf.slice(i + 1);
                let m;
                try { m = JSON.parse(line); } catch { continue; }
                if (m.type === "extension_ui_request" && m.method === "confirm") {
                    confirms.push(m);
                    // Approve the first question only.
                    child.stdin.write(JSON.stringify({ type: "extension_ui_response", id: m.id, confirmed: confirms.length === 1 }) + "\n");
                } else if (m.type === "tool_execution_end") {
                    ends.push(m);
                } else if (m.type === "agent_end") {
                    resolve();
                }
            }
        });
        child.on("exit", () => resolve());
        setTimeout(resolve, 90000);
    });
    child.stdin.write(JSON.stringify({ id: "p1", type: "prompt", message: "go" }) + "\n");
    await finished;
    child.kill("SIGTERM");
    const msg = `${confirms[0]?.title ?? ""}\n${confirms[0]?.message ?? ""}`;
    ok(confirms.length === 2 && /HOST/.test(msg) && msg.includes("Tool: bash") && msg.includes(`Working directory: ${ws}`) &&
        msg.includes(JSON.stringify(hostCall.command)) && !msg.includes("execution_target"),
        "RPC: cordon's approval arrives as a confirm naming tool, cwd and the exact arguments", { confirms, stderr: stderr.slice(-1500) });
    const lines = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
    ok(ends.length === 2 && !ends[0].isError && text(ends[0].result) !== "cordon-agent\n" && lines === "ran\n",
        "RPC: the approved call ran on the host, exactly once", { ends, lines });
    ok(ends[1]?.isError && /declined/.test(text(ends[1].result)), "RPC: the replayed call asked again and, declined, was refused", ends[1]);
} finally {
    fs.rmSync(tmp, { recursive: true, force: true });
}
done();
