// grep and find over a large tree: cordon against the programs pi runs for
// them, ripgrep and fd, with pi's own arguments, warm cache, alternating.
// cordon is measured twice: one `cordon tool NAME JSON` (a sandbox started
// for the call) and one call in a warm `cordon tool --batch` session (the
// round trip over the batch pipes); a no-op call (ls of an empty directory)
// in the same session is subtracted from the latter for the in-sandbox time.
// Host context, benchmark-only.
//
// usage: node grep-find.mjs CORDON TREE RUNS [--markdown]
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fmt, median, nowUs, quantile, ratio, rpcChild } from "./lib.mjs";

const [cordonArg, treeArg, runsArg, mode] = process.argv.slice(2);
const cordon = path.resolve(cordonArg);
const tree = path.resolve(treeArg);
const runs = Number(runsArg || 15);
process.chdir(tree);

// pi 0.73.1's argument lists (grep.js, find.js). fd: Debian 12's fdfind
// 8.6 has no --no-require-git; the tree is a git repository, where fd
// applies the same ignore rules without it.
const rgArgs = (pattern) => ["rg", "--json", "--line-number", "--color=never", "--hidden", "--", pattern, tree];
const fdArgs = (glob, full) => ["fdfind", "--glob", "--color=never", "--hidden", "--max-results", "1000",
    ...(full ? ["--full-path", "--", `**/${glob}`] : ["--", glob]), tree];
// BENCH_QUERIES="LITERAL|REGEX|GLOB|PATH-GLOB" for another tree (a real
// repository): the expected counts are what rg/fd find in the first run.
const custom = process.env.BENCH_QUERIES ? process.env.BENCH_QUERIES.split("|") : null;
const cases = custom ? [
    { label: `grep \`${custom[0]}\` (literal)`, tool: "grep", args: { pattern: custom[0], literal: true },
        peer: ["rg", "--json", "--line-number", "--color=never", "--hidden", "--fixed-strings", "--", custom[0], tree] },
    { label: `grep \`${custom[1]}\` (regex)`, tool: "grep", args: { pattern: custom[1] }, peer: rgArgs(custom[1]) },
    { label: `find \`${custom[2]}\``, tool: "find", args: { pattern: custom[2] }, peer: fdArgs(custom[2], false) },
    { label: `find \`${custom[3]}\` (full path)`, tool: "find", args: { pattern: custom[3] }, peer: fdArgs(custom[3], true) },
] : [
    {
        label: "grep `rare_marker_` (literal, 40 matches)",
        tool: "grep", args: { pattern: "rare_marker_" },
        peer: ["rg", "--json", "--line-number", "--color=never", "--hidden", "--", "rare_marker_", tree],
        expect: 40,
    },
    {
        label: "grep `rare_marker_\\d+ \\*/` (regex, 40 matches)",
        tool: "grep", args: { pattern: "rare_marker_\\d+ \\*/" },
        peer: ["rg", "--json", "--line-number", "--color=never", "--hidden", "--", "rare_marker_\\d+ \\*/", tree],
        expect: 40,
    },
    {
        label: "find `*.proto` (60 results)",
        tool: "find", args: { pattern: "*.proto" },
        peer: ["fdfind", "--glob", "--color=never", "--hidden", "--max-results", "1000", "--", "*.proto", tree],
        expect: 60,
    },
    {
        label: "find `d3/**/*.go` (full path, 599 results)",
        tool: "find", args: { pattern: "d3/**/*.go" },
        peer: ["fdfind", "--glob", "--color=never", "--hidden", "--max-results", "1000", "--full-path", "--", "**/d3/**/*.go", tree],
        expect: 599,
    },
];

function runPeer(c) {
    const t0 = nowUs();
    const r = spawnSync(c.peer[0], c.peer.slice(1), { maxBuffer: 256 << 20, encoding: "utf-8" });
    const us = nowUs() - t0;
    if (r.status !== 0) throw new Error(`${c.peer[0]}: exit ${r.status}: ${r.stderr}`);
    const n = c.tool === "grep" ? r.stdout.split("\n").filter((l) => l.startsWith('{"type":"match"')).length
        : r.stdout.split("\n").filter(Boolean).length;
    return { us, n };
}
const countCordon = (c, text) => (text === "No matches found" || text === "No files found matching pattern" ? 0 : text.split("\n\n[")[0].split("\n").length);
function runOneShot(c) {
    const t0 = nowUs();
    const r = spawnSync(cordon, ["tool", c.tool, JSON.stringify(c.args)], { maxBuffer: 256 << 20, encoding: "utf-8" });
    const us = nowUs() - t0;
    if (r.status !== 0) throw new Error(`cordon tool: exit ${r.status}: ${r.stderr}`);
    return { us, n: countCordon(c, JSON.parse(r.stdout).content[0].text) };
}
const batch = rpcChild(cordon, ["tool", "--batch"], tree);
fs.mkdirSync(path.join(tree, ".bench-empty"), { recursive: true });
async function runWarm(c) {
    const t0 = nowUs();
    const r = await batch.call({ tool: c.tool, args: c.args });
    const us = nowUs() - t0;
    if (!r.content) throw new Error(`cordon tool --batch: ${JSON.stringify(r)}`);
    return { us, n: countCordon(c, r.content[0].text) };
}
const noop = { tool: "ls", args: { path: ".bench-empty" } };

const res = cases.map(() => ({ peer: [], one: [], warm: [] }));
const noopTimes = [];
for (let i = -1; i < runs; i++) { // run -1 warms the cache and checks the counts
    for (const [k, c] of cases.entries()) {
        const order = [["peer", () => runPeer(c)], ["one", () => runOneShot(c)], ["warm", () => runWarm(c)]];
        for (let j = 0; j < order.length; j++) {
            const [side, fn] = order[(i + 3 + j) % order.length];
            const { us, n } = await fn();
            if (c.expect === undefined) c.expect = n; // BENCH_QUERIES: the first side's count
            if (n !== c.expect) throw new Error(`${c.label}: ${side} found ${n}, expected ${c.expect}`);
            if (i >= 0) res[k][side].push(us);
        }
        for (let j = 0; j < 5; j++) {
            const t0 = nowUs();
            await batch.call(noop);
            if (i >= 0) noopTimes.push(nowUs() - t0);
        }
    }
}
await batch.close();
fs.rmdirSync(path.join(tree, ".bench-empty"));

const noopMed = median(noopTimes);
if (mode === "--markdown") {
    console.log("| query | runs | rg/fd median (p90) | cordon tool, one call (p90) | ratio | warm --batch call (p90) | ratio | in-sandbox (warm − no-op) | ratio |");
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
}
for (const [k, c] of cases.entries()) {
    const p = median(res[k].peer), o = median(res[k].one), w = median(res[k].warm);
    const inside = w - noopMed;
    const p90 = (a) => fmt(quantile(a, 0.9));
    if (mode === "--markdown") {
        console.log(`| ${c.label} | ${runs} | ${fmt(p)} (${p90(res[k].peer)}) | ${fmt(o)} (${p90(res[k].one)}) | ${ratio(o, p)} | ${fmt(w)} (${p90(res[k].warm)}) | ${ratio(w, p)} | ${fmt(inside)} | ${ratio(inside, p)} |`);
    } else {
        console.log(`${c.label}: ${c.peer[0]} ${fmt(p)}; cordon one call ${fmt(o)} (${ratio(o, p)}x), warm ${fmt(w)} (${ratio(w, p)}x), in-sandbox ${fmt(inside)} (${ratio(inside, p)}x; target <= 1.2)`);
    }
}
const nf = `no-op call (ls of an empty directory) in the warm session: median ${fmt(noopMed)}, p90 ${fmt(quantile(noopTimes, 0.9))}`;
console.log(mode === "--markdown" ? `\n${nf}.` : nf);
