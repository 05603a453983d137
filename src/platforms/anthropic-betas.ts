/**
 * The `anthropic-beta` values a cloud platform accepts for Claude. Anthropic's own API ignores a beta
 * it does not know; Bedrock and Vertex refuse the whole request over one (Bedrock: 400 "invalid beta
 * flag"; Vertex: 400 "Unexpected value(s) … for the `anthropic-beta` header"), and clients such as
 * Claude Code send new betas with each release (`claude-code-20250219`, `effort-2025-11-24`,
 * `prompt-caching-scope-2026-01-05`, `oauth-2025-04-20`, …). So a platform passes on only the betas on
 * its list: the provider's config `betas`, else the defaults below. A beta dropped only loses the
 * feature it announces; a beta kept that the platform refuses loses the request.
 *
 * Sources, as of this writing:
 * - Bedrock: AWS's "Anthropic Claude Messages API" request reference (the `anthropic_beta` values it
 *   lists), and what users found Bedrock to accept and refuse (anthropics/claude-code issues 49370,
 *   56595; CLIProxyAPI issue 4750: `claude-code-20250219` is refused by some models, as
 *   `prompt-caching-scope-*`, `fast-mode-*`, `oauth-*` are by all).
 * - Vertex AI: reads betas from the `anthropic-beta` header and refuses those it does not list
 *   (claude-code issues 1229, 12429, 21625, 34802: `effort-2025-11-24`, `web-search` on count-tokens,
 *   `prompt-caching-scope-2026-01-05`), except `context-1m-2025-08-07`, which it refuses in the header
 *   but honours in the body's `anthropic_beta` (opencode issue 14003, litellm PR 31607).
 */

/** Bedrock: every beta goes in the body's `anthropic_beta`. */
export const BEDROCK_BETAS: readonly string[] = [
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'computer-use-2025-11-24',
  'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14',
  'output-128k-2025-02-19',
  'dev-full-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'tool-search-tool-2025-10-19',
  'tool-examples-2025-10-29',
  'fine-grained-tool-streaming-2025-05-14',
];

/** Vertex AI: these in the `anthropic-beta` header… */
export const VERTEX_BETAS: readonly string[] = [
  'interleaved-thinking-2025-05-14',
  'context-management-2025-06-27',
  'computer-use-2025-01-24',
  'computer-use-2025-11-24',
  'tool-search-tool-2025-10-19',
  'web-search-2025-03-05',
  'compact-2026-01-12',
  'context-1m-2025-08-07',
];

/** …but these, which Vertex refuses in the header, in the body's `anthropic_beta`. */
export const VERTEX_BODY_BETAS: ReadonlySet<string> = new Set(['context-1m-2025-08-07']);

/** The values of an `anthropic-beta` header (comma-separated, as clients join several), each once. */
export function betaValues(header: string | undefined): string[] {
  if (header === undefined) return [];
  return [...new Set(header.split(',').map((value) => value.trim()).filter((value) => value !== ''))];
}

/** The client's betas the platform accepts, in the client's order. */
export function acceptedBetas(header: string | undefined, accepted: ReadonlySet<string>): string[] {
  return betaValues(header).filter((value) => accepted.has(value));
}
