import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { listenOn } from '../../src/http/listen.ts';

const LISTEN = fileURLToPath(new URL('../../src/http/listen.ts', import.meta.url));

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

function get(port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get({ host, port, path: '/', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; }).on('end', () => resolve(text));
    }).once('error', reject);
  });
}

/** Whether this machine can listen on ::1. */
async function hasIpv6Loopback(): Promise<boolean> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
}

describe('listenOn', () => {
  it('listens on an IPv4 address and a free port, and the HTTP server serves there', async () => {
    const server = http.createServer({ headersTimeout: 1_000, requestTimeout: 2_000 }, (_req, res) => res.end('hello'));
    await listenOn(server, 0, '127.0.0.1');
    try {
      assert.equal(server.listening, true);
      const address = server.address() as AddressInfo;
      assert.equal(address.address, '127.0.0.1');
      assert.equal(address.family, 'IPv4');
      assert.ok(address.port > 0);
      assert.equal(await get(address.port, '127.0.0.1'), 'hello');
      assert.equal(server.listenerCount('error'), 0, 'its error listener is removed once it listens');
    } finally {
      await close(server);
    }
  });

  it('listens on an IPv6 address', async (t) => {
    if (!(await hasIpv6Loopback())) {
      t.skip('no IPv6 loopback here');
      return;
    }
    const server = http.createServer((_req, res) => res.end('six'));
    await listenOn(server, 0, '::1');
    try {
      const address = server.address() as AddressInfo;
      assert.equal(address.address, '::1');
      assert.equal(address.family, 'IPv6');
      assert.equal(await get(address.port, '::1'), 'six');
    } finally {
      await close(server);
    }
  });

  it('listens on a host name through listen', async () => {
    const server = http.createServer((_req, res) => res.end('named'));
    await listenOn(server, 0, 'localhost');
    try {
      const address = server.address() as AddressInfo;
      assert.ok(address.port > 0);
      assert.equal(await get(address.port, address.address), 'named');
    } finally {
      await close(server);
    }
  });

  it('rejects with the error listen gives for a port in use, and leaves no listener behind', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
    const { port } = taken.address() as AddressInfo;
    try {
      const server = http.createServer();
      const err = await listenOn(server, port, '127.0.0.1').then(() => assert.fail('listened on a port in use'), (e: unknown) => e as NodeJS.ErrnoException & { address?: string; port?: number });
      const viaListen = http.createServer();
      const expected = await new Promise<NodeJS.ErrnoException & { address?: string; port?: number }>((resolve) => {
        viaListen.once('error', resolve);
        viaListen.listen(port, '127.0.0.1');
      });
      assert.equal(err.code, 'EADDRINUSE');
      assert.equal(err.message, expected.message);
      assert.equal(err.syscall, expected.syscall);
      assert.equal(err.address, expected.address);
      assert.equal(err.port, expected.port);
      assert.equal(server.listening, false);
      // An HTTP server listens for its own `listening` (to track its connections): only that is left.
      const fresh = http.createServer();
      assert.equal(server.listenerCount('listening'), fresh.listenerCount('listening'));
      assert.equal(server.listenerCount('error'), fresh.listenerCount('error'));
      // The same server can listen once the port is free.
      await close(taken);
      await listenOn(server, port, '127.0.0.1');
      assert.equal((server.address() as AddressInfo).port, port);
      await close(server);
    } finally {
      if (taken.listening) await close(taken);
    }
  });

  it('rejects a second listen on a listening server as listen does', async () => {
    const server = http.createServer();
    await listenOn(server, 0, '127.0.0.1');
    try {
      const listeners = server.listenerCount('error') + server.listenerCount('listening');
      await assert.rejects(listenOn(server, 0, '127.0.0.1'), { code: 'ERR_SERVER_ALREADY_LISTEN' });
      assert.equal(server.listenerCount('error') + server.listenerCount('listening'), listeners, 'no listener is left behind');
    } finally {
      await close(server);
    }
  });

  it('loads neither cluster nor dns for an IP address, and both for a host name', async () => {
    // In a process of its own, since this one may have loaded them already.
    const script = `
      import http from 'node:http';
      const { listenOn } = await import(${JSON.stringify(LISTEN)});
      const loaded = () => ['cluster', 'dns'].filter((name) => process.moduleLoadList.includes('NativeModule ' + name));
      const before = loaded();
      const byAddress = http.createServer();
      await listenOn(byAddress, 0, '127.0.0.1');
      const afterAddress = loaded();
      const byName = http.createServer();
      await listenOn(byName, 0, 'localhost');
      const afterName = loaded();
      byAddress.close();
      byName.close();
      process.stdout.write(JSON.stringify({ before, afterAddress, afterName }));
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(out), { before: [], afterAddress: [], afterName: ['cluster', 'dns'] });
  });
});
