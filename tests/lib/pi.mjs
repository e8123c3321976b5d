// What the end-to-end tests under Node (tests/e2e/*.mjs) load from
// tests/pi/node_modules (pi, its jiti, the MCP SDK), each skipping the whole
// test (`1..0 # SKIP ...`) when it is not installed. Imported as
// "../lib/pi.mjs".
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { skipAll } from "./tap.mjs";
import { q } from "./tmux.mjs";

const modules = (src) => path.join(src, "tests/pi/node_modules");

// pi's command.
export function piCommand(src) {
    const bin = path.join(modules(src), ".bin/pi");
    if (!fs.existsSync(bin)) skipAll("pi is not installed (scripts/bootstrap.sh --test)");
    return bin;
}

// The official MCP TypeScript SDK's client side: the exports of
// client/index.js (Client), client/stdio.js (StdioClientTransport) and
// types.js (the schemas) in one object.
export async function mcpSdk(src) {
    const sdk = path.join(modules(src), "@modelcontextprotocol/sdk/dist/esm");
    if (!fs.existsSync(sdk)) skipAll("@modelcontextprotocol/sdk is not installed (scripts/bootstrap.sh --test)");
    const load = (file) => import(pathToFileURL(path.join(sdk, file)).href);
    return { ...(await load("types.js")), ...(await load("client/index.js")), ...(await load("client/stdio.js")) };
}

// The cordon pi extension's module (integrations/pi/index.ts), loaded with
// pi's jiti and pi's aliases, as pi loads it.
export async function piExtensionModule(src) {
    const mods = modules(src);
    if (!fs.existsSync(path.join(mods, "jiti"))) skipAll("pi is not installed (scripts/bootstrap.sh --test)");
    const require = createRequire(path.join(mods, "x.js"));
    const { createJiti } = require("jiti");
    const jiti = createJiti(import.meta.url, {
        alias: {
            "@mariozechner/pi-coding-agent": path.join(mods, "@mariozechner/pi-coding-agent/dist/index.js"),
            "@mariozechner/pi-tui": path.join(mods, "@mariozechner/pi-tui/dist/index.js"),
            typebox: createRequire(path.join(mods, "@mariozechner/pi-coding-agent/dist/index.js")).resolve("typebox"),
        },
    });
    return jiti.import(path.join(src, "integrations/pi/index.ts"));
}

// A script that runs pi (piBin) in its interactive TUI, for a terminal in
// tmux (tests/lib/tmux.mjs): in `ws`, offline, with the scripted model
// (tests/e2e/pi/faux.ts, steps from `script`), the cordon extension
// (CORDON_BIN=cordon) and the seven tools, `env` (name → value) added to
// its environment. pi's stderr goes to tmp/pi.stderr, its exit status to
// `exitFile`. Returns { runner, exitFile }.
export function piTuiRunner(src, { piBin, tmp, ws, agentDir, cordon, script, env = {} }) {
    const exitFile = path.join(tmp, "pi-exit");
    const runner = path.join(tmp, "run.sh");
    const piArgs = ["--offline", "--no-session", "-ne", "-e", path.join(src, "tests/e2e/pi/faux.ts"),
        "-e", path.join(src, "integrations/pi"), "--provider", "faux", "--model", "faux-1",
        "--tools", "read,write,edit,ls,find,grep,bash"];
    const vars = { PI_OFFLINE: "1", PI_CODING_AGENT_DIR: agentDir, CORDON_BIN: cordon, CORDON_FAUX_SCRIPT: script, ...env };
    fs.writeFileSync(runner, [
        `cd ${q(ws)}`,
        // A user's terminal, not a CI job's: with CI=true in the environment
        // (as .ci/run sets it) pi's TUI draws the footer without bold, which
        // tests/e2e/pi-tui.mjs looks for (seen there; cause not traced).
        "unset CI",
        `export ${Object.entries(vars).map(([k, v]) => `${k}=${q(v)}`).join(" ")}`,
        `${q(piBin)} ${piArgs.map(q).join(" ")} 2>${q(path.join(tmp, "pi.stderr"))}`,
        `echo $? > ${q(exitFile)}`,
        "",
    ].join("\n"));
    return { runner, exitFile };
}
