/**
 * `llmux device approve|deny USER_CODE [--tier T] [--name N] [--url URL]`: decides a device
 * request on a running server, with the admin key from `LLMUX_ADMIN_KEY` (never a flag, so it
 * stays out of shell history and process lists). The server is `--url`, else `LLMUX_URL`, else
 * http://127.0.0.1:8686.
 */
import { parseArgs } from 'node:util';
import type { CliIo } from './io.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8686';

const USAGE = 'usage: llmux device approve|deny USER_CODE [--tier basic|pro|enterprise] [--name NAME] [--url URL]\n'
  + 'The admin key is read from LLMUX_ADMIN_KEY; the server from --url, LLMUX_URL or http://127.0.0.1:8686.\n';

function usage(io: CliIo, problem: string): number {
  io.stderr(`llmux device: ${problem}\n${USAGE}`);
  return 2;
}

/** Runs `llmux device …`; resolves with the exit code (0 done, 1 refused or unreachable, 2 usage). */
export async function deviceCommand(args: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: { tier: { type: 'string' }, name: { type: 'string' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    return usage(io, (err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.stdout(USAGE);
    return 0;
  }
  const [action, userCode, ...extra] = positionals;
  if (action !== 'approve' && action !== 'deny') return usage(io, `expected approve or deny${action === undefined ? '' : `, not "${action}"`}`);
  if (userCode === undefined || extra.length > 0) return usage(io, 'give exactly one USER_CODE (as shown by the device, like WDJB-MJHT)');
  if (action === 'deny' && (values.tier !== undefined || values.name !== undefined)) return usage(io, '--tier and --name only apply to approve');
  const adminKey = io.env['LLMUX_ADMIN_KEY']?.trim();
  if (adminKey === undefined || adminKey === '') {
    io.stderr('llmux device: set LLMUX_ADMIN_KEY to an admin key (llmux keys create --admin makes one)\n');
    return 2;
  }
  const base = (values.url ?? io.env['LLMUX_URL'] ?? DEFAULT_URL).replace(/\/+$/, '');
  let endpoint: URL;
  try {
    endpoint = new URL(`${base}/auth/device/${action}`);
  } catch {
    return usage(io, `--url: "${base}" is not a URL`);
  }
  const body: Record<string, string> = { user_code: userCode };
  if (values.tier !== undefined) body['tier'] = values.tier;
  if (values.name !== undefined) body['name'] = values.name;

  let status: number;
  let answer: Record<string, unknown>;
  try {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminKey}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    status = res.status;
    answer = await res.json().catch(() => ({})) as Record<string, unknown>;
  } catch (err) {
    io.stderr(`llmux device: cannot reach llmux at ${base} (${(err as Error).message}); is \`llmux serve\` running? Set --url or LLMUX_URL\n`);
    return 1;
  }
  if (status !== 200) {
    const error = (answer['error'] ?? {}) as Record<string, unknown>;
    io.stderr(`llmux device: ${status} ${String(error['code'] ?? '')}: ${String(error['message'] ?? 'unexpected answer')}\n`);
    return 1;
  }
  const client = String(answer['client_name'] ?? '');
  if (action === 'approve') io.stdout(`approved ${String(answer['user_code'])} "${client}" (tier ${String(answer['tier'])}, key name "${String(answer['name'])}"); the device receives its key when it next polls\n`);
  else io.stdout(`denied ${String(answer['user_code'])} "${client}"\n`);
  return 0;
}

