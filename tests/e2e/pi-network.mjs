// The cordon pi extension (loaded with pi's jiti and pi's aliases, through
// a fake ExtensionAPI as in pi-extension.mjs) and a refused network
// destination: the bash tool's result ends with cordon's line; with a UI,
// ctx.ui.confirm asks whether to allow it for the session (declined: still
// refused; accepted: the next call reaches it); without a UI nobody is
// asked. TAP on stdout.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { ok, diagAs, done } from "../lib/tap.mjs";
import { piExtensionModule } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const extension = (await piExtensionModule(src)).default;

diagAs("json");

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-pinet-"));
fs.chmodSync(ws, 0o755);
function load(hasUI, answers) {
    process.env.CORDON_BIN = process.env.CORDON;
    const pi = { handlers: {}, tools: {}, commands: {}, confirms: [] };
    extension({
        on: (ev, h) => (pi.handlers[ev] = h),
        registerTool: (t) => (pi.tools[t.name] = t),
        registerCommand: (name, c) => (pi.commands[name] = c),
    });
    pi.ctx = {
        cwd: ws,
        hasUI,
        ui: {
            notify: () => {},
            setStatus: () => {},
            confirm: async (title, message) => (pi.confirms.push({ title, message }), answers.shift() ?? false),
        },
    };
    return pi;
}
const server = http.createServer((req, res) => res.end("hello-from-the-host\n"));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;
// An address literal through the proxy (NO_PROXY would send it to the
// sandbox's own loopback).
const command = `curl -sS -m 10 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:${port}/; echo curl=$?`;
const text = (r) => r.content.map((c) => c.text ?? "").join("");
const cwd0 = process.cwd();
process.chdir(ws);
try {
    let pi = load(false, []);
    await pi.handlers.session_start({ reason: "startup" }, pi.ctx);
    let r = await pi.tools.bash.execute("n1", { command }, undefined, undefined, pi.ctx);
    ok(text(r).trimEnd().endsWith(`To allow it: network.mode = "allowlist" and network.allow_hosts = ["127.0.0.1:${port}"] (cordon --network allowlist --allow-host 127.0.0.1:${port})`) &&
       pi.confirms.length === 0, "without a UI: the result ends with cordon's line, nobody is asked", text(r));
    await pi.handlers.session_shutdown({ reason: "quit" }, pi.ctx);

    pi = load(true, [false, true]);
    await pi.handlers.session_start({ reason: "startup" }, pi.ctx);
    r = await pi.tools.bash.execute("n2", { command }, undefined, undefined, pi.ctx);
    ok(pi.confirms.length === 1 && /allow this network destination/.test(pi.confirms[0].title) &&
       pi.confirms[0].message.includes(`Allow 127.0.0.1:${port} for the rest of this session?`),
       "with a UI: ctx.ui.confirm asks about the destination", pi.confirms);
    ok(text(r).trimEnd().endsWith(`the user did not allow 127.0.0.1:${port}`) && !text(r).includes("hello-from-the-host"),
       "declined: still refused, and the result says so", text(r));
    r = await pi.tools.bash.execute("n3", { command }, undefined, undefined, pi.ctx);
    ok(pi.confirms.length === 2 && /the user allowed 127\.0\.0\.1:\d+ for the rest of this session/.test(text(r)),
       "accepted: the result says it is allowed", text(r));
    r = await pi.tools.bash.execute("n4", { command }, undefined, undefined, pi.ctx);
    ok(text(r).includes("hello-from-the-host") && pi.confirms.length === 2, "the next call reaches it", text(r));
    await pi.handlers.session_shutdown({ reason: "quit" }, pi.ctx);
} catch (e) {
    ok(false, "no exception", e?.stack ?? String(e));
} finally {
    process.chdir(cwd0);
    server.close();
    fs.rmSync(ws, { recursive: true, force: true });
}
done();
