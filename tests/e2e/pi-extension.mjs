// The cordon pi extension's own handlers, driven through a fake
// ExtensionAPI (loaded with pi's jiti and pi's aliases): the user's `!`
// commands (pi emits user_bash only in interactive mode), /cordon
// status|off|on|verify|config, the footer status, fail-closed start, and
// the approval dialog's answer and its escaping of hidden characters.
// TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ok, diagAs, done } from "../lib/tap.mjs";
import { piExtensionModule } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const extensionModule = await piExtensionModule(src);
const extension = extensionModule.default;
const { escapeHidden, approvalText } = extensionModule;

diagAs("json");

function load(cordonBin, hasUI, confirmAnswer = false) {
    process.env.CORDON_BIN = cordonBin;
    const pi = { handlers: {}, tools: {}, commands: {} };
    const api = {
        on: (ev, h) => (pi.handlers[ev] = h),
        registerTool: (t) => (pi.tools[t.name] = t),
        registerCommand: (name, c) => (pi.commands[name] = c),
    };
    extension(api);
    pi.notes = [];
    pi.status = {};
    pi.confirms = [];
    pi.ctx = {
        cwd: ws,
        hasUI,
        ui: {
            notify: (m, level) => pi.notes.push({ m, level }),
            setStatus: (k, v) => (pi.status[k] = v),
            confirm: async (title, message) => (pi.confirms.push({ title, message }), confirmAnswer),
        },
    };
    return pi;
}
async function userBash(pi, command) {
    const { operations } = pi.handlers.user_bash({ type: "user_bash", command, cwd: ws }, pi.ctx);
    let out = "";
    const r = await operations.exec(command, ws, { onData: (d) => (out += d.toString()) });
    return { out, exitCode: r.exitCode };
}

// The escaping, the same cases as tests/unit/util/test-escape.c (the C twin).
const ESCAPES = [
    ["notes/todo.md", {}, "notes/todo.md", 0],
    ["caf\u00e9 \u65e5\u672c \u{1f600}", {}, "caf\u00e9 \u65e5\u672c \u{1f600}", 0],
    ["evil\u202etxt.exe", {}, "evil\\u202etxt.exe", 1],
    ["rm\x1b[2K -rf", {}, "rm\\x1b[2K -rf", 1],
    ["a\x7fb", {}, "a\\x7fb", 1],
    ["a\u0085b", {}, "a\\u0085b", 1],
    ["zero\u200bwidth", {}, "zero\\u200bwidth", 1],
    ["\ufeffbom", {}, "\\ufeffbom", 1],
    ["\u2066x\u2069", {}, "\\u2066x\\u2069", 2],
    ["\u061c\u180e", {}, "\\u061c\\u180e", 2],
    ["tag\u{e0041}", {}, "tag\\u{e0041}", 1],
    ["nb\u00a0sp", {}, "nb\\u00a0sp", 1],
    ["\u2028\u2029", {}, "\\u2028\\u2029", 2],
    ["\u3164\u115f", {}, "\\u3164\\u115f", 2],
    ["x\ufe0f", {}, "x\\ufe0f", 1],
    ["lone\ud800", {}, "lone\\ud800", 1],
    ["a\nb\tc", {}, "a\\x0ab\\x09c", 2],
    ["a\nb\tc\x1b", { keepLayout: true }, "a\nb\tc\\x1b", 1],
    ["a\\u202e", { backslash: true }, "a\\\\u202e", 0],
];
for (const [input, opts, want, count] of ESCAPES) {
    const got = escapeHidden(input, opts);
    ok(got.text === want && got.count === count, `escapeHidden ${JSON.stringify(input)}`, [got, want, count]);
}
ok(approvalText("Tool: bash\nArguments: {\"command\":\"echo \u202e\"}") ===
   "NOTE: this prompt contains 1 invisible or control character, shown escaped.\n\nTool: bash\nArguments: {\"command\":\"echo \\u202e\"}",
   "approvalText keeps the lines, escapes what slipped through and says so");

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-piext-"));
fs.chmodSync(ws, 0o755);
const cwd0 = process.cwd();
process.chdir(ws);
try {
    let pi = load(process.env.CORDON, true);
    ok(Object.keys(pi.tools).sort().join(",") === "bash,edit,find,grep,ls,read,write", "the seven tools are registered", Object.keys(pi.tools));
    const bashDef = pi.tools.bash;
    ok(bashDef.parameters.properties.command && bashDef.parameters.properties.execution_target &&
       JSON.stringify(bashDef.parameters.required) === '["command"]' && typeof bashDef.renderCall === "function",
       "pi's schema (plus optional execution_target) and pi's renderer are kept", bashDef.parameters);
    await pi.handlers.session_start({ reason: "startup" }, pi.ctx);
    ok(pi.status.cordon === "cordon: sandboxed", "footer: sandboxed after start", pi.status);
    let r = await userBash(pi, "cat /proc/1/comm");
    ok(r.out === "cordon-agent\n" && r.exitCode === 0, "a ! command runs in the sandbox", r);
    r = await userBash(pi, "echo partial; exit 3");
    ok(r.out === "partial\n" && r.exitCode === 3, "a ! command's exit status comes through", r);
    await pi.commands.cordon.handler("status", pi.ctx);
    const st = pi.notes.pop()?.m ?? "";
    ok(/state: sandboxed/.test(st) && /sandbox: cordon-/.test(st) && st.includes(`workspace: ${fs.realpathSync(ws)}`) && /backend: ns/.test(st),
       "/cordon status: state, sandbox name, workspace, backend", st);
    const sandboxName = (st.match(/sandbox: (\S+)/) || [])[1];
    ok(/\nlog: \/.*\/audit\.jsonl(\n|$)/.test(st) && st.includes(`attach: running: its client holds it (this pi); \`cordon verify ${sandboxName}\` audits it`),
       "/cordon status: the log and how to get at the session, in cordon ls's words", st);
    await pi.commands.cordon.handler("off", pi.ctx);
    r = await userBash(pi, "cat /proc/1/comm");
    ok(pi.status.cordon === "cordon: HOST" && r.out !== "cordon-agent\n", "/cordon off: footer says HOST, commands run on the host", [pi.status, r]);
    await pi.commands.cordon.handler("on", pi.ctx);
    r = await userBash(pi, "cat /proc/1/comm");
    ok(pi.status.cordon === "cordon: sandboxed" && r.out === "cordon-agent\n", "/cordon on: back in the sandbox", [pi.status, r]);
    const onNote = pi.notes.filter((x) => /cordon is ON/.test(x.m)).pop();
    ok(onNote?.level === "info" && onNote.m === `cordon is ON: tools run in the sandbox ${sandboxName} (ns)`, "/cordon on confirms, naming the sandbox", pi.notes);
    const complete = pi.commands.cordon.getArgumentCompletions;
    ok(JSON.stringify(complete("o")?.map((c) => c.value)) === '["on","off"]' && complete("off") === null && complete("on") === null,
        "/cordon completes a prefix, and offers nothing once a subcommand is whole (so Enter runs it)");
    await pi.commands.cordon.handler("verify", pi.ctx);
    const verified = pi.notes.pop()?.m ?? "";
    ok(/^cordon verify: sandbox cordon-/.test(verified) && /^PASS +seccomp /m.test(verified) && /^PASS +ownership /m.test(verified) &&
       /result: PASS \(0 failed/.test(verified),
       "/cordon verify: the session's sandbox_verify report, every check passing", verified);
    await pi.commands.cordon.handler("config", pi.ctx);
    ok(/"routeTools"/.test(pi.notes.pop()?.m ?? ""), "/cordon config shows the effective routing settings");
    const marker = path.join(ws, "..", path.basename(ws) + "-marker");
    let threw = "";
    try {
        await pi.tools.bash.execute("t1", { command: `touch ${marker}`, execution_target: "host" }, undefined, undefined, pi.ctx);
    } catch (e) {
        threw = e.message;
    }
    ok(pi.confirms.length === 1 && /declined/.test(threw) && !fs.existsSync(marker),
       "a host call shows ctx.ui.confirm; declined, it is refused", [pi.confirms, threw]);
    try {
        await pi.tools.bash.execute("t1b", { command: "echo \u202etxt.exe\u200b\x1b[2K", execution_target: "host" }, undefined, undefined, pi.ctx);
    } catch (e) {
        threw = e.message;
    }
    const shown = pi.confirms[1]?.message ?? "";
    ok(!/[\u202e\u200b\x1b]/.test(shown) && shown.includes('"command":"echo \\u202etxt.exe\\u200b\\x1b[2K"') &&
       shown.includes("NOTE: this call contains 3 invisible or control characters, shown escaped"),
       "the pi dialog shows U+202E, U+200B and ESC escaped, and says how many", shown);
    await pi.handlers.session_shutdown({ reason: "quit" }, pi.ctx);
    threw = "";
    try {
        await pi.tools.read.execute("t2", { path: "x" }, undefined, undefined, pi.ctx);
    } catch (e) {
        threw = e.message;
    }
    ok(/blocked/.test(threw), "after session shutdown cordon is stopped and the tools are blocked", threw);

    // A tool left out of route_tools is pi's own again.
    process.env.CORDON_ROUTE_TOOLS = "read,bash";
    pi = load(process.env.CORDON, false);
    await pi.handlers.session_start({ reason: "startup" }, pi.ctx);
    delete process.env.CORDON_ROUTE_TOOLS;
    const own = ws + "-own";
    r = await pi.tools.write.execute("t4", { path: own, content: "pi's own" }, undefined, undefined, pi.ctx);
    const viaCordon = await pi.tools.bash.execute("t5", { command: "cat /proc/1/comm" }, undefined, undefined, pi.ctx);
    ok(r.content[0].text === `Successfully wrote 8 bytes to ${own}` && fs.readFileSync(own, "utf8") === "pi's own" &&
       viaCordon.content[0].text === "cordon-agent\n",
       "route_tools without write: pi's own write runs it, bash stays in the sandbox", [r, viaCordon]);
    fs.rmSync(own, { force: true });
    await pi.handlers.session_shutdown({ reason: "quit" }, pi.ctx);

    pi = load(path.join(ws, "no-such-cordon"), true);
    await pi.handlers.session_start({ reason: "startup" }, pi.ctx);
    threw = "";
    try {
        await pi.tools.bash.execute("t3", { command: "echo hi" }, undefined, undefined, pi.ctx);
    } catch (e) {
        threw = e.message;
    }
    ok(pi.status.cordon === "cordon: blocked" && /the bash tool is blocked: cannot start/.test(threw) &&
       pi.notes.some((x) => x.level === "error"), "cordon missing: footer blocked, tools fail closed with the reason", [pi.status, threw]);
    r = await userBash(pi, "echo hi");
    ok(r.exitCode !== 0 && !r.out.startsWith("hi"), "cordon missing: ! commands do not run on the host either", r);
} finally {
    process.chdir(cwd0);
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(ws + "-marker", { force: true });
}
done();
