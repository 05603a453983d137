/**
 * What the client suite and the fixture recorder share: the key, the scripted tool round trips,
 * and how a recording becomes a fixture (credentials, temporary paths, machine ids scrubbed).
 */
import { readFileSync } from 'node:fs';
import { hostname, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRecord } from '../../src/common/json.ts';
import { toolRoundTrip } from '../helpers/recording-upstream.ts';
import type { RecordedRequest, Script, Tunnel } from '../helpers/recording-upstream.ts';

/** Longer than 20 characters: Claude Code remembers an approved key by its last 20. */
export const API_KEY = 'llmux-test-key-0123456789abcdefghij';

/** What the scripted shell command prints; the command itself never contains it literally,
 * so seeing it proves the client ran the command. */
export const SHELL_MARKER = 'llmux-tool-42';
const SHELL_COMMAND = 'echo llmux-tool-$((40+2))';

/** Reasoning handed to the client, to see how it comes back in the next request. */
const REASONING = { summary: 'The user wants the marker command run.', encryptedContent: 'llmux-test-sealed-reasoning' };

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}

/** Codex's shell tool (unified exec): `exec_command {cmd}`; its output ends with the command's. */
export const codexShellRoundTrip: Script = toolRoundTrip({
  name: 'exec_command',
  input: { cmd: SHELL_COMMAND },
  reasoning: REASONING,
  answer: (output) => `Codex ran the command and it printed ${lastLine(output)}`,
});

/** Claude Code's `Bash {command, description}`. */
export const claudeBashRoundTrip: Script = toolRoundTrip({
  name: 'Bash',
  input: { command: SHELL_COMMAND, description: 'Print the test marker' },
  reasoning: REASONING,
  answer: (output) => `Claude Code ran the command and it printed ${lastLine(output)}`,
});

/** The file Gemini CLI's scenarios read with `read_file`. */
export const GEMINI_FILE_TEXT = 'Buy milk.\nCall the plumber on Friday.\n';

export const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'clients');

/** One recorded scenario as saved under test/fixtures/clients/. */
export interface Fixture {
  client: 'codex' | 'claude-code' | 'gemini-cli';
  version: string;
  scenario: string;
  /** How the client was started (command line, config, environment), scrubbed. */
  setup: Record<string, unknown>;
  /** Every HTTP request the client made to its base URL, in order. */
  requests: RecordedRequest[];
  /** WebSocket upgrade requests (refused with 426). */
  upgrades: RecordedRequest[];
  /** Attempts to leave through the proxy (none expected). */
  tunnels: Tunnel[];
}

export function readFixture(name: string): Fixture {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Fixture;
}

// Lookarounds, not \b: ids such as `msg_<uuid>` put a word character right before the UUID.
const UUID = /(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f])/gi;
const HEX64 = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/g;
const LOOPBACK_PORT = /127\.0\.0\.1:\d+/g;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A recording made safe and stable to commit: the key, the temporary folders (as paths and as
 * Claude Code's dashed project slugs), the kernel release and host name, machine and device ids
 * (64 hex digits), and the loopback port replaced by placeholders; UUIDs (session, turn and item
 * ids) numbered in order of appearance, and Codex's `client_metadata` keys sorted, so a
 * re-recording diffs only where the client changed.
 */
export function scrub<T>(value: T): T {
  let text = JSON.stringify(value);
  const tmp = escapeRegExp(tmpdir());
  const tmpSlug = escapeRegExp(tmpdir().replace(/[/.]/g, '-'));
  text = text
    .replaceAll(API_KEY, '<API_KEY>')
    .replace(new RegExp(`${tmp}/llmux-work-[A-Za-z0-9]{6}`, 'g'), '<WORKDIR>')
    .replace(new RegExp(`${tmp}/llmux-(codex|claude|claude-tmux|gemini)-[A-Za-z0-9]{6}`, 'g'), '<HOME>')
    .replace(new RegExp(`${tmpSlug}-llmux-work-[A-Za-z0-9]{6}`, 'g'), '<WORKDIR_SLUG>')
    .replace(HEX64, '<hex64>')
    .replace(LOOPBACK_PORT, '127.0.0.1:<port>')
    .replaceAll(release(), '<kernel-release>');
  if (hostname().length >= 4) text = text.replaceAll(hostname(), '<hostname>');
  const uuids = new Map<string, string>();
  text = text.replace(UUID, (uuid) => {
    const key = uuid.toLowerCase();
    let placeholder = uuids.get(key);
    if (placeholder === undefined) {
      placeholder = `<uuid-${uuids.size + 1}>`;
      uuids.set(key, placeholder);
    }
    return placeholder;
  });
  return JSON.parse(text, (key, value: unknown) => (key === 'client_metadata' && isRecord(value) ? sortedKeys(value) : value)) as T;
}

/** Codex fills `client_metadata` from a hash map: its key order changes from run to run. */
function sortedKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
