// End-to-end tool-call latency over `cordon mcp` (raw JSON-RPC lines on its
// stdin, as an MCP stdio client sends them) against the same calls made by
// pi 0.73.1's own tool implementations in this Node process, on the host,
// without a sandbox. Calls alternate between the two sides. Host context,
// benchmark-only.
//
// usage: node mcp-latency.mjs CORDON RUNS [--markdown]
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fmt, loadPiTools, median, nowUs, quantile, ratio, rpcChild, throughput, write4k } from "./lib.mjs";

const [cordonArg, runsArg, mode] = process.argv.slice(2);
const cordon = path.resolve(cordonArg);
const runs = Number(runsArg || 300);
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-bench-mcp-"));
fs.chmodSync(ws, 0o755);
write4k(path.join(ws, "f4k.txt"));
process.chdir(ws);

const pi = await loadPiTools();
const piTools = { read: pi.createReadTool(ws), bash: pi.createBashTool(ws) };
const calls = { read: { path: "f4k.txt" }, bash: { command: "true" } };
const piCall = (tool) => piTools[tool].execute("bench", structuredClone(calls[tool]), undefined, () => {});

const mcp = rpcChild(cordon, ["mcp"], ws);
const init = await mcp.call({
    jsonrpc: "2.0",
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
});
if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
mcp.send({ jsonrpc: "2.0", method: "notifications/initialized" });
const mcpCall = async (tool) => {
    const r = await mcp.call({ jsonrpc: "2.0", method: "tools/call", params: { name: tool, arguments: calls[tool] } });
    if (!r.result || r.result.isError) throw new Error(`${tool}: ${JSON.stringify(r)}`);
    return r.result;
};
const ping = () => mcp.call({ jsonrpc: "2.0", method: "ping" });

// Same answer on both sides, or the comparison is meaningless.
for (const tool of ["read", "bash"]) {
    const a = (await mcpCall(tool)).content;
    const b = (await piCall(tool)).content;
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${tool}: results differ\n${JSON.stringify(a)}\n${JSON.stringify(b)}`);
}
// Warm-up: JIT on pi's side, page cache and allocator on both.
for (let i = 0; i < 50; i++) {
    await mcpCall("read");
    await piCall("read");
    await ping();
}
for (let i = 0; i < 10; i++) {
    await mcpCall("bash");
    await piCall("bash");
}

const t = { cordon: { read: [], bash: [] }, pi: { read: [], bash: [] }, ping: [] };
const timed = async (fn) => {
    const t0 = nowUs();
    await fn();
    return nowUs() - t0;
};
for (let i = 0; i < runs; i++) {
    for (const tool of ["read", "bash"]) {
        if (tool === "bash" && i % 3) continue; // bash is slow: a third of the runs
        if (i % 2) {
            t.cordon[tool].push(await timed(() => mcpCall(tool)));
            t.pi[tool].push(await timed(() => piCall(tool)));
        } else {
            t.pi[tool].push(await timed(() => piCall(tool)));
            t.cordon[tool].push(await timed(() => mcpCall(tool)));
        }
    }
    t.ping.push(await timed(ping));
}
// Calls per second with 8 in flight, three alternating rounds each.
const tput = { cordon: { read: [], bash: [] }, pi: { read: [], bash: [] } };
for (let round = 0; round < 3; round++) {
    for (const tool of ["read", "bash"]) {
        const n = tool === "read" ? 2000 : 200;
        const sides = round % 2 ? ["cordon", "pi"] : ["pi", "cordon"];
        for (const side of sides)
            tput[side][tool].push(await throughput(() => (side === "pi" ? piCall(tool) : mcpCall(tool)), n, 8));
    }
}
await mcp.close();
fs.rmSync(ws, { recursive: true, force: true });

const rows = ["read", "bash"].map((tool) => {
    const c = t.cordon[tool], p = t.pi[tool];
    const cps = median(tput.cordon[tool]), pps = median(tput.pi[tool]);
    return {
        call: tool === "read" ? "read 4 KiB file" : "bash `true`",
        n: c.length,
        cMed: median(c), pMed: median(p), cP99: quantile(c, 0.99), pP99: quantile(p, 0.99),
        cps, pps,
    };
});
if (mode === "--markdown") {
    console.log("| call | runs | cordon mcp median | pi in-process median | ratio | cordon p99 | pi p99 | cordon calls/s (8 in flight) | pi calls/s (8 in flight) | ratio (pi/cordon) |");
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const r of rows)
        console.log(`| ${r.call} | ${r.n} | ${fmt(r.cMed)} | ${fmt(r.pMed)} | ${ratio(r.cMed, r.pMed)} | ${fmt(r.cP99)} | ${fmt(r.pP99)} | ${r.cps.toFixed(0)} | ${r.pps.toFixed(0)} | ${ratio(r.pps, r.cps)} |`);
    console.log(`\nMCP \`ping\` round trip (JSON-RPC and pipes only, no sandbox work): median ${fmt(median(t.ping))}, p99 ${fmt(quantile(t.ping, 0.99))}.`);
} else {
    console.log(`tool calls over cordon mcp vs pi 0.73.1 in-process, ${runs} rounds, alternating`);
    for (const r of rows) {
        console.log(`  ${r.call}: cordon median ${fmt(r.cMed)} (p99 ${fmt(r.cP99)}), pi median ${fmt(r.pMed)} (p99 ${fmt(r.pP99)}), ratio ${ratio(r.cMed, r.pMed)} (target <= 1.0)`);
        console.log(`    8 in flight: cordon ${r.cps.toFixed(0)} calls/s, pi ${r.pps.toFixed(0)} calls/s`);
    }
    console.log(`  mcp ping round trip: median ${fmt(median(t.ping))}, p99 ${fmt(quantile(t.ping, 0.99))}`);
}
