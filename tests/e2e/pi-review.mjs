// End-to-end: review mode in the real pi 0.73.1 (interactive TUI in tmux,
// offline with the scripted model pi/faux.ts, the cordon extension loaded):
// - the footer counts the pending changes (`review: N pending`);
// - `/cordon review` shows the change list and the diff in a viewer, what
//   the agent wrote escaped (an ESC in a file is shown as \x1b); Escape
//   closes it with nothing applied;
// - Enter, "Choose which to apply", one file toggled, the confirmation:
//   only that file reaches the host;
// - "Apply all" after the confirmation; nothing pending says so;
// - `/cordon rewind N` after a bash call: a confirmation saying processes
//   end, the sandbox restarts under the same name, bash's file is gone in
//   the sandbox, its background process ended, the host untouched.
// TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = path.join(src, "tests/pi/node_modules/.bin/pi");
if (!fs.existsSync(piBin)) {
    console.log("1..0 # SKIP pi is not installed (scripts/bootstrap.sh --test)");
    process.exit(0);
}
if (spawnSync("tmux", ["-V"]).status !== 0) {
    console.log("1..0 # SKIP tmux is not installed (scripts/bootstrap.sh --test)");
    process.exit(0);
}
const ext = path.join(src, "integrations/pi");
const faux = path.join(src, "tests/e2e/pi/faux.ts");

let n = 0;
let failed = 0;
function ok(cond, name, diag) {
    n++;
    console.log(`${cond ? "ok" : "not ok"} ${n} - ${name}`);
    if (!cond) {
        failed++;
        if (diag !== undefined) for (const line of String(typeof diag === "string" ? diag : JSON.stringify(diag)).split("\n")) console.log(`#   ${line}`);
    }
    return cond;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const q = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-pirev-"));
fs.chmodSync(tmp, 0o755);
const ws = path.join(tmp, "ws");
const agentDir = path.join(tmp, "agent");
for (const d of [ws, agentDir]) fs.mkdirSync(d);
fs.writeFileSync(path.join(ws, "a.txt"), "host\n");
const token = `${process.pid}${Math.floor(1e5 + Math.random() * 9e5)}`;

const script = path.join(tmp, "script.json");
fs.writeFileSync(script, JSON.stringify({
    prompts: {
        change: [
            { name: "write", args: { path: "a.txt", content: "agent\n" } },
            { name: "write", args: { path: "b.txt", content: "new \x1b[2J b\n" } },
        ],
        more: [{ name: "bash", args: { command: `echo c > c.txt; (sleep 1004.${token} >/dev/null 2>&1 &); echo started` } }],
    },
}));

const sock = path.join(tmp, "tmux.sock");
const exitFile = path.join(tmp, "pi-exit");
const runner = path.join(tmp, "run.sh");
const piArgs = ["--offline", "--no-session", "-ne", "-e", faux, "-e", ext, "--provider", "faux", "--model", "faux-1",
    "--tools", "read,write,edit,ls,find,grep,bash"];
fs.writeFileSync(runner, [
    `cd ${q(ws)}`,
    "unset CI",
    `export PI_OFFLINE=1 PI_CODING_AGENT_DIR=${q(agentDir)} CORDON_BIN=${q(cordon)} CORDON_FAUX_SCRIPT=${q(script)} CORDON_WORKSPACE_MODE=review`,
    `${q(piBin)} ${piArgs.map(q).join(" ")} 2>${q(path.join(tmp, "pi.stderr"))}`,
    `echo $? > ${q(exitFile)}`,
    "",
].join("\n"));

function tmux(...args) {
    return spawnSync("tmux", ["-S", sock, "-f", "/dev/null", ...args], { encoding: "utf8" });
}
// The whole pane with its scrollback, or only what is visible now.
const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "pi").stdout ?? "";
const visible = () => tmux("capture-pane", "-p", "-J", "-t", "pi").stdout ?? "";
const footer = () => visible().split("\n").filter((l) => l.trim()).slice(-3).join("\n");
// The footer's cordon line with its escape sequences (colour, bold).
const styledStatus = () =>
    (tmux("capture-pane", "-p", "-e", "-t", "pi").stdout ?? "").split("\n").filter((l) => l.includes("cordon: ")).pop() ?? "";
const isBold = (line) => /\x1b\[(?:[0-9;]*;)?1(?:;[0-9;]*)?m\s*cordon: /.test(line) || /\x1b\[1m/.test(line);
const type = (text) => {
    tmux("send-keys", "-t", "pi", "-l", text);
    tmux("send-keys", "-t", "pi", "Enter");
};
// The editor: the text between the last two rules above the footer.
function editorText() {
    const v = visible().split("\n");
    const rules = v.map((l, i) => (/^─{10,}/.test(l) ? i : -1)).filter((i) => i >= 0);
    if (rules.length < 2) return "";
    return v.slice(rules[rules.length - 2] + 1, rules[rules.length - 1]).join("\n").trim();
}
// A slash command. An Enter that reaches pi while its completion list (for
// a prefix typed a moment before) is still open only applies the
// completion; Enter again until the editor is empty.
async function command(text) {
    type(text);
    for (let i = 0; i < 5 && !(await waitFor(() => editorText() === "", 1000, "", true)); i++)
        if (editorText() === text) tmux("send-keys", "-t", "pi", "Enter");
}
const lines = () => screen().split("\n").map((l) => l.trim());
const hasLine = (re) => lines().some((l) => re.test(l));

async function waitFor(pred, ms, what, quiet = false) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (pred()) return true;
        await sleep(100);
    }
    if (quiet) return false;
    console.log(`# timed out after ${ms} ms waiting for ${what}; the screen:`);
    for (const l of visible().split("\n")) if (l.trim()) console.log(`#   | ${l}`);
    return false;
}

// Host processes whose command line holds `needle`, as [{pid, cmd}].
function procsWith(needle) {
    const found = [];
    for (const pid of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
        let cmd;
        try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "); } catch { continue; }
        if (cmd.includes(needle)) found.push({ pid: Number(pid), cmd });
    }
    return found;
}
const key = (...keys) => tmux("send-keys", "-t", "pi", ...keys);
const host = (f) => { try { return fs.readFileSync(path.join(ws, f), "utf8"); } catch { return null; } };
let name = "";

try {
    const started = tmux("new-session", "-d", "-s", "pi", "-x", "150", "-y", "50", `bash ${q(runner)}`);
    if (!ok(started.status === 0, "pi starts in a tmux terminal", started.stderr)) throw new Error("no tmux");

    ok(await waitFor(() => /cordon: sandboxed · review: 0 pending/.test(footer()), 90000, "the footer's review count"),
        "review mode: the footer shows `cordon: sandboxed · review: 0 pending`", footer());
    await command("/cordon status");
    await waitFor(() => hasLine(/^sandbox: cordon-/), 15000, "the status");
    name = (lines().find((l) => /^sandbox: cordon-/.test(l)) ?? "").replace(/^sandbox: /, "").trim();

    type("change");
    ok(await waitFor(() => /review: 2 pending/.test(footer()), 60000, "the count after the writes"),
        "after two writes the footer shows `review: 2 pending`", footer());
    ok(host("a.txt") === "host\n" && host("b.txt") === null, "the writes did not reach the host");

    // --- the viewer; Escape closes it, nothing applied
    await command("/cordon review");
    ok(await waitFor(() => hasLine(/^cordon review: 2 pending changes in sandbox cordon-/), 15000, "the review viewer"),
        "/cordon review opens the viewer with the count and the sandbox");
    ok(hasLine(/^M  a\.txt$/) && hasLine(/^A  b\.txt$/) && hasLine(/^-host$/) && hasLine(/^\+agent$/),
        "the viewer lists the changes and shows the unified diff", visible());
    ok(hasLine(/^\+new \\x1b\[2J b$/) && !screen().includes("\x1b[2J"),
        "an ESC the agent wrote into a file is shown escaped, never sent to the terminal", lines().filter((l) => l.startsWith("+new")));
    key("Escape");
    ok(await waitFor(() => hasLine(/nothing applied; 2 change\(s\) still pending/), 15000, "the note"),
        "Escape closes the viewer: nothing applied, said so");
    ok(host("a.txt") === "host\n" && host("b.txt") === null, "nothing reached the host");

    // --- apply one of the two, with the confirmation
    await command("/cordon review");
    await waitFor(() => visible().includes("Enter: apply"), 15000, "the viewer again");
    key("Enter");
    ok(await waitFor(() => visible().includes("apply what to the workspace?"), 15000, "the choice"),
        "Enter in the viewer asks what to apply");
    key("Down");
    await sleep(300);
    key("Enter");
    ok(await waitFor(() => visible().includes("choose the changes"), 15000, "the file list"), "\"Choose which to apply\" lists the files");
    key("Down");
    await sleep(300);
    key("Enter");
    ok(await waitFor(() => visible().includes("[x] M  a.txt") && visible().includes("Apply the 1 chosen"), 15000, "a.txt toggled"),
        "Enter toggles a file", visible());
    key("Enter");
    ok(await waitFor(() => visible().includes("apply 1 change to the workspace on the host?"), 15000, "the confirmation"),
        "applying asks for a confirmation naming the change", visible());
    ok(host("a.txt") === "host\n", "nothing is applied before the confirmation");
    key("Enter");
    ok(await waitFor(() => hasLine(/^cordon review: 1 applied; 1 pending$/), 15000, "the result"),
        "the result: 1 applied, 1 pending", visible());
    ok(host("a.txt") === "agent\n" && host("b.txt") === null, "only the chosen file reached the host", [host("a.txt"), host("b.txt")]);
    ok(await waitFor(() => /review: 1 pending/.test(footer()), 15000, "the count"), "the footer shows `review: 1 pending`", footer());

    // --- rewind after a bash call
    type("more");
    ok(await waitFor(() => /review: 2 pending/.test(footer()), 60000, "the count after bash"),
        "bash's file counts: `review: 2 pending`", footer());
    ok(await waitFor(() => procsWith(`1004.${token}`).length > 0, 15000, "the background process"), "bash left a process running in the sandbox");
    await command("/cordon rewind");
    ok(await waitFor(() => hasLine(/^Error: usage: \/cordon rewind N: .*the last call was 3\)$/), 15000, "the usage"),
        "/cordon rewind without N: the usage, naming the last call's number", lines().filter((l) => l.includes("rewind")));
    await command("/cordon rewind 2");
    ok(await waitFor(() => visible().includes("rewind the sandbox to after tool call 2?") && visible().includes("processes running in it end"), 15000, "the confirmation"),
        "/cordon rewind 2 asks first, saying processes end", visible());
    key("Enter");
    ok(await waitFor(() => hasLine(/^cordon: rewound sandbox cordon-\S+ to after call 2; it restarted/), 60000, "the rewind"),
        "the rewind says the sandbox restarted", visible());
    ok(hasLine(new RegExp(`^cordon: rewound sandbox ${name} to after call 2; it restarted \\(its processes ended\\); 1 change\\(s\\) pending$`)),
        "the same sandbox, 1 change pending (b.txt)", [name, lines().filter((l) => l.includes("rewound"))]);
    ok(await waitFor(() => /cordon: sandboxed · review: 1 pending/.test(footer()), 15000, "the footer"), "the footer: sandboxed, 1 pending", footer());
    ok(await waitFor(() => procsWith(`1004.${token}`).length === 0, 15000, "the process to end"), "the sandbox's process ended (processes are not rewound)");
    type("!test -e c.txt && echo c-there || echo c-gone; cat -v b.txt");
    ok(await waitFor(() => hasLine(/^c-(there|gone)$/), 30000, "the command") && hasLine(/^c-gone$/) && hasLine(/^new \^\[\[2J b$/),
        "in the sandbox: bash's file is gone, the earlier write is still there", lines().filter((l) => /^c-|^new/.test(l)));
    ok(host("a.txt") === "agent\n" && host("b.txt") === null && host("c.txt") === null, "the rewind never touched the host");

    // --- apply all: Enter, "Apply all", Yes
    await command("/cordon review");
    await waitFor(() => visible().includes("Enter: apply"), 15000, "the viewer");
    key("Enter");
    await waitFor(() => visible().includes("apply what to the workspace?"), 15000, "the choice");
    key("Enter");
    ok(await waitFor(() => visible().includes("apply 1 change to the workspace on the host?"), 15000, "the confirmation"),
        "\"Apply all\" asks for the confirmation too", visible());
    key("Enter");
    ok(await waitFor(() => hasLine(/^cordon review: 1 applied; 0 pending$/), 15000, "the result") &&
       host("b.txt") === "new \x1b[2J b\n" && host("c.txt") === null,
        "\"Apply all\" writes the pending file as the agent wrote it (bytes kept)", [host("b.txt"), visible()]);
    ok(await waitFor(() => /review: 0 pending/.test(footer()), 15000, "the count"), "the footer: `review: 0 pending`", footer());
    await command("/cordon review");
    ok(await waitFor(() => hasLine(/^cordon review: no pending changes$/), 15000, "the note"), "/cordon review with nothing pending says so");

    await command("/quit");
    ok(await waitFor(() => fs.existsSync(exitFile), 30000, "pi to exit"), "`/quit`: pi exits");
} finally {
    tmux("kill-server");
    for (const p of procsWith(token)) try { process.kill(p.pid, "SIGKILL"); } catch {}
    if (name) spawnSync(cordon, ["rm", name], { stdio: "ignore" });
    fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
