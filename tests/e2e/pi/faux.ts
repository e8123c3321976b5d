/**
 * A scripted model for end-to-end tests with the real pi, offline.
 * $CORDON_FAUX_SCRIPT (JSON) is either
 * - a list of steps, [[{name, args}, ...], ...]: each step becomes one
 *   assistant message with those tool calls, in order; then "done"; or
 * - {"prompts": {"<prompt>": [{name, args}, ...]}}: a user prompt with that
 *   exact text gets one message with those tool calls; anything else (a
 *   tool result, an unknown prompt) gets "done". For the interactive test,
 *   where an aborted turn may or may not consume a response.
 * ($PI_FAUX_SCRIPT when CORDON_FAUX_SCRIPT is unset: cordon keeps CORDON_*
 * variables out of a sandbox, and pi-wrap.mjs runs pi inside one.)
 * With $CORDON_FAUX_LOG set, every request's context (the messages the
 * model would see) is appended to that file, one JSON line each.
 */
import { appendFileSync, readFileSync } from "node:fs";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { fauxAssistantMessage, fauxToolCall, getApiProvider, registerFauxProvider } from "@mariozechner/pi-ai";

type Call = { name: string; args: any };

function lastUserText(context: any): string | undefined {
	const last = context?.messages?.[context.messages.length - 1];
	if (last?.role !== "user") return undefined;
	if (typeof last.content === "string") return last.content.trim();
	return (last.content ?? [])
		.filter((c: any) => c.type === "text")
		.map((c: any) => c.text)
		.join("")
		.trim();
}

export default function (pi: ExtensionAPI) {
	const script = JSON.parse(readFileSync((process.env.CORDON_FAUX_SCRIPT ?? process.env.PI_FAUX_SCRIPT)!, "utf8"));
	const faux = registerFauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
	const reply = (calls: Call[]) =>
		fauxAssistantMessage(
			calls.map((c) => fauxToolCall(c.name, c.args)),
			{ stopReason: "toolUse" },
		);
	if (Array.isArray(script)) {
		faux.setResponses([...(script as Call[][]).map(reply), fauxAssistantMessage("done")]);
	} else {
		const prompts: Record<string, Call[]> = script.prompts ?? {};
		const byPrompt = (context: any) => {
			if (process.env.CORDON_FAUX_LOG) appendFileSync(process.env.CORDON_FAUX_LOG, `${JSON.stringify(context.messages)}\n`);
			const text = lastUserText(context);
			return text !== undefined && prompts[text] ? reply(prompts[text]) : fauxAssistantMessage("done");
		};
		faux.setResponses(Array.from({ length: 500 }, () => byPrompt));
	}
	pi.registerProvider("faux", {
		name: "faux",
		baseUrl: "http://127.0.0.1:9",
		apiKey: "faux",
		api: faux.api as any,
		models: [
			{
				id: "faux-1",
				name: "faux",
				reasoning: false,
				input: ["text"],
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 100000,
				maxTokens: 4096,
			},
		],
		streamSimple: getApiProvider(faux.api as any)!.streamSimple as any,
	});
}
