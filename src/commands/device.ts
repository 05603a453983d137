/**
 * `llmux device approve USER_CODE [--tier T] [--name N] [--url URL]` and `llmux device deny
 * USER_CODE [--url URL]`: decide a device request on a running server, with the admin key from
 * `LLMUX_ADMIN_KEY` (never a flag, so it stays out of shell history and process lists). The server is `--url`, else `LLMUX_URL`, else
 * http://127.0.0.1:8686.
 */
import type { CliIo } from './io.ts';
import type { ParsedArgs } from './args.ts';
import { UsageError } from './args.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8686';

/** `llmux device approve USER_CODE`; resolves with the exit code (0 done, 1 refused or unreachable, 2 usage). */
export async function approveDevice(args: ParsedArgs, io: CliIo): Promise<number> {
  return decide('approve', args, io);
}

/** `llmux device deny USER_CODE`. */
export async function denyDevice(args: ParsedArgs, io: CliIo): Promise<number> {
  return decide('deny', args, io);
}

async function decide(action: 'approve' | 'deny', args: ParsedArgs, io: CliIo): Promise<number> {
  const userCode = args.positionals[0] as string;
  const adminKey = io.env['LLMUX_ADMIN_KEY']?.trim();
  if (adminKey === undefined || adminKey === '') throw new UsageError('set LLMUX_ADMIN_KEY to an admin key (llmux keys create --admin makes one)');
  const base = (args.text('url') ?? io.env['LLMUX_URL'] ?? DEFAULT_URL).replace(/\/+$/, '');
  let endpoint: URL;
  try {
    endpoint = new URL(`${base}/auth/device/${action}`);
  } catch {
    throw new UsageError(`--url: "${base}" is not a URL`);
  }
  const body: Record<string, string> = { user_code: userCode };
  if (action === 'approve') {
    // Only what was given: the server's defaults apply otherwise.
    const name = args.text('name');
    if (args.given('tier')) body['tier'] = args.text('tier') as string;
    if (name !== undefined) body['name'] = name;
  }

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

