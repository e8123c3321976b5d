// End-to-end: a refused network destination, allowed by the user for the
// rest of the session through MCP elicitation, with the official MCP
// TypeScript SDK client. The sandbox (deny mode) curls a server on the
// host's loopback under a name from a hosts file: refused, the result is
// held while the user is asked, declined, asked again, accepted; the next
// call reaches the server. The agent's side has no way to do the same: no
// tool, and a client without elicitation only gets the line. TAP on stdout.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { ok, done } from "../lib/tap.mjs";
import { mcpSdk } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const { Client, StdioClientTransport, ElicitRequestSchema } = await mcpSdk(src);

const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const lastLine = (r) => text(r).trimEnd().split("\n").pop();

const server = http.createServer((req, res) => res.end("hello-from-the-host\n"));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-mcp-net-"));
fs.chmodSync(ws, 0o755);
const hosts = path.join(ws, "..", path.basename(ws) + ".hosts");
fs.writeFileSync(hosts, "127.0.0.1 web.test\n");
const curl = { command: `curl -sS -m 10 http://web.test:${port}/; echo curl=$?` };

// CORDON_E2E_ARGS (a JSON array): options for another backend
// (tests/integration/vm-network.sh, docker-network.sh), whose settings
// may sit in the caller's environment (XDG_CONFIG_HOME).
const extra = process.env.CORDON_E2E_ARGS ? JSON.parse(process.env.CORDON_E2E_ARGS) : [];
async function connect(elicitation) {
    const transport = new StdioClientTransport({
        command: cordon, args: ["mcp", ...extra, "--net-hosts-file", hosts], cwd: ws, stderr: "pipe",
        ...(extra.length ? { env: process.env } : {}) });
    transport.stderr?.on("data", () => {});
    const client = new Client({ name: "cordon-e2e-net", version: "1.0.0" },
                              { capabilities: elicitation ? { elicitation: {} } : {} });
    await client.connect(transport);
    return client;
}

try {
    // A client without elicitation: the line, nobody asked, nothing allowed.
    let c = await connect(false);
    let r = await c.callTool({ name: "bash", arguments: curl });
    ok(/^\[cordon\] network: web\.test:\d+ refused: network\.mode is "deny"/.test(lastLine(r)),
       "without elicitation: the result ends with cordon's refusal line", text(r));
    const { tools } = await c.listTools();
    ok(!tools.some((t) => /allow|network/i.test(t.name)), "no tool lets the agent allow a destination",
       tools.map((t) => t.name).join(","));
    r = await c.callTool({ name: "bash", arguments: curl });
    ok(!text(r).includes("hello-from-the-host"), "without elicitation: still refused", text(r));
    await c.close();

    // With elicitation: asked; declined, then accepted.
    c = await connect(true);
    const asked = [];
    let answer = { action: "decline" };
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(req.params);
        return answer;
    });
    r = await c.callTool({ name: "bash", arguments: curl });
    ok(asked.length === 1, "the user is asked once for the refused destination", JSON.stringify(asked));
    let meta = asked[0]?._meta?.["cordon/network"];
    ok(meta?.host === "web.test" && meta?.port === port && JSON.stringify(meta?.rules) === '["web.test"]',
       "the question names the destination and the rule it would add", JSON.stringify(asked[0]));
    ok(/^cordon refused a connection from the sandbox: web\.test:\d+ refused: network\.mode is "deny" .*\n\nAllow web\.test for the rest of this session\?/s.test(asked[0]?.message ?? ""),
       "the message says what was refused, why, what would be allowed and for how long", asked[0]?.message);
    ok(text(r).includes("curl=") && lastLine(r) === "[cordon] network: the user did not allow web.test",
       "declined: the held result comes back with the decision", text(r));
    answer = { action: "accept", content: { allow: true } };
    r = await c.callTool({ name: "bash", arguments: curl });
    ok(asked.length === 2, "asked again after a decline", asked.length);
    ok(/the user allowed web\.test for the rest of this session; run the command again$/.test(lastLine(r)),
       "accepted: the result says so", text(r));
    // web.test is on the host's loopback: the name passes now, its
    // address is protected (DNS rebinding) and asked about, with the port.
    r = await c.callTool({ name: "bash", arguments: curl });
    meta = asked[2]?._meta?.["cordon/network"];
    ok(asked.length === 3 && JSON.stringify(meta?.rules) === `["web.test","127.0.0.1:${port}"]`,
       "the protected address it resolved to is asked about next, for that port only", JSON.stringify(asked[2]));
    ok(/loopback address/.test(asked[2]?.message ?? ""), "that question says why (a loopback address)", asked[2]?.message);
    r = await c.callTool({ name: "bash", arguments: curl });
    ok(text(r).includes("hello-from-the-host") && text(r).includes("curl=0") && !text(r).includes("[cordon]"),
       "the next call reaches the allowed destination, with no cordon line", text(r));
    ok(asked.length === 3, "nothing more is asked once allowed", asked.length);
    answer = { action: "decline" };
    r = await c.callTool({ name: "bash", arguments: { command: `curl -sS -m 10 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:${port === 65535 ? 1 : port + 1}/; echo curl=$?` } });
    ok(asked.length === 4 && text(r).includes("cordon: network: denied") &&
       lastLine(r) === `[cordon] network: the user did not allow 127.0.0.1:${port === 65535 ? 1 : port + 1}`,
       "another port of the same address is still refused by cordon (and asked about)", text(r));
    await c.close();

    // A new session starts from the configuration again.
    c = await connect(false);
    r = await c.callTool({ name: "bash", arguments: curl });
    ok(!text(r).includes("hello-from-the-host"), "a new session does not inherit the allowance", text(r));
    await c.close();
} catch (e) {
    ok(false, "no exception", e?.stack ?? String(e));
} finally {
    server.close();
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(hosts, { force: true });
}
done();
