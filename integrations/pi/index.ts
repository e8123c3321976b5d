/**
 * cordon for pi: runs pi's seven tools (read, write, edit, ls, find, grep,
 * bash) and the user's `!` commands inside a cordon sandbox through
 * `cordon mcp`. Host side, inside the pi process (trusted, the user's).
 *
 * - Fails closed: when cordon is missing or fails, the seven tools return an
 *   error naming the reason; pi keeps working otherwise.
 * - Keeps pi's tool schemas and renderers (pi's own definitions), adding one
 *   optional parameter, execution_target ("sandbox" | "host").
 * - Host execution of a call needs the user's approval of that exact call:
 *   cordon asks through MCP elicitation, answered here with ctx.ui.confirm
 *   (also whether to allow a refused network destination for the session);
 *   without a UI (print/JSON mode) the elicitation capability is not
 *   declared, so cordon refuses.
 * - /cordon status|on|off|verify|config; a footer status.
 * - Review mode (workspace_mode = "review", docs/review.md): the footer
 *   counts the pending changes; /cordon review shows the diff in a viewer
 *   and applies all or some of them after a confirmation; /cordon rewind N
 *   returns the sandbox's workspace to its state after tool call N. These
 *   are cordon's custom requests, made by this code for the user: no tool
 *   the model can call applies, discards or rewinds.
 *
 * A small hand-written MCP client (JSON-RPC, one message per line) over the
 * child's stdio: no dependency, no network at run time.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import {
	createBashToolDefinition,
	createEditToolDefinition,
	createFindToolDefinition,
	createGrepToolDefinition,
	createLsToolDefinition,
	createReadToolDefinition,
	createWriteToolDefinition,
} from "@mariozechner/pi-coding-agent";
import { matchesKey, truncateToWidth } from "@mariozechner/pi-tui";
import { Type } from "typebox";

type Json = any;
const TOOLS = ["read", "write", "edit", "ls", "find", "grep", "bash"] as const;

class McpClient {
	private child: ChildProcessWithoutNullStreams;
	private buf = "";
	private nextId = 1;
	private waiting = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
	private progress = new Map<string, (message: string) => void>();
	stderr = "";
	closed = false;
	onRequest: (method: string, params: Json) => Promise<Json> = async () => {
		throw new Error("unsupported");
	};

	constructor(command: string, args: string[], cwd: string) {
		this.child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
		this.child.stdout.setEncoding("utf8");
		this.child.stdout.on("data", (d: string) => this.onData(d));
		this.child.stderr.on("data", (d: Buffer) => {
			this.stderr = (this.stderr + d.toString()).slice(-4000);
		});
		const fail = (why: string) => {
			if (this.closed) return;
			this.closed = true;
			for (const w of this.waiting.values()) w.reject(new Error(why));
			this.waiting.clear();
		};
		this.child.on("error", (e) => fail(`cannot start ${command}: ${e.message}`));
		this.child.on("exit", (code, signal) =>
			fail(`cordon mcp exited (${signal ?? code})${this.stderr ? `: ${this.stderr.trim().split("\n").pop()}` : ""}`),
		);
		this.child.stdin.on("error", () => {});
	}

	private send(msg: Json) {
		if (!this.closed) this.child.stdin.write(`${JSON.stringify(msg)}\n`);
	}

	private onData(d: string) {
		this.buf += d;
		for (let i = this.buf.indexOf("\n"); i >= 0; i = this.buf.indexOf("\n")) {
			const line = this.buf.slice(0, i);
			this.buf = this.buf.slice(i + 1);
			let msg: Json;
			try {
				msg = JSON.parse(line);
			} catch {
				continue;
			}
			if (msg.method && msg.id !== undefined) {
				this.onRequest(msg.method, msg.params).then(
					(result) => this.send({ jsonrpc: "2.0", id: msg.id, result }),
					(e) => this.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: String(e?.message ?? e) } }),
				);
			} else if (msg.method === "notifications/progress") {
				this.progress.get(String(msg.params?.progressToken))?.(msg.params?.message ?? "");
			} else if (msg.id !== undefined) {
				const w = this.waiting.get(msg.id);
				if (!w) continue;
				this.waiting.delete(msg.id);
				if (msg.error) w.reject(new Error(msg.error.message));
				else w.resolve(msg.result);
			}
		}
	}

	request(method: string, params: Json = {}, opts: { signal?: AbortSignal; onProgress?: (m: string) => void } = {}): Promise<Json> {
		if (this.closed) return Promise.reject(new Error("cordon mcp is not running"));
		const id = this.nextId++;
		if (opts.onProgress) {
			params = { ...params, _meta: { progressToken: `p${id}` } };
			this.progress.set(`p${id}`, opts.onProgress);
		}
		return new Promise<Json>((resolve, reject) => {
			const done = () => {
				this.progress.delete(`p${id}`);
				opts.signal?.removeEventListener("abort", onAbort);
			};
			const onAbort = () => {
				// MCP cancellation: cordon kills the call and sends no response.
				this.waiting.delete(id);
				this.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "aborted" } });
				done();
				reject(new Error("aborted"));
			};
			this.waiting.set(id, {
				resolve: (v) => (done(), resolve(v)),
				reject: (e) => (done(), reject(e)),
			});
			if (opts.signal?.aborted) return onAbort();
			opts.signal?.addEventListener("abort", onAbort, { once: true });
			this.send({ jsonrpc: "2.0", id, method, params });
		});
	}

	notify(method: string, params: Json = {}) {
		this.send({ jsonrpc: "2.0", method, params });
	}

	stop() {
		if (this.closed) return;
		this.closed = true;
		this.child.stdin.end();
		const timer = setTimeout(() => this.child.kill("SIGKILL"), 3000);
		this.child.on("exit", () => clearTimeout(timer));
		this.child.kill("SIGTERM");
	}
}

// Characters that do not show as themselves (src/util/escape.c has the C
// twin and the reasons): C0, DEL, C1, format characters (bidi controls,
// zero-width, tags), separators, every space but U+0020, fillers, variation
// selectors, private use, surrogates, noncharacters, unassigned.
const HIDDEN_RANGES: [number, number][] = [
	[0x00a0, 0x00a0], [0x00ad, 0x00ad], [0x034f, 0x034f], [0x061c, 0x061c],
	[0x115f, 0x1160], [0x1680, 0x1680], [0x17b4, 0x17b5], [0x180b, 0x180f],
	[0x2000, 0x200f], [0x2028, 0x202f], [0x205f, 0x206f], [0x2800, 0x2800],
	[0x3000, 0x3000], [0x3164, 0x3164], [0xd800, 0xdfff], [0xe000, 0xf8ff],
	[0xfdd0, 0xfdef], [0xfe00, 0xfe0f], [0xfeff, 0xfeff], [0xffa0, 0xffa0],
	[0xfff0, 0xfffb], [0x1bca0, 0x1bca3], [0x1d173, 0x1d17a], [0xe0000, 0xe0fff],
	[0xf0000, 0x10ffff],
];
const HIDDEN_CATEGORY = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

export function isHiddenCodePoint(cp: number): boolean {
	if (cp < 0x20 || cp === 0x7f || (cp >= 0x80 && cp <= 0x9f)) return true;
	if (cp < 0x7f) return false;
	if (cp > 0x10ffff || (cp & 0xfffe) === 0xfffe) return true;
	if (HIDDEN_RANGES.some(([a, b]) => cp >= a && cp <= b)) return true;
	return HIDDEN_CATEGORY.test(String.fromCodePoint(cp));
}

/** The approval text with every hidden character escaped (\x1b, \u202e,
 * \u{e0041}; a lone surrogate as \udXXX) and how many there were.
 * keepLayout: newline and tab pass; backslash: "\" becomes "\\". */
export function escapeHidden(s: string, opts: { keepLayout?: boolean; backslash?: boolean } = {}): { text: string; count: number } {
	let text = "";
	let count = 0;
	for (const ch of s) {
		const cp = ch.codePointAt(0)!;
		if (opts.keepLayout && (ch === "\n" || ch === "\t")) text += ch;
		else if (isHiddenCodePoint(cp)) {
			count++;
			const hex = cp.toString(16);
			text += cp < 0x20 || cp === 0x7f ? `\\x${hex.padStart(2, "0")}` : cp <= 0xffff ? `\\u${hex.padStart(4, "0")}` : `\\u{${hex}}`;
		} else if (ch === "\\" && opts.backslash) text += "\\\\";
		else text += ch;
	}
	return { text, count };
}

/** What the approval dialog shows: cordon's prompt (which escapes already),
 * escaped again here so nothing that reaches the dialog shows raw. */
export function approvalText(message: string): string {
	const { text, count } = escapeHidden(message, { keepLayout: true });
	return count ? `NOTE: this prompt contains ${count} invisible or control character${count === 1 ? "" : "s"}, shown escaped.\n\n${text}` : text;
}

/** One line of `/cordon review`'s change list: the path escaped (the
 * agent chose it), conflicts and refusals named. */
export function changeLine(c: Json): string {
	const p = (x: string) => escapeHidden(String(x), { backslash: true }).text;
	let line = `${c.kind}  ${p(c.path)}`;
	if (c.from) line += ` (from ${p(c.from)})`;
	if (c.conflict) line += " [conflict: the host changed it since the session started]";
	if (c.refused) line += ` [never applied: ${c.refused}]`;
	return line;
}

/** `/cordon review`'s viewer: the change list and the unified diff, the
 * diff's lines coloured; up/down/PgUp/PgDn (or j/k/space) scroll, Enter
 * goes on to what to apply, Escape (or q) closes, nothing applied. */
class ReviewViewer {
	private top = 0;
	constructor(
		private title: string,
		private body: string[],
		private rows: () => number,
		private theme: any,
		private done: (go: boolean) => void,
		private redraw: () => void,
	) {}
	private height() {
		return Math.max(5, this.rows() - 8);
	}
	private paint(line: string): string {
		const t = this.theme;
		if (!t) return line;
		if (line.startsWith("+++ ") || line.startsWith("--- ") || line.startsWith("diff ")) return t.bold(line);
		if (line.startsWith("+")) return t.fg("toolDiffAdded", line);
		if (line.startsWith("-")) return t.fg("toolDiffRemoved", line);
		if (line.startsWith("@@")) return t.fg("accent", line);
		return t.fg("toolDiffContext", line);
	}
	render(width: number): string[] {
		const h = this.height();
		const shown = this.body.slice(this.top, this.top + h).map((l) => truncateToWidth(this.paint(l.replace(/\t/g, "    ")), width));
		const end = Math.min(this.body.length, this.top + h);
		const help = `lines ${this.top + 1}-${end} of ${this.body.length} · ↑↓ PgUp PgDn scroll · Enter: apply… · Esc: close, nothing applied`;
		return [truncateToWidth(this.theme ? this.theme.bold(this.title) : this.title, width), ...shown, truncateToWidth(this.theme ? this.theme.fg("muted", help) : help, width)];
	}
	handleInput(data: string) {
		const h = this.height();
		const max = Math.max(0, this.body.length - h);
		if (matchesKey(data, "escape") || data === "q") return this.done(false);
		if (matchesKey(data, "enter") || matchesKey(data, "return")) return this.done(true);
		if (matchesKey(data, "down") || data === "j") this.top = Math.min(max, this.top + 1);
		else if (matchesKey(data, "up") || data === "k") this.top = Math.max(0, this.top - 1);
		else if (matchesKey(data, "pageDown") || data === " ") this.top = Math.min(max, this.top + h);
		else if (matchesKey(data, "pageUp")) this.top = Math.max(0, this.top - h);
		else return;
		this.redraw();
	}
	invalidate() {}
}

export default function cordon(pi: ExtensionAPI) {
	const command = process.env.CORDON_BIN || "cordon";
	let client: McpClient | undefined;
	let blocked = "cordon has not started yet";
	let state = "starting";
	let status: Json = {};
	let ui: ExtensionContext["ui"] | undefined;
	let lastCheckpoint = 0; // review mode: the checkpoint the last tool call ended with

	// Loud (bold, the theme's error colour) whenever tools run on the host.
	const paint = (color: "success" | "muted" | "warning" | "error", text: string, bold = false) => {
		try {
			const t = ui?.theme;
			return t ? t.fg(color, bold ? t.bold(text) : text) : text;
		} catch {
			return text;
		}
	};
	const footer = () => {
		// Review mode: how many changes wait for `/cordon review`.
		const pending =
			status.workspaceMode === "review" && typeof status.pendingChanges === "number"
				? ` · review: ${status.pendingChanges} pending`
				: "";
		const text =
			state === "sandboxed"
				? paint(
						"success",
						// backend = "auto": which backend it chose (status.backendReason)
						(String(status.backendReason ?? "").startsWith("auto chose")
							? `cordon: sandboxed (${status.backend})`
							: "cordon: sandboxed") + pending,
					)
				: state === "off"
					? paint("error", "cordon: HOST", true)
					: state === "host fallback"
						? paint("error", "cordon: host fallback", true)
						: state === "starting"
							? paint("muted", "cordon: starting")
							: paint("warning", "cordon: blocked", true);
		ui?.setStatus("cordon", text);
	};
	const setState = (s: string) => {
		state = s;
		footer();
	};

	async function start(ctx: ExtensionContext) {
		ui = ctx.hasUI ? ctx.ui : undefined;
		setState("starting");
		const c = new McpClient(command, ["mcp"], ctx.cwd);
		c.onRequest = async (method, params) => {
			if (method !== "elicitation/create") throw new Error(`unsupported request ${method}`);
			// Only reachable with a UI: without one, elicitation is not declared.
			if (!ctx.hasUI) return { action: "decline" };
			// A refused network destination, to allow for the rest of the session.
			if (params?._meta?.["cordon/network"]) {
				const allow = await ctx.ui.confirm("cordon: allow this network destination for the session?", approvalText(String(params?.message ?? "")));
				return allow ? { action: "accept", content: { allow: true } } : { action: "decline" };
			}
			const yes = await ctx.ui.confirm("cordon: run on the HOST, outside the sandbox?", approvalText(String(params?.message ?? "")));
			return yes ? { action: "accept", content: { approve: true } } : { action: "decline" };
		};
		try {
			await c.request("initialize", {
				protocolVersion: "2025-06-18",
				capabilities: ctx.hasUI ? { elicitation: { form: {} } } : {},
				clientInfo: { name: "cordon-pi", version: "0.1.0" },
			});
			c.notify("notifications/initialized");
			client = c;
			await refresh();
		} catch (e: any) {
			c.stop();
			client = undefined;
			blocked = e?.message ?? String(e);
			setState("blocked");
			ctx.ui.notify(`cordon: tools are blocked: ${blocked}`, "error");
		}
	}

	async function refresh() {
		if (!client) return;
		status = await client.request("cordon/status");
		blocked = status.reason ?? "";
		setState(status.state);
	}

	// Known once cordon answered; until then (or when it failed) every
	// tool counts as routed, so it is blocked rather than run unsandboxed.
	const routed = (name: string) => !Array.isArray(status.routeTools) || status.routeTools.includes(name);

	function textOf(result: Json): string {
		return (result?.content ?? [])
			.filter((c: Json) => c.type === "text")
			.map((c: Json) => c.text)
			.join("");
	}

	async function call(name: string, args: Json, signal?: AbortSignal, onProgress?: (m: string) => void): Promise<Json> {
		if (!client) throw new Error(`cordon: the ${name} tool is blocked: ${blocked}`);
		let result: Json;
		try {
			result = await client.request("tools/call", { name, arguments: args }, { signal, onProgress });
		} catch (e: any) {
			if (signal?.aborted) throw new Error(name === "bash" ? "Command aborted" : "Operation aborted");
			throw new Error(`cordon: the ${name} tool is blocked: ${e?.message ?? e}`);
		}
		const s = result?._meta?.["cordon/state"];
		if (s && s !== state) setState(s);
		// Review mode: the call may have changed the pending count.
		if (status.workspaceMode === "review") refresh().catch(() => {});
		const ck = result?._meta?.["cordon/checkpoint"];
		if (typeof ck === "number") lastCheckpoint = ck;
		return result;
	}

	const definitions: Record<string, any> = {
		read: createReadToolDefinition,
		write: createWriteToolDefinition,
		edit: createEditToolDefinition,
		ls: createLsToolDefinition,
		find: createFindToolDefinition,
		grep: createGrepToolDefinition,
		bash: createBashToolDefinition,
	};
	for (const name of TOOLS) {
		const def = definitions[name](process.cwd());
		const parameters = Type.Object(
			{
				...def.parameters.properties,
				execution_target: Type.Optional(
					Type.Union([Type.Literal("sandbox"), Type.Literal("host")], {
						description:
							'Omit to run in the sandbox. "host" runs this one call outside the sandbox after the user approves it.',
					}),
				),
			},
		);
		pi.registerTool({
			...def,
			parameters,
			async execute(id: string, params: Json, signal?: AbortSignal, onUpdate?: (u: Json) => void, ctx?: ExtensionContext) {
				if (!routed(name)) {
					// Not in route_tools: cordon does not run it; pi's own tool does.
					const { execution_target: _target, ...rest } = params ?? {};
					return def.execute(id, rest, signal, onUpdate, ctx);
				}
				const progress =
					name === "bash" && onUpdate
						? (m: string) => onUpdate({ content: m ? [{ type: "text", text: m }] : [], details: undefined })
						: undefined;
				const result = await call(name, params, signal, progress);
				if (result.isError) throw new Error(textOf(result));
				return { content: result.content, details: result.structuredContent };
			},
		});
	}

	// The user's `!` commands run in the sandbox too.
	pi.on("user_bash", () => (!routed("bash") ? undefined : {
		operations: {
			async exec(commandLine: string, _cwd: string, options: { onData: (d: Buffer) => void; signal?: AbortSignal; timeout?: number }) {
				let shown = "";
				const emit = (text: string) => {
					// Progress carries the output so far: pass on what is new.
					if (text.startsWith(shown)) {
						options.onData(Buffer.from(text.slice(shown.length)));
						shown = text;
					}
				};
				let result: Json;
				try {
					result = await call("bash", { command: commandLine, ...(options.timeout ? { timeout: options.timeout } : {}) }, options.signal, emit);
				} catch (e: any) {
					if (options.signal?.aborted) return { exitCode: null };
					options.onData(Buffer.from(`${e?.message ?? e}\n`));
					return { exitCode: 1 };
				}
				let text = textOf(result);
				let exitCode: number | null = 0;
				const m = /\n\nCommand exited with code (\d+)$/.exec(text);
				if (m) {
					exitCode = Number(m[1]);
					text = text.slice(0, m.index);
				} else if (result.isError) {
					exitCode = /timed out|aborted/.test(text) ? null : 1;
				}
				if (text === "(no output)") text = "";
				emit(text);
				if (!text.startsWith(shown)) options.onData(Buffer.from(text));
				return { exitCode };
			},
		},
	}));

	pi.on("session_start", async (_event, ctx) => {
		await start(ctx);
	});

	// pi's discovered skills, so cordon can serve their files from the host.
	pi.on("before_agent_start", async (event) => {
		const skills = (event.systemPromptOptions?.skills ?? []).map((s: Json) => s.filePath).filter(Boolean);
		if (client) await client.request("cordon/setSkills", { paths: skills }).catch(() => {});
	});

	pi.on("session_shutdown", async () => {
		client?.stop();
		client = undefined;
		blocked = "cordon stopped with the session";
	});

	type Say = (m: string, level?: "info" | "warning" | "error") => void;
	const notReview = () => `cordon: this session is not in review mode (workspace_mode = "review", docs/review.md)`;

	// /cordon review: the change list and the diff, then all or some applied
	// after the user confirms. The paths go back to cordon as it sent them;
	// only what is shown is escaped.
	async function review(ctx: ExtensionContext, say: Say) {
		await refresh();
		if (status.workspaceMode !== "review") return say(notReview(), "warning");
		// The session runs: cordon shows, and applies, exactly this checkpoint
		// (what the sandbox wrote after it is not what the user reviewed).
		const { changes, checkpoint } = await client!.request("cordon/reviewChanges");
		if (!changes.length) return say("cordon review: no pending changes");
		const { diff, truncated, bytes } = await client!.request("cordon/reviewDiff");
		const list = changes.map(changeLine);
		const body = [...list, "", ...String(diff).split("\n").map((l) => escapeHidden(l, { keepLayout: true }).text)];
		if (truncated) body.push(`(the diff is ${bytes} bytes: the first 1 MiB is shown; \`cordon diff ${status.sandbox}\` shows it all)`);
		const title = `cordon review: ${changes.length} pending change${changes.length === 1 ? "" : "s"} in sandbox ${status.sandbox}`;
		if (!ctx.hasUI) return say(`${title}\n${body.join("\n")}`);
		const go = await ctx.ui.custom<boolean>((tui, theme, _kb, done) =>
			new ReviewViewer(title, body, () => tui.terminal.rows, theme, done, () => tui.requestRender()),
		);
		if (!go) return say(`cordon review: nothing applied; ${changes.length} change(s) still pending`);
		const applicable = changes.filter((c: Json) => !c.refused && c.kind !== "?");
		const ALL = `Apply all ${applicable.length} change${applicable.length === 1 ? "" : "s"}`;
		const SOME = "Choose which to apply…";
		const what = await ctx.ui.select("cordon review: apply what to the workspace?", [ALL, SOME, "Nothing (keep them pending)"]);
		let chosen: Json[] = [];
		if (what === ALL) chosen = applicable;
		else if (what === SOME) {
			const picked = new Set<number>();
			for (;;) {
				const opts = applicable.map((c: Json, i: number) => `${picked.has(i) ? "[x]" : "[ ]"} ${changeLine(c)}`);
				const DONE = `Apply the ${picked.size} chosen`;
				const pick = await ctx.ui.select("cordon review: choose the changes (Enter toggles)", [DONE, ...opts, "Cancel"]);
				if (pick === undefined || pick === "Cancel") break;
				if (pick === DONE) {
					chosen = applicable.filter((_c: Json, i: number) => picked.has(i));
					break;
				}
				const i = opts.indexOf(pick);
				if (i >= 0) picked.has(i) ? picked.delete(i) : picked.add(i);
			}
		}
		if (!chosen.length) return say(`cordon review: nothing applied; ${changes.length} change(s) still pending`);
		const yes = await ctx.ui.confirm(
			`cordon: apply ${chosen.length} change${chosen.length === 1 ? "" : "s"} to the workspace on the host?`,
			chosen.map(changeLine).join("\n"),
		);
		if (!yes) return say(`cordon review: nothing applied; ${changes.length} change(s) still pending`);
		const results: Json[] = [];
		if (what === ALL) results.push(...(await client!.request("cordon/reviewApply", { checkpoint })).results);
		else
			for (let i = 0; i < chosen.length; i += 64)
				results.push(
					...(await client!.request("cordon/reviewApply", { checkpoint, paths: chosen.slice(i, i + 64).map((c: Json) => c.path) })).results,
				);
		await refresh();
		const p = (x: string) => escapeHidden(String(x), { backslash: true }).text;
		const lines = results.map((r: Json) => `${r.outcome}: ${p(r.path)}${r.reason ? ` (${r.reason})` : ""}`);
		const bad = results.filter((r: Json) => r.outcome !== "applied").length;
		say(`cordon review: ${results.length - bad} applied${bad ? `, ${bad} not` : ""}; ${status.pendingChanges ?? "?"} pending\n${lines.join("\n")}`, bad ? "warning" : "info");
	}

	// /cordon rewind N: the sandbox's workspace as it was after tool call N
	// (0: before the first). The sandbox restarts: its processes end.
	async function rewind(ctx: ExtensionContext, arg: string | undefined, say: Say) {
		await refresh();
		if (status.workspaceMode !== "review") return say(notReview(), "warning");
		if (!arg || !/^\d{1,9}$/.test(arg))
			return say(`usage: /cordon rewind N: the workspace as it was after tool call N (0: before the first; the last call was ${lastCheckpoint || "none yet"})`, "error");
		const n = Number(arg);
		if (ctx.hasUI) {
			const yes = await ctx.ui.confirm(
				`cordon: rewind the sandbox to after tool call ${n}?`,
				`The sandbox's workspace returns to its state after call ${n}${n === 0 ? " (before the first)" : ""}; what later calls changed is no longer pending.\n` +
					"The sandbox restarts: processes running in it end (they are not rewound).\nThe host's files are not touched.",
			);
			if (!yes) return say("cordon: not rewound");
		}
		status = await client!.request("cordon/reviewRewind", { to: n });
		blocked = status.reason ?? "";
		setState(status.state);
		say(`cordon: rewound sandbox ${status.sandbox} to after call ${n}; it restarted (its processes ended); ${status.pendingChanges ?? "?"} change(s) pending`);
	}

	pi.registerCommand("cordon", {
		description: "cordon sandbox: status | on | off | verify | config | review | rewind N",
		// None once a whole subcommand is typed: pi's Enter on an argument
		// completion only applies it, so `/cordon off` + Enter would need a
		// second Enter to run.
		getArgumentCompletions: (prefix: string) => {
			const subs = ["status", "on", "off", "verify", "config", "review", "rewind"];
			if (subs.includes(prefix.trim())) return null;
			return subs.filter((v) => v.startsWith(prefix)).map((v) => ({ value: v, label: v }));
		},
		handler: async (args: string, ctx) => {
			const sub = (args || "status").trim().split(/\s+/)[0];
			const say = (m: string, level: "info" | "warning" | "error" = "info") => ctx.ui.notify(m, level);
			if (!client && sub !== "status") return say(`cordon is not running: ${blocked}`, "error");
			try {
				if (sub === "status") {
					if (client) await refresh();
					// The words of `cordon ls` (src/cli/cmd_state.c) for the same session.
					const lines = [
						`state: ${state}${blocked ? ` (${blocked})` : ""}`,
						`sandbox: ${status.sandbox ?? "none"}`,
						`workspace: ${status.workspace ?? "?"}`,
						`backend: ${status.backend ?? "?"}${status.backendReason ? ` (${status.backendReason})` : ""}`,
					];
					if (status.log) lines.push(`log: ${status.log}`);
					if (status.sandbox) lines.push(`attach: running: its client holds it (this pi); \`cordon verify ${status.sandbox}\` audits it`);
					say(lines.join("\n"), state === "sandboxed" ? "info" : "warning");
				} else if (sub === "on" || sub === "off") {
					status = await client!.request("cordon/setMode", { mode: sub });
					blocked = status.reason ?? "";
					setState(status.state);
					if (sub === "off") say("cordon is OFF: tools run on the host, unsandboxed", "warning");
					else if (state === "sandboxed") say(`cordon is ON: tools run in the sandbox ${status.sandbox ?? ""} (${status.backend ?? "?"})`.replace("  ", " "), "info");
					else say(`cordon is not back on: ${state}${blocked ? ` (${blocked})` : ""}`, "error");
				} else if (sub === "verify") {
					const { tools } = await client!.request("tools/list");
					if (!tools.some((t: Json) => t.name === "sandbox_verify")) return say("cordon: verify is not available in this cordon", "warning");
					const r = await client!.request("tools/call", { name: "sandbox_verify", arguments: {} });
					say(textOf(r), r.isError ? "error" : "info");
				} else if (sub === "config") {
					await refresh();
					say(JSON.stringify(status, null, 2));
				} else if (sub === "review") {
					await review(ctx, say);
				} else if (sub === "rewind") {
					await rewind(ctx, (args || "").trim().split(/\s+/)[1], say);
				} else {
					say(`usage: /cordon status|on|off|verify|config|review|rewind N`, "error");
				}
			} catch (e: any) {
				say(`cordon: ${e?.message ?? e}`, "error");
			}
		},
	});
}
