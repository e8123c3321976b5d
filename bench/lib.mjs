// Shared pieces of the Node benchmark drivers: statistics, a line-oriented
// child process (cordon tool --batch, cordon mcp), pi 0.73.1's tools loaded
// from tests/pi/node_modules. Host context, benchmark-only.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export const nowUs = () => Number(process.hrtime.bigint()) / 1000;

export function quantile(values, q) {
    const a = [...values].sort((x, y) => x - y);
    if (a.length === 0) return NaN;
    if (q === 0.5) return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    return a[Math.min(a.length - 1, Math.ceil(q * a.length) - 1)];
}
export const median = (v) => quantile(v, 0.5);

// Microseconds for humans: "85 µs", "1.42 ms", "2.10 s".
export function fmt(us) {
    if (!Number.isFinite(us)) return "n/a";
    if (us < 1000) return `${us.toFixed(us < 10 ? 1 : 0)} µs`;
    if (us < 1e6) return `${(us / 1000).toFixed(2)} ms`;
    return `${(us / 1e6).toFixed(2)} s`;
}
export const ratio = (a, b) => (a / b).toFixed(2);

export async function loadPiTools() {
    const index = path.join(srcDir, "tests/pi/node_modules/@mariozechner/pi-coding-agent/dist/core/tools/index.js");
    if (!fs.existsSync(index)) throw new Error("pi is not installed: run scripts/bootstrap.sh --test (npm ci in tests/pi)");
    return import(pathToFileURL(index).href);
}

// A child speaking one JSON object per line on stdout. send() writes a line;
// onLine is called with each parsed line.
export function lineChild(cmd, args, cwd, onLine) {
    const child = spawn(cmd, args, { cwd, stdio: ["pipe", "pipe", "inherit"] });
    let buf = "";
    child.stdout.setEncoding("utf-8");
    child.stdout.on("data", (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (line) onLine(JSON.parse(line));
        }
    });
    return {
        child,
        send: (obj) => child.stdin.write(JSON.stringify(obj) + "\n"),
        close: () =>
            new Promise((resolve) => {
                child.on("exit", resolve);
                child.stdin.end();
            }),
    };
}

// Request/response over a line child: call(obj) resolves with the line
// carrying the same id.
export function rpcChild(cmd, args, cwd) {
    const waiting = new Map();
    let nextId = 1;
    const lc = lineChild(cmd, args, cwd, (msg) => {
        const w = waiting.get(msg.id);
        if (w) {
            waiting.delete(msg.id);
            w(msg);
        }
    });
    return {
        ...lc,
        call(obj) {
            const id = nextId++;
            return new Promise((resolve) => {
                waiting.set(id, resolve);
                lc.send({ ...obj, id });
            });
        },
    };
}

// n calls of fn() with `inFlight` outstanding at a time; returns calls/s.
export async function throughput(fn, n, inFlight) {
    let started = 0;
    const t0 = nowUs();
    const worker = async () => {
        while (started < n) {
            started++;
            await fn();
        }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    return n / ((nowUs() - t0) / 1e6);
}

// A 4 KiB text file: 64 lines of 64 bytes.
export function write4k(file) {
    let s = "";
    for (let i = 0; s.length < 4096; i++) s += `line ${String(i).padStart(4, "0")} ${"abcdefghij".repeat(6)}`.slice(0, 63) + "\n";
    fs.writeFileSync(file, s.slice(0, 4096));
}
