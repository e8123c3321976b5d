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
import { ok, done } from "../lib/tap.mjs";
import { needTmux, sleep, q, procsWith, tmuxPane } from "../lib/tmux.mjs";
import { piCommand, piTuiRunner } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = piCommand(src);
needTmux();

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
const { runner, exitFile } = piTuiRunner(src, { piBin, tmp, ws, agentDir, cordon, script, env: { CORDON_WORKSPACE_MODE: "review" } });

const { tmux, screen, visible, footer, type, key, command, lines, hasLine, waitFor } = tmuxPane(sock);
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
done();
