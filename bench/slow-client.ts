/**
 * The load for "1,000 concurrent slow streams": opens `count` streamed requests at once (each on
 * its own connection), waits until every one has its first event, reports, and then holds them
 * all open until told to stop, so the proxy's memory can be read with every stream idle but open.
 *
 * Run as a process: `node slow-client.js --port N --request JSON --count N [--wave N] [--timeout-ms N]`
 * where JSON is `{"path":…,"headers":{…},"body":"…"}`, or `--request-file FILE` holding that JSON
 * (a 200 KB body is longer than one command-line argument may be). Prints one line
 * `{"ready":N,"failed":N,"statuses":{…}}` once all streams are open (or the timeout passed), then
 * waits for SIGTERM/SIGINT or stdin to close.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { ClientRequest } from 'node:http';
import { parseArgs } from 'node:util';
import { isEntryPoint } from './entry.ts';

export interface StreamRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface OpenStreamsResult {
  ready: number;
  failed: number;
  /** How many answers had each HTTP status (0: no answer). */
  statuses: Record<string, number>;
  /** Closes every stream. */
  close(): void;
}

/**
 * Opens `count` streams to 127.0.0.1:`port` and resolves once each has delivered its first bytes
 * or failed, or `timeoutMs` has passed. With `wave`, at most that many are being opened at once:
 * the next one starts when one of them has its first bytes (agents sending 200 KB turns arrive
 * over some time, not within the same millisecond).
 */
export function openStreams(port: number, request: StreamRequest, count: number, timeoutMs: number, wave = count): Promise<OpenStreamsResult> {
  // No pooling: one connection per stream, as 1,000 separate clients would have.
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const open: ClientRequest[] = [];
  const statuses: Record<string, number> = {};
  let ready = 0;
  let failed = 0;
  const close = (): void => {
    for (const req of open) req.destroy();
    agent.destroy();
  };
  return new Promise((resolve) => {
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ready, failed, statuses, close });
    };
    const timer = setTimeout(settle, timeoutMs);
    let started = 0;
    const check = (): void => {
      if (ready + failed === count) settle();
      else if (started < count && started - ready - failed < wave) openOne();
    };
    const openOne = (): void => {
      started++;
      let counted = false;
      const count1 = (ok: boolean, status: number): void => {
        if (counted) return;
        counted = true;
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (ok) ready++;
        else failed++;
        check();
      };
      const req = http.request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: request.path,
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        agent,
      }, (res) => {
        const status = res.statusCode ?? 0;
        res.once('data', () => count1(status === 200, status));
        res.on('data', () => {});
        res.once('end', () => count1(false, status));
        res.once('error', () => count1(false, status));
      });
      req.once('error', () => count1(false, 0));
      req.end(request.body);
      open.push(req);
    };
    while (started < Math.min(wave, count)) openOne();
  });
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, request: { type: 'string' }, 'request-file': { type: 'string' }, count: { type: 'string' }, wave: { type: 'string' }, 'timeout-ms': { type: 'string' } },
  });
  const requestJson = values['request-file'] === undefined ? values.request : readFileSync(values['request-file'], 'utf8');
  const request = JSON.parse(requestJson ?? '{}') as StreamRequest;
  const count = Number(values.count ?? '1000');
  const result = await openStreams(Number(values.port), request, count, Number(values['timeout-ms'] ?? '20000'), values.wave === undefined ? count : Number(values.wave));
  process.stdout.write(`${JSON.stringify({ ready: result.ready, failed: result.failed, statuses: result.statuses })}\n`);
  const stop = (): void => {
    result.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.once('end', stop);
  process.stdin.resume();
}
