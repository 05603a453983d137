/**
 * Request smuggling and header injection (issue 25, what the first red team did not get to), on
 * loopback: a request whose length is ambiguous (Content-Length and Transfer-Encoding together,
 * two lengths, a folded or bare-LF header line, an odd Transfer-Encoding) is refused with 400 and
 * its connection closed, so nothing after it is read as a second request; and nothing a client or
 * an upstream sends makes llmux write a header line of its choosing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';

/** Sends raw bytes on one connection; resolves with everything answered until the server closes it, or 1.5 s. */
function exchange(url: string, bytes: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const socket = net.connect(Number(u.port), u.hostname);
    let text = '';
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), 1_500);
    socket.on('data', (c: Buffer) => { text += c.toString('latin1'); });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.once('connect', () => socket.write(bytes));
  });
}

const statusLines = (text: string): string[] => text.match(/^HTTP\/1\.1 \d+/gm) ?? [];

/** The routes that read bodies, and two that read none. */
const ROUTES = ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/messages/count_tokens', '/v1/responses/input_tokens', '/auth/device', '/auth/device/token', '/dashboard/sign-in', '/device', '/healthz', '/v1/models'];

describe('requests whose length is ambiguous', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  const smuggled = 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n';
  const attacks: Array<[string, (path: string, key: string) => string]> = [
    ['Content-Length and Transfer-Encoding together', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`],
    ['two different Content-Lengths', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}${smuggled}`],
    ['a Transfer-Encoding that is not chunked last', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n${smuggled}`],
    ['an obfuscated Transfer-Encoding', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n${smuggled}`],
    ['a folded header line (obs-fold)', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 2\r\nX-Folded: a\r\n b\r\n\r\n{}${smuggled}`],
    ['a header line ended by a bare LF', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\nContent-Length: 2\r\n\r\n{}${smuggled}`],
    ['a chunk size ended by a bare LF', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n${smuggled}`],
    ['a CR/LF inside a header value', (path, key) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: a\rInjected: 1\r\nContent-Length: 2\r\n\r\n{}${smuggled}`],
  ];
  for (const [what, request] of attacks) {
    it(`refuses ${what} with 400 on every route, closes the connection and reads no second request`, async () => {
      for (const path of ROUTES) {
        const { text, closed } = await exchange(t.url, request(path, t.adminKey));
        assert.deepEqual(statusLines(text), ['HTTP/1.1 400'], `${path}: ${text.slice(0, 300)}`);
        assert.ok(closed, `${path}: the connection stayed open`);
        assert.doesNotMatch(text, /llmux_requests_total|Injected/i, path);
      }
    });
  }
});

describe('headers llmux writes from what it is sent', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway({ config: { retry: { attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } } }); });
  after(async () => { await t.close(); });

  it('echoes a request id only when it is a plain token: anything else gets one of llmux\'s own', async () => {
    for (const given of ['abc%0d%0aX-Injected:%201', 'a b', 'x'.repeat(200), 'id;x-injected=1', 'ü']) {
      const { text } = await exchange(t.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${given}\r\nConnection: close\r\n\r\n`);
      const echoed = /^x-request-id: (.*)\r$/m.exec(text)?.[1] ?? '';
      assert.match(echoed, /^req_[0-9a-f]{16}[0-9a-z]{8,}$/, `${given} -> ${echoed}`);
      assert.doesNotMatch(text, /^x-injected/im);
    }
  });

  it('passes on an upstream retry-after only as whole seconds, whatever else it holds', async () => {
    for (const retryAfter of ['5, x-injected: 1', '1e9', 'Wed, 21 Oct 2099 07:28:00 GMT', '-1']) {
      t.upstream.queue.push((_req, res) => {
        res.writeHead(400, { 'content-type': 'application/json', 'retry-after': retryAfter });
        res.end('{"error":{"message":"no"}}');
      });
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }) });
      await res.arrayBuffer();
      assert.equal(res.headers.get('retry-after'), null, retryAfter);
      assert.equal(res.headers.get('x-injected'), null);
    }
  });

  it('never writes a client\'s model id or response id into a header', async () => {
    const model = 'gpt-test\r\nX-Injected: 1';
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-injected'), null);
    const { text } = await exchange(t.url, `GET /v1/responses/resp_x%0D%0AX-Injected:%201 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nConnection: close\r\n\r\n`);
    assert.deepEqual(statusLines(text), ['HTTP/1.1 404']);
    assert.doesNotMatch(text, /^x-injected/im);
  });
});
