// The official MCP SDK client against an installed cordon's `cordon mcp`,
// started by the command line given (the package test enters its Debian 12
// root file system there). Prints one JSON object: what the server answered.
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdk = path.join(process.env.CORDON_SRC, "tests/pi/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(pathToFileURL(path.join(sdk, "client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(path.join(sdk, "client/stdio.js")).href);
const [command, ...args] = process.argv.slice(2);
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const out = {};
const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (d) => (stderr += d));
const client = new Client({ name: "cordon-package-test", version: "1.0.0" });
try {
    await client.connect(transport);
    out.server = client.getServerVersion()?.name;
    out.tools = (await client.listTools()).tools.map((t) => t.name).sort().join(",");
    let r = await client.callTool({ name: "bash", arguments: { command: "echo inside-$((6*7)); id -u; cat /etc/shadow" } });
    out.bash = text(r);
    r = await client.callTool({ name: "write", arguments: { path: "made-by-mcp.txt", content: "hello\n" } });
    out.write_error = !!r.isError;
    r = await client.callTool({ name: "read", arguments: { path: "made-by-mcp.txt" } });
    out.read = text(r);
    r = await client.callTool({ name: "sandbox_verify", arguments: {} });
    out.verify = r.structuredContent?.result ?? text(r).slice(0, 200);
} catch (e) {
    out.error = String(e?.stack || e);
}
out.stderr = stderr.slice(-2000);
await client.close().catch(() => {});
console.log(JSON.stringify(out));
