/**
 * The upstream HTTP/1.1 client (src/providers/http1.ts) over TLS: the host's name sent and
 * checked, the session resumed, an untrusted certificate refused. A system test: it makes a
 * self-signed certificate with openssl (a child process).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { describe, it } from 'node:test';
import { createHttp1Client } from '../../src/providers/http1.ts';
import type { Http1Answer, Http1Client, Http1Target } from '../../src/providers/http1.ts';

function ask(client: Http1Client, target: Http1Target): Promise<Http1Answer> {
  return new Promise((resolve, reject) => {
    client.request(target, { method: 'POST', path: '/v1/x', headers: ['host', 'up', 'content-length', '2'], body: '{}' }, resolve, reject);
  });
}

async function text(answer: Http1Answer): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of answer) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

describe('the upstream HTTP/1.1 client over TLS', () => {
  it('speaks TLS with the host\'s name for https, resumes its session, and refuses a certificate it cannot trust', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-h1-'));
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { encoding: 'utf8' });
    if (made.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      t.skip('openssl is not installed');
      return;
    }
    const names: (string | undefined)[] = [];
    let resumed = 0;
    const server = tls.createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')), ALPNProtocols: ['http/1.1'] }, (socket) => {
      names.push(typeof socket.servername === 'string' ? socket.servername : undefined);
      if (socket.isSessionReused()) resumed++;
      socket.on('error', () => {});
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const client = createHttp1Client();
    try {
      const target: Http1Target = { hostname: 'localhost', port, secure: true };
      await assert.rejects(ask(client, target), (err: NodeJS.ErrnoException) => err.code === 'DEPTH_ZERO_SELF_SIGNED_CERT');
      // Trusting it the way a user can (the whole process): the answer is read over TLS.
      const before = process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
      process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0';
      const warn = process.emitWarning;
      process.emitWarning = () => {};
      try {
        assert.equal(await text(await ask(client, target)), 'ok');
        assert.equal(await text(await ask(client, target)), 'ok');
      } finally {
        process.emitWarning = warn;
        if (before === undefined) delete process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
        else process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = before;
      }
      assert.deepEqual(names.slice(-2), ['localhost', 'localhost']);
      assert.ok(resumed >= 1, 'the second connection resumed the first one\'s session');
    } finally {
      client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
