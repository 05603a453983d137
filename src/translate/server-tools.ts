/**
 * Anthropic's server tools (`web_search_*`, `web_fetch_*`, `code_execution_*`), run on Anthropic's
 * side (llmux.md section 11): an upstream that has its own equivalent gets it (Gemini:
 * ./messages-to-gemini.ts); one that has none makes the request a 400 naming the tool, never an
 * answer that silently used none ("0 searches").
 */
import { type GatewayError, invalidParameters, truncate } from '../common/errors.ts';

const SERVER_TOOL = /^(web_search|web_fetch|code_execution)_/;

/** Whether a messages tool's `type` names an Anthropic server tool. */
export function isServerTool(type: unknown): type is string {
  return typeof type === 'string' && SERVER_TOOL.test(type);
}

/** The 400 for `tools.{index}`, a server tool `upstream` (say "chat-completions") has nothing like. */
export function serverToolRefused(index: number, type: string, upstream: string): GatewayError {
  return invalidParameters(`tools.${index}: "${truncate(type, 100)}" is an Anthropic server tool, run on Anthropic's side; this model's ${upstream} upstream has nothing like it, so the request would answer without it. Use a model whose provider runs it, or leave the tool out`);
}
