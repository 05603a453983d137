/**
 * Gemini CLI (`gemini -p`, non-interactive), run as a user runs it against a gateway: its
 * gateway mode (`GOOGLE_GEMINI_BASE_URL`, the llmux key in `GEMINI_API_KEY`), a fresh HOME whose
 * `~/.gemini/settings.json` turns off what would leave the machine (auto-update and its
 * notification, usage statistics, telemetry), and a proxy (default: a closed port) for anything
 * that still tries. The pinned version is installed by ./clients.ts.
 *
 * `security.auth.selectedType: "gemini-api-key"`: Gemini CLI 0.61 takes `GOOGLE_GEMINI_BASE_URL`
 * as its "gateway" auth type, which its non-interactive mode then refuses ("Invalid auth method
 * selected."); with the API-key auth type named in the settings it reads the same base URL and
 * sends the key as `x-goog-api-key`. The README's instructions say the same.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseEnv, clientBinaries, proxyEnv, runBounded } from './clients.ts';
import type { ClientResult } from './clients.ts';

export interface GeminiRunOptions {
  /** `GOOGLE_GEMINI_BASE_URL`, as a user writes it: the gateway address, no path. */
  baseUrl: string;
  apiKey: string;
  /** `-m`; omit it to see what Gemini CLI sends for its own default. */
  model?: string;
  prompt: string;
  /** The work folder (its workspace). */
  cwd: string;
  timeoutMs: number;
  /** `--output-format` (default `text`). */
  outputFormat?: 'text' | 'json' | 'stream-json';
  /** Where stray traffic goes (e.g. a recording upstream, to see it); default a closed port. */
  proxyUrl?: string;
  env?: Record<string, string>;
}

/** `~/.gemini/settings.json`: the API-key auth type, and everything that calls Google or npm off. */
export const GEMINI_SETTINGS = {
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  security: { auth: { selectedType: 'gemini-api-key' } },
};

/** The environment of a Gemini CLI run pointed at `baseUrl`. */
export function geminiEnv(options: Pick<GeminiRunOptions, 'baseUrl' | 'apiKey' | 'proxyUrl' | 'env'>, home: string): Record<string, string> {
  return {
    ...baseEnv(home),
    GOOGLE_GEMINI_BASE_URL: options.baseUrl,
    GEMINI_API_KEY: options.apiKey,
    GEMINI_TELEMETRY_ENABLED: 'false',
    ...proxyEnv(options.proxyUrl),
    ...options.env,
  };
}

/**
 * The arguments after the binary: the model, the prompt, the output format, YOLO so a tool call
 * runs without asking, and `--skip-trust` for the fresh work folder (a headless run refuses an
 * untrusted folder; a user's own folder is trusted once, interactively).
 */
export function geminiArgs(options: Pick<GeminiRunOptions, 'model' | 'prompt' | 'outputFormat'>): string[] {
  return [...(options.model === undefined ? [] : ['-m', options.model]), '-p', options.prompt, '--output-format', options.outputFormat ?? 'text', '--yolo', '--skip-trust'];
}

/** `gemini -m MODEL -p PROMPT --output-format FORMAT --yolo --skip-trust` in `cwd` with a fresh HOME. */
export async function runGemini(options: GeminiRunOptions): Promise<ClientResult> {
  const gemini = clientBinaries().gemini;
  const home = mkdtempSync(join(tmpdir(), 'llmux-gemini-'));
  try {
    mkdirSync(join(home, '.gemini'));
    writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify(GEMINI_SETTINGS, null, 2));
    return await runBounded(gemini.command, [...gemini.args, ...geminiArgs(options)], { cwd: options.cwd, env: geminiEnv(options, home), timeoutMs: options.timeoutMs });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
