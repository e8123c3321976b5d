// Per-call latency in a warm `cordon tool --batch` session: each call is
// sent alone and its round trip timed (this process -> cordon -> the agent
// in the sandbox -> back), for read of a 4 KiB file, write, edit, bash
// `true`, and a no-op (ls of an empty directory) as the floor. The calls of
// one round are interleaved. Host context, benchmark-only.
//
// usage: node tool-latency.mjs CORDON RUNS [--markdown]
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fmt, median, nowUs, quantile, rpcChild, write4k } from "./lib.mjs";

const [cordonArg, runsArg, mode] = process.argv.slice(2);
const cordon = path.resolve(cordonArg);
const runs = Number(runsArg || 1000);
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-bench-tools-"));
fs.chmodSync(ws, 0o755);
write4k(path.join(ws, "f4k.txt"));
fs.writeFileSync(path.join(ws, "edit.txt"), "alpha\nbeta\ngamma\n");
fs.mkdirSync(path.join(ws, "empty"));

let flip = false;
const calls = [
    ["read 4 KiB file", () => ({ tool: "read", args: { path: "f4k.txt" } })],
    ["write 4 KiB file", () => ({ tool: "write", args: { path: "out.txt", content: "x".repeat(4095) + "\n" } })],
    ["edit (one replacement)", () => {
        flip = !flip;
        return { tool: "edit", args: { path: "edit.txt", edits: [flip ? { oldText: "beta", newText: "BETA" } : { oldText: "BETA", newText: "beta" }] } };
    }],
    ["bash `true`", () => ({ tool: "bash", args: { command: "true" } })],
    ["no-op (ls of an empty directory)", () => ({ tool: "ls", args: { path: "empty" } })],
];
const batch = rpcChild(cordon, ["tool", "--batch"], ws);
const times = calls.map(() => []);
for (let i = -20; i < runs; i++) { // the first 20 rounds warm up
    for (let j = 0; j < calls.length; j++) {
        const k = (i + 20 + j) % calls.length;
        const [label, make] = calls[k];
        if (label.startsWith("bash") && i % 4) continue; // bash: a quarter of the rounds
        const t0 = nowUs();
        const r = await batch.call(make());
        const us = nowUs() - t0;
        if (!r.content || r.isError) throw new Error(`${label}: ${JSON.stringify(r)}`);
        if (i >= 0) times[k].push(us);
    }
}
await batch.close();
fs.rmSync(ws, { recursive: true, force: true });

if (mode === "--markdown") {
    console.log("| call | calls | median | p99 |");
    console.log("| --- | --- | --- | --- |");
}
for (const [k, [label]] of calls.entries()) {
    const t = times[k];
    if (mode === "--markdown") console.log(`| ${label} | ${t.length} | ${fmt(median(t))} | ${fmt(quantile(t, 0.99))} |`);
    else console.log(`  ${label}: median ${fmt(median(t))}, p99 ${fmt(quantile(t, 0.99))} (${t.length} calls)`);
}
