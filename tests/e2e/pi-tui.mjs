// End-to-end: the real pi 0.73.1 in its interactive TUI, in a real terminal
// (tmux), offline with the scripted model (pi/faux.ts, prompt-keyed), with
// the cordon extension. pi fires `user_bash` only here, so this is where the
// user's `!` and `!!` commands and Escape are tested for real. Checks, from
// the screen and from disk and /proc:
// - `!` and `!!` run in the sandbox; `!!` output stays out of the model's
//   context, `!` output goes in;
// - Escape cancels a user `!` command and a model's bash call: the screen
//   shows it, the process is gone, the next tool call works;
// - the footer shows `cordon: sandboxed`, `/cordon off` shows `cordon: HOST`
//   and then runs on the host, `/cordon on` returns;
// - processes left running on the host by host execution (`&`, nohup,
//   setsid) end with the session.
// TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ok, done } from "../lib/tap.mjs";
import { needTmux, sleep, q, isBold, procsWith, tmuxPane } from "../lib/tmux.mjs";
import { piCommand, piTuiRunner } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const piBin = piCommand(src);
needTmux();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-tui-"));
fs.chmodSync(tmp, 0o755);
const ws = path.join(tmp, "ws");
const outside = path.join(tmp, "outside");
const agentDir = path.join(tmp, "agent");
for (const d of [ws, outside, agentDir]) fs.mkdirSync(d);
fs.chmodSync(outside, 0o777);
// Marks every process this test starts, so /proc can be searched for them:
// digits, so that it can also be the fraction of a `sleep` duration.
const token = `${process.pid}${Math.floor(1e5 + Math.random() * 9e5)}`;
const hostInit = fs.readFileSync("/proc/1/comm", "utf8").trim();

const script = path.join(tmp, "script.json");
const contextLog = path.join(tmp, "context.log");
fs.writeFileSync(script, JSON.stringify({
    prompts: {
        heartbeat: [{ name: "bash", args: { command: `: hb-${token}; while :; do date +%s%N > hb.tmp; mv hb.tmp hb.txt; sleep 0.1; done` } }],
        after: [{ name: "bash", args: { command: `echo left-$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c '[h]b-${token}')` } }],
        hostbg: [{ name: "bash", args: { command: `sleep 1003.${token} >/dev/null 2>&1 & echo hostbg-$(cat /proc/1/comm)` } }],
    },
}));

const sock = path.join(tmp, "tmux.sock");
const { runner, exitFile } = piTuiRunner(src, { piBin, tmp, ws, agentDir, cordon, script, env: { CORDON_FAUX_LOG: contextLog } });

const { tmux, footer, styledStatus, type, command, lines, hasLine, waitFor } = tmuxPane(sock);
const readHb = () => { try { return fs.readFileSync(path.join(ws, "hb.txt"), "utf8"); } catch { return ""; } };

try {
    const started = tmux("new-session", "-d", "-s", "pi", "-x", "150", "-y", "50", `bash ${q(runner)}`);
    if (!ok(started.status === 0, "pi starts in a tmux terminal", started.stderr)) throw new Error("no tmux");

    ok(await waitFor(() => /cordon: sandboxed/.test(footer()), 90000, "the footer's cordon status"),
        "the footer shows `cordon: sandboxed`", footer());
    ok(!isBold(styledStatus()), "`cordon: sandboxed` is not bold", JSON.stringify(styledStatus()));

    // --- `!` and `!!`: the user's commands run in the sandbox
    const bang = path.join(outside, "bang");
    type(`!echo bang-$(cat /proc/1/comm) $(echo x 2>/dev/null > ${bang} && echo wrote || echo ro)`);
    ok(await waitFor(() => hasLine(/^bang-\S+ (ro|wrote)$/), 30000, "the ! command's output"), "`!cmd` shows its output");
    ok(hasLine(/^bang-cordon-agent ro$/) && !fs.existsSync(bang),
        "`!cmd` ran in the sandbox: PID 1 is cordon-agent, a path outside the workspace is not writable",
        lines().filter((l) => l.startsWith("bang-")));

    type("!!echo bb-$(cat /proc/1/comm)");
    ok(await waitFor(() => hasLine(/^bb-\S+$/), 30000, "the !! command's output") && hasLine(/^bb-cordon-agent$/),
        "`!!cmd` ran in the sandbox too", lines().filter((l) => l.startsWith("bb-")));

    // Escape cancels a user command; the process is gone.
    type(`!: ubash-${token}; sleep 300; echo never`);
    ok(await waitFor(() => procsWith(`ubash-${token}`).length > 0, 30000, "the ! command's process"),
        "a long `!` command runs (its shell is visible in /proc)");
    tmux("send-keys", "-t", "pi", "Escape");
    ok(await waitFor(() => hasLine(/\(cancelled\)/), 15000, "pi's (cancelled)"), "Escape: pi shows the `!` command as (cancelled)");
    ok(await waitFor(() => procsWith(`ubash-${token}`).length === 0, 10000, "the ! command's process to end"),
        "Escape: the `!` command's processes are gone", procsWith(`ubash-${token}`));

    // --- the model's bash call, cancelled with Escape
    type("heartbeat");
    let first = "";
    ok(await waitFor(() => (first ||= readHb()) && readHb() !== first, 30000, "the heartbeat file to change"),
        "the model's long bash call runs in the sandbox and writes a heartbeat in the workspace");
    ok(procsWith(`hb-${token}`).length > 0, "its shell is visible from the host", procsWith(`hb-${token}`));
    tmux("send-keys", "-t", "pi", "Escape");
    ok(await waitFor(() => hasLine(/^Command aborted$/) && hasLine(/^Operation aborted$/), 15000, "the abort on the screen"),
        "Escape: pi shows `Command aborted` and `Operation aborted`");
    ok(await waitFor(() => procsWith(`hb-${token}`).length === 0, 10000, "the heartbeat loop to end"),
        "Escape: the loop's processes are gone from the host's view", procsWith(`hb-${token}`));
    const stopped = readHb();
    await sleep(1000); // the loop beat every 100 ms: ten beats missed if it still ran
    ok(stopped !== "" && readHb() === stopped, "Escape: the heartbeat stops");

    type("after");
    ok(await waitFor(() => hasLine(/^left-\d+$/), 30000, "the next tool call's output") && hasLine(/^left-0$/),
        "the next tool call works, and the sandbox has no process of the cancelled loop", lines().filter((l) => l.startsWith("left-")));

    // --- the model's context: `!` output is in it, `!!` output is not
    const context = fs.existsSync(contextLog) ? fs.readFileSync(contextLog, "utf8") : "";
    ok(context.includes("bang-cordon-agent ro") && !context.includes("bb-cordon-agent"),
        "the model saw the `!` output and not the `!!` output", context.slice(-3000));

    // --- /cordon off: the footer says HOST, commands run on the host
    await command("/cordon off");
    ok(await waitFor(() => /cordon: HOST/.test(footer()), 15000, "cordon: HOST in the footer"),
        "`/cordon off`: the footer shows `cordon: HOST`", footer());
    // The styled cells are read back from tmux; a capture can land between
    // two renders of the footer, so wait for the styled state, not one look.
    const loud = () => isBold(styledStatus()) && /\x1b\[[0-9;]*3[0-9;]*m/.test(styledStatus());
    ok(await waitFor(loud, 5000, "the footer's styled cells", true), "`cordon: HOST` is loud: bold and coloured",
        JSON.stringify(styledStatus()));
    type(`!echo host-$(cat /proc/1/comm)`);
    ok(await waitFor(() => hasLine(/^host-\S+$/), 30000, "the host command's output") && hasLine(new RegExp(`^host-${hostInit}$`)) &&
        hostInit !== "cordon-agent", `\`!cmd\` now runs on the host (PID 1 is ${hostInit})`, lines().filter((l) => l.startsWith("host-")));

    // Processes left running on the host, by the user and by the model.
    type(`!sleep 1000.${token} >/dev/null 2>&1 & nohup sleep 1001.${token} >/dev/null 2>&1 & setsid sleep 1002.${token} >/dev/null 2>&1 & echo bg-$((40+2))`);
    ok(await waitFor(() => hasLine(/^bg-42$/), 30000, "the background command's output"), "`!cmd &` on the host returns");
    type("hostbg");
    ok(await waitFor(() => hasLine(/^hostbg-\S+$/), 30000, "the model's host call") && hasLine(new RegExp(`^hostbg-${hostInit}$`)),
        "the model's bash runs on the host too", lines().filter((l) => l.startsWith("hostbg-")));
    // The sleeps themselves (nohup and setsid exec them), not the shells.
    const sleeps = () => procsWith(`.${token}`).filter((p) => p.cmd.startsWith("sleep "));
    const myPidNs = fs.readlinkSync("/proc/self/ns/pid");
    const pidNs = (pid) => { try { return fs.readlinkSync(`/proc/${pid}/ns/pid`); } catch { return "?"; } };
    ok(await waitFor(() => sleeps().length === 4, 10000, "four background sleeps on the host") &&
        sleeps().every((p) => pidNs(p.pid) === myPidNs),
        "four background processes run on the host (not in a sandbox) after their calls ended",
        sleeps().map((p) => ({ ...p, ns: pidNs(p.pid), mine: myPidNs })));

    await command("/cordon on");
    ok(await waitFor(() => /cordon: sandboxed/.test(footer()), 60000, "cordon: sandboxed in the footer"),
        "`/cordon on`: the footer shows `cordon: sandboxed` again", footer());
    type("!echo back-$(cat /proc/1/comm)");
    ok(await waitFor(() => hasLine(/^back-\S+$/), 30000, "the command's output") && hasLine(/^back-cordon-agent$/),
        "`!cmd` runs in the sandbox again", lines().filter((l) => l.startsWith("back-")));

    // --- the session ends: the host processes end with it
    await command("/quit");
    ok(await waitFor(() => fs.existsSync(exitFile), 30000, "pi to exit"), "`/quit`: pi exits");
    ok(await waitFor(() => sleeps().length === 0, 15000, "the host's background processes to end"),
        "the processes host execution left running ended with the session", sleeps());
} finally {
    tmux("kill-server");
    for (const p of procsWith(token)) try { process.kill(p.pid, "SIGKILL"); } catch {}
    fs.rmSync(tmp, { recursive: true, force: true });
}
done();
