/**
 * `llmux setup`: the interactive first-run (gateway-api.md "Authentication" 4, llmux.md section 1).
 * Asks which providers to enable and for each its key (typed without echo) or the environment
 * variable to read it from, writes `$LLMUX_HOME/config.json` (mode 0600, atomically), creates a
 * client key and prints the lines that point Claude Code and OpenAI-based tools at llmux.
 *
 * Every question has a flag, for scripts: `--provider openai,anthropic --openai-key-env VAR
 * --anthropic-key-env VAR --ollama-url URL --key-name N --tier T --yes`. The cloud platforms
 * (`bedrock`, `vertex`, `azure`) ask their own questions, each with a flag too, and add the model
 * they serve (./setup-platforms.ts). With `--yes` or
 * `--non-interactive` nothing is asked and unanswered questions take their defaults (a provider's
 * key comes from its usual variable, e.g. `env:OPENAI_API_KEY`).
 *
 * Decisions beyond the specs:
 * - Prompts go to stderr and results to stdout. A provider key is never printed or logged.
 * - An existing config file is kept unless `--force` is given or the question is answered yes;
 *   even then it is merged, not replaced: only the chosen providers' entries change.
 * - When the key store holds no usable admin key, setup also creates one and prints it once,
 *   because `llmux serve` only makes its first admin key in an empty store.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_NAME_OF_FORMAT, ConfigError, loadConfig, resolveHome } from '../config/load.ts';
import type { ProviderFormat } from '../formats/wire.ts';
import { builtinProviders } from '../catalog/providers.ts';
import { createKeyStore } from '../auth/key-store.ts';
import { writeFileAtomic } from '../common/files.ts';
import type { TierName } from '../config/types.ts';
import { keyStatus } from '../auth/key-record.ts';
import type { CliIo } from './io.ts';
import type { ParsedArgs } from './args.ts';
import { UsageError } from './args.ts';
import { asRecord, isRecord } from '../common/json.ts';
import { PLATFORM_SETUP, SetupQuestionError } from './setup-platforms.ts';
import type { PlatformChoice } from './setup-platforms.ts';

export const DEFAULT_LISTEN_URL = 'http://127.0.0.1:8686';
/** Ollama at its usual address, written so that the catalog treats it as present (see providers.ts). */
export const SETUP_OLLAMA_URL = 'http://localhost:11434/v1';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

class SetupAbort extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

type Stdin = NonNullable<CliIo['stdin']>;

/** Reads answers from stdin: whole lines, or hidden input in raw mode on a terminal. */
export interface Prompter {
  ask(question: string): Promise<string>;
  /** Reads without echo (raw mode on a terminal; a piped stdin never echoes). */
  askHidden(question: string): Promise<string>;
  close(): void;
}

/**
 * A prompter over a stream. In raw mode the terminal neither echoes nor edits, so this handles
 * Enter, Backspace, Ctrl-U (clear), Ctrl-C (abort) and Ctrl-D (end) itself.
 */
export function createPrompter(stdin: Stdin, write: (text: string) => void): Prompter {
  let buffer = '';
  let ended = false;
  let wake: (() => void) | undefined;
  const onData = (chunk: Buffer | string): void => {
    buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    wake?.();
  };
  const onEnd = (): void => {
    ended = true;
    wake?.();
  };
  stdin.on('data', onData);
  stdin.on('end', onEnd);

  /** One answer; in raw mode Enter is a lone \r, so a \n after it belongs to the next answer. */
  async function readLine(raw = false): Promise<string> {
    for (;;) {
      const cut = buffer.search(/[\r\n\u0003\u0004]/);
      if (cut !== -1) {
        const stop = buffer[cut];
        const answer = buffer.slice(0, cut);
        buffer = buffer.slice(!raw && stop === '\r' && buffer[cut + 1] === '\n' ? cut + 2 : cut + 1);
        if (stop === '\u0003') throw new SetupAbort('llmux setup: cancelled; nothing was written', 130);
        return edit(answer);
      }
      if (ended) {
        const rest = buffer;
        buffer = '';
        return edit(rest);
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  }

  return {
    async ask(question) {
      write(question);
      return (await readLine()).trim();
    },
    async askHidden(question) {
      // Echo off before the question shows: a key typed or pasted right after the prompt
      // appears must never reach the screen.
      const raw = stdin.isTTY === true && typeof stdin.setRawMode === 'function';
      if (raw) stdin.setRawMode?.(true);
      write(question);
      try {
        return (await readLine(raw)).trim();
      } finally {
        if (raw) {
          stdin.setRawMode?.(false);
          write('\n');
        }
      }
    },
    close() {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    },
  };
}

/** Applies Backspace and Ctrl-U as a terminal in cooked mode would. */
function edit(line: string): string {
  const out: string[] = [];
  for (const c of line) {
    if (c === '\u007f' || c === '\b') out.pop();
    else if (c === '\u0015') out.length = 0;
    else if (c >= ' ') out.push(c);
  }
  return out.join('');
}

interface ProviderChoice {
  id: string;
  /** The config file's `api_key`: `env:NAME` or the literal key. */
  apiKey: string | undefined;
  baseUrl: string;
  format: ProviderFormat;
}

function listenUrl(env: Record<string, string | undefined>): string {
  const host = env['LLMUX_HOST'] ?? '127.0.0.1';
  const port = env['LLMUX_PORT'] ?? '8686';
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${shownHost}:${port}`;
}

/** Runs `llmux setup`; resolves with the exit code (0 done, 1 failed or declined, 2 usage, 130 cancelled). */
export async function runSetup(args: ParsedArgs, io: CliIo): Promise<number> {
  const known = builtinProviders(io.env);
  const ids = [...Object.keys(known), ...Object.keys(PLATFORM_SETUP)];
  const str = (name: string): string | undefined => args.text(name);
  const quiet = args.flag('yes') || args.flag('non-interactive') || io.stdin === undefined;
  const tier = str('tier') as TierName;
  for (const id of Object.keys(known)) {
    const envName = known[id]?.keyless === true ? undefined : str(`${id}-key-env`);
    if (envName !== undefined && !ENV_NAME.test(envName)) throw new UsageError(`--${id}-key-env: "${envName}" is not an environment variable name`);
  }
  const parseProviders = (text: string): string[] | string => {
    const names = text.split(/[\s,]+/).map((n) => n.trim().toLowerCase()).filter((n) => n !== '');
    const unknown = names.filter((n) => !ids.includes(n));
    if (unknown.length > 0) return `unknown provider${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (known: ${ids.join(', ')})`;
    return [...new Set(names)];
  };
  let chosen: string[] | undefined;
  const providerFlags = args.all('provider');
  if (providerFlags.length > 0) {
    const parsed = parseProviders(providerFlags.join(','));
    if (typeof parsed === 'string') throw new UsageError(`--provider: ${parsed}`);
    chosen = parsed;
  }

  const home = resolveHome(str('home'), io.env);
  const configPath = join(home, 'config.json');
  const prompter = quiet ? undefined : createPrompter(io.stdin as Stdin, io.stderr);
  try {
    // The existing file, to merge into; a file that is not a JSON object can only be replaced.
    let existing: Record<string, unknown> = {};
    if (existsSync(configPath)) {
      if (!args.flag('force')) {
        if (prompter === undefined) {
          io.stderr(`llmux setup: ${configPath} already exists; run again with --force to update it (its other settings are kept)\n`);
          return 1;
        }
        const answer = await prompter.ask(`${configPath} already exists. Update it with the providers you choose (other settings are kept)? [y/N] `);
        if (!/^y(es)?$/i.test(answer)) {
          io.stderr('llmux setup: left the existing config unchanged\n');
          return 1;
        }
      }
      try {
        const parsed: unknown = JSON.parse(readFileSync(configPath, 'utf8'));
        if (isRecord(parsed)) existing = parsed;
      } catch {
        io.stderr(`llmux setup: ${configPath} is not valid JSON; writing a new one\n`);
      }
    }

    while (chosen === undefined) {
      if (prompter === undefined) {
        chosen = [];
        break;
      }
      const answer = await prompter.ask(`Which providers do you want to enable? (${ids.join(', ')})\nNames separated by commas or spaces; empty for none (the built-in llmux-echo model always works): `);
      const parsed = parseProviders(answer);
      if (typeof parsed === 'string') io.stderr(`  ${parsed}\n`);
      else chosen = parsed;
    }

    const choices: ProviderChoice[] = [];
    const platformChoices: PlatformChoice[] = [];
    for (const id of chosen) {
      const platform = PLATFORM_SETUP[id];
      if (platform !== undefined) {
        try {
          platformChoices.push(await platform({ flag: str, prompter, env: io.env }));
        } catch (err) {
          if (err instanceof SetupQuestionError) throw new UsageError(err.message);
          throw err;
        }
        continue;
      }
      const builtin = known[id];
      if (builtin === undefined) continue;
      if (builtin.keyless) {
        let baseUrl = str('ollama-url');
        if (baseUrl === undefined && prompter !== undefined) baseUrl = await prompter.ask(`Where does ${id} listen? [${SETUP_OLLAMA_URL}] `);
        baseUrl = baseUrl === undefined || baseUrl === '' ? SETUP_OLLAMA_URL : baseUrl;
        if (!/^https?:\/\/[^\s]+$/.test(baseUrl)) throw new SetupAbort(`llmux setup: ${id} address "${baseUrl}" must start with http:// or https://`, 2);
        choices.push({ id, apiKey: undefined, baseUrl: baseUrl.replace(/\/+$/, ''), format: builtin.format });
        continue;
      }
      const defaultEnv = (builtin.apiKey ?? '').replace(/^env:/, '');
      let apiKey: string;
      const envFlag = str(`${id}-key-env`);
      if (envFlag !== undefined) apiKey = `env:${envFlag}`;
      else if (prompter === undefined) apiKey = `env:${defaultEnv}`;
      else {
        const typed = await prompter.askHidden(`${id} API key (typing is hidden; leave empty to read it from $${defaultEnv} when llmux runs, or type env:NAME for another variable): `);
        if (typed === '') apiKey = `env:${defaultEnv}`;
        else if (typed.startsWith('env:')) {
          if (!ENV_NAME.test(typed.slice(4))) throw new SetupAbort(`llmux setup: "${typed.slice(0, 64)}" is not env: followed by a variable name`, 2);
          apiKey = typed;
        } else apiKey = typed;
      }
      choices.push({ id, apiKey, baseUrl: builtin.baseUrl, format: builtin.format });
    }

    let keyName = str('key-name');
    if (keyName === undefined && prompter !== undefined) keyName = await prompter.ask('Name for your client key? [setup] ');
    keyName = keyName === undefined || keyName.trim() === '' ? 'setup' : keyName.trim().slice(0, 100);

    // Write the config, checked with the same loader `llmux serve` uses.
    const providers = { ...(asRecord(existing['providers']) ?? {}) };
    for (const c of choices) {
      providers[c.id] = c.apiKey === undefined ? { format: CONFIG_NAME_OF_FORMAT[c.format], base_url: c.baseUrl } : { format: CONFIG_NAME_OF_FORMAT[c.format], base_url: c.baseUrl, api_key: c.apiKey };
    }
    for (const c of platformChoices) providers[c.model.provider] = c.provider;
    const next: Record<string, unknown> = { ...existing };
    if (Object.keys(providers).length > 0) next['providers'] = providers;
    if (platformChoices.length > 0) {
      // A platform's model replaces one of the same id; the file's other models stay.
      const ids = new Set(platformChoices.map((c) => c.model.id));
      const kept = (Array.isArray(existing['models']) ? existing['models'] : []).filter((m) => !(isRecord(m) && typeof m['id'] === 'string' && ids.has(m['id'])));
      next['models'] = [...kept, ...platformChoices.map((c) => c.model)];
    }
    try {
      loadConfig({ file: next, env: io.env, home });
    } catch (err) {
      if (err instanceof ConfigError) throw new SetupAbort(`llmux setup: the config would not load, so nothing was written: ${err.message.replace(/^llmux: /, '')}`, 1);
      throw err;
    }
    writeFileAtomic(configPath, `${JSON.stringify(next, null, 2)}\n`, 0o600);

    // A command may wait for another process writing the store; a server never does.
    const store = createKeyStore(home, { lockWaitMs: 10_000 });
    const nowMs = Date.now();
    const hasAdmin = store.list().some((k) => k.admin && keyStatus(k, nowMs) === 'active');
    const client = store.create({ name: keyName, tier });
    const admin = hasAdmin ? undefined : store.create({ name: 'admin', tier: 'pro', admin: true });

    const url = (str('url') ?? listenUrl(io.env)).replace(/\/+$/, '');
    const lines: string[] = [];
    const written = [...choices.map((c) => c.id), ...platformChoices.map((c) => `${c.model.provider} (model ${c.model.id})`)];
    lines.push(`Wrote ${configPath} (${written.length === 0 ? 'no providers; llmux-echo still answers' : `providers: ${written.join(', ')}`}).`);
    const keyed = [...choices.map((c) => ({ id: c.id, apiKey: c.apiKey })), ...platformChoices.map((c) => ({ id: c.model.provider, apiKey: c.provider['api_key'] as string | undefined }))];
    const unset = keyed.filter((c) => c.apiKey?.startsWith('env:') === true && (io.env[c.apiKey.slice(4)] ?? '') === '');
    for (const c of unset) lines.push(`Note: ${c.id} reads its key from $${(c.apiKey as string).slice(4)}, which is not set here; set it where llmux serve runs.`);
    if (platformChoices.some((c) => c.provider['platform'] !== 'azure')) lines.push('Note: `llmux doctor` says where the Bedrock and Vertex AI credentials come from, and whether they work.');
    lines.push('');
    lines.push(`Client key "${client.record.name}" (${client.record.id}, tier ${client.record.tier}); shown once, keep it safe:`);
    lines.push(`  ${client.key}`);
    if (admin !== undefined) {
      lines.push('');
      lines.push(`Admin key (${admin.record.id}) for ${url}/dashboard and \`llmux device approve\`; shown once, keep it safe:`);
      lines.push(`  ${admin.key}`);
    }
    lines.push('');
    lines.push('Start llmux:');
    lines.push('  llmux serve');
    lines.push('');
    lines.push('Point Claude Code at llmux:');
    lines.push(`  export ANTHROPIC_BASE_URL=${url}`);
    lines.push(`  export ANTHROPIC_AUTH_TOKEN=${client.key}`);
    lines.push('');
    lines.push('Point OpenAI-based tools at llmux:');
    lines.push(`  export OPENAI_BASE_URL=${url}/v1`);
    lines.push(`  export OPENAI_API_KEY=${client.key}`);
    io.stdout(`${lines.join('\n')}\n`);
    return 0;
  } catch (err) {
    if (err instanceof SetupAbort) {
      io.stderr(`${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  } finally {
    prompter?.close();
  }
}

