/**
 * A scripted model for end-to-end tests with the real pi, offline: each
 * step of $CORDON_FAUX_SCRIPT (JSON: [[{name, args}, ...], ...]) becomes one
 * assistant message with those tool calls; then "done".
 */
import { readFileSync } from "node:fs";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { fauxAssistantMessage, fauxToolCall, getApiProvider, registerFauxProvider } from "@mariozechner/pi-ai";

export default function (pi: ExtensionAPI) {
	const steps: { name: string; args: any }[][] = JSON.parse(readFileSync(process.env.CORDON_FAUX_SCRIPT!, "utf8"));
	const faux = registerFauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
	faux.setResponses([
		...steps.map((calls) =>
			fauxAssistantMessage(
				calls.map((c) => fauxToolCall(c.name, c.args)),
				{ stopReason: "toolUse" },
			),
		),
		fauxAssistantMessage("done"),
	]);
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
