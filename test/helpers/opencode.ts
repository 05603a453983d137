/**
 * OpenCode (`opencode run`, non-interactive), run as a user runs it against a gateway: llmux as a
 * custom provider in `~/.config/opencode/opencode.json`, through one of the AI SDK packages
 * OpenCode ships with: `@ai-sdk/openai-compatible` (chat completions), `@ai-sdk/anthropic`
 * (messages) or `@ai-sdk/openai` (Responses), each with `baseURL` the gateway's `/v1` and the llmux
 * key from `{env:LLMUX_API_KEY}`. A fresh HOME, the settings and variables that stop its update
 * check, its model catalog download (models.dev), sharing and language-server downloads, and a
 * proxy (default: a closed port) for anything that still tries to leave. The pinned version is
 * installed by ./clients.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseEnv, clientBinaries, proxyEnv, runBounded } from './clients.ts';
import type { ClientResult } from './clients.ts';

/** The client format OpenCode speaks to llmux, by the AI SDK package it uses. */
export type OpenCodeFormat = 'chat' | 'messages' | 'responses';

/** The provider id in opencode.json for each format, and the AI SDK package behind it. */
export const OPENCODE_PROVIDERS: Record<OpenCodeFormat, { id: string; npm: string }> = {
  chat: { id: 'llmux', npm: '@ai-sdk/openai-compatible' },
  messages: { id: 'llmux-anthropic', npm: '@ai-sdk/anthropic' },
  responses: { id: 'llmux-responses', npm: '@ai-sdk/openai' },
};

export interface OpenCodeRunOptions {
  /** The providers' `baseURL`, as a user writes it: the gateway address ending in `/v1`. */
  baseUrl: string;
  apiKey: string;
  format: OpenCodeFormat;
  /** An llmux model id (`-m <provider>/<model>`). */
  model: string;
  /** The model's limits as opencode.json declares them (OpenCode compacts against `context`). */
  limit?: { context: number; output: number };
  prompt: string;
  /** The work folder (OpenCode's project). */
  cwd: string;
  timeoutMs: number;
  proxyUrl?: string;
  env?: Record<string, string>;
}

/** The opencode.json a user writes for llmux: the three providers, each listing `model`. */
export function openCodeConfig(options: Pick<OpenCodeRunOptions, 'baseUrl' | 'model' | 'limit'>): Record<string, unknown> {
  const models = { [options.model]: { name: options.model, ...(options.limit === undefined ? {} : { limit: options.limit }) } };
  const provider: Record<string, unknown> = {};
  for (const [format, { id, npm }] of Object.entries(OPENCODE_PROVIDERS)) {
    provider[id] = { npm, name: `llmux (${format})`, options: { baseURL: options.baseUrl, apiKey: '{env:LLMUX_API_KEY}' }, models };
  }
  return { $schema: 'https://opencode.ai/config.json', autoupdate: false, share: 'disabled', provider };
}

/**
 * `opencode run --format json --title … -m <provider>/<model> PROMPT` in `cwd`: stdout is one
 * JSON event a line (`text` parts carry the answer). `--title` names the session, so OpenCode
 * asks the model nothing but the prompt; `--auto` lets the tools the model calls run.
 */
export async function runOpenCode(options: OpenCodeRunOptions): Promise<ClientResult> {
  const opencode = clientBinaries().opencode;
  const home = mkdtempSync(join(tmpdir(), 'llmux-opencode-'));
  try {
    const configDir = join(home, '.config', 'opencode');
    mkdirSync(configDir, { recursive: true });
    writeFileSync(join(configDir, 'opencode.json'), JSON.stringify(openCodeConfig(options), null, 2));
    const env = {
      ...baseEnv(home),
      LLMUX_API_KEY: options.apiKey,
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_SHARE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      ...proxyEnv(options.proxyUrl),
      ...options.env,
    };
    const model = `${OPENCODE_PROVIDERS[options.format].id}/${options.model}`;
    const args = [...opencode.args, 'run', '--format', 'json', '--title', 'llmux test', '--auto', '-m', model, options.prompt];
    return await runBounded(opencode.command, args, { cwd: options.cwd, env, timeoutMs: options.timeoutMs });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The text of the `text` parts OpenCode printed (`--format json`), in order. */
export function openCodeTexts(stdout: string): string[] {
  const texts: string[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    const part = (event as { type?: unknown; part?: { type?: unknown; text?: unknown } }).part;
    if ((event as { type?: unknown }).type === 'text' && part?.type === 'text' && typeof part.text === 'string') texts.push(part.text);
  }
  return texts;
}
