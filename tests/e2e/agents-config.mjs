// docs/agents.md, run: every fenced block marked `agent=NAME file=PATH` is
// written where that agent reads it (~ is a temporary home) and parsed the
// way the agent reads it (JSON.parse; TOML with Python's tomllib; YAML with
// PyYAML); the cordon server each agent would start (command and args taken
// from the parsed file) is started and driven with the official MCP SDK
// client: the seven tools, bash inside the sandbox, and the refusal texts the
// page quotes. Each agent's tool switches are checked against the page, and
// where the agent's CLI is installed (tests/agents) its own offline health
// check (`mcp list`) is run against the files. TAP on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { ok, skip, done } from "../lib/tap.mjs";
import { mcpSdk } from "../lib/pi.mjs";

const src = process.env.CORDON_SRC;
const cordon = process.env.CORDON;
const { Client, StdioClientTransport } = await mcpSdk(src);

const text = (r) => (r?.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

// --- the page's blocks
const page = fs.readFileSync(path.join(src, "docs/agents.md"), "utf8");
const blocks = [];
for (const m of page.matchAll(/^```(\w+)([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const attrs = Object.fromEntries([...m[2].matchAll(/(\w+)=(\S+)/g)].map((a) => [a[1], a[2]]));
    blocks.push({ lang: m[1], attrs, body: m[3] });
}
const block = (agent, file) => blocks.find((b) => b.attrs.agent === agent && b.attrs.file === file);
const refusal = (tool) => blocks.find((b) => b.attrs.refusal === tool)?.body.trim();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cordon-agents-"));
fs.chmodSync(tmp, 0o755);
const home = path.join(tmp, "home");
const project = path.join(tmp, "project");
const bin = path.join(tmp, "bin");
for (const d of [home, project, bin]) fs.mkdirSync(d, { recursive: true });
fs.symlinkSync(cordon, path.join(bin, "cordon"));
fs.writeFileSync(path.join(project, "hello.txt"), "hello\n");
// Claude Code reads a project's settings at its git root; a workspace is one.
spawnSync("git", ["init", "-q", project]);
const env = { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH}`, XDG_CONFIG_HOME: path.join(home, ".config") };
delete env.XDG_CACHE_HOME;
delete env.XDG_DATA_HOME;

function place(b) {
    const rel = b.attrs.file;
    const target = rel.startsWith("~/") ? path.join(home, rel.slice(2)) : path.join(project, rel);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, b.body.replaceAll("/path/to/project", project));
    return target;
}
function parse(b) {
    if (b.lang === "json") return JSON.parse(b.body);
    const py = {
        toml: "import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))",
        yaml: "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
    }[b.lang];
    const r = spawnSync("python3", ["-c", py], { input: b.body, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${b.lang}: ${r.stderr}`);
    return JSON.parse(r.stdout);
}
function parsed(agent, file) {
    const b = block(agent, file);
    if (!b) {
        ok(false, `docs/agents.md has the ${agent} block for ${file}`);
        return null;
    }
    try {
        const v = parse(b);
        place(b);
        ok(true, `${agent}: ${file} parses as ${b.lang.toUpperCase()}`);
        return v;
    } catch (e) {
        ok(false, `${agent}: ${file} parses as ${b.lang.toUpperCase()}`, e.message);
        return null;
    }
}

// Starts the server as the agent would (command looked up in PATH, cwd the
// project) and checks the tools, the sandbox and, once, the refusals.
let refusalsChecked = false;
async function drive(agent, command, args) {
    if (typeof command !== "string" || !Array.isArray(args)) {
        ok(false, `${agent}: a command and its arguments`, { command, args });
        return;
    }
    const transport = new StdioClientTransport({ command, args, cwd: project, env, stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (d) => (stderr += d));
    const client = new Client({ name: `cordon-agents-${agent}`, version: "1.0.0" });
    try {
        await client.connect(transport);
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name).sort().join(",");
        ok(names === "bash,edit,find,grep,ls,read,sandbox_verify,write", `${agent}: \`${[command, ...args].join(" ")}\` serves cordon's tools`, names);
        let r = await client.callTool({ name: "bash", arguments: { command: "cat /proc/1/comm; cat hello.txt" } });
        ok(text(r) === "cordon-agent\nhello\n", `${agent}: bash runs in the sandbox of the project`, text(r));
        if (!refusalsChecked) {
            refusalsChecked = true;
            r = await client.callTool({ name: "write", arguments: { path: "/etc/hosts", content: "x" } });
            ok(r.isError && refusal("write") && text(r).startsWith(refusal("write")), "a write to /etc/hosts is refused with the text the page quotes", text(r));
            r = await client.callTool({ name: "bash", arguments: { command: "touch /etc/hosts" } });
            ok(r.isError && refusal("bash") && text(r).includes(refusal("bash")), "bash writing /etc/hosts ends with the line the page quotes", text(r));
        }
    } catch (e) {
        ok(false, `${agent}: the SDK client drives the server`, `${e.message}\n${stderr.slice(-1500)}`);
    } finally {
        await client.close().catch(() => {});
    }
}

const agentsBin = path.join(src, "tests/agents/node_modules/.bin");
function cli(name, args, extraEnv = {}) {
    return spawnSync(path.join(agentsBin, name), args, { cwd: project, env: { ...env, ...extraEnv }, encoding: "utf8", timeout: 120000 });
}
const have = (name) => fs.existsSync(path.join(agentsBin, name));
const noCordonPath = `${path.join(tmp, "empty")}:${process.env.PATH.split(":").filter((d) => !fs.existsSync(path.join(d, "cordon"))).join(":")}`;
fs.mkdirSync(path.join(tmp, "empty"));
const clean = () => {
    for (const d of [home, project]) {
        for (const e of fs.readdirSync(d)) if (e !== "hello.txt" && e !== ".git") fs.rmSync(path.join(d, e), { recursive: true, force: true });
    }
};

try {
    // --- generic mcpServers
    let j = parsed("generic", "mcp.json");
    if (j) await drive("generic", j.mcpServers?.cordon?.command, j.mcpServers?.cordon?.args);

    // --- Claude Code
    clean();
    j = parsed("claude", ".mcp.json");
    const local = parsed("claude", ".claude/settings.local.json");
    const settings = parsed("claude", ".claude/settings.json");
    if (j) await drive("claude", j.mcpServers?.cordon?.command, j.mcpServers?.cordon?.args);
    const claudeTools = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "NotebookEdit"];
    ok(claudeTools.every((t) => settings?.permissions?.deny?.includes(t)) && local?.enabledMcpjsonServers?.includes("cordon"),
        "claude: the settings deny Claude Code's file and shell tools; the local settings approve the project's server", { settings, local });
    if (have("claude")) {
        let r = cli("claude", ["mcp", "list"]);
        ok(r.status === 0 && /cordon: cordon mcp - ✔ Connected/.test(r.stdout), "claude mcp list: the project's server is connected", r.stdout + r.stderr);
        r = cli("claude", ["mcp", "list"], { PATH: noCordonPath });
        ok(!/✔ Connected/.test(r.stdout) && /cordon/.test(r.stdout), "claude mcp list: without cordon on PATH it is not (the check can fail)", r.stdout);
        fs.rmSync(path.join(project, ".mcp.json"));
        const reg = blocks.find((b) => b.attrs.agent === "claude" && b.attrs.run === "register");
        r = spawnSync("bash", ["-c", reg.body], { cwd: project, env: { ...env, PATH: `${agentsBin}:${env.PATH}` }, encoding: "utf8", timeout: 60000 });
        const user = JSON.parse(fs.readFileSync(path.join(home, ".claude.json"), "utf8")).mcpServers?.cordon;
        ok(r.status === 0 && user?.command === "cordon" && JSON.stringify(user?.args) === '["mcp"]', "claude mcp add --scope user writes cordon mcp into ~/.claude.json", r.stderr + JSON.stringify(user));
        r = cli("claude", ["mcp", "list"]);
        ok(r.status === 0 && /cordon: cordon mcp - ✔ Connected/.test(r.stdout), "claude mcp list: the user-scope server is connected", r.stdout + r.stderr);
        if (user) await drive("claude (user scope)", user.command, user.args);
    } else skip("claude mcp list", "Claude Code is not installed (tests/agents)");

    // --- Codex CLI
    clean();
    const t = parsed("codex", "~/.codex/config.toml");
    if (t) await drive("codex", t.mcp_servers?.cordon?.command, t.mcp_servers?.cordon?.args);
    ok(t?.features?.shell_tool === false && t?.features?.view_image === false && t?.sandbox_mode === "read-only",
        "codex: the shell and image reader are off, Codex's sandbox read-only", t);
    if (have("codex")) {
        let r = cli("codex", ["mcp", "list"]);
        ok(r.status === 0 && /^cordon\s+cordon\s+mcp\s.*enabled/m.test(r.stdout), "codex mcp list: cordon mcp, enabled", r.stdout + r.stderr);
        // The tools Codex gives the model (code mode lists them in its exec
        // tool's description), with the page's file and without it.
        const modelTools = (extra = []) => {
            const p = cli("codex", ["debug", "prompt-input", ...extra]);
            try {
                const items = JSON.parse(p.stdout);
                const all = items.filter((i) => i.type === "additional_tools").flatMap((i) => i.tools.flatMap((ns) => ns.tools ?? [ns]));
                const names = all.map((x) => x.name);
                for (const x of all) for (const m of (x.description ?? "").matchAll(/^### `([^`]+)`/gm)) names.push(m[1]);
                return names;
            } catch (e) {
                return [`unparsable: ${e.message}: ${p.stderr.slice(-500)}`];
            }
        };
        const withFile = modelTools();
        const without = modelTools(["-c", "features.shell_tool=true", "-c", "features.view_image=true"]);
        ok(["exec_command", "write_stdin", "view_image"].every((x) => without.includes(x) && !withFile.includes(x)) && withFile.includes("apply_patch"),
            "codex debug prompt-input: the page's file takes exec_command, write_stdin and view_image from the model; apply_patch stays, as the page says",
            { withFile, without });
    } else skip("codex mcp list", "Codex CLI is not installed (tests/agents)");

    // --- Gemini CLI
    clean();
    j = parsed("gemini", ".gemini/settings.json");
    parsed("gemini", "~/.gemini/trustedFolders.json");
    const policy = parsed("gemini", "~/.gemini/policies/cordon.toml");
    if (j) await drive("gemini", j.mcpServers?.cordon?.command, j.mcpServers?.cordon?.args);
    const denied = policy?.rule?.filter((r) => r.decision === "deny").flatMap((r) => r.toolName) ?? [];
    const geminiTools = ["run_shell_command", "read_file", "read_many_files", "write_file", "replace", "list_directory", "glob", "grep_search"];
    ok(geminiTools.every((x) => denied.includes(x)), "gemini: the policy denies Gemini CLI's file and shell tools", denied);
    if (have("gemini")) {
        // The names are Gemini's own: each is a tool name in its bundle.
        const bundle = path.join(src, "tests/agents/node_modules/@google/gemini-cli/bundle");
        const defined = new Set();
        for (const f of fs.readdirSync(bundle).filter((f) => f.endsWith(".js")))
            for (const m of fs.readFileSync(path.join(bundle, f), "utf8").matchAll(/_TOOL_NAME = "([a-z_]+)"/g)) defined.add(m[1]);
        ok(denied.every((x) => defined.has(x)), "gemini: every denied name is one of Gemini CLI's tools", denied.filter((x) => !defined.has(x)));
        const r = cli("gemini", ["mcp", "list"]);
        ok(r.status === 0 && /✓ cordon: cordon mcp \(stdio\) - Connected/.test(r.stdout + r.stderr), "gemini mcp list: connected", r.stdout + r.stderr);
    } else skip("gemini mcp list", "Gemini CLI is not installed (tests/agents)");

    // --- opencode
    clean();
    j = parsed("opencode", "opencode.json");
    const oc = j?.mcp?.cordon;
    ok(oc?.type === "local" && Array.isArray(oc?.command), "opencode: a local server with the command as one array", oc);
    if (oc) await drive("opencode", oc.command[0], oc.command.slice(1));
    ok(["bash", "edit", "read", "glob", "grep", "list"].every((k) => j?.permission?.[k] === "deny"), "opencode: its file and shell tools are denied", j?.permission);
    if (have("opencode")) {
        const r = cli("opencode", ["mcp", "list"]);
        ok(r.status === 0 && /✓\s+cordon\s+\S*connected/.test(r.stdout.replace(/\x1b\[[0-9;]*m/g, "")), "opencode mcp list: connected (the file passed its schema)", r.stdout + r.stderr);
    } else skip("opencode mcp list", "opencode is not installed (tests/agents)");

    // --- Cursor
    clean();
    j = parsed("cursor", ".cursor/mcp.json");
    if (j) await drive("cursor", j.mcpServers?.cordon?.command, j.mcpServers?.cordon?.args);
    const cli_ = parsed("cursor", ".cursor/cli.json");
    ok(["Shell(*)", "Read(**)", "Write(**)"].every((p) => cli_?.permissions?.deny?.includes(p)), "cursor: cursor-agent's shell, read and write are denied", cli_);

    // --- goose
    clean();
    const y = parsed("goose", "~/.config/goose/config.yaml");
    const g = y?.extensions?.cordon;
    ok(g?.type === "stdio" && g?.enabled === true, "goose: cordon is an enabled stdio extension", g);
    if (g) await drive("goose", g.cmd, g.args);
    ok(y?.extensions?.developer?.enabled === false && y?.extensions?.developer?.type === "builtin", "goose: the developer extension (shell, editor) is off", y?.extensions?.developer);

    // --- wrapping: the user-settings file is valid as cordon reads it
    clean();
    const w = parsed("wrap", "~/.config/cordon/config.toml");
    ok(w?.env?.mode === "allowlist" && w?.network?.mode === "allowlist" && w?.mounts?.[0]?.readonly === false,
        "wrap: the env and network allowlists and a writable mount", w);
    fs.mkdirSync(path.join(home, ".pi"), { recursive: true });
    const wfile = path.join(home, ".config/cordon/config.toml");
    fs.writeFileSync(wfile, block("wrap", "~/.config/cordon/config.toml").body.replaceAll("/home/you", home));
    const chk = spawnSync(cordon, ["config", "check", "--as", "user", wfile], { cwd: project, env, encoding: "utf8" });
    ok(chk.status === 0, "wrap: cordon config check --as user accepts the file", chk.stdout + chk.stderr);
} catch (e) {
    ok(false, "no exception", e.stack);
} finally {
    fs.rmSync(tmp, { recursive: true, force: true });
}
done();
