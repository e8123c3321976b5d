// A program's terminal in tmux for the end-to-end tests under Node
// (tests/e2e/pi-tui.mjs, pi-review.mjs): a private tmux server on its own
// socket, one session, and what the tests read from its screen and type
// into it. Imported as "../lib/tmux.mjs".
import fs from "node:fs";
import { spawnSync } from "node:child_process";
import { skipAll } from "./tap.mjs";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A shell word: s in single quotes.
export const q = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

// Whether the footer's cordon line (with its escape sequences) is bold.
export const isBold = (line) => /\x1b\[(?:[0-9;]*;)?1(?:;[0-9;]*)?m\s*cordon: /.test(line) || /\x1b\[1m/.test(line);

// Host processes whose command line holds `needle`, as [{pid, cmd}].
export function procsWith(needle) {
    const found = [];
    for (const pid of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
        let cmd;
        try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "); } catch { continue; }
        if (cmd.includes(needle)) found.push({ pid: Number(pid), cmd });
    }
    return found;
}

// The helpers for the tmux server on socket `sock` and its session "pi".
export function tmuxPane(sock) {
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
    const type = (text) => {
        tmux("send-keys", "-t", "pi", "-l", text);
        tmux("send-keys", "-t", "pi", "Enter");
    };
    const key = (...keys) => tmux("send-keys", "-t", "pi", ...keys);
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
    return { tmux, screen, visible, footer, styledStatus, type, key, editorText, command, lines, hasLine, waitFor };
}

// The whole test skipped when tmux is not installed.
export function needTmux() {
    if (spawnSync("tmux", ["-V"]).status !== 0) skipAll("tmux is not installed (scripts/bootstrap.sh --test)");
}
