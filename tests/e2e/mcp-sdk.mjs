// End-to-end: the official MCP TypeScript SDK client (stdio transport)
// against `cordon mcp`: list the tools, call each of the seven, receive
// progress, cancel a long bash call, run calls in parallel. TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { ok, done } from "../lib/tap.mjs";
import { mcpSdk } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const { Client, StdioClientTransport } = await mcpSdk(src);

const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-mcp-"));
fs.chmodSync(ws, 0o755);
fs.writeFileSync(path.join(ws, "hello.txt"), "hello\nworld\n");
fs.mkdirSync(path.join(ws, "src"));
fs.writeFileSync(path.join(ws, "src/a.ts"), "export const a = 1;\n");

const transport = new StdioClientTransport({ command: cordon, args: ["mcp"], cwd: ws, stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (d) => (stderr += d));
const client = new Client({ name: "cordon-e2e", version: "1.0.0" });
try {
    await client.connect(transport);
    ok(true, "the SDK client connects and initializes");
    const info = client.getServerVersion();
    ok(info?.name === "cordon", "serverInfo names cordon", JSON.stringify(info));

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort().join(",");
    ok(names === "bash,edit,find,grep,ls,read,sandbox_verify,write",
       "tools/list has the seven tools and sandbox_verify", names);
    const ro = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name).sort().join(",");
    ok(ro === "find,grep,ls,read,sandbox_verify", "readOnlyHint on read, ls, find, grep, sandbox_verify", ro);
    const readTool = tools.find((t) => t.name === "read");
    ok(JSON.stringify(readTool.inputSchema.required) === '["path"]' &&
       readTool.inputSchema.properties.offset.type === "number", "read keeps pi's parameter schema",
       JSON.stringify(readTool.inputSchema));

    let r = await client.callTool({ name: "sandbox_verify", arguments: {} });
    ok(!r.isError && r.structuredContent?.result === "PASS" &&
       r.structuredContent.checks.some((c) => c.check === "seccomp" && c.status === "PASS") &&
       /^PASS +seccomp/m.test(text(r)),
       "sandbox_verify: every check passes, as text and structuredContent", text(r));

    r = await client.callTool({ name: "read", arguments: { path: "hello.txt" } });
    ok(text(r) === "hello\nworld\n" && !r.isError, "read returns the file", JSON.stringify(r));
    r = await client.callTool({ name: "write", arguments: { path: "new/dir/out.txt", content: "written by mcp" } });
    ok(text(r) === "Successfully wrote 14 bytes to new/dir/out.txt", "write reports pi's message", JSON.stringify(r));
    ok(fs.readFileSync(path.join(ws, "new/dir/out.txt"), "utf8") === "written by mcp", "the write landed on the host");
    r = await client.callTool({ name: "edit", arguments: { path: "hello.txt", edits: [{ oldText: "world", newText: "there" }] } });
    ok(text(r) === "Successfully replaced 1 block(s) in hello.txt." && r.structuredContent?.diff?.includes("+2 there"),
       "edit reports pi's message and the diff in structuredContent", JSON.stringify(r));
    r = await client.callTool({ name: "ls", arguments: {} });
    ok(text(r) === "hello.txt\nnew/\nsrc/", "ls lists the workspace", JSON.stringify(r));
    r = await client.callTool({ name: "find", arguments: { pattern: "*.ts" } });
    ok(text(r) === "src/a.ts", "find finds by glob", JSON.stringify(r));
    r = await client.callTool({ name: "grep", arguments: { pattern: "there" } });
    ok(text(r) === "hello.txt:2: there", "grep finds the edited line", JSON.stringify(r));
    r = await client.callTool({ name: "bash", arguments: { command: "cat /proc/1/comm; echo $HOME; ls ~ | wc -l" } });
    ok(text(r) === `cordon-agent\n${os.homedir()}\n0\n`, "bash runs inside the sandbox (init is cordon-agent, home is empty)", JSON.stringify(r));
    r = await client.callTool({ name: "bash", arguments: { command: "echo out; exit 7" } });
    ok(r.isError && text(r) === "out\n\n\nCommand exited with code 7", "a failing command is an error result with pi's text", JSON.stringify(r));
    r = await client.callTool({ name: "write", arguments: { path: "/etc/cordon-mcp-test", content: "x" } });
    ok(r.isError && !fs.existsSync("/etc/cordon-mcp-test"), "a write outside the workspace fails and the host is untouched", JSON.stringify(r));
    r = await client.callTool({ name: "read", arguments: { path: 42 } });
    ok(r.isError, "wrong argument types give an error result", JSON.stringify(r));

    // progress
    const progress = [];
    r = await client.callTool({ name: "bash", arguments: { command: "for i in 1 2 3; do echo line$i; sleep 0.3; done" } },
        undefined, { onprogress: (p) => progress.push(p) });
    ok(text(r) === "line1\nline2\nline3\n", "bash with progress returns its output", JSON.stringify(r));
    ok(progress.length >= 2 && progress.some((p) => (p.message || "").includes("line1")),
       `progress notifications carry the partial output (${progress.length})`, JSON.stringify(progress));

    // progress only when there is new output: a quiet command does not
    // repeat the same partial output every throttle period
    const quiet = [];
    r = await client.callTool({ name: "bash", arguments: { command: "echo start; sleep 2; echo end" } },
        undefined, { onprogress: (p) => quiet.push(p.message ?? "") });
    const repeats = quiet.filter((m, i) => i > 0 && m === quiet[i - 1]).length;
    ok(text(r) === "start\nend\n" && repeats === 0 && quiet.length <= 4 && quiet.some((m) => m.includes("start")),
       `a 2 s quiet command sends progress only for new output (${quiet.length}, ${repeats} repeated)`, JSON.stringify(quiet));

    // cancellation kills the process tree
    const marker = `cordon-cancel-${process.pid}`;
    const ac = new AbortController();
    const pending = client.callTool({ name: "bash", arguments: { command: `bash -c 'exec -a ${marker} sleep 60' & wait` } },
        undefined, { signal: ac.signal });
    let seen = false;
    for (let i = 0; i < 100 && !seen; i++) {
        await new Promise((res) => setTimeout(res, 50));
        try { execFileSync("pgrep", ["-f", marker]); seen = true; } catch { /* not yet */ }
    }
    ok(seen, "the long command started");
    ac.abort();
    let rejected = false;
    try { await pending; } catch { rejected = true; }
    ok(rejected, "the cancelled call is rejected on the client");
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) {
        try { execFileSync("pgrep", ["-f", marker]); await new Promise((res) => setTimeout(res, 50)); } catch { gone = true; }
    }
    ok(gone, "cancellation killed the command's process tree");

    // parallel calls
    const t0 = Date.now();
    const results = await Promise.all([...Array(8).keys()].map((i) =>
        client.callTool({ name: "bash", arguments: { command: `sleep 0.5; echo ${i}` } })));
    const elapsed = Date.now() - t0;
    ok(results.every((res, i) => text(res) === `${i}\n`), "8 parallel calls each get their own result",
       JSON.stringify(results.map(text)));
    ok(elapsed < 3000, `8 parallel 0.5 s calls overlap (${elapsed} ms)`);
    r = await client.callTool({ name: "read", arguments: { path: "hello.txt" } });
    ok(text(r) === "hello\nthere\n", "the session goes on after cancellation and parallel calls");
    await client.close();
    ok(true, "the client closes the session");
} catch (e) {
    ok(false, "MCP session", `${e.stack}\nstderr: ${stderr}`);
}
// nothing of the sandbox is left
await new Promise((res) => setTimeout(res, 300));
let leftovers = "";
try { leftovers = execFileSync("pgrep", ["-af", `cordon-agent serve`]).toString(); } catch { /* none */ }
ok(!leftovers.split("\n").some((l) => l && fs.existsSync(`/proc/${l.split(" ")[0]}/cwd`) &&
    fs.readlinkSync(`/proc/${l.split(" ")[0]}/cwd`) === ws), "no sandbox process outlives the session", leftovers);
fs.rmSync(ws, { recursive: true, force: true });
done();
